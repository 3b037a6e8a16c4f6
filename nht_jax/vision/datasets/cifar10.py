"""CIFAR-10 (60,000 32×32 RGB images, 10 classes; train 50,000 / test 10,000), from whichever format `data_dir` holds:

  the official python version   cifar-10-python.tar.gz or its extracted cifar-10-batches-py folder, or a folder
                                holding either (torchvision's root) — cifar_python.py
  a Parquet export              a Hugging Face `datasets` export (the Hub's uoft-cs/cifar10) — parquet.py
  a prepared TFDS copy          read with `tfds.data_source("cifar10")` (no TensorFlow; see tfds_source); also
                                what an empty data_dir means (TFDS's default folder)

Images are kept at 32×32 unless `size` asks otherwise (centre-crop + Pillow bilinear resize). TFDS splits are
cached (cache.py), keyed by split, size and the shard files' identity; the other two decode in seconds, uncached.
"""

from __future__ import annotations

import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.vision.datasets.cache import cached
from nht_jax.vision.datasets.cifar_python import find_source, read_cifar_python
from nht_jax.vision.datasets.parquet import has_parquet, read_parquet_split
from nht_jax.vision.datasets.preprocess import square_resize_array
from nht_jax.vision.datasets.tfds_source import (
    read_split,
    require_prepared,
    source_identity,
    split_length,
    tfds_builder,
)
from nht_jax.vision.datasets.types import ImageSplit

NAME = "cifar10"
SPLITS = {"train": "train", "test": "test"}


def resized(images: np.ndarray, size: int) -> np.ndarray:
    """(N, 32, 32, 3) uint8 → (N, size, size, 3) (the same array when size is 32)."""
    if images.shape[1:3] == (size, size):
        return images
    return np.stack([square_resize_array(image, size) for image in images])


def from_files(data_dir, split: str, size: int) -> ImageSplit:
    """One split from the python version or a Parquet export in data_dir (module docstring)."""
    if find_source(data_dir) is not None:
        images, labels = read_cifar_python(data_dir, split)
    else:
        images, labels = read_parquet_split(data_dir, split, mode="RGB")
    return ImageSplit(resized(images, size), labels, None, None, split, 10)


def load_cifar10(split: str = "train", *, data_dir=None, size: int = 32, cache_dir=None) -> ImageSplit:
    """One split of CIFAR-10 as uint8 (N, size, size, 3) images and int32 labels.

    data_dir: the python version, a Parquet export or the tensorflow_datasets folder (None: TFDS default).
    cache_dir (TFDS only): None → default cache, False → no cache. Raises DataNotFoundError (with instructions) when the data is absent.
    """
    if split not in SPLITS:
        raise ConfigError(f"CIFAR-10 split must be one of {sorted(SPLITS)}; got {split!r}")
    if size < 1:
        raise ConfigError(f"image size must be positive; got {size}")
    if data_dir and (find_source(data_dir) is not None or has_parquet(data_dir)):
        return from_files(data_dir, split, size)
    tfds_split = SPLITS[split]
    builder = tfds_builder(NAME, data_dir)
    require_prepared(builder, NAME, tfds_split)
    spec = {"size": size, "version": str(builder.version), "source": source_identity(builder, tfds_split)}

    def build() -> ImageSplit:
        def convert(record):
            return {"images": square_resize_array(record["image"], size), "labels": int(record["label"])}

        arrays = read_split(
            NAME,
            tfds_split,
            data_dir,
            split_length(builder, tfds_split),
            convert,
            {"images": ((size, size, 3), np.uint8), "labels": ((), np.int32)},
        )
        return ImageSplit(arrays["images"], arrays["labels"], None, None, split, 10)

    return cached(cache_dir, NAME, split, spec, build)
