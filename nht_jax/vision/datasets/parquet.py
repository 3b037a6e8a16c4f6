"""Hugging Face `datasets`-style Parquet exports of an image classification set (what the Hub ships for
fashion_mnist, mnist, cifar10 …), read with pyarrow (the optional extra `parquet`).

Layout: one or more `*.parquet` files per split under the folder given, named by the split as the Hub names them,

    <folder>/data/train-00000-of-00001.parquet     <folder>/data/test-00000-of-00001.parquet
    <folder>/<config>/train/0000.parquet           (the Hub's refs/convert/parquet branch)

that is, a file whose name starts with the split, or any .parquet file inside a folder named after the split; files
of a split are read in sorted path order. Columns: the image column is a struct {bytes: binary (an encoded PNG/JPEG),
path: string} (`datasets.Image()`; the first of "image", "img" present), the label column an integer ("label" or
"labels"). Images are decoded with Pillow to grayscale ("L") or RGB as the caller asks.

A file pyarrow cannot read, a missing column, an image Pillow cannot decode or a label that is not an integer raises
CorruptDataError naming the file (and the row).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

from nht_jax.base.optional import require
from nht_jax.vision.datasets.errors import CorruptDataError, DataNotFoundError

IMAGE_COLUMNS = ("image", "img")
LABEL_COLUMNS = ("label", "labels")


def parquet_files(folder) -> list[Path]:
    """Every .parquet file under `folder` (recursively), sorted."""
    return sorted(Path(folder).expanduser().rglob("*.parquet"))


def has_parquet(folder) -> bool:
    return Path(folder).is_dir() and bool(parquet_files(folder))


def split_files(folder, split: str) -> list[Path]:
    """The .parquet files of `split`: named `<split>-…` / `<split>.parquet`, or inside a folder named `<split>`."""
    files = [p for p in parquet_files(folder) if p.name.split("-")[0].split(".")[0] == split or p.parent.name == split]
    if not files:
        raise DataNotFoundError(
            f"no Parquet file of split '{split}' under {folder} (expected e.g. "
            f"data/{split}-00000-of-00001.parquet, a Hugging Face datasets export)"
        )
    return files


def pick(columns: list[str], candidates: tuple[str, ...], path: Path, what: str) -> str:
    for name in candidates:
        if name in columns:
            return name
    raise CorruptDataError(
        f"{path} has no {what} column (looked for {', '.join(candidates)}; it has {', '.join(columns)})"
    )


def decode(payload, mode: str, where: str) -> np.ndarray:
    """One encoded image (bytes, or the {bytes, path} struct) as a uint8 array in Pillow mode `mode`."""
    data = payload.get("bytes") if isinstance(payload, dict) else payload
    if not data:
        raise CorruptDataError(f"{where}: the image has no bytes")
    try:
        with Image.open(io.BytesIO(data)) as image:
            return np.asarray(image.convert(mode), dtype=np.uint8)
    except (OSError, ValueError, SyntaxError) as error:
        raise CorruptDataError(f"{where}: cannot decode the image ({error})") from None


def read_table(path: Path):
    """The pyarrow table of one file; CorruptDataError naming it when pyarrow cannot read it."""
    pq = require("pyarrow.parquet", "reading a Parquet export", "parquet")
    try:
        return pq.read_table(path)
    except Exception as error:  # pyarrow raises ArrowInvalid, ArrowException or OSError for a damaged file
        raise CorruptDataError(f"{path} is not a readable Parquet file ({str(error).splitlines()[0]})") from None


def read_parquet_split(folder, split: str, mode: str = "RGB") -> tuple[np.ndarray, np.ndarray]:
    """(N, H, W[, 3]) uint8 images and (N,) int32 labels of `split` from the export under `folder`."""
    images, labels = [], []
    for path in split_files(folder, split):
        table = read_table(path)
        image_col = pick(table.column_names, IMAGE_COLUMNS, path, "image")
        label_col = pick(table.column_names, LABEL_COLUMNS, path, "label")
        for row, (payload, label) in enumerate(
            zip(table.column(image_col).to_pylist(), table.column(label_col).to_pylist())
        ):
            where = f"{path} row {row}"
            if not isinstance(label, int) or isinstance(label, bool):
                raise CorruptDataError(f"{where}: label {label!r} is not an integer")
            images.append(decode(payload, mode, where))
            labels.append(label)
    shapes = {a.shape for a in images}
    if len(shapes) != 1:
        raise CorruptDataError(f"the images of split '{split}' under {folder} differ in size: {sorted(shapes)[:4]}")
    return np.stack(images), np.asarray(labels, np.int32)


__all__ = []
