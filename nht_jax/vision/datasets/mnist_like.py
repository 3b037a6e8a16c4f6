"""Fashion-MNIST and MNIST (70,000 28×28 grayscale images each, 10 classes; train 60,000 / test 10,000) as small
RGB images, from their IDX files or from a Hugging Face Parquet export.

Sources (`data_dir`, auto-detected):
  IDX      the four files train-/t10k-images-idx3-ubyte and -labels-idx1-ubyte, gzipped or not (idx.py): the
           official downloads, Debian's package, torchvision's `<root>/FashionMNIST/raw` (or `MNIST/raw`; `data_dir`
           may be that root, its FashionMNIST folder or the raw folder)
  Parquet  a `datasets` export (parquet.py), e.g. the Hub's fashion_mnist or mnist repository
Default folders ("" / None): Fashion-MNIST $NHT_JAX_FASHION_MNIST_DIR, else /usr/share/datasets/fashion-mnist (where
`apt-get install dataset-fashion-mnist` puts it on Debian and Ubuntu); MNIST $NHT_JAX_MNIST_DIR, else ~/data/mnist.

Preprocessing (deterministic, as for scikit-learn's digits): zero (black) padding of pad = (size − 28) / 2 pixels on
every side, then the gray channel repeated into RGB. The default size 32 gives a 2-pixel black frame, so a spurious
border of width ≤ 2 occupies its own region and never covers the garment or digit. Images are not resized.
Nothing is cached: the gzipped files decode in about a second.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.vision.datasets.errors import CorruptDataError, DataNotFoundError
from nht_jax.vision.datasets.idx import find_idx_pair, has_idx, read_idx_split
from nht_jax.vision.datasets.parquet import has_parquet, read_parquet_split
from nht_jax.vision.datasets.types import ImageSplit

SPLITS = ("train", "test")
SIDE = 28
SOURCES = {
    "fashion_mnist": (
        "NHT_JAX_FASHION_MNIST_DIR",
        "/usr/share/datasets/fashion-mnist",
        "on Debian/Ubuntu `apt-get install dataset-fashion-mnist` (puts the IDX files in "
        "/usr/share/datasets/fashion-mnist), or download the four *-ubyte.gz files from "
        "https://github.com/zalandoresearch/fashion-mnist (data/fashion) into one folder, or the "
        "Parquet export of https://huggingface.co/datasets/zalando-datasets/fashion_mnist",
    ),
    "mnist": (
        "NHT_JAX_MNIST_DIR",
        "~/data/mnist",
        "download the four *-ubyte.gz files of MNIST (e.g. torchvision.datasets.MNIST(root, download=True) "
        "puts them in <root>/MNIST/raw) into one folder, or the Parquet export of "
        "https://huggingface.co/datasets/ylecun/mnist",
    ),
}


TORCHVISION = {"fashion_mnist": "FashionMNIST", "mnist": "MNIST"}
"""The folder torchvision.datasets puts under its root for each set (the IDX files in its raw/ subfolder)."""


def default_dir(name: str) -> Path:
    variable, folder, _ = SOURCES[name]
    return Path(os.environ.get(variable) or folder).expanduser()


def read_gray(name: str, folder: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """(N, 28, 28) uint8 and (N,) int32 of `split` from the IDX files or the Parquet export in `folder`."""
    how = f"to get {name}: {SOURCES[name][2]}"
    if not folder.is_dir():
        raise DataNotFoundError(f"{name} folder {folder} does not exist; {how}")
    for candidate in (folder, folder / TORCHVISION[name]):
        if has_idx(candidate):
            return read_idx_split(*find_idx_pair(candidate, split, how))
    if has_parquet(folder):
        return read_parquet_split(folder, split, mode="L")
    raise DataNotFoundError(
        f"{folder} holds neither {name}'s IDX files (train-images-idx3-ubyte[.gz] …) nor a Parquet export; {how}"
    )


def gray_to_rgb(gray: np.ndarray, size: int, where: str) -> np.ndarray:
    """(N, h, w) uint8 → (N, size, size, 3): black padding around the image, the gray channel repeated."""
    height, width = gray.shape[1:3]
    pad_h, pad_w = size - height, size - width
    if pad_h < 0 or pad_w < 0 or pad_h % 2 or pad_w % 2:
        raise ConfigError(
            f"{where} images are {height}×{width}; image_size {size} must exceed them by an even "
            f"number of pixels (padding only: e.g. 32)"
        )
    padded = np.pad(gray, ((0, 0), (pad_h // 2, pad_h // 2), (pad_w // 2, pad_w // 2)))
    return np.repeat(padded[..., None], 3, axis=-1)


def load_mnist_like(name: str, split: str = "train", *, data_dir=None, size: int = 32) -> ImageSplit:
    """One split of `name` ("fashion_mnist" or "mnist"); see the module docstring."""
    if split not in SPLITS:
        raise ConfigError(f"{name} split must be one of {SPLITS}; got {split!r}")
    folder = Path(data_dir).expanduser() if data_dir else default_dir(name)
    gray, labels = read_gray(name, folder, split)
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise CorruptDataError(f"{name} labels in {folder} lie outside 0–9 ({labels.min()}–{labels.max()})")
    return ImageSplit(gray_to_rgb(gray, size, f"{name} ({folder})"), labels, None, None, split, 10)


def load_fashion_mnist(split: str = "train", *, data_dir=None, size: int = 32) -> ImageSplit:
    """One split of Fashion-MNIST (module docstring)."""
    return load_mnist_like("fashion_mnist", split, data_dir=data_dir, size=size)


def load_mnist(split: str = "train", *, data_dir=None, size: int = 32) -> ImageSplit:
    """One split of MNIST (module docstring)."""
    return load_mnist_like("mnist", split, data_dir=data_dir, size=size)


__all__ = []
