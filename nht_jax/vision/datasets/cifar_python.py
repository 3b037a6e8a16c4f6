"""CIFAR-10's official "python version" (https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz, what torchvision
downloads), read from the tarball or from its extracted `cifar-10-batches-py` folder.

Layout: data_batch_1 … data_batch_5 (train, 10,000 images each) and test_batch, each a pickled dict with
b"data" a (10000, 3072) uint8 array (row-major: 1,024 red, then 1,024 green, then 1,024 blue values of a 32×32
image) and b"labels" a list of ints in 0–9; batches.meta holds the class names. `path` may be the tarball, the
`cifar-10-batches-py` folder, or a folder holding either (torchvision's root holds both).

The pickles are read with an unpickler that builds only NumPy arrays and plain containers, so a file that would
run code is refused instead. A damaged tarball or batch (not gzip, truncated, not a pickle, wrong keys or shapes)
raises CorruptDataError naming the file.
"""

from __future__ import annotations

import io
import pickle
import tarfile
import zlib
from pathlib import Path

import numpy as np

from nht_jax.vision.datasets.errors import CorruptDataError, DataNotFoundError

FOLDER = "cifar-10-batches-py"
TARBALL = "cifar-10-python.tar.gz"
BATCHES = {"train": tuple(f"data_batch_{i}" for i in range(1, 6)), "test": ("test_batch",)}
URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy.core.numeric", "_frombuffer"),
    ("_codecs", "encode"),
}


class ArrayUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the NumPy names an array's pickle uses (nothing that runs code)."""

    def find_class(self, module, name):
        if (module, name) in ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def find_source(path) -> Path | None:
    """The tarball or the `cifar-10-batches-py` folder at or under `path`; None when neither is there."""
    path = Path(path).expanduser()
    if path.is_file() and tarfile.is_tarfile(path) or path.is_file() and path.name.endswith((".tar.gz", ".tgz")):
        return path
    if (path / "data_batch_1").is_file() or (path / "test_batch").is_file():
        return path
    if (path / FOLDER).is_dir():
        return path / FOLDER
    if (path / TARBALL).is_file():
        return path / TARBALL
    return None


def unpickle(data: bytes, where: str) -> dict:
    """A batch's dict, or CorruptDataError naming `where`."""
    try:
        batch = ArrayUnpickler(io.BytesIO(data), encoding="bytes").load()
    except Exception as error:  # UnpicklingError, EOFError, ValueError … from a damaged or foreign file
        raise CorruptDataError(f"{where} is not a CIFAR-10 batch pickle ({type(error).__name__}: {error})") from None
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        raise CorruptDataError(f"{where} lacks the b'data' and b'labels' entries of a CIFAR-10 batch")
    return batch


def batch_arrays(batch: dict, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(N, 32, 32, 3) uint8 images (the R, G, B planes moved last) and (N,) int32 labels of one batch."""
    data, labels = np.asarray(batch[b"data"]), np.asarray(batch[b"labels"])
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072 or labels.shape != (data.shape[0],):
        raise CorruptDataError(
            f"{where}: expected data (N, 3072) uint8 and N labels, found {data.dtype} {data.shape} and {labels.shape}"
        )
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise CorruptDataError(f"{where}: labels outside 0–9")
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels.astype(np.int32)


def batch_bytes(source: Path, names: tuple[str, ...]) -> list[tuple[str, bytes]]:
    """(where, bytes) of each named batch, from the folder or from inside the tarball (not extracted)."""
    if source.is_dir():
        missing = [n for n in names if not (source / n).is_file()]
        if missing:
            raise DataNotFoundError(f"{source} lacks {', '.join(missing)} of CIFAR-10's python version ({URL})")
        return [(str(source / n), (source / n).read_bytes()) for n in names]
    try:
        with tarfile.open(source, "r:*") as tar:
            members = {Path(m.name).name: m for m in tar.getmembers() if m.isfile()}
            missing = [n for n in names if n not in members]
            if missing:
                raise CorruptDataError(f"{source} lacks {', '.join(missing)}: not CIFAR-10's python tarball ({URL})")
            return [(f"{source}:{members[n].name}", tar.extractfile(members[n]).read()) for n in names]
    except (tarfile.TarError, EOFError, OSError, zlib.error) as error:
        raise CorruptDataError(f"{source} is not a readable tar.gz archive ({error})") from None


def read_cifar_python(path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """(N, 32, 32, 3) uint8 images and (N,) int32 labels of `split` ("train": 50,000, "test": 10,000)."""
    source = find_source(path)
    if source is None:
        raise DataNotFoundError(f"no {TARBALL} or {FOLDER} folder at {path}; download {URL}")
    parts = [batch_arrays(unpickle(data, where), where) for where, data in batch_bytes(source, BATCHES[split])]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


__all__ = []
