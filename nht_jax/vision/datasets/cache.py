"""On-disk cache of decoded splits: one uncompressed .npz per (dataset, split, options, source files).

The cache key is the SHA-256 of a canonical JSON of everything that changes the arrays: the
dataset name, split, image size, attribute names, a format version, and the identity of the source
files (path, size in bytes, modification time in ns; see `file_identity`). Change any of these and
a new file is written; the old one stays until deleted by hand. A file is written to a temporary
name in the cache directory and renamed into place (`os.replace`, atomic on POSIX), so a killed
process never leaves a half-written cache file under the final name. An unreadable cache file is
rebuilt.

Default directory: $NHT_JAX_CACHE_DIR, else ~/.cache/nht_jax/vision.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np

from nht_jax.base.atomic import atomic_write_bytes, npz_bytes
from nht_jax.vision.datasets.types import ImageSplit

FORMAT_VERSION = 1


def default_cache_dir() -> Path:
    return Path(os.environ.get("NHT_JAX_CACHE_DIR", Path.home() / ".cache" / "nht_jax" / "vision"))


def file_identity(path) -> list:
    """[path, size, mtime_ns] of a file: cheap, changes when the file is rewritten."""
    stat = os.stat(path)
    return [str(path), stat.st_size, stat.st_mtime_ns]


def cache_key(spec: dict) -> str:
    payload = json.dumps({"format": FORMAT_VERSION, **spec}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def cache_path(cache_dir, dataset: str, split: str, spec: dict) -> Path:
    return Path(cache_dir) / f"{dataset}-{split}-{cache_key({'dataset': dataset, 'split': split, **spec})}.npz"


def save_split(path: Path, data: ImageSplit) -> None:
    """Atomically write `data` to `path` (.npz, uncompressed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {
        "images": data.images,
        "labels": data.labels,
        "split": np.array(data.split),
        "num_classes": np.array(data.num_classes),
    }
    if data.attributes is not None:
        arrays["attributes"] = data.attributes
        arrays["groups"] = data.groups
    atomic_write_bytes(path, npz_bytes(arrays))


def load_split(path: Path) -> ImageSplit:
    with np.load(path, allow_pickle=False) as f:
        attributes = f["attributes"] if "attributes" in f else None
        groups = f["groups"] if "groups" in f else None
        return ImageSplit(f["images"], f["labels"], attributes, groups, str(f["split"]), int(f["num_classes"]))


def cached(cache_dir, dataset: str, split: str, spec: dict, build: Callable[[], ImageSplit]) -> ImageSplit:
    """Load the cached split for (dataset, split, spec), or build, save and return it.

    cache_dir None → `default_cache_dir()`; cache_dir False → no caching (always build).
    """
    if cache_dir is False:
        return build()
    path = cache_path(default_cache_dir() if cache_dir is None else cache_dir, dataset, split, spec)
    if path.exists():
        try:
            return load_split(path)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
            warnings.warn(f"ignoring unreadable cache file {path} ({error}); rebuilding it")
    data = build()
    save_split(path, data)
    return data
