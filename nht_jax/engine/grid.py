"""The grid of dynamic hyperparameters as a dict of named axes.

A grid is `{axis name: tuple of values}`; its runs are the Cartesian product, row-major in the dict's order
(the common axes first, then the domain's own). Expanded, a grid is a dict pytree `{name: (runs,) array}`, so
`vmap` / `lax.map` over it needs no code per axis, and one run's values are `{name: scalar}`. Every domain has
the common axes; a domain adds its own (`train_fraction` for token tasks, `rho` for border images) and any
axis it does not declare is refused.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from nht_jax.base.errors import ConfigError, check
from nht_jax.base.schema import axis_values


@dataclass(frozen=True)
class Axis:
    """One grid axis: its default values, dtype, how it is drawn, and its check.

    check(values) returns an error message (what is wrong and how to fix it) or None.
    """

    name: str
    default: tuple
    label: str
    dtype: str = "float32"
    log: bool = False
    check: Callable[[tuple], str | None] = lambda values: None
    meaning: str = ""


def _finite(values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def number_check(name: str, ok: Callable[[float], bool], rule: str) -> Callable[[tuple], str | None]:
    """An Axis check: every value a finite number satisfying `ok`, else a message ending in `rule`."""
    def check_values(values):
        if not _finite(values):
            return f"grid.{name} contains {list(values)}: every value must be a finite number"
        if not all(ok(v) for v in values):
            return f"grid.{name} {rule} (got {list(values)})"
        return None
    return check_values


def _seed_check(values) -> str | None:
    if not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2 ** 31 for s in values):
        return f"grid.seed values must be integers in [0, 2^31), got {list(values)}"
    if len(set(values)) != len(values):
        return f"grid.seed has repeated values {list(values)}"
    return None


COMMON_AXES: dict[str, Axis] = {a.name: a for a in (
    Axis("weight_decay", (1.0,), "weight decay λ", log=True,
         check=number_check("weight_decay", lambda v: v >= 0, "must be ≥ 0; use 0 for no weight decay"),
         meaning="λ, the weight-decay coefficient (convention per optimiser: nht_jax.engine.optim)"),
    Axis("learning_rate", (1e-3,), "learning rate η", log=True,
         check=number_check("learning_rate", lambda v: v > 0, "must be > 0"), meaning="η, the (peak) learning rate"),
    Axis("seed", (0,), "seed", dtype="uint32", check=_seed_check,
         meaning="the run's PRNG seed: its initialisation, and its data split and minibatches where the "
                 "domain draws them per run"),
    Axis("init_scale", (1.0,), "init scale", log=True,
         check=number_check("init_scale", lambda v: v > 0, "must be > 0"),
         meaning="factor multiplying every initial parameter"),
)}


def resolve(table: Mapping, axes: Mapping[str, Axis], domain: str) -> dict[str, tuple]:
    """The grid {name: values} from a [grid] table: defaults for missing axes, unknown axes refused, values checked."""
    for name in table:
        if name not in axes:
            others = ", ".join(axes)
            raise ConfigError(f"grid.{name} is not an axis of domain '{domain}' (its axes: {others}); "
                              f"remove it or choose a domain that uses it")
    grid = {}
    for name, axis in axes.items():
        values = axis_values(name, table[name]) if name in table else axis.default
        message = axis.check(values)
        check(message is None, message or "")
        grid[name] = tuple(int(v) for v in values) if axis.dtype == "uint32" else tuple(float(v) for v in values)
    return grid


def shape(grid: Mapping[str, tuple]) -> tuple[int, ...]:
    return tuple(len(v) for v in grid.values())


def varied_axes(grid: Mapping[str, tuple]) -> list[str]:
    """Axes with more than one value, in grid order."""
    return [name for name, values in grid.items() if len(values) > 1]


def expand(grid: Mapping[str, tuple], axes: Mapping[str, Axis]) -> dict[str, np.ndarray]:
    """Every run of the grid as {name: (runs,) array}, row-major over the grid's axis order."""
    rows = list(itertools.product(*grid.values()))
    columns = list(zip(*rows))
    return {name: np.asarray(col, axes[name].dtype) for name, col in zip(grid, columns)}


def single(axes: Mapping[str, Axis], **values) -> dict[str, np.ndarray]:
    """One run's values {name: scalar array}; missing axes take their default's first value."""
    unknown = set(values) - set(axes)
    if unknown:
        raise ConfigError(f"unknown axis {sorted(unknown)}; axes are {list(axes)}")
    return {name: np.asarray(values.get(name, axis.default[0]), axis.dtype) for name, axis in axes.items()}


def num_runs(runs: Mapping[str, np.ndarray]) -> int:
    return int(np.shape(next(iter(runs.values())))[0])


def take(runs: Mapping[str, np.ndarray], index) -> dict[str, np.ndarray]:
    """Run(s) `index` of an expanded grid."""
    return {name: np.asarray(v)[index] for name, v in runs.items()}


__all__ = ["Axis", "COMMON_AXES", "expand", "number_check", "num_runs", "resolve", "shape", "single", "take", "varied_axes"]
