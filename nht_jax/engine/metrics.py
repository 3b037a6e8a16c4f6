"""Per-run metrics every domain shares: losses, accuracies and parameter norms (squared L2 norms throughout).

`VOCABULARY` states once what each shared metric name means; a domain declares its own names the same way
(`Domain.metrics`), and no name means two things (tests/engine/test_metrics.py checks every domain).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax


VOCABULARY = {
    "train_loss": "the training objective without the weight-decay penalty, on the run's training examples "
    "(the mean of the loss train.loss chooses, cross-entropy by default, for the classification "
    "domains; the toy domains state theirs)",
    "train_acc": "accuracy on the run's training examples (as the domain defines them)",
    "test_loss": "the same loss (mean cross-entropy by default) on the run's held-out examples (every example "
    "outside its training split)",
    "test_acc": "accuracy on the run's held-out examples",
    "norm_sq": "‖θ‖², the squared L2 norm of every parameter",
    "weight_norm_sq": "squared L2 norm of the parameters with ≥ 2 dimensions (kernels, embeddings)",
    "head_norm_sq": "squared L2 norm of the layer named 'head' (NaN when the model has none)",
    "layer_norm_sq/<layer>": "squared L2 norm of one top-level layer (all of its parameters)",
    "finite": "1 while the training loss and ‖θ‖² are finite and ‖θ‖² < train.divergence_norm, else 0",
}
"""Shared metric name → its one meaning."""


def sq_norm(tree) -> jnp.ndarray:
    """V = Σ θ² over every leaf of a pytree."""
    return sum((jnp.sum(jnp.square(x)) for x in jax.tree.leaves(tree)), jnp.zeros((), jnp.float32))


def weight_sq_norm(params) -> jnp.ndarray:
    """Σ θ² over parameters with ≥ 2 dimensions (kernels and embeddings; no biases or norm scales)."""
    return sum((jnp.sum(jnp.square(x)) for x in jax.tree.leaves(params) if x.ndim >= 2), jnp.zeros((), jnp.float32))


def layer_sq_norms(params) -> dict[str, jnp.ndarray]:
    """Squared norm of each top-level layer of a Flax params dict (all of its parameters, weights and biases)."""
    return {name: sq_norm(sub) for name, sub in params.items()}


def masked_mean(values, weights):
    return jnp.sum(values * weights) / jnp.maximum(jnp.sum(weights), 1.0)


def loss_and_accuracy(logits, labels, weights):
    """Mean cross-entropy and accuracy over examples with weight 1 (weights 0/1 select a split)."""
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, labels)
    correct = (jnp.argmax(logits, axis=-1) == labels).astype(jnp.float32)
    return masked_mean(ce, weights), masked_mean(correct, weights)


def logit_scale(logits, weights):
    """Root-mean-square logit over the selected examples: sqrt(mean_i mean_c z_ic²)."""
    return jnp.sqrt(masked_mean(jnp.mean(jnp.square(logits), axis=-1), weights))


def parameter_metrics(params, train_loss, divergence_norm: float) -> dict:
    """The norm metrics every trainer records, and the divergence flag.

    norm_sq = ‖θ‖², weight_norm_sq (ndim ≥ 2 only), head_norm_sq (layer "head", NaN if absent),
    layer_norm_sq/<layer> per top-level layer, and finite = 1 while the training loss and ‖θ‖² are
    finite and ‖θ‖² < divergence_norm.
    """
    norm = sq_norm(params)
    layers = layer_sq_norms(params)
    metrics = {"norm_sq": norm, "weight_norm_sq": weight_sq_norm(params), "head_norm_sq": layers.get("head", jnp.nan)}
    metrics.update({f"layer_norm_sq/{name}": value for name, value in layers.items()})
    metrics["finite"] = divergence_flag(train_loss, norm, divergence_norm)
    return metrics


def divergence_flag(train_loss, norm, divergence_norm: float):
    """1.0 while the training loss and ‖θ‖² are finite and ‖θ‖² < divergence_norm, else 0.0 (the metric `finite`)."""
    return (jnp.isfinite(train_loss) & jnp.isfinite(norm) & (norm < divergence_norm)).astype(jnp.float32)
