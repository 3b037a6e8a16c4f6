"""The theory's toy models as registered domains: a sweep through `run_sweep` reproduces their closed forms
(transition times, regimes, the delay's slope in log α²), and their [analysis] defaults fit on a loss."""

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.training.sweep import run_sweep
from nht_jax.theory import toy_models as tm

ETAS = (0.03, 0.3)
LAMS = (1e-4, 1e-3, 0.01, 0.1)
STEPS, LOG_EVERY = 2000, 10


def closed_form_regime(problem, eta, lam, eps=0.01, fit=0.01):
    """weak / intermediate / strong of a run started at θ_λ + null offset, from the closed forms."""
    ridge = tm.ridge_solution(problem, lam)
    if 0.5 * np.mean((problem.X @ ridge - problem.y) ** 2) / (0.5 * np.mean(problem.y**2)) > fit:
        return "strong", np.nan
    _, t = tm.null_transition_time(eta, lam, eps)
    t_logged = np.ceil(t / LOG_EVERY) * LOG_EVERY
    return ("intermediate", t_logged) if t_logged <= STEPS else ("weak", np.nan)


def test_toy_linear_sweep_matches_the_closed_form(tmp_path):
    config = experiment.load(
        "toy-linear",
        [
            f"train.steps={STEPS}",
            f"train.log_every={LOG_EVERY}",
            f"grid.learning_rate={list(ETAS)}",
            f"grid.weight_decay={list(LAMS)}",
        ],
    )
    assert config.analysis.fit_metric == "relative_train_loss" and config.analysis.fit_direction == "below"
    res = run_sweep(config, tmp_path, progress=False)
    problem = config.domain.load_data(config)
    regimes = set()
    for row in res.summary:
        regime, t = closed_form_regime(problem, row["learning_rate"], row["weight_decay"])
        assert row["regime"] == regime, row
        regimes.add(regime)
        if regime == "intermediate":
            assert row["T_fit"] == 0 and row["T_transition"] == t, (row, t)
            assert (
                row["norm_at_fit"] == pytest.approx(row["norm_init"]) and row["norm_at_transition"] < row["norm_at_fit"]
            )
    assert regimes == {"weak", "intermediate", "strong"}


def test_toy_diagonal_delay_grows_as_log_alpha_squared_over_the_contraction_rate(tmp_path):
    eta, lam = 0.02, 0.01
    config = experiment.load(
        "toy-diagonal",
        [
            "train.steps=8000",
            "train.log_every=10",
            f"grid.learning_rate={eta}",
            f"grid.weight_decay={lam}",
            "grid.init_scale=[2.0, 4.0, 8.0]",
        ],
    )
    res = run_sweep(config, tmp_path, progress=False)
    assert [r["regime"] for r in res.summary] == ["intermediate"] * 3
    alpha = np.array([r["init_scale"] for r in res.summary])
    t = np.array([r["T_transition"] for r in res.summary])
    slope = np.polyfit(np.log(alpha**2), t, 1)[0]
    assert slope == pytest.approx(1 / (-2 * np.log(1 - 2 * eta * lam)), rel=0.05)  # Δ decays at (1 − 2ηλ)² per step
    assert all(
        r["norm_at_fit"] > 5 * r["norm_at_transition"] for r in res.summary
    )  # the kernel fit is the high-norm one


def test_toy_domains_refuse_what_they_do_not_use():
    with pytest.raises(ConfigError, match="init_scale"):
        experiment.load("toy-linear", ["grid.init_scale=[2.0]"])
    with pytest.raises(ConfigError, match="not an axis of domain 'toy_diagonal'"):
        experiment.load("toy-diagonal", ["grid.null_sq=[1.0]"])
    with pytest.raises(ConfigError, match="n < d"):
        experiment.load("toy-linear", ["task.n=20"])
    with pytest.raises(ConfigError, match="analysis.fit_metric = 'train_acc' is not recorded"):
        experiment.load("toy-linear", ["analysis.fit_metric=train_acc"])
    # a preset's [analysis] overrides the domain's defaults, key by key
    config = experiment.load("toy-linear", ["analysis.fit_threshold=0.05"])
    assert config.analysis.fit_threshold == 0.05 and config.analysis.fit_metric == "relative_train_loss"
