"""The standard on-disk formats, each written here byte for byte as its distributors ship it, read through the loaders
and through `task.data_dir`: MNIST/Fashion-MNIST IDX files (gzipped or not, flat or torchvision's raw/), CIFAR-10's
python version (tarball or cifar-10-batches-py), Hugging Face Parquet exports. A damaged file is refused with one
line naming it."""

import dataclasses
import gzip
import io
import pickle
import struct
import sys
import tarfile

import numpy as np
import pytest
from PIL import Image

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.vision.data import load_image_data
from nht_jax.vision.datasets import CorruptDataError, DataNotFoundError, load_cifar10, load_fashion_mnist, load_mnist
from nht_jax.vision.datasets.idx import read_idx

RNG = np.random.default_rng(0)


def one_line(error) -> str:
    text = str(error.value)
    assert "\n" not in text, text
    return text


def task(dataset: str, data_dir, **extra):
    """The image task of a config for `dataset` reading `data_dir`."""
    config = experiment.from_dict({"task": {"name": "images", "dataset": dataset, "data_dir": str(data_dir), **extra}})
    return config.task


# ---------------------------------------------------------------- IDX (MNIST, Fashion-MNIST)


def idx_file(array: np.ndarray) -> bytes:
    """LeCun's IDX: 0x0000, type 0x08 (uint8), ndim, big-endian uint32 sizes, row-major values."""
    return struct.pack(">HBB", 0, 8, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()


def write_idx_set(folder, n_train=12, n_test=5, gz=True):
    """The four files of an MNIST-like set in `folder`; returns {split: (images, labels)}."""
    folder.mkdir(parents=True, exist_ok=True)
    data = {}
    for split, prefix, n in (("train", "train", n_train), ("test", "t10k", n_test)):
        images = RNG.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = (np.arange(n) % 10).astype(np.uint8)
        for kind, array in (("images-idx3-ubyte", images), ("labels-idx1-ubyte", labels)):
            raw = idx_file(array)
            (folder / f"{prefix}-{kind}{'.gz' if gz else ''}").write_bytes(gzip.compress(raw) if gz else raw)
        data[split] = (images, labels)
    return data


@pytest.mark.parametrize("gz", [True, False])
def test_idx_gzipped_or_not_padded_to_rgb(tmp_path, gz):
    data = write_idx_set(tmp_path / "fm", gz=gz)
    split = load_fashion_mnist("train", data_dir=tmp_path / "fm", size=32)
    images, labels = data["train"]
    assert split.images.shape == (12, 32, 32, 3) and split.images.dtype == np.uint8
    np.testing.assert_array_equal(split.labels, labels.astype(np.int32))
    for c in range(3):  # the gray values in the centre of every channel, a 2-pixel black frame around them
        np.testing.assert_array_equal(split.images[:, 2:30, 2:30, c], images)
    assert not split.images[:, :2].any() and not split.images[:, :, -2:].any()
    assert load_fashion_mnist("test", data_dir=tmp_path / "fm", size=28).images.shape == (5, 28, 28, 3)


def test_idx_torchvision_raw_folder_and_data_dir(tmp_path):
    data = write_idx_set(tmp_path / "MNIST" / "raw", gz=False)
    for where in (tmp_path, tmp_path / "MNIST", tmp_path / "MNIST" / "raw"):  # torchvision's root and below
        split = load_mnist("test", data_dir=where)
        np.testing.assert_array_equal(split.images[:, 2:30, 2:30, 0], data["test"][0])
    loaded = load_image_data(task("mnist", tmp_path / "MNIST", train_size=7))
    assert loaded.train.images.shape == (7, 32, 32, 3) and loaded.test.images.shape == (5, 32, 32, 3)


def test_idx_damaged_files_are_one_line_naming_the_file(tmp_path):
    folder = tmp_path / "fm"
    write_idx_set(folder)
    images = folder / "train-images-idx3-ubyte.gz"
    good = images.read_bytes()
    images.write_bytes(good[: len(good) // 2])  # a truncated download
    with pytest.raises(CorruptDataError) as error:
        load_fashion_mnist("train", data_dir=folder)
    assert "train-images-idx3-ubyte.gz" in one_line(error) and "gzip" in one_line(error)
    raw = gzip.decompress(good)
    images.write_bytes(gzip.compress(raw[:-100]))  # a complete gzip stream of a truncated file
    with pytest.raises(CorruptDataError, match="truncated") as error:
        load_fashion_mnist("train", data_dir=folder)
    assert "train-images-idx3-ubyte.gz" in one_line(error)
    images.write_bytes(gzip.compress(b"<html>404 Not Found</html>"))  # what a failed download saves
    with pytest.raises(CorruptDataError, match="not an IDX file") as error:
        load_fashion_mnist("train", data_dir=folder)
    assert "train-images-idx3-ubyte.gz" in one_line(error)
    images.write_bytes(gzip.compress(idx_file(RNG.integers(0, 256, (3, 28, 28), dtype=np.uint8))))
    with pytest.raises(CorruptDataError, match="12 labels") as error:  # 3 images against 12 labels
        load_fashion_mnist("train", data_dir=folder)
    one_line(error)


def test_idx_missing_data_says_where_to_get_it(tmp_path):
    with pytest.raises(DataNotFoundError, match="apt-get install dataset-fashion-mnist") as error:
        load_fashion_mnist("train", data_dir=tmp_path / "nowhere")
    one_line(error)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataNotFoundError, match="neither"):
        load_fashion_mnist("train", data_dir=tmp_path / "empty")
    write_idx_set(tmp_path / "fm")
    (tmp_path / "fm" / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(DataNotFoundError, match="t10k-labels-idx1-ubyte"):
        load_fashion_mnist("test", data_dir=tmp_path / "fm")
    with pytest.raises(ConfigError, match="even number"):
        load_fashion_mnist("train", data_dir=tmp_path / "fm", size=31)


def test_read_idx_keeps_the_header_shape(tmp_path):
    array = RNG.integers(0, 256, (2, 3, 4), dtype=np.uint8)
    (tmp_path / "x-idx3-ubyte").write_bytes(idx_file(array))
    np.testing.assert_array_equal(read_idx(tmp_path / "x-idx3-ubyte"), array)


# ---------------------------------------------------------------- CIFAR-10, python version


def cifar_batches(n_per_batch=4):
    """{file name: pickled bytes} of CIFAR-10's python version, and the (images, labels) of each split."""
    files, splits = {}, {"train": ([], []), "test": ([], [])}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        images = RNG.integers(0, 256, (n_per_batch, 32, 32, 3), dtype=np.uint8)
        labels = [int(x) for x in RNG.integers(0, 10, n_per_batch)]
        rows = images.transpose(0, 3, 1, 2).reshape(n_per_batch, 3072)  # R plane, G plane, B plane, row-major
        batch = {
            b"batch_label": name.encode(),
            b"labels": labels,
            b"data": rows,
            b"filenames": [f"{i}.png".encode() for i in range(n_per_batch)],
        }
        files[name] = pickle.dumps(batch, protocol=2)
        split = splits["test" if name == "test_batch" else "train"]
        split[0].append(images)
        split[1].append(labels)
    files["batches.meta"] = pickle.dumps(
        {b"label_names": [b"airplane"] * 10, b"num_cases_per_batch": n_per_batch, b"num_vis": 3072}, protocol=2
    )
    return files, {k: (np.concatenate(v[0]), np.concatenate(v[1])) for k, v in splits.items()}


def write_cifar_folder(root):
    files, splits = cifar_batches()
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder, splits


def write_cifar_tarball(path):
    files, splits = cifar_batches()
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return splits


def test_cifar_python_folder_exact_pixels(tmp_path):
    folder, splits = write_cifar_folder(tmp_path)
    for where in (tmp_path, folder):  # torchvision's root, or the extracted folder itself
        train = load_cifar10("train", data_dir=where)
        np.testing.assert_array_equal(train.images, splits["train"][0])
        np.testing.assert_array_equal(train.labels, splits["train"][1])
    test = load_cifar10("test", data_dir=folder, size=16)
    assert test.images.shape == (4, 16, 16, 3) and test.num_classes == 10


def test_cifar_python_tarball_and_data_dir(tmp_path):
    splits = write_cifar_tarball(tmp_path / "cifar-10-python.tar.gz")
    for where in (tmp_path / "cifar-10-python.tar.gz", tmp_path):
        test = load_cifar10("test", data_dir=where)
        np.testing.assert_array_equal(test.images, splits["test"][0])
    loaded = load_image_data(task("cifar10", tmp_path))
    assert loaded.train.images.shape == (20, 32, 32, 3)
    np.testing.assert_array_equal(loaded.train.labels, splits["train"][1])


def test_cifar_python_damaged_files_are_one_line_naming_the_file(tmp_path):
    folder, _ = write_cifar_folder(tmp_path / "a")
    (folder / "data_batch_3").write_bytes(b"\x80\x02}q\x00(U\x04data")  # a pickle cut short
    with pytest.raises(CorruptDataError) as error:
        load_cifar10("train", data_dir=folder)
    assert "data_batch_3" in one_line(error)
    (folder / "data_batch_3").write_bytes(pickle.dumps({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}))
    with pytest.raises(CorruptDataError, match="3072") as error:
        load_cifar10("train", data_dir=folder)
    assert "data_batch_3" in one_line(error)
    (folder / "test_batch").write_bytes(pickle.dumps(print))  # a pickle that names a function: refused, not called
    with pytest.raises(CorruptDataError, match="refusing to load builtins.print"):
        load_cifar10("test", data_dir=folder)
    (folder / "data_batch_5").unlink()
    with pytest.raises(DataNotFoundError, match="data_batch_5"):
        load_cifar10("train", data_dir=folder)
    write_cifar_tarball(tmp_path / "cifar-10-python.tar.gz")
    good = (tmp_path / "cifar-10-python.tar.gz").read_bytes()
    (tmp_path / "cifar-10-python.tar.gz").write_bytes(good[: len(good) // 2])  # an interrupted download
    with pytest.raises(CorruptDataError) as error:
        load_cifar10("test", data_dir=tmp_path / "cifar-10-python.tar.gz")
    assert "cifar-10-python.tar.gz" in one_line(error)


# ---------------------------------------------------------------- Hugging Face Parquet exports


def png(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG")
    return buffer.getvalue()


def write_parquet(path, images, labels, image_column="image"):
    """A `datasets` export: the image column a struct {bytes: PNG, path}, the label column int64."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    structs = [{"bytes": png(image), "path": None} for image in images]
    table = pa.table(
        {
            image_column: pa.array(structs, pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
            "label": pa.array([int(x) for x in labels], pa.int64()),
        }
    )
    pq.write_table(table, path)


def test_parquet_fashion_mnist_gray_and_cifar_rgb(tmp_path):
    gray = {s: RNG.integers(0, 256, (n, 28, 28), dtype=np.uint8) for s, n in (("train", 6), ("test", 3))}
    for split, images in gray.items():
        write_parquet(tmp_path / "fm" / "data" / f"{split}-00000-of-00001.parquet", images, np.arange(len(images)))
    loaded = load_image_data(task("fashion_mnist", tmp_path / "fm"))
    np.testing.assert_array_equal(loaded.train.images[:, 2:30, 2:30, 1], gray["train"])
    np.testing.assert_array_equal(loaded.test.labels, [0, 1, 2])
    rgb = RNG.integers(0, 256, (4, 32, 32, 3), dtype=np.uint8)
    for i, split in enumerate(("train", "train", "test")):  # the Hub's refs/convert/parquet layout, two train files
        write_parquet(tmp_path / "cifar" / "plain_text" / split / f"000{i}.parquet", rgb, [9, 8, 7, 6], "img")
    cifar = load_cifar10("train", data_dir=tmp_path / "cifar")
    np.testing.assert_array_equal(cifar.images, np.concatenate([rgb, rgb]))
    np.testing.assert_array_equal(load_cifar10("test", data_dir=tmp_path / "cifar").labels, [9, 8, 7, 6])


def test_parquet_damaged_files_are_one_line_naming_the_file(tmp_path):
    images = RNG.integers(0, 256, (3, 28, 28), dtype=np.uint8)
    train = tmp_path / "data" / "train-00000-of-00001.parquet"
    write_parquet(train, images, [0, 1, 2])
    write_parquet(tmp_path / "data" / "test-00000-of-00001.parquet", images, [0, 1, 2])
    good = train.read_bytes()
    train.write_bytes(good[: len(good) // 2])
    with pytest.raises(CorruptDataError, match="not a readable Parquet file") as error:
        load_fashion_mnist("train", data_dir=tmp_path)
    assert "train-00000-of-00001.parquet" in one_line(error)
    write_parquet(train, images, [0, 1, 2], image_column="picture")
    with pytest.raises(CorruptDataError, match="no image column") as error:
        load_fashion_mnist("train", data_dir=tmp_path)
    assert "train-00000-of-00001.parquet" in one_line(error)
    pa, pq = pytest.importorskip("pyarrow"), pytest.importorskip("pyarrow.parquet")
    kind = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    pq.write_table(
        pa.table(
            {"image": pa.array([{"bytes": b"not a png", "path": "x.png"}], kind), "label": pa.array([1], pa.int64())}
        ),
        train,
    )
    with pytest.raises(CorruptDataError, match="row 0: cannot decode") as error:
        load_fashion_mnist("train", data_dir=tmp_path)
    assert "train-00000-of-00001.parquet" in one_line(error)


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch):
    write_parquet(tmp_path / "data" / "train-00000-of-00001.parquet", np.zeros((1, 28, 28), np.uint8), [0])
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # import now raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'nht_jax\[parquet\]'") as error:
        load_fashion_mnist("train", data_dir=tmp_path)
    one_line(error)


def test_train_size_keeps_the_first_images(tmp_path):
    data = write_idx_set(tmp_path / "fm")
    base = task("fashion_mnist", tmp_path / "fm")
    first = load_image_data(dataclasses.replace(base, train_size=5))
    np.testing.assert_array_equal(first.train.images[:, 2:30, 2:30, 0], data["train"][0][:5])
    assert len(load_image_data(dataclasses.replace(base, train_size=0)).train.labels) == 12
