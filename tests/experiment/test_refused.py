"""Settings refused before training: sizes that cannot fit this machine (before the data is built, and after the
compiled estimate), grid values float32 cannot hold, train splits that leave a side empty. Each refusal is a
ConfigError naming the setting and the fix, raised before any compiled training call (`advances` sees none)."""

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.domains import modular
from nht_jax.engine import memory
from nht_jax.training import sweep


def refused(tmp_path, advances, config, match):
    calls = advances()
    with pytest.raises(experiment.ConfigError, match=match) as error:
        sweep.run_sweep(config, tmp_path / "out", progress=False)
    assert calls.calls == []  # nothing trained
    assert not (tmp_path / "out" / "meta.json").exists()
    return str(error.value)


def test_a_modulus_whose_data_cannot_fit_is_refused_before_the_data_is_built(tmp_path, advances, monkeypatch):
    built = []
    monkeypatch.setattr(modular, "modular_dataset", lambda *a: built.append(a))
    message = refused(tmp_path, advances, experiment.load("tiny", ["task.p=100000"]), "cannot fit")
    assert built == []
    assert "the data 111.76 GiB" in message and "task.p" in message and "execution.memory_cap_gib" in message


def test_a_metrics_history_that_cannot_fit_is_refused(tmp_path, advances):
    config = experiment.load("tiny", ["train.steps=10000000000", "train.log_every=1"])
    message = refused(tmp_path, advances, config, "cannot fit")
    assert "10,000,000,001 logs" in message and "train.log_every" in message and "train.steps" in message


def test_every_runs_history_is_checked_against_the_hosts_ram(tmp_path, advances, monkeypatch):
    # p = 5: data 300 bytes, one run's history 168 (7 logs × 6 metrics × 4): one run fits, the data and 4 runs not
    monkeypatch.setattr(memory, "host_ram", lambda: 900)
    config = experiment.load("tiny", ["task.p=5", "execution.memory_cap_gib=0.001"])
    message = refused(tmp_path, advances, config, "host's RAM")
    assert "all 4 runs" in message and "fewer runs" in message


def test_one_run_over_the_cap_after_the_compiled_estimate_is_refused(tmp_path, advances):
    config = experiment.load("tiny", ["train.steps=50"])
    data = config.domain.load_data(config)
    one = memory.estimate(
        experiment.build_trainer(config, data),
        config.runs(),
        data,
        config.execution,
        config.train.steps // config.train.log_every + 1,
    ).bytes_for(1)
    tight = experiment.load("tiny", ["train.steps=50", f"execution.memory_cap_gib={(one - 1) / memory.GIB!r}"])
    message = refused(tmp_path, advances, tight, "One run of this configuration cannot fit")
    assert "XLA's buffers" in message and "model.hidden" in message
    fits = experiment.load("tiny", [f"execution.memory_cap_gib={one / memory.GIB!r}", "train.steps=50"])
    assert sweep.run_sweep(fits, tmp_path / "fits", progress=False).meta["run_slices"] == 4  # one run per slice


@pytest.mark.parametrize(
    "setting,value",
    [
        ("weight_decay", "[1e-320, 1.0]"),
        ("learning_rate", "1e-50"),
        ("init_scale", "[1e39]"),
        ("weight_decay", "[1.0, 1.00000001]"),
    ],
)
def test_grid_values_float32_cannot_hold_are_refused_at_load(setting, value):
    with pytest.raises(experiment.ConfigError, match=f"grid.{setting} .*float32") as error:
        experiment.load("tiny", [f"grid.{setting}={value}"])
    assert "1.18e-38" in str(error.value) or "further apart" in str(error.value)


def test_zero_weight_decay_and_the_smallest_normal_are_accepted():
    tiny = float(np.finfo(np.float32).tiny)
    assert experiment.load("tiny", [f"grid.weight_decay=[0.0, {tiny!r}]"]).grid["weight_decay"] == (0.0, tiny)


@pytest.mark.parametrize("fraction,train", [(0.0001, 0), (0.9999, 961)])
def test_a_train_fraction_that_empties_a_split_is_refused(fraction, train):
    with pytest.raises(experiment.ConfigError, match=rf"round\({fraction} × 961\) = {train} training examples"):
        experiment.load("tiny", [f"grid.train_fraction={fraction}"])
    assert experiment.load("tiny", ["grid.train_fraction=0.002"]).grid["train_fraction"] == (0.002,)


@pytest.mark.parametrize(
    "preset, module, builder, n",
    [("toy-linear", "toy_linear", "linear_problem", 10), ("toy-diagonal", "toy_diagonal", "sparse_problem", 200000)],
)
def test_a_toy_problem_whose_arrays_cannot_fit_is_refused_before_they_are_built(
    tmp_path, advances, monkeypatch, preset, module, builder, n
):
    import importlib

    domain = importlib.import_module(f"nht_jax.domains.{module}")
    built = []
    monkeypatch.setattr(domain, builder, lambda *a: built.append(a))
    # toy-linear: Q alone is d² float64 = 720 GB; toy-diagonal: X is n·d float64 = 480 GB
    config = experiment.load(preset, [f"task.n={n}", "task.d=300000", "train.steps=10", "train.log_every=10"])
    message = refused(tmp_path, advances, config, "cannot fit")
    assert built == [] and "the data" in message and "task.d" in message
