"""Finished runs stop costing: on the exactly solvable toy (transition times in closed form) runs stop
stop_margin_steps after T_transition or at divergence; the runs that continue equal an uninterrupted sweep's bit for
bit, the stopped ones equal it up to their stop and hold their value after; re-packing, run slices and a kill and
resume change nothing; the padding leaves the analysis unchanged; the rule enters the digest."""

import dataclasses
import math

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.measure import stopping
from nht_jax.measure import summaries
from nht_jax.training import sweep
from nht_jax.theory.toy_models import null_transition_time

# 3 λ × 3 η = 9 runs: η = 1 diverges at once, (λ, η) = (0.02, 0.3), (0.01, 0.3), (0.02, 0.1) transition at steps
# 191, 383, 575 (logged at 200, 390, 580), the others not within 800 steps.
SETTINGS = [
    "train.steps=800",
    "train.log_every=10",
    "execution.chunk_logs=2",
    "execution.strategy=map",
    "grid.weight_decay=[0.02, 0.01, 1e-4]",
    "grid.learning_rate=[0.1, 0.3, 1.0]",
]
STOP = ["stop.rule=transition_or_diverged", "stop.margin_steps=100"]


def config(*extra):
    return experiment.load("toy-linear", [*SETTINGS, *extra])


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    return sweep.run_sweep(config(), tmp_path_factory.mktemp("ref") / "ref", progress=False)


@pytest.fixture(scope="module")
def stopped(tmp_path_factory, advance_spy):
    mp = pytest.MonkeyPatch()
    calls = advance_spy(mp)
    res = sweep.run_sweep(config(*STOP), tmp_path_factory.mktemp("stop") / "stop", progress=False)
    mp.undo()
    return res, calls


def expected_stops(res):
    """stopped_step from the closed form: T logged at the next multiple of log_every, plus the margin; divergence at
    the uninterrupted run's diverged_step."""
    out = []
    for row in res.summary:
        t = null_transition_time(row["learning_rate"], row["weight_decay"], 0.01)[1]
        if row["learning_rate"] == 1.0:
            out.append(np.nan)  # filled from the uninterrupted run below
        else:
            stop = math.ceil(t / 10) * 10 + 100
            out.append(float(stop) if stop < 800 else np.nan)
    return np.array(out)


def test_runs_stop_after_their_transition_and_the_rest_is_unchanged(uninterrupted, stopped):
    res, calls = stopped
    expected = expected_stops(res)
    diverged = np.array([row["diverged"] for row in uninterrupted.summary])
    assert diverged.sum() == 3
    expected[diverged] = [row["diverged_step"] for row in uninterrupted.summary if row["diverged"]]
    np.testing.assert_array_equal(res.stopped_step, expected)
    assert np.isfinite(res.stopped_step).sum() == 6
    np.testing.assert_array_equal(np.sort(res.stopped_step[~diverged & np.isfinite(res.stopped_step)]), [300, 490, 680])
    steps = res.steps
    for i, stop in enumerate(res.stopped_step):
        for name, values in uninterrupted.metrics.items():
            if np.isnan(stop):  # trained the whole budget: exactly the uninterrupted run
                np.testing.assert_array_equal(res.metrics[name][i], values[i], err_msg=f"{name} run {i}")
            else:
                j = int(np.searchsorted(steps, stop))
                np.testing.assert_array_equal(res.metrics[name][i, : j + 1], values[i, : j + 1], err_msg=name)
                np.testing.assert_array_equal(
                    res.metrics[name][i, j:],
                    np.full(len(steps) - j, values[i, j]),
                    err_msg=f"{name} run {i} is held after its stop",
                )
    for row, ref in zip(res.summary, uninterrupted.summary):  # the analysis of the padded runs is unchanged
        for key in ("regime", "T_fit", "T_transition", "diverged", "diverged_step", "norm_peak", "norm_peak_step"):
            assert row[key] == ref[key] or (row[key] != row[key] and ref[key] != ref[key]), key
    assert [row["stopped_step"] for row in res.summary][1] == 300
    assert res.meta["runs_stopped"] == 6
    # Stops are noticed at chunk boundaries (every 20 steps): divergence (step 30) at 40, the others at 300, 500, 680.
    # Run·logs computed: 9 × 4 + 8 × 26 + 8 × 20 + 4 × 18 + 4 × 12 = 524 of the full grid's 9 × 80 = 720.
    assert calls.run_logs == 524
    assert {c.padded for c in calls.calls} == {9, 8, 4}  # 9 → 6 left (8), 5 left (8), 4 left (4), 3 left (4)
    text = (res.path / "progress.log").read_text()
    assert "stop rule (transition_or_diverged) after step 300: run 1 at step 300; 5 run(s) still training" in text
    assert "runs stop 100 steps after T_transition or at divergence" in text.splitlines()[0]


def test_run_slices_and_a_kill_change_nothing(tmp_path, monkeypatch, stopped, advances):
    res, _ = stopped
    out = tmp_path / "killed"
    from nht_jax.engine import memory  # a cap of one run's estimate: one run per run slice (below it is refused)

    c = config(*STOP)
    one = memory.estimate(
        experiment.build_trainer(c),
        c.runs(),
        c.domain.load_data(c),
        c.execution,
        c.train.steps // c.train.log_every + 1,
    ).bytes_for(1)
    settings = [*STOP, f"execution.memory_cap_gib={one / memory.GIB!r}", "execution.checkpoint_every_s=0"]
    advances(die_on=60)
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(config(*settings), out, progress=False)
    monkeypatch.undo()
    assert (out / "checkpoint.npz").exists()
    again = sweep.run_sweep(config(*settings), out, progress=False)
    assert again.meta["run_slices"] == 9
    np.testing.assert_array_equal(again.stopped_step, res.stopped_step)
    for name, values in res.metrics.items():
        np.testing.assert_array_equal(again.metrics[name], values, err_msg=name)


def test_a_kill_after_some_runs_stopped_resumes_with_them_stopped(tmp_path, monkeypatch, stopped, advances):
    res, _ = stopped
    out = tmp_path / "killed"
    advances(die_on=20)  # at step 380: after the stop at step 300, before the one at 490
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(config(*STOP, "execution.checkpoint_every_s=0"), out, progress=False)
    monkeypatch.undo()
    calls = advances()
    again = sweep.run_sweep(config(*STOP), out, progress=False)
    assert calls.calls[0] == (5, 8, 2)  # 5 runs left, in a program of 8
    np.testing.assert_array_equal(again.stopped_step, res.stopped_step)
    for name, values in res.metrics.items():
        np.testing.assert_array_equal(again.metrics[name], values, err_msg=name)


def test_the_stop_rule_enters_the_digest_only_when_set():
    plain = config()
    assert stopping.results_digest(plain) == experiment.digest(plain)
    assert stopping.results_digest(config("execution.strategy=vmap")) == experiment.digest(plain)
    digests = {
        stopping.results_digest(config(*extra))
        for extra in (
            [],
            ["stop.rule=transition"],
            ["stop.rule=transition", "stop.margin_steps=10"],
            ["stop.rule=diverged"],
        )
    }
    assert len(digests) == 4
    with pytest.raises(experiment.ConfigError, match="stop.margin_steps must be ≥ 0"):
        config("stop.margin_steps=-1")


def trajectory(excess):
    n = len(excess)
    return {
        "finite": np.ones(n),
        "norm_sq": np.linspace(5, 1, n),
        "relative_train_loss": np.zeros(n),
        "excess_fraction": np.asarray(excess, float),
    }


def test_persisting_transitions_must_hold_for_the_margin():
    steps = np.arange(0, 100, 10)
    excess = [1, 0.005, 1, 1, 0.005, 0.005, 0.005, 0.005, 0.005, 0.005]  # dips at 10, holds from 40
    rule = config().analysis
    assert rule.transition_direction == "below" and rule.transition_threshold == 0.01
    stop = config("stop.rule=transition", "stop.margin_steps=25").stop
    first = stopping.StopRule(stop, rule)
    assert first.stop_log(steps, trajectory(excess), 0) == 4  # T = 10, stop at the first log ≥ 35
    persist = stopping.StopRule(stop, dataclasses.replace(rule, transition_persists=True))
    assert persist.stop_log(steps, trajectory(excess), 0) == 7  # T = 40 (the dip at 10 did not last): 65 → 70
    assert persist.stop_log(steps[:7], trajectory(excess[:7]), 0) is None  # not yet held for 25 steps
    broken = excess[:8] + [1, 1]  # holds from 40 to 70, then not: checked log by log, the run stopped at 70
    assert persist.stop_log(steps, trajectory(broken), 5) == 7
    assert stopping.StopRule(config().stop, rule).active is False


def test_held_padding_reads_as_the_cut_trajectory():
    steps = np.arange(0, 100, 10)
    values = trajectory([1, 0.5, 0.2, 0.005, 0.004, 0.003, 0.5, 0.8, 0.9, 1.0])
    values["norm_sq"] = np.array([1, 3, 6, 4, 2, 1.5, 9, 9, 9, 9.0])
    cut = {k: v[:6] for k, v in values.items()}
    padded = {k: v.copy() for k, v in values.items()}
    for v in padded.values():
        stopping.hold_after(v, 5)
    rule = config().analysis
    whole, short = summaries.summarize_run(steps, padded, rule), summaries.summarize_run(steps[:6], cut, rule)
    assert whole.keys() == short.keys()
    for key in whole:
        assert whole[key] == short[key] or (whole[key] != whole[key] and short[key] != short[key]), key
