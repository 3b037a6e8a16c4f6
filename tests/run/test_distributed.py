"""Many processes, one sweep (`nht_jax.engine.distributed`, `nht_jax.run.launch`): two CPU processes on this
machine train a sweep that equals one process's, resuming a one-process checkpoint, and a checkpoint they write
resumes on one process; bad launch settings fail before anything starts; a coordinator that never answers ends
the process with a message after the join timeout."""

import argparse
import os
import shutil
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
from nht_jax.engine.executor import GridRun, plan
from nht_jax.engine.settings import ExecutionConfig
from nht_jax.experiment import load
from nht_jax.run import launch, results, sweep

# test_sweep's settings: the one-process programs compile once per session (persistent compilation cache)
SETTINGS = ["train.steps=80", "train.log_every=10", "execution.chunk_logs=2", "execution.checkpoint_every_s=0",
            "model.hidden=[16]", "grid.weight_decay=[0.01, 1.0]", "grid.seed=[0]"]

# One process of two: joins, trains (no figures) and says what run_sweep returned; every checkpoint it writes is
# copied aside (only process 0 writes them).
CHILD = textwrap.dedent("""
    import shutil, sys
    from pathlib import Path
    import jax
    from nht_jax.base.errors import ConfigError
    from nht_jax.engine import distributed
    from nht_jax.experiment import load
    from nht_jax.run import launch, results, sweep

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
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(i), coordinator, str(out), str(copies), *SETTINGS],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for i, out in enumerate(outs)]
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


def stop_after_first_chunk(config, out, monkeypatch):
    """A one-process sweep stopped (KeyboardInterrupt) on its second compiled call: a checkpoint at step 20."""
    real, calls = GridRun.advance, []

    def advance(grid_run, states, n):
        calls.append(n)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(grid_run, states, n)

    monkeypatch.setattr(GridRun, "advance", advance)
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(config, out, progress=False)
    monkeypatch.undo()


def test_two_processes_equal_one_and_resume_across_process_counts(tmp_path, monkeypatch, capsys):
    config = load("tiny", SETTINGS)
    reference = sweep.run_sweep(config, tmp_path / "one", progress=False)

    # 1 → 2: a one-process checkpoint at step 20, resumed and finished by two processes
    two = tmp_path / "two"
    stop_after_first_chunk(config, two, monkeypatch)
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
        np.testing.assert_allclose(resumed.metrics[name], reference.metrics[name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)


@pytest.mark.parametrize("flags,message", [
    (["--processes", "0"], "--processes must be a number of processes ≥ 1 or 'auto', got '0'"),
    (["--processes", "two"], "--processes must be a number of processes ≥ 1 or 'auto'"),
    (["--processes", "2", "--process-id", "2", "--coordinator", "localhost:1234"],
     "--process-id must lie in 0 … 1 (--processes 2), got 2"),
    (["--processes", "2", "--process-id", "-1", "--coordinator", "localhost:1234"], "got -1"),
    (["--processes", "2", "--process-id", "1"], "missing --coordinator"),
    (["--processes", "2", "--process-id", "1", "--coordinator", "localhost"], "--coordinator must be HOST:PORT"),
    (["--processes", "2", "--process-id", "1", "--coordinator", "node0:99999"], "--coordinator must be HOST:PORT"),
    (["--processes", "2", "--coordinator", "localhost:1234"], "--coordinator without --process-id"),
    (["--process-id", "0"], "add --processes N"),
    (["--processes", "auto", "--process-id", "1"], "--processes auto detects the cluster itself; drop --process-id"),
    (["--processes", "2", "--process-id", "1", "--coordinator", "localhost:1234", "--join-timeout", "0"],
     "the join timeout must be > 0 seconds"),
])
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


# Stands in for `nht run` in the launcher's tests: process 1 ends as told, the others wait to be stopped.
FAKE = textwrap.dedent("""
    import os, signal, sys, time
    me, how = sys.argv[sys.argv.index("--process-id") + 1], sys.argv[1]
    if me == "1":
        os.kill(os.getpid(), signal.SIGKILL) if how == "killed" else sys.exit(int(how))
    try:
        time.sleep(0 if how == "0" else 120)
    except KeyboardInterrupt:
        print(f"process {me} stopped", flush=True)
        sys.exit(130)
""")


@pytest.mark.parametrize("how,code", [("0", 0), ("3", 3), ("killed", 128 + 9)])
def test_the_local_launcher_stops_the_others_when_one_fails(how, code, capfd):
    tick = time.time()
    assert launch.start_local([how], 3, program=(sys.executable, "-c", FAKE), poll_s=0.05) == code
    assert time.time() - tick < 30
    out, err = capfd.readouterr()
    assert ("process 1 of 3 ended" in err) == (code != 0)
    if code:  # the two waiting processes were stopped (SIGINT), not left running
        assert "process 0 stopped" in out and "process 2 stopped" in out
    if how == "killed":
        assert "process 1 of 3 ended (signal SIGKILL); stopping the others" in err


def test_several_processes_always_span_every_device():
    two = plan(ExecutionConfig(), 3, backend="cpu", num_devices=4, num_processes=2)
    assert (two.devices, two.padded_runs, two.processes) == (4, 4, 2)  # 3 runs padded to one per device
    assert "on 4 cpu device(s) of 2 processes" in two.describe()
    assert plan(ExecutionConfig(), 3, backend="cpu", num_devices=4, num_processes=1).devices == 3
    with pytest.raises(ConfigError, match="execution.shard = \"off\" cannot run on 2 processes"):
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
    code = ("from nht_jax.engine import distributed; "
            f"distributed.initialize(distributed.Launch('localhost:{free_port()}', 2, 1, timeout_s=1))")
    tick = time.time()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, JAX_PLATFORMS="cpu"))
    assert result.returncode == 2, result.stderr[-2000:]
    assert "process 1 of 2" in result.stderr and "gave up after 1 s waiting for the coordinator" in result.stderr
    assert "--join-timeout" in result.stderr
    assert time.time() - tick < 60
