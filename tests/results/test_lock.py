"""One writer per results folder (`nht_jax.results.lock`), with real processes: a second `nht run` or `nht report`
stops at once naming the holder; SIGKILL frees the lock (a killed sweep resumes); a normal finish releases it;
a leftover lock file nobody holds blocks nothing; without fcntl a warning, no lock."""

import importlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.experiment import load
from nht_jax.results import lock
from nht_jax.training import sweep

SETTINGS = [
    "train.steps=80",
    "train.log_every=10",
    "execution.chunk_logs=1",
    "execution.checkpoint_every_s=0",
    "model.hidden=[16]",
    "grid.weight_decay=[0.01, 1.0]",
    "grid.seed=[0]",
]
CLI_SETTINGS = [arg for s in SETTINGS for arg in ("--set", s)]

HOLDER = textwrap.dedent("""
    import sys, time
    from nht_jax.results import lock
    with lock.hold(sys.argv[1], "nht run"):
        print("held", flush=True)
        time.sleep(120)
""")

# `nht run` in a process of its own, each compiled call slowed down so that the test can kill it mid-sweep.
SLOW_RUN = textwrap.dedent("""
    import sys, time
    from nht_jax.engine.executor import GridRun
    real = GridRun.advance
    def slow(grid_run, states, n, every=None):
        time.sleep(0.5)
        return real(grid_run, states, n, every)
    GridRun.advance = slow
    from nht_jax.cli import main
    sys.exit(main(sys.argv[1:]))
""")

# Takes the lock with plain fcntl (no nht import): exit 0 when free, 1 when held.
PROBE = "import fcntl, sys; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)"


def start(script, *args):
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def stop(process):
    if process.poll() is None:
        process.kill()
    process.communicate(timeout=30)


def lock_is_free(folder) -> bool:
    return (
        subprocess.run(
            [sys.executable, "-c", PROBE, str(folder / lock.LOCK_NAME)], check=False, capture_output=True, timeout=60
        ).returncode
        == 0
    )


@pytest.fixture
def holder(tmp_path):
    """Another process holding the lock of tmp_path / "out"."""
    out = tmp_path / "out"
    process = start(HOLDER, out)
    try:
        assert process.stdout.readline().strip() == "held", process.stderr.read()
        yield out, process
    finally:
        stop(process)


def test_a_second_writer_stops_at_once_naming_the_holder(holder, capsys, monkeypatch):
    out, process = holder
    modular = importlib.import_module("nht_jax.domains.modular")
    monkeypatch.setattr(
        modular,
        "DOMAIN",
        modular.DOMAIN._replace(load_data=lambda config: pytest.fail("the second writer got as far as loading data")),
    )
    assert main(["run", "tiny", *CLI_SETTINGS, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"nht: error: results folder '{out}' is in use by `nht run` (pid {process.pid} on host "
        f"{socket.gethostname()}, since 20"
    )
    assert "wait for it to finish" in err and "choose another folder with --out DIR" in err
    assert sorted(p.name for p in out.iterdir()) == [".lock"]  # nothing written by the second writer
    assert main(["report", str(out)]) == 2  # a redraw would race the sweep's own figures
    assert "is in use by `nht run`" in capsys.readouterr().err
    assert process.poll() is None  # the holder is untouched


def test_what_a_user_sees_from_a_second_terminal(holder):
    out, process = holder
    result = subprocess.run(
        [sys.executable, "-m", "nht_jax.cli", "run", "tiny", *CLI_SETTINGS, "--out", str(out)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"results folder '{out}' is in use by `nht run` (pid {process.pid}" in result.stderr


def test_the_lock_is_released_after_a_normal_finish(tmp_path):
    """(Before the SIGKILL test: the process it starts then finds these programs in the compilation cache.)"""
    out = tmp_path / "out"
    sweep.run_sweep(load("tiny", SETTINGS), out, progress=False)
    assert (out / "meta.json").exists()
    assert lock_is_free(out) and (out / lock.LOCK_NAME).read_text() == ""


def test_sigkill_frees_the_lock_and_the_sweep_resumes(tmp_path, capsys):
    out = tmp_path / "out"
    process = start(SLOW_RUN, "run", "tiny", *CLI_SETTINGS, "--out", out, "--quiet")
    try:
        deadline = time.time() + 180
        while not ((out / "progress.log").exists() and "checkpoint written" in (out / "progress.log").read_text()):
            assert process.poll() is None and time.time() < deadline, process.communicate()
            time.sleep(0.05)
        with pytest.raises(ConfigError, match="is in use by `nht run`"):
            sweep.run_sweep(load("tiny", SETTINGS), out, progress=False)
        os.kill(process.pid, signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        stop(process)
    assert str(process.pid) in (out / lock.LOCK_NAME).read_text()  # the dead holder's file is still there …
    assert lock_is_free(out)  # … but nobody holds it
    assert (out / "checkpoint.npz").exists() and not (out / "meta.json").exists()
    res = sweep.run_sweep(load("tiny", SETTINGS), out, progress=False)
    assert "resuming" in capsys.readouterr().out and res.metrics["norm_sq"].shape == (2, 9)
    assert "resumed at step" in (out / "progress.log").read_text()


def test_a_leftover_lock_file_nobody_holds_blocks_nothing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / lock.LOCK_NAME).write_text('{"pid": 1, "host": "elsewhere", "command": "nht run", "since": "yesterday"}\n')
    lock.raise_if_held(out)
    with lock.hold(out), lock.hold(out):  # re-entrant within one process
        assert str(os.getpid()) in (out / lock.LOCK_NAME).read_text()
        assert not lock_is_free(out)
    assert lock_is_free(out)


def test_an_unwritable_folder_is_a_config_error():
    with (
        pytest.raises(ConfigError, match="cannot write results to '/proc/nht-lock-test'"),
        lock.hold("/proc/nht-lock-test"),
    ):
        pass


def test_without_fcntl_a_warning_and_no_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(lock, "fcntl", None)
    with pytest.warns(RuntimeWarning, match="no file locking"), lock.hold(tmp_path / "out"):
        pass
