"""Delay-law fits and regime boundaries, each against a planted answer."""

import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.analysis import fits
from nht_jax.analysis.fits import FitOptions, delay_fit, find_boundary, table_from_arrays

FAST = FitOptions(n_bootstrap=400)


def grid_table(lams, seeds, delay_of, regime="intermediate", eta=1e-3, extra=None, **arrays):
    """A RunTable over λ × seed (λ slowest) with T_fit = 100 and delay = delay_of(λ, seed)."""
    lam, seed = (a.ravel() for a in np.meshgrid(lams, seeds, indexing="ij"))
    delay = np.array([delay_of(l, s) for l, s in zip(lam, seed)], float)
    axes = {"weight_decay": lam, "learning_rate": np.full(lam.size, eta), "seed": seed, **(extra or {})}
    regimes = [regime] * lam.size if isinstance(regime, str) else regime
    return table_from_arrays(axes, regimes, np.full(lam.size, 100.0), 100.0 + delay, **arrays)


def test_planted_inverse_lambda_slope_inside_the_interval():
    rng = np.random.default_rng(1)
    seed_shift = rng.normal(0, 15, 8)  # runs of a seed share an offset
    table = grid_table(
        [0.05, 0.1, 0.2, 0.4, 0.8, 1.6], np.arange(8), lambda l, s: 30 + 200 / l + seed_shift[s] + rng.normal(0, 40)
    )
    fit = delay_fit(table, "inverse_lambda", FAST)
    assert fit.ok and fit.resampled == "seeds" and len(fit.runs) == 48 and not fit.excluded
    assert fit.slope == pytest.approx(200, rel=0.03)
    assert fit.slope_ci[0] < 200 < fit.slope_ci[1] and fit.slope_ci[1] - fit.slope_ci[0] < 20
    assert fit.intercept_ci[0] < 30 < fit.intercept_ci[1]
    assert fit.r2 > 0.95
    half = delay_fit(table, "inverse_lambda", FitOptions(n_bootstrap=400, confidence=0.5))
    ratio = (half.slope_ci[1] - half.slope_ci[0]) / (fit.slope_ci[1] - fit.slope_ci[0])
    assert 0.2 < ratio < 0.5  # normal quantiles: 0.674 / 1.96 = 0.34


def test_planted_power_law_exponent():
    rng = np.random.default_rng(1)
    table = grid_table(np.logspace(-2, 0, 7), np.arange(6), lambda l, s: 50 * l**-0.8 * np.exp(rng.normal(0, 0.1)))
    fit = delay_fit(table, "power_law_lambda", FAST)
    assert fit.nu == pytest.approx(0.8, abs=0.03)
    assert fit.nu_ci[0] < 0.8 < fit.nu_ci[1]
    row = fit.as_row()
    assert row["nu"] == pytest.approx(0.8, abs=0.03) and row["nu_lo"] < 0.8 < row["nu_hi"]
    assert np.isnan(delay_fit(table, "inverse_lambda", FAST).as_row()["nu"])


def test_the_eta_power_law_reads_its_exponent_off_log_eta_not_log_lambda():
    # delay = 40·η^(−0.6) exactly, λ fixed: ν in η is 0.6 (slope −0.6 of log delay on log η, R² 1), no λ fit
    etas, seeds = np.logspace(-3, -1, 5), np.arange(3)
    eta, seed = (a.ravel() for a in np.meshgrid(etas, seeds, indexing="ij"))
    axes = {"weight_decay": np.full(eta.size, 0.5), "learning_rate": eta, "seed": seed}
    table = table_from_arrays(axes, ["intermediate"] * eta.size, np.full(eta.size, 100.0), 100.0 + 40 * eta**-0.6)
    fit = delay_fit(table, "power_law_eta", FAST)
    assert fit.ok and fit.nu == pytest.approx(0.6, rel=1e-9) and fit.r2 == pytest.approx(1.0)
    row = fit.as_row()
    assert row["nu"] == pytest.approx(0.6, rel=1e-9) and row["y ~ x"] == "log delay ~ log η"
    assert row["nu_lo"] == pytest.approx(0.6, rel=1e-6) and row["nu_hi"] == pytest.approx(0.6, rel=1e-6)
    assert not delay_fit(table, "power_law_lambda", FAST).ok  # λ has one value


def test_the_bootstrap_resamples_whole_seeds():
    """Each seed has its own slope, no noise within a seed, 20 λ per seed: the slope's uncertainty is the spread
    of 8 seed slopes. Resampling seeds shows it; resampling runs would give about half the width."""
    rng = np.random.default_rng(0)
    seed_slopes = 100 + rng.normal(0, 20, 8)
    table = grid_table(1 / np.linspace(1, 20, 20), np.arange(8), lambda l, s: seed_slopes[s] / l)
    fit = delay_fit(table, "inverse_lambda", FAST)
    expected_width = 2 * 1.96 * seed_slopes.std(ddof=1) / np.sqrt(8)
    assert fit.slope_ci[1] - fit.slope_ci[0] > 0.7 * expected_width
    weights, unit = fits.resample_weights(table.axes["seed"], 50, np.random.default_rng(0))
    assert unit == "seeds"
    for seed in range(8):  # every run of a seed is drawn as often as its seed
        members = weights[:, table.axes["seed"] == seed]
        assert (members == members[:, :1]).all()


def test_the_boundary_bootstrap_keeps_each_grid_value_s_count():
    strata = np.repeat([0.01, 0.1, 1.0], [3, 4, 5])
    weights = fits.stratified_weights(strata, 200, np.random.default_rng(0))
    for value, count in ((0.01, 3), (0.1, 4), (1.0, 5)):
        assert (weights[:, strata == value].sum(1) == count).all()
    assert weights.std(0).min() > 0


def test_one_seed_resamples_runs_and_says_so():
    rng = np.random.default_rng(3)
    table = grid_table(np.repeat([0.1, 0.2, 0.5, 1.0], 3), [0], lambda l, s: 10 / l + rng.normal(0, 1))
    fit = delay_fit(table, "inverse_lambda", FAST)
    assert fit.ok and fit.resampled == "runs (one seed)" and fit.slope_ci[0] < 10 < fit.slope_ci[1]


def test_inverse_lambda_fits_one_slice_per_learning_rate():
    lam, seed, eta = (a.ravel() for a in np.meshgrid([0.1, 0.2, 0.5, 1.0], [0, 1, 2], [1e-3, 2e-3], indexing="ij"))
    delay = 0.1 / (eta * lam)
    table = table_from_arrays(
        {"weight_decay": lam, "learning_rate": eta.astype(np.float32), "seed": seed},
        ["intermediate"] * lam.size,
        np.zeros(lam.size),
        delay,
    )  # η as Results.hparams holds it
    by_eta = {dict(f.slice)["learning_rate"]: f for f in fits.delay_fits(table, "inverse_lambda", FAST)}
    assert set(by_eta) == {1e-3, 2e-3}  # float32 grid values read back as the decimals written in the grid
    assert by_eta[1e-3].slope == pytest.approx(100) and by_eta[2e-3].slope == pytest.approx(50)
    assert by_eta[1e-3].as_row()["slice"] == "η=0.001"
    by_lam = {dict(f.slice)["weight_decay"]: f for f in fits.delay_fits(table, "inverse_eta", FAST)}
    assert by_lam[0.5].slope == pytest.approx(0.2)


def test_planted_collapse_across_eta_and_lambda():
    """delay = c·log(V_fit/V_post)/γ_eff with c = 1.3: the collapse recovers c and a zero intercept."""
    rng = np.random.default_rng(4)
    n = 60
    lam, eta, seed = rng.choice([0.1, 0.3, 1.0], n), rng.choice([1e-3, 3e-3], n), np.arange(n) % 6
    gamma = 2 * eta * lam
    v_fit, v_post = rng.uniform(200, 400, n), rng.uniform(20, 80, n)
    delay = 1.3 * np.log(v_fit / v_post) / gamma * np.exp(rng.normal(0, 0.05, n))
    table = table_from_arrays(
        {"weight_decay": lam, "learning_rate": eta, "seed": seed},
        ["intermediate"] * n,
        np.full(n, 50.0),
        50 + delay,
        v_fit=v_fit,
        v_post=v_post,
        gamma=gamma,
    )
    fit = delay_fit(table, "collapse", FAST)
    assert fit.slope == pytest.approx(1.3, rel=0.05) and fit.slope_ci[0] < 1.3 < fit.slope_ci[1]
    assert fit.intercept_ci[0] < 0 < fit.intercept_ci[1]
    assert delay_fit(table, "log_norm_ratio", FAST).ok  # pooled; confounded by γ_eff, but it runs


def test_every_excluded_run_has_its_reason():
    regimes = [
        "intermediate",
        "weak",
        "strong",
        "structured",
        "diverged",
        "intermediate",
        "intermediate",
        "intermediate",
        "intermediate",
        "intermediate",
    ]
    lam = [0.1, 0.1, 5.0, 1.0, 0.2, 0.0, 0.1, 0.2, 0.5, 1.0]
    t_fit = [100, 100, np.nan, 200, 100, 100, 100, 100, 100, 100]
    t_tr = [400, np.nan, np.nan, 200, 300, 300, 500, 300, 200, 150]
    v_fit = [50, 60, np.nan, 20, 70, 50, 30, 50, 50, 50]
    v_post = [10, np.nan, np.nan, 20, 10, 10, 40, 10, 10, 10]
    table = table_from_arrays(
        {"weight_decay": lam, "seed": np.arange(10) % 2},
        regimes,
        t_fit,
        t_tr,
        v_fit=v_fit,
        v_post=v_post,
        gamma=np.full(10, 1e-3),
    )
    inverse = dict(delay_fit(table, "inverse_lambda", FAST).excluded)
    assert inverse == {
        1: "regime weak: no transition within the budget",
        2: "regime strong: never fits",
        3: "regime structured: delay 0 at log resolution",
        4: "diverged",
        5: "λ = 0: 1/λ undefined",
    }
    ratio = dict(delay_fit(table, "log_norm_ratio", FAST).excluded)
    assert ratio[6] == "V_fit ≤ V_post: no norm drop" and 5 not in ratio
    with_structured = FitOptions(n_bootstrap=0, regimes=("intermediate", "structured"))
    assert dict(delay_fit(table, "power_law_lambda", with_structured).excluded)[3] == "delay 0 at log resolution"
    assert 3 in delay_fit(table, "inverse_lambda", with_structured).runs


def test_not_enough_data_is_a_result_not_an_exception():
    table = grid_table([0.1, 0.2], [0], lambda l, s: 1 / l)
    fit = delay_fit(table, "inverse_lambda", FAST)
    assert fit.status == "not enough data: 2 usable run(s), need 3" and np.isnan(fit.slope) and not fit.ok
    same_x = grid_table([0.1], [0, 1, 2, 3], lambda l, s: 10 + s)
    assert delay_fit(same_x, "inverse_lambda", FAST).status.startswith("not enough data: x not varied")
    assert "not enough data" in fits.markdown_table([fit.as_row()])


def test_planted_boundary_with_label_noise():
    """Below λ* = 0.1 mostly weak, above mostly intermediate, P(beyond) = σ(3·log(λ/0.1))."""
    rng = np.random.default_rng(5)
    lam = np.repeat(np.logspace(-2.5, 0.5, 10), 12)
    beyond = rng.random(lam.size) < 1 / (1 + np.exp(-3 * np.log(lam / 0.1)))
    estimate = find_boundary(lam, beyond, FAST)
    assert estimate.status == "ok" and estimate.method == "logistic" and estimate.direction == "increasing"
    assert estimate.value == pytest.approx(0.1, rel=0.25)
    assert estimate.ci[0] < 0.1 < estimate.ci[1] and estimate.ci[1] / estimate.ci[0] < 3
    assert estimate.resampled == "runs within each grid value"


def test_clean_step_takes_the_midpoint_of_the_two_grid_values():
    lam = np.repeat([0.001, 0.01, 0.1, 1.0], 4)
    estimate = find_boundary(lam, lam >= 0.1, FAST)
    assert estimate.method == "midpoint (clean step)" and estimate.status == "ok"
    assert estimate.value == pytest.approx(np.sqrt(0.01 * 0.1)) and estimate.ci == (0.01, 0.1)
    linear = find_boundary(np.repeat([0.5, 0.7, 0.9, 1.0], 3), np.repeat([1, 1, 0, 0], 3), FAST, log=False)
    assert linear.value == pytest.approx(0.8) and linear.direction == "decreasing"


def test_quasi_separation_stays_finite():
    """One mixed grid value between clean ones: the MLE diverges, the ridge keeps the boundary at that value."""
    lam = np.repeat([0.01, 0.1, 1.0], 4)
    beyond = np.array([0] * 4 + [0, 1, 0, 1] + [1] * 4, bool)
    estimate = find_boundary(lam, beyond, FAST)
    assert estimate.method == "logistic" and estimate.value == pytest.approx(0.1, rel=0.1)


def test_no_boundary_when_every_run_is_on_one_side():
    lam = np.repeat([0.01, 0.1, 1.0], 3)
    assert find_boundary(lam, np.zeros(9, bool), FAST).status == "no boundary in range: every run is before it"
    assert find_boundary(lam, np.ones(9, bool), FAST).status == "no boundary in range: every run is beyond it"
    assert find_boundary([0.1, 1.0], [0, 1], FAST).status.startswith("not enough data")


def test_planted_boundary_along_a_linear_axis():
    """Along ρ the outcome falls: P(beyond) = σ(−15·(ρ − 0.6))."""
    rng = np.random.default_rng(0)
    rho = np.repeat(np.linspace(0, 1, 11), 10)
    beyond = rng.random(rho.size) < 1 / (1 + np.exp(15 * (rho - 0.6)))
    estimate = find_boundary(rho, beyond, FAST, log=False)
    assert estimate.direction == "decreasing" and estimate.value == pytest.approx(0.6, abs=0.05)
    assert estimate.ci[0] < 0.6 < estimate.ci[1]


def test_regime_boundaries_per_slice_and_structured_option():
    lams = np.logspace(-3, 1, 9)
    lam, seed, rho = (a.ravel() for a in np.meshgrid(lams, [0, 1, 2], [0.5, 1.0], indexing="ij"))
    regime = np.where(
        lam < 0.01, "weak", np.where(lam > 2, "strong", np.where(lam > 0.3, "structured", "intermediate"))
    )
    regime[(lam > 0.005) & (lam < 0.2) & (rho == 1.0)] = "weak"  # at ρ = 1 the shortcut holds up to λ ≈ 0.2
    regime[0] = "diverged"
    table = table_from_arrays(
        {"weight_decay": lam, "seed": seed, "rho": rho}, regime, np.zeros(lam.size), np.zeros(lam.size)
    )
    out = {(dict(b.slice)["rho"], b.transition): b for b in fits.regime_boundaries(table, "weight_decay", FAST)}
    assert len(out) == 4
    assert out[0.5, "weak→intermediate"].value == pytest.approx(np.sqrt(lams[1] * lams[2]))
    assert out[1.0, "weak→intermediate"].value == pytest.approx(np.sqrt(lams[4] * lams[5]))
    assert out[0.5, "intermediate→strong"].value == pytest.approx(np.sqrt(lams[6] * lams[7]))
    assert dict(out[0.5, "weak→intermediate"].excluded) == {0: "diverged"}
    exclude = FitOptions(n_bootstrap=0, structured_as="exclude")
    left_out = fits.regime_boundaries(table, "weight_decay", exclude)[0].excluded
    assert sum(reason.startswith("regime structured") for _, reason in left_out) == 6
    row = out[1.0, "weak→intermediate"].as_row()
    assert row["slice"] == "rho=1" and row["method"] == "midpoint (clean step)"


def test_run_table_reads_norms_at_the_transition_times():
    steps = np.arange(0, 60, 10)
    norm = np.array([[1, 5, 9, 6, 3, 10.0], [1, 2, 3, 4, 5, 6.0]])
    rows = [
        {
            "run": 0,
            "weight_decay": 0.1,
            "seed": 0,
            "regime": "intermediate",
            "T_fit": 10.0,
            "T_transition": 30.0,
            "diverged": False,
        },
        {
            "run": 1,
            "weight_decay": 0.1,
            "seed": 1,
            "regime": "weak",
            "T_fit": 10.0,
            "T_transition": float("nan"),
            "diverged": False,
        },
    ]
    table = fits.run_table(rows, steps, norm)
    assert list(table.axes) == ["weight_decay", "seed"]
    assert table.v_fit.tolist() == [5, 2] and table.v_post[0] == 6 and np.isnan(table.v_post[1])
    assert fits.post_norm(steps, norm, table.t_transition, "final").tolist()[0] == 10
    assert fits.post_norm(steps, norm, table.t_transition, "min_after_transition")[0] == 3
    assert np.isnan(fits.post_norm(steps, norm, table.t_transition, "final")[1])
    assert fits.run_table(rows, steps, norm, v_fit="peak").v_fit.tolist() == [9, 6]  # no transition: to the end


def test_options_are_checked():
    with pytest.raises(ConfigError, match="confidence"):
        FitOptions(confidence=95)
    with pytest.raises(ConfigError, match="regimes"):
        FitOptions(regimes=("grokked",))


def test_fit_report_on_a_tiny_sweep(tmp_path, tiny_config):
    from nht_jax.training.sweep import run_sweep

    results = run_sweep(tiny_config(), tmp_path, progress=False)
    report = fits.fit_report(results, FitOptions(n_bootstrap=50))
    kinds = {f.kind for f in report["delay_fits"]}
    assert kinds == {"inverse_lambda", "power_law_lambda", "log_norm_ratio", "collapse"}
    assert {s["analysis"] for s in report["skipped"]} == {"inverse_eta", "power_law_eta"}
    for fit in report["delay_fits"]:  # four runs, at most two intermediate: never enough data
        assert fit.status.startswith("not enough data")
        assert len(fit.runs) + len(fit.excluded) == results.num_runs
        assert all(reason for _, reason in fit.excluded)
    assert any(fit.excluded for fit in report["delay_fits"])
    assert {b.transition for b in report["boundaries"]} == {"weak→intermediate", "intermediate→strong"}
    text = fits.report_markdown(report)
    assert "## Delay-law fits" in text and "## Regime boundaries" in text and "not enough data" in text
