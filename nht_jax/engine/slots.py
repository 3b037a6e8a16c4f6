"""The two slots of a run's update, and the registry of what may fill them.

One step of every trainer (`nht_jax.engine.step`) runs the raw loss gradient through slot `optim.before` (optax
GradientTransformations, `GradientEntry`), the optimiser (`nht_jax.engine.optim`), `optax.apply_updates`, then slot
`optim.after` (constraints on the parameters, `ConstraintEntry`). Configured in [optim] as lists, run in the
order given; each entry declares how it changes the contraction of V = ‖θ‖² (`nht_jax.engine.contraction`) and may
declare its strengths as optional grid axes (`option`, `unconfigured_axis_message`) or an option still to resolve
before training (`refuse_unresolved`). Adding an entry is one settings dataclass, one function and one line in
`BEFORE` or `AFTER`; the record types live in `nht_jax.engine.slot_entry`, the follow-up papers' interventions in
`nht_jax.engine.interventions`.

The step, the slots, the entries' contract and how to add one: docs/extending/intervention.md; the shipped
interventions and their axes: docs/configuration/interventions.md."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import optax

from nht_jax.base.errors import ConfigError, check
from nht_jax.base.schema import build, did_you_mean
from nht_jax.engine import interventions
from nht_jax.engine.contraction import Contraction
from nht_jax.engine.grid import Axis
from nht_jax.engine.slot_entry import ConstraintEntry, GradientEntry, axis_option


# ----------------------------------------------------------------------------- built-in: before


@dataclass(frozen=True)
class ClipByGlobalNorm:
    """Options of `clip_by_global_norm`. max_norm: c > 0."""

    name: Literal["clip_by_global_norm"] = "clip_by_global_norm"
    max_norm: float = 1.0

    def __post_init__(self):
        check(self.max_norm > 0, f"optim.before clip_by_global_norm: max_norm must be > 0, got {self.max_norm}")


def clip_by_global_norm(settings: ClipByGlobalNorm, hparams: Mapping) -> optax.GradientTransformation:
    """Rescale the raw loss gradient to a global norm of at most c (`optax.clip_by_global_norm`).

        g ← g · min(1, c / ‖g‖),   ‖g‖² = Σ over every leaf of Σ g²

    Args:
      settings: the entry's options (c = settings.max_norm).
      hparams: the run's traced hyperparameters (unused).

    Returns:
      An optax GradientTransformation (stateless).

    Contraction: unchanged. A zero gradient stays zero, and the optimiser adds its weight decay after this slot,
    so the decay term itself is never clipped.
    """
    return optax.clip_by_global_norm(settings.max_norm)


# ----------------------------------------------------------------------------- built-in: after


@dataclass(frozen=True)
class ProjectL2Ball:
    """Options of `project_l2_ball`. max_norm: the radius R > 0 of the ball ‖θ‖ ≤ R."""

    name: Literal["project_l2_ball"] = "project_l2_ball"
    max_norm: float = 100.0

    def __post_init__(self):
        check(self.max_norm > 0, f"optim.after project_l2_ball: max_norm must be > 0, got {self.max_norm}")


def project_l2_ball(settings: ProjectL2Ball, params, hparams: Mapping, step=None):
    """The Euclidean projection of θ (every parameter together) onto the ball ‖θ‖ ≤ R
    (`optax.projections.projection_l2_ball`):

        θ ← θ · R / max(‖θ‖, R)

    Args:
      settings: the entry's options (R = settings.max_norm).
      params: θ after the update.
      hparams: the run's traced hyperparameters (unused).
      step: updates taken (unused).

    Returns:
      θ projected, the same pytree structure.
    """
    return optax.projections.projection_l2_ball(params, settings.max_norm)


def l2_ball_contraction(settings: ProjectL2Ball, contraction: Contraction) -> Contraction:
    """Unknown: while ‖θ‖ > R the projection sets V to R² in one step, so V does not contract at one constant
    rate (below the ball's edge it is the optimiser's)."""
    return contraction.unknown(
        f"optim.after project_l2_ball (max_norm = {settings.max_norm:g}) rescales θ to ‖θ‖ = {settings.max_norm:g} "
        f"whenever it exceeds it, so V = ‖θ‖² has no single contraction rate (it is the optimiser's only while "
        f"‖θ‖ < {settings.max_norm:g})"
    )


# ----------------------------------------------------------------------------- registries

BEFORE: dict[str, GradientEntry] = {
    "clip_by_global_norm": GradientEntry(ClipByGlobalNorm, clip_by_global_norm),
    **interventions.GRADIENT_ENTRIES,
}
"""Gradient transformations for `optim.before`, by name: the built-ins, then the interventions
(`nht_jax.engine.interventions`)."""

AFTER: dict[str, ConstraintEntry] = {
    "project_l2_ball": ConstraintEntry(ProjectL2Ball, project_l2_ball, l2_ball_contraction),
    **interventions.CONSTRAINT_ENTRIES,
}
"""Parameter constraints for `optim.after`, by name: the built-ins, then the interventions."""

SLOTS = {"before": BEFORE, "after": AFTER}


def read_entry(slot: str, where: str, value):
    """One configured entry of `slot` ("before" or "after") from TOML: its name, or a table {name = …, options}.
    Returns the entry's settings dataclass; an unknown name or option raises ConfigError."""
    registry = SLOTS[slot]
    table = {"name": value} if isinstance(value, str) else value
    if not isinstance(table, dict) or not isinstance(table.get("name"), str):
        raise ConfigError(
            f'each entry of {where} is a name or a table {{name = "…", options}}, got {value!r}; '
            f"known entries: {', '.join(registry)}"
        )
    name = table["name"]
    if name not in registry:
        raise ConfigError(
            f"{where}: unknown entry {name!r}.{did_you_mean(name, registry)} "
            f"Known entries of the '{slot}' slot: {', '.join(registry)}"
        )
    return build(registry[name].settings, table, f"{where}[{name}]")


def entry_of(slot: str, settings) -> GradientEntry | ConstraintEntry:
    """The registered entry whose settings dataclass `settings` is an instance of."""
    registry = SLOTS[slot]
    name = getattr(settings, "name", None)
    if name not in registry or not isinstance(settings, registry[name].settings):
        raise ConfigError(
            f"optim.{slot} holds {settings!r}, which is no entry of the '{slot}' slot; "
            f"known entries: {', '.join(registry)}"
        )
    return registry[name]


def check_entries(slot: str, entries) -> None:
    """Raise ConfigError unless every entry is a registered settings instance of `slot`."""
    for settings in entries:
        entry_of(slot, settings)


def gradient_transformations(entries, hparams: Mapping) -> list[optax.GradientTransformation]:
    """The `before` slot's transformations, in order, for one run's traced hyperparameters."""
    return [entry_of("before", s).transform(s, hparams) for s in entries]


def constrain(entries, params, hparams: Mapping, step=None):
    """θ after the `after` slot's constraints, applied in order.

    Args:
        entries: the `optim.after` entries.
        params: θ after the update.
        hparams: the run's traced values.
        step: updates taken including this one.

    Returns:
        θ constrained.
    """
    for s in entries:
        params = entry_of("after", s).constrain(s, params, hparams, step)
    return params


def uses_step(entries) -> bool:
    """Whether some `after` entry reads the update count (the updater then keeps one).

    Args:
        entries: the `optim.after` entries.

    Returns:
        True when one does.
    """
    return any(entry_of("after", s).uses_step for s in entries)


def option(settings, hparams: Mapping, field: str):
    """The value of an entry's option `field` for one run: the run's value of the entry's axis for it when the
    grid lists that axis, else the configured option.

    Args:
        settings: the entry's options.
        hparams: the run's values.
        field: the option's name.

    Returns:
        The option's value for the run.
    """
    return axis_option(entry_of_settings(settings).axes, settings, hparams, field)


def entry_of_settings(settings) -> GradientEntry | ConstraintEntry:
    """The registered entry (of either slot) whose settings dataclass `settings` is an instance of."""
    for slot, registry in SLOTS.items():
        entry = registry.get(getattr(settings, "name", None))
        if entry is not None and isinstance(settings, entry.settings):
            return entry
    raise ConfigError(f"{settings!r} is no entry of the optim.before or optim.after slot")


def configured_axes(before, after) -> dict[str, Axis]:
    """The grid axes of the configured entries: {axis name: Axis}, in slot order (before first)."""
    out: dict[str, Axis] = {}
    for slot, entries in (("before", before), ("after", after)):
        for s in entries:
            out.update({axis.name: axis for axis in entry_of(slot, s).axes.values()})
    return out


def unconfigured_axis_message(name: str, before, after) -> str | None:
    """A ConfigError message when `name` is the axis of a registered entry that is not configured, else None."""
    if name in configured_axes(before, after):
        return None
    for slot, registry in SLOTS.items():
        for entry_name, entry in registry.items():
            for field, axis in entry.axes.items():
                if axis.name == name:
                    return (
                        f"grid.{name} is the '{field}' of the optim.{slot} entry '{entry_name}', which this "
                        f'configuration does not use; add it to [optim], e.g. {slot} = ["{entry_name}"], '
                        f"or remove grid.{name}"
                    )
    return None


def unresolved_message(before, after) -> str | None:
    """The first configured entry's message about an option still to be resolved before training (a norm
    clamp's critical_from that `nht run` measures into critical_norm), or None when every entry can train."""
    for slot, entries in (("before", before), ("after", after)):
        for s in entries:
            message = entry_of(slot, s).unresolved(s)
            if message:
                return message
    return None


def refuse_unresolved(before, after) -> None:
    """Raise ConfigError when some configured entry cannot train yet (`unresolved_message`)."""
    message = unresolved_message(before, after)
    if message:
        raise ConfigError(message)


def identity_runs(entry: GradientEntry | ConstraintEntry, settings, hparams: Mapping | None):
    """Per run, whether the entry is at the identity of every one of its strength axes, each option read as the
    run's grid value where the grid lists its axis, else the configured option (`axis_option`); None when the
    entry has no such axis (or no grid values are given)."""
    axes = {field: axis for field, axis in entry.axes.items() if axis.identity is not None}
    if hparams is None or not axes:
        return None
    off = [
        np.asarray(hparams[a.name] if a.name in hparams else getattr(settings, field), np.float64) == a.identity
        for field, a in axes.items()
    ]
    return np.logical_and.reduce(np.broadcast_arrays(*off))


def fold_contraction(before, after, contraction: Contraction, hparams: Mapping | None = None) -> Contraction:
    """The optimiser's Contraction passed through every entry's declaration, before-slot first. With the runs'
    grid values `hparams`, a run at an entry's identity (`identity_runs`) keeps the rate it had before that entry."""
    for slot, entries in (("before", before), ("after", after)):
        for s in entries:
            entry = entry_of(slot, s)
            declared, off = entry.contraction(s, contraction), identity_runs(entry, s, hparams)
            contraction = declared if off is None else contraction.where(off, declared)
    return contraction


def describe(settings) -> str:
    """ "name(option=value, …)" of one configured entry."""
    options = ", ".join(
        f"{f.name}={getattr(settings, f.name)!r}" for f in dataclasses.fields(settings) if f.name != "name"
    )
    return f"{settings.name}({options})"


__all__ = [
    "AFTER",
    "BEFORE",
    "ConstraintEntry",
    "GradientEntry",
    "clip_by_global_norm",
    "constrain",
    "option",
    "project_l2_ball",
    "uses_step",
]
