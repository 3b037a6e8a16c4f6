"""Known answers of the held-out forecast's rules (`nht_jax.measure.forecast.heldout`) that the other files leave open: the
joined calibration's κ per cell, the anti-grokking rule for a metric that transitions downward (its strict margin on
the right side of the threshold), and float32 histories (JAX's default) read at their exact values in float64.
Small inputs built by hand, pure numpy (issue 43)."""

import math
import warnings

import numpy as np
import pytest

from nht_jax.measure.forecast import heldout
from nht_jax.config.forecast import ForecastSettings


def calibration(cells, kappas, seeds, bounds=(-0.1, 0.2)):
    n = len(kappas)
    return heldout.Calibration(
        tuple(seeds),
        {},
        {},
        np.full(n, 0.1),
        np.asarray(cells),
        np.arange(1.0, n + 1.0),
        np.asarray(kappas, float),
        bounds,
    )


@pytest.mark.parametrize("pool", ["cell", "level"])
def test_a_joined_calibration_pools_kappa_per_cell_over_both_calibrations(pool):
    """Pilot: cell a κ 0.1, 0.5, cell b κ 0.3; own: a 0.2, b 0.9 and a NaN. Per cell over both: a = median(0.1, 0.5,
    0.2) = 0.2 (mean 0.27), b = median(0.3, 0.9) = 0.6 from 2 runs (the NaN dropped); "level" keeps the same per-cell
    keys (its κ at a λ is read from the runs' own κ)."""
    prior = calibration(["a", "a", "b"], [0.1, 0.5, 0.3], (5.0,))
    own = calibration(["a", "b", "b"], [0.2, 0.9, math.nan], (0.0,))
    both = heldout.joined(prior, own, ForecastSettings(kappa_pool=pool))
    assert both.kappa == {"a": pytest.approx(0.2), "b": pytest.approx(0.6)} and both.kappa_n == {"a": 3, "b": 2}
    assert list(both.cell) == ["a", "a", "b", "a", "b", "b"]


def test_a_downward_transition_anti_groks_only_above_threshold_plus_margin():
    """Direction "below", threshold 0.5, margin 0.25 (both exact in binary): a log is bad only when the metric is
    strictly above 0.75. Three logs after T = 1 at 0.75 exactly, or at 0.6 (above the threshold, below 0.75, above
    0.5 − 0.25), are not an anti-grokking; at 0.76 they are."""
    steps = np.arange(8.0)
    for level, expected in ((0.75, False), (0.6, False), (0.76, True)):
        metric = np.where((steps >= 2) & (steps <= 4), level, 0.1)
        assert heldout.anti_grokked(steps, metric, 1.0, 0.5, "below", 0.25, 3) is expected, level


def test_float32_steps_and_metric_are_compared_in_float64():
    """A JAX history comes in float32. The metric 0.9f is 0.89999998 < 1 − 0.1 = 0.9 in float64 (equal in float32):
    three bad logs after T = 1, anti-grokked. The step 1.0f lies after T = 1 − 10⁻⁹ in float64 (not in float32, where
    T rounds to 1): with a dip at steps 1 … 3 only, three bad logs after T, not two."""
    steps = np.arange(6.0)
    metric = np.array([1.0, 1.0, 0.9, 0.9, 0.9, 1.0], np.float32)
    assert heldout.anti_grokked(steps, metric, 1.0, 1.0, "above", 0.1, 3)
    assert not heldout.anti_grokked(steps, metric.astype(np.float64) + 1e-7, 1.0, 1.0, "above", 0.1, 3)
    dip = np.array([1.0, 0.5, 0.5, 0.5, 1.0, 1.0])
    assert heldout.anti_grokked(steps.astype(np.float32), dip, 1.0 - 1e-9, 0.99, "above", 0.1, 3)
    assert not heldout.anti_grokked(steps.astype(np.float32), dip, 1.0, 0.99, "above", 0.1, 3)


def test_a_cell_without_a_finite_kappa_gets_nan_without_a_warning():
    """Cell a has κ 0.2 and 0.4, cell b only NaN: per cell a = 0.3 from 2 runs, b = NaN from 0, quietly (no "Mean of
    empty slice" from a median over nothing)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kappa, n = heldout.pooled_kappa(np.array([0.2, math.nan, 0.4]), np.array(["a", "b", "a"]), "cell")
    assert kappa["a"] == pytest.approx(0.3) and math.isnan(kappa["b"]) and n == {"a": 2, "b": 0}


def test_a_calibration_run_may_have_a_norm_below_one():
    """V = 0.5·e^{−0.002·(t − 100)} from T_fit = 100 (below 1 throughout), transitioning at 400 with g = 0.01: a
    calibration run (V finite and positive up to T), its κ = 0.002·300 / (0.01·300) = 0.2."""
    steps = np.arange(0.0, 1001.0, 10.0)
    v = np.where(steps < 100.0, 0.25 + 0.0025 * steps, 0.5 * np.exp(-0.002 * (steps - 100.0)))[None, :]
    one = np.ones(1)
    runs = heldout.Runs(
        steps, v, 0 * one, 0.1 * one, 0.01 * one, np.array(["c"]), 100.0 * one, 400.0 * one, one > 0, one < 0
    )
    assert list(heldout.transitioned(runs)) == [True]
    cal = heldout.calibrate(runs, (0.0,), ForecastSettings(), with_bounds=False)
    assert cal.kappa == {"all": pytest.approx(0.2, rel=1e-12)} and cal.kappa_n == {"all": 1}


STEPS = np.arange(0.0, 1001.0, 10.0)
T_FIT, G = 100.0, 0.01


def contracting(rate, v_mem=1000.0):
    """V rises to v_mem at T_FIT, then v_mem·e^{−rate·(t − T_FIT)}: its law κ is rate / G."""
    return np.where(STEPS < T_FIT, v_mem * (0.5 + 0.5 * STEPS / T_FIT), v_mem * np.exp(-rate * (STEPS - T_FIT)))


def runs_of(v, seed, t_tr, t_fit=None, cell=None, positive=None, negative=None):
    n = len(v)
    t_tr = np.asarray(t_tr, float)
    return heldout.Runs(
        STEPS,
        np.array(v, float),
        np.asarray(seed, float),
        np.full(n, 0.1),
        np.full(n, G),
        np.asarray(cell if cell is not None else ["c"] * n),
        np.asarray(t_fit if t_fit is not None else [T_FIT] * n, float),
        t_tr,
        np.asarray(positive if positive is not None else np.isfinite(t_tr)),
        np.asarray(negative if negative is not None else np.zeros(n, bool)),
    )


def test_heldout_scores_the_fitted_runs_of_the_other_seeds_with_their_roles_leads_and_budget_forecast():
    """Calibration seed 0: run 0 at κ = 0.2 (rate 0.002) transitioning at 400, V★ = 1000·e^{−0.6}. Seed 1 scored: run
    1 (positive, κ 0.4, T = 300), run 2 (neither positive nor negative: "other", rate 0.0005); run 3 (no T_fit) and
    run 4 (a NaN V) are not scored. From V_mem = 1000 at T_fit both forecast 100 + 0.6/(0.2·0.01) = 400. Lead ½:
    run 1 at 100 + ½·200 = 200 (its own delay), V = 1000·e^{−0.4}: 200 + 0.2/0.002 = 300; run 2 at the positives'
    median delay 250 (delays 300, 200): at 220 (the log ≤ 225), V = 1000·e^{−0.06}: 220 + 0.54/0.002 = 490. At the budget (the last log, 1000): run 1 is below V★ (due: 1000),
    run 2 at V = 1000·e^{−0.45}: 1000 + 0.15/0.002 = 1075. One calibration seed: no interval."""
    v = [contracting(0.002), contracting(0.004), contracting(0.0005), contracting(0.001), contracting(0.001)]
    v[4][50] = math.nan
    runs = runs_of(
        v,
        [0, 1, 1, 1, 1],
        [400.0, 300.0, math.nan, math.nan, math.nan],
        t_fit=[T_FIT, T_FIT, T_FIT, math.nan, T_FIT],
        positive=[True, True, False, False, False],
    )
    out = heldout.heldout(runs, ForecastSettings(), calibration_seeds=(0,), leads=(0.5,))
    assert [(s.run, s.seed, s.role, s.calibration_seeds) for s in out] == [
        (1, 1.0, "positive", (0.0,)),
        (2, 1.0, "other", (0.0,)),
    ]
    for s, lead, budget in zip(out, (300.0, 490.0), (1000.0, 1075.0)):
        assert (s.forecast.t, s.forecast.T_hat, s.forecast.kappa) == (100.0, pytest.approx(400.0), pytest.approx(0.2))
        assert math.isnan(s.T_lo) and math.isnan(s.T_hi)
        assert s.at_leads == (pytest.approx(lead),)
        assert (s.at_budget.t, s.at_budget.T_hat) == (1000.0, pytest.approx(budget))


def test_heldout_without_positives_or_a_realised_kappa_gives_no_lead_forecasts_and_says_why():
    """κ from the run, no positive (so no median delay: every lead forecast NaN, quietly). Run 1 rises throughout:
    no realised κ, no forecast step, a forecast of NaNs with its reason. Run 2 contracts at rate 0.002 from T_fit:
    its first κ at 120 (3 logs), κ = 0.2, T̂ = 120 + (0.6 − 0.04)/0.002 = 400; its lead forecasts NaN still."""
    rising = np.where(STEPS < T_FIT, 500.0 + 5.0 * STEPS, 1000.0 + STEPS)
    runs = runs_of(
        [contracting(0.002), rising, contracting(0.002)],
        [0, 1, 1],
        [400.0, math.nan, math.nan],
        positive=[False] * 3,
        negative=[True] * 3,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = heldout.heldout(runs, ForecastSettings(kappa="run"), calibration_seeds=(0,), leads=(0.25, 0.5))
    none, made = out
    f = none.forecast
    assert (none.run, none.role, f.kappa_source, f.reason) == (
        1,
        "negative",
        "run",
        "no realised κ: V never contracts past its peak",
    )
    assert all(math.isnan(x) for x in (f.t, f.T_hat, f.delay_hat, f.kappa, f.v_now, f.v_star, none.T_lo, none.T_hi))
    assert all(math.isnan(x) for x in none.at_leads + made.at_leads) and len(made.at_leads) == 2
    assert (made.run, made.forecast.t) == (2, 120.0) and made.forecast.T_hat == pytest.approx(400.0, rel=1e-9)


@pytest.mark.parametrize("pool, kappa", [("cell", 0.4), ("level", 0.4), ("all", 0.3)])
def test_a_forecast_takes_the_kappa_and_v_star_of_its_cell(pool, kappa):
    """Calibration seed 0: cell a at κ 0.2 (T = 400), cell b at κ 0.4 (rate 0.004, T = 300, V★_b = 1000·e^{−0.8}).
    A seed-1 run of cell b from V = 1000 at T_fit = 100: κ 0.4 per cell or level (one λ), the median 0.3 over all;
    T̂ = 100 + 0.8/(κ·0.01). A run of a cell with no transition (z) has no V★, its forecast fields NaN."""
    runs = runs_of(
        [contracting(0.002), contracting(0.004), contracting(0.001), contracting(0.001)],
        [0, 0, 1, 1],
        [400.0, 300.0, math.nan, math.nan],
        cell=["a", "b", "b", "z"],
    )
    options = ForecastSettings(kappa_pool=pool)
    cal = heldout.calibrate(runs, (0.0,), options, with_bounds=False)
    delay = 0.8 / (kappa * G)
    f = heldout.forecast_run(runs, 2, cal, 100.0, options)
    assert f[:8] == (
        100.0,
        pytest.approx(100.0 + delay),
        pytest.approx(delay),
        pytest.approx(kappa),
        "calibrated",
        1000.0,
        pytest.approx(1000.0 * math.exp(-0.8)),
        "",
    )
    assert math.isnan(f.kappa_lo) and math.isnan(f.kappa_hi)  # κ's own interval: only κ(λ, η)'s
    pooled = heldout.calibrate(runs, (0.0,), ForecastSettings(), with_bounds=False)
    z = heldout.forecast_run(runs, 3, pooled, 200.0, ForecastSettings())
    assert (z.t, z.kappa, z.v_now) == (200.0, pytest.approx(0.3), pytest.approx(1000.0 * math.exp(-0.1)))
    assert math.isnan(z.T_hat) and math.isnan(z.delay_hat) and math.isnan(z.v_star) and z.reason.startswith("no V★")


def test_v_star_reads_only_positive_levels_and_values():
    """Calibration V at T: 50 at λ = 0 (no level), 0 and 4 at λ = 0.1 (0 is no norm), 2 at 0.2. At 0.1: 4 (not the
    median 2 with the 0). At 0.05: the power law through 0.1 and 0.2, slope log(2/4)/log 2 = −1: 4·(0.05/0.1)^−1 = 8."""
    cal = heldout.Calibration(
        (0.0,),
        {},
        {},
        np.array([0.0, 0.1, 0.1, 0.2]),
        np.array(["c"] * 4),
        np.array([50.0, 0.0, 4.0, 2.0]),
        np.full(4, 0.2),
        (-math.inf, math.inf),
    )
    assert heldout.v_star(cal, 0.1, "c", 1.0) == pytest.approx(4.0)
    assert heldout.v_star(cal, 0.05, "c", 1.0) == pytest.approx(8.0)


def test_residuals_skip_runs_due_at_or_before_their_forecast_step():
    """κ from the run (rate 0.002, g 0.01: κ = 0.2), its first κ at 120. Seed 0: run 0 transitions at 120 (= its
    forecast step: skipped, not a log(0)), run 3 at 400; seed 1: run 1 at 400; seed 2: run 2 at 300. Each from the
    other seeds' V at T, median: run 3 from V(400), V(300) (their mean, e^{−0.6} and e^{−0.4}); run 1 from V(120),
    V(400), V(300): V(300); run 2 from V(120), V(400), V(400): V(400). D̂ = log(V(120)/V★)/0.002, r = log(D/D̂)."""
    runs = runs_of([contracting(0.002)] * 4, [0, 1, 2, 0], [120.0, 400.0, 300.0, 400.0])
    out = heldout.residuals(runs, (0.0, 1.0, 2.0), ForecastSettings(kappa="run"))

    def r(d, v_star):
        return math.log(d / (math.log(1000.0 * math.exp(-0.04) / v_star) / 0.002))

    mean = 500.0 * (math.exp(-0.6) + math.exp(-0.4))
    assert out == [
        pytest.approx(r(280.0, mean)),
        pytest.approx(r(280.0, 1000.0 * math.exp(-0.4))),
        pytest.approx(r(180.0, 1000.0 * math.exp(-0.6))),
    ]


def test_residuals_skip_a_zero_forecast_delay_and_keep_a_short_one():
    """κ fixed at 0.2 (κ·g = 0.002). Run 0 (seed 0) from V 1000 at T_fit, T = 400: V(400) = 1000·e^{−0.6}. Run 1 (seed
    1) from V_mem = V★ = 1000·e^{−0.6} times e^{0.001}: D̂ = 0.001/0.002 = ½ step, T = 150, r = log(50/½). Run 2 (seed
    1) from V_mem 100, below V★: due at T_fit, D̂ = 0, skipped (no log(D/0))."""
    v_star = 1000.0 * math.exp(-0.6)
    runs = runs_of(
        [contracting(0.002), contracting(0.002, v_star * math.exp(0.001)), contracting(0.002, 100.0)],
        [0, 1, 1],
        [400.0, 150.0, 200.0],
    )
    out = heldout.residuals(runs, (0.0, 1.0), ForecastSettings(kappa="fixed", kappa_fixed=0.2))
    # run 0 from seed 1: V★ = median(V1(150), V2(200)) = their mean
    star0 = 0.5 * (v_star * math.exp(0.001 - 0.1) + 100.0 * math.exp(-0.2))
    assert out == [
        pytest.approx(math.log(300.0 / (math.log(1000.0 / star0) / 0.002))),
        pytest.approx(math.log(50.0 / 0.5)),
    ]


def test_a_lead_step_before_the_first_log_is_the_first_log():
    """T_fit = −5 (before the first log, 0), f = 0: t_f = −5, no log at or before it: the first log, 0."""
    runs = runs_of([contracting(0.002)], [0], [400.0], t_fit=[-5.0])
    assert heldout.lead_step(runs, 0, 0.0, math.nan) == 0.0
    assert heldout.lead_step(runs, 0, 0.5, math.nan) == 190.0  # −5 + ½·405 = 197.5: the log 190


def test_the_live_law_forecasts_runs_past_t_fit_with_finite_v_up_to_now():
    """Calibration: run 0 (κ 0.2, T = 400). Run 1 at now = 50 < T_fit: none. Run 2 at now = T_fit = 100: T̂ = 100 +
    0.6/0.002 = 400. Run 3 at now = 300 with V NaN at 300 itself: none (V at now is read)."""
    v = [contracting(0.002)] * 4
    v[3] = v[3].copy()
    v[3][30] = math.nan
    runs = runs_of(v, [0, 1, 1, 1], [400.0, math.nan, math.nan, math.nan])
    out = heldout.law_forecasts(runs, [math.nan, 50.0, 100.0, 300.0], ForecastSettings())
    assert list(out) == [2] and out[2].forecast.T_hat == pytest.approx(400.0)


def test_the_seed_bootstrap_interval_takes_the_quantiles_at_half_the_missing_level():
    """The atoms of test_known_answers' case: mean 0.1 (p ¼), 0.3 (p ½), 0.9 (p ¼). At confidence 0.4 the quantiles
    0.3 and 0.7 both fall in the middle atom (with α/3 in place of α/2, 0.2 and 0.8 would fall in the outer ones)."""
    values, seeds = [0.1, 0.1, 0.1, 0.9], [0, 0, 0, 1]
    assert heldout.seed_bootstrap(values, seeds, 4000, 0.4, 0) == (pytest.approx(0.3), pytest.approx(0.3))


def test_float32_values_bootstrap_as_their_float64_values():
    """Float32 values are averaged in float64: the interval equals that of the same values given in float64."""
    values = np.array([0.1, 0.37, 0.2, 0.9, 0.55, 0.03], np.float32)
    seeds = [0, 0, 1, 1, 2, 3]
    assert heldout.seed_bootstrap(values, seeds, 200, 0.8, 1) == heldout.seed_bootstrap(
        values.astype(np.float64), seeds, 200, 0.8, 1
    )


def test_the_auroc_without_one_class_is_nan_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(heldout.auroc([0.5, 0.7], [])) and math.isnan(heldout.auroc([], [0.5]))


def test_a_calibration_without_bounds_has_the_no_interval_bounds():
    """with_bounds=False: bounds (−∞, ∞), which `interval` reads as no interval and `joined` as none of its own."""
    runs = runs_of([contracting(0.002)], [0], [400.0])
    cal = heldout.calibrate(runs, (0.0,), ForecastSettings(), with_bounds=False)
    assert cal.bounds == (-math.inf, math.inf)
    prior = calibration(["c"], [0.3], (5.0,), bounds=(-0.5, 0.7))
    assert heldout.joined(prior, cal, ForecastSettings()).bounds == (-0.5, 0.7)


def test_a_calibration_level_at_lambda_zero_is_no_level():
    """Calibration V at T: 7 at λ = 0 and 3 at 0.1: λ = 0 is not a level, so at 0.05 V★ is the one level's 3."""
    cal = heldout.Calibration(
        (0.0,),
        {},
        {},
        np.array([0.0, 0.1]),
        np.array(["c", "c"]),
        np.array([7.0, 3.0]),
        np.full(2, 0.2),
        (-math.inf, math.inf),
    )
    assert heldout.v_star(cal, 0.05, "c", 1.0) == 3.0
