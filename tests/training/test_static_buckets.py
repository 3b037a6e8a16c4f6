"""Static axes as buckets: `grid.width = [16, 32]` trains one compiled program per width into one results folder,
each bucket's runs the same as the runs trained alone; a kill between or within buckets resumes where it stopped;
undeclared static settings are refused; presets without a static axis keep their digest."""

import hashlib
import json

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.base.presets import list_presets, preset_path
from nht_jax.training import buckets
from nht_jax.results import folder as results
from nht_jax.training import sweep

WIDTHS = [16, 32]


@pytest.fixture(scope="module")
def make(tiny_config):
    """make(grid=…, model=…, **settings): the tiny modular configuration of tests/conftest.py."""
    return tiny_config


def bucketed(make, **overrides):
    return make(grid={"width": WIDTHS}, **overrides)


def alone(make, width, **overrides):
    return make(model={"hidden": [width]}, **overrides)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, make):
    return sweep.run_sweep(bucketed(make), tmp_path_factory.mktemp("buckets") / "out", progress=False)


def test_buckets_are_the_runs_trained_alone(tmp_path, reference, make):
    config = bucketed(make)
    assert list(config.grid)[0] == "width" and [v for v, _ in config.buckets()] == [{"width": 16}, {"width": 32}]
    assert reference.hparams["width"].tolist() == [16] * 4 + [32] * 4
    assert reference.axes["width"].tolist() == WIDTHS
    assert [row["width"] for row in reference.summary] == [16] * 4 + [32] * 4
    assert reference.meta["runs"] == 8 and len(reference.meta["buckets"]) == 2
    for i, width in enumerate(WIDTHS):
        ((values, sub),) = [b for b in config.buckets() if b[0]["width"] == width]
        assert experiment.digest(sub) == experiment.digest(alone(make, width))  # the bucket is the config alone
        single = sweep.run_sweep(alone(make, width), tmp_path / str(width), progress=False)
        block = slice(4 * i, 4 * i + 4)
        for axis, values in single.hparams.items():
            np.testing.assert_array_equal(reference.hparams[axis][block], values, err_msg=axis)
        assert set(single.metrics) == set(reference.metrics)
        for name, values in single.metrics.items():
            np.testing.assert_array_equal(reference.metrics[name][block], values, err_msg=name)
    assert reference.as_grid("norm_sq").shape[:4] == (2, 2, 1, 2)  # width × λ × η × seed, …
    np.testing.assert_array_equal(reference.as_grid("norm_sq")[1].reshape(4, -1), reference.metrics["norm_sq"][4:])


def test_a_kill_between_buckets_resumes_at_the_second(tmp_path, monkeypatch, capsys, reference, make, advances):
    out = tmp_path / "killed"
    advances(die_on=3)  # 2 calls of 2 logs per bucket: call 3 is bucket 2's first
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(bucketed(make), out, progress=False)
    monkeypatch.undo()
    saved = results.read_checkpoint(out / "checkpoint.npz", reference.meta["config_digest"])
    assert saved.bucket == 1 and not saved.in_progress and saved.bucket_metrics["norm_sq"].shape == (4, 5)
    assert "bucket 1/2 (width = 16) done" in (out / "progress.log").read_text()
    counter = advances()
    resumed = sweep.run_sweep(bucketed(make), out, progress=False)
    assert counter.logs == 4  # bucket 2 only
    assert "in bucket 2/2 (width = 32)" in capsys.readouterr().out
    for name, values in reference.metrics.items():
        np.testing.assert_array_equal(resumed.metrics[name], values, err_msg=name)
    assert resumed.meta["buckets_done_before_resume"] == 1 and not (out / "checkpoint.npz").exists()


def test_a_kill_within_a_bucket_resumes_at_its_checkpoint(tmp_path, monkeypatch, reference, make, advances):
    out = tmp_path / "killed"
    advances(die_on=4)  # bucket 2's second call, after a checkpoint at its step 20
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(bucketed(make, checkpoint_every_s=0), out, progress=False)
    monkeypatch.undo()
    saved = results.read_checkpoint(out / "checkpoint.npz", reference.meta["config_digest"])
    assert saved.bucket == 1 and saved.in_progress and saved.logs_done == 2
    counter = advances()
    resumed = sweep.run_sweep(bucketed(make), out, progress=False)
    assert counter.logs == 2
    for name, values in reference.metrics.items():
        np.testing.assert_array_equal(resumed.metrics[name], values, err_msg=name)


def test_metric_names_that_differ_between_buckets_are_merged_with_nan():
    a = {"x": np.ones((2, 3), np.float32), "only_a": np.ones((2, 3), np.float32)}
    b = {"x": np.zeros((1, 3), np.float32), "only_b": np.full((1, 3), 2.0, np.float32)}
    merged = buckets.merge_metrics([({}, 0), (a, 2), (b, 1)])
    assert set(merged) == {"x", "only_a", "only_b"} and merged["x"].tolist() == [[1] * 3, [1] * 3, [0] * 3]
    assert np.isnan(merged["only_a"][2]).all() and np.isnan(merged["only_b"][:2]).all()
    assert merged["only_b"][2].tolist() == [2.0] * 3


@pytest.mark.parametrize(
    "grid, message",
    [
        ({"depth": [1, 2]}, "not an axis of domain 'modular'.*static axes.*width, p"),
        ({"hidden": [16, 32]}, "static setting model.hidden.*sweep it as grid.width"),
        ({"tokens": ["ab", "abc"]}, "static setting task.tokens.*does not declare it"),
        ({"width": [16, 16]}, "repeats a value|lists 16 more than once"),
        ({"width": [0, 16]}, "integer ≥ 1"),
        ({"width": {"loguniform": [16, 64]}, "samples": 2}, "cannot be drawn at random"),
        ({"width": [16, 32], "zip": [["width", "seed"]]}, "pairs 'width', a static axis"),
    ],
)
def test_undeclared_or_malformed_static_axes_are_refused(grid, message, make):
    with pytest.raises(ConfigError, match=message):
        make(grid=grid)


def test_a_static_axis_the_model_lacks_is_refused(make):
    with pytest.raises(ConfigError, match="grid.width sweeps model.hidden, which \\[model\\] 'transformer'"):
        make(grid={"width": [16]}, model={"name": "transformer"})
    with pytest.raises(ConfigError, match="each of its buckets has its own trainer"):
        experiment.build_trainer(bucketed(make))


# (preset file's sha256[:16], digest) recorded before static axes existed, each digest checked to be the same under
# the code without them: a grid without a static axis must keep its digest (its results folders and checkpoints
# stay valid). A preset whose file changed since is skipped; a changed default of a setting changes digests on
# purpose: then record the new values.
IMAGES_CHANGED = (
    "2026-12-06 (issue 45): the image domain gained task.train_size, which enters config.toml and the "
    "digest, and the aligned_acc metric, which every border run now records: a folder of these presets "
    "made before holds other results, so its digest differs on purpose"
)
PRESET_DIGESTS = {
    "border-digits": (
        "aef744475e48b330",
        "970e3ee941220ba2",
    ),  # recorded again 2026-12-06: task.train_size joined the image domain (issue 45)
    "celeba": ("f074a33b154bc446", "6c364f72d6b2ec0e"),  # recorded again 2026-12-06 (see IMAGES_CHANGED)
    "cifar10-border": ("04b774e033a0d846", "6f096f2a13cdede9"),  # recorded again 2026-12-06
    "cifar10-resnet18": ("97ca2b0e9e7c480b", "333d7964ad73bdc6"),  # recorded again 2026-12-06
    "clamp-mlp": ("095ecba3d90a261e", "0ac6882e7a73a7ce"),
    "community-p113": ("5e8a0722c2f9dc4f", "465917881be88a91"),
    "companion-exact": (
        "ef10946916f29563",
        "45bbef65bc52a6ac",
    ),  # file recorded again 2026-12-06: a comment names [stop], the digest unchanged
    "companion-exact-cpu": (
        "102fa5948b98adbf",
        "2986f42ecac1c5ae",
    ),  # file recorded again 2026-12-06: its scales spell the stop rule as [stop]'s keys, the digests unchanged
    "companion-transformer": ("091041b5cd994103", "54348a59d7279ca8"),
    "classic-default": ("d3fe4a840df2e172", "e1d893865223d248"),
    "default": ("91d58712f2541aec", "e71ec6602c2664c9"),  # recorded again 2026-12-02: the grid changed on purpose
    "digits-grokking": (
        "07b55a7eeaa99254",
        "a433469c73130a3d",
    ),  # file recorded again 2026-12-06: its [scale.reproduce] at 5 seeds (issue 44), the digest unchanged
    "phase-lambda-eta": (
        "a7cc2f9c04df3c2a",
        "5684bee1ad163446",
    ),  # file recorded again 2026-12-06: its [scale.reproduce] at 5 seeds (issue 44), the digest unchanged
    "sparse-parity": (
        "256010d4a743c655",
        "78c07a50e81fdd54",
    ),  # file recorded again 2026-12-06: comments only, the digest unchanged
    "sparse-parity-groks": (
        "26242d7544c334f6",
        "10144f5828017e3b",
    ),  # file recorded again 2026-12-06: comments only, the digest unchanged
    "tiny": ("6ed454fb8b784472", "3f5da2fb3b19f230"),
    "toy-diagonal": ("d47898a7456e5553", "e7ca26a5472165de"),
    "toy-linear": (
        "20dcf47ff0a29cd9",
        "504bdb64d0c19ef8",
    ),  # file recorded again 2026-12-06: comments only, the digest unchanged
    "waterbirds": ("76f96cf321a6be91", "d441f3e70a136dc0"),  # recorded again 2026-12-06
}


@pytest.mark.parametrize("name", sorted(PRESET_DIGESTS))
def test_presets_without_static_axes_keep_their_digest(name):
    if name not in list_presets():
        pytest.skip(f"preset {name} no longer shipped")
    file_hash, expected = PRESET_DIGESTS[name]
    if hashlib.sha256(preset_path(name).read_bytes()).hexdigest()[:16] != file_hash:
        pytest.skip(f"preset {name} was edited since its digest was recorded")
    config = experiment.load(name)
    assert not config.static and not any(axis in config.grid for axis in config.domain.static_axes)
    assert experiment.digest(config) == expected


def test_a_static_axis_changes_the_digest_and_round_trips(make):
    config = bucketed(make)
    assert experiment.digest(config) not in {experiment.digest(alone(make, w)) for w in WIDTHS}
    assert experiment.digest(config) != experiment.digest(make(grid={"width": [16, 64]}))
    again = experiment.from_dict(json.loads(json.dumps(experiment.to_dict(config))))
    assert again == config and experiment.digest(again) == experiment.digest(config)


def test_the_width_sweep_preset_loads():
    config = experiment.load("width-sweep")
    assert config.grid["width"] == (16, 32, 64, 128) and len(config.buckets()) == 4
    assert len(config.grid["weight_decay"]) >= 2 and len(config.grid["seed"]) == 2


def test_shards_of_a_bucketed_grid_merge_into_the_same_folder(tmp_path, monkeypatch, reference, make, advances):
    """3 shards of 2 buckets (`nht_jax.training.shards`): the first bucket whole, the second cut in two blocks of 2
    runs, the first of them killed after its first call and resumed from its own checkpoint; merged, every array
    and summary.csv are the unsharded sweep's, bit for bit (strategy map)."""
    from nht_jax.training import merge, shards

    config = bucketed(make)
    assert shards.partition(shards.bucket_sizes(config), 3) == [[(0, 0, 4)], [(1, 0, 2)], [(1, 2, 4)]]
    out = tmp_path / "out"
    shards.run_shard(config, out, shards.Shard(0, 3), progress=False)
    advances(die_on=2)  # shard 1's second call, after a checkpoint at its step 20
    with pytest.raises(KeyboardInterrupt):
        shards.run_shard(bucketed(make, checkpoint_every_s=0), out, shards.Shard(1, 3), progress=False)
    monkeypatch.undo()
    digest = shards.shard_digest(reference.meta["config_digest"], shards.Shard(1, 3))
    saved = results.read_checkpoint(out / "shards" / "1-of-3" / "checkpoint.npz", digest)
    assert saved.in_progress and saved.logs_done == 2
    counter = advances()
    shards.run_shard(config, out, shards.Shard(1, 3), progress=False)
    assert counter.logs == 2  # resumed at step 20
    shards.run_shard(config, out, shards.Shard(2, 3), progress=False)
    assert json.loads((out / "shards" / "2-of-3" / "meta.json").read_text())["shard"]["runs"] == [6, 8]
    merge.merge(merge.shard_folders(out)[0], out)
    merged = results.load_results(out)
    np.testing.assert_array_equal(merged.steps, reference.steps)
    assert merged.stopped_step is None and reference.stopped_step is None
    assert list(merged.metrics) == list(reference.metrics)
    for name, values in reference.metrics.items():
        assert merged.metrics[name].dtype == values.dtype and merged.metrics[name].tobytes() == values.tobytes(), name
    for axis, values in reference.hparams.items():
        np.testing.assert_array_equal(merged.hparams[axis], values, err_msg=axis)
    assert (out / "summary.csv").read_bytes() == (reference.path / "summary.csv").read_bytes()
    assert [b["values"] for b in merged.meta["buckets"]] == [{"width": 16}, {"width": 32}, {"width": 32}]
    assert merged.meta["buckets_done_before_resume"] == 0
    assert merged.meta["metrics_not_in_every_bucket"] == reference.meta["metrics_not_in_every_bucket"]
