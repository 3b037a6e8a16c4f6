"""The offline default: scikit-learn's bundled handwritten digits as small RGB images.

Source: `sklearn.datasets.load_digits` — 1,797 real 8×8 grayscale images (UCI optical digits, intensities 0–16), 10
classes, shipped inside the scikit-learn wheel (no download). Preprocessing (deterministic): intensities to uint8,
nearest-neighbour upsampling by `scale`, a black frame of `pad` pixels (so a border of width ≤ pad never covers the
digit), gray repeated into RGB; defaults 2 and 4 give 24×24×3. Split: stratified by class
(`train_test_split(test_size=test_fraction, random_state=seed)`), 1,347 train and 450 test images by default.

The data sets and their sizes: docs/methods/images.md ("Data") and docs/guides/image-data.md."""

from __future__ import annotations

import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.base.optional import require
from nht_jax.vision.datasets.types import ImageSplit

SPLITS = ("train", "test")


def digits_images(scale: int = 2, pad: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """All 1,797 digits as (N, 8·scale + 2·pad, same, 3) uint8 images and (N,) int32 labels."""
    load_digits = require("sklearn.datasets", "scikit-learn's digits", "data").load_digits

    if scale < 1 or pad < 0:
        raise ConfigError(f"digits need scale >= 1 and pad >= 0; got scale={scale}, pad={pad}")
    bunch = load_digits()
    gray = np.round(bunch.images * (255.0 / 16.0)).astype(np.uint8)  # (N, 8, 8)
    gray = gray.repeat(scale, axis=1).repeat(scale, axis=2)
    gray = np.pad(gray, ((0, 0), (pad, pad), (pad, pad)))
    return np.repeat(gray[..., None], 3, axis=-1), bunch.target.astype(np.int32)


def load_digits_split(
    split: str = "train", *, scale: int = 2, pad: int = 4, test_fraction: float = 0.25, seed: int = 0
) -> ImageSplit:
    """One split ("train" or "test") of the digits dataset (module docstring)."""
    train_test_split = require("sklearn.model_selection", "scikit-learn's digits", "data").train_test_split

    if split not in SPLITS:
        raise ConfigError(f"digits split must be one of {SPLITS}; got {split!r}")
    if not 0.0 < test_fraction < 1.0:
        raise ConfigError(f"digits test_fraction must lie in (0, 1); got {test_fraction}")
    images, labels = digits_images(scale, pad)
    index = np.arange(len(labels))
    train, test = train_test_split(index, test_size=test_fraction, random_state=seed, stratify=labels)
    chosen = np.sort(train if split == "train" else test)
    return ImageSplit(images[chosen], labels[chosen], None, None, split, 10)
