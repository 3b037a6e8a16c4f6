"""Chunks sized by the clock (`ChunkSizer`, checked on simulated timings: no timing assertions) give the same
metrics bit for bit as one log interval per call; DIR/progress.log has one line per chunk with its fields, a
"stopped" line when killed and a "resumed at step" line on resume."""

import re

import numpy as np
import pytest

from nht_jax.config.sections import ExecutionConfig
from nht_jax.training import sweep
from nht_jax.training.chunks import ChunkSizer


def simulate(total_logs, seconds_per_log, compile_s=2.0, chunk_seconds=5.0, chunk_logs=0):
    """The chunks (lists of call sizes) a sweep of total_logs would run if each log interval took seconds_per_log
    (a function of the logs done, or a number) and each first call of a size compile_s more."""
    sizer = ChunkSizer(ExecutionConfig(chunk_logs=chunk_logs, chunk_seconds=chunk_seconds))
    per_log = seconds_per_log if callable(seconds_per_log) else (lambda done: seconds_per_log)
    chunks, done = [], 0
    while done < total_logs:
        calls = sizer.next(total_logs - done)
        for n in calls:
            sizer.record(n, n * per_log(done) + (compile_s if n not in sizer.compiled else 0.0))
            done += n
        chunks.append(calls)
    assert done == total_logs
    return chunks


def test_an_explicit_chunk_logs_is_honoured_exactly():
    assert simulate(7, 0.001, chunk_logs=3) == [[3], [3], [1]]
    assert simulate(7, 100.0, chunk_logs=3) == [[3], [3], [1]]


def test_chunks_follow_the_clock():
    # 1 s per log interval, 5 s chunks: one log (compiles), one log (timed), then 4 at a time (4 compiles once:
    # 30 more logs make ≥ 2 chunks of it); the last 2 logs run as calls of a size compiled already.
    assert simulate(32, 1.0) == [[1], [1]] + [[4]] * 7 + [[1, 1]]
    # 10 s per log interval: a chunk is never shorter than one log interval.
    assert simulate(5, 10.0) == [[1]] * 5
    # Fast and short (the tiny presets): nothing is compiled beyond one log interval; a chunk is several calls.
    assert simulate(8, 0.001) == [[1], [1], [1] * 6]
    # Fast and long: powers of two, two compiled sizes in all; the remainder (less than a chunk) runs as calls
    # of one log interval rather than compiling a size for it.
    chunks = simulate(10_000, 0.001)
    assert chunks == [[1], [1], [4096], [4096], [1] * (10_000 - 2 - 2 * 4096)]


def test_chunks_are_resized_only_when_they_drift_far():
    # A little slower (within [1/4, 2] × chunk_seconds): the size stays.
    assert {n for c in simulate(60, lambda done: 1.0 if done < 20 else 1.8) for n in c} == {1, 4}
    # Ten times slower: back to one log interval per chunk, no new compile.
    chunks = simulate(60, lambda done: 1.0 if done < 20 else 10.0)
    assert chunks[-1] == [1] and {n for c in chunks for n in c} == {1, 4}
    # Ten times faster: a bigger power of two (50 logs make 5 s: 64, the nearest on a log scale).
    assert 64 in {n for c in simulate(400, lambda done: 1.0 if done < 20 else 0.1) for n in c}


def test_chunks_grow_to_the_nearest_power_of_two_of_the_target():
    # The default preset's pace on a loaded 2-core CPU (2026-12-03): 3.1 s per log interval of 50 steps, 5-s
    # chunks. 5 / 3.1 = 1.6 lies nearer 2 than 1 on a log scale: chunks of 2 log intervals (6.2 s), not one
    # (the power of two at or below, which left every chunk at one log interval: 98 chunks for 100 logs).
    chunks = simulate(100, 3.1)
    assert chunks[:2] == [[1], [1]] and chunks[2:] == [[2]] * 49
    # Any pace: a chunk lasts within [1/√2, √2] × chunk_seconds once timed, unless one log interval is longer.
    for per_log in (0.013, 0.4, 0.9, 1.2, 2.2, 3.6, 4.9):
        sizes = [sum(c) for c in simulate(4000, per_log)[2:-1]]
        assert all(5 / 2**0.5 <= n * per_log < 5 * 2**0.5 for n in sizes), (per_log, sizes[:3])


LINE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d  step (\d+)/120 \(\d+\.\d%\)  4 runs  "
    r"chunk (\d+) logs in \d+\.\d\d s( \(compiling\))?  [\d.e+]+ run·steps/s  elapsed \d+:\d\d:\d\d  "
    r"peak RSS \d+\.\d\d GiB  device peak (n/a|\d+\.\d\d GiB)(  checkpoint written)?$"
)


def one_second_per_log(monkeypatch):
    """Make the sizer believe every log interval takes 1 s, so that its chunks are known in advance."""
    real = ChunkSizer.record
    monkeypatch.setattr(ChunkSizer, "record", lambda sizer, n, seconds: real(sizer, n, float(n)))


def chunk_lines(text):
    return [line for line in text.splitlines() if "  step " in line]


@pytest.fixture(scope="module")
def one_log_per_call(tmp_path_factory, tiny_config):
    config = tiny_config(steps=120, log_every=10, chunk_logs=1)
    return sweep.run_sweep(config, tmp_path_factory.mktemp("ref") / "ref", progress=False)


def test_time_sized_chunks_give_the_same_metrics_and_one_log_line_per_chunk(
    tmp_path, monkeypatch, tiny_config, one_log_per_call, advances
):
    one_second_per_log(monkeypatch)
    calls = advances()
    out = tmp_path / "timed"
    res = sweep.run_sweep(tiny_config(steps=120, log_every=10, chunk_logs=0, checkpoint_every_s=0), out, progress=False)
    assert calls.sizes == [1, 1, 4, 4, 1, 1]  # chunks [1], [1], [4], [4], [1, 1]
    assert set(res.metrics) == set(one_log_per_call.metrics)
    for name, values in one_log_per_call.metrics.items():
        np.testing.assert_array_equal(res.metrics[name], values, err_msg=name)

    text = (out / "progress.log").read_text()
    assert "started nht run tiny-test: 4 runs × 120 steps" in text.splitlines()[0]
    assert "chunks sized to about 5 s (execution.chunk_seconds)" in text.splitlines()[0]
    lines = chunk_lines(text)
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), "\n".join(line for line, m in zip(lines, parsed) if not m)
    assert [(int(m[1]), int(m[2])) for m in parsed] == [(10, 1), (20, 1), (60, 4), (100, 4), (120, 2)]
    assert [bool(m[3]) for m in parsed] == [True, False, True, False, False]  # (compiling): a new call size
    assert [bool(m[5]) for m in parsed] == [True] * 4 + [False]  # checkpoint_every_s = 0: all but the last
    assert "finished: 120 steps × 4 runs" in text.splitlines()[-1]


def test_a_killed_sweep_logs_where_it_stopped_and_where_it_resumed(
    tmp_path, monkeypatch, tiny_config, one_log_per_call, advances
):
    config = tiny_config(steps=120, log_every=10, chunk_logs=2, checkpoint_every_s=0)
    out = tmp_path / "killed"
    advances(die_on=3)
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(config, out, progress=False)
    monkeypatch.undo()
    text = (out / "progress.log").read_text()
    assert "chunks of 2 log intervals (execution.chunk_logs)" in text.splitlines()[0]
    assert [LINE.match(line)[1] for line in chunk_lines(text)] == ["20", "40"]
    assert text.splitlines()[-1].endswith(
        "stopped (KeyboardInterrupt) at step 40 of 120; running again resumes from the checkpoint at step 40"
    )

    res = sweep.run_sweep(config, out, progress=False)
    lines = (out / "progress.log").read_text().splitlines()[len(text.splitlines()) :]
    assert lines[0].split("  ", 1)[1].startswith("started nht run tiny-test")
    assert lines[1].split("  ", 1)[1] == "resumed at step 40 of 120 from checkpoint.npz"
    assert [LINE.match(line)[1] for line in chunk_lines("\n".join(lines))] == ["60", "80", "100", "120"]
    np.testing.assert_array_equal(res.metrics["norm_sq"], one_log_per_call.metrics["norm_sq"])


def test_a_kill_before_any_checkpoint_says_so(tmp_path, tiny_config, advances):
    advances(die_on=2)
    out = tmp_path / "early"
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(tiny_config(steps=40, log_every=10, checkpoint_every_s=3600), out, progress=False)
    assert (
        (out / "progress.log")
        .read_text()
        .splitlines()[-1]
        .endswith("stopped (KeyboardInterrupt) at step 20 of 40; no checkpoint yet: running again starts from step 0")
    )


def test_chunk_settings_are_validated():
    from nht_jax.base.errors import ConfigError
    from nht_jax.experiment import load

    with pytest.raises(ConfigError, match="execution.chunk_seconds must be > 0"):
        load("tiny", ["execution.chunk_seconds=0"])
    with pytest.raises(ConfigError, match="execution.chunk_logs must be ≥ 1 \\(or 0: chunks sized by time\\)"):
        load("tiny", ["execution.chunk_logs=-1"])
    assert load("tiny").execution.chunk_logs == 0  # time-sized unless set
