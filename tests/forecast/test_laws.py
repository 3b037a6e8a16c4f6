"""Laws the forecast at T_fit keeps for every input (`nht_jax.measure.forecast.first_passage`, `nht_jax.measure.forecast.heldout`),
checked by hypothesis on small drawn inputs: the conformal bounds are the exact ranks' order statistics and widen
with the level; an interval holds its forecast when its bounds straddle 0; the law's κ and delay invert each other;
the realised κ lies in its interval; the seed bootstrap's interval lies within the values and widens with the level;
the AUROC of (p, n) and of (n, p) sum to one (issue 43)."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nht_jax.measure.forecast import first_passage, heldout

from .test_known_answers import exact_ranks

FAST = settings(max_examples=60, deadline=None)
LEVELS = st.sampled_from([0.5, 0.6, 0.68, 0.8, 0.9, 0.95, 0.99])
FINITE = st.floats(-5.0, 5.0, allow_nan=False)


@FAST
@given(st.lists(FINITE, max_size=60), LEVELS)
def test_conformal_bounds_are_the_exact_rank_order_statistics(residuals, confidence):
    k_lo, k_hi = exact_ranks(len(residuals), confidence)
    got = first_passage.conformal_bounds(residuals, confidence)
    if k_lo < 1 or k_hi > len(residuals):
        assert got == (-math.inf, math.inf)
    else:
        s = sorted(residuals)
        assert got == (s[k_lo - 1], s[k_hi - 1]) and got[0] <= got[1]


@FAST
@given(st.lists(FINITE, max_size=60), LEVELS, LEVELS)
def test_a_higher_level_never_narrows_the_conformal_bounds(residuals, a, b):
    lo_a, hi_a = first_passage.conformal_bounds(residuals, min(a, b))
    lo_b, hi_b = first_passage.conformal_bounds(residuals, max(a, b))
    assert lo_b <= lo_a and hi_a <= hi_b


@FAST
@given(st.floats(0.0, 1e4), st.floats(0.0, 1e4), st.floats(-3.0, 0.0), st.floats(0.0, 3.0))
def test_an_interval_whose_bounds_straddle_zero_holds_its_forecast(t, delay, r_lo, r_hi):
    lo, hi = first_passage.interval(t, delay, (r_lo, r_hi))
    assert lo <= t + delay <= hi and t <= lo


@FAST
@given(st.floats(1.0, 1e6), st.floats(1.01, 1e3), st.floats(1e-3, 2.0), st.floats(1e-5, 0.1), st.floats(0.0, 1e4))
def test_the_laws_kappa_and_delay_invert_each_other(v_star, ratio, kappa, g, t_mem):
    delay = first_passage.law_delay(v_star * ratio, v_star, kappa, g)
    assert math.isclose(delay, math.log(ratio) / (kappa * g), rel_tol=1e-12)
    assert math.isclose(first_passage.law_kappa(t_mem, t_mem + delay, v_star * ratio, v_star, g), kappa, rel_tol=1e-6)


@FAST
@given(st.lists(st.floats(-0.05, 0.05), min_size=6, max_size=20), st.floats(0.002, 0.05), LEVELS)
def test_the_realised_kappa_lies_in_its_interval(noise, rate, confidence):
    steps = 10.0 * np.arange(len(noise))
    v = 100.0 * np.exp(-rate * steps + np.asarray(noise))
    v[0] = v.max() * 2  # the peak at T_fit
    k = first_passage.realised_kappa(steps, v, 0.0, steps[-1], 0.01, 3, confidence)
    assert k.t_start == 0.0 and k.n == len(noise)
    assert k.lo <= k.kappa <= k.hi and k.kappa > 0


SEEDED = st.lists(st.tuples(st.floats(0.0, 3.0), st.integers(0, 5)), min_size=1, max_size=15)


@FAST
@given(SEEDED, LEVELS, LEVELS, st.integers(0, 2**16))
def test_the_seed_bootstrap_interval_lies_within_the_values_and_widens_with_the_level(pairs, a, b, seed):
    values, seeds = zip(*pairs)
    lo_a, hi_a = heldout.seed_bootstrap(values, seeds, 200, min(a, b), seed)
    lo_b, hi_b = heldout.seed_bootstrap(values, seeds, 200, max(a, b), seed)
    tol = 1e-12
    assert min(values) - tol <= lo_b <= lo_a + tol and lo_a <= hi_a + tol and hi_a <= hi_b + tol
    assert hi_b <= max(values) + tol


@FAST
@given(st.lists(st.integers(0, 4), min_size=1, max_size=8), st.lists(st.integers(0, 4), min_size=1, max_size=8))
def test_the_auroc_of_swapped_classes_is_one_minus_it(p, n):
    assert math.isclose(heldout.auroc(p, n) + heldout.auroc(n, p), 1.0, rel_tol=1e-12)
