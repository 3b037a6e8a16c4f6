"""Domain "arrays": a user's .npz (or directory of .npy files) trains through `nht run`; its seeded split, the
shortcut and group metrics on a planted perfect shortcut, the header-only size, and every check of the file, each a
ConfigError saying what to fix. The datasets are written here: labels from a linear rule on 7 core features, and
one more feature carrying a spurious attribute a (the class it points to) at amplitude ±4."""

import hashlib
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.experiment import build_trainer
from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.domains import arrays
from nht_jax.engine.grid import take
from nht_jax.engine.metrics import VOCABULARY
from nht_jax.training import sweep
from nht_jax.results.folder import load_results

W = np.linspace(-1.0, 1.0, 7) + 0.3  # the linear rule of the labels


def planted(n: int, agree: float, seed: int) -> dict:
    """x (n, 8) float32, y = 1[core · W > 0], a = y with probability `agree` (else the other class), g = 2y + a."""
    rng = np.random.default_rng(seed)
    core = rng.normal(size=(n, 7))
    y = (core @ W > 0).astype(np.int64)
    a = np.where(rng.random(n) < agree, y, 1 - y)
    x = np.concatenate([core, 4.0 * (2 * a - 1)[:, None]], axis=1).astype(np.float32)
    return {"x": x, "y": y, "a": a, "g": 2 * y + a}


def own_split(train: dict, test: dict) -> dict:
    """The arrays of a file with its own split: NAME_train, NAME_test."""
    return {**{f"{k}_train": v for k, v in train.items()}, **{f"{k}_test": v for k, v in test.items()}}


def shortcut_file(tmp_path, **replace) -> str:
    """A .npz with its own split: the attribute agrees with the label on every training row (a perfect shortcut)
    and on half the test rows."""
    data = own_split(planted(160, 1.0, 0), planted(200, 0.5, 1))
    data.update(replace)
    path = tmp_path / "shortcut.npz"
    np.savez(path, **data)
    return str(path)


def config(path, *overrides, **task):
    """A configuration of the arrays domain on `path`; `overrides` are (section, table) pairs replacing a section."""
    table = {"name": "arrays", "path": str(path), **task}
    return experiment.from_dict(
        {
            "name": "mine",
            "task": table,
            "model": {"name": "mlp", "hidden": [16]},
            "optim": {"name": "adamw"},
            "train": {"steps": 40, "log_every": 20},
            "grid": {"weight_decay": [0.1], "learning_rate": 1e-2, "seed": [0]},
            **dict(overrides),
        }
    )


TOML = """name = "mine"
[task]
name = "arrays"
path = "{path}"
groups = "g"
spurious = "a"
[model]
name = "mlp"
hidden = [16]
[optim]
name = "adamw"
[train]
steps = 60
log_every = 20
batch_size = 64
[grid]
weight_decay = [0.0, 1.0]
learning_rate = 1e-2
seed = [0]
"""


def test_a_user_npz_trains_through_nht_run_with_the_shortcut_and_group_metrics(tmp_path):
    toml = tmp_path / "mine.toml"
    toml.write_text(TOML.format(path=shortcut_file(tmp_path)))
    assert main(["run", str(toml), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    res = load_results(tmp_path / "out")
    assert res.config.task.path.endswith("shortcut.npz") and list(res.config.grid["weight_decay"]) == [0.0, 1.0]
    final = {name: np.asarray(values)[:, -1] for name, values in res.metrics.items()}
    assert {
        "aligned_acc",
        "conflicting_acc",
        "conflicting_reliance",
        "worst_group_acc",
        "weighted_avg_acc",
        *(f"group_acc/{g}" for g in range(4)),
    } <= set(final)
    assert np.all(final["train_acc"] == 1.0)
    # the planted shortcut is taken: right where the attribute agrees, wrong (and following it) where it does not
    assert np.all(final["aligned_acc"] - final["conflicting_acc"] > 0.5)
    assert np.all(final["conflicting_reliance"] > 0.5)
    # the two code paths agree: aligned rows are groups 0 and 3, conflicting rows groups 1 and 2
    g = planted(200, 0.5, 1)["g"]
    counts = np.bincount(g, minlength=4)
    group = np.stack([final[f"group_acc/{k}"] for k in range(4)])
    aligned, conflicting = np.array([1, 0, 0, 1]), np.array([0, 1, 1, 0])
    np.testing.assert_allclose(final["aligned_acc"], (aligned * counts) @ group / (aligned @ counts), rtol=1e-6)
    np.testing.assert_allclose(
        final["conflicting_acc"], (conflicting * counts) @ group / (conflicting @ counts), rtol=1e-6
    )
    np.testing.assert_allclose(final["test_acc"], counts @ group / counts.sum(), rtol=1e-6)
    np.testing.assert_array_equal(final["worst_group_acc"], group.min(axis=0))
    # training rows fall only in groups 0 and 3 (a = y), so the weighted average is theirs alone
    train_counts = np.bincount(planted(160, 1.0, 0)["g"], minlength=4)
    assert train_counts[1] == train_counts[2] == 0
    np.testing.assert_allclose(final["weighted_avg_acc"], train_counts @ group / 160, rtol=1e-6)
    # λ is a grid axis like anywhere: the decayed run ends at a smaller norm
    assert final["norm_sq"][1] < final["norm_sq"][0]
    assert {"final_aligned_acc", "final_worst_group_acc"} <= set(res.summary[0])


def test_a_directory_of_npy_files_with_our_seeded_split_learns_the_rule(tmp_path):
    data = planted(300, 0.5, 2)
    folder = tmp_path / "mine"
    folder.mkdir()
    np.save(folder / "inputs.npy", data["x"][:, :7])  # the core features only
    np.save(folder / "labels.npy", data["y"].astype(np.uint8))
    cfg = config(
        folder,
        ("train", {"steps": 150, "log_every": 150}),
        inputs="inputs",
        labels="labels",
        train_fraction=0.75,
        split_seed=3,
    )
    loaded = cfg.domain.load_data(cfg)
    order = np.random.default_rng(3).permutation(300)
    train_rows, test_rows = np.sort(order[:225]), np.sort(order[225:])
    np.testing.assert_array_equal(loaded.train.x, data["x"][train_rows, :7])
    np.testing.assert_array_equal(loaded.test.y, data["y"][test_rows])
    assert loaded.train.x.dtype == np.float32 and loaded.train.y.dtype == np.int32 and loaded.num_classes == 2
    assert loaded.train.groups is None and loaded.num_groups == 0
    other = cfg.domain.load_data(config(folder, inputs="inputs", labels="labels", train_fraction=0.75, split_seed=4))
    assert not np.array_equal(other.test.y, loaded.test.y) or not np.array_equal(other.test.x, loaded.test.x)
    trainer = build_trainer(cfg, loaded)
    _, metrics = jax.jit(trainer.train)(take(cfg.runs(), 0))
    assert float(metrics["test_acc"][-1]) > 0.9 and float(metrics["test_acc"][0]) < 0.8
    assert cfg.domain.recorded(cfg) == {"train_loss", "train_acc", "test_loss", "test_acc"}
    assert set(cfg.domain.summary(cfg)) == {"test_acc", "test_loss"}


def test_minibatches_are_drawn_from_the_training_rows_and_the_input_scale_applies(tmp_path):
    """(The minibatch steps themselves train in the `nht run` test above: batch_size = 64 of 160 rows.)"""
    cfg = config(shortcut_file(tmp_path), ("train", {"steps": 4, "log_every": 2, "batch_size": 32}), input_scale=0.5)
    data = cfg.domain.load_data(cfg)
    np.testing.assert_array_equal(data.train.x, planted(160, 1.0, 0)["x"] * np.float32(0.5))
    state = jax.jit(build_trainer(cfg, data).init)(take(cfg.runs(), 0))
    assert state.train_index.tolist() == list(range(160))
    index, weight = jax.jit(lambda s: arrays.minibatch(s, 32))(state)
    assert index.shape == (32,) and len(set(np.asarray(index).tolist())) == 32 and float(weight.sum()) == 32


def declared(name: str, meanings: dict) -> bool:
    return name in meanings or any(
        k.endswith("/<layer>")
        and name.startswith(k[: -len("<layer>")])
        or k.endswith("/<g>")
        and name.startswith(k[: -len("<g>")])
        for k in meanings
    )


def traced_metrics(cfg):
    """The metric shapes one run records (traced, not compiled)."""
    trainer = build_trainer(cfg)
    hparams = take(cfg.runs(), 0)
    return jax.eval_shape(lambda hp: trainer.evaluate(trainer.init(hp), hp), hparams)


@pytest.mark.parametrize("case", ["mlp-groups-spurious-temperature", "cnn-images", "module-from-outside"])
def test_recorded_metrics_are_declared_and_as_announced(tmp_path, monkeypatch, case):
    if case == "mlp-groups-spurious-temperature":
        cfg = config(shortcut_file(tmp_path), ("grid", {"temperature": [1.0, 2.0]}), groups="g", spurious="a")
    else:
        rng = np.random.default_rng(0)
        images = rng.integers(0, 256, size=(24, 16, 8), dtype=np.uint8)  # (n, H, W): one channel added
        np.savez(tmp_path / "images.npz", x=images, y=rng.integers(0, 3, size=24))
        if case == "cnn-images":
            model = {"name": "simple_cnn"}
        else:  # a Flax module from outside the package, found by its import path
            (tmp_path / "my_models.py").write_text(
                "import flax.linen as nn\n"
                "class Net(nn.Module):\n"
                "    num_classes: int\n"
                "    width: int = 8\n"
                "    @nn.compact\n"
                "    def __call__(self, x):\n"
                "        assert x.shape[1:] == (16, 8), x.shape\n"
                "        h = nn.relu(nn.Dense(self.width)(x.reshape(x.shape[0], -1)))\n"
                "        return nn.Dense(self.num_classes, name='head')(h)\n"
            )
            monkeypatch.syspath_prepend(str(tmp_path))
            model = {"name": "my_models:Net", "width": 4}
        cfg = config(tmp_path / "images.npz", ("model", model), input_scale=1 / 255)
    metrics = traced_metrics(cfg)
    meanings = {**VOCABULARY, **cfg.domain.metrics}
    assert all(declared(name, meanings) for name in metrics), [n for n in metrics if not declared(n, meanings)]
    assert cfg.domain.recorded(cfg) <= set(metrics) and set(cfg.domain.summary(cfg)) <= set(metrics)
    assert all(m.shape == () for m in metrics.values())
    if case == "mlp-groups-spurious-temperature":
        assert {"effective_logit_scale", "group_acc/3", "conflicting_reliance"} <= set(metrics)
    sys.modules.pop("my_models", None)


def test_the_size_comes_from_the_headers_and_too_large_data_is_refused_before_it_is_built(
    tmp_path, monkeypatch, advances
):
    cfg = config(shortcut_file(tmp_path), groups="g", spurious="a")
    monkeypatch.setattr(arrays, "read_array", lambda *a: pytest.fail("data_bytes loaded an array"))
    # float32 inputs (8 features) and int32 labels, groups and attribute, 160 + 200 rows
    assert arrays.data_bytes(cfg) == 360 * (8 * 4 + 3 * 4)
    calls = advances()
    small = experiment.from_dict({**experiment.to_dict(cfg), "execution": {"memory_cap_gib": 1e-5}})
    with pytest.raises(ConfigError, match="cannot fit.*the data"):
        sweep.run_sweep(small, tmp_path / "out", progress=False)
    assert calls.calls == [] and not (tmp_path / "out").exists()


def test_the_configuration_can_pin_the_data_by_its_sha256(tmp_path):
    path = shortcut_file(tmp_path)
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    assert config(path, sha256=digest).domain.load_data(config(path, sha256=digest)).num_classes == 2
    wrong = config(path, sha256="0" * 64)
    with pytest.raises(ConfigError, match=f"hashes to '{digest}'"):
        wrong.domain.load_data(wrong)
    assert experiment.digest(config(path, sha256=digest)) != experiment.digest(config(path))


def test_grid_width_sweeps_the_mlp_and_is_refused_for_the_cnn(tmp_path):
    path = shortcut_file(tmp_path)
    cfg = config(path, ("grid", {"weight_decay": [0.1], "seed": [0], "width": [8, 32]}))
    assert [sub.model.hidden for _, sub in cfg.buckets()] == [(8,), (32,)]
    with pytest.raises(ConfigError, match="model.hidden"):
        config(path, ("grid", {"seed": [0], "width": [8, 32]}), ("model", {"name": "simple_cnn"}))


# ----------------------------------------------------------------------------- every check of the file


def refused(cfg, match):
    """The ConfigError of loading cfg's data (before any training), its message matching `match`."""
    with pytest.raises(ConfigError, match=match) as error:
        cfg.domain.load_data(cfg)
    return str(error.value)


def write_npz(tmp_path, **data) -> str:
    path = tmp_path / "data.npz"
    np.savez(path, **data)
    return str(path)


GOOD = planted(40, 0.5, 5)


def test_file_checks(tmp_path):
    refused(config(""), "task.path is empty")
    refused(config(tmp_path / "missing.npz"), "file not found")
    np.save(tmp_path / "x.npy", GOOD["x"])
    refused(config(tmp_path / "x.npy"), "is one .npy file")
    (tmp_path / "text.npz").write_text("not an archive")
    refused(config(tmp_path / "text.npz"), "is not a .npz archive")
    (tmp_path / "empty").mkdir()
    refused(config(tmp_path / "empty"), "directory without .npy files")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "x.npy").write_bytes(b"garbage that is no array")
    refused(config(tmp_path / "broken"), "is not a .npy array")


def test_array_checks_from_the_headers(tmp_path):
    x, y = GOOD["x"], GOOD["y"]
    message = refused(config(write_npz(tmp_path, x=x, labels=y)), "holds no array 'y'")
    assert "labels, x" in message and "task.labels" in message
    refused(config(write_npz(tmp_path, x=x, y=y), spurious="a"), "holds no array 'a' .task.spurious")
    refused(config(shortcut_file(tmp_path), groups="groups"), "holds no array 'groups_train'.*NAME_train")
    refused(config(write_npz(tmp_path, x=x, y=y.astype(np.float64))), "dtype float64; labels must be integers")
    refused(config(write_npz(tmp_path, x=x.astype(str), y=y)), "inputs must be integers or floating point")
    refused(config(write_npz(tmp_path, x=x.astype(object), y=y)), "dtype object")  # never unpickled
    refused(config(write_npz(tmp_path, x=x, y=y, g=y.astype(bool)), groups="g"), "groups must be integers")
    refused(config(write_npz(tmp_path, x=x, y=y[:, None])), r"shape \(40, 1\).*ravel")
    refused(config(write_npz(tmp_path, x=x[:, 0], y=y)), "for one feature")
    refused(config(write_npz(tmp_path, x=x, y=y[:-1])), "length mismatch: array 'y'.*39 rows.*40")
    refused(config(write_npz(tmp_path, x=x[:0], y=y[:0])), "has no rows")
    refused(
        config(shortcut_file(tmp_path, x_test=np.zeros((5, 3), np.float32), y_test=np.zeros(5, int))),
        "one example shape",
    )
    refused(config(write_npz(tmp_path, x=x, y=y, x_train=x, y_train=y)), "cannot tell")
    refused(config(write_npz(tmp_path, x=x[:3], y=y[:3]), train_fraction=0.9), "at least one")
    refused(config(write_npz(tmp_path, x=x, y=y), split="file"), "holds no array 'x_train'")
    cnn = ("model", {"name": "simple_cnn"})
    refused(config(write_npz(tmp_path, x=x, y=y), cnn), "takes images")
    refused(config(write_npz(tmp_path, x=np.zeros((40, 12, 16, 3)), y=y), cnn), "multiples of 8.*16×16")


def test_value_checks_once_loaded(tmp_path):
    x, y = GOOD["x"], GOOD["y"]
    bad_x = x.copy()
    bad_x[3, 2] = np.nan
    refused(config(write_npz(tmp_path, x=bad_x, y=y)), "1 values that are NaN or infinite.*row 3")
    refused(config(write_npz(tmp_path, x=np.full_like(x, 1e30), y=y), input_scale=1e10), "NaN or infinite")
    refused(config(write_npz(tmp_path, x=x, y=np.where(np.arange(40) == 7, -1, y))), r"-1 in row 7, outside ≥ 0")
    refused(config(write_npz(tmp_path, x=x, y=y + 1), num_classes=2), r"labels up to 2, but task.num_classes = 2")
    refused(config(write_npz(tmp_path, x=x, y=np.zeros(40, int))), "one class only")
    refused(config(write_npz(tmp_path, x=x, y=y, a=y + 2), spurious="a"), r"outside \[0, 2\).*class it points to")
    refused(config(write_npz(tmp_path, x=x, y=y, g=y - 1), groups="g"), "group ids")


def test_labels_at_or_above_num_classes_stop_nht_run_before_training(tmp_path, capsys):
    """Issue 29 item 9: one line naming the largest label and task.num_classes, exit code 2, nothing trained."""
    rows = planted(40, 0.5, 5)
    toml = tmp_path / "mine.toml"
    toml.write_text(
        TOML.format(path=write_npz(tmp_path, x=rows["x"], y=rows["y"] + 3 * (rows["y"] == 1))).replace(
            'groups = "g"\nspurious = "a"\n', "num_classes = 3\n"
        )
    )
    assert main(["run", str(toml), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "(task.labels) holds labels up to 4, but task.num_classes = 3" in err and "task.num_classes = 5" in err
    assert not (tmp_path / "out" / "trajectories.npz").exists()


@pytest.mark.parametrize(
    "task, match",
    [
        ({"train_fraction": 1.0}, "train_fraction must lie strictly between 0 and 1"),
        ({"num_classes": 1}, "num_classes must be 0"),
        ({"input_scale": 0.0}, "input_scale must be a positive number"),
        ({"sha256": "abc"}, "64 hexadecimal digits"),
        ({"groups": "y"}, "must name different arrays"),
        ({"labels": ""}, "cannot be empty"),
    ],
)
def test_settings_checked_without_the_file(task, match):
    with pytest.raises(ConfigError, match=match):
        config("", **task)


def test_validation_never_opens_the_file():
    """A configuration (a results folder's config.toml) loads without its data; the data is read before training."""
    cfg = config("/nowhere/data.npz", groups="g", spurious="a")
    assert cfg.domain.recorded(cfg) >= {"aligned_acc", "worst_group_acc"}
    with pytest.raises(ConfigError, match="record_grad_noise"):
        config("", ("train", {"record_grad_noise": True}))
