"""The record of one slot entry (`nht_jax.engine.slots`), and how an entry reads an option that a grid axis may
give per run. Below both the registry (`slots`) and the interventions (`interventions`), so that neither imports
the other's module to know what an entry is."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import optax

from nht_jax.engine.contraction import Contraction, unchanged
from nht_jax.engine.grid import Axis


def resolved(settings) -> str | None:
    """The default `unresolved` check of an entry: nothing left to resolve before it can train.

    Args:
        settings: the entry's options.

    Returns:
        None.
    """
    return None


class GradientEntry(NamedTuple):
    """A `before` slot entry. settings: its frozen dataclass (a `name` field, then its options);
    transform(settings, hparams) → an optax GradientTransformation applied to the raw loss gradient;
    contraction(settings, c) → the Contraction after it (default `unchanged`: it maps a zero gradient to zero);
    axes: {option field: the optional grid Axis that may give it per run} (`slots` module docstring);
    unresolved(settings) → None, or a ConfigError message when an option still has to be resolved before the
    entry can train (checked when the update is built, `slots.refuse_unresolved`)."""

    settings: type
    transform: Callable[[Any, Mapping], optax.GradientTransformation]
    contraction: Callable[[Any, Contraction], Contraction] = unchanged
    axes: Mapping[str, Axis] = {}
    unresolved: Callable[[Any], str | None] = resolved


class ConstraintEntry(NamedTuple):
    """An `after` slot entry. settings: its frozen dataclass; constrain(settings, params, hparams, step) → params,
    applied to θ after the update; contraction(settings, c) → the Contraction after it (no default: a constraint
    that moves θ must say what it does to V's contraction, or that it is unknown); axes: as `GradientEntry.axes`;
    uses_step: whether `constrain` reads `step` (the updater then counts updates); unresolved: as
    `GradientEntry.unresolved`."""

    settings: type
    constrain: Callable[[Any, Any, Mapping, Any], Any]
    contraction: Callable[[Any, Contraction], Contraction]
    axes: Mapping[str, Axis] = {}
    uses_step: bool = False
    unresolved: Callable[[Any], str | None] = resolved


def axis_option(axes: Mapping[str, Axis], settings, hparams: Mapping, field: str):
    """The value of option `field` for one run: the run's value of its axis (`axes[field]`) when the grid lists
    that axis (it is then in `hparams`, a traced scalar), else the configured option `settings.field`."""
    axis = axes.get(field)
    if axis is not None and axis.name in hparams:
        return hparams[axis.name]
    return getattr(settings, field)


__all__ = ["ConstraintEntry", "GradientEntry", "resolved"]
