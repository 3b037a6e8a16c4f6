"""Known answers of the window fit (`nht_jax.measure.forecast.window`), each worked out by hand or by a slow implementation
written here, on small asymmetric inputs chosen so that the wrong rule gives another answer: the first contracting
peak against the global maximum, a tied record's first log against its last, a fall to exactly (1 − f)·V_p; the
least-squares line and its rms (mean, not n − 2) against the textbook sums, the rate's standard error with n − 2;
the fit window's two closed ends and its fewest logs; V̂_0 the fit at t_0, not the log; the crossing time and the
cases without one; the floor's closed form against least squares, its grid edges and its sign checks. Laws by
hypothesis: the one-pass first peak equals a slow scan, a noiseless exponential is fitted exactly, the crossing is
monotone in the target. Pure numpy, no training (issue 43)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nht_jax.measure.forecast.window import (
    Extrapolation,
    extrapolate,
    first_peak,
    first_step,
    fit_floor,
    fit_log_linear,
    floor_fits,
    floor_lstsq,
    rate_se,
)

FAST = settings(max_examples=60, deadline=None)
STEPS = np.arange(0.0, 101.0, 10.0)  # 0, 10, …, 100: 11 logs
NOISE = np.array([0.03, -0.01, 0.0, 0.02, -0.04, 0.01, 0.05, -0.02, 0.0, -0.03, 0.01])  # unequal, not symmetric


def slow_first_peak(values, fraction):
    """The definition read literally: the earliest p with V_p ≥ every earlier value after which V falls to
    ≤ (1 − f)·V_p before exceeding V_p; c the first such log. None: (first argmax, −1)."""
    v = list(values)
    for p in range(len(v)):
        if v[p] < max(v[: p + 1]):
            continue
        for j in range(p + 1, len(v)):
            if v[j] > v[p]:
                break
            if v[j] <= (1 - fraction) * v[p]:
                return p, j
    return v.index(max(v)), -1


def slow_line(t, y):
    """Least squares of y on t by the textbook sums: (intercept, slope, rms residual, se of the slope)."""
    n, tm, ym = len(t), sum(t) / len(t), sum(y) / len(y)
    sxx = sum((a - tm) ** 2 for a in t)
    slope = sum((a - tm) * (b - ym) for a, b in zip(t, y)) / sxx
    intercept = ym - slope * tm
    sse = sum((b - intercept - slope * a) ** 2 for a, b in zip(t, y))
    return intercept, slope, math.sqrt(sse / n), math.sqrt(sse / (n - 2) / sxx)


# ----------------------------------------------------------------------------- first_peak, first_step


def test_the_first_peak_is_the_first_record_that_falls_by_the_fraction_not_the_global_maximum():
    """f = ¼: the record 3 falls only to 2.5 (> 2.25) before 4 beats it; 4 (first at log 3, tied at 4) falls to
    2.9 ≤ 3 at log 6; the re-growth to 5 later does not move it. So (3, 6): a tied record's first log, the first
    qualifying fall; the global maximum would be log 7, the tie's last log 4."""
    assert first_peak([1.0, 3.0, 2.5, 4.0, 4.0, 3.5, 2.9, 5.0, 1.0], 0.25) == (3, 6)


def test_a_fall_to_exactly_one_minus_the_fraction_counts():
    """8 → 4 with f = ½: 4 ≤ (1 − ½)·8 exactly (a strict < would wait for the 3.9 at log 4)."""
    assert first_peak([2.0, 8.0, 5.0, 4.0, 3.9], 0.5) == (1, 3)


def test_float32_logs_are_compared_with_the_fraction_in_float64():
    """float32 logs 1 + 2⁻²³ → 0.75 + 2⁻²³ with f = ¼: 0.75·V_0 = 0.75 + 1.5·2⁻²⁴ lies 2⁻²⁵ below V_1, so no fall
    (a float32 product rounds 0.75·V_0 up onto V_1 and would count one)."""
    assert first_peak(np.array([1.0 + 2**-23, 0.75 + 2**-23], np.float32), 0.25) == (0, -1)


def test_a_peak_cannot_contract_at_its_own_log():
    """V_0 = 0 lies at ≤ (1 − f)·0, but a peak's contraction comes after it: the first peak is the 5 at log 1."""
    assert first_peak([0.0, 5.0, 2.0], 0.5) == (1, 2)


def test_without_a_fall_the_peak_is_the_first_global_maximum_and_c_is_minus_one():
    """7 at logs 2 and 4, never below 0.9·7 after: (2, −1), the first occurrence."""
    assert first_peak([1.0, 5.0, 7.0, 6.5, 7.0, 6.4], 0.1) == (2, -1)


@FAST
@given(st.lists(st.integers(1, 9), min_size=1, max_size=14), st.sampled_from([0.1, 0.25, 0.5, 0.75]))
def test_the_one_pass_first_peak_equals_the_definition_read_literally(values, fraction):
    assert first_peak(np.array(values, float), fraction) == slow_first_peak(values, fraction)


def test_first_step_is_the_first_step_where_the_mask_holds():
    steps = np.array([5.0, 7.0, 20.0, 30.0])
    assert first_step(np.array([False, True, False, True]), steps) == 7.0
    assert math.isnan(first_step(np.zeros(4, bool), steps))


# ----------------------------------------------------------------------------- the line, its error


def test_the_log_linear_fit_is_the_least_squares_line_with_its_rms_over_n():
    """Noisy log V = 2 − 0.03·t + noise: (a, γ̂ = −slope, rms = √(SSE/n)) against the textbook sums, and the
    slope's standard error √(SSE/(n − 2)/Sxx)."""
    y = 2.0 - 0.03 * STEPS + NOISE
    a, gamma, rmse = fit_log_linear(STEPS, np.exp(y))
    i, slope, rms, se = slow_line(list(STEPS), list(y))
    assert (a, gamma, rmse) == pytest.approx((i, -slope, rms), rel=1e-10)
    assert rate_se(STEPS, np.exp(y)) == pytest.approx(se, rel=1e-10)


def test_float32_logs_are_fitted_in_float64():
    """Steps and V logged as float32 (κ too, for the floor) give, bit for bit, the answers of the same numbers in
    float64 (a float32 fit would be off in about the seventh digit)."""
    t32, v32 = (STEPS + 0.3).astype(np.float32), np.exp(5.0 - 0.02 * STEPS + NOISE).astype(np.float32)
    t64, v64 = t32.astype(np.float64), v32.astype(np.float64)
    assert fit_log_linear(t32, v32) == fit_log_linear(t64, v64)
    assert rate_se(t32, v32) == rate_se(t64, v64)
    assert extrapolate(t32, v32, 30.3, 50.0, 40.0, 3) == extrapolate(t64, v64, 30.3, 50.0, 40.0, 3)
    k32 = np.log(np.array([0.003, 0.02, 0.1], np.float32))
    for got, want in zip(floor_fits(t32, v32, k32), floor_fits(t64, v64, k32.astype(np.float64))):
        np.testing.assert_array_equal(got, want)


@FAST
@given(st.floats(-3.0, 3.0), st.floats(-0.05, 0.05), st.floats(0.0, 500.0), st.integers(3, 12))
def test_a_noiseless_exponential_is_fitted_exactly(log_v0, rate, start, n):
    """V_t = e^{a − γ·t} at n logs: a and γ come back, the rms residual and the rate's error are zero."""
    t = start + 7.0 * np.arange(n)
    a, gamma, rmse = fit_log_linear(t, np.exp(log_v0 - rate * t))
    assert gamma == pytest.approx(rate, abs=1e-9) and a == pytest.approx(log_v0, abs=1e-6)
    assert rmse < 1e-9 and rate_se(t, np.exp(log_v0 - rate * t)) < 1e-9


# ----------------------------------------------------------------------------- extrapolate


def test_the_fit_window_holds_both_ends_and_needs_min_points_logs():
    """[20, 50] holds the logs 20, 30, 40, 50: four, so min_points 4 fits (either end open, or < read as ≤,
    would leave it without) and 5 does not, saying how many there are."""
    v = np.exp(3.0 - 0.02 * STEPS)
    assert extrapolate(STEPS, v, 20.0, 30.0, 1.0, 4).gamma_hat == pytest.approx(0.02, rel=1e-9)
    short = extrapolate(STEPS, v, 20.0, 30.0, 1.0, 5)
    assert math.isnan(short.gamma_hat) and math.isnan(short.V_start) and math.isnan(short.T_hat)
    assert short.reason == "only 4 logs in the fit window [20, 50] (< 5; the run ends at 100)"
    assert (short.t_start, short.t_end) == (20.0, 50.0)


def test_the_crossing_is_made_from_the_fitted_line_at_t0():
    """Noisy contraction, window [30, 80] (six logs): γ̂ and V̂_0 = e^{a − γ̂·30} from the line (not the logged
    V_30, nor the line at the window's end), T̂ = 30 + log(V̂_0/V̂_post)/γ̂, all from the textbook sums."""
    y = 5.0 - 0.02 * STEPS + NOISE
    fit = extrapolate(STEPS, np.exp(y), 30.0, 50.0, 40.0, 3)
    i, slope, rms, _ = slow_line(list(STEPS[3:9]), list(y[3:9]))
    v0 = math.exp(i + slope * 30.0)
    assert (fit.gamma_hat, fit.V_start, fit.fit_rmse) == pytest.approx((-slope, v0, rms), rel=1e-10)
    assert fit.T_hat == pytest.approx(30.0 + math.log(v0 / 40.0) / -slope, rel=1e-10) and fit.reason == ""
    assert fit.V_start != pytest.approx(math.exp(y[3]), rel=1e-3)


def test_no_crossing_without_contraction_without_v_post_or_without_a_gap():
    """γ̂ = 0 exactly (V ≡ 1: log V ≡ 0) is no contraction; a NaN V̂_post gives the caller's reason (or "no
    V̂_post"); V̂_post = V̂_0 exactly is no gap (≥, not >)."""
    flat = extrapolate(STEPS, np.ones(STEPS.size), 0.0, 100.0, 0.5, 3)
    assert flat.gamma_hat == 0.0 and math.isnan(flat.T_hat)
    assert flat.reason.startswith("V does not contract over the fit window")
    v = np.exp(3.0 - 0.02 * STEPS)
    assert extrapolate(STEPS, v, 0.0, 50.0, math.nan, 3, "no pilot yet").reason == "no pilot yet"
    assert extrapolate(STEPS, v, 0.0, 50.0, math.nan, 3).reason == "no V̂_post"
    v0 = extrapolate(STEPS, v, 0.0, 50.0, 1.0, 3).V_start
    same = extrapolate(STEPS, v, 0.0, 50.0, v0, 3)
    assert math.isnan(same.T_hat) and same.reason.startswith("no norm gap: V̂_post = ")


def test_time_at_is_nan_unless_the_target_lies_below_v_start():
    e = Extrapolation(100.0, 200.0, 0.01, 50.0, math.nan, "")
    assert e.time_at(50.0 * math.exp(-2.0)) == pytest.approx(300.0, rel=1e-12)
    assert math.isnan(e.time_at(50.0)) and math.isnan(e.time_at(60.0)) and math.isnan(e.time_at(math.nan))


@FAST
@given(st.floats(0.05, 0.95), st.floats(0.05, 0.95))
def test_the_extrapolated_crossing_comes_later_for_a_lower_target(a, b):
    """T̂(V̂_post) falls as V̂_post rises (the line falls): a lower target is reached no earlier."""
    v = np.exp(3.0 - 0.02 * STEPS + NOISE)
    lo, hi = sorted((a, b))
    v0 = extrapolate(STEPS, v, 10.0, 60.0, 1.0, 3).V_start
    assert extrapolate(STEPS, v, 10.0, 60.0, lo * v0, 3).T_hat >= extrapolate(STEPS, v, 10.0, 60.0, hi * v0, 3).T_hat


# ----------------------------------------------------------------------------- the floor

T_FLOOR = np.arange(0.0, 201.0, 10.0)


@pytest.mark.parametrize("log_kappa", [math.log(0.002), math.log(0.03), math.log(0.3)])
def test_the_closed_form_floor_fit_is_least_squares(log_kappa):
    """(ĉ, Â, SSE) of V = c + A·e^{−κt} at a given κ, closed form, against `np.linalg.lstsq` on [1, e^{−κt}] for
    asymmetric noisy data (and `floor_lstsq`, the same by another route)."""
    v = 3.0 + 12.0 * np.exp(-0.02 * T_FLOOR) + np.resize(NOISE, T_FLOOR.size)
    c, a, sse = floor_fits(T_FLOOR, v, np.array([log_kappa]))
    basis = np.stack([np.ones_like(T_FLOOR), np.exp(-math.exp(log_kappa) * T_FLOOR)], axis=1)
    coef, *_ = np.linalg.lstsq(basis, v, rcond=None)
    assert (c[0], a[0]) == pytest.approx(tuple(coef), rel=1e-8)
    assert sse[0] == pytest.approx(float(np.sum((basis @ coef - v) ** 2)), rel=1e-8)
    (c2, a2), sse2 = floor_lstsq(T_FLOOR, v, log_kappa)
    assert (c2, a2, sse2) == pytest.approx((c[0], a[0], sse[0]), rel=1e-8)


def test_the_closed_form_floor_fit_takes_log_kappa_of_any_shape():
    """One κ (a scalar: one (ĉ, Â, SSE)) and a 2 × 3 grid of κ: each entry the fit at its own κ."""
    v = 3.0 + 12.0 * np.exp(-0.02 * T_FLOOR) + np.resize(NOISE, T_FLOOR.size)
    grid = np.log(np.array([[0.002, 0.01, 0.03], [0.05, 0.1, 0.3]]))
    c, a, sse = floor_fits(T_FLOOR, v, grid)
    assert c.shape == a.shape == sse.shape == (2, 3)
    for i, j in np.ndindex(2, 3):
        one = floor_fits(T_FLOOR, v, grid[i, j])
        assert all(np.ndim(x) == 0 for x in one)
        (c2, a2), sse2 = floor_lstsq(T_FLOOR, v, grid[i, j])
        assert (c[i, j], a[i, j], sse[i, j]) == pytest.approx((c2, a2, sse2), rel=1e-8)
        assert tuple(map(float, one)) == pytest.approx((c2, a2, sse2), rel=1e-8)


def test_the_floor_of_an_exact_decay_is_its_asymptote_whatever_the_first_step():
    """V = 4 + 20·e^{−0.03(t − 1000)} logged at 1000 … 1200: ĉ = 4 to the search's precision (the grid point
    alone is off by far more), from the curvature after the first log (κ·span = 6, inside the grid)."""
    t = 1000.0 + T_FLOOR
    c, why = fit_floor(t, 4.0 + 20.0 * np.exp(-0.03 * (t - 1000.0)))
    assert c == pytest.approx(4.0, rel=1e-6) and why == ""


def test_a_fast_decay_has_its_floor_where_the_grid_measures_from_the_first_step():
    """κ = 0.05 per step over a span of 200 steps logged from 10,000: κ·span = 10, inside the grid [0.01, 100]/span
    measured from the first step; a grid on the raw steps (span 10,200) would end at κ ≈ 0.0098, its edge: no floor."""
    t = 10_000.0 + T_FLOOR
    c, why = fit_floor(t, 4.0 + 20.0 * np.exp(-0.05 * (t - 10_000.0)))
    assert c == pytest.approx(4.0, rel=1e-4) and why == ""


@pytest.mark.parametrize(
    "v, words",
    [
        (100.0 - 0.3 * T_FLOOR, "no curvature"),  # a line: the grid's lower edge
        (np.where(T_FLOOR < 5, 50.0, 10.0 + 1e-9 * T_FLOOR[::-1]), "no curvature"),  # a step: the upper edge
        (10.0 - 5.0 * np.exp(-0.02 * T_FLOOR), "is not between 0 and the last V"),  # rising to it: Â < 0
        (12.0 * np.exp(-0.01 * T_FLOOR) - 2.0, "fitted asymptote -2 is not between 0"),  # ĉ < 0
    ],
)
def test_no_floor_at_a_grid_edge_or_outside_zero_to_the_last_v(v, words):
    c, why = fit_floor(T_FLOOR, v)
    assert math.isnan(c) and words in why
    if words == "no curvature":
        assert why == "no floor: the contraction shows no curvature toward an asymptote yet (give v_post)"


def test_no_floor_when_v_rises_toward_it_even_below_the_last_v():
    """V = 10 − 5·e^{−0.02t} rising to 10, its last log a jump to 12: the fitted ĉ ≈ 10.6 lies between 0 and the
    last V, so only Â < 0 (a rise, not a contraction) refuses it."""
    v = 10.0 - 5.0 * np.exp(-0.02 * T_FLOOR)
    v[-1] = 12.0
    c, why = fit_floor(T_FLOOR, v)
    assert math.isnan(c) and why.startswith("no floor: the fitted asymptote 10.")


@pytest.mark.parametrize("steps", [[0, 190, 192, 194, 196, 198, 200], [0, 2, 4, 6, 8, 10, 200]])
def test_the_floors_grid_spans_the_first_log_to_the_last(steps):
    """V = 4 + 20·e^{−κt}, κ = 5e-4: κ·span = 0.1 over the 200 steps from the first log to the last, inside the grid
    [0.01, 100]/span, so ĉ = 4; a span from the second log (10 steps) or to the second last (10) would put κ·span
    at 0.005, below the grid: no floor."""
    t = np.array(steps, float)
    c, why = fit_floor(t, 4.0 + 20.0 * np.exp(-5e-4 * t))
    assert c == pytest.approx(4.0, rel=1e-5) and why == ""


def test_the_floor_of_float32_steps_is_that_of_the_same_steps_in_float64():
    """Steps 0.3 + 10.1·k as float32 (t − t_0 taken in float64: in float32 it would round by up to 3e-6)."""
    t32 = (0.3 + 10.1 * np.arange(21)).astype(np.float32)
    v = 4.0 + 12.0 * np.exp(-0.02 * (t32.astype(np.float64) - t32[0]))
    assert fit_floor(t32, v) == fit_floor(t32.astype(np.float64), v)


def test_the_floors_default_grid_has_200_points():
    """κ·span = 0.0128, nearly a line: ĉ = 4 to the search's precision (4.00000016), the same bits as an explicit
    200-point grid; 201 points bracket the search otherwise and land elsewhere in the 8th digit (4.00000011)."""
    v = 4.0 + 200.0 * np.exp(-0.0128 / 200.0 * T_FLOOR)
    c = fit_floor(T_FLOOR, v)[0]
    assert c == fit_floor(T_FLOOR, v, grid=200)[0] != fit_floor(T_FLOOR, v, grid=201)[0]
    assert c == pytest.approx(4.0, rel=1e-5)


def test_a_fast_decay_nearest_the_grids_top_point_has_no_floor():
    """The grid's last two points are κ·span = 100 and 100·e^{−ln(10⁴)/199} = 95.48. V = 4 + 20·e^{−κt} with
    κ·span = 97 (nearer 95.48 in log) gives ĉ = 4; with 98.5 (nearer 100, the edge) none. A grid to 101/span would
    have its second last point at 96.4 and give a floor at 98.5."""
    c, why = fit_floor(T_FLOOR, 4.0 + 20.0 * np.exp(-97.0 / 200.0 * T_FLOOR))
    assert c == pytest.approx(4.0, rel=1e-9) and why == ""
    c, why = fit_floor(T_FLOOR, 4.0 + 20.0 * np.exp(-98.5 / 200.0 * T_FLOOR))
    assert math.isnan(c) and "no curvature" in why


@pytest.mark.parametrize("c, a, kappa", [(0.5, 20.0, 0.03), (4.0, 0.5, 0.03), (4.0, 20.0, 0.0105 / 200.0)])
def test_any_positive_floor_and_amplitude_and_a_best_point_beside_the_edge_give_a_floor(c, a, kappa):
    """ĉ = 0.5 (< 1) and Â = 0.5 (< 1) are floors; κ·span = 0.0105 puts the best grid point next to the lower edge
    (the second point, 0.01·e^{0.0463} = 0.01047): the search runs between the edge and the third point."""
    got, why = fit_floor(T_FLOOR, c + a * np.exp(-kappa * T_FLOOR))
    assert got == pytest.approx(c, rel=1e-6) and why == ""


def test_no_floor_above_the_last_v_even_below_the_earlier_ones():
    """V = 10 + 20·e^{−0.03t} with its last log dipping to 9.5: ĉ = 9.934 lies above the last V (though below V at
    the second and the second last log, 24.8 and 10.07): no floor, the message naming the last V."""
    v = 10.0 + 20.0 * np.exp(-0.03 * T_FLOOR)
    v[-1] = 9.5
    c, why = fit_floor(T_FLOOR, v)
    assert math.isnan(c)
    assert why == "no floor: the fitted asymptote 9.934 is not between 0 and the last V 9.5 (give v_post)"


def test_a_slow_decay_has_its_floor_down_to_the_grids_lower_edge():
    """κ·span = 0.05 (V = 4 + 200·e^{−0.05·t/200}, nearly a line): inside the grid [0.01, 100]/span, so ĉ = 4 from
    exact data; a grid starting at 0.1/span would put the best point at its edge and give none."""
    c, why = fit_floor(T_FLOOR, 4.0 + 200.0 * np.exp(-0.05 / 200.0 * T_FLOOR))
    assert c == pytest.approx(4.0, rel=1e-4) and why == ""
