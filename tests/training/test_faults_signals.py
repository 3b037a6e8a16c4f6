"""Signals to one `nht run` (`nht_jax.training.signals`): SIGTERM, SIGINT and SIGHUP stop it between compiled calls
with a checkpoint, one line in the terminal and in progress.log naming the last completed step, and exit code
128 + the signal; the same command resumes to results bit-identical to an uninterrupted run. SIGTERM during a
bucket's last call stops between buckets, during a run's last call lets the results be written; SIGINT during
start-up stops it cleanly after the compile in flight; a second signal ends it at once; of two processes, process
0 alone speaks.

The `nht run` tests start real processes and cannot race: each waits for the child to report the state under test
(a chunk line in progress.log, the "memory:" line printed just before the first compile, or "in call N" from a
child whose call N waits for the signal before it returns: `HOLDS_A_CALL`) before it signals, and every wait
allows minutes. The children start with SIGINT, SIGTERM and SIGHUP at their default action
(`preexec_fn`), since a test run from a background job of a non-interactive shell inherits SIGINT ignored, and in
a process group of their own, so that a signal reaches the child alone. The runs no signal reaches (the
uninterrupted references and the resumes) run in the test process: a child each would add its start-up and
nothing the tests check."""

import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from nht_jax.cli import main
from nht_jax.training import signals

STEPS, LOG_EVERY = 2_000, 500  # 4 compiled calls of one log interval: the stops come in call 1, 2 or 4
SETTINGS = [
    "--quiet",
    "--set",
    f"train.steps={STEPS}",
    "--set",
    f"train.log_every={LOG_EVERY}",
    "--set",
    "execution.chunk_logs=1",
    "--set",
    "execution.checkpoint_every_s=3600",
    "--set",
    "grid.weight_decay=[1.0]",
    "--set",
    "grid.seed=[0]",
]
LONG_STEPS = 10_000  # 20 calls: a run signalled at a log line (no call held) is still training when the signal comes
LONG = [*SETTINGS, "--set", f"train.steps={LONG_STEPS}"]
WAIT_S = 240  # any wait for a child: generous on a loaded two-core machine


NHT = [sys.executable, "-m", "nht_jax.cli"]


def command(out: Path, settings=SETTINGS, program=NHT) -> list[str]:
    return [*program, "run", "tiny", "--out", str(out), *settings]


def default_dispositions() -> None:
    for sig in signals.STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)


class Child:
    """`nht run` in a process of its own, its stdout and stderr in files (read while it runs)."""

    def __init__(self, out: Path, settings=SETTINGS, program=NHT):
        self.out, self.log = out, out / "progress.log"
        out.parent.mkdir(parents=True, exist_ok=True)
        self.stdout_path, self.stderr_path = out.parent / f"{out.name}.stdout", out.parent / f"{out.name}.stderr"
        with open(self.stdout_path, "w") as stdout, open(self.stderr_path, "w") as stderr:
            self.process = subprocess.Popen(
                command(out, settings, program),
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                process_group=0,
                preexec_fn=default_dispositions,
            )

    def text(self, which: str) -> str:
        path = {"stdout": self.stdout_path, "stderr": self.stderr_path, "log": self.log}[which]
        return path.read_text() if path.exists() else ""

    def wait_for(self, which: str, marker: str) -> None:
        """Until `marker` is in stdout, stderr or progress.log (fails if the child ends first)."""
        deadline = time.monotonic() + WAIT_S
        while marker not in self.text(which):
            assert self.process.poll() is None, (
                f"ended ({self.process.returncode}) before {marker!r}:\n" + self.text("stderr")[-3000:]
            )
            assert time.monotonic() < deadline, f"no {marker!r} in {which} after {WAIT_S} s"
            time.sleep(0.02)

    def end(self) -> int:
        try:
            return self.process.wait(timeout=WAIT_S)
        finally:
            if self.process.poll() is None:
                self.process.kill()


def finish(out: Path, capsys, settings=SETTINGS) -> str:
    """The same command run again to its end, in this process (no signal comes: no child needed); its stdout."""
    capsys.readouterr()
    assert main(command(out, settings, program=[])) == 0
    return capsys.readouterr().out


def folder_results(out: Path) -> tuple[dict, str]:
    with np.load(out / "trajectories.npz") as data:
        arrays = {k: data[k] for k in data.files}
    return arrays, (out / "summary.csv").read_text()


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The results of the command trained to its end without a signal (in this process)."""
    out = tmp_path_factory.mktemp("signals") / "uninterrupted"
    assert main(command(out, program=[])) == 0
    return folder_results(out)


def assert_same_results(out: Path, reference) -> None:
    arrays, summary = folder_results(out)
    assert set(arrays) == set(reference[0])
    for name, values in reference[0].items():
        assert np.array_equal(arrays[name], values, equal_nan=True), name
    assert summary == reference[1]


def last_chunk_step(log_text: str) -> int:
    steps = [int(line.split("  step ")[1].split("/")[0]) for line in log_text.splitlines() if "  step " in line]
    return steps[-1] if steps else 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_between_calls_stops_with_a_checkpoint_and_the_same_command_resumes(
    sig, tmp_path, uninterrupted, capsys
):
    out = tmp_path / sig.name
    child = signalled_in_call(out, 2, sig=sig)  # calls 1 and 2 trained, the signal before call 3 starts
    log, stderr = child.text("log"), child.text("stderr")
    step = last_chunk_step(log)  # the last completed step: call 2's
    assert step == 2 * LOG_EVERY < STEPS
    stop_line = (
        f"stopped ({sig.name}) at step {step} of {STEPS}, the last completed step; run the same command "
        f"again to resume from the checkpoint at step {step}"
    )
    assert log.splitlines()[-1].split("  ", 1)[1] == stop_line
    assert stderr.splitlines()[-1] == f"nht: {stop_line}"
    assert f"nht: {sig.name} received after step " in stderr and "stops at once" in stderr
    assert "Traceback" not in stderr
    with np.load(out / "checkpoint.npz") as checkpoint:
        assert int(checkpoint["logs_done"]) * LOG_EVERY == step
    if sig != signal.SIGTERM:
        return  # the resume after a stop is the same path whatever the signal: checked once, for SIGTERM (time)

    again = finish(out, capsys)
    assert f"resuming {out} at step {step} of {STEPS}" in again
    assert f"resumed at step {step} of {STEPS} from checkpoint.npz" in child.text("log")
    assert_same_results(out, uninterrupted)


def test_sigterm_to_the_launcher_of_two_processes_stops_both_at_process_0s_boundary(tmp_path):
    # jax.distributed's preemption notifier takes SIGTERM in C++ when the processes join: the handlers are
    # installed again after joining (`signals.handle_again`), or SIGTERM would be swallowed and the run finish.
    out = tmp_path / "two"
    child = Child(out, [*LONG, "--processes", "2"])
    child.wait_for("log", f"  step {LOG_EVERY}/{LONG_STEPS} ")
    child.process.send_signal(signal.SIGTERM)
    assert child.end() == 128 + signal.SIGTERM
    log, stderr = child.text("log"), child.text("stderr")
    step = last_chunk_step(log)
    assert LOG_EVERY < step < LONG_STEPS
    stop_line = (
        f"stopped (SIGTERM) at step {step} of {LONG_STEPS}, the last completed step; run the same command "
        f"again to resume from the checkpoint at step {step}"
    )
    assert log.splitlines()[-1].split("  ", 1)[1] == stop_line and log.count(stop_line) == 1
    # Both processes stopped there (exit 143 each, or the launcher would name one), process 0 alone said so.
    assert stderr.count(stop_line) == 1 and stderr.splitlines()[-1] == f"nht: {stop_line}"
    assert stderr.count("nht: SIGTERM received after step ") == 1 and log.count("SIGTERM received after step ") == 1
    assert stderr.count("nht: SIGTERM received; passing it on to the 2 processes") == 1 and "Traceback" not in stderr
    with np.load(out / "checkpoint.npz") as checkpoint:
        assert int(checkpoint["logs_done"]) * LOG_EVERY == step


# `nht run` whose compiled call number argv[1] (counted from 1, every bucket and run slice together) does not return
# before a stop signal is received: the test signals at "in call N", and the signal comes during that call, never
# before or after it, however loaded the machine.
HOLDS_A_CALL = textwrap.dedent("""
    import sys, time
    from nht_jax.cli import main
    from nht_jax.engine.executor import GridRun
    from nht_jax.training import signals

    target, calls, advance = int(sys.argv[1]), [], GridRun.advance

    def held(grid_run, states, n, every=None):
        calls.append(n)
        result = advance(grid_run, states, n, every)
        if len(calls) == target:
            print(f"in call {target}", flush=True)
            while signals.requested() is None:
                time.sleep(0.01)
        return result

    GridRun.advance = held
    sys.exit(main(sys.argv[2:]))
""")


def holding_call(n: int) -> list[str]:
    return [sys.executable, "-c", HOLDS_A_CALL, str(n)]


def signalled_in_call(out: Path, n: int, settings=SETTINGS, sig=signal.SIGTERM) -> "Child":
    """`nht run` stopped by `sig` during its compiled call n, ended."""
    child = Child(out, settings, holding_call(n))
    child.wait_for("stdout", f"in call {n}")
    child.process.send_signal(sig)
    assert child.end() == 128 + sig, child.text("stderr")[-3000:]
    assert "Traceback" not in child.text("stderr")
    return child


BUCKET_STEPS, BUCKET_LOG_EVERY = 40, 10  # 4 compiled calls of one log interval per bucket
BUCKETS = [
    "--quiet",
    "--set",
    f"train.steps={BUCKET_STEPS}",
    "--set",
    f"train.log_every={BUCKET_LOG_EVERY}",
    "--set",
    "execution.chunk_logs=1",
    "--set",
    "execution.checkpoint_every_s=3600",
    "--set",
    "grid.weight_decay=[1.0]",
    "--set",
    "grid.seed=[0]",
    "--set",
    "grid.width=[8, 16]",
]


def test_sigterm_in_the_last_call_of_a_bucket_stops_between_buckets_and_resumes_at_the_next(tmp_path, capsys):
    reference = tmp_path / "uninterrupted"
    finish(reference, capsys, BUCKETS)
    out = tmp_path / "buckets"
    child = signalled_in_call(out, BUCKET_STEPS // BUCKET_LOG_EVERY, BUCKETS)  # bucket 1's last call
    log, stderr = child.text("log"), child.text("stderr")
    stop_line = (
        "stopped (SIGTERM) after bucket 1/2, the last completed; run the same command again to resume from "
        "the checkpoint at the start of bucket 2/2"
    )
    assert log.splitlines()[-1].split("  ", 1)[1] == stop_line and stderr.splitlines()[-1] == f"nht: {stop_line}"
    assert (
        f"nht: SIGTERM received after step {BUCKET_STEPS - BUCKET_LOG_EVERY} of {BUCKET_STEPS} in bucket 1/2" in stderr
    )
    assert "bucket 1/2 (width = 8) done" in log and "in bucket 2/2" not in log  # bucket 2 never began
    with np.load(out / "checkpoint.npz") as checkpoint:
        assert int(checkpoint["bucket"]) == 1 and not bool(checkpoint["in_progress"])
    assert not (out / "meta.json").exists()

    again = finish(out, capsys, BUCKETS)
    assert f"resuming {out} at step 0 of {BUCKET_STEPS} in bucket 2/2" in again
    assert "bucket 1/2" not in again  # not trained again
    assert_same_results(out, folder_results(reference))


def test_sigterm_in_the_last_call_of_a_run_writes_its_results_and_the_same_command_draws_them(
    tmp_path, uninterrupted, capsys
):
    out = tmp_path / "last"
    child = signalled_in_call(out, STEPS // LOG_EVERY)
    log, stderr = child.text("log"), child.text("stderr")
    assert f"nht: SIGTERM received after step {STEPS - LOG_EVERY} of {STEPS}: stopping" in stderr
    assert stderr.splitlines()[-1] == (
        f"nht: SIGTERM received after the last compiled call: its results are written "
        f"in '{out}'; `nht report {out}` draws the figures; stopped"
    )
    assert last_chunk_step(log) == STEPS and "finished: " in log and "stopped (" not in log
    assert not (out / "checkpoint.npz").exists() and not (out / "phase_diagram.png").exists()
    assert_same_results(out, uninterrupted)  # complete already

    again = finish(out, capsys)
    assert "already holds finished results" in again and (out / "phase_diagram.png").exists()
    assert_same_results(out, uninterrupted)


def test_sigint_during_start_up_stops_after_the_compile_without_a_crash(tmp_path, uninterrupted, capsys):
    out = tmp_path / "start-up"
    child = Child(out)
    child.wait_for("stdout", "memory: ")  # printed just before the first compile
    child.process.send_signal(signal.SIGINT)
    assert child.end() == 130  # not -SIGSEGV, and not 0 (the signal swallowed, the run trained to its end)
    log, stderr = child.text("log"), child.text("stderr")
    stop_line = (
        f"stopped (SIGINT) at step 0 of {STEPS}, the last completed step; run the same command again to "
        f"start from step 0 (no checkpoint yet)"
    )
    assert log.splitlines()[-1].split("  ", 1)[1] == stop_line
    assert stderr.splitlines()[-1] == f"nht: {stop_line}"
    assert "nht: SIGINT received" in stderr and "Ctrl-C again stops at once" in stderr
    assert "Traceback" not in stderr and last_chunk_step(log) == 0 and not (out / "checkpoint.npz").exists()

    finish(out, capsys)
    assert_same_results(out, uninterrupted)


def test_a_second_signal_ends_a_long_call_at_once(tmp_path):
    # chunks sized by the clock to about 100 s: calls 1 and 2 are one log interval each, call 3 about 128 (over a
    # minute); the signals come during call 3 (the stop decision before it was taken as call 2 ended).
    settings = [
        *SETTINGS,
        "--set",
        "train.steps=300000",
        "--set",
        "train.log_every=1000",
        "--set",
        "execution.chunk_logs=0",
        "--set",
        "execution.chunk_seconds=100",
    ]
    out = tmp_path / "twice"
    child = Child(out, settings)
    child.wait_for("log", "  step 2000/300000 ")
    child.process.send_signal(signal.SIGINT)
    child.wait_for("stderr", "Ctrl-C again stops at once")
    tick = time.monotonic()
    child.process.send_signal(signal.SIGINT)
    assert child.end() == 130
    took = time.monotonic() - tick
    last = (
        "stopped at once by a second SIGINT during the call after step 2000 of 300000; run the same command "
        "again to start from step 0 (no checkpoint yet)"
    )
    log = child.text("log")
    assert log.splitlines()[-1].split("  ", 1)[1] == last and child.text("stderr").splitlines()[-1] == f"nht: {last}"
    assert last_chunk_step(log) == 2000 and took < 30, took  # the minute-long call did not run to its end


# ---------------------------------------------------------------------------------------------- the module alone


def wait_until(condition, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_handlers_set_a_flag_and_are_restored():
    before = {sig: signal.getsignal(sig) for sig in signals.STOP_SIGNALS}
    lines = []
    with signals.stop_on_signals(terminal=open(os.devnull, "w")) as stops:
        with signals.reporting(signals.Report(lines.append, lambda: "step 7 of 9", lambda: "resume")):
            assert signals.requested() is None
            os.kill(os.getpid(), signal.SIGTERM)  # raises nothing: the watcher records it
            wait_until(lambda: signals.requested() == signal.SIGTERM)
        assert stops.received == [signal.SIGTERM]
        assert lines == [
            "SIGTERM received after step 7 of 9: stopping once the compiled call (or compile) in flight "
            "ends; a second SIGTERM stops at once"
        ]
    assert {sig: signal.getsignal(sig) for sig in signals.STOP_SIGNALS} == before
    assert signals.requested() is None
    assert signal.set_wakeup_fd(-1) == -1  # the wakeup fd is back to none
    assert not [t for t in threading.enumerate() if t.name == "nht-stop-signals"]  # the watcher has ended


def test_a_process_that_does_not_speak_logs_its_lines_but_leaves_the_terminal_to_process_0():
    terminal, lines = io.StringIO(), []
    report = signals.Report(lines.append, lambda: "step 7 of 9", lambda: "resume")
    signals.StopSignals(terminal, report=report, speaks=False).acknowledge(signal.SIGTERM)
    assert terminal.getvalue() == "" and lines[0].startswith("SIGTERM received after step 7 of 9")
    signals.StopSignals(terminal, report=report).acknowledge(signal.SIGTERM)
    assert terminal.getvalue() == f"nht: {lines[0]}\n" and lines[1] == lines[0]


def test_then_default_leaves_the_default_action_after_a_stop_and_ignored_signals_stay_ignored():
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with signals.stop_on_signals(terminal=open(os.devnull, "w"), then_default=True) as stops:
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGHUP)  # ignored: nothing recorded
            os.kill(os.getpid(), signal.SIGTERM)
            wait_until(lambda: stops.received)
        assert stops.received == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL and signal.getsignal(signal.SIGINT) == signal.SIG_DFL
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_outside_the_main_thread_nothing_is_installed():
    seen = []

    def worker():
        with signals.stop_on_signals() as stops:
            seen.append((signal.getsignal(signal.SIGTERM), stops.received, signals.requested()))

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [(signal.getsignal(signal.SIGTERM), [], None)]


SECOND_SIGNAL = textwrap.dedent("""
    import sys, time
    from nht_jax.training import signals
    with signals.stop_on_signals() as stops:
        with signals.reporting(signals.Report(lambda text: print("log:", text, flush=True), lambda: "step 3 of 8",
                                              lambda: "run it again")):
            print("ready", flush=True)
            time.sleep(600)  # C code, as a compiled call: the watcher acts while it runs
    print("not stopped", flush=True)
""")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_second_signal_ends_the_process_at_once_with_its_last_words(sig):
    child = subprocess.Popen(
        [sys.executable, "-c", SECOND_SIGNAL],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        process_group=0,
        preexec_fn=default_dispositions,
    )
    assert child.stdout.readline() == "ready\n"
    child.send_signal(sig)
    assert "stops at once" in child.stdout.readline()  # the acknowledgement's progress.log line
    child.send_signal(sig)
    out, err = child.communicate(timeout=WAIT_S)
    assert child.returncode == 128 + sig
    last = f"stopped at once by a second {sig.name} during the call after step 3 of 8; run it again"
    assert out == f"log: {last}\n" and err.splitlines()[-1] == f"nht: {last}"
