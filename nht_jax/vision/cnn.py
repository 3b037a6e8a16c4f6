"""SimpleCNN: the paper's 6-layer CNN without normalisation (docs/science.md §4), about 288K parameters.

Top-level modules conv1–conv4 (3×3, SAME, max-pooling after the first three), dense and head; ReLU after every layer
but the head; Flax's default initialisation. The paper gives only "6 layers, no normalisation, about 288K
parameters"; these widths are ours. `conv_impl = "patches"` computes the same network with `patch_conv` /
`max_pool_2x2` (fast inside loops on CPU; nht_jax.vision.patch_conv); parameters are identical.

The widths, the parameter count at each input size and the cost: docs/methods/images.md, "Models"."""

from __future__ import annotations

import math

import flax.linen as nn
import jax

from nht_jax.base.errors import ConfigError
from nht_jax.vision.patch_conv import max_pool_2x2, patch_conv

CONV_WIDTHS = (32, 48, 96, 96)
CONV_IMPLS = ("lax", "patches")


def conv_function(impl: str):
    """The convolution primitive for nn.Conv: None (lax.conv_general_dilated) or `patch_conv`."""
    if impl not in CONV_IMPLS:
        raise ConfigError(f"conv_impl must be one of {CONV_IMPLS}; got {impl!r}")
    return patch_conv if impl == "patches" else None


DENSE_WIDTH = 96


class SimpleCNN(nn.Module):
    """logits = head(relu(dense(flatten(relu(conv4(pool(relu(conv3(…)))))))))."""

    num_classes: int = 10
    conv_widths: tuple[int, ...] = CONV_WIDTHS
    dense_width: int = DENSE_WIDTH
    conv_impl: str = "lax"  # "lax": lax.conv + nn.max_pool; "patches": im2col + reshape pooling (patch_conv.py)

    @nn.compact
    def __call__(self, x, train: bool = False):
        """x: (N, H, W, C) float images (H, W divisible by 8). `train` is accepted for a uniform
        model interface; this network has no train/eval difference."""
        del train
        for i, width in enumerate(self.conv_widths):
            x = nn.relu(
                nn.Conv(
                    width,
                    (3, 3),
                    padding="SAME",
                    name=f"conv{i + 1}",
                    conv_general_dilated=conv_function(self.conv_impl),
                )(x)
            )
            if i < len(self.conv_widths) - 1:
                x = max_pool_2x2(x) if self.conv_impl == "patches" else nn.max_pool(x, (2, 2), strides=(2, 2))
        x = x.reshape(x.shape[0], -1)
        x = nn.relu(nn.Dense(self.dense_width, name="dense")(x))
        return nn.Dense(self.num_classes, name="head")(x)


def simple_cnn_param_count(
    height: int,
    breadth: int,
    channels: int = 3,
    num_classes: int = 10,
    conv_widths: tuple[int, ...] = CONV_WIDTHS,
    dense_width: int = DENSE_WIDTH,
) -> int:
    """Closed-form parameter count of SimpleCNN (see the module docstring)."""
    total, c_in = 0, channels
    for width in conv_widths:
        total += 9 * c_in * width + width
        c_in = width
    pools = 2 ** (len(conv_widths) - 1)
    flat = (height // pools) * (breadth // pools) * c_in
    return total + (flat + 1) * dense_width + (dense_width + 1) * num_classes


def count_params(params) -> int:
    """Number of scalars in a parameter pytree (arrays or jax.ShapeDtypeStruct leaves)."""
    return int(sum(math.prod(x.shape) for x in jax.tree.leaves(params)))
