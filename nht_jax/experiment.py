"""An experiment's whole configuration: the domain's [task] settings, the model's settings, the engine's
[optim], [train], [execution], [live] and [stop], the [analysis] definitions and the [grid] of named axes.

`load(preset_or_file, overrides, scale)` reads a preset (shipped in the package) or a TOML file, applies the
settings of its `[scale.NAME]` table when a scale is named, then `--set section.key=value` overrides, and builds
a validated `Config`, asking the domain named by `task.name` for its settings, model choices, grid axes and
checks. `digest` hashes everything that changes results; [execution], [live] and [stop] never enter it
(`OUTSIDE_DIGEST`; a set stop rule is folded in by `nht_jax.measure.stopping.results_digest`). A grid with
static axes gives one configuration per value (`Config.buckets`), each compiled once and trained one after
another into one results directory (`nht_jax.training.sweep`).

The sections, the grid and static axes: docs/configuration/index.md; scales: docs/configuration/scales.md."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
from dataclasses import dataclass, field, is_dataclass, replace
from typing import Any, get_type_hints

import tomli_w

from nht_jax import domains
from nht_jax.base.errors import ConfigError, check
from nht_jax.base.presets import (
    Scale,
    list_presets,
    preset_path,
    preset_scales,
    read_toml,
    split_scales,
    unknown_scale,
)
from nht_jax.base.schema import (
    build,
    coerce,
    override_text,
    plain,
)
from nht_jax.config.schedule import LogSchedule
from nht_jax.config.sections import (
    AnalysisConfig,
    ExecutionConfig,
    ForkConfig,
    LiveConfig,
    OptimConfig,
    StopConfig,
    TrainConfig,
    read_fork,
    validate_execution,
    validate_live,
    validate_optim,
    validate_snapshots,
    validate_stop,
    validate_train,
)
from nht_jax.config.tables import OPTIONAL_SECTIONS, SECTIONS, digest_table, settled
from nht_jax.engine import grid as grid_lib


ENGINE_SECTIONS = {
    "optim": OptimConfig,
    "train": TrainConfig,
    "execution": ExecutionConfig,
    "live": LiveConfig,
    "stop": StopConfig,
    "analysis": AnalysisConfig,
}
OUTSIDE_DIGEST = ("execution", "live", "stop")
"""Sections that never enter `digest`: how the grid runs and what the live table shows change no result; the stop
rule does, and `nht_jax.measure.stopping.results_digest` folds it in when one is set."""


@dataclass(frozen=True)
class Config:
    """An experiment's whole configuration, validated: what `nht_jax.load` returns and config.toml holds.

    Attributes:
        name: the experiment's name (`nht run` without --out writes runs/out/<name>).
        description: free text.
        task: the domain's [task] settings (`task.name` names the domain).
        model: the model's settings ([model]; `model.name` names it).
        optim: [optim], the optimiser and its slot entries (`optim.before`, `optim.after`).
        train: [train], steps, batch size, logging.
        execution: [execution], how the grid runs (never changes results, not in the digest).
        live: [live], the live table between chunks (never changes results, not in the digest).
        stop: [stop], when a run leaves the batch (folded into the results digest when a rule is set).
        analysis: [analysis], the definitions of T_fit, T_transition and the regimes.
        grid: {axis: values} the swept axes, resolved (every value listed).
        zipped: groups of grid axes paired, not crossed.
        fork: [fork], runs started from another folder's snapshots, or None.

    Examples:
        >>> config = nht_jax.load("default", grid={"weight_decay": [0.05, 0.72], "seed": 0})
        >>> config.domain.name, len(config.runs()["weight_decay"])
        ('modular', 2)
    """

    name: str = "default"
    description: str = ""
    task: Any = None
    model: Any = None
    optim: OptimConfig = field(default_factory=OptimConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    execution: ExecutionConfig = field(default_factory=ExecutionConfig)
    live: LiveConfig = field(default_factory=LiveConfig)
    stop: StopConfig = field(default_factory=StopConfig)
    analysis: AnalysisConfig = field(default_factory=AnalysisConfig)
    grid: dict = field(default_factory=dict)
    zipped: tuple = ()
    """Groups of grid axes whose values are paired, not crossed (from [grid] zip, and the random axes drawn
    together): `nht_jax.engine.grid`. Empty for a product grid."""
    fork: ForkConfig | None = None
    """[fork]: the runs start from another folder's snapshots (`ForkConfig`); None for a fresh start."""

    @functools.cached_property
    def domain(self) -> domains.Domain:
        """The domain `task.name` names, looked up once per configuration (kept out of pickles and copies)."""
        return domains.get(self.task.name)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "domain"}

    @property
    def static(self) -> dict[str, grid_lib.StaticAxis]:
        """The static axes this grid sweeps (as buckets), in grid order; empty for most presets."""
        declared = self.domain.static_axes
        return {name: declared[name] for name in self.grid if name in declared}

    @property
    def axes(self) -> dict[str, grid_lib.Axis]:
        """Every grid axis of this experiment: the static ones the grid sweeps, the common ones, the domain's,
        then those of the configured [optim] slot entries; optional axes only where the grid lists them."""
        candidates = {
            **{name: spec.axis(name) for name, spec in self.static.items()},
            **candidate_axes(self.domain, self.optim),
        }
        return {name: axis for name, axis in candidates.items() if not axis.optional or name in self.grid}

    def buckets(self) -> list[tuple[dict, "Config"]]:
        """One (static values {axis: value}, configuration) per bucket, in run order: the configuration has each
        static setting replaced (`StaticAxis.transform`, the value typed as its section declares it) and no static
        axis in its grid, so it is the configuration that trains the bucket's runs alone, checked as `load` checks
        one. Its runs are `runs()`'s block of that bucket, less the static columns. A grid without static axes is
        one bucket: ({}, self)."""
        static = self.static
        if not static:
            return [({}, self)]
        grid = {name: values for name, values in self.grid.items() if name not in static}
        out = []
        for values in itertools.product(*(self.grid[name] for name in static)):
            label = ", ".join(f"{name} = {value}" for name, value in zip(static, values))
            sections = {}
            try:
                for name, value in zip(static, values):
                    spec = static[name]
                    section = sections.get(spec.section, getattr(self, spec.section))
                    new = spec.transform(value, getattr(getattr(self, spec.section), spec.key))
                    typed = coerce(f"{spec.section}.{spec.key}", get_type_hints(type(section))[spec.key], new)
                    sections[spec.section] = replace(section, **{spec.key: typed})
                sub = checked(replace(self, grid=grid, **sections))
            except ConfigError as e:
                raise ConfigError(f"bucket {label} of the static axes: {e}") from None
            out.append((dict(zip(static, values)), sub))
        return out

    @property
    def grid_kind(self) -> str:
        """ "product" (every combination of the axes' values is a run) or "irregular" (zipped or random axes)."""
        return grid_lib.kind(self.zipped)

    def runs(self) -> dict:
        """Every run of the grid: {axis: (runs,) array} with every axis, row-major over the grid's factors (the
        axes, a zipped group counting as one)."""
        return grid_lib.expand(self.grid, self.axes, self.zipped)


def build_trainer(config: Config, data=None):
    """The engine Trainer (`nht_jax.engine.loop.Trainer`: init / step / evaluate / train) of the configuration's
    domain. Not exported at the top level: `nht_jax.make_train(config)` is the public single-run function (this
    Trainer's `train`).

    Args:
        config: a configuration without static axes.
        data: its data, loaded when None.

    Returns:
        The Trainer.
    """
    domain = config.domain
    if config.static:
        raise ConfigError(
            f"'{config.name}' sweeps the static axes {', '.join(config.static)}: each of its buckets "
            f"has its own trainer; use build_trainer(sub) for (values, sub) in config.buckets()"
        )
    return domain.make_trainer(config, data if data is not None else domain.load_data(config))


def from_dict(data: dict, scale: Scale | None = None, overrides=()) -> Config:
    """Build and validate a Config from nested dicts (TOML tables), after a scale's settings and overrides, in one
    pass down: the tables settled (`nht_jax.config.tables.settled`: old spellings in their new places), the
    domain's sections (`domains.resolve`), the engine's, the grid; then every check of a built configuration.

    Args:
        data: the tables ({section: table}, `name`, `description`), without [scale].
        scale: a `[scale.NAME]` to apply first, or None.
        overrides: `--set` overrides applied last ('section.key=value' texts or (path, value) pairs).

    Returns:
        The Config; ConfigError naming the first problem."""
    tables = settled(data, scale, overrides)
    check_name(tables["name"])
    domain, task, model = domains.resolve(tables)
    tables["analysis"] = {**domain.analysis_defaults, **tables["analysis"]}
    tables["optim"] = read_slot_entries(tables["optim"])
    engine = {s: build(cls, tables[s], s) for s, cls in ENGINE_SECTIONS.items()}
    if not engine["analysis"].transition_metric:
        engine["analysis"] = replace(engine["analysis"], transition_metric=domain.headline_metric)
    axes = candidate_axes(domain, engine["optim"])
    refuse_unconfigured_axes(tables["grid"], axes, engine["optim"])
    refuse_static_settings(tables["grid"], axes, domain, {"task": task, "model": model})
    grid, zipped = grid_lib.resolve(tables["grid"], axes, domain.name, domain.static_axes)
    config = Config(
        name=tables["name"],
        description=tables["description"],
        task=task,
        model=model,
        grid=grid,
        zipped=zipped,
        fork=read_fork(tables.get("fork")),
        **engine,
    )
    config.__dict__["domain"] = domain  # `Config.domain`'s cached value: the domain looked up above
    return checked(config)


def read_slot_entries(table: dict) -> dict:
    """[optim] with each entry of its `before` and `after` slots read by the slot registry
    (`nht_jax.engine.slots.read_entry`: the entry's own settings dataclass), as `build` then takes them."""
    if not any(table.get(slot) for slot in ("before", "after")):
        return table
    from nht_jax.engine import slots  # the registry builds optax transformations, so it loads JAX

    out = dict(table)
    for slot in ("before", "after"):
        value = table.get(slot, [])
        entries = value if isinstance(value, (list, tuple)) else [value]
        where = f"optim.{slot}"
        out[slot] = [e if is_dataclass(e) else slots.read_entry(slot, where, e) for e in entries]
    return out


def revised(config: Config, **sections) -> Config:
    """`config` with whole sections replaced (`dataclasses.replace`: a resolved [fork], [optim] entries with their
    measured W_c), checked as a loaded configuration is (`checked`), without a rebuild from dicts.

    Args:
        config: a built configuration.
        **sections: the fields of `Config` to replace, each a built value (an `OptimConfig`, a `ForkConfig`, …).

    Returns:
        The new configuration; ConfigError naming the first problem, as `load` would."""
    return checked(replace(config, **sections))


def checked(config: Config) -> Config:
    """`config` once every rule that loading applies to a built configuration holds (`validate`, the static axes'
    settings, every bucket a valid configuration); ConfigError naming the first that does not."""
    validate(config)
    if config.static:
        for name, spec in config.static.items():
            section = getattr(config, spec.section)
            check(
                hasattr(section, spec.key),
                f"grid.{name} sweeps {spec.section}.{spec.key}, which [{spec.section}] "
                f"{getattr(section, 'name', '')!r} does not have; remove grid.{name} or choose another "
                f"{spec.section}",
            )
        config.buckets()  # every bucket is a valid configuration: fail now, not after training some
    return config


def candidate_axes(domain, optim: OptimConfig) -> dict[str, grid_lib.Axis]:
    """The axes a [grid] may list: the common ones, the domain's, then the configured slot entries' strengths
    (`nht_jax.engine.slots`; optional: in the grid only when listed)."""
    axes = {**grid_lib.COMMON_AXES, **domain.axes}
    if optim.before or optim.after:
        from nht_jax.engine import slots  # loads JAX

        axes.update(slots.configured_axes(optim.before, optim.after))
    return axes


def refuse_unconfigured_axes(table: dict, axes: dict, optim: OptimConfig) -> None:
    """A [grid] key naming the strength axis of a slot entry the configuration does not use: say which entry."""
    unknown = [name for name in table if name not in axes and name not in grid_lib.GRID_KEYS]
    if not unknown:
        return
    from nht_jax.engine import slots  # loads JAX

    for name in unknown:
        message = slots.unconfigured_axis_message(name, optim.before, optim.after)
        if message:
            raise ConfigError(message)


def check_name(name: str) -> None:
    """A configuration's `name` is one folder name (`nht run` without --out writes runs/out/<name>): refuse an empty
    name, '.', '..' and anything holding a path separator, which would write outside runs/out."""
    plain = name.strip() not in ("", ".", "..") and not any(c in name for c in ("/", "\\", "\0"))
    check(
        plain,
        f"name = {name!r} is not a plain name: it becomes the results folder runs/out/<name> of `nht run` "
        f"without --out, so it must be one folder name (not empty, not '.' or '..', no '/' or '\\'). "
        f"Choose a name such as 'my-sweep'; where the results go is --out DIR's job.",
    )


def refuse_static_settings(table: dict, axes: dict, domain, sections: dict) -> None:
    """A [grid] key naming a [task] or [model] setting the domain does not declare sweepable: say so clearly."""
    for name in table:
        if name in axes or name in grid_lib.GRID_KEYS or name in domain.static_axes:
            continue
        for section_name, section in sections.items():
            if name != "name" and hasattr(section, name):
                declared = [f"grid.{axis} ({spec.section}.{spec.key})" for axis, spec in domain.static_axes.items()]
                instead = next(
                    (
                        axis
                        for axis, spec in domain.static_axes.items()
                        if (spec.section, spec.key) == (section_name, name)
                    ),
                    None,
                )
                hint = (
                    f"sweep it as grid.{instead}"
                    if instead
                    else f"set {section_name}.{name} and run one sweep per value"
                )
                raise ConfigError(
                    f"grid.{name} is the static setting {section_name}.{name} (it changes shapes or data, so each "
                    f"value needs its own compiled program), and domain '{domain.name}' does not declare it as a "
                    f"static axis (its static axes: {', '.join(declared) or 'none'}); {hint}"
                )


def validate(config: Config) -> None:
    """Raise ConfigError naming the first problem and how to fix it.

    Args:
        config: the configuration.
    """
    validate_optim(config.optim)
    if config.optim.before or config.optim.after:
        from nht_jax.engine import slots  # loads JAX

        slots.check_entries("before", config.optim.before)
        slots.check_entries("after", config.optim.after)
    validate_train(config.train)
    validate_execution(config.execution)
    validate_live(config.live)
    validate_stop(config.stop)
    validate_snapshots(config.execution, config.train)
    check(
        not ((config.execution.snapshot_steps or config.execution.snapshot_at_fit or config.fork) and config.static),
        f"snapshots and [fork] need one compiled program, and this grid sweeps the static axes "
        f"{', '.join(config.static)}; run one sweep per value of them instead",
    )
    losses = ("default", *config.domain.losses)
    check(
        config.train.loss in losses,
        f"train.loss = {config.train.loss!r} is not a loss of domain '{config.task.name}'; choose one of "
        f'{", ".join(losses)} ("default" is the domain\'s own loss)',
    )
    config.domain.validate(config)
    a = config.analysis
    for name in ("fit_threshold", "transition_threshold", "norm_decay_fraction"):
        v = getattr(a, name)
        check(0 < v <= 1, f"analysis.{name} must lie in (0, 1], got {v}")
    check_grid_representable(config)
    known = config.domain.recorded(config)
    for name in ("fit_metric", "transition_metric"):
        check(
            getattr(a, name) in known,
            f"analysis.{name} = '{getattr(a, name)}' is not recorded by this '{config.task.name}' "
            f"configuration; choose one of {sorted(known)}",
        )


METRIC_BYTES = 4
"""Bytes of one recorded value (float32) in the metrics history the sweep keeps on the host."""


def check_fits(config: Config) -> None:
    """Refuse, before any data is built or anything trains, a configuration that cannot fit this machine
    (ConfigError naming what is too big and what to change; `nht_jax.engine.memory.refuse_if_too_large`), for each
    bucket: one run's data (`Domain.data_bytes`, from the settings) and metrics history, (logs + 1) ×
    (the domain's `recorded` metrics) × 4 bytes (a lower bound: the parameter norms come on top), against the per-device cap (`execution.memory_cap_gib`, or what the device
    allows); and the data with every run's history, which the sweep keeps on the host, against the host's RAM.
    What the compiled program needs besides is checked once it is built (`memory.plan_run_slices`). Unlike
    `validate`, this depends on the machine, so it is not part of loading a configuration."""
    from nht_jax.engine import memory  # loads JAX

    cap, cap_source = memory.device_cap(config.execution)
    ram = memory.host_ram()
    for values, sub in config.buckets():
        where = f" (bucket {', '.join(f'{k} = {v}' for k, v in values.items())})" if values else ""
        logs = LogSchedule.of(sub.train).num_logs + 1
        metrics = len(sub.domain.recorded(sub))
        history = memory.Need(
            f"its metrics history ({metrics} metrics × {logs:,} logs)",
            logs * metrics * METRIC_BYTES,
            memory.HISTORY_FIX,
        )
        data_bytes = sub.domain.data_bytes(sub) if sub.domain.data_bytes is not None else 0
        data = memory.Need("the data", data_bytes, memory.DATA_FIX)
        memory.refuse_if_too_large(f"One run of '{sub.name}'{where}", [data, history], cap, cap_source)
        runs = grid_lib.num_runs(sub.runs())
        every = memory.Need(
            f"the metrics history of all {runs} runs", runs * history.bytes, f"{memory.HISTORY_FIX}, or fewer runs"
        )
        memory.refuse_if_too_large(
            f"'{sub.name}'{where}", [data, every], ram, "the host's RAM, where the sweep keeps every run's metrics"
        )


def check_grid_representable(config: Config) -> None:
    """Every value of a float32 grid axis survives the cast to float32 (runs are float32 arrays): 0, or a magnitude
    in [float32's smallest normal ≈ 1.2e-38, its largest ≈ 3.4e38]; and distinct values stay distinct. Else λ =
    1e-320 trains as λ = 0 and the figures, which look runs up by the configured value, find no run."""
    import numpy as np

    f32 = np.finfo(np.float32)
    for name, axis in config.axes.items():
        values = config.grid.get(name, ())
        if np.dtype(axis.dtype) != np.float32 or not values:
            continue
        bad = [v for v in values if v != 0 and not float(f32.tiny) <= abs(v) <= float(f32.max)]
        check(
            not bad,
            f"grid.{name} contains {bad}, which float32 (the runs' precision) cannot hold: it would "
            f"become 0, a denormal or inf. Use 0 or a magnitude between {float(f32.tiny):.3g} and "
            f"{float(f32.max):.3g}",
        )
        cast = np.asarray(values, np.float32)
        check(
            len(set(cast.tolist())) == len(set(values)),
            f"grid.{name} = {list(values)} has values that are equal in float32 (the runs' precision); space "
            f"them further apart or remove the repeats",
        )


def to_dict(config: Config) -> dict:
    """Nested plain dicts (lists for tuples), TOML-serialisable; `from_dict(to_dict(c)) == c`. The grid is written
    resolved: every axis as its list of values (random draws included), and `zip` only when some axes are paired
    (so a product grid's dict, hence its digest, is what it was before zipped and random axes existed)."""
    out: dict = {"name": config.name, "description": config.description}
    for s in SECTIONS:
        section = getattr(config, s)
        out[s] = {k: list(v) for k, v in section.items()} if s == "grid" else plain(section)
    for s in ("model", "optim", "train", "execution", "live"):  # keys added later left out at their default
        out[s] = digest_table(s, out[s])
    if not out["live"]:
        del out["live"]  # [live] all at its defaults: config.toml as before the section existed
    if config.zipped:
        out["grid"]["zip"] = [list(group) for group in config.zipped]
    if config.fork is not None:
        out["fork"] = config.fork.as_table()
    return out


def to_toml(config: Config) -> str:
    return tomli_w.dumps(to_dict(config))


def digest(config: Config) -> str:
    """Hash of everything that changes results: every section but `OUTSIDE_DIGEST`, and not the description.

    Args:
        config: the configuration.

    Returns:
        16 hex digits of its SHA-256.
    """
    data = to_dict(config)
    for section in (*OUTSIDE_DIGEST, "description"):
        data.pop(section, None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def load(preset_or_file: str = "default", overrides=(), scale: str | None = None) -> Config:
    """Load a shipped preset by name or a TOML file by path, at a `[scale.NAME]` size (nht_jax.base.presets), then
    apply `--set` overrides. The [scale] tables never enter the Config.

    Args:
        preset_or_file: a shipped preset's name or a TOML file's path.
        overrides: `--set` overrides applied last: 'section.key=value' texts, or the (path, value) pairs of
            `schema.keyword_overrides`.
        scale: the `[scale.NAME]` size to load it at; None: as written.

    Returns:
        The Config.
    """
    path = preset_path(preset_or_file)
    data, scales = split_scales(read_toml(path), SECTIONS + OPTIONAL_SECTIONS, str(path))
    data.setdefault("name", path.stem)
    if scale is not None and scale not in scales:
        raise unknown_scale(preset_or_file, scale, scales)
    try:
        return from_dict(data, scales.get(scale), overrides)
    except ConfigError as error:
        if scale is None:
            raise
        then = ", ".join(override_text(o) for o in overrides)
        raise ConfigError(
            f"{preset_or_file} at scale '{scale}' ({', '.join(scales[scale].overrides)}"
            f"{', then ' + then if overrides else ''}): {error}"
        ) from None


def with_overrides(config: Config, overrides=()) -> Config:
    """`config` with overrides applied, as `load` applies them to a file: to its tables as resolved
    (`to_dict`: a random axis's values already drawn), then built and validated again."""
    if not overrides:
        return config
    return from_dict(to_dict(config), overrides=overrides)


def scales(preset_or_file: str) -> dict[str, Scale]:
    """The scales of a preset (or TOML file) by name, in the file's order; {} when it has none.

    Args:
        preset_or_file: a shipped preset's name or a TOML file's path.

    Returns:
        {scale name: Scale}, in the file's order; {} when it has none.
    """
    return preset_scales(preset_or_file, SECTIONS + OPTIONAL_SECTIONS)


__all__ = ["Config", "ConfigError", "Scale", "digest", "load", "build_trainer", "scales", "validate", "list_presets"]
