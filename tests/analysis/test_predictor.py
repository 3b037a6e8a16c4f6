"""Delay predictor: an exact exponential contraction with a known V_post (error 0), the same with noise, the fit
window's start, the pilots chosen inside the grid, the cases without a prediction, and the entry point on a
synthetic grid and on a real tiny sweep."""

import math

import numpy as np
import pytest

from nht_jax.analysis.predictor import (
    COMPANION_MAPE,
    NAN_PREDICTION,
    PredictorOptions,
    PredictorReport,
    pilot_norm,
    pool_predictions,
    predict_run,
    predictor_report,
)
from nht_jax.measure.forecast.v_post import select_pilots
from nht_jax.results.folder import Results

STEPS = np.arange(0, 6001, 50.0)
T_FIT, V_FIT = 1000.0, 400.0


def contraction(gamma, t_transition, rise_until=T_FIT):
    """V rises linearly to V_FIT at `rise_until`, then V_t = V_FIT·exp(−γ(t − rise_until)); V_post = V at the
    transition (a logged step)."""
    rise = 50 + (V_FIT - 50) * STEPS / rise_until
    v = np.where(STEPS < rise_until, rise, V_FIT * np.exp(-gamma * (STEPS - rise_until)))
    return v, float(V_FIT * np.exp(-gamma * (t_transition - rise_until)))


def test_exact_exponential_is_predicted_exactly():
    v, v_post = contraction(1e-3, 3000.0)
    p = predict_run(STEPS, v, T_FIT, 3000.0, v_post)
    assert p.reason == ""
    assert p.gamma_hat == pytest.approx(1e-3, rel=1e-9) and p.V_start == pytest.approx(V_FIT, rel=1e-9)
    assert p.T_hat == pytest.approx(3000.0, abs=1e-6) and p.ape < 1e-9 and p.ape_delay < 1e-9
    assert p.t_start == T_FIT and p.t_predict == T_FIT + 10 * 50 and p.lead == 3000.0 - 1500.0
    assert p.V_post_oracle == pytest.approx(v_post) and p.ape_oracle < 1e-9
    # a V_post twice too small is one γ⁻¹·log 2 too late
    late = predict_run(STEPS, v, T_FIT, 3000.0, v_post / 2)
    assert late.T_hat == pytest.approx(3000.0 + np.log(2) / 1e-3) and late.ape == pytest.approx(np.log(2) / 3.0)
    assert late.ape_delay == pytest.approx(np.log(2) / 2.0)


def test_noisy_exponential_is_predicted_within_a_few_percent():
    v, v_post = contraction(1e-3, 3000.0)
    rng = np.random.default_rng(0)
    errors = []
    for _ in range(20):
        noisy = v * np.exp(rng.normal(0, 0.02, v.size))
        p = predict_run(STEPS, noisy, T_FIT, 3000.0, v_post, PredictorOptions(start="fit", window_logs=20))
        errors.append(p.ape)
        assert p.fit_rmse == pytest.approx(0.02, rel=0.5)
        # T̂ is where the least-squares line through log V over the window reaches log V_post
        w = (STEPS >= T_FIT) & (STEPS <= T_FIT + 20 * 50)
        slope, intercept = np.polyfit(STEPS[w], np.log(noisy[w]), 1)
        assert p.V_start == pytest.approx(np.exp(intercept + slope * T_FIT), rel=1e-9)
        assert p.T_hat == pytest.approx((np.log(v_post) - intercept) / slope, rel=1e-9)
    assert 0 < np.mean(errors) < 0.05


def test_window_starts_at_the_norm_peak_when_it_comes_after_fit():
    v, v_post = contraction(1e-3, 3000.0, rise_until=1500.0)  # fits at 1000, V peaks at 1500
    as_written = predict_run(STEPS, v, T_FIT, 3000.0, v_post, PredictorOptions(start="fit"))
    assert np.isnan(as_written.T_hat) and "does not contract" in as_written.reason
    p = predict_run(STEPS, v, T_FIT, 3000.0, v_post)
    assert p.t_start == 1500.0 and p.ape < 1e-9
    offset = predict_run(STEPS, v, T_FIT, 3000.0, v_post, PredictorOptions(offset_steps=200, window_steps=1000))
    assert (offset.t_start, offset.t_predict) == (1700.0, 2700.0) and offset.ape < 1e-9


def test_undefined_predictions_give_nan_with_a_reason():
    v, v_post = contraction(1e-3, 3000.0)
    assert "never fits" in predict_run(STEPS, v, np.nan, np.nan, v_post).reason
    rising = predict_run(STEPS, 1 + STEPS, T_FIT, np.nan, v_post)
    assert np.isnan(rising.T_hat) and "no contraction to fit" in rising.reason
    assert "only 2 logs" in predict_run(STEPS, v, 5950.0, np.nan, v_post, PredictorOptions(start="fit")).reason
    gap = predict_run(STEPS, v, T_FIT, 3000.0, 2 * V_FIT)
    assert np.isnan(gap.T_hat) and "no norm gap" in gap.reason
    nopilot = predict_run(STEPS, v, T_FIT, 3000.0, np.nan, pilot_reason="no pilot: x")
    assert np.isnan(nopilot.ape) and nopilot.reason == "no pilot: x" and nopilot.ape_oracle < 1e-9
    weak = predict_run(STEPS, v, T_FIT, np.nan, v_post)
    assert np.isfinite(weak.T_hat) and np.isnan(weak.ape) and "no measured transition" in weak.reason
    broken = v.copy()
    broken[3] = np.nan
    assert "diverged" in predict_run(STEPS, broken, T_FIT, 3000.0, v_post).reason


def test_select_pilots_inside_the_grid():
    hp = {
        "weight_decay": np.array([0.1, 0.3, 1.0, 3.0, 0.1, 0.3, 1.0, 3.0]),
        "seed": np.array([0, 0, 0, 0, 1, 1, 1, 1]),
        "learning_rate": np.array([1e-3] * 4 + [1e-3] * 4),
    }
    t_fit = np.array([100, 100, 100, np.nan, 100, 100, 100, np.nan])  # λ = 3 never fits
    pilots = select_pilots(hp, t_fit)
    assert pilots[0] == (2, 6) and pilots[1] == (2, 6) and pilots[2] == () and pilots[3] == ()
    hp["learning_rate"] = np.array([1e-3] * 4 + [2e-3] * 4)  # another η: other pilots
    assert select_pilots(hp, t_fit)[0] == (2,) and select_pilots(hp, t_fit)[4] == (6,)
    assert select_pilots(hp, t_fit, ("weight_decay",))[0] == (2,)
    v = np.tile(np.arange(1.0, 5.0), (8, 1))
    steps = np.array([0.0, 10, 20, 30])
    t_tr = np.array([np.nan, np.nan, 20, np.nan, np.nan, np.nan, 30, np.nan])
    assert pilot_norm(steps, v, (2, 6), t_fit * 0 + 10, t_tr) == (3.5, "")
    assert pilot_norm(steps, v, (2,), t_fit * 0 + 10, t_tr, "final") == (4.0, "")
    assert "no pilot" in pilot_norm(steps, v, (), t_fit, t_tr)[1]
    assert "no transition step" in pilot_norm(steps, v, (3,), t_fit, t_tr)[1]


def test_pilots_must_transition_when_their_transition_norm_is_used(tiny_config):
    """λ = 3 fits but never transitions (a weak run fitted by the shortcut): the pilot is λ = 1 for "transition",
    λ = 3 for "final"."""
    v, _ = contraction(1e-3, 3000.0)
    hp = {"weight_decay": np.array([0.1, 1.0, 3.0], np.float32), "learning_rate": np.full(3, 1e-3, np.float32)}
    summary = [
        {"regime": r, "T_fit": T_FIT, "T_transition": t}
        for r, t in (("intermediate", 3000.0), ("intermediate", 2000.0), ("weak", np.nan))
    ]
    vs = np.stack([v, v, v])
    res = Results(None, tiny_config(), STEPS, {"weight_norm_sq": vs, "norm_sq": vs}, hp, dict(hp), summary)
    assert predictor_report(res).pilots[0] == (1,)
    assert predictor_report(res, PredictorOptions(pilot_norm="final")).pilots[0] == (2,)


def test_report_on_a_planted_grid(tiny_config):
    """λ ∈ {0.1, 0.2, 1.0} × 2 seeds; every run contracts from V_FIT at T_FIT at a rate ∝ λ and transitions when
    V reaches the same V_post, which is also the pilots' (λ = 1.0) norm at their transition: MAPE 0."""
    lams = np.array([0.1, 0.2, 1.0] * 2, np.float32)
    seeds = np.array([0, 0, 0, 1, 1, 1], np.uint32)
    v_post = V_FIT * np.exp(-2.0)
    vs, summary = [], []
    for lam in lams:
        gamma = 1e-3 * round(float(lam) / 0.1)  # 1e-3, 2e-3, 1e-2: transitions at logged steps
        t_tr = T_FIT + 2.0 / gamma
        vs.append(contraction(gamma, t_tr)[0])
        summary.append({"regime": "intermediate" if lam < 1 else "structured", "T_fit": T_FIT, "T_transition": t_tr})
    v = np.stack(vs)
    hp = {"weight_decay": lams, "learning_rate": np.full(6, 1e-3, np.float32), "seed": seeds}
    res = Results(
        None,
        tiny_config(),
        STEPS,
        {"norm_sq": v, "weight_norm_sq": v, "finite": np.ones_like(v)},
        hp,
        dict(hp),
        summary,
    )
    report = predictor_report(res)
    assert report.norm_metric == "weight_norm_sq"
    assert report.pilots[0] == (2, 5) and report.pilots[2] == ()
    for i in (0, 1, 3, 4):
        p = report.predictions[i]
        assert p.V_post == pytest.approx(v_post, rel=1e-6) and p.ape < 1e-6, p
    assert "no pilot" in report.predictions[2].reason
    pooled = report.pooled
    assert (pooled.n, pooled.n_pool) == (4, 4) and pooled.mape < 1e-6 and pooled.mape_oracle < 1e-6
    assert math.isnan(pooled.mape_lo) and math.isnan(pooled.mape_hi)  # 4 runs: 35 distinct resamples, < 40
    assert (
        "[n.a.: 35 distinct resamples over 4 runs, < 40] over 4 of 4 runs: no interval to compare with the "
        "companion paper" in report.comparison()
    )
    rows = report.rows()
    assert rows[0]["amplification"] == pytest.approx(1e-3 / report.gamma_eff[0]) and rows[0]["pilots"] == "2 5"
    assert "MAPE" in report.markdown() and report.csv().count("\n") == 7
    assert COMPANION_MAPE == 0.35


def test_on_a_real_tiny_sweep(tiny_results):
    report = predictor_report(tiny_results)
    assert len(report.predictions) == tiny_results.num_runs
    for p in report.predictions:  # 40 steps: no run fits
        assert np.isnan(p.T_hat) and "never fits" in p.reason
    assert report.pooled.n == 0 and np.isnan(report.pooled.mape)
    assert "no pooled MAPE" in report.comparison() and "Delay predictor" in report.markdown()


@pytest.mark.parametrize("n, shown", [(4, False), (5, True)])
def test_the_pooled_mape_interval_is_shown_only_with_forty_distinct_resamples_of_the_runs(n, shown):
    """The pooled MAPE's bootstrap resamples the runs with a finite ape: 4 runs have C(7, 4) = 35 distinct resamples
    (< 40, `nht_jax.analysis.bootstrap`: no interval, n.a. with the count, no verdict against the companion paper),
    5 have 126 (the interval, computed here from the same draws, and the verdict it gives: every ape is below
    0.35). A run without an ape (NaN) is not a cluster."""
    apes = [0.1, 0.3, 0.05, 0.2, 0.15][:n] + [math.nan]
    predictions = [NAN_PREDICTION._replace(ape=a) for a in apes]
    options = PredictorOptions(n_bootstrap=300)
    pooled = pool_predictions(predictions, [True] * len(apes), options)
    assert (pooled.n, pooled.n_pool) == (n, n + 1) and pooled.mape == pytest.approx(np.mean(apes[:n]), rel=1e-12)
    report = PredictorReport(
        "norm_sq",
        tuple(predictions),
        ((),) * len(apes),
        (1.0,) * len(apes),
        ({"run": 0},) * len(apes),
        pooled,
        "over intermediate",
        options,
    )
    if shown:
        x = np.array(apes[:n])
        boots = x[np.random.default_rng(0).integers(0, n, size=(300, n))].mean(axis=1)
        assert (pooled.mape_lo, pooled.mape_hi) == (np.quantile(boots, 0.025), np.quantile(boots, 0.975))
        shown = f"[{pooled.mape_lo:.1%}, {pooled.mape_hi:.1%}] (126 distinct resamples over 5 runs)"
        assert shown in report.comparison()
        assert "below the companion paper" in report.comparison()
    else:
        assert math.isnan(pooled.mape_lo) and math.isnan(pooled.mape_hi)
        assert "[n.a.: 35 distinct resamples over 4 runs, < 40]" in report.comparison()
        assert "no interval to compare with the companion paper" in report.comparison()
