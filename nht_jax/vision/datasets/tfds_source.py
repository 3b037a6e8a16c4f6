"""Reading a prepared TFDS dataset without TensorFlow, through `tfds.data_source`.

`tfds.data_source(name, split, data_dir)` random-accesses the ArrayRecord shards of a prepared
dataset and decodes each record with NumPy/Pillow; it needs no TensorFlow. Preparing a dataset
(`tfds build`) does need TensorFlow and internet, so here we only read: if
<data_dir>/<name>/<version>/dataset_info.json is absent we raise DataNotFoundError with that path
and the commands to produce it elsewhere. The shards must be ArrayRecord files
(`--file_format=array_record`); a TFRecord-only copy is reported as such.

data_dir None → TFDS's default ($TFDS_DATA_DIR, else ~/tensorflow_datasets).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.vision.datasets.cache import file_identity
from nht_jax.vision.datasets.errors import CorruptDataError, DataNotFoundError

CHUNK = 512


def how_to_get(name: str) -> str:
    """Instructions for producing a TFDS directory on another machine and copying it here."""
    return (
        f"To obtain it: on a machine with internet access run `pip install tensorflow tensorflow-datasets` and "
        f'`tfds build {name} --file_format=array_record` (or `python -c "import tensorflow_datasets as tfds; '
        f"tfds.builder('{name}', file_format='array_record').download_and_prepare()\"`), then copy "
        f"~/tensorflow_datasets/{name}/ (dataset_info.json, features.json and the *.array_record-* shards) "
        f"into the data_dir given here, or pass data_dir= pointing at the copied tensorflow_datasets folder."
    )


def tfds_builder(name: str, data_dir):
    """The registered TFDS builder for `name` reading from `data_dir` (nothing is downloaded)."""
    try:
        import tensorflow_datasets as tfds
    except ImportError:
        raise ConfigError(
            f"reading {name} needs tensorflow-datasets, which is not installed: "
            f"run `pip install -e '.[data]'` (no TensorFlow needed to read prepared data)."
        ) from None

    return tfds.builder(name, data_dir=None if data_dir is None else os.fspath(data_dir), file_format="array_record")


def require_prepared(builder, name: str, split: str) -> None:
    """Raise DataNotFoundError unless `builder` finds a prepared copy holding `split` as ArrayRecord."""
    if not builder.is_prepared():
        parent = Path(builder.data_dir).parent
        found = sorted(p.name for p in parent.iterdir() if p.is_dir()) if parent.is_dir() else []
        others = f" (found only version folder(s) {found} in {parent})" if found else ""
        raise DataNotFoundError(
            f"TFDS dataset '{name}' (version {builder.version}) is not prepared: no dataset_info.json in "
            f"{builder.data_dir}{others}. {how_to_get(name)}"
        )
    if split not in builder.info.splits:
        raise ConfigError(f"TFDS dataset '{name}' has no split '{split}'; it has {sorted(builder.info.splits)}")
    split_info = builder.info.splits[split]
    fmt = getattr(builder.info.file_format, "value", builder.info.file_format)
    if fmt != "array_record" or not all(Path(p).exists() for p in split_info.filepaths):
        raise DataNotFoundError(
            f"TFDS dataset '{name}' in {builder.data_dir} has no ArrayRecord shards for split '{split}' "
            f"(file format: {fmt}); tfds.data_source reads only ArrayRecord. {how_to_get(name)}"
        )


def source_identity(builder, split: str) -> list:
    """File identities (path, size, mtime) of the split's shards and dataset_info.json, for cache keys."""
    files = [Path(builder.data_dir) / "dataset_info.json", *builder.info.splits[split].filepaths]
    return [file_identity(p) for p in files]


def iterate_records(name: str, split: str, data_dir) -> Iterator[dict[str, Any]]:
    """Yield the decoded records of a split in order (chunks through __getitems__ when available)."""
    import tensorflow_datasets as tfds

    source = tfds.data_source(name, split=split, data_dir=None if data_dir is None else os.fspath(data_dir))
    n = len(source)
    batched = hasattr(source, "__getitems__")
    for start in range(0, n, CHUNK):
        stop = min(start + CHUNK, n)
        try:
            records = (
                source.__getitems__(list(range(start, stop))) if batched else [source[i] for i in range(start, stop)]
            )
        except Exception as error:  # decoding errors of tfds / array_record / Pillow
            raise CorruptDataError(
                f"cannot read records {start}..{stop - 1} of TFDS '{name}' split '{split}' from {data_dir}: {error}"
            ) from error
        yield from records


def split_length(builder, split: str) -> int:
    return int(builder.info.splits[split].num_examples)


def read_split(
    name: str,
    split: str,
    data_dir,
    n: int,
    convert: Callable[[dict], dict],
    layout: dict[str, tuple[tuple[int, ...], Any]],
) -> dict[str, np.ndarray]:
    """Decode all n records of a split into preallocated arrays.

    convert(record) → {field: array}; layout {field: (shape per example, dtype)}. Preallocating keeps
    peak memory at one copy of the split (CelebA train at 64×64 is 2 GB).
    """
    out = {key: np.empty((n, *shape), dtype) for key, (shape, dtype) in layout.items()}
    count = 0
    for record in iterate_records(name, split, data_dir):
        if count >= n:
            break
        for key, value in convert(record).items():
            out[key][count] = value
        count += 1
    if count != n:
        raise CorruptDataError(f"TFDS '{name}' split '{split}' yielded {count} records, dataset_info.json says {n}")
    return out
