"""Many processes, one sweep (`nht_jax.engine.distributed`, `nht_jax.training.launch`): two CPU processes on this
machine train a sweep that equals one process's, resuming a one-process checkpoint, and a checkpoint they write
resumes on one process; bad launch settings fail before anything starts; a coordinator that never answers ends
the process with a message after the join timeout."""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.engine import distributed
from nht_jax.engine.executor import plan
from nht_jax.config.sections import ExecutionConfig
from nht_jax.experiment import load
from nht_jax.training import launch
from nht_jax.results import folder as results
from nht_jax.training import sweep

# test_sweep's settings: the one-process programs compile once per session (persistent compilation cache)
SETTINGS = [
    "train.steps=80",
    "train.log_every=10",
    "execution.chunk_logs=2",
    "execution.checkpoint_every_s=0",
    "model.hidden=[16]",
    "grid.weight_decay=[0.01, 1.0]",
    "grid.seed=[0]",
]

# One process of two: joins, trains (no figures) and says what run_sweep returned; every checkpoint it writes is
# copied aside (only process 0 writes them).
CHILD = textwrap.dedent("""
    import shutil, sys
    from pathlib import Path
    import jax
    from nht_jax.base.errors import ConfigError
    from nht_jax.engine import distributed
    from nht_jax.experiment import load
    from nht_jax.training import launch
    from nht_jax.results import folder as results
    from nht_jax.training import sweep

    process_id, coordinator, out, copies, *settings = sys.argv[1:]
    distributed.initialize(distributed.Launch(coordinator, 2, int(process_id), timeout_s=120))

    def refuse(text, where):
        if jax.process_index() == where:
            raise ConfigError(text)
    for agree, where in ((distributed.all_do, 1), (distributed.writer_does, 0)):  # a refusal stops every process
        try:
            agree(lambda: refuse(f"refused by {where}", where))
        except ConfigError as e:
            print(f"{agree.__name__}: {e}")
    real = results.save_checkpoint
    def save(path, digest, logs_done, *rest):
        real(path, digest, logs_done, *rest)
        shutil.copy(path, Path(copies) / f"{logs_done}.npz")
    results.save_checkpoint = save
    returned = launch.as_process(lambda: print("returned", sweep.run_sweep(load("tiny", settings), Path(out),
                                                                           progress=False)) or 0)
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def run_two_processes(outs, copies, timeout: float = 240) -> list[tuple[int, str, str]]:
    """Processes 0 and 1 of the sweep SETTINGS, with a local coordinator, process i told to write into outs[i];
    (exit code, stdout, stderr) of each."""
    coordinator = f"localhost:{free_port()}"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(i), coordinator, str(out), str(copies), *SETTINGS],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, out in enumerate(outs)
    ]
    outputs = []
    try:
        for child in children:
            out_text, err_text = child.communicate(timeout=timeout)
            outputs.append((child.returncode, out_text, err_text))
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
    return outputs


def stop_after_first_chunk(config, out, monkeypatch, advances):
    """A one-process sweep stopped (KeyboardInterrupt) on its second compiled call: a checkpoint at step 20."""
    advances(die_on=2)
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(config, out, progress=False)
    monkeypatch.undo()


def test_two_processes_equal_one_and_resume_across_process_counts(tmp_path, monkeypatch, capsys, advances):
    config = load("tiny", SETTINGS)
    reference = sweep.run_sweep(config, tmp_path / "one", progress=False)

    # 1 → 2: a one-process checkpoint at step 20, resumed and finished by two processes
    two = tmp_path / "two"
    stop_after_first_chunk(config, two, monkeypatch, advances)
    copies = tmp_path / "copies"
    copies.mkdir()
    elsewhere = tmp_path / "process-1-has-no-folder"  # as on hosts without a shared filesystem
    (code0, out0, err0), (code1, out1, err1) = run_two_processes([two, elsewhere], copies)
    assert code0 == 0 and code1 == 0, (err0[-3000:], err1[-3000:])
    assert not elsewhere.exists()  # process 1 neither reads nor writes a results folder: the checkpoint came from 0
    for text in (out0, out1):  # process 1's data failing, or process 0's folder refused, stops both
        assert "all_do: process 1: refused by 1" in text and "writer_does: refused by 0" in text
    assert "returned Results(" in out0 and "returned None" in out1  # process 0 writes the results, process 1 not
    assert f"resuming {two} at step 20 of 80" in out0 and "resuming" not in out1 and "memory:" not in out1
    both = results.load_results(two)
    assert both.meta["processes"] == 2 and "of 2 processes" in both.meta["execution"]
    log = (two / "progress.log").read_text()
    assert "resumed at step 20 of 80" in log and log.count("step 40/80 ") == 1  # one writer: each line once
    for name in reference.metrics:  # logs 0–2 come from the one-process checkpoint: bit for bit
        np.testing.assert_array_equal(both.metrics[name][:, :3], reference.metrics[name][:, :3], err_msg=name)
        np.testing.assert_allclose(both.metrics[name], reference.metrics[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert [r["regime"] for r in both.summary] == [r["regime"] for r in reference.summary]

    # 2 → 1: the checkpoint the two processes wrote at step 40 (every run's state, gathered), resumed by this one
    assert sorted(p.name for p in copies.iterdir()) == ["4.npz", "6.npz"]
    back = tmp_path / "back"
    back.mkdir()
    shutil.copy(copies / "4.npz", back / "checkpoint.npz")
    resumed = sweep.run_sweep(config, back, progress=False)
    assert f"resuming {back} at step 40 of 80" in capsys.readouterr().out
    assert resumed.meta["processes"] == 1
    for name in reference.metrics:
        np.testing.assert_array_equal(resumed.metrics[name][:, :5], both.metrics[name][:, :5], err_msg=name)
        np.testing.assert_allclose(resumed.metrics[name], reference.metrics[name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--processes", "0"], "--processes must be a number of processes ≥ 1 or 'auto', got '0'"),
        (["--processes", "two"], "--processes must be a number of processes ≥ 1 or 'auto'"),
        (
            ["--processes", "2", "--process-id", "2", "--coordinator", "localhost:1234"],
            "--process-id must lie in 0 … 1 (--processes 2), got 2",
        ),
        (["--processes", "2", "--process-id", "-1", "--coordinator", "localhost:1234"], "got -1"),
        (["--processes", "2", "--process-id", "1"], "missing --coordinator"),
        (["--processes", "2", "--process-id", "1", "--coordinator", "localhost"], "--coordinator must be HOST:PORT"),
        (["--processes", "2", "--process-id", "1", "--coordinator", "node0:99999"], "--coordinator must be HOST:PORT"),
        (["--processes", "2", "--coordinator", "localhost:1234"], "--coordinator without --process-id"),
        (["--process-id", "0"], "add --processes N"),
        (
            ["--processes", "auto", "--process-id", "1"],
            "--processes auto detects the cluster itself; drop --process-id",
        ),
        (
            ["--processes", "2", "--process-id", "1", "--coordinator", "localhost:1234", "--join-timeout", "0"],
            "the join timeout must be > 0 seconds",
        ),
    ],
)
def test_bad_launch_settings_fail_before_anything_starts(flags, message, capsys):
    assert main(["run", "tiny", *flags]) == 2
    assert message in capsys.readouterr().err
    assert not distributed.multi_process()


def test_launch_settings_say_what_to_do():
    assert launch.launch_of(argparse.Namespace()) is None  # no flags: one process
    here = dict(process_id=None, coordinator=None, join_timeout=300.0)
    assert launch.launch_of(argparse.Namespace(processes="3", **here)) == 3  # start three processes here
    assert launch.launch_of(argparse.Namespace(processes="1", **here)) is None  # one process: nothing to start
    joined = argparse.Namespace(processes="4", process_id=3, coordinator="node0:8476", join_timeout=60.0)
    assert launch.launch_of(joined) == distributed.Launch("node0:8476", 4, 3, timeout_s=60.0)
    auto = argparse.Namespace(processes="auto", **here)
    assert launch.launch_of(auto) == distributed.Launch(auto=True, timeout_s=300.0)


# Stands in for `nht run` in the launcher's tests: `python -c FAKE HOW READY COUNT --process-id I --coordinator …`.
# Every process follows its launcher (as `nht` does), is stopped by SIGINT as Python is by default (KeyboardInterrupt,
# only when SIGINT was not ignored at its start) and by SIGTERM/SIGHUP through a handler, then reports ready
# (READY/I.pid). HOW: "0" every process exits 0; "3" / "killed" process 1 exits 3 / SIGKILLs itself once every other
# is ready; "cascade" as "killed", and process 0 exits 1 the moment process 1 is gone (as JAX does when it loses a
# peer); "wait" every process waits to be stopped; "unfollowed" as "wait", without `follow_launcher`.
FAKE = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    from nht_jax.training.launch import follow_launcher
    how, ready, count = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    if how != "unfollowed":
        follow_launcher()
    me = int(sys.argv[sys.argv.index("--process-id") + 1])

    def alive(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    def stopped(signum, frame=None):
        print(f"process {me} stopped by {signal.Signals(signum).name}", flush=True)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stopped)
    signal.signal(signal.SIGHUP, stopped)
    try:
        (ready / f"{me}.tmp").write_text(str(os.getpid()))
        (ready / f"{me}.tmp").rename(ready / f"{me}.pid")
        others = [ready / f"{i}.pid" for i in range(count) if i != me]
        if how == "0":
            sys.exit(0)
        while me == 1 and how != "wait" and not all(p.exists() for p in others):
            time.sleep(0.01)
        if me == 1 and how == "3":
            sys.exit(3)
        if me == 1 and how in ("killed", "cascade"):
            os.kill(os.getpid(), signal.SIGKILL)
        while me == 0 and how == "cascade" and not (ready / "1.pid").exists():
            time.sleep(0.001)
        peer = int((ready / "1.pid").read_text()) if me == 0 and how == "cascade" else None
        deadline = time.time() + 120
        while time.time() < deadline:
            if peer is not None and not alive(peer):
                sys.exit(1)
            time.sleep(0.001 if peer else 0.05)
    except KeyboardInterrupt:
        stopped(signal.SIGINT)
""")


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie nobody reaped does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def pids(ready, count: int) -> list[int]:
    """The pids of the FAKE processes that reported ready."""
    return [int((ready / f"{i}.pid").read_text()) for i in range(count) if (ready / f"{i}.pid").exists()]


@pytest.mark.parametrize("how,code", [("0", 0), ("3", 3), ("killed", 128 + 9)])
def test_the_local_launcher_stops_the_others_when_one_fails(how, code, tmp_path, capfd):
    tick = time.time()
    program = (sys.executable, "-c", FAKE)
    assert launch.start_local([how, str(tmp_path), "3"], 3, program=program) == code
    assert time.time() - tick < launch.STOP_GRACE_S  # stopped by SIGINT, not killed after the grace time
    out, err = capfd.readouterr()
    assert ("process 1 of 3 ended" in err) == (code != 0)
    if code:  # the two waiting processes were stopped (SIGINT), not left running
        assert "process 0 stopped by SIGINT" in out and "process 2 stopped by SIGINT" in out
    if how == "killed":
        assert "process 1 of 3 ended (signal SIGKILL); stopping the others" in err
    assert not any(alive(pid) for pid in pids(tmp_path, 3))


def test_the_launcher_names_the_process_that_failed_first(tmp_path, capfd):
    """Process 1 is killed and process 0 fails a moment later because its peer is gone: the one to blame is 1."""
    program = (sys.executable, "-c", FAKE)
    assert launch.start_local(["cascade", str(tmp_path), "2"], 2, program=program) == 128 + 9
    err = capfd.readouterr().err
    assert "process 1 of 2 ended (signal SIGKILL)" in err and "process 0 of 2 ended" not in err


# `nht run --processes 2` in a process of its own: start_local over two FAKE processes, with SIGINT ignored first
# when asked (a background job of a non-interactive shell), the grace time given.
LAUNCHER = textwrap.dedent("""
    import signal, sys
    from nht_jax.training import launch
    fake, how, ready, ignore_sigint, grace = sys.argv[1:]
    if ignore_sigint == "yes":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(launch.start_local([how, ready, "2"], 2, program=(sys.executable, "-c", fake), grace_s=float(grace)))
""")


@pytest.fixture
def start_launcher(tmp_path):
    """`start_launcher(ignore_sigint=False, grace=30.0, session=False, how="wait")`: the launcher of two FAKE
    processes reporting ready in tmp_path, once both are (session: in a session and process group of its own, as a
    terminal's foreground job). Whatever a failing test leaves running is killed afterwards."""
    started = []

    def start(ignore_sigint=False, grace=30.0, session=False, how="wait") -> subprocess.Popen:
        launcher = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, FAKE, how, str(tmp_path), "yes" if ignore_sigint else "no", str(grace)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=session,
        )
        started.append(launcher)
        deadline = time.time() + 60
        while len(pids(tmp_path, 2)) < 2 and launcher.poll() is None and time.time() < deadline:
            time.sleep(0.02)
        return launcher

    yield start
    for launcher in started:
        if launcher.poll() is None:
            launcher.kill()
            launcher.communicate()
    for pid in pids(tmp_path, 2):
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def finish(launcher: subprocess.Popen) -> tuple[int, str, str]:
    try:
        out, err = launcher.communicate(timeout=60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    return launcher.returncode, out, err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_to_the_launcher_reaches_every_process(sig, tmp_path, start_launcher):
    launcher = start_launcher()
    children = pids(tmp_path, 2)
    assert len(children) == 2, finish(launcher)
    tick = time.time()
    launcher.send_signal(sig)
    code, out, err = finish(launcher)
    assert code == 128 + sig, err
    assert f"process 0 stopped by {sig.name}" in out and f"process 1 stopped by {sig.name}" in out
    assert f"nht: {sig.name} received; passing it on to the 2 processes" in err
    assert time.time() - tick < 20  # they stopped on the signal, not after the 30 s grace
    assert not any(alive(pid) for pid in children)


def test_ctrl_c_in_a_terminal_reaches_the_launcher_which_passes_it_on(tmp_path, start_launcher):
    """A terminal's Ctrl-C is SIGINT to its foreground process group: the launcher's. Its processes are groups of
    their own (so they get it once, from the launcher, not twice) and stop on it."""
    launcher = start_launcher(session=True)
    children = pids(tmp_path, 2)
    assert len(children) == 2, finish(launcher)
    assert all(os.getpgid(pid) == pid != os.getpgid(launcher.pid) for pid in children)
    os.killpg(launcher.pid, signal.SIGINT)
    code, out, err = finish(launcher)
    assert code == 128 + signal.SIGINT, err
    assert "process 0 stopped by SIGINT" in out and "process 1 stopped by SIGINT" in out


def test_a_background_launcher_still_stops_its_processes_with_sigint(tmp_path, start_launcher):
    """Started with SIGINT ignored (`nht run --processes 2 &` in a script): a SIGINT to the launcher stays ignored,
    but when process 1 fails, the SIGINT that stops process 0 works (its SIGINT is at the default again)."""
    launcher = start_launcher(ignore_sigint=True)
    children = pids(tmp_path, 2)
    assert len(children) == 2, finish(launcher)
    launcher.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert launcher.poll() is None and all(alive(pid) for pid in children)  # ignored, as the shell asked
    os.kill(children[1], signal.SIGKILL)
    code, out, err = finish(launcher)
    assert code == 128 + 9 and "process 1 of 2 ended (signal SIGKILL)" in err
    assert "process 0 stopped by SIGINT" in out  # not killed after the grace time
    assert not any(alive(pid) for pid in children)


def test_processes_deaf_to_the_stop_signal_are_killed_after_the_grace_time(tmp_path, start_launcher):
    launcher = start_launcher(grace=1.0, how="unfollowed")  # the launcher kills them, not the kernel
    children = pids(tmp_path, 2)
    assert len(children) == 2, finish(launcher)
    for pid in children:  # as a process stuck where no signal handler runs
        os.kill(pid, signal.SIGSTOP)
    tick = time.time()
    launcher.send_signal(signal.SIGTERM)
    code, out, _ = finish(launcher)
    assert code == 128 + signal.SIGTERM and time.time() - tick < 20
    assert "stopped by" not in out
    assert not any(alive(pid) for pid in children)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_launcher_leaves_no_process_running(tmp_path, start_launcher):
    launcher = start_launcher()
    children = pids(tmp_path, 2)
    assert len(children) == 2, finish(launcher)
    launcher.kill()
    finish(launcher)
    deadline = time.time() + 20
    while any(alive(pid) for pid in children) and time.time() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in children)


def test_several_processes_always_span_every_device():
    two = plan(ExecutionConfig(), 3, backend="cpu", num_devices=4, num_processes=2)
    assert (two.devices, two.padded_runs, two.processes) == (4, 4, 2)  # 3 runs padded to one per device
    assert "on 4 cpu device(s) of 2 processes" in two.describe()
    assert plan(ExecutionConfig(), 3, backend="cpu", num_devices=4, num_processes=1).devices == 3
    with pytest.raises(ConfigError, match='execution.shard = "off" cannot run on 2 processes'):
        plan(ExecutionConfig(shard="off"), 3, backend="cpu", num_devices=2, num_processes=2)


def test_coordinator_port_in_use_is_refused():
    with socket.socket() as held:
        held.bind(("", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(ConfigError, match=f"port {port} of this host .* is in use"):
            distributed.initialize(distributed.Launch(f"localhost:{port}", 2, 0, timeout_s=5))


def test_an_unreachable_coordinator_ends_the_process_with_a_message():
    """Process 1 of 2 waits for a coordinator that never starts: after --join-timeout it ends (exit code 2)
    with a message saying what it waited for, instead of hanging or aborting."""
    code = (
        "from nht_jax.engine import distributed; "
        f"distributed.initialize(distributed.Launch('localhost:{free_port()}', 2, 1, timeout_s=1))"
    )
    tick = time.time()
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, JAX_PLATFORMS="cpu"),
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "process 1 of 2" in result.stderr and "gave up after 1 s waiting for the coordinator" in result.stderr
    assert "--join-timeout" in result.stderr
    assert time.time() - tick < 60
