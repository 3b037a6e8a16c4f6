"""The gradient step, in one place: gradients → the run's optax transformation (built from its traced η and λ
by `nht_jax.engine.optim.optimizer_for`) → new parameters. Every trainer (token, image, toy models) uses it."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import optax

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
        return optax.apply_updates(params, updates), opt_state

    return Updater(init, apply)


__all__ = ["Updater", "make_updater"]
