"""Threshold sensitivity and the distinct-resample count: pure functions, and a planted sweep whose grokking runs
hover at test accuracy 0.992, so that T_transition exists at the 0.99 threshold and not at 0.999."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nht_jax import experiment
from nht_jax.analysis import sensitivity
from nht_jax.analysis.analyze import options_from
from nht_jax.analysis.bootstrap import MIN_DISTINCT_RESAMPLES, distinct_resamples, interval_text
from nht_jax.base.errors import ConfigError
from nht_jax.results.folder import load_results

from .conftest import write_results_folder

STEPS = np.arange(0, 3001, 50, dtype=np.float64)


def test_a_seed_bootstrap_has_c_2n_minus_1_n_distinct_resamples():
    assert [distinct_resamples(n) for n in (1, 2, 3, 4, 5)] == [1, 3, 10, 35, 126]
    assert distinct_resamples(0) == 0


def test_an_interval_on_too_few_distinct_resamples_is_na_with_its_count():
    assert interval_text(1.2, 1.5, 2) == f"[n.a.: 3 distinct resamples over 2 seeds, < {MIN_DISTINCT_RESAMPLES}]"
    assert interval_text(1.2, 1.5, 4).startswith("[n.a.: 35 distinct resamples over 4 seeds")
    assert interval_text(1.2, 1.5, 5) == "[1.2, 1.5] (126 distinct resamples over 5 seeds)"
    assert interval_text(float("nan"), 1.5, 5) == "[no interval]"


def test_alternatives_are_definitions_the_papers_leave_open():
    assert sensitivity.parse_alternative("transition_threshold=0.95") == ("transition_threshold", 0.95)
    assert sensitivity.parse_alternative("transition_persists=true") == ("transition_persists", True)
    for bad in ("weight_decay=0.1", "transition_threshold", "transition_threshold=high", "transition_persists=1"):
        with pytest.raises(ConfigError):
            sensitivity.parse_alternative(bad)
    rule = experiment.AnalysisConfig()
    assert sensitivity.default_alternatives(rule) == (
        "transition_threshold=0.95",
        "transition_threshold=0.999",
        "transition_persists=true",
        "fit_threshold=0.95",
        "fit_threshold=0.999",
    )
    below = experiment.AnalysisConfig(transition_direction="below", transition_threshold=0.5, transition_persists=True)
    assert sensitivity.default_alternatives(below)[:3] == (
        "transition_threshold=0.4",
        "transition_threshold=0.6",
        "transition_persists=false",
    )


def test_a_flip_needs_the_opposite_verdict_not_an_undecided_one():
    assert sensitivity.flips("✓", ["✓", "✗"], "✓", "✗")
    assert not sensitivity.flips("✓", ["✓", "n.a."], "✓", "✗")
    assert not sensitivity.flips("n.a.", ["✓", "✗"], "✓", "✗")


@pytest.fixture(scope="module")
def hovering(tmp_path_factory):
    """λ 0.01 weak (never leaves 0.5), λ 0.1 grokking to test accuracy 0.992 at step 1,000 + 200·seed, λ 1 never
    fits; seeds 0 and 1."""
    config = experiment.from_dict(
        {
            "name": "hovering",
            "task": {"name": "modular", "p": 31},
            "model": {"name": "mlp", "hidden": [32]},
            "optim": {"name": "adamw"},
            "train": {"steps": int(STEPS[-1]), "log_every": 50},
            "grid": {"learning_rate": 1e-3, "train_fraction": 0.5, "weight_decay": [0.01, 0.1, 1.0], "seed": [0, 1]},
        }
    )
    runs = config.runs()
    lams, seeds = runs["weight_decay"], runs["seed"]
    fits = lams < 0.5
    train = np.array([(STEPS >= 200).astype(float) if f else np.full(STEPS.shape, 0.3) for f in fits])
    test = np.array(
        [
            np.where(STEPS >= 1000 + 200 * s, 0.992, 0.5) if np.isclose(lam, 0.1) else np.full(STEPS.shape, 0.5)
            for lam, s in zip(lams, seeds)
        ]
    )
    norm = np.tile(100.0 * np.exp(-STEPS / 2000), (len(lams), 1))
    ones = np.ones_like(train)
    metrics = {
        "norm_sq": norm,
        "weight_norm_sq": norm,
        "head_norm_sq": norm / 2,
        "layer_norm_sq/embed": norm / 2,
        "layer_norm_sq/head": norm / 2,
        "train_acc": train,
        "test_acc": test,
        "train_loss": 1.01 - train,
        "test_loss": 1.01 - test,
        "grad_norm": ones,
        "logit_scale": ones,
        "finite": ones,
    }
    metrics.update({name: ones for name in config.domain.summary(config) if name not in metrics})
    return write_results_folder(tmp_path_factory.mktemp("hovering"), STEPS, metrics, runs, config)


def test_the_summary_is_recomputed_from_the_trajectories_under_an_alternative(hovering):
    res = load_results(hovering)
    assert [r["regime"] for r in res.summary] == ["weak", "weak", "intermediate", "intermediate", "strong", "strong"]
    strict = sensitivity.alternative_results(res, "transition_threshold=0.999")
    assert [r["regime"] for r in strict.summary] == ["weak", "weak", "weak", "weak", "strong", "strong"]
    assert strict.config.analysis.transition_threshold == 0.999 and res.config.analysis.transition_threshold == 0.99
    loose = sensitivity.alternative_results(res, "transition_threshold=0.95")
    assert [r["T_transition"] for r in loose.summary][2:4] == [1000.0, 1200.0]


def test_an_alternative_summary_keeps_the_columns_the_recomputation_does_not_make(hovering):
    """A column of the stored summary that summarize() does not write (here "stopped_step", planted 100 + run) is
    kept, row by row, beside the recomputed T_transition."""
    import dataclasses

    res = load_results(hovering)
    planted = dataclasses.replace(res, summary=[{**r, "stopped_step": 100 + i} for i, r in enumerate(res.summary)])
    loose = sensitivity.alternative_results(planted, "transition_threshold=0.95")
    assert [r["stopped_step"] for r in loose.summary] == [100, 101, 102, 103, 104, 105]
    assert [r["T_transition"] for r in loose.summary][2:4] == [1000.0, 1200.0]


def test_a_verdict_that_flips_across_thresholds_is_marked_fragile(hovering):
    from nht_jax.analysis import fits, layers, predictions, separation
    from nht_jax.analysis.analyze import run_analyses

    res = load_results(hovering)
    records = (fits.ANALYSIS, separation.ANALYSIS, layers.ANALYSIS, predictions.ANALYSIS)
    options = options_from(
        [
            "fits.n_bootstrap=0",
            "separation.n_bootstrap=0",
            "layers.n_bootstrap=0",
            'predictions.alternatives=["transition_threshold=0.95", "transition_threshold=0.999"]',
        ]
    )
    found = {v.id: v for v in run_analyses(res, options, records)["predictions"]}
    p2 = found["P2"]
    assert p2.verdict == "✓" and p2.fragile
    assert p2.sensitivity == "transition_threshold=0.95: ✓; transition_threshold=0.999: ✗"
    assert "| P2 | three regimes in λ | ✓ fragile |" in predictions.markdown(list(found.values()))
    # P3 has no intermediate run at 0.999: n.a. there, which is no flip.
    assert found["P3"].sensitivity.endswith("transition_threshold=0.999: n.a.") and not found["P3"].fragile


def test_p6_shows_its_interval_only_with_enough_distinct_resamples():
    from nht_jax.analysis.fits import LineFit
    from nht_jax.analysis.predictions import PredictionOptions, delay_scaling

    def fit(clusters):
        return LineFit(
            "power_law_lambda",
            "log λ",
            "log delay",
            (),
            "ok",
            slope=-1.31,
            r2=0.95,
            slope_ci=(-1.5, -1.23),
            resampled="seeds",
            runs=(0, 1, 2, 3),
            clusters=clusters,
        )

    two = delay_scaling([fit(2)], PredictionOptions())
    assert "ν = 1.31 [n.a.: 3 distinct resamples over 2 seeds, < 40], R² = 0.95" in two.number
    five = delay_scaling([fit(5)], PredictionOptions())
    assert "ν = 1.31 [1.23, 1.5] (126 distinct resamples over 5 seeds)" in five.number
    assert fit(5).as_row()["distinct_resamples"] == 126 and fit(2).as_row()["clusters"] == 2


def test_a_delay_fit_counts_the_seeds_it_resamples_or_its_runs_with_one_seed():
    from nht_jax.analysis.fits import FitOptions, delay_fit, table_from_arrays

    lam = np.array([0.1, 0.2, 0.4] * 2)
    delay = 100.0 / lam

    def fitted(seed):
        table = table_from_arrays(
            {"weight_decay": lam, "seed": seed}, ["intermediate"] * 6, np.full(6, 100.0), 100.0 + delay
        )
        return delay_fit(table, "power_law_lambda", FitOptions(n_bootstrap=20))

    two = fitted(np.array([0, 0, 0, 1, 1, 1]))
    assert (two.resampled, two.clusters, two.distinct_resamples) == ("seeds", 2, 3)
    one = fitted(np.zeros(6))
    assert (one.resampled, one.clusters, one.distinct_resamples) == ("runs (one seed)", 6, 462)


def test_fit_threshold_alternatives_follow_the_fits_own_direction():
    """T_fit crossed from below ("below", 0.5) while T_transition is an accuracy: the fit's alternatives are ×0.8 and
    ×1.2 of 0.5 (0.4, 0.6), not the accuracies'; the other way round, an accuracy fit at 0.99 keeps 0.95 / 0.999
    while the transition (a reliance at 0.5) gets 0.4 / 0.6."""
    falling_fit = experiment.AnalysisConfig(fit_direction="below", fit_threshold=0.5)
    assert sensitivity.default_alternatives(falling_fit) == (
        "transition_threshold=0.95",
        "transition_threshold=0.999",
        "transition_persists=true",
        "fit_threshold=0.4",
        "fit_threshold=0.6",
    )
    falling_transition = experiment.AnalysisConfig(transition_direction="below", transition_threshold=0.5)
    assert sensitivity.default_alternatives(falling_transition) == (
        "transition_threshold=0.4",
        "transition_threshold=0.6",
        "transition_persists=true",
        "fit_threshold=0.95",
        "fit_threshold=0.999",
    )


def test_nearby_thresholds_of_an_accuracy_are_the_other_accuracies_else_five_points_inside_zero_to_one():
    """0.99 → 0.95 / 0.999 (and 0.95 → 0.99 / 0.999); 0.9 → 0.85 / 0.95; 0.97: 1.02 leaves (0, 1); 0.05: 0 is not
    inside; from above (a reliance, a loss) ×0.8 and ×1.2, to six digits."""
    near = sensitivity.nearby_thresholds
    assert near(0.99, "above") == (0.95, 0.999) and near(0.95, "above") == (0.99, 0.999)
    assert near(0.999, "above") == (0.95, 0.99)
    assert near(0.9, "above") == (0.85, 0.95)
    assert near(0.97, "above") == (0.92,)
    assert near(0.05, "above") == (0.1,)
    assert near(0.5, "below") == (0.4, 0.6) and near(1 / 3, "below") == (0.266667, 0.4)
    assert near(2.0, "below") == (1.6, 2.4)


def test_nearby_thresholds_round_to_six_digits_and_stay_strictly_below_one():
    """1/7 from above: (1/7)·0.8 = 0.1142857… and (1/7)·1.2 = 0.1714285… to six digits; 0.123456789 ∓ 0.05 =
    0.073456789 and 0.173456789 → 0.073457 and 0.173457; 1.05 − 0.05 = 1 (in floating point too) is not inside (0, 1),
    so a threshold of 1.05 has no alternative."""
    near = sensitivity.nearby_thresholds
    assert near(1 / 7, "below") == (0.114286, 0.171429)
    assert near(0.123456789, "above") == (0.073457, 0.173457)
    assert near(1.05, "above") == ()


def test_an_alternative_with_a_second_equals_sign_is_a_bad_value_of_its_key():
    """ "fit_threshold=x=1": the key is what precedes the first "=", so the value "x=1" is refused as not a number."""
    with pytest.raises(ConfigError, match="^fit_threshold takes a number, got 'x=1'$"):
        sensitivity.parse_alternative("fit_threshold=x=1")
    with pytest.raises(ConfigError, match="^transition_persists takes true or false, got 'yes'$"):
        sensitivity.parse_alternative("transition_persists=yes")


def test_an_alternative_changes_exactly_its_definition():
    rule = experiment.AnalysisConfig()
    changed = sensitivity.with_definition(rule, "fit_threshold=1")
    assert changed.fit_threshold == 1.0 and isinstance(changed.fit_threshold, float)
    assert changed == experiment.AnalysisConfig(fit_threshold=1.0)
    persists = sensitivity.with_definition(rule, " transition_persists = true ")
    assert persists.transition_persists is True and persists == experiment.AnalysisConfig(transition_persists=True)


def test_an_alternative_analysis_drops_only_the_bootstrap():
    from nht_jax.analysis.fits import FitOptions
    from nht_jax.analysis.predictions import PredictionOptions

    fits = FitOptions(n_bootstrap=200)
    assert sensitivity.without_bootstrap(fits) == FitOptions(n_bootstrap=0)
    assert sensitivity.without_bootstrap(PredictionOptions()) == PredictionOptions()


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["✓", "✗", "n.a."]), st.lists(st.sampled_from(["✓", "✗", "n.a."]), max_size=5))
def test_a_verdict_flips_exactly_when_it_was_decided_and_an_alternative_is_its_opposite(default, others):
    opposite = {"✓": "✗", "✗": "✓"}.get(default)
    assert sensitivity.flips(default, others, "✓", "✗") == (opposite is not None and opposite in others)
