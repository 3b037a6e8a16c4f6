import numpy as np

import pytest

from nht_jax.experiment import AnalysisConfig
from nht_jax.measure.summaries import classify, first_step_crossing, regime_counts, summarize_run

STEPS = np.arange(0, 60, 10)


def run(train, test, norm, finite=None):
    metrics = {
        "train_acc": np.array(train, float),
        "test_acc": np.array(test, float),
        "norm_sq": np.array(norm, float),
        "train_loss": np.zeros(6),
        "test_loss": np.zeros(6),
        "head_norm_sq": np.array(norm, float) / 2,
        "finite": np.ones(6) if finite is None else np.array(finite, float),
    }
    return summarize_run(STEPS, metrics, AnalysisConfig(transition_metric="test_acc"), ("test_acc", "test_loss"))


def test_first_step_above():
    assert first_step_crossing(np.array([0, 0.5, 1, 1]), np.arange(4) * 10, 0.99, "above") == 20
    assert np.isnan(first_step_crossing(np.array([0, 0.5]), np.arange(2), 0.99, "above"))
    assert first_step_crossing(np.array([1, 0, 1]), np.arange(3), 0.99, "above", start=1) == 2


def test_intermediate_run():
    row = run([0, 1, 1, 1, 1, 1], [0, 0, 0, 0.5, 1, 1], [1, 5, 9, 6, 3, 2])
    assert row["regime"] == "intermediate"
    assert (row["T_fit"], row["T_transition"], row["delay"]) == (10, 40, 30)
    assert (row["norm_peak"], row["norm_peak_step"], row["norm_final"]) == (9, 20, 2)


def test_weak_and_strong_runs():
    assert run([0, 1, 1, 1, 1, 1], [0] * 6, [1, 2, 3, 4, 5, 6])["regime"] == "weak"
    strong = run([0, 0.2, 0.3, 0.3, 0.3, 0.3], [0, 0.2, 0.3, 0.3, 0.3, 0.3], [1, 1, 1, 1, 1, 1])
    assert strong["regime"] == "strong" and np.isnan(strong["T_transition"])


def test_test_accuracy_before_fit_does_not_count_as_transition():
    row = run([0, 0, 0, 1, 1, 1], [1, 0, 0, 0, 0, 1], [1] * 6)
    assert row["T_transition"] == 50


def test_diverged_run_is_flagged():
    row = run(
        [0, 1, np.nan, np.nan, np.nan, np.nan],
        [0] * 6,
        [1, 2, np.nan, np.nan, np.nan, np.nan],
        finite=[1, 1, 0, 0, 0, 0],
    )
    assert row["regime"] == "diverged" and row["diverged"] and row["diverged_step"] == 20


def test_norm_rule():
    rule = AnalysisConfig(regime_rule="norm", norm_decay_fraction=0.1)
    assert classify(10.0, float("nan"), np.array([1, 10, 8.5]), False, rule) == "intermediate"
    assert classify(10.0, 20.0, np.array([1, 10, 9.5]), False, rule) == "weak"
    assert classify(float("nan"), float("nan"), np.array([1, 10, 1]), False, rule) == "strong"


def test_structured_when_the_transition_holds_at_fit():
    row = run([0, 0.5, 1, 1, 1, 1], [0, 0.5, 1, 1, 1, 1], [1, 2, 3, 3, 3, 3])
    assert row["regime"] == "structured" and row["delay"] == 0 and row["T_fit"] == row["T_transition"] == 20


def test_transition_below_a_threshold_on_another_metric():
    rule = AnalysisConfig(
        transition_metric="shortcut_reliance",
        transition_direction="below",
        transition_threshold=0.5,
        fit_threshold=0.99,
    )
    final = ("shortcut_reliance",)
    base = {
        "train_acc": np.array([0, 1, 1, 1, 1, 1.0]),
        "test_acc": np.zeros(6),
        "norm_sq": np.ones(6),
        "train_loss": np.zeros(6),
        "test_loss": np.zeros(6),
        "finite": np.ones(6),
    }
    late = summarize_run(STEPS, {**base, "shortcut_reliance": np.array([0.1, 1, 0.9, 0.6, 0.5, 0.2])}, rule, final)
    assert (late["regime"], late["T_transition"]) == ("intermediate", 40)
    never = summarize_run(STEPS, {**base, "shortcut_reliance": np.array([0.1, 1, 1, 1, 0.8, 0.7])}, rule, final)
    assert never["regime"] == "weak" and np.isnan(never["T_transition"])
    direct = summarize_run(STEPS, {**base, "shortcut_reliance": np.array([0.1, 0.2, 0.3, 0.2, 0.1, 0.1])}, rule, final)
    assert direct["regime"] == "structured" and direct["final_shortcut_reliance"] == 0.1


def test_a_momentary_crossing_does_not_count_when_the_transition_must_persist():
    values = np.array([1.0, 0.4, 0.9, 0.45, 0.3, 0.2])
    assert first_step_crossing(values, STEPS, 0.5, "below") == 10
    assert first_step_crossing(values, STEPS, 0.5, "below", persist=True) == 30
    assert np.isnan(first_step_crossing(np.array([1, 0.4, 0.9, 0.4, 0.3, 0.9]), STEPS, 0.5, "below", persist=True))
    assert first_step_crossing(np.array([0, 1, 0, 1, 1, 1.0]), STEPS, 0.99, "above", persist=True, start=20) == 30


def test_the_summary_applies_the_persistence_rule():
    """A momentary crossing of a noisy metric: counted without the rule, ignored with it (through summarize_run)."""
    base = {
        "train_acc": np.array([0, 1, 1, 1, 1, 1.0]),
        "test_acc": np.array([0, 0.2, 1.0, 0.3, 0.995, 1.0]),
        "norm_sq": np.ones(6),
        "train_loss": np.zeros(6),
        "finite": np.ones(6),
    }
    momentary = summarize_run(STEPS, base, AnalysisConfig(transition_metric="test_acc"))
    assert (momentary["regime"], momentary["T_transition"]) == ("intermediate", 20)
    persisting = summarize_run(STEPS, base, AnalysisConfig(transition_metric="test_acc", transition_persists=True))
    assert (persisting["regime"], persisting["T_transition"], persisting["delay"]) == ("intermediate", 40, 30)
    never = {**base, "test_acc": np.array([0, 0.2, 1.0, 1.0, 1.0, 0.5])}
    assert np.isnan(
        summarize_run(STEPS, never, AnalysisConfig(transition_metric="test_acc", transition_persists=True))[
            "T_transition"
        ]
    )


@pytest.mark.parametrize("value,fits", [(0.99, True), (np.nextafter(0.99, 0), False)])
def test_values_exactly_at_a_threshold_count(value, fits):
    """≥ for fitting and for an "above" transition, ≤ for "below": a value equal to the threshold counts."""
    row = run([0, value, value, value, value, value], [0, 0, 0, value, value, value], [1] * 6)
    assert (row["T_fit"] == 10) == fits and (row["T_transition"] == 30) == fits
    assert first_step_crossing(np.array([0.7, 0.5, 0.4]), np.arange(3), 0.5, "below") == 1


def test_the_norm_rule_end_to_end_through_the_summary():
    rule = AnalysisConfig(regime_rule="norm", norm_decay_fraction=0.1, transition_metric="test_acc")
    base = {
        "train_acc": np.array([0, 1, 1, 1, 1, 1.0]),
        "test_acc": np.zeros(6),
        "train_loss": np.zeros(6),
        "finite": np.ones(6),
    }
    falls = summarize_run(STEPS, {**base, "norm_sq": np.array([1, 5, 10, 9.5, 8.9, 8.95])}, rule)
    assert falls["regime"] == "intermediate" and falls["norm_peak_step"] == 20 and falls["norm_final"] == 8.95
    barely = summarize_run(STEPS, {**base, "norm_sq": np.array([1, 5, 10, 9.5, 9.0, 9.2])}, rule)
    assert barely["regime"] == "weak"  # falls by exactly 10 % of the peak: not more than the fraction
    grows = summarize_run(STEPS, {**base, "norm_sq": np.arange(1, 7.0)}, rule)
    assert grows["regime"] == "weak"
    never_fits = summarize_run(
        STEPS, {**base, "train_acc": np.zeros(6), "norm_sq": np.array([1, 9, 2, 1, 1, 1.0])}, rule
    )
    assert never_fits["regime"] == "strong"
    assert regime_counts([falls, barely, grows, never_fits]) == {
        "weak": 2,
        "intermediate": 1,
        "structured": 0,
        "strong": 1,
        "diverged": 0,
    }


def test_the_norm_rule_counts_a_fall_past_the_threshold_even_when_the_norm_grows_back():
    rule = AnalysisConfig(regime_rule="norm", norm_decay_fraction=0.1, transition_metric="test_acc")
    base = {
        "train_acc": np.array([0, 1, 1, 1, 1, 1.0]),
        "test_acc": np.zeros(6),
        "train_loss": np.zeros(6),
        "finite": np.ones(6),
    }
    back = summarize_run(STEPS, {**base, "norm_sq": np.array([1, 5, 10, 5, 8, 9.9])}, rule)
    assert back["regime"] == "intermediate" and back["norm_peak_step"] == 20 and back["norm_final"] == 9.9
    # grown back past the old peak: the peak is the last log, nothing falls after it
    past = summarize_run(STEPS, {**base, "norm_sq": np.array([1, 5, 10, 5, 8, 12.0])}, rule)
    assert past["regime"] == "weak" and past["norm_peak_step"] == 50


def test_a_non_finite_loss_with_finite_parameters_is_diverged():
    row = run([0, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1], [1, 2, 3, 3, 3, 3], finite=[1, 1, 1, 0, 0, 0])
    assert row["regime"] == "diverged" and row["diverged"] and row["diverged_step"] == 30
    assert np.isfinite(row["norm_final"])  # the parameters stayed finite; the flag alone decides


def test_a_run_diverged_from_its_start_has_no_norm_peak():
    row = run([0] * 6, [0] * 6, [np.inf] * 6, finite=[0] * 6)
    assert row["regime"] == "diverged" and row["diverged_step"] == 0
    assert np.isnan(row["norm_peak"]) and np.isnan(row["norm_peak_step"])  # not -inf at step 0
