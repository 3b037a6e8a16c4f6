"""The array bundle every vision loader returns."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class ImageSplit(NamedTuple):
    """One split of an image dataset, as host NumPy arrays.

    images      (N, H, W, 3) uint8, NHWC, RGB
    labels      (N,) int32 class ids in [0, num_classes)
    attributes  (N,) int32 spurious attribute (0/1) or None when the dataset has none
    groups      (N,) int32 group id = label · 2 + attribute, or None
    split       "train" | "val" | "test"
    num_classes number of classes
    """

    images: np.ndarray
    labels: np.ndarray
    attributes: np.ndarray | None
    groups: np.ndarray | None
    split: str
    num_classes: int


def to_float_images(images) -> np.ndarray:
    """uint8 [0, 255] → float32 [0, 1] (x / 255); the border palette uses the same scale."""
    return np.asarray(images, dtype=np.float32) / 255.0


def binary_groups(labels: np.ndarray, attributes: np.ndarray) -> np.ndarray:
    """Group id g = 2 · label + attribute for a binary target and binary attribute."""
    return (2 * labels.astype(np.int32) + attributes.astype(np.int32)).astype(np.int32)
