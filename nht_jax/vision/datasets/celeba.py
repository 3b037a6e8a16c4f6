"""CelebA (202,599 face photographs, 40 binary attributes) from a prepared TFDS copy (`celeb_a`).

Task (docs/science.md §4): predict a target attribute (default "Smiling") with a spurious attribute
(default "Blond_Hair"); labels = target (0/1), attributes = spurious attribute (0/1),
groups = 2 · target + attribute, i.e. (target, attribute) = (0,0), (0,1), (1,0), (1,1).
Images (218×178 aligned crops) are centre-cropped to 178×178 and resized to `size` (default 64)
with Pillow's bilinear filter. Splits: "train" (162,770), "val" (TFDS "validation", 19,867),
"test" (19,962). Attribute names are checked against the builder's feature list (available without
the data); an unknown name raises ConfigError listing the valid ones. Cached like CIFAR-10, keyed
also by the two attribute names.
"""

from __future__ import annotations

import difflib

import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.vision.datasets.cache import cached
from nht_jax.vision.datasets.preprocess import square_resize_array
from nht_jax.vision.datasets.tfds_source import (
    read_split,
    require_prepared,
    source_identity,
    split_length,
    tfds_builder,
)
from nht_jax.vision.datasets.types import ImageSplit, binary_groups

NAME = "celeb_a"
SPLITS = {"train": "train", "val": "validation", "test": "test"}


def attribute_names(builder) -> tuple[str, ...]:
    """The 40 CelebA attribute names, from the builder's features (no data needed)."""
    return tuple(builder.info.features["attributes"].keys())


def check_attribute(name: str, valid: tuple[str, ...], role: str) -> None:
    if name not in valid:
        close = difflib.get_close_matches(name, valid, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise ConfigError(f"unknown CelebA {role} attribute '{name}'.{hint} Valid names: {', '.join(valid)}")


def load_celeba(
    split: str = "train",
    *,
    target: str = "Smiling",
    attribute: str = "Blond_Hair",
    data_dir=None,
    size: int = 64,
    cache_dir=None,
) -> ImageSplit:
    """One split of CelebA for (target, spurious attribute); see the module docstring."""
    if split not in SPLITS:
        raise ConfigError(f"CelebA split must be one of {sorted(SPLITS)}; got {split!r}")
    if size < 1:
        raise ConfigError(f"image size must be positive; got {size}")
    builder = tfds_builder(NAME, data_dir)
    valid = attribute_names(builder)
    check_attribute(target, valid, "target")
    check_attribute(attribute, valid, "spurious")
    if target == attribute:
        raise ConfigError(f"CelebA target and spurious attribute must differ; both are '{target}'")
    tfds_split = SPLITS[split]
    require_prepared(builder, NAME, tfds_split)
    spec = {
        "size": size,
        "target": target,
        "attribute": attribute,
        "version": str(builder.version),
        "source": source_identity(builder, tfds_split),
    }

    def build() -> ImageSplit:
        def convert(record):
            attrs = record["attributes"]
            return {
                "images": square_resize_array(record["image"], size),
                "labels": int(bool(attrs[target])),
                "attributes": int(bool(attrs[attribute])),
            }

        arrays = read_split(
            NAME,
            tfds_split,
            data_dir,
            split_length(builder, tfds_split),
            convert,
            {"images": ((size, size, 3), np.uint8), "labels": ((), np.int32), "attributes": ((), np.int32)},
        )
        labels, attributes = arrays["labels"], arrays["attributes"]
        return ImageSplit(arrays["images"], labels, attributes, binary_groups(labels, attributes), split, 2)

    return cached(cache_dir, NAME, split, spec, build)
