"""The forecast at T_fit on a planted results folder (`nht_jax.analysis.tfit_forecast`): three seeds whose V
contracts by the first-passage law; the status column labels a run the budget cut off `censored` (its regime stays
`weak`), a run whose test accuracy collapses after its transition `anti-grokked`, a run that reached V★ without a
transition `missed`; `nht analyze` writes the score table and the report section; one seed: nothing."""

import math

import numpy as np

from nht_jax import experiment
from nht_jax.analysis import registry, tfit_forecast
from nht_jax.analysis.tfit_forecast import TfitOptions, tfit_report
from nht_jax.cli import main
from nht_jax.engine.optim import declared_contraction
from nht_jax.results.folder import load_results

from .conftest import write_results_folder

STEPS = np.arange(0.0, 2001.0, 20.0)
T_FIT = 100.0
KAPPA = 0.3
LAMS = [0.05, 0.1, 0.2, 0.4]
ANTI = (2, 0.4)        # (seed, λ) whose test accuracy collapses after T
MISSED = (1, 0.2)      # contracts past V★ but never reaches 0.99 test accuracy


def planted(out, seeds=(0, 1, 2)):
    """λ = 0.05 memorises (V rises, never transitions: the budget cuts it off); λ ≥ 0.1 contract from V_mem = 1000
    at κ·g to V★ = 1000·e^{−1.5}: test accuracy 1 from the first log at or below it (ANTI: back to 0.5 five logs
    later; MISSED: stays at 0.5). At λ = 0.1 (tiny's η = 0.01) V★ comes after the budget: the budget cuts the
    contraction off."""
    seed_list = "[" + ", ".join(map(str, seeds)) + "]"
    config = experiment.load("tiny", ["grid.weight_decay=[" + ", ".join(map(str, LAMS)) + "]",
                                      f"grid.seed={seed_list}", "train.steps=2000", "train.log_every=20"])
    hp = {k: np.asarray(v) for k, v in config.runs().items()}
    gamma = declared_contraction(config.optim, hp["learning_rate"], hp["weight_decay"], hp).gamma
    g = -np.log1p(-np.asarray(gamma, np.float64))
    v, test = [], []
    for i, (lam, seed) in enumerate(zip(hp["weight_decay"], hp["seed"])):
        if lam == 0.05:
            v.append(500.0 + STEPS), test.append(np.full(STEPS.size, 0.5))
            continue
        h = np.where(STEPS < T_FIT, 1000.0 * (0.5 + 0.5 * STEPS / T_FIT), 1000.0 * np.exp(-KAPPA * g[i] * (STEPS - T_FIT)))
        acc = np.where((STEPS >= T_FIT) & (h <= 1000.0 * math.exp(-1.5)), 1.0, 0.5)
        if (seed, lam) == ANTI:
            first = np.flatnonzero(acc == 1.0)[0]
            acc[first + 5:] = 0.5
        if (seed, lam) == MISSED:
            acc[:] = 0.5
        v.append(h), test.append(acc)
    v = np.array(v)
    metrics = {"norm_sq": v, "weight_norm_sq": v, "finite": np.ones_like(v),
               "train_acc": np.broadcast_to((STEPS >= T_FIT).astype(float), v.shape).copy(), "test_acc": np.array(test)}
    metrics |= {k: np.zeros_like(v) for k in config.domain.summary(config) if k not in metrics}
    return write_results_folder(out, STEPS, metrics, hp, config), hp


def test_statuses_label_censored_anti_grokked_and_missed_runs_beside_an_unchanged_regime(tmp_path):
    folder, hp = planted(tmp_path / "planted")
    res = load_results(folder)
    report = tfit_report(res, TfitOptions(n_bootstrap=20))
    rows = {(r["seed"], round(r["weight_decay"], 6)): r for r in report.run_rows}
    for seed in (0, 1, 2):
        for lam in (0.05, 0.1):     # memorising, and contracting too slowly for the budget: censored, still weak
            weak = rows[(seed, lam)]
            assert weak["regime"] == "weak" and weak["forecast_status"] == "censored"
            assert weak["T_hat_at_budget"] > 2000.0
    assert rows[ANTI]["forecast_status"] == "anti-grokked" and rows[ANTI]["regime"] == "intermediate"
    assert rows[MISSED]["forecast_status"] == "missed" and rows[MISSED]["regime"] == "weak"
    assert rows[(0, 0.2)]["forecast_status"] == "transitioned"
    # the law holds exactly: every transitioning run is forecast at T_fit within one log of its T
    for r in report.run_rows:
        if r["forecast_status"] in ("transitioned", "anti-grokked"):
            assert r["t_forecast"] == T_FIT and abs(r["T_hat"] - r["T_transition"]) <= 20.0
    assert report.score_rows[0]["lead"] == 0.0 and report.score_rows[0]["mape"] < 0.05
    assert "leave one seed out over seeds 0, 1, 2" in report.split


def test_nht_analyze_writes_the_score_table_and_section(tmp_path, capsys, monkeypatch):
    """Only this analysis registered (the others cost ~20 s on this folder and are tested on their own)."""
    folder, _ = planted(tmp_path / "planted")
    monkeypatch.setattr(registry, "ANALYSES", {"forecast_tfit": registry.ANALYSES["forecast_tfit"]})
    assert main(["analyze", str(folder), "--set", "forecast_tfit.n_bootstrap=20",
                 "--set", "forecast_tfit.calibration_seeds=[0, 1]"]) == 0
    scores = (folder / "forecast_tfit_scores.csv").read_text().splitlines()
    assert scores[0].startswith("lead,n_positive,n_forecast,mape,mape_lo,mape_hi")
    assert len(scores) == 1 + len(TfitOptions().leads) and "scored seeds 2" in scores[1]
    runs = (folder / "forecast_tfit_runs.csv").read_text()
    assert "forecast_status" in runs.splitlines()[0] and "censored" in runs
    assert "## The forecast at T_fit, held out by seed" in (folder / "analysis.md").read_text()
    assert "Forecast at T_fit" in capsys.readouterr().out


def test_one_seed_has_nothing_to_hold_out(tmp_path):
    folder, _ = planted(tmp_path / "one", seeds=(0,))
    assert tfit_forecast.ANALYSIS.run(load_results(folder), TfitOptions(), {}) is None
