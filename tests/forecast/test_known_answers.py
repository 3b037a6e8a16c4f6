"""Known answers of the forecast at T_fit (`nht_jax.measure.forecast.first_passage`, `nht_jax.measure.forecast.heldout`), each worked
out by hand or by a slow implementation written here, on small asymmetric inputs chosen so that the wrong rule gives
another answer: n against n + 1 in the conformal ranks, the peak after T_fit against T_fit for the realised κ and
n − 2 against n − 1 for its degrees of freedom, the median against the mean for the calibrated κ and the median
delay, a run's own delay against the median for the lead steps, own against a pilot's bounds, the bootstrap's two
quantiles, log(D/D̂) against log(D̂/D). Pure numpy on histories built by hand, no training (issue 43)."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from nht_jax.measure.forecast import first_passage, heldout
from nht_jax.config.forecast import ForecastSettings


def exact_ranks(n: int, confidence: float) -> tuple[int, int]:
    """The split-conformal ranks ⌊(n+1)·α⌋ and ⌈(n+1)·(1 − α)⌉, α = (1 − c)/2, in exact rational arithmetic."""
    alpha = (1 - Fraction(str(confidence))) / 2
    return math.floor((n + 1) * alpha), math.ceil((n + 1) * (1 - alpha))


@pytest.mark.parametrize(
    "n, confidence, ranks",
    [
        (29, 0.9, (1, 29)),  # ⌈30·0.95⌉ = 29; ⌈29·0.95⌉ = 28
        (39, 0.9, (2, 38)),  # ⌊40·0.05⌋ = 2; ⌊39·0.05⌋ = 1
        (19, 0.9, (1, 19)),  # the fewest at 90 %: 20·0.05 = 1 exactly (0.9999999999999998 in floating point)
        (9, 0.8, (1, 9)),  # the fewest at 80 %: 10·0.1 = 1 exactly (0.9999999999999998 in floating point)
        (24, 0.68, (4, 21)),  # 25·0.84 = 21 exactly (21.000000000000004 in floating point)
        (18, 0.9, None),  # ⌈19·0.95⌉ = 19 > 18: too few
        (8, 0.8, None),  # ⌊9·0.1⌋ = 0: too few
    ],
)
def test_conformal_bounds_take_the_n_plus_one_ranks_of_the_sorted_finite_residuals(n, confidence, ranks):
    """Residuals with distinct unequal gaps (squares), shuffled, with NaN and ∞ among them that are dropped: the
    bounds are the sorted residuals at the 1-based ranks ⌊(n+1)α⌋ and ⌈(n+1)(1 − α)⌉ worked out beside each case
    (with n in place of n + 1 the first two cases give another rank), or (−∞, ∞) when a rank falls outside 1..n."""
    r = (np.arange(n, dtype=float) - 3.0) ** 2 * np.sign(np.arange(n) - 3.0) / 100.0
    noisy = np.concatenate([np.random.default_rng(1).permutation(r), [math.nan, math.inf, -math.inf]])
    assert exact_ranks(n, confidence) == (ranks or exact_ranks(n, confidence))
    got = first_passage.conformal_bounds(noisy, confidence)
    if ranks is None:
        assert got == (-math.inf, math.inf)
    else:
        s = np.sort(r)
        assert got == (s[ranks[0] - 1], s[ranks[1] - 1])


STEPS_K = np.arange(0.0, 201.0, 10.0)
NOISE = np.array([0.02, -0.01, 0.03, -0.02, 0.0, 0.01, -0.03])  # log V's deviations at 90 … 150


def peaked():
    """T_fit = 50: V = 5000 before it (a larger V the fit must not see), 100 → 160 over 50 … 80 (the peak after
    T_fit), then 160·e^{−0.01·(t − 80) + noise} at 90 … 150 and a fall to a tenth after 150 (beyond t_now)."""
    v = np.full(STEPS_K.size, 5000.0)
    v[5:9] = [100.0, 120.0, 140.0, 160.0]
    v[9:16] = 160.0 * np.exp(-0.01 * (STEPS_K[9:16] - 80.0) + NOISE)
    v[16:] = 16.0 * np.exp(-0.01 * (STEPS_K[16:] - 80.0))
    return v


def slow_fit(t, y):
    """Least squares of y on t by the textbook sums: (slope, its standard error)."""
    n, tm, ym = len(t), sum(t) / len(t), sum(y) / len(y)
    sxx = sum((a - tm) ** 2 for a in t)
    slope = sum((a - tm) * (b - ym) for a, b in zip(t, y)) / sxx
    sse = sum((b - ym - slope * (a - tm)) ** 2 for a, b in zip(t, y))
    return slope, math.sqrt(sse / (n - 2) / sxx)


@pytest.mark.parametrize("confidence", [0.9, 0.8])
def test_the_realised_kappa_is_fitted_from_the_peak_after_t_fit_with_n_minus_2_degrees_of_freedom(confidence):
    """With t_now = 150 the logs from the peak (80) to 150 are eight; κ = γ̂/g with γ̂ the least-squares slope of
    −log V over them, and its interval γ̂ ± t_{(1+c)/2, 6}·se / g (Student-t, n − 2 = 6 degrees of freedom), computed
    here by the textbook sums: from T_fit (50, still rising) or from the larger V before it, or with 7 or 8 degrees of
    freedom, or with the log at t_now left out, κ or its bounds differ."""
    g = 0.004
    k = first_passage.realised_kappa(STEPS_K, peaked(), 50.0, 150.0, g, min_points=3, confidence=confidence)
    t = STEPS_K[8:16]
    slope, se = slow_fit(list(t), list(np.log(peaked()[8:16])))
    q = stats.t.ppf(0.5 + confidence / 2, 6)
    assert (k.t_start, k.n) == (80.0, 8)
    assert k.kappa == pytest.approx(-slope / g, rel=1e-9)
    assert (k.lo, k.hi) == (
        pytest.approx((-slope - q * se) / g, rel=1e-9),
        pytest.approx((-slope + q * se) / g, rel=1e-9),
    )
    assert k.lo < k.kappa < k.hi and k.kappa == pytest.approx(0.01 / g, rel=0.2)


def test_the_realised_kappa_needs_min_points_logs_from_the_peak_and_a_fall():
    """From the peak at 80: at t_now = 90 two logs (none), at 100 three (a κ), so the first log with a κ is 100;
    with min_points 4, 110. A series that keeps rising past T_fit, or no contraction g, gives none."""
    v = peaked()
    assert math.isnan(first_passage.realised_kappa(STEPS_K, v, 50.0, 90.0, 0.004).kappa)
    assert first_passage.realised_kappa(STEPS_K, v, 50.0, 100.0, 0.004).n == 3
    assert first_passage.first_log_with_kappa(STEPS_K, v, 50.0, 0.004, 3) == 100.0
    assert first_passage.first_log_with_kappa(STEPS_K, v, 50.0, 0.004, 4) == 110.0
    assert first_passage.realised_kappa(STEPS_K, 1.0 + STEPS_K, 50.0, 200.0, 0.004) == first_passage.NO_KAPPA
    assert first_passage.realised_kappa(STEPS_K, v, 50.0, 150.0, 0.0) == first_passage.NO_KAPPA
    assert math.isnan(first_passage.first_log_with_kappa(STEPS_K, 1.0 + STEPS_K, 50.0, 0.004, 3))


def test_the_law_is_exact_on_its_own_inputs():
    """D = log(V_mem/V★)/(κ·g) and κ = log(V_mem/V★)/(g·(T − T_mem)), worked out: log(800/100) = 3·log 2."""
    assert first_passage.law_delay(800.0, 100.0, 0.25, 0.02) == pytest.approx(3 * math.log(2) / 0.005, rel=1e-12)
    assert first_passage.law_kappa(100.0, 500.0, 800.0, 100.0, 0.02) == pytest.approx(3 * math.log(2) / 8.0, rel=1e-12)
    assert math.isnan(first_passage.law_kappa(100.0, 100.0, 800.0, 100.0, 0.02))  # no delay
    assert math.isnan(first_passage.law_kappa(100.0, 500.0, 100.0, 100.0, 0.02))  # V did not fall
    assert math.isnan(first_passage.law_delay(800.0, 100.0, 0.0, 0.02))
    assert first_passage.interval(100.0, 400.0, (math.log(0.5), math.log(3.0))) == (
        pytest.approx(300.0),
        pytest.approx(1300.0),
    )
    assert first_passage.interval(100.0, 0.0, (-1.0, 1.0)) == (100.0, 100.0)  # due now: t itself


# ----------------------------------------------------------------------------- hand-built grids

STEPS = np.arange(0.0, 2001.0, 10.0)
T_FIT = 100.0
G = 0.01  # the decay-only contraction of every run


def contracting(rate, v_mem=1000.0):
    """V rises to v_mem at T_FIT, then V = v_mem·e^{−rate·(t − T_FIT)} (exact at every log)."""
    return np.where(STEPS < T_FIT, v_mem * (0.5 + 0.5 * STEPS / T_FIT), v_mem * np.exp(-rate * (STEPS - T_FIT)))


def grid(v, seed, t_tr, cell=None, positive=None, negative=None, lam=0.1):
    n = len(v)
    t_tr = np.asarray(t_tr, float)
    return heldout.Runs(
        STEPS,
        np.array(v, float),
        np.asarray(seed, float),
        np.full(n, lam),
        np.full(n, G),
        np.asarray(cell if cell is not None else ["c"] * n),
        np.full(n, T_FIT),
        t_tr,
        np.asarray(positive if positive is not None else np.isfinite(t_tr)),
        np.asarray(negative if negative is not None else np.zeros(n, bool)),
    )


def test_v_at_reads_the_last_log_at_or_before_t():
    runs = grid([contracting(0.002)], [0], [400.0])
    assert heldout.v_at(runs, 0, 400.0) == runs.v[0, 40] and heldout.v_at(runs, 0, 409.0) == runs.v[0, 40]
    assert heldout.v_at(runs, 0, -5.0) == runs.v[0, 0]


def test_the_calibrated_kappa_is_the_median_of_the_runs_own_kappas():
    """Runs contracting at κ·g with κ = 0.1, 0.2, 0.9 (cell a) and 0.5 (cell b) from V_mem at T_fit: each run's own
    κ (`law_kappa`) is its κ exactly, pooled over all by the median 0.35 (mean 0.425), per cell 0.2 (mean 0.4) and
    0.5; a run that never transitions, or transitions at T_fit, is not a calibration run."""
    kappas = [0.1, 0.2, 0.9, 0.5, 0.3, 0.3]
    runs = grid(
        [contracting(k * G) for k in kappas],
        [0, 1, 2, 3, 0, 1],
        [400.0, 500.0, 300.0, 600.0, math.nan, 100.0],
        cell=["a", "a", "a", "b", "a", "a"],
    )
    cal = heldout.calibrate(runs, (0, 1, 2, 3), ForecastSettings(), with_bounds=False)
    np.testing.assert_allclose(cal.kappas, kappas[:4], rtol=1e-12)
    assert cal.kappa == {"all": pytest.approx(0.35, rel=1e-12)} and cal.kappa_n == {"all": 4}
    np.testing.assert_allclose(
        cal.v_t, [1000.0 * math.exp(-k * G * d) for k, d in zip(kappas, (300, 400, 200, 500))], rtol=1e-12
    )
    by_cell = heldout.calibrate(runs, (0, 1, 2, 3), ForecastSettings(kappa_pool="cell"), with_bounds=False)
    assert by_cell.kappa == {"a": pytest.approx(0.2, rel=1e-12), "b": pytest.approx(0.5, rel=1e-12)}
    assert by_cell.kappa_n == {"a": 3, "b": 1}
    assert heldout.kappa_of(by_cell, 0.1, "b", ForecastSettings(kappa_pool="cell")) == pytest.approx(0.5)
    assert heldout.kappa_of(cal, 0.1, "b", ForecastSettings()) == pytest.approx(0.35)
    only = heldout.calibrate(runs, (0, 2), ForecastSettings(), with_bounds=False)  # seeds 0 and 2: κ 0.1, 0.9
    assert only.kappa == {"all": pytest.approx(0.5, rel=1e-12)} and only.kappa_n == {"all": 2}


def test_lead_steps_take_a_positives_own_delay_and_a_negatives_median_delay_on_the_last_log():
    """Logs every 40 from 0, T_fit = 120: a positive transitioning at 720 (delay 600) is cut at f = 0.25 at
    120 + 150 = 270, the log 240, at f = 0.5 at 420, the log 400; a negative, with the positives' median delay 200,
    at 170 (the log 160) and 220 (the log 200)."""
    steps = np.arange(0.0, 2001.0, 40.0)
    runs = heldout.Runs(
        steps,
        np.ones((2, steps.size)),
        np.zeros(2),
        np.full(2, 0.1),
        np.full(2, G),
        np.zeros(2),
        np.full(2, 120.0),
        np.array([720.0, math.nan]),
        np.array([True, False]),
        np.array([False, True]),
    )
    assert [heldout.lead_step(runs, 0, f, 200.0) for f in (0.0, 0.25, 0.5)] == [120.0, 240.0, 400.0]
    assert [heldout.lead_step(runs, 1, f, 200.0) for f in (0.0, 0.25, 0.5)] == [120.0, 160.0, 200.0]


KAPPA_FIXED = 0.5  # the true κ is 0.2: T̂(t) moves with the step t it is made at


def test_held_out_forecasts_at_the_leads_are_made_at_the_right_steps():
    """Positives of seeds 0, 1, 2 with delays 100, 200, 600 (median 200, mean 300), contracting at κ = 0.2, 0.2,
    0.05 of g; a negative of seed 0 has V = 2000 throughout. With κ fixed at 0.5 the forecast from step t is
    T̂(t) = t + log(V_t/V★)/(0.5·g), V★ the median V at T of the other seeds' runs, worked out here: the negative's
    forecasts at f = 0.25 and 0.5 are made at T_fit + f·200 (its V is constant, so they move with t alone), the
    positive of delay 600 at T_fit + f·600 (its V still above V★ there)."""
    delays, kappas = {0: 100.0, 1: 200.0, 2: 600.0}, {0: 0.2, 1: 0.2, 2: 0.05}
    v = [contracting(kappas[s] * G) for s in delays] + [np.full(STEPS.size, 2000.0)]
    runs = grid(
        v,
        [0, 1, 2, 0],
        [T_FIT + d for d in delays.values()] + [math.nan],
        positive=[True, True, True, False],
        negative=[False, False, False, True],
    )
    options = ForecastSettings(kappa="fixed", kappa_fixed=KAPPA_FIXED)
    out = {s.run: s for s in heldout.heldout(runs, options, leads=(0.25, 0.5))}
    v_t = {s: 1000.0 * math.exp(-kappas[s] * G * d) for s, d in delays.items()}

    def t_hat(t, v_now, others):
        star = float(np.median([v_t[o] for o in others]))
        assert v_now > star  # not due yet: T̂ moves with t
        return t + math.log(v_now / star) / (KAPPA_FIXED * G)

    neg = out[3]
    assert neg.role == "negative" and neg.forecast.T_hat == pytest.approx(t_hat(T_FIT, 2000.0, (1, 2)), rel=1e-12)
    assert neg.at_leads == (
        pytest.approx(t_hat(150.0, 2000.0, (1, 2)), rel=1e-12),
        pytest.approx(t_hat(200.0, 2000.0, (1, 2)), rel=1e-12),
    )
    pos = out[2]
    assert pos.role == "positive" and pos.at_leads == (
        pytest.approx(t_hat(250.0, 1000.0 * math.exp(-0.05 * G * 150.0), (0, 1)), rel=1e-12),
        pytest.approx(t_hat(400.0, 1000.0 * math.exp(-0.05 * G * 300.0), (0, 1)), rel=1e-12),
    )


def cal_of(bounds, kappas, seeds, cell="c"):
    n = len(kappas)
    return heldout.Calibration(
        tuple(seeds),
        {},
        {},
        np.full(n, 0.1),
        np.full(n, cell),
        np.arange(1.0, n + 1.0),
        np.asarray(kappas, float),
        bounds,
    )


def test_a_joined_calibration_keeps_its_own_bounds_and_takes_a_pilots_only_without_them():
    """A pilot's calibration (κ 0.1, 0.9; bounds (−0.5, 0.7)) joined with the grid's own (κ 0.2; bounds (−0.1, 0.2)):
    κ the median of all three, 0.2 (mean 0.4); the bounds the grid's own while it has them, the pilot's when its own
    are (−∞, ∞) (too few residuals)."""
    prior = cal_of((-0.5, 0.7), [0.1, 0.9], (5.0, 6.0))
    own = cal_of((-0.1, 0.2), [0.2], (0.0,))
    both = heldout.joined(prior, own, ForecastSettings())
    assert both.bounds == (-0.1, 0.2) and both.kappa == {"all": pytest.approx(0.2)} and both.kappa_n == {"all": 3}
    assert both.seeds == (0.0, 5.0, 6.0) and list(both.v_t) == [1.0, 2.0, 1.0] and list(both.kappas) == [0.1, 0.9, 0.2]
    none = heldout.joined(prior, own._replace(bounds=(-math.inf, math.inf)), ForecastSettings())
    assert none.bounds == (-0.5, 0.7)
    half = heldout.joined(prior, own._replace(bounds=(-0.1, math.inf)), ForecastSettings())
    assert half.bounds == (-0.5, 0.7)


def test_the_seed_bootstrap_takes_the_two_tail_quantiles_of_the_pooled_means():
    """Seed 0 has three runs of 0.1, seed 1 one of 0.9: a resample of the two seeds (their runs together) has mean
    0.1 (seed 0 twice, p = ¼), 0.3 (one of each, (0.3 + 0.9)/4, p = ½; the mean of the seeds' means would be 0.5) or
    0.9 (p = ¼). At confidence 0.6 the quantiles 0.2 and 0.8 of 4,000 means fall in the outer atoms (0.1, 0.9), at
    0.2 the quantiles 0.4 and 0.6 both in the middle one (0.3); the chance that either misses is below 10⁻¹⁰."""
    values, seeds = [0.1, 0.1, 0.1, 0.9], [0, 0, 0, 1]
    assert heldout.seed_bootstrap(values, seeds, 4000, 0.6, 0) == (pytest.approx(0.1), pytest.approx(0.9))
    assert heldout.seed_bootstrap(values, seeds, 4000, 0.2, 3) == (pytest.approx(0.3), pytest.approx(0.3))
    assert all(math.isnan(x) for x in heldout.seed_bootstrap(values, seeds, 0, 0.9, 0))
    assert all(math.isnan(x) for x in heldout.seed_bootstrap([], [], 100, 0.9, 0))


def test_the_auroc_counts_won_pairs_and_half_the_ties():
    """Positives 3, 2, 2 against negatives 2, 1: pairs won 2 + 1 + 1 and tied 0 + 1 + 1 of 6, so (4 + 1)/6."""
    assert heldout.auroc([3.0, 2.0, 2.0], [2.0, 1.0]) == pytest.approx(5 / 6)
    assert heldout.auroc([1.0], [2.0]) == 0.0 and math.isnan(heldout.auroc([], [1.0]))


DELAYS = {0: 300.0, 1: 400.0, 2: 500.0, 3: 800.0}
TOO_FAST = 0.6  # κ fixed at 3× the true 0.2: every forecast delay is short of the real one


def slow_residuals(seeds):
    """log(D/D̂) of each seed's run forecast from the others: V★ the median of their V at T, D̂ by the law."""
    v_t = {s: 1000.0 * math.exp(-0.2 * G * DELAYS[s]) for s in DELAYS}
    out = []
    for s in seeds:
        star = float(np.median([v_t[o] for o in seeds if o != s]))
        out.append(math.log(DELAYS[s] / (math.log(1000.0 / star) / (TOO_FAST * G))))
    return out


def test_residuals_are_log_real_over_forecast_delay_and_an_underestimate_puts_the_interval_above():
    """One run per seed contracting at 0.2·g, delays 300, 400, 500, 800, forecast with κ fixed at 0.6: each
    calibration residual is log(D/D̂) > 0 (the law's delay is short), as worked out slowly here; the calibration's
    bounds at 50 % with n residuals are their ranks ⌊(n+1)/4⌋ and ⌈3(n+1)/4⌉ (n = 3: the least and the greatest), so
    a held-out seed's interval [T_fit + D̂·e^{r_lo}, T_fit + D̂·e^{r_hi}] lies above its forecast, not mirrored
    below it."""
    runs = grid([contracting(0.2 * G) for _ in DELAYS], list(DELAYS), [T_FIT + d for d in DELAYS.values()])
    options = ForecastSettings(kappa="fixed", kappa_fixed=TOO_FAST, interval=0.5)
    got = heldout.residuals(runs, (0, 1, 2, 3), options)
    assert got == pytest.approx(slow_residuals((0, 1, 2, 3)), rel=1e-12) and min(got) > 0
    assert heldout.calibrate(runs, (0, 1, 2, 3), options).bounds == first_passage.conformal_bounds(got, 0.5)
    s0 = next(s for s in heldout.heldout(runs, options) if s.run == 0)
    r = slow_residuals((1, 2, 3))
    d_hat = math.log(1000.0 / (1000.0 * math.exp(-0.2 * G * 500.0))) / (TOO_FAST * G)  # V★: seed 2's V at T
    assert s0.forecast.T_hat == pytest.approx(T_FIT + d_hat, rel=1e-12)
    assert (s0.T_lo, s0.T_hi) == (
        pytest.approx(T_FIT + d_hat * math.exp(min(r)), rel=1e-12),
        pytest.approx(T_FIT + d_hat * math.exp(max(r)), rel=1e-12),
    )
    assert s0.forecast.T_hat < s0.T_lo < s0.T_hi


# ----------------------------------------------------------------------------- the rest of heldout, line by line


def test_a_calibration_run_needs_finite_positive_v_up_to_its_transition_only():
    """Runs transitioning at 400: one with NaN after T (never read) serves, one with NaN or 0 before T does not,
    one transitioning at its T_fit or never does not."""
    v = [contracting(0.002) for _ in range(6)]
    v[1][50:] = math.nan
    v[2][30] = math.nan
    v[3][39] = 0.0
    runs = grid(v, range(6), [400.0, 400.0, 400.0, 400.0, T_FIT, math.nan])
    assert list(heldout.transitioned(runs)) == [True, True, False, False, False, False]
    v[3][39], v[3][40] = 1.0, 0.0  # V = 0 at T itself: still before-or-at T, refused
    assert not heldout.transitioned(grid(v, range(6), [400.0] * 6))[3]


def test_cells_name_every_axis_outside_the_free_ones_in_order_with_six_digits():
    hp = {
        "weight_decay": np.array([0.1, 0.2]),
        "seed": np.array([0, 1]),
        "width": np.array([64, 128]),
        "learning_rate": np.array([1e-3, 1.23456789e-3]),
    }
    assert list(heldout.cells(hp, ("weight_decay", "seed"))) == [
        "learning_rate=0.001, width=64",
        "learning_rate=0.00123457, width=128",
    ]


def test_the_kappa_at_a_runs_level_follows_the_calibrations_kappa_in_lambda():
    """κ pooled at the run's λ ("level"): the median κ at its λ level when the calibration has one (0.3, 0.5 at
    λ 0.2: 0.4), else the power law through the two nearest levels (λ 0.1: 0.2, λ 0.2: 0.4, so at λ 0.4 with the
    full slope 0.8); another cell or λ = 0 has none."""
    cal = heldout.Calibration(
        (0.0,),
        {},
        {},
        np.array([0.1, 0.2, 0.2]),
        np.array(["c", "c", "c"]),
        np.ones(3),
        np.array([0.2, 0.3, 0.5]),
        (-math.inf, math.inf),
    )
    level = ForecastSettings(kappa_pool="level")
    assert heldout.kappa_of(cal, 0.2, "c", level) == pytest.approx(0.4, rel=1e-12)
    assert heldout.kappa_of(cal, 0.4, "c", level) == pytest.approx(0.8, rel=1e-12)
    assert heldout.kappa_of(cal, 0.4, "c", ForecastSettings(kappa_pool="level", v_star_weight=0.0)) == 0.4
    assert math.isnan(heldout.kappa_of(cal, 0.2, "d", level)) and math.isnan(heldout.kappa_of(cal, 0.0, "c", level))


def test_a_forecast_without_v_star_kappa_or_g_says_why():
    runs = grid([contracting(0.002)] * 2, [0, 1], [400.0, math.nan])
    cal = heldout.calibrate(runs, (0,), ForecastSettings(), with_bounds=False)
    ok = heldout.forecast_run(runs, 1, cal, 200.0, ForecastSettings())
    star = 1000.0 * math.exp(-0.002 * 300.0)
    assert ok.T_hat == pytest.approx(200.0 + math.log(1000.0 * math.exp(-0.2) / star) / (0.2 * G), rel=1e-12)
    assert (ok.kappa, ok.kappa_source, ok.reason) == (pytest.approx(0.2), "calibrated", "")
    assert heldout.forecast_run(
        runs._replace(cell=np.array(["c", "d"])), 1, cal, 200.0, ForecastSettings()
    ).reason.startswith("no V★")
    empty = cal._replace(kappa={})
    assert heldout.forecast_run(runs, 1, empty, 200.0, ForecastSettings()).reason == (
        "no κ: no calibration run to measure it"
    )
    assert heldout.forecast_run(runs, 1, cal, 110.0, ForecastSettings(kappa="run")).reason == (
        "no κ: V does not contract past its peak yet"
    )
    assert heldout.forecast_run(runs._replace(g=np.zeros(2)), 1, cal, 200.0, ForecastSettings()).reason.startswith(
        "no decay-only contraction g"
    )


def test_with_the_runs_own_kappa_the_forecast_waits_for_min_points_logs_past_the_peak():
    """The peak at T_fit = 100, logs every 10: κ from the run needs the logs 100, 110, 120, so "at T_fit" is 120,
    and its κ is the run's rate over g; a calibration run that transitions at 110, before that, has no residual
    (its delay from 120 is not positive) while the two others have one each."""
    runs = grid([contracting(0.002)] * 2, [0, 1], [400.0, math.nan])
    options = ForecastSettings(kappa="run")
    assert (
        heldout.forecast_step(runs, 1, options) == 120.0 and heldout.forecast_step(runs, 1, ForecastSettings()) == 100.0
    )
    cal = heldout.calibrate(runs, (0,), options, with_bounds=False)
    f = heldout.forecast_run(runs, 1, cal, 120.0, options)
    assert (f.kappa, f.kappa_source) == (pytest.approx(0.2, rel=1e-9), "run")
    three = grid([contracting(0.002)] * 3, [0, 1, 2], [110.0, 400.0, 500.0])
    assert len(heldout.residuals(three, (0, 1, 2), options)) == 2


def test_the_status_is_censored_beyond_the_budget_and_missed_when_due_at_it():
    """A run without a transition forecast at the budget B = 2000: T̂(B) > B censored, T̂(B) = B (V already at V★)
    missed; a transitioned run is transitioned, or anti-grokked when its metric falls back."""
    runs = grid([contracting(0.002)] * 2, [0, 1], [400.0, math.nan])
    nothing = heldout.TfitForecast(*([math.nan] * 4), "fixed", math.nan, math.nan, "")

    def scored(t_hat):
        return heldout.Scored(1, 1.0, "other", (), nothing, math.nan, math.nan, (), nothing._replace(T_hat=t_hat))

    assert heldout.status(runs, 1, scored(2000.5)) == "censored"
    assert heldout.status(runs, 1, scored(2000.0)) == "missed"
    assert heldout.status(runs, 1, scored(math.nan)) == "no forecast" and heldout.status(runs, 1, None) == "no forecast"
    metric = np.where(STEPS >= 400.0, 1.0, 0.0)
    assert heldout.status(runs, 0, None, metric, 0.99) == "transitioned"
    metric[60:63] = 0.5
    assert heldout.status(runs, 0, None, metric, 0.99) == "anti-grokked"
    assert heldout.status(runs, 0, None, metric, 0.99, logs=4) == "transitioned"


def test_the_anti_grokking_run_counts_only_logs_after_t():
    """Low at T = 1 and the two logs after it: two low logs after T, not three (T itself does not count); the
    margin is strict (0.89 is not below 0.99 − 0.1)."""
    steps = np.arange(10.0)
    acc = np.array([0.5, 0.5, 0.5, 0.5, 1, 1, 1, 1, 1, 1])
    assert not heldout.anti_grokked(steps, acc, 1.0, 0.99, "above", 0.1, 3)
    assert heldout.anti_grokked(steps, acc, 1.0, 0.99, "above", 0.1, 2)
    assert not heldout.anti_grokked(steps, np.where(steps > 3, 0.89, 1.0), 3.0, 0.99, "above", 0.1, 3)


def test_the_live_law_forecasts_unfinished_runs_from_now_with_a_pilots_bounds_when_its_own_are_too_few():
    """Seeds 0 and 1 transitioned (κ 0.2 and 0.4: median 0.3, V★ the median of their V at T); run 2 (κ 0.3) is
    forecast from now = 300 as T̂ = 300 + log(V_300/V★)/(0.3·g); two seeds give two residuals, too few at 90 %, so
    the interval is the pilot's bounds (log 0.5, log 2) once a pilot is given and none without; a run before its
    T_fit, or with a non-finite V so far, or transitioned, gets no forecast."""
    v = [contracting(0.2 * G), contracting(0.4 * G), contracting(0.3 * G), contracting(0.3 * G), contracting(0.3 * G)]
    v[4][20] = math.nan
    runs = grid(v, [0, 1, 0, 1, 1], [400.0, 300.0, math.nan, math.nan, math.nan])
    now = np.array([2000.0, 2000.0, 300.0, 50.0, 300.0])
    star = float(np.median([1000.0 * math.exp(-0.2 * G * 300.0), 1000.0 * math.exp(-0.4 * G * 200.0)]))
    t_hat = 300.0 + math.log(1000.0 * math.exp(-0.3 * G * 200.0) / star) / (0.3 * G)
    alone = heldout.law_forecasts(runs, now, ForecastSettings())
    assert list(alone) == [2] and alone[2].forecast.T_hat == pytest.approx(t_hat, rel=1e-12)
    assert math.isnan(alone[2].T_lo) and math.isnan(alone[2].T_hi)
    prior = cal_of((math.log(0.5), math.log(2.0)), [0.3], (7.0,), cell="c")._replace(
        lam=np.array([0.1]), v_t=np.array([star])
    )
    joined = heldout.law_forecasts(runs, now, ForecastSettings(), prior)[2]
    d = t_hat - 300.0
    assert joined.forecast.T_hat == pytest.approx(t_hat, rel=1e-12)
    assert (joined.T_lo, joined.T_hi) == (
        pytest.approx(300.0 + d / 2, rel=1e-12),
        pytest.approx(300.0 + 2 * d, rel=1e-12),
    )
