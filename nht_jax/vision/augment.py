"""Optional training augmentation: random crop after zero padding, and random horizontal flip.

For a batch x of shape (N, H, W, C) and padding p: each image is zero-padded by p pixels on every
side, then an H × W window at offset (dy, dx) ~ U{0, …, 2p}² is cut out (p = 4: the usual CIFAR
crop), and with probability ½ the result is mirrored left–right. Each image draws its own offsets
and flip from `key`. Pure and jit/vmap-safe; the input is not modified.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def random_crop_flip(images, key, pad: int = 4):
    """(N, H, W, C) → (N, H, W, C): per-image random crop of the p-padded image, then random flip."""
    n, height, breadth, channels = images.shape
    padded = jnp.pad(images, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    y_key, x_key, flip_key = jax.random.split(key, 3)
    dy = jax.random.randint(y_key, (n,), 0, 2 * pad + 1)
    dx = jax.random.randint(x_key, (n,), 0, 2 * pad + 1)
    crop = jax.vmap(lambda image, a, b: jax.lax.dynamic_slice(image, (a, b, 0), (height, breadth, channels)))(
        padded, dy, dx
    )
    flip = jax.random.bernoulli(flip_key, 0.5, (n,))
    return jnp.where(flip[:, None, None, None], crop[:, :, ::-1], crop)


__all__ = []
