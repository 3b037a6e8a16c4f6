"""Logging schedules (`train.log_schedule`, nht_jax.config.schedule): the steps a two-segment schedule logs, its
metrics bit for bit those of a uniform run at the steps both log (evaluation never touches training), chunks that
never cross a segment, a kill in the middle of the fine segment resumed to the uninterrupted sweep, the TOML forms
and the digest, and bad schedules refused with the fix."""

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.engine.executor import run_grid
from nht_jax.config.schedule import LogSchedule, LogSegment
from nht_jax.experiment import load
from nht_jax.results import folder as results
from nht_jax.training import sweep

SMALL = ["train.steps=80", "train.log_every=20", "model.hidden=[16]", "grid.weight_decay=[0.01, 1.0]", "grid.seed=[0]"]
TWO = "train.log_schedule=[[40, 5], [80, 20]]"
EXPECTED = [0, 5, 10, 15, 20, 25, 30, 35, 40, 60, 80]


def config(*extra):
    return load("tiny", [*SMALL, *extra])


def test_a_two_segment_schedule_logs_exactly_its_steps():
    s = LogSchedule((LogSegment(40, 5), LogSegment(80, 20)))
    assert s.steps.tolist() == EXPECTED and s.num_logs == 10 and s.intervals.tolist() == [5] * 8 + [20] * 2
    assert s.pieces(0, 10) == [(8, 5), (2, 20)] and s.pieces(6, 3) == [(2, 5), (1, 20)] and s.pieces(8, 2) == [(2, 20)]
    assert s.segment_at(0) == (8, 5) and s.segment_at(7) == (1, 5) and s.segment_at(8) == (2, 20)
    assert s.segment_at(10) == (0, 0)
    assert s.log_spaced and not s.is_uniform and not LogSchedule.uniform(80, 10).log_spaced
    assert s.describe() == "every 5 steps to step 40, then every 20 to step 80"
    assert LogSchedule.uniform(300, 50).steps.tolist() == list(range(0, 301, 50))
    assert not LogSchedule((LogSegment(40, 20), LogSegment(80, 5))).log_spaced  # intervals shrink


def test_metrics_at_common_steps_are_those_of_the_uniform_run():
    scheduled, uniform = config(TWO), config("train.log_every=5")
    a = run_grid(experiment.build_trainer(scheduled), scheduled.runs())
    b = run_grid(experiment.build_trainer(uniform), uniform.runs())
    common = np.isin(np.arange(0, 81, 5), EXPECTED)
    assert a["norm_sq"].shape == (2, len(EXPECTED)) and common.sum() == len(EXPECTED)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name][:, common], err_msg=name)


def test_chunks_stay_in_a_segment_and_a_kill_in_the_fine_segment_resumes_exactly(
    tmp_path, monkeypatch, advances, capsys
):
    settings = (TWO, "execution.chunk_logs=3", "execution.checkpoint_every_s=0")
    counter = advances()
    reference = sweep.run_sweep(config(*settings), tmp_path / "ref", progress=False)
    assert counter.sizes == [3, 3, 2, 2]  # 8 logs of 5 steps in chunks of ≤ 3, then the 2 logs of 20 steps
    assert reference.steps.tolist() == EXPECTED
    assert results.load_results(tmp_path / "ref").steps.tolist() == EXPECTED  # trajectories.npz passes its check
    started = (tmp_path / "ref" / "progress.log").read_text()
    assert "log every 5 steps to step 40, then every 20 to step 80" in started and "step 40/80" in started

    out = tmp_path / "killed"
    killer = advances(die_on=2)  # the second call dies: killed at step 15, in the middle of the fine segment
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(config(*settings), out, progress=False)
    monkeypatch.undo()
    assert killer.sizes == [3]
    logs_done, _, saved = results.load_checkpoint(out / "checkpoint.npz", reference.meta["config_digest"])
    assert logs_done == 3 and saved["norm_sq"].shape == (2, 4)
    capsys.readouterr()
    counter = advances()
    resumed = sweep.run_sweep(config(*settings), out, progress=False)
    assert counter.sizes == [3, 2, 2] and "at step 15 of 80" in capsys.readouterr().out
    for name in reference.metrics:
        np.testing.assert_array_equal(resumed.metrics[name], reference.metrics[name], err_msg=name)
    np.testing.assert_equal(
        [r["norm_peak_step"] for r in resumed.summary], [r["norm_peak_step"] for r in reference.summary]
    )


def test_both_toml_forms_and_the_digest():
    pairs = config(TWO)
    tables = config("train.log_schedule=[{until = 40, every = 5}, {until = 80, every = 20}]")
    assert pairs == tables and pairs.train.log_schedule == (LogSegment(40, 5), LogSegment(80, 20))
    assert experiment.from_dict(experiment.to_dict(pairs)) == pairs
    assert experiment.to_dict(pairs)["train"]["log_schedule"] == [{"until": 40, "every": 5}, {"until": 80, "every": 20}]
    plain = config()
    assert "log_schedule" not in experiment.to_dict(plain)["train"]  # at its default: out of config.toml
    assert experiment.digest(config("train.log_schedule=[]")) == experiment.digest(plain)
    assert experiment.digest(pairs) != experiment.digest(plain)
    # with a schedule, train.log_every is not used: it need not divide the budget
    assert config(TWO, "train.log_every=7").train.log_schedule == pairs.train.log_schedule


def test_snapshot_steps_are_the_schedule_s_logged_steps():
    assert config(TWO, "execution.snapshot_steps=[15, 60]").execution.snapshot_steps == (15, 60)
    with pytest.raises(ConfigError, match="not logged steps; choose steps train.log_schedule logs"):
        config(TWO, "execution.snapshot_steps=[50]")


@pytest.mark.parametrize(
    "schedule, message",
    [
        (
            "[[40, 5], [40, 20]]",
            "segment 2 ends at step 40, not after the previous end .40.; list the segments in "
            "increasing order of until",
        ),
        (
            "[[42, 5], [80, 19]]",
            r"segment 1 covers steps 0–42 \(42 steps\), not a multiple of its every = 5; make until − "
            r"previous until a multiple of every \(e.g. until = 40\)",
        ),
        ("[[40, 5], [60, 20]]", r"ends at step 60, but train.steps = 80; make the last segment's until = 80"),
        ("[[40, 0], [80, 20]]", "has every = 0; an interval is at least 1 step"),
        ("[40, 5]", r"each segment is \[until, every\] or \{until = N, every = K\}, got 40"),
        ("[{until = 80}]", "a segment table has exactly the keys until and every"),
        ("[[40.5, 5], [80, 20]]", "whole numbers of steps"),
    ],
)
def test_bad_schedules_are_refused_with_the_fix(schedule, message):
    with pytest.raises(ConfigError, match=message):
        config(f"train.log_schedule={schedule}")
