"""IDX files, the format of MNIST and Fashion-MNIST (as the official sites, torchvision's `raw/` folder and Debian's
`dataset-fashion-mnist` package hold them), gzipped or not.

Layout (LeCun's description): a big-endian header of two zero bytes, one type byte (0x08 = uint8, the only type
these data sets use), one byte d = the number of dimensions, then d big-endian uint32 sizes, then the values in
row-major order. Images are `idx3` (N, rows, cols), labels `idx1` (N,).

A folder of the four files of one data set:

    train-images-idx3-ubyte[.gz]   train-labels-idx1-ubyte[.gz]
    t10k-images-idx3-ubyte[.gz]    t10k-labels-idx1-ubyte[.gz]

`find_idx_pair(folder, split)` finds a split's two files (plain or .gz; also under a `raw/` subfolder, torchvision's
layout); `read_idx(path)` decodes one file. A file that is not valid IDX (bad magic, a type other than uint8, fewer
bytes than the header says, a broken gzip stream) raises CorruptDataError naming it.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np

from nht_jax.vision.datasets.errors import CorruptDataError, DataNotFoundError

UINT8 = 0x08
SPLIT_PREFIX = {"train": "train", "test": "t10k"}
FILES = {"images": "images-idx3-ubyte", "labels": "labels-idx1-ubyte"}


def idx_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped when the name ends in .gz (or the content starts with gzip's magic)."""
    raw = Path(path).read_bytes()
    if str(path).endswith(".gz") or raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as error:
            raise CorruptDataError(f"{path} is not a readable gzip file ({error})") from None
    return raw


def parse_idx(data: bytes, where: str) -> np.ndarray:
    """The uint8 array an IDX byte string holds; CorruptDataError naming `where` when it is not one."""
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise CorruptDataError(
            f"{where} is not an IDX file (its first bytes are {data[:4].hex() or 'missing'}, expected 0000 08 0d)"
        )
    if data[2] != UINT8:
        raise CorruptDataError(f"{where}: IDX value type 0x{data[2]:02x}, expected 0x08 (uint8)")
    ndim = data[3]
    header = 4 + 4 * ndim
    if ndim == 0 or len(data) < header:
        raise CorruptDataError(f"{where}: IDX header of {ndim} dimensions is truncated or empty")
    shape = tuple(int(s) for s in np.frombuffer(data, ">u4", ndim, 4))
    size = int(np.prod(shape))
    if len(data) - header != size:
        raise CorruptDataError(
            f"{where}: IDX header says shape {shape} ({size:,} bytes) but the file holds "
            f"{len(data) - header:,} bytes after it (truncated or padded)"
        )
    return np.frombuffer(data, np.uint8, size, header).reshape(shape)


def read_idx(path) -> np.ndarray:
    """The uint8 array of one IDX file (gzipped or not)."""
    return parse_idx(idx_bytes(Path(path)), str(path))


def find_idx_file(folder: Path, stem: str) -> Path | None:
    """<folder>/<stem>, <stem>.gz, or the same under <folder>/raw (torchvision); None when absent."""
    for base in (folder, folder / "raw"):
        for name in (stem, stem + ".gz"):
            if (base / name).is_file():
                return base / name
    return None


def has_idx(folder) -> bool:
    """Whether `folder` holds the training images of an IDX data set (the format is then IDX)."""
    return find_idx_file(Path(folder), f"train-{FILES['images']}") is not None


def find_idx_pair(folder, split: str, how_to_get: str) -> tuple[Path, Path]:
    """(images file, labels file) of `split` ("train" or "test") in `folder`; DataNotFoundError naming the folder."""
    folder = Path(folder).expanduser()
    stems = {kind: f"{SPLIT_PREFIX[split]}-{suffix}" for kind, suffix in FILES.items()}
    found = {kind: find_idx_file(folder, stem) for kind, stem in stems.items()}
    missing = [stem for kind, stem in stems.items() if found[kind] is None]
    if missing:
        raise DataNotFoundError(f"no {' or '.join(missing)}[.gz] in {folder} (nor in {folder / 'raw'}); {how_to_get}")
    return found["images"], found["labels"]


def read_idx_split(images_path: Path, labels_path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(N, rows, cols) uint8 images and (N,) int32 labels of one split, checked to agree."""
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.ndim != 3:
        raise CorruptDataError(
            f"{images_path}: expected an idx3 image file (N, rows, cols), found shape {images.shape}"
        )
    if labels.ndim != 1:
        raise CorruptDataError(f"{labels_path}: expected an idx1 label file (N,), found shape {labels.shape}")
    if len(images) != len(labels):
        raise CorruptDataError(f"{images_path} holds {len(images):,} images but {labels_path} {len(labels):,} labels")
    return images, labels.astype(np.int32)


__all__ = []
