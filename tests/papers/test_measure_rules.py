"""Our numbers for the claims (nht_jax/papers/measures.py, the cells' estimators of cells.py) on hand-made tables
whose right answer is worked out by hand: asymmetric values (mean ≠ median, arithmetic ≠ geometric mean), each
boundary on both sides, each filter with rows it must leave out. Nothing trains."""

import math

import numpy as np
import pytest

from nht_jax.papers import cells
from nht_jax.papers import measures as m

from .conftest import write_table as write

NAN = math.nan


# ----------------------------------------------------------------------------- predictions.csv


def predictions(tmp_path, verdicts, numbers=None):
    numbers = numbers or {}
    return write(
        tmp_path,
        "predictions.csv",
        [{"id": f"P{i + 1}", "verdict": v, "number": numbers.get(i + 1, "x")} for i, v in enumerate(verdicts)],
    )


def test_a_count_of_holding_predictions_is_not_measured_while_the_na_ones_could_still_reach_the_paper(tmp_path):
    """4 ✓, 1 ✗, P6 n.a.: the count is 4 or 5, so against a paper's 4 or 5 it is not measured; against 3 or 6 it is
    4 either way (the n.a. cannot change the verdict)."""
    folder = predictions(tmp_path, ["✓", "✓", "✗", "✓", "✓", "n.a."])
    for paper in (4, 5):
        with pytest.raises(m.NotMeasured, match="4/6 hold and P6 n.a.: the count could still be"):
            m.predictions_held(paper)(folder)
    for paper in (3, 6):
        assert m.predictions_held(paper)(folder) == m.Measurement(4, "4/6 (P3 ✗, P6 n.a.)")
    assert m.predictions_held(6)(predictions(tmp_path / "all", ["✓"] * 6)) == m.Measurement(6, "6/6")


def test_a_prediction_reads_its_own_row_and_na_is_not_measured(tmp_path):
    folder = predictions(
        tmp_path, ["✓", "n.a.", "✗", "✓", "✓", "✓"], {2: "one regime", 3: "ν = 2.1", 5: "S = 0.299 [0.187, 0.35]"}
    )
    assert m.prediction("P3")(folder) == m.Measurement("✗", "✗ (ν = 2.1)")
    with pytest.raises(m.NotMeasured, match="n.a.: one regime"):
        m.prediction("P2")(folder)
    with pytest.raises(m.NotMeasured, match="P7 not in"):
        m.prediction("P7")(folder)
    assert m.separation_score()(folder) == m.Measurement(0.299, "S = 0.299")


def test_the_number_after_a_label_reads_signs_decimals_and_exponents():
    assert m.number_after("S", "S = 0.299 [0.187, 0.35] over 3") == 0.299
    assert m.number_after("S", "M = 2, S=-1.5e-3") == -0.0015
    assert m.number_after("ν", "ν = 4. (R² 1)") == 4.0
    with pytest.raises(m.NotMeasured, match="no 'S = …'"):
        m.number_after("S", "M = 2")


def test_the_separation_difference_is_the_first_parts_s_minus_the_seconds(tmp_path):
    first = predictions(tmp_path / "a", ["✓"] * 6, {5: "S = 0.9"})
    second = predictions(tmp_path / "b", ["✓"] * 6, {5: "S = 0.625"})
    assert m.separation_difference()(first, second).value == pytest.approx(0.275, abs=1e-12)
    assert m.separation_difference()(first, second).text == "0.9 − 0.625 = 0.275"
    assert m.separation_difference()(second, first).value == pytest.approx(-0.275, abs=1e-12)


# ----------------------------------------------------------------------------- delay_fits.csv, delay_predictor.csv


def test_fits_are_read_of_their_kind_with_status_ok_only(tmp_path):
    folder = write(
        tmp_path,
        "delay_fits.csv",
        [
            {"fit": "power_law_lambda", "status": "ok", "nu": 1.2, "slope": -1.2, "r2": 0.9, "n_runs": 5, "slice": "a"},
            {
                "fit": "power_law_lambda",
                "status": "not enough data",
                "nu": NAN,
                "slope": NAN,
                "r2": NAN,
                "n_runs": 2,
                "slice": "b",
            },
            {"fit": "inverse_eta", "status": "ok", "nu": NAN, "slope": 3.0, "r2": 0.8, "n_runs": 4, "slice": "c"},
            {
                "fit": "power_law_lambda",
                "status": "ok",
                "nu": 0.7,
                "slope": -0.7,
                "r2": 0.99,
                "n_runs": 6,
                "slice": "d",
            },
        ],
    )
    assert m.power_law_exponents()(folder) == m.Measurement(
        (1.2, 0.7), "ν = 1.2 (R² 0.9, 5 runs, a); ν = 0.7 (R² 0.99, 6 runs, d)"
    )
    assert m.linear_fits("inverse_eta")(folder) == m.Measurement(((3.0, 0.8),), "slope 3, R² 0.8 (4 runs, c)")
    assert (
        m.linear_fits("power_law_lambda")(folder).text
        == "slope -1.2, R² 0.9 (5 runs, a); slope -0.7, R² 0.99 (6 runs, d)"
    )
    with pytest.raises(m.NotMeasured, match="collapse: no fit of this kind"):
        m.linear_fits("collapse")(folder)
    only_bad = write(
        tmp_path / "bad", "delay_fits.csv", [{"fit": "collapse", "status": "not enough data", "slope": NAN, "r2": NAN}]
    )
    with pytest.raises(m.NotMeasured, match="collapse: not enough data"):
        m.linear_fits("collapse")(only_bad)


def test_the_eta_exponent_and_the_nu_intervals_are_read_of_their_own_kind(tmp_path):
    from nht_jax.papers import claims

    fit = {"status": "ok", "r2": 0.9, "n_runs": 5}
    folder = write(
        tmp_path,
        "delay_fits.csv",
        [
            {**fit, "fit": "power_law_lambda", "nu": 1.5, "nu_lo": 1.3, "nu_hi": 1.8, "slice": "η=0.01"},
            {**fit, "fit": "power_law_eta", "nu": 0.9, "nu_lo": 0.7, "nu_hi": 1.1, "slice": "λ=0.1"},
            {**fit, "fit": "power_law_eta", "nu": 0.6, "nu_lo": 0.5, "nu_hi": 0.8, "slice": "λ=1"},
        ],
    )
    assert m.power_law_exponents("power_law_eta")(folder).value == (0.9, 0.6)
    assert m.power_law_intervals()(folder).value == ((1.3, 1.8),)
    assert m.power_law_intervals("power_law_eta")(folder) == m.Measurement(
        ((0.7, 1.1), (0.5, 0.8)), "ν = 0.9 [0.7, 1.1] (5 runs, λ=0.1); ν = 0.6 [0.5, 0.8] (5 runs, λ=1)"
    )
    no_interval = write(
        tmp_path / "n",
        "delay_fits.csv",
        [{**fit, "fit": "power_law_lambda", "nu": 1.5, "nu_lo": NAN, "nu_hi": NAN, "slice": "a"}],
    )
    with pytest.raises(m.NotMeasured, match="without an interval"):
        m.power_law_intervals()(no_interval)
    by_id = {c.id: c for c in claims.CLAIMS}
    eta, p6 = by_id["eta.nu"].rule.accepts, by_id["cifar.P6"].rule.accepts
    assert eta((0.8, 1.2)) and not eta((0.9, 0.6)) and not eta((1.26,))
    # P6's ✗ is matched only by an interval wholly outside [0.75, 1.25], on either side
    assert p6(((1.3, 1.8),)) and p6(((0.2, 0.74),)) and p6(((1.3, 1.8), (0.1, 0.5)))
    assert not p6(((1.2, 1.8),)) and not p6(((0.5, 0.8),)) and not p6(((1.3, 1.8), (0.9, 1.0))) and not p6(())


def test_the_predictors_mape_is_the_mean_over_the_pooled_regime_with_a_finite_error(tmp_path):
    """Intermediate runs with ape 0.1, 0.2, 0.9 and one without: MAPE 0.4 (the mean, not the median 0.2); a
    weak run's 5.0 is not pooled."""
    folder = write(
        tmp_path,
        "delay_predictor.csv",
        [
            {"regime": "intermediate", "ape": 0.1, "reason": ""},
            {"regime": "intermediate", "ape": 0.9, "reason": ""},
            {"regime": "weak", "ape": 5.0, "reason": ""},
            {"regime": "intermediate", "ape": NAN, "reason": "no V_post"},
            {"regime": "intermediate", "ape": 0.2, "reason": ""},
        ],
    )
    assert m.predictor_error()(folder) == m.Measurement(pytest.approx(0.4), "MAPE 40% over 3 runs")
    none = write(
        tmp_path / "none", "delay_predictor.csv", [{"regime": "intermediate", "ape": NAN, "reason": "no V_post"}]
    )
    with pytest.raises(m.NotMeasured, match="no run with a predicted delay: no V_post"):
        m.predictor_error()(none)


# ----------------------------------------------------------------------------- summary.csv: shares and one λ


def test_norm_shape_shares_count_each_boundary_on_its_side(tmp_path):
    """Budget 1,000. Weak runs peaking at 1,000 (the last log) and 950: 1/2 still rising. Intermediate runs ending
    at 90 and 90.1 of a peak of 100 (fraction 0.1): 1/2 decayed. The fitting runs end at 90 over 50 at T_fit and at
    90.1 over 90.1: 1/2 grew (strictly more is growth); the weak runs have no T_fit and are not counted."""
    rows = [
        {"regime": "weak", "norm_peak_step": 1000, "norm_peak": 10, "norm_final": 10, "T_fit": NAN, "norm_at_fit": NAN},
        {"regime": "weak", "norm_peak_step": 950, "norm_peak": 10, "norm_final": 9.5, "T_fit": NAN, "norm_at_fit": NAN},
        {
            "regime": "intermediate",
            "norm_peak_step": 10,
            "norm_peak": 100,
            "norm_final": 90,
            "T_fit": 5,
            "norm_at_fit": 50,
        },
        {
            "regime": "intermediate",
            "norm_peak_step": 10,
            "norm_peak": 100,
            "norm_final": 90.1,
            "T_fit": 5,
            "norm_at_fit": 90.1,
        },
    ]
    folder = write(tmp_path, "summary.csv", rows, steps=1000)
    assert m.PEAK_DECAY_FRACTION == 0.1
    assert m.weak_norm_still_rising()(folder) == m.Measurement(0.5, "1/2 weak runs with ‖θ‖² largest at the last log")
    assert m.intermediate_norm_decays()(folder) == m.Measurement(
        0.5, "1/2 intermediate runs with final ‖θ‖² ≤ 0.9 × peak"
    )
    assert m.norm_grows_after_fit()(folder) == m.Measurement(0.5, "1/2 fitting runs with final ‖θ‖² > ‖θ‖² at T_fit")
    with pytest.raises(m.NotMeasured, match="no run to judge"):
        m.weak_norm_still_rising()(write(tmp_path / "no_weak", "summary.csv", rows[2:], steps=1000))


def lambda_rows(lam, times, **columns):
    return [
        {"weight_decay": lam, "T_transition": t, **{k: v[i] for k, v in columns.items()}} for i, t in enumerate(times)
    ]


def test_one_lambdas_grok_rate_and_mean_time_are_over_its_runs_only(tmp_path):
    """λ 0.5: T_transition 1,000, 4,000 and none (grok rate 2/3, mean 2,500 of the two); λ 1 (100, 100) is
    another λ. V at T_fit 100, 900, 200 and one missing: mean 400 (median 200)."""
    rows = lambda_rows(0.5, [1000, 4000, NAN], norm_at_fit=[100, 900, 200]) + lambda_rows(
        1.0, [100, 100], norm_at_fit=[NAN, NAN]
    )
    folder = write(tmp_path, "summary.csv", rows, steps=5000)
    assert m.grok_rate(0.5)(folder) == m.Measurement(2 / 3, "2/3 within 5,000 steps")
    assert m.grok_rate(1.0)(folder).value == 1.0
    # the budget 5,000 reaches the paper's upper end 5,000: the run without a transition is a real "no"
    assert m.transition_time(0.5, 5000)(folder) == m.Measurement(2500.0, "2,500 (1,000, 4,000), 2/3 runs")
    with pytest.raises(m.NotMeasured, match="a budget shorter than the paper's range \\(up to 5,001\\)"):
        m.transition_time(0.5, 5001)(folder)
    assert m.transition_time(1.0, 1e9)(folder).value == 100.0  # every run transitioned: the budget is no matter
    one = write(tmp_path / "one", "summary.csv", lambda_rows(0.5, [1000, NAN]), steps=5000)
    assert m.transition_time(0.5, 5000)(one) == m.Measurement(1000.0, "1,000, 1/2 runs")  # one time: no list
    assert m.mean_column(0.5, "norm_at_fit", "a T_fit")(folder) == m.Measurement(400.0, "400 (mean of 3 runs)")
    assert m.mean_column(None, "norm_at_fit", "a T_fit")(folder).value == 400.0
    with pytest.raises(m.NotMeasured, match="no run has a T_fit"):
        m.mean_column(1.0, "norm_at_fit", "a T_fit")(folder)
    with pytest.raises(m.NotMeasured, match="λ = 2 was not run"):
        m.grok_rate(2.0)(folder)
    never = write(tmp_path / "never", "summary.csv", lambda_rows(0.5, [NAN, NAN]), steps=8000)
    assert m.transition_time(0.5, 8000)(never) == m.Measurement(math.inf, "no transition within 8,000 steps")


def test_a_lambda_matches_to_six_significant_digits(tmp_path):
    """LAMBDA_RTOL 1e-6: 0.50000025 is λ 0.5 (2.5e-7 ≤ 5e-7 + 1e-8), 0.500001 is not (1e-6)."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "summary.csv").write_text("weight_decay,T_transition\n0.50000025,10\n0.500001,20\n")
    assert [r["T_transition"] for r in m.at_lambda(tmp_path, 0.5)] == [10]


def test_the_bounds_count_names_every_failing_claim(tmp_path):
    folder = write(
        tmp_path,
        "bounds.csv",
        [
            {"claim": "one-step", "ok": True},
            {"claim": "window", "ok": False},
            {"claim": "floor", "ok": True},
            {"claim": "scale", "ok": False},
        ],
    )
    assert m.bounds_held()(folder) == m.Measurement((2, 4), "2/4 hold; failing: window; scale")
    assert m.regime_count("weak")(
        write(tmp_path / "r", "summary.csv", [{"regime": r} for r in ("weak", "strong", "weak", "intermediate")])
    ) == m.Measurement(2, "2 of 4 runs weak (intermediate 1, strong 1, weak 2)")
    assert m.regime_count("structured")(tmp_path / "r") == m.Measurement(
        0, "0 of 4 runs structured (intermediate 1, strong 1, weak 2)"
    )
    every = write(tmp_path / "all", "bounds.csv", [{"claim": "one-step", "ok": True}, {"claim": "floor", "ok": True}])
    assert m.bounds_held()(every) == m.Measurement((2, 2), "2/2 hold")


# ----------------------------------------------------------------------------- cells of a grid


def test_a_grid_cells_delay_is_the_geometric_mean_over_its_seeds():
    """Cell (1, a): 100 and 400 → 200 (arithmetic 250); from T_fit = 50: 50 and 350 → √17,500; a cell with a
    run that never transitions, or with a delay ≤ 0, is unknown."""
    table = [
        {"r": 1, "e": "a", "T_fit": 50.0, "T_transition": 100.0},
        {"r": 1, "e": "a", "T_fit": 50.0, "T_transition": 400.0},
        {"r": 2, "e": "a", "T_fit": 50.0, "T_transition": NAN},
        {"r": 2, "e": "a", "T_fit": 50.0, "T_transition": 300.0},
        {"r": 3, "e": "a", "T_fit": 300.0, "T_transition": 300.0},
        {"r": 4, "e": "b", "T_fit": 299.5, "T_transition": 300.0},
    ]
    assert m.cell_delays(table, ("r", "e"), "start") == {
        (1, "a"): pytest.approx(200.0),
        (3, "a"): pytest.approx(300.0),
        (4, "b"): pytest.approx(300.0),
    }
    assert m.cell_delays(table, ("r", "e"), "fit") == {
        (1, "a"): pytest.approx(math.sqrt(50 * 350)),
        (4, "b"): pytest.approx(0.5),
    }


def test_spans_are_max_over_min_along_one_axis_of_the_complete_slices():
    """Along axis 0 at b = x: 1,000 / 200 = 5; at b = y the cell (2, y) is unknown, so that slice (800 / 400 = 2)
    is left out when the axis' values are {1, 2, 3}; along axis 1 at a = 1: 400 / 200 = 2, at a = 3: 1,000 / 800;
    a slice of one value has no range."""
    grid = {(1, "x"): 200.0, (2, "x"): 600.0, (3, "x"): 1000.0, (1, "y"): 400.0, (3, "y"): 800.0}
    assert m.spans(grid, 0, {1, 2, 3}) == [5.0]
    assert m.spans(grid, 0) == [5.0]
    assert m.spans(grid, 0, {1, 2, 3, 4}) == []  # ρ 4 is in the grid but no cell of it is known
    assert m.spans(grid, 1) == [2.0, 1.25]
    assert m.spans({(1, "x"): 5.0}, 0) == []


def test_the_w_c_of_the_free_runs_is_the_mean_norm_of_those_that_grok_over_theirs_at_the_same_eta(tmp_path):
    """‖θ‖ 50, 60, 100 at T_grok at η = 8e-3 (mean 70, median 60), a run that never groks (norm 1) and one at
    η = 1e-3 (norm 500, left out): 70 / 50.2074, their free runs' mean ‖θ‖ at T_grok at η = 8e-3 (not their wc,
    54.6, the η = 1e-3 cell's)."""
    rows = [
        {"T_transition": t, "norm_at_transition": n**2, "learning_rate": lr}
        for t, n, lr in (
            (500, 50, 8e-3),
            (700, 60, 8e-3),
            (900, 100, 8e-3),
            (NAN, 1, 8e-3),
            (600, 500, 1e-3),
            (610, 520, 1e-3),
            (620, 540, 1e-3),
        )
    ]
    folder = write(tmp_path, "summary.csv", rows)
    got = cells.critical_norm_vs_reference()(folder)
    assert got.value == pytest.approx(70 / 50.2074)
    cv = math.sqrt((20**2 + 10**2 + 30**2) / 3) / 70  # population std over the mean
    assert got.text == f"W_c = 70 (CV {cv:.2%}, 3 runs) against 50.21: {70 / 50.2074:.3g}×"
    assert cells.critical_norm_vs_reference(1e-3)(folder).value == pytest.approx(520 / 54.7741)
    with pytest.raises(m.NotMeasured, match="2 free run\\(s\\) at η = 0.008 grok"):
        cells.critical_norm_vs_reference()(write(tmp_path / "two", "summary.csv", rows[1:]))


def test_a_forks_step_is_its_integer_step_and_zero_otherwise(tmp_path):
    for name, text, step in (
        ("int", '[fork]\nfrom = "x"\nstep = 500\n', 500),
        ("fit", '[fork]\nfrom = "x"\nstep = "fit"\n', 0),
        ("none", 'name = "x"\n', 0),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.toml").write_text(text)
        assert cells.fork_step(tmp_path / name) == step
    with pytest.raises(m.NotMeasured, match="config.toml missing"):
        cells.fork_step(tmp_path)


# ----------------------------------------------------------------------------- the cells' fits


def test_the_rho_fit_recovers_a_planted_line_with_one_intercept_per_group():
    """log T = a_g + 7.5ρ exactly, a = 2 and 3 for two groups: α 7.5, R² 1 (of log T about its overall mean);
    ungrouped, the intercepts' gap becomes scatter. Constant log T: R² NaN."""
    rho = np.array([0.85, 1.0, 1.15, 0.85, 1.0, 1.15])
    groups = np.array([59, 59, 59, 41, 41, 41])
    y = np.where(groups == 59, 2.0, 3.0) + 7.5 * rho
    alpha, r2 = cells.fit_rho(rho, y, groups)
    assert alpha == pytest.approx(7.5, abs=1e-9) and r2 == pytest.approx(1.0, abs=1e-12)
    # one intercept: the slope is still 7.5 (balanced groups), R² = 1 − 6·0.25 / (6·0.25 + 7.5²·0.09)
    alpha, r2 = cells.fit_rho(rho, y)
    assert alpha == pytest.approx(7.5, abs=1e-9)
    assert r2 == pytest.approx(1 - 1.5 / (1.5 + 7.5**2 * 0.09), rel=1e-9)
    assert math.isnan(cells.fit_rho(rho[:3], np.ones(3))[1])
    # log T varying by less than 1 in all (total sum of squares 0.0467): still an R², 1 − 0.0017 / 0.0467
    alpha, r2 = cells.fit_rho(rho[:3], [0.0, 0.1, 0.3])
    assert alpha == pytest.approx(1.0, rel=1e-9) and r2 == pytest.approx(1 - (1 / 600) / (0.14 / 3), rel=1e-9)


def cell(rho, seeds, grokked):
    from nht_jax.papers.reference_cells import ReferenceCell

    return ReferenceCell(
        "clamp-law", "pscan", 59, "clamp", rho, 1e-3, 1.0, 1.0, 0, 54.6, seeds, grokked, 1.0, 1.0, "r", "c", "p"
    )


def test_a_modulus_is_usable_when_every_rho_groks_in_more_than_half_its_seeds():
    """9 of 16 is more than half; 8 of 16 is not; a missing ρ is not usable."""
    rhos = (0.85, 1.0)
    assert cells.usable([cell(0.85, 16, 9), cell(1.0, 16, 16)], rhos)
    assert not cells.usable([cell(0.85, 16, 8), cell(1.0, 16, 16)], rhos)
    assert not cells.usable([cell(0.85, 16, 16)], rhos)
    assert not cells.usable([cell(1.0, 16, 16)], rhos)  # ρ 0.85 missing (rounded whole, it would read as 1)
    # ρ matches to 4 decimals: 0.85004 in the table is the ρ 0.84996 asked for
    assert cells.usable([cell(0.85004, 16, 9), cell(1.0, 16, 16)], (0.84996, 1.0))


def batch_rows(delays):
    """{B: delays of its seeds}, rows written in the given (unsorted) order, T_fit 100."""
    return [
        {"batch_size": b, "seed": s, "T_fit": 100.0, "T_transition": 100.0 + d}
        for b, ds in delays.items()
        for s, d in enumerate(ds)
    ]


def test_the_batch_range_is_the_largest_batchs_median_over_the_smallests(tmp_path):
    """Rows listed B 512, 4704, 128: range = median at 4704 (3,000; mean 4,200) / median at 128 (1,000; mean
    1,800), whatever the order of the rows. The Arrhenius fit of log median delay on B: medians 1,000·e^(B/2000)
    give slope 1/2000, R² 1, range e^(4576/2000)."""
    folder = write(
        tmp_path,
        "summary.csv",
        batch_rows(
            {512: [500, 600, 700, 800, 900], 4704: [3000, 2900, 9000, 3100, 3000], 128: [1000, 900, 4000, 1100, 1000]}
        ),
    )
    assert cells.batch_range()(folder) == m.Measurement(
        pytest.approx(3.0), "3× (B 128: 1,000 (5/5); B 512: 700 (5/5); B 4704: 3,000 (5/5))"
    )
    exact = {b: [1000 * math.exp(b / 2000)] * 5 for b in (4704, 128, 2048, 512)}
    slope, r2, span = cells.arrhenius_fit()(write(tmp_path / "exp", "summary.csv", batch_rows(exact))).value
    assert slope == pytest.approx(1 / 2000, rel=1e-4) and r2 == pytest.approx(1.0, abs=1e-6)
    assert span == pytest.approx(math.exp(4576 / 2000), rel=1e-4)
    text = cells.arrhenius_fit()(tmp_path / "exp").text
    assert text.startswith(
        f"slope 0.0005 per row, R² 1, range {math.exp(4576 / 2000):.3g}× (B 128: 1,066 (5/5); B 512:"
    )


def test_a_batch_cell_needs_five_seeds_and_the_axis_two_sizes(tmp_path):
    five = {128: [1000] * 5, 512: [1000] * 5}
    assert cells.batch_range()(write(tmp_path / "ok", "summary.csv", batch_rows(five))).value == 1.0
    with pytest.raises(m.NotMeasured, match="< 5 seeds"):
        cells.batch_range()(write(tmp_path / "four", "summary.csv", batch_rows({128: [1000] * 5, 512: [1000] * 4})))
    with pytest.raises(m.NotMeasured, match="fewer than two batch sizes"):
        cells.batch_range()(write(tmp_path / "one", "summary.csv", batch_rows({128: [1000] * 5})))
    censored = {128: [NAN, NAN, NAN, 1000, 1000], 512: [1000] * 5}
    with pytest.raises(m.NotMeasured, match="smallest batch's median run does not transition"):
        cells.batch_range()(write(tmp_path / "censored", "summary.csv", batch_rows(censored)))


def test_the_temperature_slide_needs_a_strict_fall_and_its_ranges_are_geometric_means(tmp_path):
    """Delays at ρ 0.9 over τ 0.75, 1, 1.5: 800, 400, 400 (flat at the end: not falling); at ρ 1.1: 1,600, 900, 100.
    τ ranges per ρ: 2 and 16 → √32; ρ ranges per τ: 2, 2.25, 4 → ∛18."""
    delays = {0.9: (800, 400, 400), 1.1: (1600, 900, 100)}
    rows = [
        {
            "regime": "intermediate",
            "clamp_rho": rho,
            "temperature": tau,
            "seed": 0,
            "T_fit": 100.0,
            "T_transition": 100.0 + d,
        }
        for rho, ds in delays.items()
        for tau, d in zip((0.75, 1.0, 1.5), ds)
    ]
    got = m.temperature_slide()(write(tmp_path, "summary.csv", rows))
    falling, r_tau, r_norm = got.value
    assert not falling
    assert got.text == "does not fall as τ rises at every clamp_rho; τ range 5.66×, clamp_rho range 2.62× (6 cells)"
    assert r_tau == pytest.approx(math.sqrt(32), rel=1e-9) and r_norm == pytest.approx(18 ** (1 / 3), rel=1e-9)
    rows[2]["T_transition"] = 100.0 + 399
    assert m.temperature_slide()(write(tmp_path / "strict", "summary.csv", rows)).value[0]
    # a third ρ whose delays all fall too: each ρ's own τ row falls, though ρ 1's start (1,000) lies above ρ 0.9's end
    rows += [
        {**rows[0], "clamp_rho": 1.0, "temperature": tau, "T_transition": 100.0 + d}
        for tau, d in zip((0.75, 1.0, 1.5), (1000, 600, 200))
    ]
    three = m.temperature_slide()(write(tmp_path / "three", "summary.csv", rows))
    assert three.value[0] and three.text.startswith("falls as τ rises at every clamp_rho; τ range ")
    assert three.text.endswith(" (9 cells)")


def test_the_logit_scale_collapse_fits_only_runs_that_transition_after_their_fit(tmp_path, monkeypatch):
    """Three intermediate runs, one of them transitioning at its T_fit (no delay), and a weak one: 2 usable runs,
    fewer than the 3 a fit needs."""
    from types import SimpleNamespace

    from nht_jax.results import folder as results

    rows = [
        {"regime": r, "T_fit": 100.0, "T_transition": t}
        for r, t in (("intermediate", 300.0), ("intermediate", 100.0), ("intermediate", 500.0), ("weak", NAN))
    ]
    steps = np.arange(0, 1000, 50.0)
    monkeypatch.setattr(
        results,
        "load_results",
        lambda path: SimpleNamespace(steps=steps, metrics={"effective_logit_scale": np.ones((4, steps.size))}),
    )
    with pytest.raises(m.NotMeasured, match=r"2 of 4 runs transition after their fit \(intermediate 3, weak 1\)"):
        m.logit_scale_collapse()(write(tmp_path, "summary.csv", rows))


# ----------------------------------------------------------------------------- the interventions' measures


def test_the_w_c_spread_is_the_population_cv_of_the_transitioning_runs_norms(tmp_path):
    """‖θ‖ 3, 4, 8 at T_transition (intermediate and structured runs): mean 5, population std √(14/3) (the sample
    std would be √7); a weak and a strong run (‖θ‖ 100, 20) are not pooled, and an intermediate run without a
    norm counts only in the learning rates listed. Exactly two runs are enough; one is not."""
    rows = [
        {"regime": "intermediate", "norm_at_transition": 9.0, "learning_rate": 0.01},
        {"regime": "structured", "norm_at_transition": 16.0, "learning_rate": 0.001},
        {"regime": "weak", "norm_at_transition": 10000.0, "learning_rate": 0.5},
        {"regime": "intermediate", "norm_at_transition": 64.0, "learning_rate": 0.01},
        {"regime": "strong", "norm_at_transition": 400.0, "learning_rate": 0.2},
        {"regime": "intermediate", "norm_at_transition": NAN, "learning_rate": 0.1},
    ]
    cv = math.sqrt(14 / 3) / 5
    got = m.critical_norm_spread()(write(tmp_path, "summary.csv", rows))
    assert got.value == pytest.approx(cv, rel=1e-12)
    assert got.text == f"CV {cv:.2%} of W_c = 5 over 3 runs (η ∈ {{0.001, 0.01, 0.1}}, every seed)"
    two = m.critical_norm_spread()(write(tmp_path / "two", "summary.csv", rows[:2]))
    assert two.value == pytest.approx(0.5 / 3.5, rel=1e-12)
    with pytest.raises(m.NotMeasured, match="^1 run\\(s\\) transition: a spread needs two$"):
        m.critical_norm_spread()(write(tmp_path / "one", "summary.csv", rows[:1] + rows[2:3]))


def dose_fit(axis, slope, status="ok", context="all runs", n_runs=5, predicted=NAN, **columns):
    return {
        "context": context,
        "axis": axis,
        "parameter": "α",
        "status": status,
        "slope": slope,
        "slope_lo": slope - 1,
        "slope_hi": slope + 2,
        "r2": 0.5,
        "n_runs": n_runs,
        "predicted_slope": predicted,
        **columns,
    }


def test_a_dose_fits_interval_clusters_the_parts_seeds_or_else_its_runs(tmp_path):
    """A clamp_rho fit over 5 runs: with no summary.csv, or one seed, the bootstrap clusters the 5 runs (126 distinct
    resamples, shown); with 4 seeds it clusters those (35 distinct resamples, < 40: no interval); the other axes'
    rows and the fits that are not ok are not read."""
    rows = [
        dose_fit("temperature", 9.0),
        dose_fit("clamp_rho", 6.0, r2=0.98, context="η = 0.01"),
        dose_fit("clamp_rho", 8.0, status="not enough data"),
        dose_fit("clamp_rho", -2.5, r2=0.75, context="η = 0.02", n_runs=6),
    ]
    folder = write(tmp_path, "intervention_fits.csv", rows)
    runs5 = "(126 distinct resamples over 5 runs)"
    expected = (
        f"α = 6 [5, 8] {runs5}, R² 0.98 (5 runs, η = 0.01); "
        "α = -2.5 [-3.5, -0.5] (462 distinct resamples over 6 runs), R² 0.75 (6 runs, η = 0.02)"
    )
    assert m.dose_parameter("clamp_rho", "slope")(folder) == m.Measurement((6.0, -2.5), expected)
    assert m.dose_parameter("clamp_rho", "r2")(folder).value == (0.98, 0.75)
    write(folder, "summary.csv", [{"seed": 3, "run": i} for i in range(4)])  # one seed: the runs are the clusters
    assert m.fit_interval(folder, rows[1]) == f"[5, 8] {runs5}"
    write(folder, "summary.csv", [{"seed": s % 4, "run": s} for s in range(8)])
    assert m.fit_interval(folder, rows[1]) == "[n.a.: 35 distinct resamples over 4 seeds, < 40]"
    write(folder, "summary.csv", [{"seed": s % 2, "run": s} for s in range(8)])  # two seeds are seeds too
    assert m.fit_interval(folder, rows[1]) == "[n.a.: 3 distinct resamples over 2 seeds, < 40]"


def test_the_seed_count_is_of_distinct_seeds_and_one_without_a_seed_column_or_a_row(tmp_path):
    """Seeds 7, 7 and 9: 2; one run of seed 4: 1; no seed column, or no run at all: 1; no summary.csv: None."""
    assert (
        m.seed_count(write(tmp_path / "a", "summary.csv", [{"seed": s, "run": i} for i, s in enumerate((7, 9, 7))]))
        == 2
    )
    assert m.seed_count(write(tmp_path / "b", "summary.csv", [{"seed": 4, "run": 0}])) == 1
    assert m.seed_count(write(tmp_path / "c", "summary.csv", [{"run": 0}, {"run": 1}, {"run": 2}])) == 1
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "summary.csv").write_text("seed,run\n")
    assert m.seed_count(tmp_path / "d") == 1
    assert m.seed_count(tmp_path / "none") is None


def test_a_dose_axis_without_a_usable_fit_names_its_statuses_or_says_no_fit(tmp_path):
    folder = write(
        tmp_path,
        "intervention_fits.csv",
        [
            dose_fit("clamp_rho", 1.0, status="too few cells"),
            dose_fit("clamp_rho", 1.0, status="not enough data"),
            dose_fit("clamp_rho", 1.0, status="too few cells"),
            dose_fit("temperature", 1.0),
        ],
    )
    with pytest.raises(m.NotMeasured, match="^clamp_rho: not enough data; too few cells$"):
        m.dose_parameter("clamp_rho", "slope")(folder)
    with pytest.raises(m.NotMeasured, match="^injection_scale: no fit$"):
        m.ok_fits(folder, "injection_scale")
    assert [r["axis"] for r in m.ok_fits(folder, "temperature")] == ["temperature"]


def test_the_injection_slope_is_each_fits_slope_over_its_predicted_one(tmp_path):
    """b = 600 against 1/γ_eff = 400 (1.5×) and b = 100 against 400 (0.25×), in the table's order; another axis' fit
    is not read; one fit without a predicted slope makes the whole measure unknown."""
    rows = [
        dose_fit("injection_scale", 600.0, predicted=400.0, context="η = 0.01"),
        dose_fit("clamp_rho", 50.0, predicted=1.0),
        dose_fit("injection_scale", 100.0, predicted=400.0, context="η = 0.02", n_runs=4),
    ]
    got = m.injection_slope()(write(tmp_path, "intervention_fits.csv", rows))
    assert got == m.Measurement(
        (1.5, 0.25),
        "b = 600 [599, 602] (126 distinct resamples over 5 runs) against 1/γ_eff = 400: 1.50× (5 runs, η = 0.01); "
        "b = 100 [n.a.: 35 distinct resamples over 4 runs, < 40] against 1/γ_eff = 400: 0.25× (4 runs, η = 0.02)",
    )
    rows[2]["predicted_slope"] = NAN
    with pytest.raises(m.NotMeasured, match="γ_eff unknown"):
        m.injection_slope()(write(tmp_path / "unknown", "intervention_fits.csv", rows))


def speedup_arm(axis, strength, ratio, lo=NAN, hi=NAN, lower=NAN):
    return {"axis": axis, "strength": strength, "ratio": ratio, "ratio_lo": lo, "ratio_hi": hi, "ratio_lower": lower}


def test_the_best_speedup_is_one_over_the_smallest_known_ratio_of_its_own_axis(tmp_path):
    """Ratios 0.5, 0.2 and 0.8 (best 1/0.2 = 5 at strength 4, neither the first nor the last arm) and a censored
    arm; another axis' ratio 0.1 is not this axis'. An axis whose arms all censor names their lower bounds."""
    rows = [
        speedup_arm("grokfast", 2.0, 0.5, 0.4, 0.625),
        speedup_arm("ortho", 1.0, 0.1, 0.05, 0.2),
        speedup_arm("grokfast", 4.0, 0.2, 0.125, 0.25),
        speedup_arm("grokfast", 8.0, NAN, lower=1.5),
        speedup_arm("grokfast", 16.0, 0.8, 0.5, 1.0),
        speedup_arm("clip", 6.0, NAN, lower=1.5),
        speedup_arm("clip", 12.0, NAN, lower=NAN),
    ]
    folder = write(tmp_path, "interventions.csv", rows)
    assert m.best_speedup("grokfast")(folder) == m.Measurement(
        5.0, "best 5× at 4 (2: 2× [1.6, 2.5]; 4: 5× [4, 8]; 8: censored; 16: 1.25× [1, 2])"
    )
    with pytest.raises(m.NotMeasured, match=r"^no clip arm has a ratio \(censored: 6 > 1.5×, 12 > –×\)$"):
        m.best_speedup("clip")(folder)
    with pytest.raises(m.NotMeasured, match="^no absent arm in interventions.csv$"):
        m.best_speedup("absent")(folder)


def test_delay_ranges_are_geometric_means_of_the_complete_slices_without_the_clamp_off(tmp_path):
    """Delays T_transition − T_fit (T_fit differs per run, so the "start" origin gives other numbers) at ρ 1 and 2 over
    η 0.01, 0.02, 0.04: 100, 200, 800 and 300, 400, 1,600. Along ρ: 3, 2, 2 (geometric mean ∛12, arithmetic 7/3);
    along η: 8 and 16/3 (√(128/3)). The runs at ρ = 0 (the clamp off) are left out, or those at ρ = 2 when told."""
    delays = {1.0: (100, 200, 800), 2.0: (300, 400, 1600), 0.0: (1, 5000, 7)}
    rows = [
        {"clamp_rho": rho, "learning_rate": lr, "T_fit": 10.0 * (i + 1) * (j + 1), "T_transition": 0.0}
        for i, (rho, ds) in enumerate(delays.items())
        for j, lr in enumerate((0.01, 0.02, 0.04))
    ]
    for row, d in zip(rows, [d for ds in delays.values() for d in ds]):
        row["T_transition"] = row["T_fit"] + d
    folder = write(tmp_path, "summary.csv", rows)
    got = m.delay_ranges("clamp_rho", "learning_rate", "fit")(folder)
    r_norm, r_lr = 12 ** (1 / 3), math.sqrt(128 / 3)
    assert got.value == pytest.approx((r_norm, r_lr), rel=1e-12)
    assert got.text == f"clamp_rho: {r_norm:.3g}×, learning_rate: {r_lr:.3g}× (ratio {r_norm / r_lr:.3g}; 6/6 cells)"
    start = m.delay_ranges("clamp_rho", "learning_rate", "start")(folder).value
    assert start != pytest.approx((r_norm, r_lr), rel=1e-3)
    # leaving out ρ = 2 instead: ρ 0 and 1 are left, along ρ 100/1, 5,000/200, 800/7; along η 5,000/1 and 8
    other = m.delay_ranges("clamp_rho", "learning_rate", "fit", leave_out=2.0)(folder).value
    assert other == pytest.approx(((100 * 25 * 800 / 7) ** (1 / 3), math.sqrt(5000 * 8)), rel=1e-12)
    # a ρ (or an η) of the grid none of whose cells is known leaves no complete slice along it, not a shorter one
    censored = [{**r, "clamp_rho": 3.0, "T_transition": NAN} for r in rows[:3]]
    with pytest.raises(m.NotMeasured, match="^6 of 9 cells of clamp_rho × learning_rate .*along clamp_rho$"):
        m.delay_ranges("clamp_rho", "learning_rate", "fit")(write(tmp_path / "rho3", "summary.csv", rows + censored))
    censored = [{**r, "learning_rate": 0.08, "T_transition": NAN} for r in rows[:9:3]]
    with pytest.raises(m.NotMeasured, match="^6 of 8 cells of clamp_rho × learning_rate .*along learning_rate$"):
        m.delay_ranges("clamp_rho", "learning_rate", "fit")(write(tmp_path / "eta8", "summary.csv", rows + censored))
    with pytest.raises(m.NotMeasured, match="^3 of 3 cells of clamp_rho × learning_rate .*along clamp_rho$"):
        m.delay_ranges("clamp_rho", "learning_rate", "fit")(write(tmp_path / "one_rho", "summary.csv", rows[:3]))
    one_lr = [r for r in rows if r["learning_rate"] == 0.01]
    with pytest.raises(m.NotMeasured, match="^2 of 2 cells of clamp_rho × learning_rate .*along learning_rate$"):
        m.delay_ranges("clamp_rho", "learning_rate", "fit")(write(tmp_path / "one_lr", "summary.csv", one_lr))


# ----------------------------------------------------------------------------- our cells against theirs


def cell_rows(times, lr=cells.ETA_CELLS, **columns):
    return [{"learning_rate": lr, **columns, "seed": i, "T_transition": t} for i, t in enumerate(times)]


EFFLR_SOURCE = "ClevixLab/critical-norm-grokking@96587b9:data/efflr/metrics/adamw_p59_a0.40_d128_H256_wd1e00"


def test_a_cells_median_counts_a_run_without_a_transition_as_infinite_and_is_shown_seed_by_seed(tmp_path):
    """ρ 0.85 at η = 8e-3: 640, 500, 700 and one without a transition, the median of 500, 640, 700, +∞ is 670 (of the
    three that grokked, 640); the ρ 1 cell and the runs at η = 1e-3 are other cells. Against their 587 (16/16)."""
    rows = (
        cell_rows([640, 500, 700, NAN], clamp_rho=0.85)
        + cell_rows([9000, 9000, 9000], clamp_rho=1.0)
        + cell_rows([10, 10, 10], lr=1e-3, clamp_rho=0.85)
    )
    folder = write(tmp_path, "summary.csv", rows)
    (folder / "config.toml").write_text('name = "x"\n')
    got = cells.cell_vs_reference(0.85, "clamp", 0.85)(folder)
    assert got.value == pytest.approx(670 / 587, rel=1e-12)
    assert got.text == (
        f"670 (3/4 seeds: 500, 640, 700, none) against 587 (16/16 seeds, {EFFLR_SOURCE}_clamp_rho0.85_lr8e-03.npz): "
        f"{670 / 587:.3g}×"
    )
    (folder / "config.toml").write_text('[fork]\nfrom = "x"\nstep = 100\n')  # a fork: T_grok from the source's step 0
    times = cells.cell_times(folder, 0.85)
    assert times[:3].tolist() == [740, 600, 800] and math.isnan(times[3])
    assert cells.cell_vs_reference(0.85, "clamp", 0.85)(folder).value == pytest.approx(770 / 587, rel=1e-12)
    assert cells.censored_median([3.0, NAN, 1.0]) == 3.0 and cells.censored_median([NAN, NAN, 1.0]) == math.inf


def test_a_cell_without_a_clamp_axis_takes_every_run_at_its_learning_rate_and_needs_three_seeds(tmp_path):
    """The free cell (ρ None): 820, 790, 800 → 800 against their free 805; with two seeds it is not measured."""
    folder = write(tmp_path, "summary.csv", cell_rows([820, 790, 800]) + cell_rows([5, 5, 5], lr=1e-3))
    (folder / "config.toml").write_text('name = "x"\n')
    assert cells.cell_vs_reference(None, "none", 1.0)(folder).value == pytest.approx(800 / 805, rel=1e-12)
    two = write(tmp_path / "two", "summary.csv", cell_rows([820, 790]) + cell_rows([5, 5, 5], lr=1e-3))
    with pytest.raises(m.NotMeasured, match="^2 run\\(s\\) in the cell ρ = None, η = 0.008 of two: a cell needs ≥ 3"):
        cells.cell_times(two, None)


def test_a_ratio_of_two_cells_reads_each_from_its_own_part_against_the_same_ratio_of_theirs(tmp_path):
    """Part 0 holds the clamp cells (ρ 1: 1,500, 1,200, 1,300 → 1,300; ρ 0.85: 400, 650, 500 → 500), part 1 the free
    runs (900, 1,000, 600 → 900). ρ 1 over ρ 0.85 is 2.6 against their 1,256 / 587; ρ 1 over free 1.44 against
    1,256 / 805. Each cell is read from the part its index names, whichever order the indices are in."""
    clamp = write(
        tmp_path / "clamp",
        "summary.csv",
        cell_rows([1500, 1200, 1300], clamp_rho=1.0) + cell_rows([400, 650, 500], clamp_rho=0.85),
    )
    free = write(tmp_path / "free", "summary.csv", cell_rows([900, 1000, 600]))
    for folder in (clamp, free):
        (folder / "config.toml").write_text('name = "x"\n')
    norm = cells.ratio_vs_reference((0, 1.0, "clamp", 1.0), (0, 0.85, "clamp", 0.85))(clamp)
    assert norm.value == pytest.approx(2.6 / (1256 / 587), rel=1e-12)
    assert norm.text == (
        f"ours 1,300 / 500 = 2.6 against theirs 1,256 / 587 = {1256 / 587:.3g}: {2.6 / (1256 / 587):.3g}×"
    )
    vs_free = cells.ratio_vs_reference((0, 1.0, "clamp", 1.0), (1, None, "none", 1.0))(clamp, free)
    assert vs_free.value == pytest.approx((1300 / 900) / (1256 / 805), rel=1e-12)
    reversed_parts = cells.ratio_vs_reference((1, 1.0, "clamp", 1.0), (0, None, "none", 1.0))(free, clamp)
    assert reversed_parts.value == vs_free.value


def test_their_values_are_read_by_quantity_and_shown_to_four_digits_below_a_thousand(tmp_path):
    """One quantity gives its number, several a tuple in the order asked; |v| ≥ 1,000 (1,000 itself too) shows whole with commas."""
    rows = [
        {"quantity": "alpha", "value": 7.4912, "cells": 1, "note": ""},
        {"quantity": "delay", "value": 1000.0, "cells": 1, "note": ""},
        {"quantity": "below", "value": 999.94, "cells": 1, "note": ""},
        {"quantity": "drop", "value": -2500.0, "cells": 1, "note": ""},
    ]
    folder = write(tmp_path, cells.THEIR_FITS, rows)
    assert cells.their_value("alpha")(folder) == m.Measurement(7.4912, "alpha 7.491")
    assert cells.their_value("drop", "delay", "below")(folder) == m.Measurement(
        (-2500.0, 1000.0, 999.94), "drop -2,500; delay 1,000; below 999.9"
    )
    with pytest.raises(m.NotMeasured, match="^gamma not in "):
        cells.their_value("alpha", "gamma")(folder)
    with pytest.raises(m.NotMeasured, match=f"^{cells.THEIR_FITS} missing in "):
        cells.fitted(tmp_path / "none", "alpha")


def test_the_logit_scale_collapse_is_the_r2_of_log_delay_on_log_scale_at_each_runs_fit(tmp_path, monkeypatch):
    """Three usable runs (intermediate, T_transition > T_fit): scale 2, 3, 5 at T_fit (read at the first logged step
    ≥ T_fit) and delays 200, 700, 900; their R² is the squared correlation of log delay and log scale. A weak run, an
    intermediate run transitioning at its fit and one before it are not fitted; every other logged value is far off."""
    from types import SimpleNamespace

    from nht_jax.results import folder as results

    rows = [
        {"regime": r, "T_fit": f, "T_transition": t}
        for r, f, t in (
            ("intermediate", 100.0, 300.0),
            ("weak", 100.0, 5000.0),
            ("intermediate", 105.0, 805.0),
            ("intermediate", 200.0, 200.0),
            ("intermediate", 300.0, 250.0),
            ("intermediate", 150.0, 1050.0),
        )
    ]
    steps = [0, 50, 100, 150, 200, 250, 300]  # as the writer stores them: whole steps
    scales = np.full((6, 7), 1000.0)
    scales[0, 2], scales[2, 3], scales[5, 3] = 2.0, 3.0, 5.0
    scales[3, 4] = scales[4, 6] = scales[1, 2] = 7.0
    folder = write(tmp_path, "summary.csv", rows)
    monkeypatch.setattr(
        results,
        "load_results",
        lambda path: (
            SimpleNamespace(steps=steps, metrics={"effective_logit_scale": scales}) if path == folder else None
        ),
    )
    x, y = np.log([2.0, 3.0, 5.0]), np.log([200.0, 700.0, 900.0])
    r2 = np.corrcoef(x, y)[0, 1] ** 2
    slope = np.cov(x, y, bias=True)[0, 1] / np.var(x)
    got = m.logit_scale_collapse()(folder)
    assert got.value == pytest.approx(r2, rel=1e-9) and 0.5 < r2 < 0.99
    assert got.text == f"R² {r2:.3g}, slope {slope:.3g} over 3/6 runs"


def reference_cell(experiment, p, rho, median, arm="clamp", lr=1e-3, grokked=16, t_fork=0, delay=None):
    from nht_jax.papers.reference_cells import ReferenceCell

    return ReferenceCell(
        "clamp-law", experiment, p, arm, rho, lr, 1.0, 1.0, t_fork, 54.6, 16, grokked, median,
        median - t_fork if delay is None else delay, "r", "c", f"{experiment}/{p}/{arm}/{rho}/{lr}",
    )  # fmt: skip


def least_squares_slope(groups):
    """α of log T = a_g + αρ: the pooled within-group slope, and R² of log T about its overall mean."""
    within = [(np.asarray(r) - np.mean(r), np.log(t) - np.mean(np.log(t))) for r, t in groups]
    alpha = sum(x @ y for x, y in within) / sum(x @ x for x, _ in within)
    y = np.concatenate([np.log(t) for _, t in groups])
    residual = np.concatenate([y_g - alpha * x for x, y_g in within])
    return alpha, 1 - residual @ residual / np.sum((y - y.mean()) ** 2)


def test_their_fits_on_a_hand_made_table_are_the_papers_estimators(tmp_path):
    """pscan: p 59 and 41 have every ρ ∈ {0.85, 1, 1.15} grokking in more than half their seeds; p 31 (8 of 16 at
    0.85) and p 71 (no 1.15) do not; ρ 1.3 and a free arm are not in the fit. denserho over all its ρ; tfnoln_long
    over the three ρ only; the efflr ratios and the samestate delays (not T_grok) read one cell each."""
    table = [
        reference_cell("pscan", 59, 1.0, 500.0),
        reference_cell("pscan", 59, 0.85, 200.0),
        reference_cell("pscan", 59, 1.15, 2000.0),
        reference_cell("pscan", 59, 1.3, 90000.0),
        reference_cell("pscan", 41, 0.85, 100.0, grokked=9),
        reference_cell("pscan", 41, 1.0, 300.0),
        reference_cell("pscan", 41, 1.0, 5.0, arm="none", grokked=0),
        reference_cell("pscan", 41, 1.15, 700.0),
        reference_cell("pscan", 31, 0.85, 50.0, grokked=8),
        reference_cell("pscan", 31, 1.0, 80.0),
        reference_cell("pscan", 31, 1.15, 90.0),
        reference_cell("pscan", 71, 0.85, 20.0),
        reference_cell("pscan", 71, 1.0, 30.0),
        reference_cell("denserho", 59, 0.95, 150.0),
        reference_cell("denserho", 59, 1.25, 900.0),
        reference_cell("denserho", 59, 0.85, 100.0),
        reference_cell("tfnoln_long", 59, 0.85, 50.0),
        reference_cell("tfnoln_long", 59, 1.3, 5.0),
        reference_cell("tfnoln_long", 59, 1.0, 400.0),
        reference_cell("tfnoln_long", 59, 1.15, 1000.0),
        reference_cell("efflr", 59, 1.3, 27925.0),
        reference_cell("efflr", 59, 0.85, 1500.0),
        reference_cell("efflr", 59, 0.85, 600.0, lr=8e-3),
        reference_cell("efflr", 59, 1.3, 7000.0, lr=8e-3),
        *[
            reference_cell("samestate", 59, 1.0, 500.0 + d, arm=a, t_fork=500)
            for a, d in (("clamp_lowered", 1000.0), ("free", 3000.0), ("clamp_same", 4000.0), ("clamp_raised", 13000.0))
        ],
        reference_cell("samestate", 41, 1.0, 99999.0, arm="clamp_same", t_fork=500),
    ]
    shared, r2 = least_squares_slope([((0.85, 1.0, 1.15), (100, 300, 700)), ((1.0, 0.85, 1.15), (500, 200, 2000))])
    dense = least_squares_slope([((0.95, 1.25, 0.85), (150, 900, 100))])[0]
    alpha2 = least_squares_slope([((0.85, 1.0, 1.15), (50, 400, 1000))])[0]
    assert cells.their_fits(table) == [
        {"quantity": "shared_alpha", "value": pytest.approx(shared, rel=1e-9), "cells": 6,
         "note": "p ∈ {41, 59} × ρ ∈ {0.85, 1, 1.15}"},
        {"quantity": "shared_r2", "value": pytest.approx(r2, rel=1e-9), "cells": 6,
         "note": "R² of log median T_grok about its mean"},
        {"quantity": "dense_alpha", "value": pytest.approx(dense, rel=1e-9), "cells": 3,
         "note": "p = 59, ρ ∈ [0.85, 1.25]"},
        {"quantity": "alpha2", "value": pytest.approx(alpha2, rel=1e-9), "cells": 3, "note": "ρ ∈ {0.85, 1, 1.15}"},
        {"quantity": "norm_effect", "value": pytest.approx(27925 / 1500), "cells": 2,
         "note": "T(ρ 1.3) / T(ρ 0.85) at η = 1e-3"},
        {"quantity": "lr_effect", "value": pytest.approx(2.5), "cells": 2, "note": "T(η 1e-3) / T(η 8e-3) at ρ = 0.85"},
        {"quantity": "samestate_clamp_lowered", "value": 1000.0, "cells": 1, "note": "median T_grok − t_fork"},
        {"quantity": "samestate_free", "value": 3000.0, "cells": 1, "note": "median T_grok − t_fork"},
        {"quantity": "samestate_clamp_same", "value": 4000.0, "cells": 1, "note": "median T_grok − t_fork"},
        {"quantity": "samestate_clamp_raised", "value": 13000.0, "cells": 1, "note": "median T_grok − t_fork"},
        {"quantity": "samestate_ratio", "value": pytest.approx(3.25), "cells": 2, "note": "raised / same, median delays"},
    ]  # fmt: skip
    assert 0.8 < r2 < 0.99  # the two moduli do not share one line: R² is not 1


def test_the_their_data_part_writes_every_fit_into_a_new_nested_folder_and_again_over_it(tmp_path):
    folder = tmp_path / "out" / "their-data"
    assert cells.write_their_fits(folder) == 11
    assert cells.write_their_fits(folder) == 11
    text = (folder / cells.THEIR_FITS).read_text()
    assert text.splitlines()[0] == "quantity,value,cells,note" and len(text.splitlines()) == 12
    assert cells.fitted(folder, "samestate_ratio") == pytest.approx(24162.5 / 7200)
