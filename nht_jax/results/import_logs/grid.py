"""The [grid] of the imported runs and their order (the package docstring's Grid)."""

from __future__ import annotations

import math

import numpy as np

from nht_jax.base.aliases import HPARAM_ALIASES
from nht_jax.base.errors import ConfigError
from nht_jax.engine import grid as grid_lib
from nht_jax.results.import_logs.runs import Run


def split_hparams(runs: dict[str, Run], axes: dict) -> tuple[dict, dict]:
    """({axis: [value per run]}, constant unknown hyperparameters {name: value}); a varying unknown one refused."""
    names = list(dict.fromkeys(n for run in runs.values() for n in run.hparams if n != "__id__"))
    values, constants = {}, {}
    for name in names:
        missing = [run for run in runs.values() if name not in run.hparams]
        if missing:
            raise ConfigError(
                f"run {missing[0].hparams['__id__']} ({missing[0].where}) has no value for the "
                f"hyperparameter {name}, which other runs have; give every run one"
            )
        column = [run.hparams[name] for run in runs.values()]
        if name in axes:
            bad = [
                run
                for run in runs.values()
                if not isinstance(run.hparams[name], (int, float)) or isinstance(run.hparams[name], bool)
            ]
            if bad:
                raise ConfigError(
                    f"run {bad[0].hparams['__id__']} ({bad[0].where}): the hyperparameter {name} is "
                    f"{bad[0].hparams[name]!r}; the axis {name} takes numbers"
                )
            values[name] = column
        elif len(set(map(str, column))) == 1:
            constants[name] = column[0]
        else:
            known = ", ".join(f"{a} ({', '.join(HPARAM_ALIASES.get(a, (a,)))})" for a in axes)
            raise ConfigError(
                f"the hyperparameter {name!r} varies across runs ({sorted(set(map(str, column)))[:4]}) "
                f"but is no axis nht knows; rename it to one with --rename {name}=AXIS, or drop it "
                f"with --ignore {name}. Axes (aliases): {known}"
            )
    return values, constants


def axis_cast(axis: grid_lib.Axis, name: str, values: list):
    if np.issubdtype(np.dtype(axis.dtype), np.integer):
        bad = [v for v in values if not float(v).is_integer()]
        if bad:
            raise ConfigError(f"hyperparameter {name} takes whole numbers, got {bad[0]!r}")
        return [int(v) for v in values]
    return [float(v) for v in values]


def grid_of(values: dict[str, list], axes: dict[str, grid_lib.Axis], keys: list[str]) -> tuple[dict, list[int]]:
    """([grid] table, the run order: indices into `keys`) for the runs' axis values (package docstring)."""
    order = [name for name in axes if name in values]
    values = {name: axis_cast(axes[name], name, values[name]) for name in order}
    levels = {name: sorted(set(values[name])) for name in order}
    points = [tuple(values[name][i] for name in order) for i in range(len(keys))]
    seen = {}
    for i, point in enumerate(points):
        if point in seen:
            raise ConfigError(
                f"runs {keys[seen[point]]} and {keys[i]} have the same hyperparameters "
                f"{dict(zip(order, point))}: add the column that tells them apart (a seed), or drop "
                f"one run"
            )
        seen[point] = i
    index = [tuple(levels[name].index(p) for name, p in zip(order, point)) for point in points]
    run_order = sorted(range(len(keys)), key=lambda i: index[i])
    varied = [name for name in order if len(levels[name]) > 1]
    if len(keys) == math.prod(len(levels[name]) for name in order):
        return {name: levels[name] for name in order}, run_order
    table = {name: (levels[name] if name not in varied else [values[name][i] for i in run_order]) for name in order}
    table["zip"] = [varied]
    return table, run_order


__all__ = []
