"""`nht_jax.sweep(...)` from Python, interrupted (issue 46 item 4): Ctrl-C (SIGINT) from outside stops it at the
next boundary between compiled calls with a checkpoint and one KeyboardInterrupt line saying where and how to
resume, and the same call resumes there; two threads calling it on one folder: the second is refused in one line
while the first trains (the folder's lock belongs to a thread, not only to a process), and both folders' results
are whole."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import nht_jax
from nht_jax.base.errors import ConfigError

from ..conftest import make_tiny_config, users_xla_env

TESTS = Path(__file__).resolve().parents[1]
DEADLINE_S = 240  # a loaded machine compiles slowly; the waits poll, and end as soon as the thing happens

# The child: a tiny sweep into argv[1]. With argv[2] = "hold", each compiled call after the first waits (up to the
# deadline) until a stop signal has been received, after writing argv[1]/../training: the test's SIGINT always comes
# while the sweep trains, however fast the machine is.
CHILD = """
import sys, time
sys.path.insert(0, {tests!r})
from pathlib import Path
import nht_jax
from conftest import make_tiny_config
if sys.argv[2:] == ["hold"]:
    from nht_jax.engine.executor import GridRun
    from nht_jax.training import signals
    real, calls = GridRun.advance, []
    def advance(grid_run, states, n, every=None):
        calls.append(n)
        if len(calls) > 1:
            (Path(sys.argv[1]).parent / "training").touch()
            end = time.time() + {deadline}
            while signals.requested() is None and time.time() < end:
                time.sleep(0.05)
        return real(grid_run, states, n, every)
    GridRun.advance = advance
res = nht_jax.sweep(make_tiny_config(steps=80, log_every=10, chunk_logs=1), out=sys.argv[1], progress=False)
print("done", len(res.summary))
"""


def child(tmp_path, *extra) -> subprocess.Popen:
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(tests=str(TESTS), deadline=DEADLINE_S))
    return subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "out"), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**users_xla_env(), "PYTHONPATH": os.pathsep.join([str(TESTS.parent), os.environ.get("PYTHONPATH", "")])},
    )


def test_ctrl_c_stops_sweep_with_a_checkpoint_and_one_line_and_the_same_call_resumes(tmp_path):
    proc = child(tmp_path, "hold")
    end = time.time() + DEADLINE_S
    while not (tmp_path / "training").exists() and proc.poll() is None and time.time() < end:
        time.sleep(0.1)
    assert (tmp_path / "training").exists(), proc.communicate()[1]
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode in (130, -signal.SIGINT), err  # Python ends an uncaught KeyboardInterrupt by SIGINT
    last = err.strip().splitlines()[-1]
    assert last.startswith("KeyboardInterrupt: stopped (SIGINT) at step ") and last.endswith(
        f"the same call (out='{tmp_path / 'out'}') resumes from the checkpoint"
    ), err
    assert "Fatal Python error" not in err and "done" not in out
    assert (tmp_path / "out" / "checkpoint.npz").is_file()
    stopped_at = int(last.split("at step ")[1].split()[0])
    assert 10 <= stopped_at < 80
    again = child(tmp_path)
    out, err = again.communicate(timeout=DEADLINE_S)
    assert again.returncode == 0 and out.strip().endswith("done 4"), err
    log = (tmp_path / "out" / "progress.log").read_text()
    assert f"resumed at step {stopped_at} of 80 from checkpoint.npz" in log
    assert nht_jax.load_results(tmp_path / "out").steps[-1] == 80


def test_two_threads_sweeping_one_folder_the_second_is_refused_while_the_first_trains(tmp_path, monkeypatch):
    from nht_jax.engine.executor import GridRun
    from nht_jax.results import lock

    config = make_tiny_config(steps=40, log_every=10)
    out = tmp_path / "out"
    training, go_on = threading.Event(), threading.Event()
    real = GridRun.advance

    def advance(grid_run, states, n, every=None):  # the first thread trains until the second has tried
        training.set()
        go_on.wait(DEADLINE_S)
        return real(grid_run, states, n, every)

    monkeypatch.setattr(GridRun, "advance", advance)
    found = {}

    def first():
        try:
            found["first"] = nht_jax.sweep(config, out=out, progress=False)
        except BaseException as e:  # noqa: BLE001 (reported by the test below)
            found["first"] = e

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert training.wait(DEADLINE_S), "the first sweep never started training"
        assert lock.holds(out) is False  # held, but by the other thread
        with pytest.raises(ConfigError) as refused:
            nht_jax.sweep(config, out=out, progress=False)
        assert str(refused.value) == (
            f"results folder '{out}' is in use by another thread of this process; two threads writing one results "
            f"folder would overwrite each other's files. Give each thread its own folder (out=…), or start the second "
            f"after the first has returned."
        )
    finally:
        go_on.set()
        thread.join(DEADLINE_S)
    assert not isinstance(found["first"], BaseException), found["first"]
    assert len(found["first"].summary) == 4
    again = nht_jax.sweep(config, out=out, progress=False)  # afterwards: the finished folder, as it is
    assert [r["regime"] for r in again.summary] == [r["regime"] for r in found["first"].summary]
