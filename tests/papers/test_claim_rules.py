"""The claims' rules (nht_jax/papers/claims.py) at their boundaries: every builder accepts its bounds and refuses
the nearest numbers past them, tuples are judged element by element, and the rules written inline in the claims
table say what their text says. Known answers worked out by hand; nothing trains."""

import math

import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.papers import claims as claims_lib
from nht_jax.papers import measures as m

from .conftest import write_table as write

CLAIMS = {c.id: c for c in claims_lib.CLAIMS}


def accepts(rule, *values):
    return [rule.accepts(v) for v in values]


def test_numbers_print_with_separators_from_a_thousand_and_four_digits_below():
    assert [claims_lib.num(x) for x in (1000, 999.5, 12_345.6, -2500, 0.123456, 7.5)] == [
        "1,000",
        "999.5",
        "12,346",
        "-2,500",
        "0.1235",
        "7.5",
    ]


def test_within_includes_both_ends_and_judges_every_element():
    """[2, 5]: 2 and 5 are in, 1.999 and 5.001 out; (3, 6) is out because of its second element."""
    rule = claims_lib.within(2, 5)
    assert rule.text == "in [2, 5]"
    assert accepts(rule, 2, 5, 3.5, (2, 5), [4.0]) == [True] * 5
    assert accepts(rule, 1.999, 5.001, (3, 6), (6, 3)) == [False] * 4


def test_around_is_a_relative_band_on_both_sides():
    """±25 % of 100: [75, 125], ends included."""
    rule = claims_lib.around(100, 0.25)
    assert rule.text == "±25% of 100: [75, 125]"
    assert accepts(rule, 75, 125, 100) == [True] * 3
    assert accepts(rule, 74.99, 125.01) == [False, False]


def test_at_least_and_at_most_include_their_bound_for_every_element():
    low, high = claims_lib.at_least(3), claims_lib.at_most(3)
    assert (low.text, high.text) == ("≥ 3", "≤ 3")
    assert accepts(low, 3, (3, 4), 2.999, (4, 2.999)) == [True, True, False, False]
    assert accepts(high, 3, (3, 2), 3.001, (2, 3.001)) == [True, True, False, False]


def test_equals_and_verdict_is_compare_exactly():
    assert accepts(claims_lib.equals(2), 2, 3, 2.0001) == [True, False, False]
    assert claims_lib.equals(2).text == "= 2"
    assert accepts(claims_lib.verdict_is("✓"), "✓", "✗", "n.a.") == [True, False, False]
    assert claims_lib.verdict_is("✓").text == "verdict ✓"


def test_rising_fits_need_a_positive_slope_and_the_r2_in_every_fit():
    """Slope 0 is not rising; R² exactly at the minimum is enough; one bad fit of two fails the claim."""
    rule = claims_lib.rising_fits(0.9)
    assert rule.text == "every fit: slope > 0 and R² ≥ 0.9"
    assert accepts(rule, ((0.1, 0.9),), ((2.0, 0.95), (0.5, 0.91))) == [True, True]
    assert accepts(rule, ((0.0, 0.95),), ((1.0, 0.8999),), ((1.0, 0.95), (-1.0, 0.95))) == [False] * 3


def test_all_hold_ratio_and_slide_rules_at_their_boundaries():
    assert accepts(claims_lib.all_hold(), (3, 3), (2, 3)) == [True, False]
    assert claims_lib.all_hold().text == "all hold"
    ratio = claims_lib.ratio_at_least(3)
    assert ratio.text == "first range / second ≥ 3"
    assert accepts(ratio, (6, 2), (5.99, 2), (2, 6)) == [True, False, False]
    slide = claims_lib.slides(1 / 3)
    assert slide.text == "falls with τ at every norm, τ range ≥ 0.33 × norm range"
    # (falling, R_τ, R_norm): R_τ = 1 = ⅓ · 3 is enough; not falling, or R_τ 0.99, is not.
    assert accepts(slide, (True, 1.0, 3.0), (False, 10.0, 1.0), (True, 0.99, 3.0)) == [True, False, False]


def test_each_around_needs_one_value_per_target_each_in_its_band():
    """Targets (100, 200) at ±25 %: (125, 150) and (75, 250) in; 125.1 out; a missing or extra value fails."""
    rule = claims_lib.each_around((100, 200), 0.25)
    assert rule.text == "each ±25% of 100 / 200"
    assert accepts(rule, (125, 150), (75, 250)) == [True, True]
    assert accepts(rule, (125.1, 200), (100, 250.1), (100,), (100, 200, 300)) == [False] * 4


def test_the_inline_rules_of_the_claims_table_at_their_boundaries():
    """S.order: S_modular − S_CIFAR > 0 (0 is not an order). noise.arrhenius: slope > 0, R² ≥ 0.9, range > ×1.5
    (each at its bound). companion T_grok at λ = 0.5: 3,150 ± 2 × 320 = [2,510, 3,790]. The cell factor ×1.5
    either way, the shared R² 0.996 ± 0.005."""
    assert accepts(CLAIMS["S.order"].rule, 0.01, 0.0, -0.1) == [True, False, False]
    arrhenius = CLAIMS["noise.arrhenius"].rule
    assert arrhenius.accepts((0.001, 0.9, 1.51))
    assert accepts(arrhenius, (0.0, 0.95, 2.0), (0.1, 0.899, 2.0), (0.1, 0.95, 1.5)) == [False] * 3
    t_grok = CLAIMS["companion.λ=0.5.T_grok"].rule
    assert accepts(t_grok, 2510, 3790, 2509, 3791) == [True, True, False, False]
    assert t_grok.text == "mean ± 2 sd: [2,510, 3,790]"
    assert accepts(CLAIMS["cells.free"].rule, 1 / 1.5, 1.5, 0.66, 1.51) == [True, True, False, False]
    assert accepts(CLAIMS["data.shared_r2"].rule, 0.991, 1.001, 0.9909, 1.0011) == [True, True, False, False]
    assert accepts(CLAIMS["companion.λ=1.grok_rate"].rule, 1.0, 0.9) == [True, False]
    assert accepts(CLAIMS["companion.λ=1.V_mem"].rule, 2648 * 0.75, 2648 * 1.25, 2648 * 1.26) == [True, True, False]


def test_the_companion_tables_exponent_is_least_squares_over_the_lambdas_where_every_run_groks():
    """λ 0.1, 0.3, 0.5, 1 grok in 10/10 seeds (λ 2 in 3/10 is left out): ν = −slope of log T on log λ, here by the
    normal equations written out."""
    nu, lams = claims_lib.companion_table_exponent()
    assert lams == (0.1, 0.3, 0.5, 1.0)
    x = [math.log(lam) for lam in lams]
    y = [math.log(t) for t in (12_700, 4_900, 3_150, 2_100)]
    mx, my = sum(x) / 4, sum(y) / 4
    slope = sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)
    assert nu == pytest.approx(-slope, rel=1e-12) and 0.7 < nu < 0.8


def test_a_lambda_where_every_seed_groks_at_the_same_step_still_enters_the_exponent(monkeypatch):
    """A table where λ 1 groks 10/10 with sd 0 (every seed at 1,000) and λ 4 10/10 at 250 ± 30: both enter, ν =
    log(1000 / 250) / log 4 = 1; λ 2 (5/10) and λ 8 (no T_grok) do not."""
    monkeypatch.setattr(
        claims_lib,
        "COMPANION_SWEEP",
        {
            1.0: (10, 10, 1000, 0, 1, 1),
            2.0: (5, 10, 600, 50, 1, 1),
            4.0: (10, 10, 250, 30, 1, 1),
            8.0: (0, 10, None, None, 1, 1),
        },
    )
    nu, lams = claims_lib.companion_table_exponent()
    assert lams == (1.0, 4.0) and nu == pytest.approx(1.0, rel=1e-12)


def measured(*folders):
    return m.Measurement(1, "one")


def test_a_malformed_claims_table_names_the_claim_and_what_is_wrong():
    good = claims_lib.Claim("a", "s", "t", "p", ("x",), measured, claims_lib.equals(1))
    claims_lib.check_table((good,), {"x": None})
    with pytest.raises(ConfigError, match="claim ids used twice: a$"):
        claims_lib.check_table((good, good))
    with pytest.raises(ConfigError, match="claim b names parts but has no measure or rule"):
        claims_lib.check_table((claims_lib.Claim("b", "s", "t", "p", ("x",), measured),))
    with pytest.raises(ConfigError, match="claim c is not checked here and names no command"):
        claims_lib.check_table((claims_lib.Claim("c", "s", "t", "p"),))
    with pytest.raises(ConfigError, match="claim a names unknown part\\(s\\) x; known: y, z"):
        claims_lib.check_table((good,), {"y": None, "z": None})
    claims_lib.check_table((claims_lib.Claim("d", "s", "t", "p", elsewhere="`nht run`"),))


def test_each_treats_a_tuple_or_list_as_elements_and_anything_else_as_one():
    assert claims_lib.each((1, 2)) == (1, 2) and claims_lib.each([1, 2]) == (1, 2)
    assert claims_lib.each(3.0) == (3.0,) and claims_lib.each(np.float64(2)) == (np.float64(2),)


# ----------------------------------------------------------------------------- the builders, called after import
# CLAIMS is built at import, before a test can switch anything; these call the builders themselves.


def fields(claim):
    return (claim.id, claim.source, claim.text, claim.paper, claim.parts, claim.rule.text, claim.elsewhere)


def test_prediction_claims_are_one_per_prediction_each_reading_its_own_row_against_the_papers_verdict(tmp_path):
    """Verdicts ✓ for P1–P5 and ✗ for P6: six claims "dom.P1" … "dom.P6" of part "part", each measuring its own row
    of predictions.csv (numbers 0.1 … 0.6, so a claim reading another row shows another number) and accepting only
    the paper's symbol."""
    verdicts = {**dict.fromkeys(("P1", "P2", "P3", "P4", "P5"), "✓"), "P6": "✗"}
    built = claims_lib.prediction_claims("dom", "part", verdicts, "src", "txt")
    assert [fields(c) for c in built] == [
        (f"dom.{pid}", "src", f"txt: {pid} {name}", verdicts[pid], ("part",), f"verdict {verdicts[pid]}", "")
        for pid, name in claims_lib.PREDICTION_NAMES.items()
    ]
    assert built[0].text == "txt: P1 norm ordering V_sc > V_st" and built[5].text == "txt: P6 delay scaling T ∝ 1/λ"
    folder = write(
        tmp_path,
        "predictions.csv",
        [{"id": f"P{i}", "verdict": "✗" if i in (2, 6) else "✓", "number": f"0.{i}"} for i in range(1, 7)],
    )
    measured = [c.measure(folder) for c in built]
    assert [x.text for x in measured] == ["✓ (0.1)", "✗ (0.2)", "✓ (0.3)", "✓ (0.4)", "✓ (0.5)", "✗ (0.6)"]
    assert [c.rule.accepts(x.value) for c, x in zip(built, measured)] == [True, False, True, True, True, True]


def companion_folder(tmp_path, steps):
    """λ 0.5: T_transition 2,000, 3,000 and none; ‖θ‖² at T_fit 5,000, 6,000, 8,000 (mean 6,333.3); at
    T_transition 500, 700 and none (mean 600). λ 1: three runs at 1,000 with norms 2,000 and 300. λ 2, one run that
    never transitions, makes every "all runs" number differ from λ 0.5's."""
    rows = [
        {"weight_decay": lam, "seed": i, "T_transition": t, "norm_at_fit": f, "norm_at_transition": v}
        for lam, ts, fs, vs in (
            (0.5, (2000, 3000, math.nan), (5000, 6000, 8000), (500, 700, math.nan)),
            (1.0, (1000,) * 3, (2000,) * 3, (300,) * 3),
            (2.0, (math.nan,), (100,), (math.nan,)),
        )
        for i, (t, f, v) in enumerate(zip(ts, fs, vs))
    ]
    return write(tmp_path / f"steps{steps}", "summary.csv", rows, steps=steps)


def test_companion_claims_at_lambda_half_carry_the_tables_row_and_measure_at_that_lambda(tmp_path):
    """λ = 0.5: 10/10 grok, T_grok 3,150 ± 320 → [3,150 − 640, 3,150 + 640] = [2,510, 3,790]; V_mem 6,225 ± 25 % =
    [4,668.75, 7,781.25]; V_post 568 ± 50 % = [284, 852]. Ours: grok rate 2/3; T_grok is not measured on a budget
    of 3,000 < 3,790 (one run has not transitioned), and is (2,000 + 3,000) / 2 = 2,500 on a budget of 4,000;
    V_mem 19,000 / 3; V_post 600."""
    grok, t_grok, v_mem, v_post = claims_lib.companion_claims(0.5)
    source, part = claims_lib.COMPANION_SOURCE, ("companion-exact-cpu",)
    assert [fields(c) for c in (grok, t_grok, v_mem, v_post)] == [
        ("companion.λ=0.5.grok_rate", source, "λ = 0.5: share of seeds that grok", "10/10", part, "= 100%", ""),
        (
            "companion.λ=0.5.T_grok",
            source,
            "λ = 0.5: T_grok (test accuracy ≥ 99 %)",
            "3,150 ± 320",
            part,
            "mean ± 2 sd: [2,510, 3,790]",
            "",
        ),
        (
            "companion.λ=0.5.V_mem",
            source,
            "λ = 0.5: V_mem = ‖θ‖² at T_mem (ours: at T_fit)",
            "6,225",
            part,
            "±25% of 6,225: [4,669, 7,781]",
            "",
        ),
        (
            "companion.λ=0.5.V_post",
            source,
            "λ = 0.5: V_post (the paper does not say when it is read; ours: ‖θ‖² at T_transition)",
            "568",
            part,
            "±50% of 568: [284, 852]",
            "",
        ),
    ]
    assert accepts(grok.rule, 1.0, 0.9, 10.0) == [True, False, False]
    assert accepts(t_grok.rule, 2510, 3790, 2509.9, 3790.1) == [True, True, False, False]
    assert accepts(v_mem.rule, 4668.75, 7781.25, 4668.7, 7781.3) == [True, True, False, False]
    assert accepts(v_post.rule, 284, 852, 283.9, 852.1) == [True, True, False, False]
    short, long = companion_folder(tmp_path, 3000), companion_folder(tmp_path, 4000)
    assert grok.measure(short) == m.Measurement(2 / 3, "2/3 within 3,000 steps")
    with pytest.raises(m.NotMeasured, match=r"2/3 runs transition within 3,000 steps.*\(up to 3,790\)$"):
        t_grok.measure(short)
    assert t_grok.measure(long) == m.Measurement(2500.0, "2,500 (2,000, 3,000), 2/3 runs")
    assert v_mem.measure(short) == m.Measurement(19_000 / 3, "6,333 (mean of 3 runs)")
    assert v_post.measure(short) == m.Measurement(600.0, "600 (mean of 2 runs)")


def test_companion_claims_name_the_step_each_norm_is_read_at_when_no_run_has_it(tmp_path):
    """λ 2 has one run, without a transition: its V_post is not measured "no run has a T_transition"; a λ whose runs
    lack T_fit's norm says "a T_fit". λ = 2 in the table: 3/10 grok, T_grok 43,667 ± 11,108 → [21,451, 65,883]."""
    grok, t_grok, v_mem, v_post = claims_lib.companion_claims(2.0)
    assert (grok.paper, grok.rule.text, t_grok.rule.text) == ("3/10", "= 30%", "mean ± 2 sd: [21,451, 65,883]")
    assert accepts(grok.rule, 0.3, 0.35, 30.0) == [True, False, False]
    folder = companion_folder(tmp_path, 3000)
    with pytest.raises(m.NotMeasured, match="^no run has a T_transition$"):
        v_post.measure(folder)
    assert v_mem.measure(folder) == m.Measurement(100.0, "100 (mean of 1 runs)")
    no_fit = write(tmp_path / "no_fit", "summary.csv", [{"weight_decay": 2.0, "norm_at_fit": math.nan}], steps=10)
    with pytest.raises(m.NotMeasured, match="^no run has a T_fit$"):
        v_mem.measure(no_fit)
