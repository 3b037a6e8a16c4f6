"""Group metrics on hand-made predictions."""

import jax
import jax.numpy as jnp
import numpy as np

from nht_jax.vision import (
    WATERBIRDS_TRAIN_GROUP_COUNTS,
    average_accuracy,
    group_ids,
    per_group_accuracy,
    predictions,
    shortcut_reliance,
    weighted_group_accuracy,
    worst_group_accuracy,
)

# the metrics as the trainers use them, compiled (num_groups static): eager, each primitive compiles on its own
per_group_accuracy = jax.jit(per_group_accuracy, static_argnames="num_groups")
worst_group_accuracy = jax.jit(worst_group_accuracy, static_argnames="num_groups")
average_accuracy, weighted_group_accuracy = jax.jit(average_accuracy), jax.jit(weighted_group_accuracy)


def hand_made():
    # groups (y, a): (0,0) ×4 all right; (0,1) ×2 one right; (1,0) ×2 none right; (1,1) ×2 all right
    labels = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1, 1])
    attrs = np.array([0, 0, 0, 0, 1, 1, 0, 0, 1, 1])
    preds = np.array([0, 0, 0, 0, 0, 1, 0, 0, 1, 1])
    return preds, labels, np.asarray(jax.jit(group_ids)(labels, attrs))


def test_per_group_worst_and_average():
    preds, labels, groups = hand_made()
    np.testing.assert_array_equal(groups, [0, 0, 0, 0, 1, 1, 2, 2, 3, 3])
    np.testing.assert_allclose(per_group_accuracy(preds, labels, groups, 4), [1.0, 0.5, 0.0, 1.0])
    assert float(worst_group_accuracy(preds, labels, groups, 4)) == 0.0
    np.testing.assert_allclose(average_accuracy(preds, labels), 7 / 10)


def test_waterbirds_weighted_average():
    preds, labels, groups = hand_made()
    acc = per_group_accuracy(preds, labels, groups, 4)
    expected = (3498 * 1.0 + 184 * 0.5 + 56 * 0.0 + 1057 * 1.0) / (3498 + 184 + 56 + 1057)
    np.testing.assert_allclose(weighted_group_accuracy(acc, WATERBIRDS_TRAIN_GROUP_COUNTS), expected, rtol=1e-6)
    np.testing.assert_allclose(expected, 0.969134, atol=1e-6)


def test_empty_group_is_nan_and_ignored():
    labels = np.array([0, 0, 1])
    groups = np.array([0, 0, 2])
    preds = np.array([0, 1, 1])
    acc = np.asarray(per_group_accuracy(preds, labels, groups, 4))
    assert np.isnan(acc[1]) and np.isnan(acc[3])
    assert float(worst_group_accuracy(preds, labels, groups, 4)) == 0.5
    np.testing.assert_allclose(weighted_group_accuracy(acc, [1, 1, 3, 1]), (0.5 + 3 * 1.0) / 4)


def test_shortcut_reliance_and_jit():
    logits = jnp.array([[0.0, 2.0, 1.0], [3.0, 0.0, 0.0], [0.0, 0.0, 5.0], [1.0, 0.0, 0.0]])
    preds = jax.jit(predictions)(logits)
    np.testing.assert_array_equal(preds, [1, 0, 2, 0])
    border = jnp.array([1, 2, 2, -1])  # last has no border: ignored
    np.testing.assert_allclose(jax.jit(shortcut_reliance)(preds, border), 2 / 3, rtol=1e-6)
    assert np.isnan(float(shortcut_reliance(preds, jnp.full(4, -1))))
    vmapped = jax.jit(jax.vmap(lambda p: worst_group_accuracy(p, jnp.array([0, 1]), jnp.array([0, 1]), 2)))(
        jnp.array([[0, 1], [0, 0]])
    )
    np.testing.assert_allclose(vmapped, [1.0, 0.0])
