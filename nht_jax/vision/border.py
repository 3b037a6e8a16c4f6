"""The spurious border: a frame painted around each image in a colour correlated with its label.

The border region is the frame of width w around the image; at correlation ρ each example independently shows its
own class colour with probability ρ, otherwise (`otherwise`) another class's colour ("other_class", the default) or
no border ("none"). Everything here is functional: the input arrays are never modified, and ρ may be a traced
scalar (vmap over a grid of ρ with the images shared); shapes, the width, the palette and `otherwise` are static.
A traced ρ cannot be checked inside the trace, so the caller validates the grid values beforehand (`validate_rho`).

The frame, the colour law and why "other_class" is the default: docs/methods/images.md, "The border and the
evaluation sets"."""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.vision.palette import class_palette

NO_BORDER = -1
"""Border class of an image that carries no border."""

Otherwise = Literal["other_class", "none"]


def validate_rho(rho) -> None:
    """Raise ConfigError unless every value of a concrete ρ (scalar or array) lies in [0, 1]; tracers pass."""
    if isinstance(rho, jax.core.Tracer):
        return
    values = np.asarray(rho, dtype=np.float64)
    if not np.all((values >= 0.0) & (values <= 1.0)):  # NaN fails too
        raise ConfigError(f"border correlation rho must lie in [0, 1]; got {values.tolist()}")


def validate_width(width: int, height: int, breadth: int) -> None:
    """Raise ConfigError unless 1 ≤ width < min(H, W) / 2 (the frame must leave an interior)."""
    if not isinstance(width, (int, np.integer)) or isinstance(width, bool):
        raise ConfigError(f"border width must be an integer number of pixels; got {width!r}")
    side = min(height, breadth)
    if width < 1 or 2 * width >= side:
        raise ConfigError(
            f"border width must satisfy 1 <= width < min(H, W) / 2 = {side / 2:g} for {height}x{breadth} images; "
            f"got {width}"
        )


def border_mask(height: int, breadth: int, width: int) -> np.ndarray:
    """Boolean (H, W) mask of the frame of the given width (static, NumPy)."""
    validate_width(width, height, breadth)
    i = np.arange(height)[:, None]
    j = np.arange(breadth)[None, :]
    return np.minimum(np.minimum(i, height - 1 - i), np.minimum(j, breadth - 1 - j)) < width


def paint_border(images, border_classes, *, width: int = 2, num_classes: int = 10, palette=None):
    """Return a copy of `images` (N, H, W, 3) with a frame in colour palette[border_classes[n]].

    border_classes: (N,) int; NO_BORDER (−1) leaves that image unpainted. Float images get the
    palette's [0, 1] values, integer (uint8) images round(255 · colour). The output has the input's dtype.
    """
    images = jnp.asarray(images)
    _, height, breadth, channels = images.shape
    colours = class_palette(num_classes, palette)
    if channels != colours.shape[1]:
        raise ConfigError(f"images must be RGB (last axis 3) to carry a coloured border; got {channels} channels")
    if jnp.issubdtype(images.dtype, jnp.integer):
        colours = np.round(255.0 * colours)
    colours = jnp.asarray(colours, images.dtype)
    mask = jnp.asarray(border_mask(height, breadth, width))
    border_classes = jnp.asarray(border_classes, jnp.int32)
    has_border = border_classes >= 0
    fill = colours[jnp.clip(border_classes, 0, num_classes - 1)]  # (N, 3)
    where = mask[None, :, :, None] & has_border[:, None, None, None]
    return jnp.where(where, fill[:, None, None, :], images)


def sample_border_classes(labels, rho, key, *, num_classes: int, otherwise: Otherwise = "other_class"):
    """(N,) int32 border class per example under the colour law at correlation ρ (module docstring).

    u ~ U[0, 1) decides agreement (u < ρ); a disagreeing example gets label + 1 + r mod K with
    r ~ U{0, …, K − 2} (uniform over the other classes) or NO_BORDER.
    """
    validate_rho(rho)
    if otherwise not in ("other_class", "none"):
        raise ConfigError(f"otherwise must be 'other_class' or 'none'; got {otherwise!r}")
    labels = jnp.asarray(labels, jnp.int32)
    agree_key, other_key = jax.random.split(key)
    agree = jax.random.uniform(agree_key, labels.shape) < rho
    if otherwise == "none":
        other = jnp.full_like(labels, NO_BORDER)
    else:
        offset = jax.random.randint(other_key, labels.shape, 1, num_classes)
        other = (labels + offset) % num_classes
    return jnp.where(agree, labels, other)


def spurious_border(
    images,
    labels,
    rho,
    key,
    *,
    width: int = 2,
    num_classes: int = 10,
    palette=None,
    otherwise: Otherwise = "other_class",
):
    """Paint the spurious border at correlation ρ. Returns (bordered images, border classes).

    images (N, H, W, 3) float in [0, 1] or uint8; labels (N,) int; ρ a scalar (may be traced);
    key a PRNG key. The stored arrays are not touched; the result is a new array.
    """
    border_classes = sample_border_classes(labels, rho, key, num_classes=num_classes, otherwise=otherwise)
    painted = paint_border(images, border_classes, width=width, num_classes=num_classes, palette=palette)
    return painted, border_classes
