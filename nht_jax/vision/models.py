"""Image models with their settings: SimpleCNN, ResNet(18) with its normalisation, or an MLP on the pixels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import flax.linen as nn
import jax

from nht_jax.base.errors import check
from nht_jax.vision.cnn import SimpleCNN
from nht_jax.vision.mlp import ImageMLP
from nht_jax.vision.resnet import ResNet

ConvImpl = Literal["auto", "lax", "patches"]


def resolve_conv_impl(impl: str, backend: str | None = None) -> str:
    """ "auto" → "patches" on CPU (fast inside scans there), "lax" on accelerators; others unchanged."""
    if impl != "auto":
        return impl
    return "patches" if (backend or jax.default_backend()) == "cpu" else "lax"


@dataclass(frozen=True)
class SimpleCNNSettings:
    """[model] name = "simple_cnn": the paper's 6-layer CNN without normalisation (`nht_jax.vision.cnn`).

    `precision` of matmuls and convolutions on accelerators ("highest" = true float32). `conv_impl`:
    "lax" (XLA convolutions), "patches" (im2col + one matmul, the same maths; XLA:CPU runs convolutions
    inside loops ~10× slower, see nht_jax.vision.patch_conv), or "auto" = "patches" on CPU, "lax" elsewhere.
    """

    name: Literal["simple_cnn"] = "simple_cnn"
    precision: Literal["default", "high", "highest"] = "highest"
    conv_impl: ConvImpl = "auto"
    first_layer = "conv1"  # top-level parameter name of the first layer (denominator of head_to_first_ratio)

    def validate(self, image_size: int) -> None:
        check(
            image_size % 8 == 0,
            f"simple_cnn pools three times by 2, so the image side must be a multiple of 8; "
            f"got {image_size} (set task.image_size)",
        )

    def build(self, num_classes: int) -> nn.Module:
        return SimpleCNN(num_classes, conv_impl=resolve_conv_impl(self.conv_impl))


@dataclass(frozen=True)
class ResNetSettings:
    """[model] name = "resnet18": ResNet for 32×32 inputs (`nht_jax.vision.resnet`) with `norm` = "batch" |
    "group" | "none", `resnet_width` channels in the first stage (64 standard) and `resnet_stages`
    BasicBlocks per stage ((2, 2, 2, 2) = ResNet18; smaller for tests). `precision`, `conv_impl` as simple_cnn."""

    name: Literal["resnet18"] = "resnet18"
    norm: Literal["batch", "group", "none"] = "batch"
    resnet_width: int = 64
    resnet_stages: tuple[int, ...] = (2, 2, 2, 2)
    precision: Literal["default", "high", "highest"] = "highest"
    conv_impl: ConvImpl = "auto"
    first_layer = "stem_conv"

    def validate(self, image_size: int) -> None:
        check(
            self.resnet_width >= 1 and len(self.resnet_stages) >= 1 and all(b >= 1 for b in self.resnet_stages),
            f"model.resnet_width must be ≥ 1 and model.resnet_stages a non-empty list of positive block counts, "
            f"got {self.resnet_width}, {list(self.resnet_stages)}",
        )

    def build(self, num_classes: int) -> nn.Module:
        return ResNet(
            num_classes=num_classes,
            norm=self.norm,
            width=self.resnet_width,
            stage_sizes=tuple(self.resnet_stages),
            conv_impl=resolve_conv_impl(self.conv_impl),
        )


@dataclass(frozen=True)
class ImageMLPSettings:
    """[model] name = "mlp": `nht_jax.vision.mlp.ImageMLP`, hidden widths `hidden` (layers hidden_0 … and head)."""

    name: Literal["mlp"] = "mlp"
    hidden: tuple[int, ...] = (256, 256)
    first_layer = "hidden_0"  # the denominator of head_to_first_ratio

    def validate(self, image_size: int) -> None:
        check(
            len(self.hidden) >= 1 and all(h >= 1 for h in self.hidden),
            f"model.hidden must be a non-empty list of positive widths, got {list(self.hidden)}",
        )

    def build(self, num_classes: int) -> nn.Module:
        return ImageMLP(num_classes, tuple(self.hidden))


IMAGE_MODELS = {"simple_cnn": SimpleCNNSettings, "resnet18": ResNetSettings, "mlp": ImageMLPSettings}
"""model.name → settings class, for image domains."""

__all__ = []
