"""Group-robustness metrics (pure JAX; jit/vmap-safe; NumPy inputs work too).

Notation: n examples with predictions ŷ_i (argmax of the logits), labels y_i and group ids
g_i ∈ {0, …, G − 1}. For a binary target and a binary spurious attribute a the group id is
g = 2·y + a (`group_ids`), so group order is (y=0,a=0), (y=0,a=1), (y=1,a=0), (y=1,a=1).

  per-group accuracy   acc_g = Σ_{i: g_i=g} 1[ŷ_i = y_i] / n_g     (NaN when n_g = 0)
  worst-group          min_g acc_g over groups with n_g > 0
  average              Σ_i 1[ŷ_i = y_i] / n                        (plain mean over examples)
  weighted average     Σ_g w_g acc_g / Σ_g w_g over groups with n_g > 0; with w the train-set
                       group counts this is the "average accuracy" of the spurious-correlation
                       literature (Waterbirds: WATERBIRDS_TRAIN_GROUP_COUNTS)
  shortcut reliance    Σ_{i: b_i ≥ 0} 1[ŷ_i = b_i] / #{i: b_i ≥ 0}, b_i the border class
                       (−1 = no border, ignored)
"""

from __future__ import annotations

import jax.numpy as jnp

WATERBIRDS_TRAIN_GROUP_COUNTS = (3498, 184, 56, 1057)
"""Waterbirds training examples per group g = 2·y + place: (landbird, land), (landbird, water),
(waterbird, land), (waterbird, water) (Sagawa et al., 2020)."""


def predictions(logits):
    """ŷ = argmax over the last axis, int32."""
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)


def group_ids(labels, attributes, num_attribute_values: int = 2):
    """g = y · A + a (A = number of attribute values)."""
    return jnp.asarray(labels, jnp.int32) * num_attribute_values + jnp.asarray(attributes, jnp.int32)


def group_counts(groups, num_groups: int):
    """(G,) float32 number of examples in each group."""
    return jnp.zeros(num_groups, jnp.float32).at[jnp.asarray(groups, jnp.int32)].add(1.0)


def per_group_accuracy(preds, labels, groups, num_groups: int):
    """(G,) float32 accuracy within each group; NaN for an empty group."""
    correct = (jnp.asarray(preds) == jnp.asarray(labels)).astype(jnp.float32)
    hits = jnp.zeros(num_groups, jnp.float32).at[jnp.asarray(groups, jnp.int32)].add(correct)
    counts = group_counts(groups, num_groups)
    return jnp.where(counts > 0, hits / jnp.maximum(counts, 1.0), jnp.nan)


def worst_group_accuracy(preds, labels, groups, num_groups: int):
    """min over non-empty groups of the group accuracy."""
    return jnp.nanmin(per_group_accuracy(preds, labels, groups, num_groups))


def average_accuracy(preds, labels):
    """Plain accuracy over all examples."""
    return jnp.mean((jnp.asarray(preds) == jnp.asarray(labels)).astype(jnp.float32))


def weighted_group_accuracy(group_accuracy, weights):
    """Σ_g w_g acc_g / Σ_g w_g over groups whose accuracy is defined (not NaN)."""
    group_accuracy = jnp.asarray(group_accuracy, jnp.float32)
    weights = jnp.asarray(weights, jnp.float32)
    defined = ~jnp.isnan(group_accuracy)
    w = jnp.where(defined, weights, 0.0)
    return jnp.sum(w * jnp.where(defined, group_accuracy, 0.0)) / jnp.sum(w)


def shortcut_reliance(preds, border_classes):
    """Fraction of bordered examples predicted as their border's class (NaN if none has a border)."""
    border_classes = jnp.asarray(border_classes, jnp.int32)
    bordered = (border_classes >= 0).astype(jnp.float32)
    follows = (jnp.asarray(preds) == border_classes).astype(jnp.float32) * bordered
    n = jnp.sum(bordered)
    return jnp.where(n > 0, jnp.sum(follows) / jnp.maximum(n, 1.0), jnp.nan)
