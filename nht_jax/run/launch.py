"""`nht run` on several processes: its flags, joining (`nht_jax.engine.distributed`), and `--processes N` on one
machine.

    --processes auto                          join the cluster jax.distributed detects (srun, TPU pod, Open MPI)
    --processes N --process-id I --coordinator HOST:PORT
                                              be process I of N; process 0 runs the coordinator on HOST:PORT
    --processes N                             start all N processes here (coordinator on a free local port) and
                                              wait for them; process 0's output is the command's
    --join-timeout SECONDS                    how long joining may take (default 300)

The processes of one sweep are started with the same command line (same preset, --set and --out), differing only
in --process-id. Starting them here (`start_local`) runs `python -m nht_jax.cli` N times with this command line plus
`--process-id i --coordinator localhost:PORT`; when one fails, the others are stopped (SIGINT, so that process 0
logs where it stopped when it can; killed after STOP_GRACE_S) and the failed one's exit code is the command's
(128 + the signal when it was killed). A process of a multi-process sweep that fails ends at once (`os._exit`),
skipping JAX's exit-time barrier, which would keep it waiting for the others while they wait for it in a
collective; processes started separately (srun, TPU workers) then learn it is gone from JAX's heartbeat
(about 100 s).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import traceback
from typing import Callable

from nht_jax.base.errors import ConfigError

DEFAULT_JOIN_TIMEOUT_S = 300.0
STOP_GRACE_S = 10.0  # after SIGTERM, seconds before the remaining processes are killed


def add_arguments(run: argparse.ArgumentParser) -> None:
    """The flags of `nht run` that spread a sweep over several processes."""
    group = run.add_argument_group("several processes (jax.distributed; README: Many processes)")
    group.add_argument("--processes", metavar="N|auto",
                       help="train on N processes (alone: start all N on this machine; with --process-id: be one of "
                            "them), or 'auto': join the cluster jax.distributed detects (SLURM srun, TPU pod)")
    group.add_argument("--process-id", type=int, metavar="I", help="this process's id, 0 … N − 1 (0 writes the results)")
    group.add_argument("--coordinator", metavar="HOST:PORT", help="process 0's host and a free port, the same for all")
    group.add_argument("--join-timeout", type=float, default=DEFAULT_JOIN_TIMEOUT_S, metavar="SECONDS",
                       help=f"give up joining after this long (default {DEFAULT_JOIN_TIMEOUT_S:g})")


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
            raise ConfigError("--process-id and --coordinator belong to a sweep of several processes: add "
                              "--processes N (the number of processes)")
        return None
    if processes == "auto":
        launch = Launch(coordinator=coordinator, process_id=process_id, auto=True, timeout_s=timeout)
    elif process_id is None:
        if processes == 1 and coordinator is None:
            return None
        if coordinator is not None:
            raise ConfigError("--coordinator without --process-id: give each process its --process-id, or drop "
                              "--coordinator to start all processes on this machine")
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


def start_local(argv: list[str], count: int, program: tuple[str, ...] = NHT, poll_s: float = 0.2) -> int:
    """Run `program ARGV --process-id i --coordinator localhost:PORT` for i < count, the processes of one sweep on
    this machine; their exit code (the first failure's, or 0)."""
    coordinator = f"localhost:{free_port()}"
    print(f"starting {count} processes on this machine (coordinator {coordinator}); process 0 writes the results",
          flush=True)
    children = [subprocess.Popen([*program, *argv, "--process-id", str(i), "--coordinator", coordinator])
                for i in range(count)]
    try:
        while True:
            codes = [child.poll() for child in children]
            failed = [(i, code) for i, code in enumerate(codes) if code not in (None, 0)]
            if failed:
                i, code = failed[0]
                how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
                print(f"nht: process {i} of {count} ended ({how}); stopping the others", file=sys.stderr, flush=True)
                stop(children)
                return 128 - code if code < 0 else code
            if all(code == 0 for code in codes):
                return 0
            time.sleep(poll_s)
    except KeyboardInterrupt:  # Ctrl-C reached the children too (same process group): let them stop
        stop(children, None)
        return 130


def stop(children: list[subprocess.Popen], sig: int | None = signal.SIGINT) -> None:
    """Signal the processes still running (SIGINT: a process between compiled calls logs where it stopped, as
    after Ctrl-C; None: no signal), then kill those left after STOP_GRACE_S (one waiting in a collective for a
    lost peer never returns)."""
    for child in children:
        if sig is not None and child.poll() is None:
            child.send_signal(sig)
    deadline = time.time() + STOP_GRACE_S
    for child in children:
        try:
            child.wait(timeout=max(0.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def joined() -> bool:
    """Whether this process joined a sweep of several processes (`distributed.initialize`)."""
    return "jax" in sys.modules and sys.modules["jax"].distributed.is_initialized()


def as_process(main: Callable[[], int]) -> int:
    """main()'s exit code; in a sweep of several processes, a failure (an exit code ≠ 0 or an exception, whose
    traceback is printed) ends this process at once (module docstring)."""
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


__all__ = ["add_arguments", "as_process", "joined", "launch_of", "parse_processes", "start_local"]
