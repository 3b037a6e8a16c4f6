"""The early-warning scores (nht_jax.analysis.early_warning): each rule on constructed series with a known firing
step; lead times, misses and false alarms on a planted results folder written by the sweep's own writers; the
paired head-vs-total comparison and its verdict; folders without head norms or without a transitioning run."""

import csv
import io

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.analysis import early_warning as ew
from nht_jax.analysis.analyze import options_from
from nht_jax.analysis.early_warning import EarlyWarningOptions
from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.results.folder import load_results

from .conftest import write_results_folder

STEPS = np.arange(0, 2001, 50, dtype=np.float64)
T_FIT = 200.0
NEVER = np.nan

# The plan, one entry per run (seed): its regime's ingredients and the step at which each planted series drops by
# 30 % (total and head norm) or the gradient norm grows five-fold; NaN = never.
PLAN = [  # (fits, T_transition, total drop, head drop, grad rise, diverges)
    (True, 1000.0, 600.0, 400.0, 1200.0, False),  # intermediate: total lead 400, head lead 600
    (True, 1500.0, 1000.0, 700.0, 1400.0, False),  # intermediate: total 500, head 800
    (True, 800.0, 900.0, 500.0, NEVER, False),  # intermediate: total fires late (−100), head 300
    (True, 1200.0, NEVER, 1000.0, 1100.0, False),  # intermediate: total never, head 200
    (True, NEVER, 1500.0, NEVER, NEVER, False),  # weak: a total-norm false alarm
    (True, NEVER, NEVER, NEVER, NEVER, False),  # weak: quiet
    (False, NEVER, NEVER, NEVER, NEVER, False),  # strong: never fits
    (True, 900.0, 500.0, 500.0, NEVER, True),  # diverged at the last log
]


def config_of(n_runs):
    return experiment.from_dict(
        {
            "name": "early-warning-planted",
            "task": {"name": "modular", "p": 31},
            "model": {"name": "mlp", "hidden": [32]},
            "optim": {"name": "adamw"},
            "train": {"steps": int(STEPS[-1]), "log_every": 50},
            "grid": {"weight_decay": 0.1, "learning_rate": 1e-3, "train_fraction": 0.5, "seed": list(range(n_runs))},
        }
    )


def step_down(at, high=100.0, low=70.0):
    """high (rising from half of it to T_fit), then low from `at` on (never for NaN)."""
    rising = np.minimum(0.5 + 0.5 * STEPS / T_FIT, 1.0) * high
    return np.where(STEPS >= at, low, rising) if np.isfinite(at) else rising


def write_planted(out, plan=PLAN, head_norms=True):
    """A results folder in the sweep's format (summary by nht_jax.measure.summaries) following `plan`."""
    config = config_of(len(plan))
    runs = config.runs()
    rows = [dict(zip(("fits", "t_tr", "total", "head", "grad", "diverges"), p)) for p in plan]
    train = np.array([(STEPS >= T_FIT) if r["fits"] else np.zeros_like(STEPS) for r in rows], float)
    test = np.array([(STEPS >= r["t_tr"]) if np.isfinite(r["t_tr"]) else np.zeros_like(STEPS) for r in rows], float)
    finite = np.array([(STEPS < STEPS[-1]) if r["diverges"] else np.ones_like(STEPS) for r in rows], float)
    norm = np.array([step_down(r["total"]) for r in rows])
    head = np.array([step_down(r["head"], 40.0, 28.0) for r in rows])
    grad = np.array(
        [
            np.where(STEPS >= r["grad"], 5e-3, 1e-3) if np.isfinite(r["grad"]) else np.full_like(STEPS, 1e-3)
            for r in rows
        ]
    )
    ones = np.ones_like(train)
    metrics = {
        "norm_sq": norm,
        "weight_norm_sq": norm,
        "train_acc": train,
        "test_acc": test,
        "train_loss": 1.01 - train,
        "test_loss": 1.01 - test,
        "grad_norm": grad,
        "logit_scale": 3 * ones,
        "finite": finite,
    }
    if head_norms:
        metrics.update({"head_norm_sq": head, "layer_norm_sq/head": head, "layer_norm_sq/embed": 20 * ones})
    write_results_folder(out, STEPS, metrics, runs, config)
    return out


@pytest.fixture
def planted(tmp_path):
    return write_planted(tmp_path / "planted")


def scores_of(report):
    return {s.signal: s for s in report.scores}


# ----------------------------------------------------------------------------- the rules


def test_drop_fires_at_the_first_log_more_than_f_below_the_running_maximum():
    steps = np.arange(6) * 10.0
    values = [1.0, 2.0, 3.0, 2.8, 2.7, 2.6]  # 2.7 = exactly (1 − 0.1)·3: not *more* than f below
    assert ew.drop_step(steps, values, 0, 0.1) == 50.0
    assert ew.drop_step(steps, values, 0, 0.05) == 30.0
    assert np.isnan(ew.drop_step(steps, values, 0, 0.5))
    assert np.isnan(ew.drop_step(steps, [1, 2, 3, 4, 5, 6], 0, 0.1))  # still rising: never


def test_drop_reads_from_its_start_and_skips_non_finite_logs():
    steps = np.arange(6) * 10.0
    fell_before_fit = [1.0, 10.0, 8.0, 8.0, 8.0, 8.0]
    assert ew.drop_step(steps, fell_before_fit, -np.inf, 0.1) == 20.0  # start "init": from the first log
    assert np.isnan(ew.drop_step(steps, fell_before_fit, 20.0, 0.1))  # start at T_fit = 20: flat after it
    assert ew.drop_step(steps, [np.nan, 5.0, np.nan, 4.0, 6.0, 5.0], 0, 0.1) == 30.0
    assert np.isnan(ew.drop_step(steps, [np.nan] * 6, 0, 0.1))


def test_rise_fires_at_the_first_log_more_than_g_above_the_running_minimum():
    steps = np.arange(6) * 10.0
    values = [5.0, 1.0, 1.5, 2.0, 2.1, 9.0]  # 2.0 = exactly (1 + 1)·1: not *more*
    assert ew.rise_step(steps, values, 0, 1.0) == 40.0
    assert ew.rise_step(steps, values, 0, 0.4) == 20.0
    assert ew.rise_step(steps, values, 30.0, 1.0) == 50.0  # from step 30 the minimum is 2.0
    assert np.isnan(ew.rise_step(steps, [5, 4, 3, 2, 1, 0.5], 0, 1.0))


# ----------------------------------------------------------------------------- the scores on a planted folder


def test_planted_lead_times_misses_and_false_alarms(planted):
    report = ew.early_warning_report(load_results(planted), EarlyWarningOptions(n_bootstrap=200))
    s = scores_of(report)
    total, head = s["total_norm"], s["head_norm"]
    assert report.log_every == 50 and report.left_out == "strong 1, diverged 1"
    assert (total.n_transition, total.n_early, total.n_late, total.n_never) == (4, 2, 1, 1)
    assert total.lead.n == 3 and total.lead.median == 400.0  # leads 400, 500, −100: the late one counted
    assert total.miss_rate == 0.5 and (total.n_weak, total.n_false_alarm, total.false_alarm_rate) == (2, 1, 0.5)
    assert (head.n_early, head.n_late, head.n_never, head.miss_rate) == (4, 0, 0, 0.0)
    assert head.lead.median == 450.0 and head.lead.lo >= 200 and head.lead.hi <= 800  # 600, 800, 300, 200
    assert (head.n_false_alarm, head.false_alarm_rate) == (0, 0.0)
    ratio = s["head_first_ratio"]  # head / embed: falls with the head
    assert ratio.metric == "layer_norm_sq/head / layer_norm_sq/embed" and ratio.lead.median == 450.0
    grad = s["grad_norm"]  # rises at 1200, 1400, never, 1100: leads −200, 100, 100
    assert (grad.n_early, grad.n_late, grad.n_never) == (2, 1, 1) and grad.lead.median == 100.0
    assert s["logit_scale"].n_never == 4 and s["logit_scale"].miss_rate == 1.0
    assert s["fourier"].metric == "" and "not recorded" in s["fourier"].note
    rows = list(csv.DictReader(io.StringIO(report.csv())))
    assert [r["signal"] for r in rows] == list(ew.SIGNALS)
    assert rows[0]["lead_logs"] == "8" and rows[0]["log_every"] == "50" and rows[0]["n_fired"] == "3"
    runs = list(csv.DictReader(io.StringIO(ew.csv_text(report.run_rows()))))
    assert [r["fire_total_norm"] for r in runs[:6]] == ["600", "1000", "900", "", "1500", ""]
    assert runs[6]["fire_total_norm"] == runs[7]["fire_total_norm"] == ""  # strong and diverged: not read


def test_the_paired_head_vs_total_comparison_and_its_verdict(planted):
    report = ew.early_warning_report(load_results(planted), EarlyWarningOptions(n_bootstrap=200))
    p = report.paired
    assert p.delta.n == 3 and p.delta.median == 300.0 and p.delta.lo >= 200.0  # Δ = 200, 300, 400
    assert (p.n_head_earlier, p.n_tied, p.n_head_later) == (3, 0, 0)
    assert p.verdict == "for" and "log_every = 50" in p.reason
    assert "**for**" in report.markdown()


def test_verdict_words():
    def score(miss, alarm):
        return ew.SignalScore("s", "drop", "m", 4, 4, 0, 0, ew.Pooled(0, np.nan, np.nan, np.nan), miss, 4, 0, alarm, "")

    even = score(0.0, 0.0)
    tied = ew.paired_comparison([300, 200, 100], [300, 200, 100], even, even, 50)
    assert tied.verdict == "neither" and tied.reason.startswith("tied at log resolution") and tied.n_tied == 3
    later = ew.paired_comparison([100, 100, 100], [300, 250, 200], even, even, 50)
    assert later.verdict == "against" and "fires later" in later.reason
    mixed = ew.paired_comparison([300, 100, 200], [200, 200, 200], even, even, 50)
    assert mixed.verdict == "neither" and "contains 0" in mixed.reason
    worse = ew.paired_comparison([400, 400], [100, 100], score(0.5, 0.0), even, 50)
    assert worse.verdict == "against" and "more misses" in worse.reason
    alarms = ew.paired_comparison([400, 400], [100, 100], score(0.0, 0.5), even, 50)
    assert alarms.verdict == "against" and "more false alarms" in alarms.reason
    none = ew.paired_comparison([np.nan, 100], [100, np.nan], even, even, 50)
    assert none.verdict == "neither" and "no transitioning run where both fire" in none.reason


def test_a_folder_without_head_norms_says_so(tmp_path):
    report = ew.early_warning_report(
        load_results(write_planted(tmp_path / "headless", head_norms=False)), EarlyWarningOptions(n_bootstrap=50)
    )
    s = scores_of(report)
    assert "not recorded (needs head_norm_sq" in s["head_norm"].note and s["head_norm"].metric == ""
    assert "not recorded" in s["head_first_ratio"].note
    assert s["total_norm"].lead.median == 400.0
    assert report.paired.verdict == "neither" and "head_norm not recorded" in report.paired.reason
    rows = list(csv.DictReader(io.StringIO(report.csv())))
    assert rows[1]["lead_median"] == "" and rows[1]["miss_rate"] == ""


def test_a_folder_without_a_transitioning_run_says_so(tmp_path):
    plan = [p for p in PLAN if not np.isfinite(p[1])]  # weak and strong only
    folder = write_planted(tmp_path / "weak", plan)
    report = ew.early_warning_report(load_results(folder), EarlyWarningOptions(n_bootstrap=50))
    total = scores_of(report)["total_norm"]
    assert total.n_transition == 0 and total.note == "no transitioning run" and np.isnan(total.miss_rate)
    assert total.false_alarm_rate == 0.5
    assert report.paired.verdict == "neither" and "no transitioning run" in report.paired.reason
    ew.draw_figures(load_results(folder), report, folder)
    assert (folder / "early_warning.png").stat().st_size > 0


# ----------------------------------------------------------------------------- options and `nht analyze`


def test_options_are_checked():
    assert options_from(["early_warning.drop_fraction=0.2"]).early_warning.drop_fraction == 0.2
    with pytest.raises(ConfigError, match="unknown head_nrom; known: total_norm"):
        EarlyWarningOptions(signals=("head_nrom",))
    with pytest.raises(ConfigError, match="METRIC:RULE"):
        EarlyWarningOptions(extra=("null_norm_sq:fall",))
    with pytest.raises(ConfigError, match="drop_fraction must lie in"):
        EarlyWarningOptions(drop_fraction=1.5)
    with pytest.raises(ConfigError, match="weak_regimes must be a list of"):
        EarlyWarningOptions(weak_regimes=("feeble",))


def test_extra_signals_and_options_change_the_scores(planted):
    res = load_results(planted)
    report = ew.early_warning_report(
        res, EarlyWarningOptions(n_bootstrap=50, signals=("total_norm",), extra=("weight_norm_sq:drop",))
    )
    assert [s.signal for s in report.scores] == ["total_norm", "weight_norm_sq:drop"]
    assert report.scores[1].lead.median == report.scores[0].lead.median == 400.0
    assert report.paired.verdict == "neither" and "head_norm not scored" in report.paired.reason
    deep = ew.early_warning_report(res, EarlyWarningOptions(n_bootstrap=50, drop_fraction=0.5))
    assert scores_of(deep)["total_norm"].n_never == 4  # a 30 % drop is not more than 50 %


def test_nht_analyze_writes_the_table_the_runs_and_the_figure(planted, capsys):
    assert (
        main(
            [
                "analyze",
                str(planted),
                "--set",
                "early_warning.n_bootstrap=50",
                "--set",
                "fits.n_bootstrap=20",
                "--set",
                "separation.n_bootstrap=20",
                "--set",
                "layers.n_bootstrap=20",
                "--set",
                "predictor.n_bootstrap=20",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "early_warning.csv" in out and "early_warning.png" in out and "**for**" in out
    assert "## Early-warning signals" in (planted / "analysis.md").read_text()
    assert (planted / "early_warning.csv").read_text().splitlines()[1].startswith("total_norm,drop,norm_sq,50,4,3,400")
    assert (planted / "early_warning_runs.csv").exists() and (planted / "early_warning.png").stat().st_size > 0


# ----------------------------------------------------------------------------- issue 29: the edges


def test_a_signal_firing_on_the_transitions_own_log_counts_as_late(tmp_path):
    """Lead 0 (fired at the log where the transition is measured) is no warning: late, a miss, and its lead 0 is in
    the median. Run 0 fires at 1000 = its T; run 1 at 1000, 500 before its T."""
    plan = [(True, 1000.0, 1000.0, 400.0, NEVER, False), (True, 1500.0, 1000.0, 700.0, NEVER, False)]
    report = ew.early_warning_report(
        load_results(write_planted(tmp_path / "edge", plan)), EarlyWarningOptions(n_bootstrap=200)
    )
    total = scores_of(report)["total_norm"]
    assert (total.n_transition, total.n_early, total.n_late, total.n_never) == (2, 1, 1, 0)
    assert total.miss_rate == 0.5 and total.lead.n == 2 and total.lead.median == 250.0  # leads 0 and 500


@pytest.mark.parametrize("analysis", ["early_warning", "separation", "layers"])
def test_n_bootstrap_zero_means_no_interval(planted, analysis, capsys):
    """`n_bootstrap = 0` (documented as "no interval"): the analysis runs, its pooled medians have no interval
    (NaN, "–" in the report) and keep their value."""
    assert main(["analyze", str(planted), "--set", f"{analysis}.n_bootstrap=0"]) == 0, capsys.readouterr().err
    res = load_results(planted)
    with_interval = ew.early_warning_report(res, EarlyWarningOptions(n_bootstrap=200))
    without = ew.early_warning_report(res, EarlyWarningOptions(n_bootstrap=0))
    for a, b in zip(with_interval.scores, without.scores):
        assert a.lead.n == b.lead.n and np.isnan(b.lead.lo) and np.isnan(b.lead.hi)
        assert a.lead.median == b.lead.median or (np.isnan(a.lead.median) and np.isnan(b.lead.median))
    assert np.isnan(without.paired.delta.lo) and without.paired.delta.median == with_interval.paired.delta.median
