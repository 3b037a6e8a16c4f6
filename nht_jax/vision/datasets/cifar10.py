"""CIFAR-10 (60,000 32×32 RGB images, 10 classes; train 50,000 / test 10,000) from a prepared TFDS copy.

Read with `tfds.data_source("cifar10")` (no TensorFlow; see tfds_source). Images are kept at 32×32
unless `size` asks otherwise (centre-crop + Pillow bilinear resize). Decoded splits are cached
(cache.py), keyed by split, size and the shard files' identity.
"""

from __future__ import annotations

import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.vision.datasets.cache import cached
from nht_jax.vision.datasets.preprocess import square_resize_array
from nht_jax.vision.datasets.tfds_source import (read_split, require_prepared, source_identity, split_length,
                                                 tfds_builder)
from nht_jax.vision.datasets.types import ImageSplit

NAME = "cifar10"
SPLITS = {"train": "train", "test": "test"}


def load_cifar10(split: str = "train", *, data_dir=None, size: int = 32, cache_dir=None) -> ImageSplit:
    """One split of CIFAR-10 as uint8 (N, size, size, 3) images and int32 labels.

    data_dir: the tensorflow_datasets folder (None: TFDS default). cache_dir: None → default cache,
    False → no cache. Raises DataNotFoundError (with instructions) when the data is absent.
    """
    if split not in SPLITS:
        raise ConfigError(f"CIFAR-10 split must be one of {sorted(SPLITS)}; got {split!r}")
    if size < 1:
        raise ConfigError(f"image size must be positive; got {size}")
    tfds_split = SPLITS[split]
    builder = tfds_builder(NAME, data_dir)
    require_prepared(builder, NAME, tfds_split)
    spec = {"size": size, "version": str(builder.version), "source": source_identity(builder, tfds_split)}

    def build() -> ImageSplit:
        def convert(record):
            return {"images": square_resize_array(record["image"], size), "labels": int(record["label"])}

        arrays = read_split(NAME, tfds_split, data_dir, split_length(builder, tfds_split), convert,
                            {"images": ((size, size, 3), np.uint8), "labels": ((), np.int32)})
        return ImageSplit(arrays["images"], arrays["labels"], None, None, split, 10)

    return cached(cache_dir, NAME, split, spec, build)
