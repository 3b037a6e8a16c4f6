"""Waterbirds (Sagawa et al., 2020) from its standard release folder (there is no TFDS builder).

`<root>/metadata.csv` and the JPEGs it lists, from
https://nlp.stanford.edu/data/dro/waterbird_complete95_forest2water2.tar.gz, extracted; default root:
$NHT_JAX_WATERBIRDS_DIR, else ~/data/waterbird_complete95_forest2water2. The label is the bird type, the spurious
attribute the background, groups = 2·y + place; images are centre-cropped and resized to `size` (224). Every error
is a ConfigError naming the file or folder, nothing is skipped silently, and decoded splits are cached (cache.py).

The layout, the columns, the resizing, the errors and the cache: docs/guides/image-data.md, "Per data set"."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
from PIL import Image

from nht_jax.base.errors import ConfigError
from nht_jax.vision.datasets.cache import cached, file_identity
from nht_jax.vision.datasets.errors import CorruptDataError, DataNotFoundError
from nht_jax.vision.datasets.preprocess import square_resize
from nht_jax.vision.datasets.types import ImageSplit, binary_groups

NAME = "waterbirds"
SPLITS = {"train": 0, "val": 1, "test": 2}
COLUMNS = ("img_filename", "y", "place", "split")
URL = "https://nlp.stanford.edu/data/dro/waterbird_complete95_forest2water2.tar.gz"
LAYOUT = (
    f"expected the Waterbirds release layout: <root>/metadata.csv (columns {', '.join(COLUMNS)}; "
    f"split 0/1/2 = train/val/test) and the images at <root>/<img_filename>. Download {URL} on a machine "
    "with internet access, extract it (tar xzf) and pass its folder as root"
)


def default_root() -> Path:
    return Path(os.environ.get("NHT_JAX_WATERBIRDS_DIR", Path.home() / "data" / "waterbird_complete95_forest2water2"))


def find_root(root) -> Path:
    """The folder holding metadata.csv: `root` itself or its single subfolder that has one."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise DataNotFoundError(f"Waterbirds folder {root} does not exist; {LAYOUT}")
    if (root / "metadata.csv").is_file():
        return root
    inner = [d for d in sorted(root.iterdir()) if (d / "metadata.csv").is_file()]
    if len(inner) == 1:
        return inner[0]
    raise DataNotFoundError(
        f"no metadata.csv in {root}"
        + (f" (several candidates: {[str(d) for d in inner]})" if inner else "")
        + f"; {LAYOUT}"
    )


def _int(row: dict, column: str, allowed: tuple[int, ...], where: str) -> int:
    try:
        value = int(float(row[column]))
    except (TypeError, ValueError):
        raise CorruptDataError(f"{where}: column {column} = {row[column]!r} is not an integer") from None
    if value not in allowed:
        raise CorruptDataError(f"{where}: column {column} = {value}, expected one of {allowed}")
    return value


def read_metadata(root: Path, split: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(image file names, y, place) of the rows of metadata.csv in `split`, in file order."""
    metadata = root / "metadata.csv"
    with open(metadata, newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise CorruptDataError(f"{metadata} lacks column(s) {missing} (header: {reader.fieldnames}); {LAYOUT}")
        files, ys, places = [], [], []
        for line, row in enumerate(reader, start=2):
            where = f"{metadata} line {line}"
            if _int(row, "split", (0, 1, 2), where) != SPLITS[split]:
                continue
            files.append(row["img_filename"])
            ys.append(_int(row, "y", (0, 1), where))
            places.append(_int(row, "place", (0, 1), where))
    if not files:
        raise ConfigError(f"{metadata} lists no images for split '{split}' (split = {SPLITS[split]})")
    return files, np.asarray(ys, np.int32), np.asarray(places, np.int32)


def image_identities(root: Path, files: list[str]) -> list:
    out = []
    for name in files:
        path = root / name
        try:
            out.append(file_identity(path))
        except FileNotFoundError:
            raise DataNotFoundError(f"Waterbirds image {path} (listed in {root / 'metadata.csv'}) is missing") from None
    return out


def decode_image(path: Path, size: int) -> np.ndarray:
    """(size, size, 3) uint8; CorruptDataError naming the file if Pillow cannot decode it."""
    try:
        with Image.open(path) as image:
            image.load()
            return square_resize(image, size)
    except FileNotFoundError:
        raise DataNotFoundError(f"Waterbirds image {path} is missing") from None
    except (OSError, ValueError, SyntaxError) as error:
        raise CorruptDataError(f"cannot decode Waterbirds image {path}: {error}") from error


def load_waterbirds(split: str = "train", *, root=None, size: int = 224, cache_dir=None) -> ImageSplit:
    """One split of Waterbirds: uint8 (N, size, size, 3) images, labels y, attributes place, groups 2y + place."""
    if split not in SPLITS:
        raise ConfigError(f"Waterbirds split must be one of {sorted(SPLITS)}; got {split!r}")
    if size < 1:
        raise ConfigError(f"image size must be positive; got {size}")
    root = find_root(default_root() if root is None else root)
    files, ys, places = read_metadata(root, split)
    spec = {"size": size, "metadata": file_identity(root / "metadata.csv"), "images": image_identities(root, files)}

    def build() -> ImageSplit:
        images = np.empty((len(files), size, size, 3), np.uint8)
        for i, name in enumerate(files):
            images[i] = decode_image(root / name, size)
        return ImageSplit(images, ys, places, binary_groups(ys, places), split, 2)

    return cached(cache_dir, NAME, split, spec, build)
