"""CIFAR-10 and CelebA loaders on TFDS directories written here in the real on-disk format.

The writer below produces exactly what `tfds build <name> --file_format=array_record` leaves on disk
(<data_dir>/<name>/<version>/dataset_info.json, features.json and <name>-<split>.array_record-00000-of-00001
shards of serialized tf.train.Example protos), using only tensorflow_datasets' own NumPy/proto code,
array_record and Pillow — no TensorFlow and no tfds.testing.mock_data. The loaders then read it through
the same `tfds.data_source` call they use on real data.
"""

import io
import os

import numpy as np
import pytest
from PIL import Image

from nht_jax.base.errors import ConfigError
from nht_jax.vision.datasets import DataNotFoundError, load_celeba, load_cifar10, tfds_source

from ..conftest import unless_installed

pytestmark = unless_installed("tensorflow_datasets", extra="data")  # imported by the fixtures that write a dataset


def encode(image: np.ndarray, fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format=fmt, **({"quality": 95} if fmt == "JPEG" else {}))
    return buffer.getvalue()


def write_tfds(data_dir, name: str, splits: dict[str, list[dict]]) -> None:
    """Write already-encoded examples (images as PNG/JPEG bytes) as a prepared ArrayRecord TFDS dataset."""
    import tensorflow_datasets as tfds
    from array_record.python import array_record_module
    from tensorflow_datasets.core import example_serializer, naming
    from tensorflow_datasets.core import splits as splits_lib

    builder = tfds.builder(name, data_dir=str(data_dir), file_format="array_record")
    os.makedirs(builder.data_dir, exist_ok=True)
    serializer = example_serializer.ExampleSerializer(builder.info.features.get_serialized_info())
    infos = []
    for split, examples in splits.items():
        template = naming.ShardedFileTemplate(
            data_dir=builder.data_dir, dataset_name=name, split=split, filetype_suffix="array_record"
        )
        path = template.sharded_filepath(shard_index=0, num_shards=1)
        writer = array_record_module.ArrayRecordWriter(os.fspath(path), "group_size:1")
        for example in examples:
            writer.write(serializer.serialize_example(example))
        writer.close()
        infos.append(
            splits_lib.SplitInfo(
                name=split, shard_lengths=[len(examples)], num_bytes=os.path.getsize(path), filename_template=template
            )
        )
    builder.info.set_splits(splits_lib.SplitDict(infos))
    builder.info.set_file_format("array_record")
    builder.info.write_to_directory(builder.data_dir)


def cifar_examples(rng, split, n):
    images = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
    labels = rng.integers(0, 10, n)
    examples = [
        {"id": f"{split}_{i}".encode(), "image": encode(images[i], "PNG"), "label": int(labels[i])} for i in range(n)
    ]
    return images, labels, examples


@pytest.fixture(scope="module")
def cifar_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("tfds_cifar")
    rng = np.random.default_rng(0)
    truth, splits = {}, {}
    for split, n in (("train", 12), ("test", 5)):
        images, labels, splits[split] = cifar_examples(rng, split, n)
        truth[split] = (images, labels)
    write_tfds(root, "cifar10", splits)
    return root, truth


def test_cifar10_reads_exact_pixels_and_labels(cifar_dir, tmp_path):
    root, truth = cifar_dir
    for split in ("train", "test"):
        data = load_cifar10(split, data_dir=root, cache_dir=tmp_path)
        np.testing.assert_array_equal(data.images, truth[split][0])  # PNG is lossless
        np.testing.assert_array_equal(data.labels, truth[split][1])
        assert data.images.dtype == np.uint8 and data.labels.dtype == np.int32
        assert data.split == split and data.num_classes == 10 and data.groups is None
    resized = load_cifar10("test", data_dir=root, size=16, cache_dir=False)
    assert resized.images.shape == (5, 16, 16, 3)


def test_cifar10_second_load_is_a_cache_hit(cifar_dir, tmp_path, monkeypatch):
    root, truth = cifar_dir
    first = load_cifar10("train", data_dir=root, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("cifar10-train-*.npz"))) == 1

    def no_reading(*args, **kwargs):
        raise AssertionError("the TFDS records were read again")

    monkeypatch.setattr(tfds_source, "iterate_records", no_reading)
    second = load_cifar10("train", data_dir=root, cache_dir=tmp_path)
    np.testing.assert_array_equal(second.images, first.images)
    np.testing.assert_array_equal(second.labels, truth["train"][1])
    with pytest.raises(AssertionError, match="read again"):  # another size is another cache entry
        load_cifar10("train", data_dir=root, size=8, cache_dir=tmp_path)


def test_cifar10_missing_data_names_directory_and_remedy(tmp_path):
    with pytest.raises(DataNotFoundError) as info:
        load_cifar10("train", data_dir=tmp_path / "empty", cache_dir=False)
    message = str(info.value)
    assert str(tmp_path / "empty" / "cifar10") in message
    assert "tfds build cifar10 --file_format=array_record" in message


def test_cifar10_unknown_split(cifar_dir):
    with pytest.raises(ConfigError, match="split must be one of"):
        load_cifar10("val", data_dir=cifar_dir[0], cache_dir=False)


@pytest.fixture(scope="module")
def celeba_dir(tmp_path_factory):
    import tensorflow_datasets as tfds

    root = tmp_path_factory.mktemp("tfds_celeba")
    builder = tfds.builder("celeb_a", data_dir=str(root))
    names = list(builder.info.features["attributes"].keys())
    landmarks = list(builder.info.features["landmarks"].keys())
    rng = np.random.default_rng(1)
    splits, truth = {}, {}
    for split, n in (("train", 8), ("validation", 3), ("test", 4)):
        smiling = np.arange(n) % 2
        blond = (np.arange(n) // 2) % 2
        examples = []
        for i in range(n):
            attrs = {a: bool(rng.integers(0, 2)) for a in names}
            attrs["Smiling"], attrs["Blond_Hair"] = bool(smiling[i]), bool(blond[i])
            image = np.full((218, 178, 3), 40 * i % 256, np.uint8)
            examples.append(
                {
                    "attributes": attrs,
                    "identity": {"Identity_No": i},
                    "image": encode(image, "JPEG"),
                    "landmarks": {k: 0 for k in landmarks},
                }
            )
        splits[split] = examples
        truth[split] = (smiling, blond)
    write_tfds(root, "celeb_a", splits)
    return root, truth


def test_celeba_labels_attributes_groups_and_size(celeba_dir, tmp_path):
    root, truth = celeba_dir
    data = load_celeba("val", data_dir=root, cache_dir=tmp_path)
    smiling, blond = truth["validation"]
    assert data.images.shape == (3, 64, 64, 3) and data.split == "val" and data.num_classes == 2
    np.testing.assert_array_equal(data.labels, smiling)
    np.testing.assert_array_equal(data.attributes, blond)
    np.testing.assert_array_equal(data.groups, 2 * smiling + blond)
    # a flat gray JPEG stays (almost) flat after crop and resize
    assert abs(int(data.images[1].mean()) - 40) <= 2
    swapped = load_celeba("train", target="Blond_Hair", attribute="Smiling", data_dir=root, size=32, cache_dir=tmp_path)
    np.testing.assert_array_equal(swapped.labels, truth["train"][1])
    np.testing.assert_array_equal(swapped.groups, 2 * truth["train"][1] + truth["train"][0])
    assert swapped.images.shape == (8, 32, 32, 3)
    assert len(list(tmp_path.glob("celeb_a-*.npz"))) == 2


def test_celeba_unknown_attribute_lists_valid_names(celeba_dir):
    with pytest.raises(ConfigError) as info:
        load_celeba("train", target="smiling", data_dir=celeba_dir[0], cache_dir=False)
    message = str(info.value)
    assert "Did you mean 'Smiling'" in message and "Blond_Hair" in message and "Wearing_Necktie" in message
    with pytest.raises(ConfigError, match="must differ"):
        load_celeba("train", target="Smiling", attribute="Smiling", data_dir=celeba_dir[0], cache_dir=False)


def test_celeba_missing_data(tmp_path):
    with pytest.raises(DataNotFoundError, match="tfds build celeb_a"):
        load_celeba("test", data_dir=tmp_path, cache_dir=False)


def test_other_version_folder_is_reported(tmp_path):
    (tmp_path / "cifar10" / "1.0.0").mkdir(parents=True)
    with pytest.raises(DataNotFoundError, match=r"found only version folder\(s\) \['1.0.0'\]"):
        load_cifar10("train", data_dir=tmp_path, cache_dir=False)


def run_preset(preset, data_dir, out, *extra):
    from nht_jax.cli import main

    # 16×16 images and XLA convolutions (which compile twice as fast on CPU as the im2col default): the run
    # compiles in a fraction of the time of the preset's own size
    tiny = [
        "--set",
        f"task.data_dir='{data_dir}'",
        "--set",
        "task.image_size=16",
        "--set",
        "train.steps=2",
        "--set",
        "train.log_every=1",
        "--set",
        "train.batch_size=4",
        "--set",
        "grid.seed=[0]",
    ]
    return main(["run", preset, *tiny, *extra, "--out", str(out), "--quiet"])


def test_cifar10_border_preset_runs_on_a_prepared_copy(cifar_dir, tmp_path, monkeypatch):
    from nht_jax.results.folder import load_results

    monkeypatch.setenv("NHT_JAX_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "cifar"
    assert (
        run_preset(
            "cifar10-border", cifar_dir[0], out, "--set", "grid.weight_decay=[0.01]", "--set", "grid.rho=[0.5, 1.0]"
        )
        == 0
    )
    res = load_results(out)
    assert res.num_runs == 2 and res.metrics["shortcut_reliance"].shape == (2, 3)
    assert res.config.train.lr_schedule == "cosine" and (out / "phase_lambda_rho.png").exists()
    assert np.isfinite(res.metrics["norm_sq"]).all()


def test_celeba_preset_runs_on_a_prepared_copy_with_group_metrics(celeba_dir, tmp_path, monkeypatch):
    from nht_jax.results.folder import load_results

    monkeypatch.setenv("NHT_JAX_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "celeba"
    assert run_preset("celeba", celeba_dir[0], out, "--set", "grid.weight_decay=[0.1]") == 0
    res = load_results(out)
    assert {"worst_group_acc", "weighted_avg_acc", "group_acc/0", "group_acc/3"} <= set(res.metrics)
    groups = np.stack([res.metrics[f"group_acc/{g}"][0] for g in range(4)])
    np.testing.assert_allclose(res.metrics["worst_group_acc"][0], groups.min(axis=0))
    assert "final_worst_group_acc" in res.summary[0]
