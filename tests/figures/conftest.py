"""Results folders for the figure tests, written from planted trajectories through the sweep's own writers (no
training), and a recorder of every figure saved (`saved`).

regimes_folder: λ ∈ {0.01, 0.1, 1} × seeds {0, 1}: weak (fits at step 200, never transitions), intermediate (fits
at 200, transitions 400 or 700 steps later), strong (never fits). No run is structured or diverged.
interventions_folder: a zipped grid of the real intervention axes clamp_rho (the norm clamp; identity 0) and
temperature (identity 1) × seeds {0, 1, 2}: four clamp arms (ρ = 0.5, 1, 2, 3: delay × 2^ρ), two temperature arms
(τ = 2, 4: delay × τ), and the baseline (delays 100, 200, 400 by seed, ± a little so that intervals have width)."""

from __future__ import annotations

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.figures import style

from ..analysis.conftest import write_results_folder

STEPS = np.arange(0, 6001, 50, dtype=np.float64)
T_FIT = 200.0


def write_folder(out, config, delay_of, fits_of=lambda values: True):
    """A results folder of `config` in the sweep's format: train accuracy 1 from T_fit (never when fits_of(values)
    is false), test accuracy 1 from T_fit + delay_of(values) (never for NaN); ‖θ‖² peaking at T_fit, then falling.
    values: the run's grid values {axis: value}."""
    runs = config.runs()
    n = len(runs["seed"])
    values = [{k: float(v[i]) for k, v in runs.items()} for i in range(n)]
    delays = [delay_of(v) for v in values]
    fits = [fits_of(v) for v in values]
    train = np.array([(STEPS >= T_FIT).astype(float) if f else np.full(STEPS.shape, 0.5) for f in fits])
    test = np.array(
        [
            (STEPS >= T_FIT + d).astype(float) if f and np.isfinite(d) else np.zeros_like(STEPS)
            for d, f in zip(delays, fits)
        ]
    )
    norm = np.array(
        [
            100.0 * np.minimum(1 + STEPS / T_FIT, 2.0 * np.exp(-(STEPS - T_FIT).clip(0) / (1500 + 300 * i)))
            for i in range(n)
        ]
    )
    ones = np.ones_like(train)
    metrics = {
        "norm_sq": norm,
        "weight_norm_sq": norm,
        "head_norm_sq": norm / 2,
        "layer_norm_sq/embed": norm / 2,
        "layer_norm_sq/head": norm / 2,
        "train_acc": train,
        "test_acc": test,
        "train_loss": 1.01 - train,
        "test_loss": 1.01 - test,
        "grad_norm": ones,
        "logit_scale": ones,
        "finite": ones,
    }
    metrics.update({name: ones for name in config.domain.summary(config) if name not in metrics})
    return write_results_folder(out, STEPS, metrics, runs, config)


def config_of(grid, optim=None, name="figures"):
    return experiment.from_dict(
        {
            "name": name,
            "task": {"name": "modular", "p": 31},
            "model": {"name": "mlp", "hidden": [32]},
            "optim": {"name": "adamw", **(optim or {})},
            "train": {"steps": int(STEPS[-1]), "log_every": 50},
            "grid": {"learning_rate": 1e-3, "train_fraction": 0.5, **grid},
        }
    )


BASE = {0: 100.0, 1: 200.0, 2: 400.0}


def write_regimes(out):
    config = config_of({"weight_decay": [0.01, 0.1, 1.0], "seed": [0, 1]}, name="regimes")
    return write_folder(
        out,
        config,
        lambda v: 400.0 + 300 * v["seed"] if np.isclose(v["weight_decay"], 0.1) else np.nan,
        lambda v: v["weight_decay"] < 0.5,
    )


@pytest.fixture
def regimes_folder(tmp_path):
    return write_regimes(tmp_path / "regimes")


ZIPPED = {
    "clamp_rho": [0, 0.5, 1, 2, 3, 0, 0],
    "temperature": [1, 1, 1, 1, 1, 2, 4],
    "zip": [["clamp_rho", "temperature"]],
    "seed": [0, 1, 2],
    "weight_decay": 0.1,
}


def planted_delay(v):
    """delay × 2^ρ × τ, ± 50 steps by seed so that the bootstrap intervals have width."""
    jitter = (-50, 0, 50)[int(v["seed"])]
    return BASE[int(v["seed"])] * 2.0 ** v["clamp_rho"] * v["temperature"] + jitter * (1 + v["clamp_rho"])


def write_interventions(out):
    return write_folder(out, config_of(ZIPPED, {"after": ["norm_clamp"]}, name="interventions"), planted_delay)


@pytest.fixture
def interventions_folder(tmp_path):
    return write_interventions(tmp_path / "interventions")


class Saved:
    """Every figure written while the fixture is active: .figures [(figure, path)], .by_name(file name)."""

    def __init__(self):
        self.figures = []

    def by_name(self, name: str):
        return next(fig for fig, path in self.figures if path.name == name)

    def names(self) -> list[str]:
        return [path.name for _, path in self.figures]


def record_figures(monkeypatch) -> Saved:
    """Record each figure `style.write_figure` writes from now on (the figure stays readable after it is closed)."""
    record = Saved()
    real = style.write_figure

    def write(fig, path, tight=True):
        written = real(fig, path, tight)
        record.figures.append((fig, path))
        return written

    monkeypatch.setattr(style, "write_figure", write)
    return record


@pytest.fixture
def saved(monkeypatch):
    """The figures written during the test (`record_figures`)."""
    return record_figures(monkeypatch)
