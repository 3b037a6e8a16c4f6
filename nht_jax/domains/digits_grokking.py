"""Domain "digits_grokking": grokking on real images offline through a large initialisation (Omnigrok-style,
Liu, Michaud & Tegmark 2022), on scikit-learn's 8×8 digits. Written as the worked example of adding a domain:
this file and one preset (nht_jax/presets/digits-grokking.toml), and nothing else.

A fixed stratified split of the 1,797 digits, an MLP with PyTorch's default initialisation scaled by the grid's
`init_scale` α, full-batch cross-entropy (or `train.loss`), and the optional `temperature` axis: with α ≫ 1 the
network memorises early and generalises only once weight decay has shrunk the weights.

The data, the model, the loss and why: docs/methods/index.md, "Tasks"; what it measured:
docs/findings/digits-grokking.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from nht_jax.base.errors import check
from nht_jax.base.optional import require
from nht_jax.domains import Domain, ModelContract
from nht_jax.engine.grid import StaticAxis
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
from nht_jax.engine.metrics import parameter_metrics
from nht_jax.engine.step import make_updater
from nht_jax.models.activations import ACTIVATIONS, Activation


@dataclass(frozen=True)
class DigitsGrokkingSettings:
    """[task] name = "digits_grokking": `train_size` training images (stratified), the rest for test;
    `split_seed` fixes the split (the same for every run of the grid)."""

    name: Literal["digits_grokking"] = "digits_grokking"
    train_size: int = 300
    split_seed: int = 0


def symmetric_uniform(bound: float):
    """The initializer U(−bound, bound)."""
    return lambda key, shape, dtype=jnp.float32: jax.random.uniform(key, shape, dtype, -bound, bound)


class DigitsMLP(nn.Module):
    """x ↦ head(act(… act(hidden_0(x)) …)), every layer U(±1/√fan_in) as in PyTorch's nn.Linear."""

    hidden: tuple[int, ...]
    activation: str
    num_classes: int = 10

    @nn.compact
    def __call__(self, x):
        for i, width in enumerate((*self.hidden, self.num_classes)):
            init = symmetric_uniform(x.shape[-1] ** -0.5)
            x = nn.Dense(
                width,
                kernel_init=init,
                bias_init=init,
                precision="highest",
                name="head" if i == len(self.hidden) else f"hidden_{i}",
            )(x)
            if i < len(self.hidden):
                x = ACTIVATIONS[self.activation](x)
        return x


@dataclass(frozen=True)
class DigitsMLPSettings:
    """[model] name = "mlp": the hidden widths and activation of `DigitsMLP` (layers hidden_0 … and head)."""

    name: Literal["mlp"] = "mlp"
    hidden: tuple[int, ...] = (100, 100)
    activation: Activation = "relu"

    def validate(self, *_) -> None:
        check(all(h > 0 for h in self.hidden), f"model.hidden widths must be positive, got {list(self.hidden)}")

    def build(self, num_classes: int) -> nn.Module:
        return DigitsMLP(tuple(self.hidden), self.activation, num_classes)


class DigitsData(NamedTuple):
    train_x: np.ndarray  # (n_train, 64) float32 in [0, 1]
    train_y: np.ndarray  # (n_train,) int32
    test_x: np.ndarray
    test_y: np.ndarray


def load_data(config) -> DigitsData:
    """The fixed split of scikit-learn's digits (shipped inside its wheel, no download)."""
    digits = require(
        "sklearn.datasets", "the digits_grokking domain (scikit-learn ships the digits)", "data"
    ).load_digits()
    train_test_split = require("sklearn.model_selection", "the digits_grokking domain", "data").train_test_split
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    train_x, test_x, train_y, test_y = train_test_split(
        x, y, train_size=config.task.train_size, stratify=y, random_state=config.task.split_seed
    )
    return DigitsData(train_x, train_y, test_x, test_y)


class State(NamedTuple):
    params: Any
    opt_state: Any


def make_trainer(config, data: DigitsData):
    """Full-batch training on the training images with the chosen loss (cross-entropy by default) of the logits
    the loss sees (z/τ under a temperature); metrics on both splits at every log."""
    model = config.model.build(10)
    updater = make_updater(config.optim, config.train)
    loss = loss_function(config.train.loss)
    train_x, train_y = jnp.asarray(data.train_x), jnp.asarray(data.train_y)
    test_x, test_y = jnp.asarray(data.test_x), jnp.asarray(data.test_y)
    ones_train, ones_test = jnp.ones(train_y.shape[0]), jnp.ones(test_y.shape[0])

    def init(hparams: dict, key=None) -> State:
        key = run_key(hparams) if key is None else key
        params = model.init(key, train_x[:1])["params"]
        params = jax.tree.map(lambda p: p * hparams["init_scale"], params)
        return State(params, updater.init(hparams, params))

    def train_loss(params, hparams):
        return loss(tempered(model.apply({"params": params}, train_x), hparams), train_y, ones_train)[0]

    def step(state: State, hparams: dict) -> State:
        grads = jax.grad(train_loss)(state.params, hparams)
        return State(*updater.apply(hparams, state.params, state.opt_state, grads))

    def evaluate(state: State, hparams: dict) -> dict:
        train_logits = model.apply({"params": state.params}, train_x)
        test_logits = model.apply({"params": state.params}, test_x)
        train_loss_value, train_acc = loss(tempered(train_logits, hparams), train_y, ones_train)
        test_loss, test_acc = loss(tempered(test_logits, hparams), test_y, ones_test)
        metrics = {
            "train_loss": train_loss_value,
            "train_acc": train_acc,
            "test_loss": test_loss,
            "test_acc": test_acc,
            **parameter_metrics(state.params, train_loss_value, config.train.divergence_norm),
        }
        if has_temperature(hparams):  # over every image, both splits
            every = jnp.concatenate([train_logits, test_logits])
            metrics["effective_logit_scale"] = effective_logit_scale(every, hparams, jnp.ones(every.shape[0]))
        return metrics

    return assemble_trainer(init, step, evaluate, config.train.log_every, config.train.steps, config.train.log_schedule)


def validate(config) -> None:
    check(
        10 <= config.task.train_size <= 1787,
        f"task.train_size must lie in [10, 1787] (at least one image per class, and a test set), "
        f"got {config.task.train_size}",
    )
    config.model.validate()
    check(config.train.batch_size == 0, "digits_grokking trains full batch: leave train.batch_size = 0")
    check(not config.train.record_grad_noise, "train.record_grad_noise is not available for digits_grokking")


DIGITS_CONTRACT = ModelContract(
    arguments=("num_classes",),
    inputs="images: float32 (batch, 64), the 8×8 digits flattened, in [0, 1]; called as "
    "module.apply({'params': p}, images)",
    outputs="logits: float (batch, num_classes); all its variables in 'params' (the grid's init_scale multiplies "
    "them); the last layer named 'head' for the head metrics",
)
"""What the digits-grokking trainer asks of a model from outside the package (docs/guides/plugins.md)."""


DOMAIN = Domain(
    name="digits_grokking",
    settings=DigitsGrokkingSettings,
    models={"mlp": DigitsMLPSettings},
    default_model="mlp",
    axes={TEMPERATURE.name: TEMPERATURE},
    metrics=dict(TEMPERATURE_METRICS),
    headline_metric="test_acc",
    validate=validate,
    load_data=load_data,
    make_trainer=make_trainer,
    recorded=lambda config: frozenset(
        {"train_loss", "train_acc", "test_loss", "test_acc", *temperature_metrics(config.grid)}
    ),
    summary=lambda config: ("test_acc", "test_loss") + temperature_metrics(config.grid),
    losses=CLASSIFICATION_LOSSES,
    model_contract=DIGITS_CONTRACT,
    static_axes={
        "width": StaticAxis(
            "model",
            "hidden",
            "MLP width",
            lambda value, hidden: tuple(int(value) for _ in hidden) or (int(value),),
            log=True,
        )
    },  # grid.width: every hidden layer at that width, one bucket each
)
