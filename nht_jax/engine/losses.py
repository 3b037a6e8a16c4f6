"""Classification losses and the output temperature.

A loss is a pure function (logits (n, C), integer labels (n,), weights (n,)) → (loss, accuracy): the weighted mean of
a per-example loss, and the accuracy of the logits themselves under every loss. `cross_entropy`, `mse` (to the
one-hot target, averaged over the classes too) and `stablemax` (`stablemax_nll`); `train.loss` chooses one for a
domain that offers them (`Domain.losses`, `loss_function`). The output temperature τ (the optional grid axis
`temperature`, `TEMPERATURE`) divides the logits before the loss (`tempered`); `effective_logit_scale` is the RMS of
the logits the loss sees.

Each loss's formula, the reduction of "mse", StableMax and the temperature: docs/configuration/losses.md."""

from __future__ import annotations

from typing import Callable, Mapping

import jax
import jax.numpy as jnp

from nht_jax.base.errors import ConfigError
from nht_jax.engine.grid import Axis, number_check
from nht_jax.engine.metrics import logit_scale, loss_and_accuracy, masked_mean

Loss = Callable[[jnp.ndarray, jnp.ndarray, jnp.ndarray], tuple[jnp.ndarray, jnp.ndarray]]


def accuracy(logits, labels, weights):
    """Weighted share of examples whose largest logit is the label's: Σ_i w_i 1[argmax_c z_ic = y_i] / Σ_i w_i.

    Args:
        logits: z, shape (N, C).
        labels: y, class indices, shape (N,).
        weights: w, the examples' weights, shape (N,).

    Returns:
        The weighted accuracy, a scalar.
    """
    return masked_mean((jnp.argmax(logits, axis=-1) == labels).astype(jnp.float32), weights)


def cross_entropy(logits, labels, weights):
    """Softmax cross-entropy ℓ_i = log Σ_c e^{z_ic} − z_{i y_i} (optax), weighted mean, and the accuracy:
    `metrics.loss_and_accuracy` itself, so "cross_entropy" and the domains' default are the same numbers.

    Args:
        logits: z, shape (N, C).
        labels: y, class indices, shape (N,).
        weights: w, the examples' weights, shape (N,).

    Returns:
        (weighted mean loss, accuracy).
    """
    return loss_and_accuracy(logits, labels, weights)


def mse(logits, labels, weights):
    """Squared error to one-hot targets, ℓ_i = (1/C) Σ_c (z_ic − 1[c = y_i])², weighted mean over examples, and
    the accuracy. With all weights 1 this is PyTorch's F.mse_loss(logits, F.one_hot(labels, C).float()).

    Args:
        logits: z, shape (N, C).
        labels: y, class indices, shape (N,).
        weights: the examples' weights, shape (N,).

    Returns:
        (weighted mean loss, accuracy).
    """
    targets = jax.nn.one_hot(labels, logits.shape[-1], dtype=logits.dtype)
    per_example = jnp.mean(jnp.square(logits - targets), axis=-1)
    return masked_mean(per_example, weights), accuracy(logits, labels, weights)


def stablemax_s(x):
    """StableMax's replacement of exp: s(x) = x + 1 for x ≥ 0, 1/(1 − x) for x < 0.

    Continuous with a continuous derivative at 0 (s(0) = 1, s'(0⁻) = 1/(1 − x)² = 1 = s'(0⁺)), positive and
    increasing, linear rather than exponential for large x. The reciprocal branch is evaluated at min(x, 0), so
    neither branch divides by zero and the gradient stays finite everywhere (the unused branch of `where` is
    still differentiated)."""
    return jnp.where(x >= 0, x + 1.0, 1.0 / (1.0 - jnp.minimum(x, 0.0)))


def stablemax_nll(logits, labels):
    """Per-example StableMax cross-entropy ℓ_i = −log(s(z_{i y_i}) / Σ_c s(z_ic)), computed as
    ℓ_i = log1p(Σ_{c ≠ y_i} s(z_ic) / s(z_{i y_i})).

    The authors' code (utils.py of github.com/LucasPrietoAl/grokking-at-the-edge-of-numerical-stability, read
    in a public fork) computes log(s(z) / Σ s(z)) directly, after casting the logits to a configurable dtype
    (float32 by default, float64 on request), with s(x) = 1/(1 − x + 1e−30) for x < 0. Written that way in
    float32 the ratio rounds to 1 once the label's s dwarfs the others (Σ s = s_y in float32), and the loss is
    exactly 0 although it is not. The log1p form is the same quantity with the label's term left out of the sum
    rather than divided out, so it keeps full relative precision when ℓ_i is tiny, in float32, with no float64."""
    s = stablemax_s(logits)
    is_label = jax.nn.one_hot(labels, logits.shape[-1], dtype=bool)
    s_label = jnp.sum(jnp.where(is_label, s, 0.0), axis=-1)
    s_others = jnp.sum(jnp.where(is_label, 0.0, s), axis=-1)
    return jnp.log1p(s_others / s_label)


def stablemax(logits, labels, weights):
    """StableMax cross-entropy (`stablemax_nll`), weighted mean over examples, and the accuracy.

    Args:
        logits: z, shape (N, C).
        labels: y, class indices, shape (N,).
        weights: the examples' weights, shape (N,).

    Returns:
        (weighted mean loss, accuracy).
    """
    return masked_mean(stablemax_nll(logits, labels), weights), accuracy(logits, labels, weights)


LOSSES: Mapping[str, Loss] = {"cross_entropy": cross_entropy, "mse": mse, "stablemax": stablemax}
"""The classification losses by their `train.loss` name."""

CLASSIFICATION_LOSSES = tuple(LOSSES)
"""What a classification domain declares as `Domain.losses` (besides "default")."""


def loss_function(name: str) -> Loss:
    """The loss named by `train.loss`: "default" is cross-entropy (the classification domains' own loss)."""
    key = "cross_entropy" if name == "default" else name
    if key not in LOSSES:
        raise ConfigError(
            f"train.loss = {name!r} is not a classification loss; choose one of default, {', '.join(LOSSES)}"
        )
    return LOSSES[key]


TEMPERATURE = Axis(
    "temperature",
    (1.0,),
    "output temperature τ",
    log=True,
    check=number_check("temperature", lambda v: v > 0, "must be > 0 (the logits are divided by τ; τ = 1 is none)"),
    meaning="τ, the output temperature: the logits are divided by τ before the loss (not a parameter, not in ‖θ‖²)",
    optional=True,
    identity=1.0,
)
"""The optional grid axis `temperature` (in a grid only when [grid] lists it; identity τ = 1)."""

TEMPERATURE_METRICS = {
    "effective_logit_scale": "root-mean-square over every example and class of the logits the "
    "loss sees, z/τ (= logit_scale/τ; recorded when the grid lists "
    "temperature)"
}
"""The metric a grid over the temperature adds: name → meaning."""


def temperature_metrics(grid: Mapping) -> tuple[str, ...]:
    """The metrics a run records and summarises because its grid lists the temperature (else none)."""
    return tuple(TEMPERATURE_METRICS) if TEMPERATURE.name in grid else ()


def has_temperature(hparams: Mapping) -> bool:
    """Whether a run's values hold the temperature axis (the grid lists it)."""
    return TEMPERATURE.name in hparams


def tempered(logits, hparams: Mapping):
    """The logits the loss sees: z/τ when the run's values hold the temperature, else z itself (no division)."""
    return logits / hparams[TEMPERATURE.name] if has_temperature(hparams) else logits


def effective_logit_scale(logits, hparams: Mapping, weights):
    """RMS of the logits the loss sees over the selected examples and every class, sqrt(mean_i mean_c (z_ic/τ)²).

    Args:
        logits: z, shape (N, C).
        hparams: the run's values (τ = its temperature, when the grid lists it).
        weights: the examples' weights, shape (N,).

    Returns:
        The RMS, a scalar.
    """
    return logit_scale(tempered(logits, hparams), weights)


__all__ = ["accuracy", "cross_entropy", "effective_logit_scale", "mse", "stablemax"]
