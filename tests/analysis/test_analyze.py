"""`nht analyze` on real results directories: the toy regression domain (known answers) and a tiny grokking
sweep (mostly "not enough data", which must be said, not crash)."""

import csv

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.analysis.analyze import options_from
from nht_jax.training.sweep import run_sweep

OUTPUTS = (
    "analysis.md",
    "predictions.csv",
    "delay_fits.csv",
    "boundaries.csv",
    "separation.csv",
    "layer_order.csv",
    "delay_predictor.csv",
    "phase_boundaries.png",
    "delay_fits.png",
)


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_analyze_a_toy_sweep_finds_its_closed_form_answers(tmp_path, capsys):
    lams = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 0.1]
    config = experiment.load("toy-linear", ["train.steps=4000", "grid.learning_rate=0.3", f"grid.weight_decay={lams}"])
    run_sweep(config, tmp_path, progress=False)
    assert main(["analyze", str(tmp_path), "--set", "fits.n_bootstrap=200"]) == 0
    assert "P1" in capsys.readouterr().out
    assert all((tmp_path / name).exists() for name in OUTPUTS)
    verdicts = {row["id"]: row["verdict"] for row in read(tmp_path / "predictions.csv")}
    assert verdicts == {"P1": "✓", "P2": "✓", "P3": "n.a.", "P4": "n.a.", "P5": verdicts["P5"], "P6": "✓"}
    power = [r for r in read(tmp_path / "delay_fits.csv") if r["fit"] == "power_law_lambda"][0]
    assert float(power["nu"]) == pytest.approx(1.0, abs=0.02)  # T = log 100 / (−2 log(1 − 2ηλ)) ≈ 1.15/(ηλ)
    boundaries = {r["boundary"]: r for r in read(tmp_path / "boundaries.csv") if r["axis"] == "weight_decay"}
    exact = (1 - 0.01 ** (1 / 8000)) / 2 / 0.3  # the λ whose transition takes exactly the 4,000-step budget
    weak = boundaries["weak→intermediate"]
    assert float(weak["lo"]) <= exact <= float(weak["hi"]) and weak["status"] == "ok"
    strong = boundaries["intermediate→strong"]
    assert float(strong["lo"]) <= 0.029 <= float(strong["hi"])  # L(θ_λ)/L(0) = 0.01 at λ ≈ 0.029


def test_analyze_a_tiny_grokking_sweep_says_what_it_cannot_do(tmp_path, tiny_config):
    run_sweep(tiny_config(), tmp_path, progress=False)
    assert main(["analyze", str(tmp_path), "--set", "fits.n_bootstrap=50"]) == 0
    verdicts = read(tmp_path / "predictions.csv")
    assert [v["id"] for v in verdicts] == ["P1", "P2", "P3", "P4", "P5", "P6"]
    assert all(v["rule"] for v in verdicts)
    assert np.all([v["verdict"] in ("✓", "✗", "n.a.") for v in verdicts])
    assert "not enough data" in (tmp_path / "analysis.md").read_text()


def test_analysis_options_are_checked():
    assert options_from(["fits.n_bootstrap=10"]).fits.n_bootstrap == 10
    with pytest.raises(ConfigError, match="n_bootstrp|n_bootstrap"):
        options_from(["fits.n_bootstrp=10"])
    with pytest.raises(ConfigError):
        options_from(["fitz.n_bootstrap=10"])
    with pytest.raises(ConfigError, match="confidence"):
        options_from(["fits.confidence=2"])


@pytest.mark.parametrize(
    "preset, overrides",
    [
        (
            "sparse-parity",
            [
                "train.steps=20",
                "train.log_every=10",
                "task.parity_samples=64",
                "grid.seed=[0]",
                "grid.weight_decay=[0.01, 1.0]",
            ],
        ),
        ("digits-grokking", ["train.steps=20", "train.log_every=10", "grid.seed=[0]", "grid.init_scale=[1.0]"]),
        ("toy-diagonal", ["train.steps=200", "train.log_every=10", "grid.init_scale=[2.0]"]),
    ],
)
def test_analyze_runs_on_a_tiny_sweep_of_every_other_domain(tmp_path, preset, overrides):
    run_sweep(experiment.load(preset, overrides), tmp_path, progress=False)
    assert main(["analyze", str(tmp_path), "--set", "fits.n_bootstrap=20"]) == 0
    verdicts = read(tmp_path / "predictions.csv")
    assert len(verdicts) == 6 and all(v["rule"] for v in verdicts)
