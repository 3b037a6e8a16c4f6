"""The gradient step, in one place: raw gradients → the `optim.before` slot and the optimiser (one optax
transformation built from the run's traced η and λ by `nht_jax.engine.optim.optimizer_for`) → `optax.apply_updates`
→ the `optim.after` slot's constraints on θ (`nht_jax.engine.slots.constrain`). Every trainer (token, image, toy
models) uses it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import optax

from nht_jax.engine import slots
from nht_jax.engine.optim import optimizer_for
from nht_jax.engine.settings import OptimConfig, TrainConfig


class Updater(NamedTuple):
    """init(hparams, params) → optimiser state; apply(hparams, params, opt_state, grads) → (params, opt_state)."""

    init: Callable[[dict, Any], Any]
    apply: Callable[[dict, Any, Any, Any], tuple[Any, Any]]


def make_updater(optim: OptimConfig, train: TrainConfig) -> Updater:
    def init(hparams: dict, params):
        return optimizer_for(optim, train, hparams, params).init(params)

    def apply(hparams: dict, params, opt_state, grads):
        updates, opt_state = optimizer_for(optim, train, hparams, params).update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return slots.constrain(optim.after, params, hparams), opt_state

    return Updater(init, apply)


__all__ = ["Updater", "make_updater"]
