"""ResNet18 for 32×32 inputs (the CIFAR variant of He et al., 2016) with a choice of normalisation.

A 3×3 stem, four stages of two BasicBlocks (widths w, 2w, 4w, 8w), global average pooling and a linear head; `norm`
is "batch" (BatchNorm: call `model.apply({"params": p, "batch_stats": s}, x, train=True, mutable=["batch_stats"])`
and thread the new statistics through the training state), "group" or "none". `ResNet(stage_sizes=…)` builds the
same network with other block counts (tests use one block per stage to compile quickly). Conv kernels are HWIO,
inputs NHWC.

The blocks, the norms and their constants, the layer names: docs/methods/images.md, "Models"."""

from __future__ import annotations

import math
from functools import partial
from typing import Literal

import flax.linen as nn

from nht_jax.base.errors import ConfigError
from nht_jax.vision.cnn import conv_function

Norm = Literal["batch", "group", "none"]
NORMS = ("batch", "group", "none")


def _norm_layer(norm: str, channels: int, train: bool, name: str):
    if norm == "batch":
        return nn.BatchNorm(use_running_average=not train, momentum=0.9, epsilon=1e-5, name=name)
    if norm == "group":
        return nn.GroupNorm(num_groups=math.gcd(32, channels), epsilon=1e-5, name=name)
    return lambda x: x


class BasicBlock(nn.Module):
    """Two 3×3 convolutions with a residual connection (projection when shape changes)."""

    width: int
    stride: int = 1
    norm: str = "batch"
    conv_impl: str = "lax"

    @nn.compact
    def __call__(self, x, train: bool = False):
        use_bias = self.norm == "none"
        conv = partial(nn.Conv, use_bias=use_bias, padding=1, conv_general_dilated=conv_function(self.conv_impl))
        y = conv(self.width, (3, 3), strides=self.stride, name="conv1")(x)
        y = nn.relu(_norm_layer(self.norm, self.width, train, "norm1")(y))
        y = conv(self.width, (3, 3), name="conv2")(y)
        y = _norm_layer(self.norm, self.width, train, "norm2")(y)
        if self.stride != 1 or x.shape[-1] != self.width:
            x = nn.Conv(
                self.width,
                (1, 1),
                strides=self.stride,
                use_bias=use_bias,
                name="shortcut_conv",
                conv_general_dilated=conv_function(self.conv_impl),
            )(x)
            x = _norm_layer(self.norm, self.width, train, "shortcut_norm")(x)
        return nn.relu(y + x)


class ResNet(nn.Module):
    """CIFAR-style ResNet with BasicBlocks; `stage_sizes` blocks per stage ((2, 2, 2, 2) = ResNet18),
    `width` = channels of the stem and first stage (64 in the standard network)."""

    num_classes: int = 10
    norm: Norm = "batch"
    width: int = 64
    stage_sizes: tuple[int, ...] = (2, 2, 2, 2)
    conv_impl: str = "lax"  # or "patches": im2col convolutions (nht_jax.vision.patch_conv), same parameters

    @nn.compact
    def __call__(self, x, train: bool = False):
        """x: (N, H, W, C) float images; train selects batch statistics (and updates running averages)."""
        if self.norm not in NORMS:
            raise ConfigError(f"ResNet18 norm must be one of {NORMS}; got {self.norm!r}")
        x = nn.Conv(
            self.width,
            (3, 3),
            padding=1,
            use_bias=self.norm == "none",
            name="stem_conv",
            conv_general_dilated=conv_function(self.conv_impl),
        )(x)
        x = nn.relu(_norm_layer(self.norm, self.width, train, "stem_norm")(x))
        for stage, blocks in enumerate(self.stage_sizes):
            for block in range(blocks):
                stride = 2 if stage > 0 and block == 0 else 1
                x = BasicBlock(
                    self.width * 2**stage, stride, self.norm, self.conv_impl, name=f"stage{stage + 1}_block{block + 1}"
                )(x, train)
        x = x.mean(axis=(1, 2))
        return nn.Dense(self.num_classes, name="head")(x)


def ResNet18(num_classes: int = 10, norm: Norm = "batch", width: int = 64) -> ResNet:  # noqa: N802 (a model name)
    """ResNet18: ResNet with two BasicBlocks in each of the four stages (11,173,962 parameters with
    batch or group norm, 11,169,162 without, at width 64 and 10 classes)."""
    return ResNet(num_classes=num_classes, norm=norm, width=width, stage_sizes=(2, 2, 2, 2))
