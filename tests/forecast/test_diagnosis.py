"""Known answers of the diagnosis (`nht_jax.measure.forecast.diagnosis`), each worked out by hand or by the textbook sums
written here, on small asymmetric histories chosen so that the wrong rule gives another answer: the recent window's
closed start on irregular logs (the smallest interval, not the largest), the trend's two-log minimum and its
tolerance's open ends, the contracting peak from a start on a log, the forecast's window (not before the peak; from
the peak with after_peak), its Student-t interval with n − 2 degrees of freedom at 0.5 + c/2, the V̂_post range's
ends swapped into T_lo and T_hi with the near end clipped at 0, T_hi = ∞ when the rate's lower bound is not
positive, the floor's fewest logs, the divergence threshold reached exactly, T_fit at the first log at the
threshold, read_signal's whole table, the options' bounds with their messages. Pure numpy, no training (issue 43)."""

import math

import numpy as np
import pytest
from scipy import stats

from nht_jax.base.errors import ConfigError
from nht_jax.measure.forecast.diagnosis import (
    MonitorOptions,
    contracting_peak,
    diagnose,
    forecast,
    monitor_options,
    options_from,
    read_signal,
    trend,
    window_mask,
)
from nht_jax.config.forecast import ForecastSettings

from .test_window import slow_line

STEPS = np.arange(0.0, 301.0, 10.0)  # 31 logs
NOISE = np.resize([0.02, -0.01, 0.03, 0.0, -0.03, 0.01, -0.02, 0.04, -0.01, 0.0, 0.02, -0.04, 0.01], STEPS.size)


def contraction(peak=100.0, rate=0.01, noise=True):
    """V rises linearly 100 → 200 to the peak, then 200·e^{−rate·(t − peak) + noise}."""
    v = np.where(STEPS <= peak, 100.0 + 100.0 * STEPS / peak, 200.0 * np.exp(-rate * (STEPS - peak)))
    return v * np.exp(NOISE * (STEPS > peak)) if noise else v


def interval(t0, logs, v, v_post, confidence, v_range=None):
    """(T̂, T_lo, T_hi, se) by the textbook sums over the logs `logs` (indices), the line's V at t0, q the
    Student-t quantile at (1 + c)/2 with n − 2 degrees of freedom, the V̂_post range's hi into T_lo, lo into T_hi."""
    t, y = list(STEPS[logs]), list(np.log(v[logs]))
    i, slope, _, se = slow_line(t, y)
    gamma, v0 = -slope, math.exp(i + slope * t0)
    q = stats.t.ppf((1 + confidence) / 2, len(t) - 2)
    lo, hi = v_range or (v_post, v_post)
    return (
        t0 + math.log(v0 / v_post) / gamma,
        t0 + max(math.log(v0 / hi), 0.0) / (gamma + q * se),
        t0 + math.log(v0 / lo) / (gamma - q * se),
        se,
    )


# ----------------------------------------------------------------------------- window, trend, peak


def test_the_recent_window_is_window_logs_smallest_intervals_back_from_the_last_log_start_included():
    """Logs 0, 5, 15, 30, 50, 60, 70: the smallest interval 5, so 4 logs reach back 20 to 50, which is in (the
    largest, 20, would reach 80 back); window_steps = 40 instead reaches back to 30."""
    steps = np.array([0.0, 5.0, 15.0, 30.0, 50.0, 60.0, 70.0])
    np.testing.assert_array_equal(window_mask(steps, MonitorOptions(window_logs=4)), steps >= 50.0)
    np.testing.assert_array_equal(window_mask(steps, MonitorOptions(window_logs=4, window_steps=40.0)), steps >= 30.0)


def test_the_trend_needs_two_logs_and_is_the_fitted_change_over_them():
    """One masked log: flat with no change. Two: the change is log(V_2/V_1) exactly. Over a noisy stretch: −γ̂
    times the masked span (first to last masked log), γ̂ by the textbook sums."""
    v = np.array([3.0, 5.0, 4.0, 7.0])
    s = np.array([0.0, 10.0, 30.0, 60.0])
    assert trend(s, v, np.array([False, True, False, False]), 0.01) == ("flat", 0.0)
    direction, change = trend(s, v, np.array([False, True, True, False]), 0.01)
    assert direction == "contracting" and change == pytest.approx(math.log(4.0 / 5.0), rel=1e-12)
    _, slope, _, _ = slow_line([10.0, 30.0, 60.0], list(np.log([5.0, 4.0, 7.0])))
    assert trend(s, v, s > 0, 0.01)[1] == pytest.approx(slope * 50.0, rel=1e-10)


def test_the_trend_is_flat_at_its_tolerance_exactly():
    """A change equal to the tolerance is flat (both comparisons strict), just below it rising / contracting; with
    tolerance 0 a constant V ≡ 1 (change 0 exactly) is flat."""
    s, mask = np.array([0.0, 10.0]), np.ones(2, bool)
    up = trend(s, np.array([2.0, 3.0]), mask, 0.0)[1]
    assert trend(s, np.array([2.0, 3.0]), mask, up) == ("flat", up)
    assert trend(s, np.array([2.0, 3.0]), mask, up * (1 - 1e-9))[0] == "rising"
    down = trend(s, np.array([3.0, 2.0]), mask, 0.0)[1]
    assert trend(s, np.array([3.0, 2.0]), mask, -down)[0] == "flat"
    assert trend(s, np.array([3.0, 2.0]), mask, -down * (1 - 1e-9))[0] == "contracting"
    assert trend(s, np.array([1.0, 1.0]), mask, 0.0)[0] == "flat"


def test_the_contracting_peak_starts_at_a_start_on_a_log_and_ignores_earlier_records():
    """V: 900 before 30, then 100 → 200 at step 60 → 150 at 80 (a 25 % fall). From 60 (a log) the peak is 60 itself
    (a start read as the next log would miss it: no peak); from 35 (between logs) it is 60; from 0 the 900 is the
    peak and the 150 at 80 its contraction. No fall: (NaN, NaN)."""
    s = np.arange(0.0, 91.0, 10.0)
    v = np.array([900.0, 900.0, 900.0, 100.0, 120.0, 140.0, 200.0, 190.0, 150.0, 160.0])
    assert contracting_peak(s, v, 60.0, 0.2) == (60.0, 80.0)
    assert contracting_peak(s, v, 35.0, 0.2) == (60.0, 80.0)
    assert contracting_peak(s, v, 0.0, 0.2) == (0.0, 30.0)
    assert all(math.isnan(x) for x in contracting_peak(s, v, 60.0, 0.3))


# ----------------------------------------------------------------------------- the forecast


@pytest.mark.parametrize("confidence", [0.9, 0.8])
def test_the_forecast_fits_the_recent_window_with_a_student_t_interval(confidence):
    """Peak at 100, window_logs 10: the recent window [200, 300] (11 logs, after the peak) gives γ̂, V̂_0 at 200,
    T̂ = 200 + log(V̂_0/20)/γ̂ and the interval at γ̂ ± q·se, q = t_{(1+c)/2, 9}: by the textbook sums."""
    v = contraction()
    want = interval(200.0, slice(20, 31), v, 20.0, confidence)
    f = diagnose(STEPS, v, fitted_at=50.0, v_post=20.0, confidence=confidence).forecast
    assert (f.T_hat, f.T_lo, f.T_hi, f.gamma_se) == pytest.approx(want, rel=1e-9)
    assert (f.t_start, f.t_end, f.V_post, f.v_post_source, f.reason) == (200.0, 300.0, 20.0, "given", "")
    assert f.T_lo < f.T_hat < f.T_hi


def test_the_recent_window_does_not_reach_back_before_the_peak():
    """Peak at 250: the recent window [200, 300] is cut to [250, 300] (six logs), t_0 = 250."""
    v = contraction(peak=250.0, rate=0.02)
    d = diagnose(STEPS, v, fitted_at=50.0, v_post=20.0)
    assert d.peak_step == 250.0 and d.norm == "peaked and contracting"
    want = interval(250.0, slice(25, 31), v, 20.0, 0.9)
    assert (d.forecast.t_start, d.forecast.t_end) == (250.0, 300.0)
    assert (d.forecast.T_hat, d.forecast.T_lo, d.forecast.T_hi) == pytest.approx(want[:3], rel=1e-9)


def test_after_peak_fits_window_logs_from_the_peak_after_t_fit():
    """window = after_peak: the first contracting peak after T_fit = 50 is 100, so the fit runs over [100, 200]
    (W = 10 logs of 10), whatever the run's last log; before T_fit V is larger (the fit must not see it)."""
    v = contraction()
    v[:5] = 5000.0
    want = interval(100.0, slice(10, 21), v, 20.0, 0.9)
    f = diagnose(STEPS, v, fitted_at=50.0, v_post=20.0, window="after_peak").forecast
    assert (f.t_start, f.t_end) == (100.0, 200.0)
    assert (f.T_hat, f.T_lo, f.T_hi) == pytest.approx(want[:3], rel=1e-9)


def test_after_peak_without_a_fall_after_t_fit_gives_no_forecast_with_its_v_post():
    """A direct call with no peak after T_fit (V falls 5 % only): no forecast, V̂_post and its source kept."""
    v = np.where(STEPS <= 100, 100.0 + STEPS, 200.0 * np.exp(-0.00025 * (STEPS - 100)))
    o = MonitorOptions(window="after_peak", v_post=20.0)
    f = forecast(STEPS, v, 50.0, math.nan, o)
    assert math.isnan(f.T_hat) and (f.V_post, f.v_post_source) == (20.0, "given")
    assert f.reason == "V never falls 10% below a peak after T_fit: no contraction to fit"


def test_the_v_post_range_puts_its_upper_end_in_t_lo_and_its_lower_end_in_t_hi():
    """Range (15, 60) around V̂_post 20: T_lo from 60, T_hi from 15; a range whose upper end is above V̂_0 clips
    the near log at 0, so T_lo = t_0."""
    v = contraction()
    want = interval(200.0, slice(20, 31), v, 20.0, 0.9, (15.0, 60.0))
    f = diagnose(STEPS, v, fitted_at=50.0, v_post=20.0, v_post_range=(15.0, 60.0)).forecast
    assert (f.T_hat, f.T_lo, f.T_hi) == pytest.approx(want[:3], rel=1e-9)
    wide = diagnose(STEPS, v, fitted_at=50.0, v_post=20.0, v_post_range=(15.0, 1000.0)).forecast
    assert wide.T_lo == 200.0 and wide.T_hat == pytest.approx(want[0], rel=1e-9)


def test_t_hi_is_infinite_when_the_rate_lower_bound_is_not_positive():
    """Three noisy logs in the window (df 1, q = 6.31): γ̂ > 0 but γ̂ − q·se < 0, so T_hi = ∞; T_lo finite."""
    s = np.array([0.0, 10.0, 20.0, 30.0, 40.0])
    v = np.array([10.0, 100.0, 80.0, 85.0, 60.0])
    f = diagnose(s, v, fitted_at=0.0, v_post=5.0, window_logs=2).forecast
    assert f.gamma_hat > 0 and f.T_hi == math.inf and f.T_lo < f.T_hat < math.inf


def test_without_v_post_the_forecast_aims_at_the_fitted_floor_once_it_has_enough_logs():
    """V = 50 + 150·e^{−0.02(t − 100)} after the peak at 100: with window_logs 3 the window holds 270 … 300, four
    logs, exactly floor_min_points, so the floor ĉ = 50 is fitted on them; asking for five gives no floor and says
    how many logs there are."""
    v = np.where(STEPS <= 100, 100.0 + STEPS, 50.0 + 150.0 * np.exp(-0.02 * (STEPS - 100)))
    f = diagnose(STEPS, v, fitted_at=50.0, window_logs=3).forecast
    assert f.v_post_source == "floor" and f.V_post == pytest.approx(50.0, rel=1e-5) and np.isfinite(f.T_hat)
    short = diagnose(STEPS, v, fitted_at=50.0, window_logs=3, floor_min_points=5).forecast
    assert math.isnan(short.T_hat) and short.reason == "only 4 logs in the window for the floor (< 5)"


# ----------------------------------------------------------------------------- diagnose


def test_divergence_is_the_first_log_at_or_above_the_threshold():
    v = np.array([1.0, 2.0, 5.0, 4.0, math.inf, 3.0])
    s = np.arange(6.0) * 10
    d = diagnose(s, v, fitted_at=0.0, divergence_norm=5.0)
    assert (d.fit, d.signal, d.diverged_step, d.norm_sq, d.step) == ("diverged", "diverged", 20.0, 3.0, 50.0)
    assert d.forecast.reason == "diverged" and d.text() == "step 50: diverged at step 20"
    assert diagnose(s, v, fitted_at=0.0).diverged_step == 40.0


def test_t_fit_is_the_first_log_at_the_accuracy_threshold_or_fitted_at_up_to_the_last_log():
    s = np.arange(5.0) * 10
    v = 100.0 + s
    d = diagnose(s, v, train_acc=[0.5, 0.99, 0.98, 1.0, 1.0])
    assert (d.fit, d.T_fit) == ("fitted", 10.0)
    assert diagnose(s, v, train_acc=[0.5, 0.99, 0.98, 1.0, 1.0], fit_threshold=0.995).T_fit == 30.0
    assert (diagnose(s, v, fitted_at=40.0).fit, diagnose(s, v, fitted_at=40.0).T_fit) == ("fitted", 40.0)
    late = diagnose(s, v, fitted_at=41.0)
    assert late.fit == "not fitted" and math.isnan(late.T_fit) and late.forecast.reason == "not fitted yet"
    unknown = diagnose(s, v)
    assert unknown.fit == "unknown" and unknown.forecast.reason == "T_fit unknown: give fitted_at or train_acc"


def test_the_peak_is_sought_from_t_fit_and_the_trend_from_the_peak():
    """V: 900 at 0 (before T_fit = 30, not a peak of the fitted run), rises to 200 at 120, falls to 150 by 200
    (first ≤ 160, 20 % below, at 190). With window_logs 16 the window [40, 200] rises then falls, a rise overall;
    from the peak at 120 it contracts: "peaked and contracting", the change fitted over 120 … 200 only."""
    s = np.arange(0.0, 201.0, 10.0)
    v = np.concatenate([[900.0, 900.0, 900.0], np.linspace(100.0, 200.0, 10), np.linspace(195.0, 150.0, 8)])
    d = diagnose(s, v, fitted_at=30.0, window_logs=16, peak_drop=0.2)
    assert (d.peak_step, d.contract_step) == (120.0, 190.0)
    assert d.norm == "peaked and contracting" and d.signal == "transition under way"
    _, slope, _, _ = slow_line(list(s[12:]), list(np.log(v[12:])))
    assert d.window_change == pytest.approx(slope * 80.0, rel=1e-10)
    assert trend(s, v, s >= 40.0, 0.01)[0] == "rising"


def test_the_floor_is_fitted_on_the_windows_logs_from_the_peak_on():
    """Peak at 250 inside the window [200, 300]: V = 50 + 150·e^{−0.05(t − 250)} from it, a rise before it. The
    floor is fitted on 250 … 300 only (the rise before would bend it): ĉ = 50."""
    v = np.where(STEPS <= 250, 100.0 + 100.0 * STEPS / 250.0, 50.0 + 150.0 * np.exp(-0.05 * (STEPS - 250.0)))
    f = diagnose(STEPS, v, fitted_at=50.0).forecast
    assert f.v_post_source == "floor" and f.V_post == pytest.approx(50.0, rel=1e-5)


def test_a_contraction_without_a_peaks_fall_is_contracting_not_peaked():
    """V falls 5 % from its maximum (less than peak_drop = 10 %): contracting beyond the tolerance, but no peak, so
    the norm is "contracting" and the signal undecided; the forecast is still made (from T_fit)."""
    s = np.arange(0.0, 101.0, 10.0)
    d = diagnose(s, 100.0 * np.exp(-0.0005 * s), fitted_at=0.0, v_post=50.0)
    assert math.isnan(d.peak_step) and (d.norm, d.signal) == ("contracting", "undecided")
    assert d.forecast.T_hat == pytest.approx(math.log(2.0) / 0.0005, rel=1e-9)


def test_a_rise_gives_no_forecast_and_says_so():
    s = np.arange(0.0, 101.0, 10.0)
    d = diagnose(s, 100.0 + s, fitted_at=20.0)
    assert (d.norm, d.signal) == ("rising", "weak")
    assert d.forecast.reason == "‖θ‖² is rising over the recent window: no contraction to extrapolate"
    assert d.text() == (
        "step 100: fitted at 20; ‖θ‖² rising; weak; no forecast: ‖θ‖² is rising over the recent "
        "window: no contraction to extrapolate"
    )


def test_the_head_warns_when_it_contracts_while_the_total_does_not():
    """The total rises; the head (named by head_layer) falls as 10·e^{−0.01(t − 20)} from 20: contracting, its peak
    at 20 and contraction (≤ 9) at 40, the warning on. A head with a zero is not read."""
    s = np.arange(0.0, 101.0, 10.0)
    head = np.concatenate([[5.0, 8.0, 10.0], 10.0 * np.exp(-0.01 * (s[3:] - 20.0))])
    d = diagnose(s, 100.0 + s, {"top": head}, fitted_at=0.0, head_layer="top")
    assert (d.head_norm, d.head_peak_step, d.head_contract_step, d.head_warning) == ("contracting", 20.0, 40.0, True)
    assert "the head contracts while ‖θ‖² is rising (early warning)" in d.text()
    assert diagnose(s, 100.0 + s, {"head": head}, fitted_at=0.0, head_layer="top").head_warning is False
    both = diagnose(s, 200.0 * np.exp(-0.01 * s), {"top": head}, fitted_at=0.0, head_layer="top")
    assert both.head_norm == "contracting" and both.head_warning is False  # no warning when the total contracts
    zero = diagnose(s, 100.0 + s, {"top": np.where(s == 50, 0.0, head)}, fitted_at=0.0, head_layer="top")
    assert zero.head_norm == "" and zero.head_warning is False and math.isnan(zero.head_peak_step)


def test_the_head_is_read_from_t_fit_over_the_totals_recent_logs():
    """T_fit = 30. The head peaks at 10 (before the fit: not its peak) and again at 60, then falls (≤ 14.4 at 80);
    the total peaks at 60 too. Read from T_fit the head's peak is 60; its trend is fitted from the total's peak (60)
    on, where it contracts, though over the whole window [0, 100] (it rises 1 → 16 first) it rises."""
    s = np.arange(0.0, 101.0, 10.0)
    head = np.array([1.0, 50.0, 2.0, 4.0, 8.0, 12.0, 16.0, 15.0, 14.0, 13.0, 12.8])
    total = np.where(s <= 60, 100.0 + s, 160.0 * np.exp(-0.01 * (s - 60.0)))
    d = diagnose(s, total, {"head": head}, fitted_at=30.0)
    assert (d.head_peak_step, d.head_contract_step) == (60.0, 80.0) and d.head_norm == "contracting"
    assert trend(s, head, s >= 0.0, 0.01)[0] == "rising"


def test_a_forecast_reads_in_one_line():
    v = contraction(noise=False)
    d = diagnose(STEPS, v, fitted_at=50.0, v_post=20.0)
    assert d.text() == (
        f"step 300: fitted at 50; ‖θ‖² peaked and contracting (peak at 100); transition under way; "
        f"T_transition ≈ {100 + math.log(10) / 0.01:.0f} [{d.forecast.T_lo:.0f}, "
        f"{d.forecast.T_hi:.0f}] (V_post 20, given)"
    )
    assert d.forecast.T_hat == pytest.approx(100.0 + math.log(10.0) / 0.01, rel=1e-9)


FITTED = {
    "rising": ("weak", "re-growing"),
    "flat": ("undecided", "settled"),
    "contracting": ("undecided", "undecided"),
    "peaked and contracting": ("transition under way", "transition under way"),
}


@pytest.mark.parametrize("norm", list(FITTED))
@pytest.mark.parametrize("peaked", [False, True])
def test_read_signal_follows_its_table(norm, peaked):
    """Fitted: rising is weak before a peak and re-growing after; flat is settled after a peak, undecided before;
    contracting without a peak's fall is undecided. Not fitted says so; a fit unknown is undecided."""
    assert read_signal("fitted", norm, peaked) == FITTED[norm][peaked]
    assert read_signal("not fitted", norm, peaked) == "not fitted"
    assert read_signal("unknown", norm, peaked) == "undecided"


# ----------------------------------------------------------------------------- options


def test_monitor_options_carry_every_window_field_and_the_level():
    s = ForecastSettings(
        window="after_peak", window_logs=7, window_steps=35.0, peak_drop=0.3, flat_tolerance=0.05, min_points=4
    )
    o = monitor_options(s, 0.8, v_post=12.0)
    assert (
        o.window,
        o.window_logs,
        o.window_steps,
        o.peak_drop,
        o.flat_tolerance,
        o.min_points,
        o.confidence,
        o.v_post,
    ) == ("after_peak", 7, 35.0, 0.3, 0.05, 4, 0.8, 12.0)


@pytest.mark.parametrize(
    "options",
    [
        dict(peak_drop=1e-9),
        dict(peak_drop=0.999),
        dict(confidence=0.01),
        dict(min_points=3, floor_min_points=4),
        dict(v_post=1e-9),
        dict(v_post=10.0, v_post_range=(10.0, 10.0)),
        dict(window="after_peak"),
    ],
)
def test_options_at_their_bounds_are_accepted(options):
    assert options_from(options) == MonitorOptions(**options)


@pytest.mark.parametrize(
    "options, words",
    [
        (dict(window="peak"), "window = 'peak' must be 'recent' or 'after_peak'"),
        (dict(peak_drop=0.0), "peak_drop and confidence must lie strictly between 0 and 1"),
        (dict(peak_drop=1.0), "peak_drop and confidence"),
        (dict(confidence=1.0), "peak_drop and confidence"),
        (dict(confidence=0.0), "peak_drop and confidence"),
        (dict(min_points=2), "min_points must be ≥ 3"),
        (dict(floor_min_points=3), "floor_min_points ≥ 4"),
        (dict(v_post=0.0), "v_post = 0.0 must be a finite positive"),
        (dict(v_post=math.inf), "finite positive"),
        (dict(v_post=math.nan), "finite positive"),
        (dict(v_post_range=(1.0, 2.0)), "v_post_range = (1.0, 2.0) must be (lo, hi) with 0 < lo ≤ v_post ≤ hi"),
        (dict(v_post=5.0, v_post_range=(0.0, 6.0)), "0 < lo"),
        (dict(v_post=5.0, v_post_range=(6.0, 7.0)), "0 < lo"),
        (dict(v_post=5.0, v_post_range=(1.0, 4.0)), "0 < lo"),
        (dict(v_post=5.0, v_post_range=(1.0, math.inf)), "0 < lo"),
        (dict(v_post=5.0, v_post_range=(1.0, 5.0, 9.0)), "0 < lo"),
        (dict(widow=3), "unknown option(s) widow; the options are confidence, divergence_norm"),
    ],
)
def test_bad_options_say_what_is_wrong(options, words):
    with pytest.raises(ConfigError, match=None) as e:
        options_from(options)
    assert words in str(e.value)


@pytest.mark.parametrize(
    "steps, words", [([0.0], "at least two"), ([0.0, 10.0, 10.0], "increasing"), ([[0.0, 1.0]], "1-D")]
)
def test_steps_must_be_one_increasing_sequence_of_two_logs(steps, words):
    with pytest.raises(ConfigError, match="steps must be a 1-D increasing sequence of at least two logged steps"):
        diagnose(steps, np.ones(np.asarray(steps).shape[-1]))


def test_a_series_of_another_length_names_itself():
    with pytest.raises(ConfigError, match=r"train_acc has shape \(2,\), the steps \(3,\)"):
        diagnose([0.0, 1.0, 2.0], [1.0, 2.0, 3.0], train_acc=[0.0, 1.0])


def test_a_run_not_fitted_or_of_unknown_fit_reads_so_in_one_line():
    """V rising 100 → 200 over 0 … 100: fitted_at 200 (after the last log) reads "not fitted", neither fitted_at nor
    train_acc "fit unknown", each with its signal and the reason there is no forecast."""
    s = np.arange(0.0, 101.0, 10.0)
    assert diagnose(s, 100.0 + s, fitted_at=200.0).text() == (
        "step 100: not fitted; ‖θ‖² rising; not fitted; no forecast: not fitted yet"
    )
    assert diagnose(s, 100.0 + s).text() == (
        "step 100: fit unknown; ‖θ‖² rising; undecided; no forecast: T_fit unknown: give fitted_at or train_acc"
    )


def test_the_head_warning_is_added_to_the_line_not_in_place_of_it():
    """The head ("top") contracts from 20 on while the total rises: the whole line, the warning between the signal and
    the forecast's reason."""
    s = np.arange(0.0, 101.0, 10.0)
    head = np.concatenate([[5.0, 8.0, 10.0], 10.0 * np.exp(-0.01 * (s[3:] - 20.0))])
    assert diagnose(s, 100.0 + s, {"top": head}, fitted_at=0.0, head_layer="top").text() == (
        "step 100: fitted at 0; ‖θ‖² rising; weak; the head contracts while ‖θ‖² is rising (early warning); "
        "no forecast: ‖θ‖² is rising over the recent window: no contraction to extrapolate"
    )


def test_the_floor_is_fitted_from_the_peak_log_on_and_needs_floor_min_points_of_them():
    """V rises to 200 at 60, then 100 + 100·e^{−0.05(t − 60)}: the peak log 60 and 70, 80, 90 are 4 logs, the fewest
    for a floor: fitted (≈ 100). Peaked at 70 instead: 3 logs, no floor, no V̂_post source."""
    s = np.arange(0.0, 91.0, 10.0)
    v = np.where(s <= 60, 100.0 + s * 100.0 / 60.0, 100.0 + 100.0 * np.exp(-0.05 * (s - 60.0)))
    f = diagnose(s, v, fitted_at=0.0).forecast
    assert (f.v_post_source, f.reason, f.t_start) == ("floor", "", 60.0) and f.V_post == pytest.approx(100.0, rel=1e-6)
    late = np.where(s <= 70, 100.0 + s * 100.0 / 70.0, 100.0 + 100.0 * np.exp(-0.05 * (s - 70.0)))
    f = diagnose(s, late, fitted_at=0.0).forecast
    assert (f.v_post_source, f.reason) == ("", "only 3 logs in the window for the floor (< 4)")
    assert math.isnan(f.V_post) and math.isnan(f.T_hat)


def test_a_v_post_range_may_start_below_one():
    """0 < lo ≤ v_post ≤ hi: (0.5, 2) around v_post = 0.8 is a valid range (norms below 1 are norms)."""
    assert options_from({"v_post": 0.8, "v_post_range": (0.5, 2.0)}).v_post_range == (0.5, 2.0)


def test_a_float32_train_accuracy_is_compared_at_its_exact_value():
    """T_fit is the first log with accuracy ≥ fit_threshold, read in float64: float32 0.9 is 0.89999998, below a 0.9
    threshold (in float32 arithmetic the two are equal), so T_fit is 40 (0.95), not 20."""
    s = np.arange(0.0, 91.0, 10.0)
    acc = np.array([0.5, 0.8, 0.9, 0.9, 0.95, 1, 1, 1, 1, 1], np.float32)
    assert diagnose(s, 100.0 + s, train_acc=acc, fit_threshold=0.9).T_fit == 40.0


def test_float32_steps_are_compared_at_their_exact_values():
    """Steps in float32 (0 … 100) are read in float64: fitted_at = 100 + 10⁻⁶ lies after the last log, "not fitted"
    (in float32 it rounds to 100, "fitted")."""
    s = np.arange(0.0, 101.0, 10.0, dtype=np.float32)
    assert diagnose(s, 100.0 + s, fitted_at=100.000001).fit == "not fitted"
    assert diagnose(s, 100.0 + s, fitted_at=100.0).fit == "fitted"


def test_a_diverged_run_has_every_other_field_empty():
    """V infinite at 20 (of 0 … 50): "diverged" from 20, T_fit NaN, no trend, peak or head reading, no warning, the
    options kept (even with a fit and a contracting head given)."""
    s = np.arange(0.0, 51.0, 10.0)
    v = np.where(s == 20, math.inf, 100.0 + s)
    d = diagnose(s, v, {"head": 100.0 * np.exp(-0.01 * s)}, fitted_at=0.0, window_logs=4)
    assert (d.step, d.fit, d.diverged_step, d.norm, d.signal, d.head_norm, d.head_warning, d.norm_sq) == (
        50.0,
        "diverged",
        20.0,
        "",
        "diverged",
        "",
        False,
        150.0,
    )
    assert all(
        math.isnan(x)
        for x in (d.T_fit, d.window_change, d.peak_step, d.contract_step, d.head_peak_step, d.head_contract_step)
    )
    assert d.options == MonitorOptions(window_logs=4) and d.forecast.reason == "diverged"


def test_two_logs_are_enough_to_diagnose():
    """Steps 0, 10 with V 100 → 200: rising (Δ = log 2), fitted at 0, weak."""
    d = diagnose([0.0, 10.0], [100.0, 200.0], fitted_at=0.0)
    assert (d.fit, d.norm, d.signal) == ("fitted", "rising", "weak")
    assert d.window_change == pytest.approx(math.log(2.0), rel=1e-12)


@pytest.mark.parametrize(
    "args, message",
    [
        (dict(norm_sq=[1.0, 2.0]), r"diagnose: norm_sq has shape \(2,\), the steps \(3,\)"),
        (dict(norm_sq=[1.0, 2.0, 3.0], layer_norms={"head": [1.0]}), r"layer_norms\['head'\] has shape \(1,\)"),
    ],
)
def test_a_series_of_another_length_is_named_in_the_error(args, message):
    with pytest.raises(ConfigError, match=message):
        diagnose([0.0, 10.0, 20.0], **args)


def test_an_accuracy_that_never_reaches_the_threshold_is_not_fitted():
    """train_acc 0.5 … 0.98 < 0.99 at every log: "not fitted", T_fit NaN, no forecast."""
    s = np.arange(0.0, 41.0, 10.0)
    d = diagnose(s, 100.0 + s, train_acc=[0.5, 0.9, 0.95, 0.98, 0.98])
    assert (d.fit, d.signal, d.forecast.reason) == ("not fitted", "not fitted", "not fitted yet")
    assert math.isnan(d.T_fit)


def test_a_run_that_peaked_and_rises_again_is_re_growing_with_every_field_read():
    """V 100 … 250 at 30 (the peak), 200 at 40 (≤ 225: contracting there), then up to 500 at 100: fitted at 0, the
    trend from the peak on rising, so "re-growing" (not "weak": it peaked); V at the last log 500, no divergence,
    the options kept."""
    s = np.arange(0.0, 101.0, 10.0)
    v = np.array([100.0, 150, 200, 250, 200, 180, 200, 260, 320, 400, 500])
    d = diagnose(s, v, fitted_at=0.0, flat_tolerance=0.02)
    assert (d.peak_step, d.contract_step, d.norm, d.signal, d.norm_sq) == (30.0, 40.0, "rising", "re-growing", 500.0)
    assert math.isnan(d.diverged_step) and d.options == MonitorOptions(flat_tolerance=0.02)


def test_a_run_of_unknown_fit_is_read_from_its_first_log():
    """No T_fit: the peak is searched from the first log. V = 100·e^{−0.02t}: the peak at 0, contracting (≤ 90) at
    10 (from the second log on it would be 10 and 20). Rising V = 100 + t² (no peak): the trend over the whole
    window [0, 100], first log included: Δ = −(the fitted slope of log V)·100, the slope by polyfit here."""
    s = np.arange(0.0, 101.0, 10.0)
    d = diagnose(s, 100.0 * np.exp(-0.02 * s))
    assert (d.fit, d.peak_step, d.contract_step) == ("unknown", 0.0, 10.0)
    rise = diagnose(s, 100.0 + s**2)
    slope = np.polyfit(s, np.log(100.0 + s**2), 1)[0]
    assert math.isnan(rise.peak_step) and rise.window_change == pytest.approx(slope * 100.0, rel=1e-12)
