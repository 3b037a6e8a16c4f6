"""Shared machinery of the token domains (modular arithmetic, sparse parity): the dataset of every example,
the per-run train/test split, the token trainer and the `train_fraction` axis. Not a domain itself.

Data split: the run's key permutes all N examples; the first round(f·N) are its training set, the rest its
test set. Each step computes on a fixed number of rows, `capacity` = the largest train size in the grid (rows
beyond the run's own train size get weight 0), so grids over the train fraction still compile once.
Minibatches (batch_size > 0) are drawn from the run's batch key folded with the step, independently across
steps: without replacement within a step (train.batch_sampling = "without_replacement", the default), or with
replacement (uniform indices into the run's train rows, "with_replacement").

Loss and temperature (`nht_jax.engine.losses`): a run trains and is evaluated with the loss `train.loss` chooses
(cross-entropy by default; "mse" and "stablemax" besides), so train_loss and test_loss are that loss. When the
grid lists the optional axis `temperature`, the loss sees z/τ for the model's logits z, in every step and every
evaluation, and each log also records effective_logit_scale = RMS(z/τ); logit_scale, and the optional logit
metrics (the modular task's Fourier shares), stay those of z itself.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nht_jax.base.errors import check
from nht_jax.domains import Domain, ModelContract
from nht_jax.engine.grid import Axis, StaticAxis, number_check
from nht_jax.engine.loop import assemble_trainer, run_key
from nht_jax.engine.losses import (
    CLASSIFICATION_LOSSES,
    TEMPERATURE,
    TEMPERATURE_METRICS,
    effective_logit_scale,
    has_temperature,
    loss_function,
    temperature_metrics,
    tempered,
)
from nht_jax.engine.metrics import logit_scale, parameter_metrics, sq_norm
from nht_jax.engine.noise import NOISE_KEY_SALT, grad_noise_var, sharpness
from nht_jax.engine.step import make_updater
from nht_jax.models import TOKEN_MODELS


class Dataset(NamedTuple):
    """Every example of a task. inputs: (N, n_ctx) int32 tokens; labels: (N,) int32."""

    inputs: np.ndarray
    labels: np.ndarray
    vocab_size: int
    num_classes: int


def num_train(n_total: int, train_fraction):
    """Train-set size: round(fraction · N), at least 1 and at most N − 1."""
    return jnp.clip(jnp.round(train_fraction * n_total).astype(jnp.int32), 1, n_total - 1)


def train_capacity(n_total: int, fractions) -> int:
    """Static upper bound on the train-set size over a grid of fractions (rows computed per step)."""
    return int(min(max(round(f * n_total) for f in fractions), n_total - 1)) or 1


def split_masks(split_key, n_total: int, train_fraction):
    """Boolean (train_mask, test_mask) over all N examples: disjoint and covering (the trainer's own split)."""
    order = jax.random.permutation(split_key, n_total)
    rank = jnp.zeros(n_total, jnp.int32).at[order].set(jnp.arange(n_total, dtype=jnp.int32))
    is_train = rank < num_train(n_total, train_fraction)
    return is_train, ~is_train


def numpy_split(seed_key, n_total: int, train_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Host-side train and test indices (sorted), identical to the in-trace split."""
    train, test = split_masks(seed_key, n_total, train_fraction)
    return np.flatnonzero(np.asarray(train)), np.flatnonzero(np.asarray(test))


class TrainState(NamedTuple):
    params: Any
    opt_state: Any
    step: jnp.ndarray  # optimiser steps taken
    batch_key: jnp.ndarray  # folded with the step for each minibatch
    train_index: jnp.ndarray  # (capacity,) example indices, the run's train set first
    train_weight: jnp.ndarray  # (capacity,) 1 for the run's train rows, 0 for padding
    test_weight: jnp.ndarray  # (N,) 1 for the run's test examples


def minibatch(state: TrainState, batch_size: int, with_replacement: bool = False):
    """(example indices, weights) of the step's batch: every train row (batch_size 0), else `batch_size` of the
    run's own train rows drawn with fold_in(batch_key, step).

    Args:
        state: the run's train state (its train rows, batch key and step).
        batch_size: rows per batch; 0: every train row.
        with_replacement: draw with replacement (independent uniform draws, all weights 1) rather than without
            (weight 0 only when the run has fewer train rows than `batch_size`).

    Returns:
        (example indices, weights).
    """
    if batch_size == 0:
        return state.train_index, state.train_weight
    if with_replacement:
        n_train = jnp.sum(state.train_weight > 0).astype(jnp.int32)  # the run's train rows come first
        picked = jax.random.randint(jax.random.fold_in(state.batch_key, state.step), (batch_size,), 0, n_train)
        return state.train_index[picked], jnp.ones(batch_size, jnp.float32)
    scores = jax.random.uniform(jax.random.fold_in(state.batch_key, state.step), state.train_weight.shape)
    scores = jnp.where(state.train_weight > 0, scores, -1.0)
    picked_scores, picked = jax.lax.top_k(scores, batch_size)
    return state.train_index[picked], (picked_scores >= 0).astype(jnp.float32)


class LogitMetrics(NamedTuple):
    """Optional metrics a token domain computes from the logits on all N examples at every log.

    meanings: name → one line of meaning (joins the domain's `metrics`); enabled(config): whether a configuration
    records them; make(config, dataset) → a pure function logits (N, classes) → {name: scalar}."""

    meanings: Mapping[str, str]
    enabled: Callable[[Any], bool]
    make: Callable[[Any, Dataset], Callable]


def make_token_trainer(config, dataset: Dataset, logit_metrics: Callable | None = None):
    """The engine Trainer of a token domain: init (split, parameters), step, evaluate on all N examples.

    logit_metrics: an optional pure function of the logits on all N examples (N, classes) → {name: scalar},
    added to every log (it reuses the evaluation's forward pass and draws no random numbers)."""
    inputs, labels = jnp.asarray(dataset.inputs), jnp.asarray(dataset.labels)
    n_total, n_ctx = inputs.shape
    capacity = train_capacity(n_total, config.grid["train_fraction"])
    with_replacement = config.train.batch_sampling == "with_replacement"
    batch_size = (
        config.train.batch_size
        if 0 < config.train.batch_size < capacity or (with_replacement and config.train.batch_size > 0)
        else 0
    )
    model = config.model.build(dataset.vocab_size, dataset.num_classes, n_ctx)
    updater = make_updater(config.optim, config.train)
    loss = loss_function(config.train.loss)

    def init(hparams: dict, key=None) -> TrainState:
        key = run_key(hparams) if key is None else key
        split_key, init_key, batch_key = jax.random.split(key, 3)
        order = jax.random.permutation(split_key, n_total)
        train_weight = (jnp.arange(capacity) < num_train(n_total, hparams["train_fraction"])).astype(jnp.float32)
        test_weight = jnp.ones(n_total, jnp.float32).at[order[:capacity]].set(1.0 - train_weight)
        params = model.init(init_key, inputs[:1])["params"]
        params = jax.tree.map(lambda p: p * hparams["init_scale"], params)
        return TrainState(
            params,
            updater.init(hparams, params),
            jnp.zeros((), jnp.int32),
            batch_key,
            order[:capacity],
            train_weight,
            test_weight,
        )

    def batch(state: TrainState):
        return minibatch(state, batch_size, with_replacement)

    def train_loss(params, index, weight, hparams):
        """The chosen loss on the rows `index` (weighted), of the logits the loss sees (z/τ under a temperature)."""
        logits = tempered(model.apply({"params": params}, inputs[index]), hparams)
        return loss(logits, labels[index], weight)[0]

    def step(state: TrainState, hparams: dict) -> TrainState:
        grads = jax.grad(train_loss)(state.params, *batch(state), hparams)
        params, opt_state = updater.apply(hparams, state.params, state.opt_state, grads)
        return state._replace(params=params, opt_state=opt_state, step=state.step + 1)

    def evaluate(state: TrainState, hparams: dict) -> dict:
        """Metrics on all N examples: one forward and backward pass (the backward gives the full-batch gradient)."""
        train_weight_all = 1.0 - state.test_weight

        def full_loss(params):
            logits = model.apply({"params": params}, inputs)
            return loss(tempered(logits, hparams), labels, train_weight_all)[0], logits

        (train_loss_value, logits), grads = jax.value_and_grad(full_loss, has_aux=True)(state.params)
        seen = tempered(logits, hparams)
        _, train_acc = loss(seen, labels, train_weight_all)
        test_loss, test_acc = loss(seen, labels, state.test_weight)
        every = jnp.ones_like(state.test_weight)
        metrics = {
            "train_loss": train_loss_value,
            "train_acc": train_acc,
            "test_loss": test_loss,
            "test_acc": test_acc,
            "logit_scale": logit_scale(logits, every),
            "grad_norm": jnp.sqrt(sq_norm(grads)),
        }
        if has_temperature(hparams):
            metrics["effective_logit_scale"] = effective_logit_scale(logits, hparams, every)
        metrics.update(parameter_metrics(state.params, train_loss_value, config.train.divergence_norm))
        if config.train.record_grad_noise:
            metrics.update(noise_metrics(state, grads, hparams))
        if logit_metrics is not None:
            metrics.update(logit_metrics(logits))
        return metrics

    noise_batch = config.train.noise_batch_size or batch_size

    def noise_metrics(state: TrainState, grads, hparams: dict) -> dict:
        """σ² of minibatch gradients (0 under full batch) and a lower bound on L: see nht_jax.engine.noise."""
        key = jax.random.fold_in(jax.random.fold_in(state.batch_key, NOISE_KEY_SALT), state.step)

        def run_loss(params, index, weight):
            return train_loss(params, index, weight, hparams)

        var = (
            grad_noise_var(
                run_loss,
                state.params,
                grads,
                state.train_index,
                state.train_weight,
                key,
                noise_batch,
                config.train.noise_samples,
            )
            if 0 < noise_batch < capacity
            else jnp.zeros(())
        )
        curvature = sharpness(lambda p: run_loss(p, state.train_index, state.train_weight), state.params, grads)
        return {"grad_noise_var": var, "sharpness": curvature}

    return assemble_trainer(init, step, evaluate, config.train.log_every, config.train.steps, config.train.log_schedule)


TOKEN_AXES = {
    "train_fraction": Axis(
        "train_fraction",
        (0.4,),
        "train fraction",
        check=number_check("train_fraction", lambda v: 0 < v < 1, "must lie strictly between 0 and 1"),
        meaning="fraction f of all examples in the run's training split (round(f·N) rows)",
    ),
    TEMPERATURE.name: TEMPERATURE,
}
"""The token domains' axes: the train fraction, and the optional output temperature (`engine.losses`)."""

TOKEN_METRICS = {
    "logit_scale": "root-mean-square logit over every example of the task (train and held-out)",
    "grad_norm": "‖∇L‖ of the full-batch training loss at the logged parameters",
    "grad_noise_var": "σ² = E‖g_B − g‖² of minibatch gradients (train.record_grad_noise; nht_jax.engine.noise)",
    "sharpness": "a lower bound on the loss smoothness L by power iteration (train.record_grad_noise)",
    **TEMPERATURE_METRICS,
}
TOKEN_CONTRACT = ModelContract(
    arguments=("vocab_size", "num_classes", "n_ctx"),
    inputs="tokens: int32 (batch, n_ctx), each in [0, vocab_size); called as module.apply({'params': p}, tokens)",
    outputs="logits: float (batch, num_classes); all its variables in 'params' (the grid's init_scale multiplies them)",
)
"""What the token trainer asks of a model from outside the package (docs/guides/plugins.md)."""
BASE_RECORDED = frozenset({"train_loss", "train_acc", "test_loss", "test_acc", "logit_scale", "grad_norm"})


def recorded(config) -> frozenset:
    extra = {"grad_noise_var", "sharpness"} if config.train.record_grad_noise else set()
    return BASE_RECORDED | extra | set(temperature_metrics(config.grid))


def every_width(value, hidden) -> tuple[int, ...]:
    """model.hidden with every layer at width `value` (the depth kept; one layer when there was none)."""
    return tuple(int(value) for _ in hidden) or (int(value),)


WIDTH_AXIS = StaticAxis("model", "hidden", "MLP width", every_width, log=True)
"""grid.width: the hidden width of the MLP (every hidden layer), one compiled bucket per value."""
MODULUS_AXIS = StaticAxis("task", "p", "modulus p", lambda value, p: int(value))
"""grid.p: the modulus of a task with a `p` setting (its data differ per value), one bucket per value."""
BATCH_AXIS = StaticAxis("train", "batch_size", "batch size", lambda value, batch_size: int(value), log=True)
"""grid.batch_size: train.batch_size, the rows of each step's minibatch (its shape differs per value), one bucket per
value; a value ≥ the training set is the full batch (`make_token_trainer`). The gradient-noise axis of the batch-noise
preset (docs/papers/follow-up-data.md)."""


def token_static_axes(settings: type) -> dict[str, StaticAxis]:
    """The static axes of a token domain: width, p when its [task] has a modulus p, and batch_size."""
    fields = {f.name for f in dataclasses.fields(settings)}
    return {"width": WIDTH_AXIS, **({"p": MODULUS_AXIS} if "p" in fields else {}), "batch_size": BATCH_AXIS}


def dataset_bytes(rows: int, n_ctx: int) -> int:
    """Bytes of a Dataset of `rows` examples of `n_ctx` int32 tokens and one int32 label each."""
    return rows * (n_ctx + 1) * np.dtype(np.int32).itemsize


def check_split(n_total: int, fractions) -> None:
    """Every train fraction leaves at least one example on each side: 1 ≤ round(f·N) ≤ N − 1 (`num_train` would
    otherwise clip it silently, training on another fraction than the one configured)."""
    for f in fractions:
        n = round(f * n_total)
        check(
            1 <= n <= n_total - 1,
            f"grid.train_fraction = {f} gives round({f} × {n_total}) = {n} training examples of the task's {n_total}: "
            f"the training and the test split each need at least one; choose a fraction in "
            f"[{1.5 / n_total:.3g}, {1 - 1.5 / n_total:.3g}]",
        )


def token_domain(
    name: str,
    settings: type,
    make_dataset: Callable,
    validate_task: Callable,
    logit_metrics: LogitMetrics | None = None,
    dataset_shape: Callable | None = None,
) -> Domain:
    """A token domain from its settings class, its dataset builder, its checks and its optional metrics of the
    logits.

    Args:
        name: the domain's name.
        settings: its settings class.
        make_dataset: its dataset builder (settings → Dataset).
        validate_task: its checks of the settings.
        logit_metrics: optional metrics of the logits (recorded, and summarised, only by configurations that enable
            them).
        dataset_shape: `dataset_shape(settings) → (rows, n_ctx)`, the dataset's size without building it
            (`Domain.data_bytes`).

    Returns:
        The Domain.
    """

    def validate(config) -> None:
        validate_task(config.task)
        config.model.validate()
        if dataset_shape is not None:
            check_split(dataset_shape(config.task)[0], config.grid.get("train_fraction", ()))

    def extra(config) -> tuple:
        return tuple(logit_metrics.meanings) if logit_metrics is not None and logit_metrics.enabled(config) else ()

    def make_trainer(config, dataset: Dataset):
        return make_token_trainer(config, dataset, logit_metrics.make(config, dataset) if extra(config) else None)

    return Domain(
        name=name,
        settings=settings,
        models=TOKEN_MODELS,
        default_model="mlp",
        axes=TOKEN_AXES,
        metrics={**TOKEN_METRICS, **(logit_metrics.meanings if logit_metrics is not None else {})},
        headline_metric="test_acc",
        validate=validate,
        load_data=lambda config: make_dataset(config.task),
        make_trainer=make_trainer,
        recorded=lambda config: recorded(config) | frozenset(extra(config)),
        summary=lambda config: ("test_acc", "test_loss") + extra(config) + temperature_metrics(config.grid),
        static_axes=token_static_axes(settings),
        data_bytes=None if dataset_shape is None else (lambda config: dataset_bytes(*dataset_shape(config.task))),
        losses=CLASSIFICATION_LOSSES,
        model_contract=TOKEN_CONTRACT,
    )


__all__ = ["Dataset", "minibatch", "token_domain"]
