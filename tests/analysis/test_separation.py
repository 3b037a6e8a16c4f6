"""Norm Separation Score: planted trajectories (lockstep, shuffled, anti-related, partial, gradual, noisy), the
cases where S is undefined, the choice of φ, and the entry point on a synthetic and on a real tiny sweep."""

import numpy as np
import pytest

from nht_jax.analysis.series import bootstrap_median
from nht_jax.measure.forecast.window import first_peak
from nht_jax.analysis.tables import markdown_table
from nht_jax.analysis.separation import (
    SeparationOptions,
    monotone_association,
    reliance_signal,
    resolve_phi,
    separation_report,
    separation_score,
)
from nht_jax.results.folder import Results

STEPS = np.arange(0, 6001, 20.0)
PEAK, SWITCH = 1000.0, 3000.0
# V rises to its peak at step 1000, then contracts exponentially; the switch of φ is planted at step 3000.
V = np.where(STEPS < PEAK, 10 + 90 * STEPS / PEAK, 10 + 90 * np.exp(-(STEPS - PEAK) / 1500))
V_STAR = 10 + 90 * np.exp(-(SWITCH - PEAK) / 1500)
LOCKSTEP = 1 / (1 + np.exp(-(V - V_STAR)))  # φ a sigmoid of V: 1 above V*, 0 below


def test_lockstep_scores_near_one():
    r = separation_score(STEPS, V, LOCKSTEP, t_fit=500.0)
    assert r.reason == ""
    assert r.M == pytest.approx(1.0) and r.amplitude == pytest.approx(1.0, abs=1e-6)
    assert r.peak_step == PEAK and r.window_start == PEAK
    assert r.switch_mid == SWITCH and r.escape_time == SWITCH - PEAK
    # width of a unit sigmoid in V, mapped through V's slope at the switch: a few hundred steps
    assert 100 < r.switch_width < 500
    assert r.sharpness == pytest.approx(r.escape_time / (r.escape_time + r.switch_width))
    assert 0.8 < r.S <= 1.0 and r.S == pytest.approx(r.M * r.sharpness * r.amplitude)


def test_shuffled_phi_scores_near_zero():
    after = STEPS >= PEAK
    for seed in range(5):
        phi = LOCKSTEP.copy()
        phi[after] = np.random.default_rng(seed).permutation(LOCKSTEP[after])
        r = separation_score(STEPS, V, phi, t_fit=500.0)
        assert abs(r.M) < 0.1 and abs(r.S) < 0.1, (seed, r)


def test_anti_related_phi_scores_negative():
    r = separation_score(STEPS, V, 1 - LOCKSTEP, t_fit=500.0)
    assert r.M == pytest.approx(-1.0) and r.S < -0.8
    assert r.S == pytest.approx(-separation_score(STEPS, V, LOCKSTEP, t_fit=500.0).S)


def test_partial_switch_scales_with_its_amplitude():
    full = separation_score(STEPS, V, LOCKSTEP)
    partial = separation_score(STEPS, V, 0.3 + 0.7 * LOCKSTEP)  # reliance falls from 1 to 0.3 only
    assert partial.amplitude == pytest.approx(0.7, abs=1e-6)
    assert partial.S == pytest.approx(0.7 * full.S, rel=1e-6)


def test_gradual_switch_is_less_sharp():
    gradual = np.clip((V - V.min()) / (V.max() - V.min()), 0, 1)  # φ linear in V: switches all along the decay
    sharp, slow = separation_score(STEPS, V, LOCKSTEP), separation_score(STEPS, V, gradual)
    assert slow.M == pytest.approx(1.0)
    assert slow.sharpness < 0.5 < sharp.sharpness and slow.S < sharp.S - 0.3


def test_isotonic_association_keeps_a_noisy_step_near_one_where_spearman_does_not():
    noisy = np.clip(LOCKSTEP + np.random.default_rng(0).normal(0, 0.03, STEPS.size), 0, 1)
    r = separation_score(STEPS, V, noisy)
    assert r.M > 0.95 and r.spearman < 0.9
    spearman = separation_score(STEPS, V, noisy, options=SeparationOptions(monotonicity="spearman"))
    assert spearman.M == pytest.approx(r.spearman) and spearman.S < r.S


def test_monotone_association_bounds():
    x = np.linspace(0, 1, 50)
    assert monotone_association(x, np.where(x > 0.4, 1.0, 0.0)) == pytest.approx(1.0)
    assert monotone_association(x, np.where(x > 0.4, 0.0, 1.0)) == pytest.approx(-1.0)
    assert monotone_association(x, np.full(50, 0.5)) == 0.0


def test_undefined_cases_give_nan_with_a_reason():
    rising = separation_score(STEPS, 1 + STEPS, LOCKSTEP)
    assert np.isnan(rising.S) and "still rising" in rising.reason
    flat = separation_score(STEPS, np.where(STEPS < PEAK, STEPS, PEAK - 0.01 * (STEPS - PEAK)), LOCKSTEP)
    assert np.isnan(flat.S) and "falls by" in flat.reason
    late = np.where(STEPS < 5950, STEPS, 5950 - 100 * (STEPS - 5950))  # peak at 5940: 4 logs to the end
    short = separation_score(STEPS, late, LOCKSTEP)
    assert np.isnan(short.S) and "only 4 logs" in short.reason
    broken = V.copy()
    broken[-1] = np.nan
    assert "not finite" in separation_score(STEPS, broken, LOCKSTEP).reason


def test_first_peak_ignores_a_late_regrowth():
    assert first_peak([1, 5, 4.8, 4.4, 3, 2, 9], 0.1) == (1, 3)  # falls to 4.4 ≤ 4.5 before 9 exceeds 5
    assert first_peak([1, 5, 4.6, 6, 5, 8], 0.1) == (3, 4)  # 5 regrown before a 10 % fall: the peak is 6
    assert first_peak([1, 2, 3], 0.1) == (2, -1) and first_peak([3, 2.9, 2.8], 0.1) == (0, -1)
    regrowth = np.where(STEPS < 5000, V, V[STEPS == 4980] + (STEPS - 4980))  # V rises above its peak at the end
    r = separation_score(STEPS, regrowth, LOCKSTEP)
    assert r.peak_step == PEAK and r.switch_mid == SWITCH


def test_window_starts_at_fit_when_the_run_fits_after_its_peak():
    r = separation_score(STEPS, V, LOCKSTEP, t_fit=2000.0)
    assert r.window_start == 2000.0 and r.escape_time == SWITCH - PEAK
    assert separation_score(STEPS, V, LOCKSTEP, 2000.0, SeparationOptions(start_after_fit=False)).window_start == PEAK


def test_reliance_signal_directions():
    np.testing.assert_allclose(reliance_signal([0.0, 0.25, 1.0], "low"), [1.0, 0.75, 0.0])
    np.testing.assert_allclose(reliance_signal([0.0, 0.25, 1.0], "high"), [0.0, 0.25, 1.0])
    np.testing.assert_allclose(reliance_signal([0.1, 1.0], "high", structured_level=0.1), [0.0, 1.0])
    with pytest.raises(ValueError):
        reliance_signal([0.0], "up")


def synthetic(config, phis, vs, regimes, extra=None):
    runs = len(phis)
    metrics = {
        "norm_sq": np.stack(vs),
        "weight_norm_sq": np.stack(vs),
        "finite": np.ones((runs, STEPS.size)),
        "test_acc": 1 - np.stack(phis),
        **(extra or {}),
    }
    hp = {"weight_decay": np.linspace(0.1, 1.0, runs).astype(np.float32), "seed": np.arange(runs, dtype=np.uint32)}
    summary = [{"regime": r, "T_fit": 500.0} for r in regimes]
    return Results(None, config, STEPS, metrics, hp, dict(hp), summary)


def test_phi_defaults_to_the_transition_metric_then_the_fallback_list(tiny_config):
    config = tiny_config()
    res = synthetic(config, [LOCKSTEP], [V], ["intermediate"])
    assert resolve_phi(res)[:2] == ("test_acc", "low")
    del res.metrics["test_acc"]
    res.metrics["shortcut_reliance"] = LOCKSTEP[None]
    assert resolve_phi(res)[:2] == ("shortcut_reliance", "high")
    res.metrics["worst_group_acc"] = 1 - LOCKSTEP[None]
    phi = resolve_phi(res, SeparationOptions(phi_metric="worst_group_acc"))
    assert phi[:2] == ("worst_group_acc", "low")
    with pytest.raises(ValueError, match="not recorded"):
        resolve_phi(res, SeparationOptions(phi_metric="nope"))


def test_report_pools_intermediate_runs(tiny_config):
    res = synthetic(
        tiny_config(),
        [LOCKSTEP, LOCKSTEP, 1 - LOCKSTEP, LOCKSTEP, LOCKSTEP],
        [V, V, V, V, 1 + STEPS],
        ["intermediate", "intermediate", "intermediate", "weak", "weak"],
    )
    report = separation_report(res)
    s = [r.S for r in report.runs]
    assert s[0] > 0.8 and s[2] < -0.8 and np.isnan(s[4])
    assert report.pooled.n == 3 and report.pooled.median == pytest.approx(s[0])
    assert report.pooled.lo <= report.pooled.median <= report.pooled.hi
    rows = report.rows()
    assert rows[4]["regime"] == "weak" and "still rising" in rows[4]["reason"]
    assert "Pooled S" in report.markdown() and report.csv().count("\n") == 6


def test_bootstrap_median_and_table():
    assert bootstrap_median([]).n == 0
    p = bootstrap_median([1.0, 2.0, 3.0, np.nan, 4.0, 5.0])
    assert p.n == 5 and p.median == 3.0 and 1.0 <= p.lo <= 3.0 <= p.hi <= 5.0
    assert "| – |" in markdown_table([{"a": np.nan}])


def test_on_a_real_tiny_sweep(tiny_results):
    report = separation_report(tiny_results)
    assert report.phi.metric == "test_acc" and report.norm_metric == "norm_sq"
    assert len(report.runs) == tiny_results.num_runs
    for run in report.runs:  # 40 steps: no run fits or turns, V still rises
        assert np.isnan(run.S) and run.reason
    assert report.pooled.n == 0 and np.isnan(report.pooled.median)
    assert "Pooled S" in report.markdown()
