"""The grid of dynamic hyperparameters as a dict of named axes.

A grid is `{axis name: tuple of values}` plus `zipped`, groups of axes whose values are paired one to one. Its runs
are the Cartesian product of its factors; without groups it is a *product* grid, with them *irregular* (`kind`).
`resolve` reads the [grid] table (values, lists, log and linear spaces, random ranges with `samples`, `zip`) into
one; static axes (`StaticAxis`: settings that change shapes, one bucket per value) and optional axes
(`Axis.optional`: the temperature, the strengths of `optim.before` / `optim.after` entries, `nht_jax.engine.slots`)
are declared here too. Expanded, a grid is a dict pytree `{name: (runs,) array}`; every domain has the common
axes and adds its own.

The grid's axes, kinds, random draws, static and optional axes, and the runs' order: docs/configuration/index.md,
"The grid"."""

from __future__ import annotations

import itertools
import math
import zlib
from dataclasses import dataclass
from typing import Callable, Mapping, NamedTuple

import numpy as np

from nht_jax.base.aliases import grid_key
from nht_jax.base.errors import ConfigError, check
from nht_jax.base.schema import axis_values, random_spec


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
    optional: bool = False
    """An optional axis is in the grid only when [grid] lists it (no default column): a temperature or an
    intervention's strength, which a run without it never sees (module docstring, "Optional axes")."""
    identity: float | None = None
    """The value at which the axis changes nothing, bit for bit (a temperature of 1, a clamp that is off), if it
    has one: runs at the identity of every intervention axis are a grid's baseline (`nht_jax.analysis`)."""


class StaticAxis(NamedTuple):
    """A static setting a domain lets a grid sweep as buckets (one compiled program per value; module docstring).

    section, key: the setting it replaces ("task", "model" or "train", and the field name); label: axis label of figures;
    transform(value, current) → the setting's new value from the axis value and the setting's value in the
    preset (e.g. every hidden layer of an MLP at the new width); dtype of its per-run column; log: whether figures
    space it logarithmically; check(values) → an error message or None (default: integers ≥ 1)."""

    section: str
    key: str
    label: str
    transform: Callable[[object, object], object]
    dtype: str = "int32"
    log: bool = False
    check: Callable[[tuple], str | None] | None = None

    def axis(self, name: str) -> "Axis":
        """The Axis seen by the results, figures and fits: no default (present only when listed)."""
        return Axis(
            name,
            (),
            self.label,
            dtype=self.dtype,
            log=self.log,
            check=self.check or positive_int_check(name),
            meaning=f"static: {self.section}.{self.key}, one compiled bucket per value",
        )


def positive_int_check(name: str) -> Callable[[tuple], str | None]:
    """An Axis check: every value an integer ≥ 1 (integral floats allowed), no value twice."""

    def check_values(values):
        if not all(
            isinstance(v, (int, float))
            and not isinstance(v, bool)
            and math.isfinite(v)
            and v >= 1
            and float(v).is_integer()
            for v in values
        ):
            return f"grid.{name} contains {list(values)}: every value must be an integer ≥ 1"
        return None

    return check_values


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
    if not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**31 for s in values):
        return f"grid.seed values must be integers in [0, 2^31), got {list(values)}"
    if len(set(values)) != len(values):
        return f"grid.seed has repeated values {list(values)}"
    return None


COMMON_AXES: dict[str, Axis] = {
    a.name: a
    for a in (
        Axis(
            "weight_decay",
            (1.0,),
            "weight decay λ",
            log=True,
            check=number_check("weight_decay", lambda v: v >= 0, "must be ≥ 0; use 0 for no weight decay"),
            meaning="λ, the weight-decay coefficient (convention per optimiser: nht_jax.engine.optim)",
        ),
        Axis(
            "learning_rate",
            (1e-3,),
            "learning rate η",
            log=True,
            check=number_check("learning_rate", lambda v: v > 0, "must be > 0"),
            meaning="η, the (peak) learning rate",
        ),
        Axis(
            "seed",
            (0,),
            "seed",
            dtype="uint32",
            check=_seed_check,
            meaning="the run's PRNG seed: its initialisation, and its data split and minibatches where the "
            "domain draws them per run",
        ),
        Axis(
            "init_scale",
            (1.0,),
            "init scale",
            log=True,
            check=number_check("init_scale", lambda v: v > 0, "must be > 0"),
            meaning="factor multiplying every initial parameter",
        ),
    )
}


GRID_KEYS = ("zip", "samples", "sample_seed")
"""Keys of a [grid] table that are not axes."""

PRODUCT, IRREGULAR = "product", "irregular"


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _checked(name: str, axis: Axis, values: tuple, paired: bool = False) -> tuple:
    """The values cast to the axis dtype after its check; for a `paired` (zipped) column each distinct value is
    checked once (a column may repeat a value; its group's points must not repeat)."""
    message = axis.check(tuple(dict.fromkeys(values)) if paired else values)
    check(message is None, message or "")
    if not paired:
        check_distinct(name, axis, values)
    return (
        tuple(int(v) for v in values)
        if np.issubdtype(np.dtype(axis.dtype), np.integer)
        else tuple(float(v) for v in values)
    )


def check_distinct(name: str, axis: Axis, values: tuple) -> None:
    """An axis crossed with the others lists each value once: a repeat is the same runs trained twice, so it is
    refused rather than run or silently dropped. (Values that differ as written but not in float32 are refused by the
    float32 check, with its own message.)"""
    stored = np.asarray(values, np.float64 if np.dtype(axis.dtype).kind == "f" else np.dtype(axis.dtype))
    unique, counts = np.unique(stored, return_counts=True)
    if (counts > 1).any():
        repeated = values[int(np.flatnonzero(stored == unique[counts > 1][0])[0])]
        raise ConfigError(
            f"grid.{name} lists {repeated!r} more than once ({list(values)}): each value is one set of "
            f"runs, so a repeat trains the same runs twice; remove the repeat (to repeat runs, vary "
            f"grid.seed)"
        )


def draw(name: str, kind: str, lo: float, hi: float, samples: int, seed: int) -> tuple[float, ...]:
    """`samples` values of the random axis `name` in [lo, hi]: uniform, or uniform in log for "loguniform";
    from the stream `numpy.random.default_rng([seed, crc32(name)])` (one stream per axis).

    Args:
        name: the axis's name (it seeds the axis's stream).
        kind: "uniform" or "loguniform".
        lo: the lower end.
        hi: the upper end.
        samples: how many values.
        seed: the grid's random seed.

    Returns:
        The values, in [lo, hi].
    """
    u = np.random.default_rng([seed, zlib.crc32(name.encode())]).random(samples)
    if kind == "loguniform":
        values = np.exp(np.log(lo) + u * (np.log(hi) - np.log(lo)))
    else:
        values = lo + u * (hi - lo)
    return tuple(float(v) for v in np.clip(values, lo, hi))


def _zip_groups(raw, axes: Mapping[str, Axis], listed: Mapping, random: set) -> list[tuple[str, ...]]:
    """The [grid] `zip` entry checked: a list of groups, each a list of ≥ 2 listed axes, no axis twice."""
    example = 'grid.zip = [["learning_rate", "weight_decay"]]'
    if isinstance(raw, list) and raw and all(isinstance(name, str) for name in raw):
        raw = [raw]  # one group written without the outer list
    if not (isinstance(raw, list) and all(isinstance(g, list) and all(isinstance(n, str) for n in g) for g in raw)):
        raise ConfigError(f"grid.zip must be a list of groups of axis names, e.g. {example}; got {raw!r}")
    groups, seen = [], set()
    for group in raw:
        if len(group) < 2:
            raise ConfigError(f"grid.zip group {group} needs at least two axes to pair, e.g. {example}")
        for name in group:
            if name not in axes:
                raise ConfigError(
                    f"grid.zip names '{name}', which is not an axis (axes: {', '.join(axes)}); "
                    f"fix the name or remove it from the group"
                )
            if name in seen:
                raise ConfigError(
                    f"grid.zip names '{name}' twice: an axis can be in one zipped group only; "
                    f"merge the groups or remove it from one"
                )
            if name in random:
                raise ConfigError(
                    f"grid.{name} is drawn at random and also zipped: random axes are already paired "
                    f"with each other (one point per sample); remove it from grid.zip or give it a list"
                )
            if name not in listed:
                raise ConfigError(
                    f"grid.zip pairs '{name}' but [grid] gives it no values; give grid.{name} a list "
                    f"as long as the others in its group"
                )
            seen.add(name)
        lengths = {name: len(listed[name]) for name in group}
        if len(set(lengths.values())) > 1:
            counts = ", ".join(f"{name} has {n}" for name, n in lengths.items())
            raise ConfigError(
                f"grid.zip group {group} pairs values one to one, but {counts} values; give them "
                f"equal lengths (or remove the group to cross them)"
            )
        groups.append(tuple(group))
    return groups


def resolve(
    table: Mapping, axes: Mapping[str, Axis], domain: str, static: Mapping[str, StaticAxis] | None = None
) -> tuple[dict[str, tuple], tuple]:
    """(grid {name: values}, zipped groups) from a [grid] table: defaults for missing axes, unknown axes refused,
    values checked, random axes drawn (docs/configuration/index.md). Groups and their axes in the axes' order.

    Args:
        table: the [grid] table.
        axes: the domain's axes by name.
        domain: the domain's name, for error messages.
        static: the domain's static axes; those the table lists come first in the grid (module docstring).

    Returns:
        (grid, zipped groups).
    """
    static = dict(static or {})
    for name in table:
        if name not in axes and name not in static and name not in GRID_KEYS:
            if (axis := grid_key(name)) in axes:  # a file's [grid] lambda = …: `--set grid.lambda` is renamed
                raise ConfigError(
                    f"grid.{name} is another name of the axis {axis}: in a [grid] table write "
                    f"{axis} = … (on the command line --set grid.{name}=… is accepted)"
                )
            others = ", ".join(axes)
            statics = (
                f"; static axes, swept as one compiled bucket per value: {', '.join(static)}"
                if static
                else "; it declares no static axes"
            )
            raise ConfigError(
                f"grid.{name} is not an axis of domain '{domain}' (its axes: {others}{statics}); "
                f"remove it or choose a domain that uses it"
            )
    listed_static = {}
    for name, spec in static.items():
        if name not in table:
            continue
        if random_spec(name, table[name]):
            raise ConfigError(
                f"grid.{name} is a static axis ({spec.section}.{spec.key}: one compiled bucket per "
                f"value) and cannot be drawn at random; list its values, e.g. grid.{name} = [32, 64]"
            )
        values = axis_values(name, table[name])
        axis = spec.axis(name)
        values = _checked(name, axis, values)
        if len(set(values)) != len(values):
            raise ConfigError(
                f"grid.{name} repeats a value {list(values)}: each value is one bucket; remove the repeat"
            )
        listed_static[name] = values
    if "zip" in table:
        raw = table["zip"]
        named = [n for g in (raw if isinstance(raw, list) else []) for n in (g if isinstance(g, list) else [g])]
        for name in named:
            if name in static and name in table:
                raise ConfigError(
                    f"grid.zip pairs '{name}', a static axis (each of its values is a separately "
                    f"compiled bucket, crossed with every other axis): remove it from grid.zip"
                )
    table = {k: v for k, v in table.items() if k not in static}
    random = {name: spec for name in axes if name in table and (spec := random_spec(name, table[name]))}
    for name in random:
        if axes[name].dtype != "float32":
            raise ConfigError(
                f"grid.{name} cannot be drawn at random (its values are integers); list them, e.g. "
                f"grid.{name} = [0, 1, 2]: they are crossed with the random samples"
            )
    samples, seed = table.get("samples"), table.get("sample_seed", 0)
    if random:
        if samples is None:
            raise ConfigError(
                f"grid.{', grid.'.join(random)} {'is' if len(random) == 1 else 'are'} drawn at random: "
                f"set grid.samples = N, the number of points to draw (and grid.sample_seed)"
            )
        if not (_is_int(samples) and samples >= 1):
            raise ConfigError(f"grid.samples must be an integer ≥ 1 (the number of random points), got {samples!r}")
        if not (_is_int(seed) and 0 <= seed < 2**63):
            raise ConfigError(f"grid.sample_seed must be an integer ≥ 0, got {seed!r}")
    else:
        for key in ("samples", "sample_seed"):
            if key in table:
                raise ConfigError(
                    f"grid.{key} is set but no axis is drawn at random; give an axis "
                    f"{{loguniform = [lo, hi]}} or {{uniform = [lo, hi]}}, or remove grid.{key}"
                )
    listed = {}
    for name, axis in axes.items():
        if name in random:
            kind, lo, hi = random[name]
            _checked(name, axis, (lo, hi))  # the range itself must be allowed
            listed[name] = draw(name, kind, lo, hi, samples, seed)
        elif name in table:
            listed[name] = axis_values(name, table[name])
    groups = _zip_groups(table["zip"], axes, listed, set(random)) if "zip" in table else []
    if len(random) > 1:
        groups.append(tuple(random))
    paired = {name for group in groups for name in group}
    grid = {
        name: _checked(name, axis, listed.get(name, axis.default), name in paired)
        for name, axis in axes.items()
        if not axis.optional or name in listed
    }
    order = list(axes)
    zipped = tuple(sorted((tuple(sorted(g, key=order.index)) for g in groups), key=lambda g: order.index(g[0])))
    for group in zipped:
        rows = list(zip(*(grid[name] for name in group)))
        if len(set(rows)) < len(rows):
            repeated = next(r for r in rows if rows.count(r) > 1)
            raise ConfigError(
                f"grid.zip group {list(group)} repeats the point {dict(zip(group, repeated))}: "
                f"every pair must differ (the same run twice); change or remove one"
            )
    return {**listed_static, **grid}, zipped


def factors(grid: Mapping[str, tuple], zipped=()) -> list[tuple[str, ...]]:
    """The product factors in grid order: one axis each, or a zipped group where its first axis stands."""
    out, placed = [], set()
    for name in grid:
        if name not in placed:
            group = next((tuple(g) for g in zipped if name in g), (name,))
            out.append(group)
            placed.update(group)
    return out


def kind(zipped=()) -> str:
    """ "product" (runs = the Cartesian product of the axes' values) or "irregular" (some axes zipped or drawn
    jointly at random: the runs are not one per combination of axis values).

    Args:
        zipped: the grid's zipped groups of axis names.

    Returns:
        "product" or "irregular".
    """
    return IRREGULAR if any(len(g) > 1 for g in zipped) else PRODUCT


def shape(grid: Mapping[str, tuple]) -> tuple[int, ...]:
    """One length per axis: the shape of a product grid's runs.

    Args:
        grid: {axis: values}.

    Returns:
        The lengths of the axes' values.
    """
    return tuple(len(v) for v in grid.values())


def varied_axes(grid: Mapping[str, tuple]) -> list[str]:
    """Axes with more than one value, in grid order."""
    return [name for name, values in grid.items() if len(values) > 1]


def expand(grid: Mapping[str, tuple], axes: Mapping[str, Axis], zipped=()) -> dict[str, np.ndarray]:
    """Every run of the grid as {name: (runs,) array}, row-major over the grid's factors (see `factors`)."""
    points = []
    for group in factors(grid, zipped):
        lengths = {len(grid[name]) for name in group}
        if len(lengths) > 1:
            raise ConfigError(
                f"zipped axes {list(group)} have unequal lengths "
                f"{[len(grid[name]) for name in group]}; give them equal lengths"
            )
        points.append(list(zip(*(grid[name] for name in group))))
    rows = [sum(parts, ()) for parts in itertools.product(*points)]
    names = [name for group in factors(grid, zipped) for name in group]
    columns = dict(zip(names, zip(*rows)))
    return {name: np.asarray(columns[name], axes[name].dtype) for name in grid}


def single(axes: Mapping[str, Axis], **values) -> dict[str, np.ndarray]:
    """One run's values {name: scalar array}; missing axes take their default's first value, and optional axes
    not given are left out.

    Args:
        axes: the domain's axes by name.
        **values: the run's value of each axis given.

    Returns:
        {axis: scalar array}.
    """
    unknown = set(values) - set(axes)
    if unknown:
        raise ConfigError(f"unknown axis {sorted(unknown)}; axes are {list(axes)}")
    return {
        name: np.asarray(values.get(name, axis.default[0] if axis.default else None), axis.dtype)
        for name, axis in axes.items()
        if not axis.optional or name in values
    }


def num_runs(runs: Mapping[str, np.ndarray]) -> int:
    """The number of runs of an expanded grid.

    Args:
        runs: an expanded grid, {axis: (R,) array}.

    Returns:
        R, the number of runs.
    """
    return int(np.shape(next(iter(runs.values())))[0])


def take(runs: Mapping[str, np.ndarray], index) -> dict[str, np.ndarray]:
    """Run(s) `index` of an expanded grid.

    Args:
        runs: an expanded grid, {axis: (R,) array}.
        index: a run's index, or an index array or slice.

    Returns:
        {axis: value(s)} of those runs.
    """
    return {name: np.asarray(v)[index] for name, v in runs.items()}


__all__ = ["Axis", "StaticAxis", "draw", "kind", "num_runs", "resolve", "shape", "single", "take"]
