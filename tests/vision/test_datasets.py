"""Digits loader, Waterbirds folder loader (test-made metadata.csv + JPEGs), the .npz cache, bad inputs."""

import csv
import os

import jax
import numpy as np
import pytest
from PIL import Image

from nht_jax.base.errors import ConfigError
from nht_jax.vision import border_mask, spurious_border
from nht_jax.vision.datasets import (
    CorruptDataError,
    DataNotFoundError,
    ImageSplit,
    load_digits_split,
    load_image_split,
    load_waterbirds,
    to_float_images,
    waterbirds,
)
from nht_jax.vision.datasets.cache import cached, load_split

# ---------------------------------------------------------------- digits


def test_digits_shapes_split_and_padding():
    train, test = load_digits_split("train"), load_digits_split("test")
    assert train.images.shape == (1347, 24, 24, 3) and test.images.shape == (450, 24, 24, 3)
    assert train.images.dtype == np.uint8 and train.labels.dtype == np.int32
    assert train.num_classes == 10 and train.attributes is None
    assert np.all(train.images[:, :4] == 0) and np.all(train.images[:, :, -4:] == 0)  # 4-pixel black frame
    assert train.images.max() == 255
    per_class = np.bincount(np.concatenate([train.labels, test.labels]), minlength=10)
    assert np.all(np.abs(np.bincount(test.labels, minlength=10) - 0.25 * per_class) <= 1)  # stratified
    again = load_image_split("digits", "test")
    np.testing.assert_array_equal(again.images, test.images)  # deterministic
    big = load_digits_split("test", scale=3)
    assert big.images.shape[1:] == (32, 32, 3)
    # no train/test overlap: compare raw pixel rows
    train_rows = {row.tobytes() for row in train.images.reshape(len(train.labels), -1)}
    overlap = sum(row.tobytes() in train_rows for row in test.images.reshape(len(test.labels), -1))
    assert overlap <= 5  # the UCI set holds a handful of pixel-identical duplicates


def test_digits_border_lives_in_the_padding():
    data = load_digits_split("test")
    images = to_float_images(data.images[:32])
    painted, _ = spurious_border(images, data.labels[:32], 1.0, jax.random.PRNGKey(0), width=4)
    mask = border_mask(24, 24, 4)
    np.testing.assert_array_equal(np.asarray(painted)[:, ~mask], images[:, ~mask])  # the digit is untouched


def test_digits_bad_options():
    with pytest.raises(ConfigError, match="split must be one of"):
        load_digits_split("val")
    with pytest.raises(ConfigError, match="test_fraction"):
        load_digits_split("train", test_fraction=1.0)


# ---------------------------------------------------------------- Waterbirds

ROWS = [  # img_filename, y, place, split  — train covers all four groups
    ("001.Albatross/a1.jpg", 1, 1, 0),
    ("001.Albatross/a2.jpg", 1, 0, 0),
    ("002.Sparrow/s1.jpg", 0, 0, 0),
    ("002.Sparrow/s2.jpg", 0, 1, 0),
    ("002.Sparrow/s3.jpg", 0, 0, 0),
    ("001.Albatross/a3.jpg", 1, 1, 1),
    ("002.Sparrow/s4.jpg", 0, 1, 2),
    ("001.Albatross/a4.jpg", 1, 0, 2),
]


def write_waterbirds(root, rows=ROWS, columns=("img_id", "img_filename", "y", "split", "place", "place_filename")):
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "metadata.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for i, (name, y, place, split) in enumerate(rows):
            record = {
                "img_id": i + 1,
                "img_filename": name,
                "y": y,
                "split": split,
                "place": place,
                "place_filename": "/x/y.jpg",
            }
            writer.writerow([record[c] for c in columns])
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            shade = 30 * i
            Image.fromarray(np.full((30 + 4 * i, 40, 3), shade, np.uint8)).save(path, quality=95)
    return root


@pytest.fixture
def birds(tmp_path):
    return write_waterbirds(tmp_path / "waterbird_complete95_forest2water2")


def test_waterbirds_arrays_groups_and_order(birds, tmp_path):
    data = load_waterbirds("train", root=birds, size=16, cache_dir=tmp_path / "cache")
    assert isinstance(data, ImageSplit)
    assert data.images.shape == (5, 16, 16, 3) and data.images.dtype == np.uint8
    np.testing.assert_array_equal(data.labels, [1, 1, 0, 0, 0])
    np.testing.assert_array_equal(data.attributes, [1, 0, 0, 1, 0])
    np.testing.assert_array_equal(data.groups, [3, 2, 0, 1, 0])
    assert [abs(int(data.images[i].mean()) - 30 * i) <= 2 for i in range(5)] == [True] * 5  # file order kept
    test = load_image_split("waterbirds", "test", root=birds.parent, size=8, cache_dir=False)  # parent folder works
    np.testing.assert_array_equal(test.groups, [1, 2])
    assert test.split == "test" and test.num_classes == 2


def test_waterbirds_cache_hit_and_invalidation(birds, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    first = load_waterbirds("train", root=birds, size=16, cache_dir=cache)
    files = list(cache.glob("waterbirds-train-*.npz"))
    assert len(files) == 1 and not list(cache.glob("*.tmp"))
    decoded = []
    real_decode = waterbirds.decode_image
    monkeypatch.setattr(waterbirds, "decode_image", lambda path, size: decoded.append(path) or real_decode(path, size))
    second = load_waterbirds("train", root=birds, size=16, cache_dir=cache)
    assert decoded == []  # served from the cache
    np.testing.assert_array_equal(second.images, first.images)
    np.testing.assert_array_equal(second.groups, first.groups)
    # rewriting a source image changes its identity: the split is decoded again into a new entry
    Image.fromarray(np.zeros((20, 20, 3), np.uint8)).save(birds / ROWS[0][0])
    os.utime(birds / ROWS[0][0], ns=(1, 1))
    third = load_waterbirds("train", root=birds, size=16, cache_dir=cache)
    assert len(decoded) == 5 and third.images[0].max() == 0
    assert len(list(cache.glob("waterbirds-train-*.npz"))) == 2


def test_unreadable_cache_file_is_rebuilt(tmp_path):
    data = ImageSplit(np.zeros((2, 4, 4, 3), np.uint8), np.array([0, 1], np.int32), None, None, "train", 2)
    cached(tmp_path, "toy", "train", {"a": 1}, lambda: data)
    [path] = tmp_path.glob("toy-train-*.npz")
    path.write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="unreadable cache file"):
        again = cached(tmp_path, "toy", "train", {"a": 1}, lambda: data)
    np.testing.assert_array_equal(again.labels, [0, 1])
    assert load_split(path).split == "train"


def test_waterbirds_missing_folder_and_wrong_layout(tmp_path):
    with pytest.raises(DataNotFoundError, match="does not exist.*waterbird_complete95_forest2water2.tar.gz"):
        load_waterbirds("train", root=tmp_path / "nowhere", cache_dir=False)
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "a.jpg").write_bytes(b"")
    with pytest.raises(DataNotFoundError, match=r"no metadata.csv in .*flat.*img_filename, y, place, split"):
        load_waterbirds("train", root=tmp_path / "flat", cache_dir=False)


def test_waterbirds_missing_column_and_bad_value(tmp_path):
    root = write_waterbirds(tmp_path / "a", columns=("img_filename", "y", "split"))
    with pytest.raises(CorruptDataError, match=r"lacks column\(s\) \['place'\]"):
        load_waterbirds("train", root=root, cache_dir=False)
    root = write_waterbirds(tmp_path / "b", rows=[("x/a.jpg", 2, 0, 0)])
    with pytest.raises(CorruptDataError, match="line 2: column y = 2"):
        load_waterbirds("train", root=root, cache_dir=False)


def test_waterbirds_empty_split(tmp_path):
    root = write_waterbirds(tmp_path / "w", rows=ROWS[:5])
    with pytest.raises(ConfigError, match="no images for split 'val'"):
        load_waterbirds("val", root=root, cache_dir=False)


def test_waterbirds_missing_and_corrupt_images(birds):
    (birds / ROWS[1][0]).unlink()
    with pytest.raises(DataNotFoundError, match="a2.jpg"):
        load_waterbirds("train", root=birds, cache_dir=False)
    (birds / ROWS[6][0]).write_bytes(b"this is not a JPEG")
    with pytest.raises(CorruptDataError, match="cannot decode Waterbirds image .*s4.jpg"):
        load_waterbirds("test", root=birds, cache_dir=False)
    good = (birds / ROWS[7][0]).read_bytes()
    (birds / ROWS[7][0]).write_bytes(good[: len(good) // 2])  # truncated JPEG
    (birds / ROWS[6][0]).write_bytes(good)
    with pytest.raises(CorruptDataError, match="a4.jpg"):
        load_waterbirds("test", root=birds, cache_dir=False)


def test_missing_tfds_package_is_a_clear_error(monkeypatch):
    import sys

    from nht_jax.base.errors import ConfigError
    from nht_jax.vision.datasets.tfds_source import tfds_builder

    monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)  # import now raises ImportError
    with pytest.raises(ConfigError, match=r"needs tensorflow-datasets.*pip install -e '\.\[data\]'"):
        tfds_builder("cifar10", None)


def test_waterbirds_preset_runs_on_a_release_folder(birds, tmp_path, monkeypatch):
    from nht_jax.cli import main
    from nht_jax.results.folder import load_results

    monkeypatch.setenv("NHT_JAX_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "wb"
    tiny = [
        "--set",
        f"task.data_dir='{birds}'",
        "--set",
        "task.image_size=16",
        "--set",
        "train.steps=2",
        "--set",
        "train.log_every=1",
        "--set",
        "train.batch_size=2",
        "--set",
        "grid.seed=[0]",
        "--set",
        "grid.weight_decay=[0.1]",
    ]
    assert main(["run", "waterbirds", *tiny, "--out", str(out), "--quiet"]) == 0
    res = load_results(out)
    assert res.num_runs == 1 and res.metrics["worst_group_acc"].shape == (1, 3)
    assert {f"group_acc/{g}" for g in range(4)} <= set(res.metrics)
    assert np.isfinite(res.metrics["norm_sq"]).all()
