"""`nht run` on several processes: its flags, joining (`nht_jax.engine.distributed`), and `--processes N` on one
machine.

    --processes auto                          join the cluster jax.distributed detects (srun, TPU pod, Open MPI)
    --processes N --process-id I --coordinator HOST:PORT
                                              be process I of N; process 0 runs the coordinator on HOST:PORT
    --processes N                             start all N processes here (coordinator on a free local port) and
                                              wait for them; process 0's output is the command's
    --join-timeout SECONDS                    how long joining may take (default 300)

Starting them here (`start_local`) runs `python -m nht_jax.cli` N times, each in a process group of its own, and
leaves no process running when one fails, when the launcher gets a signal (`STOP_GRACE_S`), or when it is killed
(`follow_launcher`). What happens on each path, and the exit codes: docs/guides/faults.md, "Several processes on
one machine"; launching on a cluster: docs/guides/execution.md, "Many processes (jax.distributed)"."""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from typing import Callable

from nht_jax.base.errors import ConfigError

DEFAULT_JOIN_TIMEOUT_S = 300.0
STOP_GRACE_S = 10.0  # after the stop signal, seconds before the remaining processes are killed


def add_arguments(run: argparse.ArgumentParser) -> None:
    """The flags of `nht run` that spread a sweep over several processes."""
    group = run.add_argument_group("several processes (jax.distributed; README: Many processes)")
    group.add_argument(
        "--processes",
        metavar="N|auto",
        help="train on N processes (alone: start all N on this machine; with --process-id: be one of "
        "them), or 'auto': join the cluster jax.distributed detects (SLURM srun, TPU pod)",
    )
    group.add_argument(
        "--process-id", type=int, metavar="I", help="this process's id, 0 … N − 1 (0 writes the results)"
    )
    group.add_argument("--coordinator", metavar="HOST:PORT", help="process 0's host and a free port, the same for all")
    group.add_argument(
        "--join-timeout",
        type=float,
        default=DEFAULT_JOIN_TIMEOUT_S,
        metavar="SECONDS",
        help=f"give up joining after this long (default {DEFAULT_JOIN_TIMEOUT_S:g})",
    )


def parse_processes(text: str | None) -> int | str | None:
    """--processes: None, "auto" or an int ≥ 1."""
    if text is None or text == "auto":
        return text
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise ConfigError(f"--processes must be a number of processes ≥ 1 or 'auto', got {text!r}")
    return count


def launch_of(args: argparse.Namespace):
    """What the flags ask for: None (one process), the number of processes to start here (int), or how this
    process joins (`distributed.Launch`). Starts no JAX backend (joining must come first)."""
    from nht_jax.engine.distributed import Launch

    processes = parse_processes(getattr(args, "processes", None))
    process_id, coordinator = getattr(args, "process_id", None), getattr(args, "coordinator", None)
    timeout = getattr(args, "join_timeout", DEFAULT_JOIN_TIMEOUT_S)
    if processes is None:
        if process_id is not None or coordinator is not None:
            raise ConfigError(
                "--process-id and --coordinator belong to a sweep of several processes: add "
                "--processes N (the number of processes)"
            )
        return None
    if processes == "auto":
        launch = Launch(coordinator=coordinator, process_id=process_id, auto=True, timeout_s=timeout)
    elif process_id is None:
        if processes == 1 and coordinator is None:
            return None
        if coordinator is not None:
            raise ConfigError(
                "--coordinator without --process-id: give each process its --process-id, or drop "
                "--coordinator to start all processes on this machine"
            )
        check_timeout(timeout)
        return processes
    else:
        launch = Launch(coordinator, processes, process_id, timeout_s=timeout)
    from nht_jax.engine import distributed

    distributed.validate(launch)
    return launch


def check_timeout(timeout: float) -> None:
    if not timeout > 0:
        raise ConfigError(f"--join-timeout must be > 0 seconds, got {timeout}")


def free_port() -> int:
    """A TCP port free on this machine now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


NHT = (sys.executable, "-m", "nht_jax.cli")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # to the launcher: passed on to every process it started
LAUNCHER_ENV = "NHT_LAUNCHER_PID"  # set for the processes start_local starts: `follow_launcher` reads it
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def exit_code(returncode: int) -> int:
    """A process's exit code as a shell shows it: 128 + the signal for one killed by a signal."""
    return 128 - returncode if returncode < 0 else returncode


def ended_text(returncode: int) -> str:
    return f"signal {signal.Signals(-returncode).name}" if returncode < 0 else f"exit code {returncode}"


class LocalProcesses:
    """The processes of one sweep started on this machine, and one queue of what happens to them, in the order it
    happens: ("ended", i, returncode) from one watcher thread per process (blocked in its wait, so the first to end
    is the first reported), ("signal", signum) from the launcher's signal handlers (`SimpleQueue.put` may be called
    from a signal handler). Each process is a process group of its own (`process_group=0`), so a terminal's Ctrl-C
    or hangup reaches the launcher alone, which passes it on once."""

    def __init__(self, events: queue.SimpleQueue):
        self.events = events
        self.children: list[subprocess.Popen] = []
        self.codes: dict[int, int] = {}

    def start(self, commands: list[list[str]]) -> None:
        env = {**os.environ, LAUNCHER_ENV: str(os.getpid())}
        for i, command in enumerate(commands):
            child = subprocess.Popen(command, stdin=subprocess.DEVNULL, process_group=0, env=env)
            self.children.append(child)
            threading.Thread(
                target=lambda i=i, child=child: self.events.put(("ended", i, child.wait())),
                daemon=True,
                name=f"nht-process-{i}",
            ).start()

    def running(self) -> list[int]:
        return [i for i in range(len(self.children)) if i not in self.codes]

    def next_event(self, timeout: float | None = None) -> tuple:
        """The next event (queue.Empty after `timeout` seconds without one)."""
        event = self.events.get(timeout=timeout)
        if event[0] == "ended":
            self.codes[event[1]] = event[2]
        return event

    def stop(self, sig: int, grace_s: float) -> None:
        """Send `sig` to the processes still running, wait up to grace_s seconds for them to end (a second signal
        to the launcher cuts the wait short), then kill the rest (one waiting in a collective for a lost peer never
        returns, and one that ignores `sig` would never end)."""
        for i in self.running():
            self.children[i].send_signal(sig)
        deadline = time.monotonic() + grace_s
        while self.running():
            try:
                if self.next_event(max(0.0, deadline - time.monotonic()))[0] == "signal":
                    break
            except queue.Empty:
                break
        self.kill()

    def kill(self) -> None:
        """SIGKILL every process still running, and wait until each has ended."""
        for i in self.running():
            self.children[i].kill()
        while self.running():
            self.next_event()


@contextlib.contextmanager
def forwarded_signals(events: queue.SimpleQueue):
    """While the block runs, SIGINT, SIGTERM and SIGHUP to this process become ("signal", signum) events, except
    those ignored when it began (`nohup` ignores SIGHUP): those stay without effect on the launcher. The handlers
    are in place before any process starts, so every process starts with these signals at their default (a
    handler, unlike SIG_IGN, is reset by exec): a background job of a non-interactive shell, started with SIGINT
    ignored, still gets a working SIGINT in its processes. Outside the main thread nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in FORWARDED}

    def forward(signum, frame):
        events.put(("signal", signum))

    def drop(signum, frame):
        pass

    for sig, handler in previous.items():
        signal.signal(sig, drop if handler == signal.SIG_IGN else forward)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def start_local(argv: list[str], count: int, program: tuple[str, ...] = NHT, grace_s: float = STOP_GRACE_S) -> int:
    """Run `program ARGV --process-id i --coordinator localhost:PORT` for i < count, the processes of one sweep on
    this machine, and wait for them. The exit code: 0 when every one succeeded; when one fails, the others are
    stopped (SIGINT, killed after grace_s) and its exit code is the command's; when the launcher gets SIGINT,
    SIGTERM or SIGHUP, every process gets the same signal (killed after grace_s) and the code is 128 + the
    signal. No process is left running on any path (`follow_launcher`: not even when the launcher is killed)."""
    coordinator = f"localhost:{free_port()}"
    print(
        f"starting {count} processes on this machine (coordinator {coordinator}); process 0 writes the results",
        flush=True,
    )
    commands = [[*program, *argv, "--process-id", str(i), "--coordinator", coordinator] for i in range(count)]
    processes = LocalProcesses(queue.SimpleQueue())
    with forwarded_signals(processes.events):
        try:
            processes.start(commands)
            while processes.running():
                event = processes.next_event()
                if event[0] == "signal":
                    name = signal.Signals(event[1]).name
                    print(
                        f"nht: {name} received; passing it on to the {count} processes and stopping them",
                        file=sys.stderr,
                        flush=True,
                    )
                    processes.stop(event[1], grace_s)
                    return 128 + event[1]
                _, i, returncode = event
                if returncode != 0:
                    print(
                        f"nht: process {i} of {count} ended ({ended_text(returncode)}); stopping the others",
                        file=sys.stderr,
                        flush=True,
                    )
                    processes.stop(signal.SIGINT, grace_s)
                    return exit_code(returncode)
            return 0
        finally:
            processes.kill()  # after an unexpected error too: none is left running


def joined() -> bool:
    """Whether this process joined a sweep of several processes (`distributed.initialize`).

    Returns:
        True when it did.
    """
    return "jax" in sys.modules and sys.modules["jax"].distributed.is_initialized()


def speaks() -> bool:
    """Whether this process's lines about the sweep go to the terminal: a single process, or process 0 of several
    (the others would print the same lines again; a failure of theirs is named by the launcher)."""
    return not joined() or sys.modules["jax"].process_index() == 0


def follow_launcher() -> None:
    """In a process that `start_local` started (LAUNCHER_ENV names the launcher): end when the launcher ends, even
    when it is killed and cannot stop its processes. Linux: PR_SET_PDEATHSIG = SIGKILL; elsewhere nothing. A
    launcher gone before this runs ends the process at once. The variable is removed, so that processes this one
    starts do not follow its launcher."""
    launcher = os.environ.pop(LAUNCHER_ENV, None)
    if launcher is None:
        return
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if str(os.getppid()) != launcher:  # the launcher died before the line above
        os.kill(os.getpid(), signal.SIGKILL)


def as_process(main: Callable[[], int]) -> int:
    """main()'s exit code; in a sweep of several processes, a failure (an exit code ≠ 0 or an exception, whose
    traceback is printed) ends this process at once (module docstring). A process started by `start_local` ends
    with its launcher (`follow_launcher`)."""
    follow_launcher()
    try:
        code = main()
    except Exception:
        if not joined():
            raise
        traceback.print_exc()
        code = 1
    if code and joined():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


__all__ = ["joined"]
