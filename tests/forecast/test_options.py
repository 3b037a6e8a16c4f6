"""The forecast's options (`nht_jax.config.forecast`): the window's length (steps, or logs times the smallest
interval), every check of `ForecastSettings.check` at its bounds, accepted on the inside and refused on the outside
with its message and the caller's prefix, an extra V̂_post rule, the first invalid field named (issue 43)."""

import math

import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.config.forecast import V_POST_RULES, ForecastSettings, WindowFit, check_v_post_rule


def test_the_window_is_window_steps_or_window_logs_smallest_intervals():
    steps = np.array([0.0, 20.0, 25.0, 40.0, 100.0])
    assert WindowFit(window_logs=3).window_length(steps) == 15.0  # 3 × 5, the smallest interval
    assert WindowFit(window_logs=3, window_steps=7.5).window_length(steps) == 7.5
    assert WindowFit(window_logs=3, window_steps=1.0).window_length(steps) == 1.0  # any positive W, even ≤ 1
    assert WindowFit(window_logs=3, window_steps=0.25).window_length(steps) == 0.25


@pytest.mark.parametrize(
    "fields",
    [
        dict(peak_drop=1e-6),
        dict(peak_drop=1 - 1e-6),
        dict(min_points=3),
        dict(window_logs=1),
        dict(window_steps=0.0),
        dict(flat_tolerance=0.0),
        dict(trend_weight=0.0),
        dict(trend_weight=1.0),
        dict(kappa_fixed=1e-9),
        dict(v_star_weight=0.0),
        dict(v_star_weight=1.0),
        dict(interval=1e-6),
        dict(interval=1 - 1e-6),
        dict(window="after_peak"),
        dict(kappa="run"),
        dict(kappa="fixed"),
        dict(kappa_pool="cell"),
        dict(kappa_pool="level"),
        dict(v_post="floor"),
        dict(v_post="pilot-trend"),
        dict(pilot_free_axes=("weight_decay",)),
    ],
)
def test_options_at_their_bounds_pass_the_check(fields):
    ForecastSettings(**fields).check("x.")


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(window="peak"), "x.window = 'peak' must be recent or after_peak"),
        (dict(peak_drop=0.0), "x.peak_drop = 0.0 must lie strictly between 0 and 1"),
        (dict(peak_drop=1.0), "x.peak_drop = 1.0 must lie strictly between 0 and 1"),
        (dict(min_points=2), "x.min_points = 2 must be ≥ 3 (a rate and its error)"),
        (
            dict(window_logs=0),
            "x.window_logs must be ≥ 1 and window_steps ≥ 0 (0: window_logs logged intervals), got 0, 0.0",
        ),
        (dict(window_steps=-1.0), "x.window_logs must be ≥ 1 and window_steps ≥ 0"),
        (dict(flat_tolerance=-0.01), "x.flat_tolerance = -0.01 must be ≥ 0"),
        (dict(v_post="oracle"), "x.v_post = 'oracle' must be one of pilot, pilot-trend, floor"),
        (
            dict(trend_weight=-0.1),
            "x.trend_weight = -0.1 must lie in [0, 1] (0: the nearest λ's V, 1: the full local power law)",
        ),
        (dict(trend_weight=1.1), "x.trend_weight = 1.1 must lie in [0, 1]"),
        (dict(kappa="median"), "x.kappa = 'median' must be calibrated, run or fixed"),
        (dict(kappa_fixed=0.0), "x.kappa_fixed = 0.0 must be a finite positive number"),
        (dict(kappa_fixed=math.inf), "x.kappa_fixed = inf must be a finite positive number"),
        (dict(kappa_fixed=math.nan), "x.kappa_fixed = nan must be a finite positive number"),
        (dict(kappa_pool="seed"), "x.kappa_pool = 'seed' must be all, cell, level or model"),
        (dict(v_star_weight=-0.5), "x.v_star_weight = -0.5 must lie in [0, 1]"),
        (dict(v_star_weight=1.5), "x.v_star_weight = 1.5 must lie in [0, 1]"),
        (dict(interval=0.0), "x.interval = 0.0 must lie strictly between 0 and 1"),
        (dict(interval=1.0), "x.interval = 1.0 must lie strictly between 0 and 1"),
        (dict(pilot_free_axes=("seed",)), "x.pilot_free_axes must contain weight_decay"),
    ],
)
def test_each_bad_option_is_refused_with_its_message(fields, message):
    with pytest.raises(ConfigError) as e:
        ForecastSettings(**fields).check("x.")
    assert str(e.value).startswith(message)


def test_an_extra_v_post_rule_is_accepted_where_its_user_adds_it():
    """The replay adds "oracle"; the message then lists it after the three rules."""
    ForecastSettings(v_post="oracle").check("f.", extra_v_post=("oracle",))
    assert V_POST_RULES == ("pilot", "pilot-trend", "floor")
    with pytest.raises(ConfigError, match="f.v_post = 'given' must be one of pilot, pilot-trend, floor, oracle"):
        check_v_post_rule("given", 0.5, "f.", ("oracle",))


def test_the_first_invalid_field_is_named():
    """window is checked first, interval before pilot_free_axes."""
    with pytest.raises(ConfigError, match="window = 'x'"):
        ForecastSettings(window="x", peak_drop=2.0, interval=2.0).check("")
    with pytest.raises(ConfigError, match="interval = 2.0"):
        ForecastSettings(interval=2.0, pilot_free_axes=()).check("")
