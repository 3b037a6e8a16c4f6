"""Image datasets as NumPy arrays (`ImageSplit`): digits (offline default), Fashion-MNIST, MNIST, CIFAR-10, CelebA,
Waterbirds.

`load_image_split(name, split, **options)` dispatches to the loader of `name`; see each module for
its options, preprocessing and errors.
"""

from __future__ import annotations

from nht_jax.base.errors import ConfigError
from nht_jax.vision.datasets.celeba import load_celeba
from nht_jax.vision.datasets.cifar10 import load_cifar10
from nht_jax.vision.datasets.digits import load_digits_split
from nht_jax.vision.datasets.errors import CorruptDataError, DataNotFoundError
from nht_jax.vision.datasets.mnist_like import load_fashion_mnist, load_mnist
from nht_jax.vision.datasets.types import ImageSplit, to_float_images
from nht_jax.vision.datasets.waterbirds import load_waterbirds

LOADERS = {
    "digits": load_digits_split,
    "fashion_mnist": load_fashion_mnist,
    "mnist": load_mnist,
    "cifar10": load_cifar10,
    "celeba": load_celeba,
    "waterbirds": load_waterbirds,
}


def load_image_split(name: str, split: str = "train", **options) -> ImageSplit:
    """Load one split of the named dataset (a key of LOADERS).

    Args:
        name: the dataset, a key of LOADERS.
        split: "train" or "test".
        **options: passed to the dataset's loader.

    Returns:
        The split's images, labels and, where the dataset has them, attributes and groups.
    """
    if name not in LOADERS:
        raise ConfigError(f"unknown image dataset '{name}'; choose one of {sorted(LOADERS)}")
    return LOADERS[name](split, **options)


__all__ = [
    "CorruptDataError",
    "DataNotFoundError",
    "ImageSplit",
    "LOADERS",
    "load_celeba",
    "load_cifar10",
    "load_digits_split",
    "load_fashion_mnist",
    "load_image_split",
    "load_mnist",
    "load_waterbirds",
    "to_float_images",
]
