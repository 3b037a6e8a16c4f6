"""The gradient step, in one place: raw gradients → the `optim.before` slot and the optimiser (one optax
transformation built from the run's traced η and λ by `nht_jax.engine.optim.optimiser_for`) → `optax.apply_updates`
→ the `optim.after` slot's constraints on θ (`nht_jax.engine.slots.constrain`). Every trainer (token, image, toy
models) uses it.

The updater's state is the optax state of `optimiser_for`; when some `after` entry reads the update count
(`slots.uses_step`), it is `CountedState(optimiser, count)` instead, the count of updates taken (int32), so a
domain's own state never changes shape for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax.numpy as jnp
import optax

from nht_jax.engine import slots
from nht_jax.engine.optim import optimiser_for
from nht_jax.config.sections import OptimConfig, TrainConfig


class Updater(NamedTuple):
    """init(hparams, params) → optimiser state; apply(hparams, params, opt_state, grads) → (params, opt_state)."""

    init: Callable[[dict, Any], Any]
    apply: Callable[[dict, Any, Any, Any], tuple[Any, Any]]


class CountedState(NamedTuple):
    """The updater's state when an `after` entry reads the update count: the optax state and the count."""

    optimiser: Any
    count: Any


def make_updater(optim: OptimConfig, train: TrainConfig) -> Updater:
    """The run's update from its [optim] and [train]; a slot entry with an option still to resolve (a norm
    clamp's critical_from) is refused here, before anything is traced (`slots.refuse_unresolved`).

    Args:
        optim: the [optim] settings.
        train: the [train] settings.

    Returns:
        The Updater (init, apply).
    """
    slots.refuse_unresolved(optim.before, optim.after)
    counted = slots.uses_step(optim.after)

    def init(hparams: dict, params):
        state = optimiser_for(optim, train, hparams, params).init(params)
        return CountedState(state, jnp.zeros((), jnp.int32)) if counted else state

    def apply(hparams: dict, params, opt_state, grads):
        inner = opt_state.optimiser if counted else opt_state
        updates, inner = optimiser_for(optim, train, hparams, params).update(grads, inner, params)
        params = optax.apply_updates(params, updates)
        if not counted:
            return slots.constrain(optim.after, params, hparams), inner
        count = opt_state.count + 1
        return slots.constrain(optim.after, params, hparams, count), CountedState(inner, count)

    return Updater(init, apply)


__all__ = ["make_updater"]
