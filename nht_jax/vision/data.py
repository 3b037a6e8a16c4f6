"""The train and test splits of an image task, loaded once on the host from the image
domain's settings (`nht_jax.domains.images.ImageSettings`).

`load_image_data(task)` maps the task's settings onto the loaders of `nht_jax.vision.datasets`:
  digits      image_size S = 8·scale + 8 (scale = (S − 8)/8, 4 black pixels of padding per side)
  fashion_mnist, mnist   the IDX files or a Parquet export in task.data_dir ("" = the loader's default folder),
              28×28 padded with (S − 28)/2 black pixels per side
  cifar10     the python version (tarball or cifar-10-batches-py), a Parquet export, or
              tfds.data_source("cifar10") under task.data_dir ("" = TFDS's default folder)
  celeba      tfds.data_source("celeb_a"), target/spurious attribute from the task
  waterbirds  the release folder task.data_dir ("" = $NHT_JAX_WATERBIRDS_DIR or the default)
Evaluation uses the "test" split of every dataset. task.train_size > 0 keeps the first train_size training
images (0 = all of them). Missing or broken data raises the loaders'
ConfigError subclasses (DataNotFoundError names the folder searched and how to obtain the data);
`nht run` calls this before it creates the results directory, so nothing is written on failure.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.vision.datasets import ImageSplit, load_image_split


class ImageData(NamedTuple):
    """Host arrays of one image task: the training and the test split, and the class count."""

    name: str
    train: ImageSplit
    test: ImageSplit
    num_classes: int

    @property
    def has_groups(self) -> bool:
        return self.train.groups is not None and self.test.groups is not None

    def train_group_counts(self, num_groups: int = 4) -> np.ndarray:
        """(G,) training examples per group g = 2·label + attribute (the weights of `weighted_avg_acc`)."""
        return np.bincount(self.train.groups, minlength=num_groups).astype(np.float32)


def loader_options(task) -> dict:
    """Keyword options of the dataset's loader for this task."""
    size = task.side
    data_dir = task.data_dir or None
    if task.dataset == "digits":
        return {"scale": (size - 8) // 8, "pad": 4}
    if task.dataset in ("fashion_mnist", "mnist"):
        return {"data_dir": data_dir, "size": size}
    if task.dataset == "cifar10":
        return {"data_dir": data_dir, "size": size}
    if task.dataset == "celeba":
        return {
            "data_dir": data_dir,
            "size": size,
            "target": task.target_attribute,
            "attribute": task.spurious_attribute,
        }
    return {"root": data_dir, "size": size}


def check_split(data: ImageSplit, dataset: str, split: str) -> None:
    """ConfigError for an empty split or inconsistent array lengths."""
    n = len(data.labels)
    if n == 0:
        raise ConfigError(f"the '{split}' split of {dataset} is empty; check the data folder (task.data_dir)")
    if data.images.shape[0] != n or (data.groups is not None and len(data.groups) != n):
        raise ConfigError(f"the '{split}' split of {dataset} has {data.images.shape[0]} images but {n} labels")


def first(data: ImageSplit, n: int) -> ImageSplit:
    """The first n examples of a split (all of them when n is 0 or exceeds its length).

    Args:
        data: the split.
        n: how many examples.

    Returns:
        The shortened split.
    """
    if not n or n >= len(data.labels):
        return data
    return data._replace(
        images=data.images[:n],
        labels=data.labels[:n],
        attributes=None if data.attributes is None else data.attributes[:n],
        groups=None if data.groups is None else data.groups[:n],
    )


def load_image_data(task) -> ImageData:
    """Both splits of task.dataset as uint8 NHWC host arrays (see the module docstring)."""
    options = loader_options(task)
    train = first(load_image_split(task.dataset, "train", **options), task.train_size)
    check_split(train, task.dataset, "train")
    test = load_image_split(task.dataset, "test", **options)
    check_split(test, task.dataset, "test")
    return ImageData(task.dataset, train, test, int(train.num_classes))


__all__ = ["first"]
