"""Results folders: the summary CSV round trip, selecting runs, folders with and without a ρ axis."""

import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.results.folder import load_results, read_summary, write_summary
from nht_jax.training.sweep import run_sweep
from nht_jax.experiment import load


def test_summary_csv_round_trips_nan_booleans_ints_floats_and_text(tmp_path):
    rows = [
        {
            "run": 0,
            "seed": 3,
            "weight_decay": 0.001234567,
            "T_transition": float("nan"),
            "diverged": False,
            "regime": "weak",
            "big": 1.5e12,
        },
        {
            "run": 1,
            "seed": 4,
            "weight_decay": 10.0,
            "T_transition": 250.0,
            "diverged": True,
            "regime": "intermediate",
            "big": np.float32(2.5),
        },
    ]
    write_summary(tmp_path, rows)
    back = read_summary(tmp_path / "summary.csv")
    assert back[0]["run"] == 0 and back[0]["seed"] == 3 and np.isnan(back[0]["T_transition"])
    assert back[0]["diverged"] is False and back[1]["diverged"] is True
    assert back[0]["weight_decay"] == pytest.approx(0.00123457) and back[1]["T_transition"] == 250
    assert back[1]["regime"] == "intermediate" and back[0]["big"] == 1.5e12 and back[1]["big"] == 2.5


def test_a_folder_without_results_says_how_to_make_them(tmp_path):
    with pytest.raises(ConfigError, match="holds no results.*nht run --out"):
        load_results(tmp_path)


@pytest.fixture(scope="module")
def token_results(tmp_path_factory):
    config = load(
        "tiny",
        [
            "train.steps=20",
            "train.log_every=10",
            "model.hidden=[8]",
            "grid.seed=[0, 1]",
            "grid.train_fraction=[0.3, 0.5]",
            "grid.weight_decay=[0.1]",
        ],
    )
    return run_sweep(config, tmp_path_factory.mktemp("res") / "tokens", progress=False)


def test_select_and_as_grid_on_a_folder_without_rho(token_results):
    res = load_results(token_results.path)
    assert "rho" not in res.axes and "rho" not in res.hparams
    assert res.grid_shape == (1, 1, 2, 1, 2)
    assert res.select(seed=1, train_fraction=0.3).tolist() == [2]
    assert res.select(train_fraction=0.5).tolist() == [1, 3]
    grid = res.as_grid("train_acc")
    np.testing.assert_array_equal(grid[0, 0, 1, 0, 0], res.metrics["train_acc"][2])
    with pytest.raises(ConfigError, match="unknown axis 'rho'"):
        res.select(rho=1.0)
    assert [row["train_fraction"] for row in res.summary] == [0.3, 0.5, 0.3, 0.5]
