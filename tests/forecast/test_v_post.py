"""V̂_post's rules (`nht_jax.measure.forecast.v_post`) on planted pilots: an exact power law V_T = c·λ^b is recovered at a held-out
λ by the full local trend (trend_weight 1), the damped trend sits at the centre of the bracket [nearest, line] in
log V, one λ level gives the nearest level's V, no pilot gives none (the floor); the old rule is unchanged; the
bracket widens the forecast's interval; the live table uses the rule; bad options say what is wrong."""

import math

import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.experiment import AnalysisConfig
from nht_jax.training import live
from nht_jax.measure.forecast.diagnosis import diagnose
from nht_jax.measure.forecast.v_post import interval_range, nearest_levels, trend_estimate, v_post_estimates

C, B = 2000.0, -0.3  # V_T = C·λ^B


def power(lam):
    return C * np.asarray(lam, float) ** B


def grid(lams, seeds=None, **other):
    hp = {"weight_decay": np.asarray(lams, float), "seed": np.asarray(seeds if seeds is not None else [0] * len(lams))}
    return hp | {k: np.asarray(v, float) for k, v in other.items()}


def test_nearest_levels_order_by_log_distance_and_break_ties_toward_the_larger_lambda():
    np.testing.assert_array_equal(nearest_levels(1.0, [4.0, 0.25, 2.0, 2.0, 0.1]), [2.0, 4.0, 0.25, 0.1])


@pytest.mark.parametrize("held_out", [0, 2, 4])
def test_the_full_trend_recovers_a_held_out_run_on_an_exact_power_law(held_out):
    """Below, inside and above the pilots' λ: the line through the two nearest levels is the power law itself."""
    lams = np.array([0.05, 0.2, 0.5, 1.0, 3.0])
    usable = np.where(np.arange(5) == held_out, np.nan, 100.0)
    est = v_post_estimates("pilot-trend", grid(lams), usable, power(lams), ("weight_decay", "seed"), trend_weight=1.0)
    assert est[held_out].value == pytest.approx(power(lams[held_out]), rel=1e-12)
    assert interval_range(est[held_out]) is not None
    nearest = {0: (1,), 2: (1, 3), 4: (3,)}[held_out]  # the two nearest levels (ties at 2: both neighbours)
    assert set(nearest) <= set(est[held_out].pilots) and held_out not in est[held_out].pilots


def test_the_damped_trend_is_the_centre_of_the_bracket_in_log_v():
    """Pilots at λ = 1 and 2 (two seeds each: their median), the run at λ = 0.25: V_1 = V(1), line = the power law;
    w = ½ gives their geometric mean, w = 0 the nearest level, and the bracket is [line, V_1] ordered."""
    lams = np.array([0.25, 1.0, 1.0, 2.0, 2.0])
    v = np.array([math.nan, power(1.0) * 0.9, power(1.0) * 1.1, power(2.0) * 0.8, power(2.0) * 1.2])
    value, lo, hi, used = trend_estimate(0.25, lams[1:], v[1:], 0.5)
    v1, v2 = np.median(v[1:3]), np.median(v[3:])
    line = v1 * (0.25 / 1.0) ** (math.log(v2 / v1) / math.log(2.0))
    assert value == pytest.approx(math.sqrt(v1 * line), rel=1e-12)
    assert (lo, hi) == pytest.approx((min(v1, line), max(v1, line)), rel=1e-12) and used.all()
    assert trend_estimate(0.25, lams[1:], v[1:], 0.0)[0] == v1


def test_one_level_gives_its_median_and_no_pilot_gives_none():
    """Run 0 (λ 0.1) with pilots at λ 1 only; run 1 (λ 0.1, another seed) may use run 0 once it transitioned; a run
    in another cell of a fixed axis (learning_rate) has none, so the floor."""
    hp = grid([0.1, 0.1, 1.0, 1.0, 0.1], seeds=[0, 1, 0, 1, 0], learning_rate=[1, 1, 1, 1, 2])
    v = np.array([700.0, 600.0, 500.0, 520.0, 650.0])
    est = v_post_estimates("pilot-trend", hp, [np.nan, np.nan, 10, 10, np.nan], v, ("weight_decay", "seed"))
    assert (est[0].value, est[0].lo, est[0].hi, est[0].pilots) == (510.0, 510.0, 510.0, (2, 3))
    assert interval_range(est[0]) is None and math.isnan(est[4].value) and est[4].pilots == ()
    same_lambda = v_post_estimates("pilot-trend", hp, [10, np.nan, np.nan, np.nan, np.nan], v, ("weight_decay", "seed"))
    assert same_lambda[1].value == 700.0 and same_lambda[1].pilots == (0,)  # the old rule would have none
    assert (
        v_post_estimates("pilot", hp, [10, np.nan, np.nan, np.nan, np.nan], v, ("weight_decay", "seed"))[1].pilots == ()
    )


def test_the_pilot_rule_is_the_median_at_the_largest_lambda_above_and_floor_is_none():
    lams = np.array([0.1, 0.3, 1.0, 1.0])
    v = np.array([900.0, 800.0, 500.0, 600.0])
    est = v_post_estimates("pilot", grid(lams, seeds=[0, 0, 0, 1]), [np.nan, 10, 10, 10], v, ("weight_decay", "seed"))
    assert (est[0].value, est[0].pilots) == (550.0, (2, 3)) and interval_range(est[0]) is None
    assert all(math.isnan(e.value) for e in v_post_estimates("floor", grid(lams), [10] * 4, v, ("weight_decay",)))


def test_a_run_without_weight_decay_takes_the_pilot_rule():
    est = v_post_estimates(
        "pilot-trend", grid([0.0, 0.5, 1.0]), [np.nan, 10, 10], [0, 800.0, 600.0], ("weight_decay", "seed")
    )
    assert (est[0].value, est[0].pilots) == (600.0, (2,))


STEPS = np.arange(0.0, 1001.0, 10.0)


def test_the_bracket_widens_the_interval_and_leaves_the_point_forecast():
    """V = 400·e^{−0.002(t − 300)} from its peak at 300 (noise-free: se = 0): T_lo and T_hi are the times the
    line reaches the bracket's ends, T̂ the time it reaches V̂_post."""
    v = np.where(STEPS <= 300, 100.0 + STEPS, 400.0 * np.exp(-0.002 * (STEPS - 300)))
    fixed = diagnose(STEPS[:60], v[:60], fitted_at=200.0, v_post=100.0).forecast
    wide = diagnose(STEPS[:60], v[:60], fitted_at=200.0, v_post=100.0, v_post_range=(50.0, 200.0)).forecast
    at = lambda target: 300.0 + math.log(400.0 / target) / 0.002  # noqa: E731
    assert fixed.T_hat == pytest.approx(at(100.0), rel=1e-6) == wide.T_hat
    assert fixed.T_lo == pytest.approx(fixed.T_hat, rel=1e-6) and fixed.T_hi == pytest.approx(fixed.T_hat, rel=1e-6)
    assert (wide.T_lo, wide.T_hi) == pytest.approx((at(200.0), at(50.0)), rel=1e-6)


@pytest.mark.parametrize(
    "options, words",
    [
        (dict(v_post=100.0, v_post_range=(150.0, 200.0)), "lo ≤ v_post ≤ hi"),
        (dict(v_post_range=(50.0, 200.0)), "lo ≤ v_post ≤ hi"),
    ],
)
def test_a_bad_v_post_range_says_what_is_wrong(options, words):
    with pytest.raises(ConfigError, match=words):
        diagnose(STEPS, 100.0 + STEPS, fitted_at=200.0, **options)


@pytest.mark.parametrize(
    "options, words",
    [
        (dict(v_post="trend"), "pilot, pilot-trend, floor"),
        (dict(trend_weight=-0.1), r"trend_weight = -0.1 must lie in \[0, 1\]"),
    ],
)
def test_bad_live_options_say_what_is_wrong(options, words):
    with pytest.raises(ConfigError, match=words):
        live.LiveOptions(**options)


def history(v, fit_at, transition_at=math.inf):
    return {
        "steps": STEPS,
        "norm_sq": np.asarray(v, float),
        "train_acc": (STEPS >= fit_at).astype(float),
        "test_acc": (STEPS >= transition_at).astype(float),
        "finite": np.ones(STEPS.size),
    }


def test_the_live_table_forecasts_with_the_trend_of_the_transitioned_runs():
    """Pilots at λ = 1 and 4 transitioned at V = power(λ); the run at λ = 0.25 contracts as 8000·e^{−0.001(t − 300)}
    from its peak: with trend_weight 1 its V̂_post is power(0.25) and T̂ the closed form; the default (½) aims
    higher than the old rule (the largest λ's V, the default) and lower than the line, its interval carrying the
    bracket."""
    v = np.where(STEPS <= 300, 7000.0 + STEPS, 8000.0 * np.exp(-0.001 * (STEPS - 300)))
    histories = [history(v, 200.0)] + [
        history(np.where(STEPS < 400, 5000.0, power(lam)), 100.0, 400.0) for lam in (1.0, 4.0)
    ]
    rule = AnalysisConfig(transition_metric="test_acc")
    rows = {
        w: live.live_rows(
            histories, grid([0.25, 1.0, 4.0]), rule, "norm_sq", live.LiveOptions(v_post="pilot-trend", trend_weight=w)
        )[0]
        for w in (0.0, 0.5, 1.0)
    }
    old = live.live_rows(histories, grid([0.25, 1.0, 4.0]), rule, "norm_sq", live.LiveOptions(v_post="pilot"))[0]
    assert rows[1.0]["V_post"] == pytest.approx(power(0.25), rel=1e-5)
    assert rows[1.0]["T_hat"] == pytest.approx(300.0 + math.log(8000.0 / power(0.25)) / 0.001, rel=1e-5)
    assert rows[0.0]["V_post"] == pytest.approx(power(1.0), rel=1e-5) and old["V_post"] == pytest.approx(power(4.0))
    assert old["V_post"] < rows[0.0]["V_post"] < rows[0.5]["V_post"] < rows[1.0]["V_post"]
    mid = rows[0.5]
    assert mid["pilots"] == "1 2" and mid["v_post_source"] == "pilot"
    assert mid["T_lo"] == pytest.approx(rows[1.0]["T_hat"], rel=1e-5)  # the bracket's ends, se = 0
    assert mid["T_hi"] == pytest.approx(rows[0.0]["T_hat"], rel=1e-5)
