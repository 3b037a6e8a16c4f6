"""The pure training function of one run: `make_train(config)` → `train(hparams, key)`.

The loop is a nested `lax.scan`: the inner scan runs `log_every` optimiser steps, the
outer one records metrics after each inner scan, so memory is O(steps / log_every).
Everything dynamic (λ, η, seed, init scale, train fraction) comes in as traced scalars,
so the same function vmaps or `lax.map`s over a grid.

Data split: the run's key permutes all N examples; the first round(f·N) are its training
set. Each step computes on a fixed number of rows, `capacity` = the largest train size in
the grid (rows beyond the run's own train size get weight 0), so grids over the train
fraction still compile once. Minibatches (batch_size > 0) are drawn without replacement
within a step, independently across steps, from the run's batch key folded with the step.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax

from nht_jax.config import Config
from nht_jax.grid import HParams
from nht_jax.metrics import logit_scale, loss_and_accuracy, parameter_metrics, sq_norm
from nht_jax.models import make_model
from nht_jax.optim import learning_rate_schedule, make_optimizer
from nht_jax.tasks import make_dataset, train_capacity
from nht_jax.tasks.dataset import num_train
from nht_jax.theory.noise import NOISE_KEY_SALT, grad_noise_var, sharpness


class TrainState(NamedTuple):
    params: Any
    opt_state: Any
    step: jnp.ndarray          # optimiser steps taken
    batch_key: jnp.ndarray     # folded with the step for each minibatch
    train_index: jnp.ndarray   # (capacity,) example indices, the run's train set first
    train_weight: jnp.ndarray  # (capacity,) 1 for the run's train rows, 0 for padding
    test_weight: jnp.ndarray   # (N,) 1 for the run's test examples


class Trainer(NamedTuple):
    """The pieces of one run, each pure: the sweep composes them over a grid."""

    init: Callable[[HParams, jnp.ndarray], TrainState]
    evaluate: Callable[[TrainState, HParams], dict]
    advance: Callable[[TrainState, HParams, int], tuple[TrainState, dict]]
    train: Callable[[HParams, jnp.ndarray], tuple[TrainState, dict]]
    step: Callable[[TrainState, HParams], TrainState]
    num_logs: int


def run_key(hparams: HParams) -> jnp.ndarray:
    """The run's PRNG key from its seed."""
    return jax.random.PRNGKey(hparams.seed)


def make_trainer(config: Config, dataset=None) -> Trainer:
    """The run's pieces: token tasks here, image tasks (task.name = "images") in `nht_jax.vision.train`."""
    if config.task.name == "images":
        from nht_jax.vision.train import make_image_trainer

        return make_image_trainer(config, dataset)
    dataset = dataset if dataset is not None else make_dataset(config.task)
    inputs, labels = jnp.asarray(dataset.inputs), jnp.asarray(dataset.labels)
    n_total, n_ctx = inputs.shape
    capacity = train_capacity(n_total, config.grid.train_fraction)
    batch_size = config.train.batch_size if 0 < config.train.batch_size < capacity else 0
    model = make_model(config.model, dataset.vocab_size, dataset.num_classes, n_ctx)
    optim_cfg, log_every = config.optim, config.train.log_every

    def optimizer(hparams: HParams, params) -> optax.GradientTransformation:
        eta = learning_rate_schedule(config.train.lr_schedule, hparams.learning_rate, config.train.steps)
        return make_optimizer(optim_cfg, eta, hparams.weight_decay, params)

    def init(hparams: HParams, key=None) -> TrainState:
        key = run_key(hparams) if key is None else key
        split_key, init_key, batch_key = jax.random.split(key, 3)
        order = jax.random.permutation(split_key, n_total)
        train_weight = (jnp.arange(capacity) < num_train(n_total, hparams.train_fraction)).astype(jnp.float32)
        test_weight = jnp.ones(n_total, jnp.float32).at[order[:capacity]].set(1.0 - train_weight)
        params = model.init(init_key, inputs[:1])["params"]
        params = jax.tree.map(lambda p: p * hparams.init_scale, params)
        return TrainState(params, optimizer(hparams, params).init(params), jnp.zeros((), jnp.int32), batch_key,
                          order[:capacity], train_weight, test_weight)

    def batch(state: TrainState):
        if batch_size == 0:
            return state.train_index, state.train_weight
        scores = jax.random.uniform(jax.random.fold_in(state.batch_key, state.step), (capacity,))
        scores = jnp.where(state.train_weight > 0, scores, -1.0)
        picked_scores, picked = jax.lax.top_k(scores, batch_size)
        return state.train_index[picked], (picked_scores >= 0).astype(jnp.float32)

    def train_loss(params, index, weight):
        logits = model.apply({"params": params}, inputs[index])
        return loss_and_accuracy(logits, labels[index], weight)[0]

    def step(state: TrainState, hparams: HParams) -> TrainState:
        grads = jax.grad(train_loss)(state.params, *batch(state))
        updates, opt_state = optimizer(hparams, state.params).update(grads, state.opt_state, state.params)
        return state._replace(params=optax.apply_updates(state.params, updates), opt_state=opt_state,
                              step=state.step + 1)

    def evaluate(state: TrainState, hparams: HParams) -> dict:
        """Metrics on all N examples: one forward and backward pass (the backward gives the full-batch gradient)."""
        train_weight_all = 1.0 - state.test_weight

        def full_loss(params):
            logits = model.apply({"params": params}, inputs)
            return loss_and_accuracy(logits, labels, train_weight_all)[0], logits

        (train_loss_value, logits), grads = jax.value_and_grad(full_loss, has_aux=True)(state.params)
        _, train_acc = loss_and_accuracy(logits, labels, train_weight_all)
        test_loss, test_acc = loss_and_accuracy(logits, labels, state.test_weight)
        metrics = {
            "train_loss": train_loss_value, "train_acc": train_acc, "test_loss": test_loss, "test_acc": test_acc,
            "logit_scale": logit_scale(logits, jnp.ones_like(state.test_weight)),
            "grad_norm": jnp.sqrt(sq_norm(grads)),
        }
        metrics.update(parameter_metrics(state.params, train_loss_value, config.train.divergence_norm))
        if config.train.record_grad_noise:
            metrics.update(noise_metrics(state, grads))
        return metrics

    noise_batch = config.train.noise_batch_size or batch_size

    def noise_metrics(state: TrainState, grads) -> dict:
        """σ² of minibatch gradients (0 under full batch) and a lower bound on L: see nht_jax.theory.noise."""
        key = jax.random.fold_in(jax.random.fold_in(state.batch_key, NOISE_KEY_SALT), state.step)
        var = (grad_noise_var(train_loss, state.params, grads, state.train_index, state.train_weight, key,
                              noise_batch, config.train.noise_samples) if 0 < noise_batch < capacity else jnp.zeros(()))
        curvature = sharpness(lambda p: train_loss(p, state.train_index, state.train_weight), state.params, grads)
        return {"grad_noise_var": var, "sharpness": curvature}

    return assemble_trainer(init, step, evaluate, log_every, config.train.steps)


def assemble_trainer(init: Callable, step: Callable, evaluate: Callable, log_every: int, steps: int) -> Trainer:
    """The shared loop: `advance` is a scan of `log_every`-step scans with `evaluate` after each; `train`
    is init, a step-0 evaluation and `steps / log_every` blocks, metrics stacked on axis 0."""

    def advance(state, hparams: HParams, num_logs: int):
        def one_step(s, _):
            return step(s, hparams), None

        def one_block(s, _):
            s, _ = jax.lax.scan(one_step, s, None, length=log_every)
            return s, evaluate(s, hparams)

        return jax.lax.scan(one_block, state, None, length=num_logs)

    num_logs = steps // log_every

    def train(hparams: HParams, key=None):
        state = init(hparams, key)
        first = evaluate(state, hparams)
        state, rest = advance(state, hparams, num_logs)
        return state, jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, rest)

    return Trainer(init=init, evaluate=evaluate, advance=advance, train=train, step=step, num_logs=num_logs)


def make_train(config: Config, dataset=None) -> Callable[[HParams, jnp.ndarray], tuple[TrainState, dict]]:
    """The pure single-run function `train(hparams, key=None)` (key defaults to PRNGKey(seed))."""
    return make_trainer(config, dataset).train


def log_steps(config: Config):
    """Steps at which metrics are recorded: 0, log_every, …, steps."""
    return jnp.arange(0, config.train.steps + 1, config.train.log_every)


__all__ = ["TrainState", "Trainer", "make_train", "make_trainer", "log_steps"]
