"""Spurious border: colour law at ρ, colours, purity (stored data untouched), vmap over ρ, eval sets, errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.vision import (
    DEFAULT_PALETTE,
    GRAY,
    NO_BORDER,
    border_mask,
    clean_eval,
    coloured_eval,
    conflicting_eval,
    paint_border,
    sample_border_classes,
    shortcut_eval,
    spurious_border,
)

K = 10


def test_class_colour_fraction_matches_rho_and_others_are_uniform():
    n, rho = 40_000, 0.7
    labels = jnp.asarray(np.arange(n) % K, jnp.int32)
    # ρ is a Python float, checked when traced
    sample = jax.jit(lambda labels, key: sample_border_classes(labels, rho, key, num_classes=K))
    border = np.asarray(sample(labels, jax.random.PRNGKey(3)))
    labels = np.asarray(labels)
    agree = border == labels
    sigma = np.sqrt(rho * (1 - rho) / n)
    assert abs(agree.mean() - rho) < 4.5 * sigma
    # disagreeing borders: uniform over the K − 1 other classes (offset 1..K−1), never the label itself
    offsets = (border[~agree] - labels[~agree]) % K
    counts = np.bincount(offsets, minlength=K)
    assert counts[0] == 0
    expected = (~agree).sum() / (K - 1)
    assert np.all(np.abs(counts[1:] - expected) < 4.5 * np.sqrt(expected))


def test_otherwise_none_leaves_unbordered_images():
    n, rho = 20_000, 0.3
    labels = jnp.asarray(np.arange(n) % K, jnp.int32)
    sample = jax.jit(lambda labels, key: sample_border_classes(labels, rho, key, num_classes=K, otherwise="none"))
    border = np.asarray(sample(labels, jax.random.PRNGKey(0)))
    assert set(np.unique(border[border != np.asarray(labels)])) == {NO_BORDER}
    assert abs((border >= 0).mean() - rho) < 4.5 * np.sqrt(rho * (1 - rho) / n)


def test_colours_painted_only_on_frame_and_input_untouched():
    rng = np.random.default_rng(0)
    images = rng.uniform(0.2, 0.8, (6, 12, 12, 3)).astype(np.float32)
    stored = images.copy()
    labels = np.array([0, 1, 2, 3, 8, 9], np.int32)
    painted, border = jax.jit(lambda x, y, key: spurious_border(x, y, 0.5, key, width=2))(
        images, labels, jax.random.PRNGKey(1)
    )
    painted, border = np.asarray(painted), np.asarray(border)
    np.testing.assert_array_equal(images, stored)  # functional: the stored array is not modified
    mask = border_mask(12, 12, 2)
    assert mask.sum() == 12 * 12 - 8 * 8
    for n in range(6):
        np.testing.assert_array_equal(painted[n][mask], np.broadcast_to(DEFAULT_PALETTE[border[n]], (mask.sum(), 3)))
        np.testing.assert_array_equal(painted[n][~mask], images[n][~mask])


def test_uint8_images_and_no_border_rows():
    images = np.full((2, 8, 8, 3), 7, np.uint8)
    paint = jax.jit(lambda x, classes: paint_border(x, classes, width=1))
    painted = np.asarray(paint(images, np.array([6, NO_BORDER])))
    assert painted.dtype == np.uint8
    np.testing.assert_array_equal(painted[0, 0, 0], [255, 128, 0])  # orange = round(255 · (1, 0.5, 0))
    np.testing.assert_array_equal(painted[1], images[1])


def test_rho_vmaps_and_jits_as_a_traced_scalar():
    images = jnp.zeros((512, 8, 8, 3))
    labels = jnp.asarray(np.arange(512) % K, jnp.int32)
    key = jax.random.PRNGKey(7)

    @jax.jit
    def batch(rhos):
        return jax.vmap(lambda r: spurious_border(images, labels, r, key, width=1))(rhos)

    rhos = jnp.array([0.0, 0.5, 1.0])
    painted, border = jax.tree.map(np.asarray, batch(rhos))  # indexed on the host below
    assert painted.shape == (3, 512, 8, 8, 3)
    assert np.all(np.asarray(border[0]) != np.asarray(labels))
    assert np.all(np.asarray(border[2]) == np.asarray(labels))
    single_painted, single_border = spurious_border(images, labels, 0.5, key, width=1)
    np.testing.assert_array_equal(np.asarray(border[1]), np.asarray(single_border))
    np.testing.assert_array_equal(np.asarray(painted[1]), np.asarray(single_painted))


def test_eval_sets():
    images = np.full((20, 10, 10, 3), 0.25, np.float32)
    labels = np.arange(20, dtype=np.int32) % K
    key = jax.random.PRNGKey(0)
    clean = clean_eval(images, labels)
    np.testing.assert_array_equal(np.asarray(clean.images), images)
    assert np.all(np.asarray(clean.border_classes) == NO_BORDER)
    conflicting = jax.jit(conflicting_eval)(images, labels, key)
    assert np.all(np.asarray(conflicting.border_classes) != labels)
    np.testing.assert_array_equal(np.asarray(conflicting.labels), labels)
    coloured = jax.jit(lambda x, y, k: coloured_eval(x, y, 1.0, k))(images, labels, key)  # ρ checked when traced
    np.testing.assert_array_equal(np.asarray(coloured.border_classes), labels)
    shortcut = jax.jit(lambda: shortcut_eval((10, 10, 3), copies=2, width=2))()
    assert shortcut.images.shape == (20, 10, 10, 3)
    np.testing.assert_array_equal(np.asarray(shortcut.labels), np.repeat(np.arange(K), 2))
    interior = np.asarray(shortcut.images)[:, 2:-2, 2:-2]
    assert np.all(interior == GRAY)
    np.testing.assert_array_equal(np.asarray(shortcut.images)[:, 0, 0], np.repeat(DEFAULT_PALETTE, 2, axis=0))


@pytest.mark.parametrize("rho", [-0.1, 1.5, float("nan"), [0.5, 1.2]])
def test_rho_outside_unit_interval_is_rejected(rho):
    with pytest.raises(ConfigError, match="rho must lie in"):
        sample_border_classes(jnp.zeros(4, jnp.int32), rho, jax.random.PRNGKey(0), num_classes=K)


@pytest.mark.parametrize("width", [0, 4, 5, 2.5])
def test_bad_width_is_rejected(width):
    with pytest.raises(ConfigError, match="border width"):
        spurious_border(
            np.zeros((2, 8, 8, 3), np.float32), np.zeros(2, np.int32), 0.5, jax.random.PRNGKey(0), width=width
        )


def test_bad_palettes_and_channels_are_rejected():
    with pytest.raises(ConfigError, match="colours but the task has 12 classes"):
        paint_border(np.zeros((1, 8, 8, 3)), np.zeros(1, np.int32), num_classes=12)
    with pytest.raises(ConfigError, match="same colour"):
        paint_border(np.zeros((1, 8, 8, 3)), np.zeros(1, np.int32), num_classes=2, palette=[[1, 0, 0], [1, 0, 0]])
    with pytest.raises(ConfigError, match="RGB"):
        paint_border(np.zeros((1, 8, 8, 1)), np.zeros(1, np.int32))


def test_border_inside_scan_vmapped_over_rho():
    """Engine pattern: data shared, each step draws a minibatch and paints it with the run's ρ and key."""
    images = jnp.zeros((64, 8, 8, 3))
    labels = jnp.asarray(np.arange(64) % K, jnp.int32)

    def run(rho, key):
        def step(carry, step_key):
            pick_key, paint_key = jax.random.split(step_key)
            index = jax.random.choice(pick_key, 64, (32,), replace=False)
            _, border = spurious_border(images[index], labels[index], rho, paint_key, width=1)
            return carry + jnp.sum(border == labels[index]), None

        agree, _ = jax.lax.scan(step, jnp.zeros((), jnp.int32), jax.random.split(key, 50))
        return agree / (50 * 32)

    rhos = jnp.array([0.1, 0.9])
    fractions = np.asarray(jax.jit(jax.vmap(run))(rhos, jax.random.split(jax.random.PRNGKey(0), 2)))
    np.testing.assert_allclose(fractions, [0.1, 0.9], atol=4.5 * np.sqrt(0.09 / 1600))
