"""Known answers of V̂_post's rules (`nht_jax.measure.forecast.v_post`) line by line, on small asymmetric grids chosen so
that the wrong rule gives another answer: the cell's relative tolerance, the pilots' largest λ strictly above the
run's (a λ within 1e-6 is the same level), ties within a level, runs that do not fit; levels ordered by log, not
linear, distance; the median (not the mean) of a level's values; the trend's slope, reach and bracket; a run is not
its own pilot and a λ = 0 pilot is not in the power law; the interval range only where the rule states one. A law
by hypothesis: the damped trend lies in its bracket. Pure numpy (issue 43)."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nht_jax.measure.forecast.v_post import (
    NONE,
    VPost,
    interval_range,
    nearest_levels,
    same_cell,
    select_pilots,
    trend_estimate,
    v_post_estimates,
)

FAST = settings(max_examples=60, deadline=None)
FREE = ("weight_decay", "seed")


def test_same_cell_holds_within_a_relative_tolerance_of_one_in_a_million_on_every_fixed_axis():
    """learning_rate 1, 1 + 5e-7 (the same), 1 + 5e-6 (another); the seed counts once it is not a free axis."""
    hp = {
        "weight_decay": np.array([0.1, 0.2, 0.3]),
        "seed": np.array([0, 1, 0]),
        "learning_rate": np.array([1.0, 1.0 + 5e-7, 1.0 + 5e-6]),
    }
    np.testing.assert_array_equal(same_cell(hp, FREE), [[1, 1, 0], [1, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(same_cell(hp, ("weight_decay",)), [[1, 0, 0], [0, 1, 0], [0, 0, 1]])


def test_same_cell_has_no_absolute_tolerance_so_tiny_values_stay_apart():
    """learning_rate 1e-9 and 5e-9 differ by 4e-9, far beyond 1e-6 relative: two cells (numpy's default
    atol = 1e-8 would join them)."""
    hp = {"weight_decay": np.array([0.1, 0.2]), "seed": np.zeros(2), "learning_rate": np.array([1e-9, 5e-9])}
    np.testing.assert_array_equal(same_cell(hp, FREE), np.eye(2, dtype=bool))


LAMS = np.array([0.1, 0.1, 0.3, 1.0, 1.0, 1.0 + 5e-7, 2.0, 5.0])
FIT = np.array([10.0, 10.0, 10.0, 10.0, 10.0, 10.0, math.nan, 10.0])  # λ = 2 never fits


def test_the_pilots_are_the_fitting_runs_at_the_largest_lambda_above_the_runs_own():
    """Run 7 (λ 5) is in another cell (learning_rate 2). From λ 0.1 and 0.3 the largest fitting λ above is the level
    1.0 (its three runs, 1 + 5e-7 among them: one level); λ = 2 does not fit. From λ 1.0 nothing lies above by
    more than the tolerance (1 + 5e-7 is the same level): no pilot; nor from λ 2 or 5."""
    hp = {"weight_decay": LAMS, "seed": np.arange(8), "learning_rate": np.array([1.0] * 7 + [2.0])}
    assert select_pilots(hp, FIT, FREE) == [(3, 4, 5), (3, 4, 5), (3, 4, 5), (), (), (), (), ()]


@pytest.mark.parametrize(
    "lams, pilots",
    [
        ([1.0, 1.0 * (1 + 1e-6)], [(), ()]),  # exactly 1e-6 above: the same level (strictly above is needed)
        ([1.0, 1.5], [(1,), ()]),  # any λ above by more than 1e-6, not only 2× above
        ([0.5, 1.0, 1.0 + 5e-6], [(2,), (2,), ()]),  # 1.0 is 5e-6 below the top: another level (rtol 1e-6)
        ([1e-10, 1e-9, 5e-9], [(2,), (2,), ()]),  # tiny λ: no absolute tolerance joins 1e-9 to 5e-9
    ],
)
def test_the_pilot_level_is_strictly_above_and_within_one_in_a_million_of_the_largest(lams, pilots):
    hp = {"weight_decay": np.array(lams), "seed": np.zeros(len(lams))}
    assert select_pilots(hp, np.full(len(lams), 10.0), FREE) == pilots


def test_float32_lambdas_are_compared_in_float64():
    """λ as float32 (as a results file may hold them): 0.13400013744831085 lies 1.0009e-6 (relative) above the
    float32 0.134 = 0.13400000333786011, so it is a pilot; the bound 0.134·(1 + 1e-6) rounded to float32 would
    be that very λ and refuse it."""
    lams = np.array([0.134, 0.13400013744831085], np.float32)
    assert select_pilots({"weight_decay": lams, "seed": np.zeros(2)}, [10.0, 10.0], FREE) == [(1,), ()]


def test_select_pilots_holds_the_free_axes_it_is_given():
    """Run 1 (λ 1, seed 1) pilots run 0 (λ 0.1, seed 0) only while the seed is free."""
    hp = {"weight_decay": np.array([0.1, 1.0]), "seed": np.array([0, 1])}
    assert select_pilots(hp, [10.0, 10.0], FREE) == [(1,), ()]
    assert select_pilots(hp, [10.0, 10.0], ("weight_decay",)) == [(), ()]


def test_levels_are_ordered_by_log_distance_not_linear_distance():
    """From λ = 1: 1.8 is nearer than 0.5 in log λ (0.59 against 0.69), farther in λ (0.8 against 0.5)."""
    np.testing.assert_array_equal(nearest_levels(1.0, [0.5, 1.8, 0.1]), [1.8, 0.5, 0.1])


def test_levels_tied_in_log_distance_put_the_larger_lambda_first_behind_a_nearer_one():
    """From λ = 1: 4 and 0.25 tie (|ln| = ln 4), then 8, 16. Only a stable sort of the descending levels keeps 4
    before 0.25 (numpy's default sort, SIMD on this kind of machine, puts 0.25 first here)."""
    np.testing.assert_array_equal(nearest_levels(1.0, [16.0, 0.25, 8.0, 4.0]), [4.0, 0.25, 8.0, 16.0])
    np.testing.assert_array_equal(nearest_levels(1.0, [0.0625, 0.25, 16.0, 8.0, 4.0]), [4.0, 0.25, 8.0, 16.0, 0.0625])


def test_the_trend_takes_each_levels_median_and_the_two_nearest_levels():
    """The run at λ 0.2; pilots at 0.5 (V 100, 150, 110: median 110, mean 120), 2.0 (60, 80, 65: median 65) and
    8.0 (30, the third level, not used). b = ln(65/110)/ln(4), reach ln(0.2/0.5), the line 110·e^{b·reach} above
    110."""
    lams = [0.5, 2.0, 0.5, 8.0, 2.0, 0.5, 2.0]
    values = [100.0, 60.0, 150.0, 30.0, 80.0, 110.0, 65.0]
    b, reach = math.log(65.0 / 110.0) / math.log(4.0), math.log(0.2 / 0.5)
    line = 110.0 * math.exp(b * reach)
    value, lo, hi, used = trend_estimate(0.2, lams, values, 0.25)
    assert value == pytest.approx(110.0 * math.exp(0.25 * b * reach), rel=1e-12)
    assert (lo, hi) == pytest.approx((110.0, line), rel=1e-12) and line > 110.0
    np.testing.assert_array_equal(used, [True, True, True, False, True, True, True])


def test_float32_values_take_their_median_in_float64():
    """V as float32 (as a history may log it): the median of 1 and 1 + 2⁻²³ is 1 + 2⁻²⁴, which float32 cannot hold
    (its mean in float32 rounds to 1)."""
    value, lo, hi, _ = trend_estimate(0.5, [1.0, 1.0], np.array([1.0, 1.0 + 2**-23], np.float32), 0.5)
    assert value == lo == hi == 1.0 + 2**-24


def test_a_level_is_one_lambda_within_one_in_a_million_not_numpys_default_tolerances():
    """From λ 1: 2 (V 100) is nearest, 0.5/(1 + 2e-6) (V 400) next, 2·(1 + 5e-6) (V 200) third, a level of its
    own (5e-6 from 2, beyond 1e-6): with w = 0 V̂_post = 100, not the median 150 of 2 and 2·(1 + 5e-6) (rtol 1e-5).
    Tiny λ: the run at 1.5e-9 with levels 1e-9 (V 100) and 3e-9 (V 50) follows the full power law,
    100·1.5^{ln ½ / ln 3}; an absolute tolerance 1e-8 would merge them into one flat level."""
    value, lo, hi, used = trend_estimate(1.0, [2.0, 2.0 * (1 + 5e-6), 0.5 / (1 + 2e-6)], [100.0, 200.0, 400.0], 0.0)
    assert value == 100.0 and used.tolist() == [True, False, True]
    value, lo, hi, used = trend_estimate(1.5e-9, [1e-9, 3e-9], [100.0, 50.0], 1.0)
    assert value == pytest.approx(100.0 * 1.5 ** (math.log(0.5) / math.log(3.0)), rel=1e-12)
    assert (lo, hi) == pytest.approx((value, 100.0), rel=1e-12)


def test_one_level_gives_its_median_with_no_range():
    value, lo, hi, used = trend_estimate(0.2, [0.5, 0.5, 0.5], [100.0, 150.0, 110.0], 0.5)
    assert (value, lo, hi) == (110.0, 110.0, 110.0) and used.all()


def test_the_pilot_rule_takes_the_median_of_its_pilots():
    hp = {"weight_decay": np.array([0.1, 1.0, 1.0, 1.0]), "seed": np.arange(4)}
    est = v_post_estimates("pilot", hp, [math.nan, 5.0, 5.0, 5.0], [0.0, 100.0, 150.0, 110.0], FREE)
    assert est[0] == VPost(110.0, 110.0, 110.0, (1, 2, 3)) and est[1] is NONE


def test_the_pilot_rule_takes_its_median_in_float64_holds_its_free_axes_and_warns_of_nothing():
    """Pilots 1 and 2 at λ 1 with float32 V 1 and 1 + 2⁻²³: the median 1 + 2⁻²⁴ (float32 would round it to 1). With
    the seed fixed (free axes weight_decay only) run 0 has no pilot; a run without pilots takes no median of
    nothing (no "Mean of empty slice" warning)."""
    hp = {"weight_decay": np.array([0.1, 1.0, 1.0]), "seed": np.array([0, 1, 2])}
    v = np.array([0.0, 1.0, 1.0 + 2**-23], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = v_post_estimates("pilot", hp, [math.nan, 5.0, 5.0], v, FREE)
        assert est[0] == VPost(1.0 + 2**-24, 1.0 + 2**-24, 1.0 + 2**-24, (1, 2)) and est[1] is NONE
        assert v_post_estimates("pilot", hp, [math.nan, 5.0, 5.0], v, ("weight_decay",)) == [NONE] * 3


def test_the_trend_rule_holds_its_free_axes_and_its_default_weight_is_one_half():
    """Run 0 (λ 0.25, seed 0), pilots at λ 1 (V 400) and 2 (V 100), seeds 1 and 2: b = ln(¼)/ln 2 = −2, the line
    400·(¼)^{−2} = 6400 and w = ½ (the default) its geometric mean with 400, 1600. With the seed fixed: none."""
    hp = {"weight_decay": np.array([0.25, 1.0, 2.0]), "seed": np.array([0, 1, 2])}
    est = v_post_estimates("pilot-trend", hp, [math.nan, 5.0, 5.0], [0.0, 400.0, 100.0], FREE)
    assert est[0][:3] == pytest.approx((1600.0, 400.0, 6400.0), rel=1e-12) and est[0].pilots == (1, 2)
    assert (
        v_post_estimates("pilot-trend", hp, [math.nan, 5.0, 5.0], [0.0, 400.0, 100.0], ("weight_decay",)) == [NONE] * 3
    )


def test_a_run_without_pilots_leaves_the_later_runs_their_own():
    """Only run 0 has transitioned: it has no pilot (NONE), runs 1 and 2 both have it as their one level. A λ = 0
    run first (the pilot rule: the largest λ above, 2.0) leaves the trend of the runs after it: each the other."""
    hp = {"weight_decay": np.array([0.2, 0.5, 2.0]), "seed": np.zeros(3)}
    est = v_post_estimates("pilot-trend", hp, [5.0, math.nan, math.nan], [70.0, 0.0, 0.0], FREE)
    assert est == [NONE, VPost(70.0, 70.0, 70.0, (0,)), VPost(70.0, 70.0, 70.0, (0,))]
    hp = {"weight_decay": np.array([0.0, 0.5, 2.0]), "seed": np.zeros(3)}
    est = v_post_estimates("pilot-trend", hp, [math.nan, 5.0, 5.0], [0.0, 110.0, 70.0], FREE)
    assert est == [VPost(70.0, 70.0, 70.0, (2,)), VPost(70.0, 70.0, 70.0, (2,)), VPost(110.0, 110.0, 110.0, (1,))]


def test_a_run_is_not_its_own_pilot_and_a_lambda_zero_run_is_not_in_the_power_law():
    """Run 0 (λ 0.2) has transitioned (usable): its own V would be the nearest level (distance 0); it takes the
    levels 0.5 and 2.0 instead. Run 3 (λ 0, usable) would make log λ infinite: it is left out of every trend."""
    hp = {"weight_decay": np.array([0.2, 0.5, 2.0, 0.0]), "seed": np.zeros(4)}
    v = np.array([500.0, 110.0, 70.0, 900.0])
    est = v_post_estimates("pilot-trend", hp, [5.0, 5.0, 5.0, 5.0], v, FREE, trend_weight=1.0)
    b = math.log(70.0 / 110.0) / math.log(4.0)
    assert est[0].pilots == (1, 2) and est[0].value == pytest.approx(110.0 * (0.2 / 0.5) ** b, rel=1e-12)
    assert 3 not in est[1].pilots and est[1].pilots == (0, 2)
    alone = v_post_estimates(
        "pilot-trend",
        {"weight_decay": np.array([0.5, 2.0, 0.0]), "seed": np.zeros(3)},
        [math.nan, 5.0, 5.0],
        [0.0, 70.0, 900.0],
        FREE,
    )
    assert alone[0] == VPost(70.0, 70.0, 70.0, (1,))  # one level: λ = 0 is not a second one


def test_the_floor_rule_has_no_v_post_even_with_pilots_at_hand():
    hp = {"weight_decay": np.array([0.2, 0.5, 2.0]), "seed": np.zeros(3)}
    assert v_post_estimates("floor", hp, [5.0, 5.0, 5.0], [1.0, 110.0, 70.0], FREE) == [NONE] * 3


def test_runs_that_may_not_serve_are_no_pilots_and_without_any_there_is_none():
    hp = {"weight_decay": np.array([0.2, 0.5, 2.0]), "seed": np.zeros(3)}
    est = v_post_estimates("pilot-trend", hp, [math.nan, math.nan, 5.0], [1.0, 110.0, 70.0], FREE)
    assert est[0] == VPost(70.0, 70.0, 70.0, (2,)) and est[2] is NONE


@pytest.mark.parametrize(
    "estimate, expected",
    [
        (VPost(5.0, 4.0, 7.0, (1,)), (4.0, 7.0)),
        (VPost(5.0, 5.0, 5.0, (1,)), None),
        (VPost(math.nan, 4.0, 7.0, ()), None),
        (NONE, None),
    ],
)
def test_the_interval_range_is_given_only_where_the_rule_states_one(estimate, expected):
    assert interval_range(estimate) == expected


@FAST
@given(
    st.floats(0.01, 10.0),
    st.floats(0.01, 10.0),
    st.floats(0.01, 10.0),
    st.floats(1.0, 1e4),
    st.floats(1.0, 1e4),
    st.floats(0.0, 1.0),
)
def test_the_damped_trend_lies_in_its_bracket_and_weight_zero_is_the_nearest_level(lam, l1, l2, v1, v2, w):
    """For any run and two levels, lo ≤ V̂_post ≤ hi and the nearest level's V is one end of the bracket. Levels at
    least 0.1 apart in ln λ: the slope b ≤ ln(1e4)/0.1 and the reach ≤ ln(1e3) keep e^{b·reach} finite (levels
    closer still with V 24× apart, e.g. λ 3.109 and 3.125, overflow math.exp: no grid has such levels)."""
    d1, d2 = abs(math.log(lam / l1)), abs(math.log(lam / l2))
    if abs(math.log(l1 / l2)) < 0.1 or min(d1, d2, abs(d1 - d2)) < 1e-3:  # (nearly) one level, on a level, a tie
        return
    value, lo, hi, _ = trend_estimate(lam, [l1, l2], [v1, v2], w)
    nearest = v1 if d1 < d2 else v2
    assert lo * (1 - 1e-12) <= value <= hi * (1 + 1e-12) and nearest in (lo, hi)
    assert trend_estimate(lam, [l1, l2], [v1, v2], 0.0)[0] == nearest


def test_lambdas_within_one_in_a_million_are_one_level_for_the_trend_as_for_the_pilots():
    # 1.0 and 1.0000005 are one level (median 110), so the trend runs through (1, 110) and (4, 50):
    # b = ln(50/110)/ln 4, V̂ = 110·0.5^b at weight 1 = 163.2; counted apart, the slope is flat and V̂ = 110.
    lams, values = [1.0, 1.0000005, 4.0], [100.0, 120.0, 50.0]
    assert list(nearest_levels(0.5, lams)) == [1.0000005, 4.0]
    value, lo, hi, used = trend_estimate(0.5, lams, values, 1.0)
    b = math.log(50 / 110) / math.log(4 / 1.0000005)
    assert value == pytest.approx(110 * (0.5 / 1.0000005) ** b, rel=1e-12)
    assert value == pytest.approx(163.2, abs=0.05)
    assert (lo, hi) == (110.0, pytest.approx(value, rel=1e-12)) and list(used) == [True, True, True]


def test_a_secant_beyond_the_float_range_gives_the_nearest_level_alone_whatever_the_weight():
    # two levels 0.4 % apart with V 9 and 1: b ≈ −535, so 0.5 lies e^717 above V_1 on the secant (overflow)
    for weight in (0.0, 0.5, 1.0):
        value, lo, hi, used = trend_estimate(0.5, [1.8984375, 1.90625], [9.0, 1.0], weight)
        assert (value, lo, hi, list(used)) == (9.0, 9.0, 9.0, [True, False])
    # just inside the range the secant is kept: a rise of 700 in log units, weight 0 gives V_1 with the range
    b = 700 / math.log(0.5 / 2.0)
    v2 = 9.0 * (4.0 / 2.0) ** b
    value, lo, hi, _ = trend_estimate(0.5, [2.0, 4.0], [9.0, v2], 0.0)
    assert (value, lo) == (9.0, 9.0) and hi == pytest.approx(9.0 * math.exp(700), rel=1e-9)
