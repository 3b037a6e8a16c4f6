"""The image model of a `ModelConfig`: SimpleCNN or ResNet(18) with its normalisation."""

from __future__ import annotations

import flax.linen as nn
import jax

from nht_jax.config import ModelConfig
from nht_jax.vision.cnn import SimpleCNN
from nht_jax.vision.resnet import ResNet

FIRST_LAYER = {"simple_cnn": "conv1", "resnet18": "stem_conv"}
"""Top-level parameter name of each model's first layer (the denominator of head_to_first_ratio)."""


def resolve_conv_impl(impl: str, backend: str | None = None) -> str:
    """"auto" → "patches" on CPU (fast inside scans there), "lax" on accelerators; others unchanged."""
    if impl != "auto":
        return impl
    return "patches" if (backend or jax.default_backend()) == "cpu" else "lax"


def make_image_model(model: ModelConfig, num_classes: int) -> nn.Module:
    """SimpleCNN(num_classes), or ResNet with model.norm, model.resnet_width and model.resnet_stages
    ((2, 2, 2, 2) and width 64 = the standard ResNet18)."""
    impl = resolve_conv_impl(model.conv_impl)
    if model.name == "simple_cnn":
        return SimpleCNN(num_classes, conv_impl=impl)
    if model.name == "resnet18":
        return ResNet(num_classes=num_classes, norm=model.norm, width=model.resnet_width,
                      stage_sizes=tuple(model.resnet_stages), conv_impl=impl)
    raise ValueError(f"{model.name!r} is not an image model")


__all__ = ["FIRST_LAYER", "make_image_model", "resolve_conv_impl"]
