"""The four evaluation sets of the spurious-border task (docs/science.md §4, CIFAR-10 with borders).

Each builder returns an EvalSet(images, labels, border_classes):
  coloured     the test images under the training distribution at ρ (same colour law as training);
               accuracy on it is what a model trained at ρ is expected to score.
  clean        the test images without any border (border_classes = NO_BORDER); accuracy measures
               the structured (shape) solution.
  shortcut     one uniform mid-gray image per (class, copy) with that class's border and nothing
               else; labels = border classes. Shortcut reliance = fraction predicted as the border's
               class (`group_metrics.shortcut_reliance`); chance is 1/K.
  conflicting  the test images with the border of a class other than the label (uniform over the
               K − 1 others, i.e. the colour law at ρ = 0); accuracy on the labels measures
               robustness, agreement with border_classes measures reliance.
All are pure functions of their inputs; nothing stored is modified.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from nht_jax.vision.border import NO_BORDER, paint_border, spurious_border
from nht_jax.vision.palette import GRAY


class EvalSet(NamedTuple):
    """images (N, H, W, 3); labels (N,) int32 true classes; border_classes (N,) int32 (NO_BORDER = none)."""

    images: jnp.ndarray
    labels: jnp.ndarray
    border_classes: jnp.ndarray


def coloured_eval(
    images, labels, rho, key, *, width: int = 2, num_classes: int = 10, palette=None, otherwise="other_class"
) -> EvalSet:
    """Test images bordered exactly as in training at correlation ρ (ρ may be traced)."""
    painted, border = spurious_border(
        images, labels, rho, key, width=width, num_classes=num_classes, palette=palette, otherwise=otherwise
    )
    return EvalSet(painted, jnp.asarray(labels, jnp.int32), border)


def clean_eval(images, labels) -> EvalSet:
    """Test images as stored, no border."""
    labels = jnp.asarray(labels, jnp.int32)
    return EvalSet(jnp.asarray(images), labels, jnp.full_like(labels, NO_BORDER))


def conflicting_eval(images, labels, key, *, width: int = 2, num_classes: int = 10, palette=None) -> EvalSet:
    """Test images whose border shows a class other than the label, uniform over the other classes."""
    painted, border = spurious_border(
        images, labels, 0.0, key, width=width, num_classes=num_classes, palette=palette, otherwise="other_class"
    )
    return EvalSet(painted, jnp.asarray(labels, jnp.int32), border)


def shortcut_eval(
    image_shape, *, copies: int = 1, width: int = 2, num_classes: int = 10, palette=None, dtype=jnp.float32
) -> EvalSet:
    """Uniform gray images (value GRAY = 0.5, or 128 for uint8) with one class's border each.

    image_shape: (H, W, 3). Returns num_classes · copies images ordered class-major
    (0, …, 0, 1, …); labels = border_classes = the border's class.
    """
    height, breadth, channels = image_shape
    classes = jnp.repeat(jnp.arange(num_classes, dtype=jnp.int32), copies)
    gray = 128 if jnp.issubdtype(dtype, jnp.integer) else GRAY
    blank = jnp.full((classes.shape[0], height, breadth, channels), gray, dtype)
    painted = paint_border(blank, classes, width=width, num_classes=num_classes, palette=palette)
    return EvalSet(painted, classes, classes)
