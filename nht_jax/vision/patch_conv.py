"""Convolution and max-pooling written as slices and one matrix product ("patches"), for CPU loops.

On XLA:CPU a convolution inside a `lax.scan` runs many times slower than outside a loop, and the training engine runs
every step inside a scan; so on CPU the image models compute each convolution by stacking the shifted slices of
the padded input (im2col) and multiplying once. `patch_conv` has `lax.conv_general_dilated`'s signature (it plugs
into `flax.linen.Conv(conv_general_dilated=patch_conv)`); `max_pool_2x2` is 2×2 max-pooling with stride 2 by a
reshape. Both agree with XLA's own to float rounding.

The measurements, the formula, what is supported and how ties differ: docs/methods/images.md, "Convolutions as
patches on CPU"."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax


def patch_conv(
    lhs,
    rhs,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    feature_group_count=1,
    precision=None,
    preferred_element_type=None,
):
    """`lax.conv_general_dilated` for NHWC × HWIO as im2col + one dot (module docstring)."""
    if any(d not in (None, 1) for d in tuple(lhs_dilation or ()) + tuple(rhs_dilation or ())):
        raise ValueError("patch_conv supports no dilation")
    if feature_group_count != 1:
        raise ValueError("patch_conv supports feature_group_count = 1 only")
    if lhs.ndim != 4 or rhs.ndim != 4:
        raise ValueError(f"patch_conv expects NHWC inputs and HWIO kernels, got {lhs.shape} and {rhs.shape}")
    kh, kw, c_in, c_out = rhs.shape
    sh, sw = window_strides
    if isinstance(padding, str):
        padding = lax.padtype_to_pads(lhs.shape[1:3], (kh, kw), (sh, sw), padding)
    (top, bottom), (left, right) = padding
    x = jnp.pad(lhs, ((0, 0), (top, bottom), (left, right), (0, 0)))
    out_h = (x.shape[1] - kh) // sh + 1
    out_w = (x.shape[2] - kw) // sw + 1
    slices = [
        x[:, i : i + (out_h - 1) * sh + 1 : sh, j : j + (out_w - 1) * sw + 1 : sw, :]
        for i in range(kh)
        for j in range(kw)
    ]
    patches = slices[0] if len(slices) == 1 else jnp.concatenate(slices, axis=-1)
    return jnp.einsum(
        "nhwk,ko->nhwo",
        patches,
        rhs.reshape(kh * kw * c_in, c_out),
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def max_pool_2x2(x):
    """(N, H, W, C) → (N, ⌊H/2⌋, ⌊W/2⌋, C), the max over each 2×2 block."""
    n, height, breadth, channels = x.shape
    h, w = height // 2, breadth // 2
    return x[:, : 2 * h, : 2 * w].reshape(n, h, 2, w, 2, channels).max(axis=(2, 4))


__all__ = []
