"""The forecast at T_fit on exactly solvable histories (`nht_jax.measure.forecast.first_passage`, `nht_jax.measure.forecast.heldout`):
a contraction at a known rate from a known V_mem to a known V★ gives the known T; the realised κ is the rate over
g; the split-conformal interval covers a held-out T; a scored seed never calibrates its own forecast; the
anti-grokking rule. Pure numpy, no training."""

import math

import numpy as np
import pytest

from nht_jax.measure.forecast import first_passage, heldout
from nht_jax.config.forecast import ForecastSettings

STEPS = np.arange(0.0, 4001.0, 10.0)
T_FIT = 100.0
KAPPA = 0.3
LAMS = (0.1, 0.2, 0.4, 0.8)
ETA = 0.01


def g_of(lam):
    return -math.log1p(-ETA * lam) * 2  # V's decay-only log contraction per step: (1 − ηλ)² per step


def history(v_mem, rate, t_fit=T_FIT):
    """V rises linearly to v_mem at T_fit, then V = v_mem·e^{−rate·(t − T_fit)}."""
    return np.where(STEPS < t_fit, v_mem * (0.5 + 0.5 * STEPS / t_fit), v_mem * np.exp(-rate * (STEPS - t_fit)))


def test_a_known_contraction_gives_the_known_T_and_kappa():
    v_mem, v_star, lam = 1000.0, 400.0, 0.4
    g = g_of(lam)
    rate = KAPPA * g
    t = T_FIT + math.log(v_mem / v_star) / rate  # the known T
    assert first_passage.law_delay(v_mem, v_star, KAPPA, g) == pytest.approx(t - T_FIT, rel=1e-12)
    assert first_passage.law_kappa(T_FIT, t, v_mem, v_star, g) == pytest.approx(KAPPA, rel=1e-12)
    k = first_passage.realised_kappa(STEPS, history(v_mem, rate), T_FIT, 500.0, g)
    assert k.kappa == pytest.approx(KAPPA, rel=1e-9) and k.lo - 1e-9 <= KAPPA <= k.hi + 1e-9 and k.t_start == T_FIT
    assert first_passage.law_delay(v_star, v_mem, KAPPA, g) == 0.0  # V already at or below V★: due now
    assert math.isnan(first_passage.law_delay(v_mem, v_star, KAPPA, 0.0))  # no decay: no forecast
    # the fewest logs the run's own rate needs: min_points logs from the peak at T_fit on
    assert first_passage.first_log_with_kappa(STEPS, history(v_mem, rate), T_FIT, g, 3) == T_FIT + 20.0


def test_conformal_bounds_are_the_order_statistics_and_refuse_too_few():
    r = np.linspace(-1.0, 1.0, 39)  # n = 39: ranks ⌊40·0.05⌋ = 2 and ⌈40·0.95⌉ = 38
    assert first_passage.conformal_bounds(r, 0.9) == (pytest.approx(r[1]), pytest.approx(r[37]))
    assert first_passage.conformal_bounds(r[:10], 0.9) == (-math.inf, math.inf)
    assert all(math.isnan(x) for x in first_passage.interval(100.0, 50.0, (-math.inf, math.inf)))  # no interval
    assert first_passage.interval(100.0, 50.0, (math.log(0.5), math.log(2.0))) == (
        pytest.approx(125.0),
        pytest.approx(200.0),
    )


def planted_runs(seeds=6, jitter=0.0):
    """LAMS × seeds runs contracting at κ·g from V_mem = 1000 to V★(λ) = 1000·e^{−1.2}·λ^{−0.1}·e^{jitter·z}: the
    transition is the first log at or below V★; z a standard normal per run (fixed draws), so that with jitter > 0
    the calibration's errors are not all zero and the runs are exchangeable."""
    z = np.random.default_rng(0).standard_normal(seeds * len(LAMS))
    v, seed, lam, t_tr = [], [], [], []
    for s in range(seeds):
        for la in LAMS:
            star = 1000.0 * math.exp(-1.2) * la**-0.1 * math.exp(jitter * z[len(v)])
            h = history(1000.0, KAPPA * g_of(la))
            v.append(h), seed.append(s), lam.append(la)
            t_tr.append(float(STEPS[np.flatnonzero((STEPS >= T_FIT) & (h <= star))[0]]))
    n = len(v)
    return heldout.Runs(
        STEPS,
        np.array(v),
        np.array(seed, float),
        np.array(lam),
        np.array([g_of(x) for x in lam]),
        np.zeros(n, int),
        np.full(n, T_FIT),
        np.array(t_tr),
        np.ones(n, bool),
        np.zeros(n, bool),
    )


def test_held_out_forecasts_hit_T_and_their_interval_covers_it():
    runs = planted_runs(jitter=0.0)  # every seed alike: the law is exact up to the log grid
    out = heldout.heldout(runs, ForecastSettings(), leads=(0.0,))
    for s in out:
        assert abs(s.forecast.T_hat - runs.t_tr[s.run]) <= 10.0  # within one log of the known T
    runs = planted_runs(jitter=0.2)
    out = heldout.heldout(runs, ForecastSettings(), leads=(0.0,))
    assert all(np.isfinite(s.T_lo) and np.isfinite(s.T_hi) for s in out)  # 5 calibration seeds: 20 residuals
    covered = [s.T_lo <= runs.t_tr[s.run] <= s.T_hi for s in out]
    assert np.mean(covered) >= 0.8  # nominal 0.9; 24 runs, so 0.8 leaves room for two more misses


def test_a_scored_seed_never_calibrates_its_own_forecast():
    """Seed 0's forecasts do not move when seed 0's own transitions and later norms are changed: nothing of a
    scored seed enters its calibration (its V up to T_fit, which the forecast reads, is kept)."""
    runs = planted_runs(jitter=0.2)
    before = {
        s.run: (s.forecast.T_hat, s.T_lo, s.T_hi)
        for s in heldout.heldout(runs, ForecastSettings(), leads=(0.0,))
        if s.seed == 0
    }
    mine = runs.seed == 0
    v = runs.v.copy()
    v[mine] = np.where(STEPS > T_FIT, v[mine] * 0.3, v[mine])
    poisoned = runs._replace(v=v, t_tr=np.where(mine, runs.t_tr * 3, runs.t_tr))
    after = {
        s.run: (s.forecast.T_hat, s.T_lo, s.T_hi)
        for s in heldout.heldout(poisoned, ForecastSettings(), leads=(0.0,))
        if s.seed == 0
    }
    assert after == before
    assert all(0.0 not in cal for scored, cal in heldout.splits(runs.seed) if 0.0 in scored)
    assert heldout.splits([0, 1, 2], calibration_seeds=(1,)) == [((0.0, 2.0), (1.0,))]


def test_anti_grokking_needs_the_stated_fall_for_the_stated_logs():
    steps = np.arange(10.0)
    acc = np.array([0, 0, 1, 1, 0.95, 0.85, 0.85, 0.85, 1, 1])  # T = 2; below 0.99 − 0.1 at steps 5, 6, 7
    assert heldout.anti_grokked(steps, acc, 2.0, 0.99, "above", 0.1, 3)
    assert not heldout.anti_grokked(steps, acc, 2.0, 0.99, "above", 0.1, 4)
    assert not heldout.anti_grokked(steps, acc, 2.0, 0.99, "above", 0.2, 1)
    assert heldout.anti_grokked(steps, 1 - acc, 2.0, 0.01, "below", 0.1, 3)  # a metric that transitions downward


def test_a_flat_norm_gives_no_realised_kappa():
    """V ≡ 1 from T_fit on: log V ≡ 0, the fitted slope is exactly 0, γ̂ = 0 is not a contraction: no κ (not κ = 0)."""
    steps = np.arange(0.0, 101.0, 10.0)
    assert first_passage.realised_kappa(steps, np.ones(steps.size), 20.0, 100.0, 0.01) == first_passage.NO_KAPPA
    assert math.isnan(first_passage.first_log_with_kappa(steps, np.ones(steps.size), 20.0, 0.01, 3))


@pytest.mark.parametrize("steps_dtype, v_dtype", [(np.float32, np.float64), (np.float64, np.float32)])
def test_a_float32_history_gives_the_kappa_of_its_values_in_float64(steps_dtype, v_dtype):
    """A JAX history comes in float32: the steps and V are read at their exact values in float64, so the realised κ,
    its interval and its start equal those of the same values given in float64. On these widening logs (mean step
    104.5454…, not exact in binary) float32 sums of squares, or a float32 log V, would move them in the 7th digit."""
    steps = np.array([0.0, 10, 20, 35, 55, 80, 110, 145, 185, 230, 280])
    v = 1000.0 * np.exp(-0.003 * steps + 0.01 * np.sin(steps))  # peak at 0, then a noisy contraction
    s32, v32 = steps.astype(steps_dtype), v.astype(v_dtype)
    exact = first_passage.realised_kappa(s32.astype(np.float64), v32.astype(np.float64), 0.0, 280.0, 0.002)
    assert exact.kappa == pytest.approx(1.5, abs=0.01) and (exact.t_start, exact.n) == (0.0, 11)
    assert first_passage.realised_kappa(s32, v32, 0.0, 280.0, 0.002) == exact


def test_the_law_refuses_zero_norms_and_a_zero_g_and_takes_norms_below_one():
    """law_delay: V_mem = 0 or V★ = 0 is no norm (NaN, not a log of 0); V_mem = 0.5 over V★ = 0.25 is a delay of
    log 2/(κ·g) = 0.6931/0.002; only the product κ·g must be finite (κ = 10²⁰⁰, g = 10⁻²⁰⁰: κ·g = 1, delay log 2).
    law_kappa: g = 0 or V★ = 0 give NaN (not a division by 0)."""
    assert math.isnan(first_passage.law_delay(0.0, 1.0, 0.2, 0.01))
    assert math.isnan(first_passage.law_delay(1.0, 0.0, 0.2, 0.01))
    assert first_passage.law_delay(0.5, 0.25, 0.2, 0.01) == pytest.approx(math.log(2.0) / 0.002, rel=1e-12)
    assert first_passage.law_delay(2.0, 1.0, 1e200, 1e-200) == pytest.approx(math.log(2.0), rel=1e-12)
    assert math.isnan(first_passage.law_kappa(100.0, 400.0, 1000.0, 500.0, 0.0))
    assert math.isnan(first_passage.law_kappa(100.0, 400.0, 1000.0, 0.0, 0.01))


def test_conformal_bounds_of_38_residuals_at_90_percent_take_the_first_and_last():
    """n = 38, α = 0.05: ⌊39·0.05⌋ = 1 and ⌈39·0.95⌉ = 38 (with n + 2: ⌊40·0.05⌋ = 2)."""
    r = np.arange(38.0) ** 1.5
    assert first_passage.conformal_bounds(r[::-1], 0.9) == (0.0, 37.0**1.5)


def test_an_interval_needs_both_bounds_finite():
    """Bounds (−∞, 0.2) (a lower bound missing) give no interval, as (−∞, ∞) does: NaN, NaN (not [t, t + D·e^0.2])."""
    assert all(math.isnan(x) for x in first_passage.interval(100.0, 50.0, (-math.inf, 0.2)))
    assert first_passage.interval(100.0, 50.0, (-0.1, 0.2)) == (
        pytest.approx(100.0 + 50.0 * math.exp(-0.1)),
        pytest.approx(100.0 + 50.0 * math.exp(0.2)),
    )


def test_a_flat_norm_away_from_one_gives_no_realised_kappa_not_a_rounding_error():
    # log V constant at ln 2.5: an uncentred least-squares fit (np.polyfit) leaves a slope of −7e-20, a κ of 7e-17
    steps = np.arange(0.0, 1010.0, 10.0)
    assert first_passage.realised_kappa(steps, np.full(steps.size, 2.5), 20.0, 1000.0, 1e-3) == first_passage.NO_KAPPA
