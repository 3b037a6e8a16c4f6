"""Stop signals to the process that trains: SIGINT (Ctrl-C), SIGTERM (what SLURM, `timeout` and `kill` send) and
SIGHUP (a closed terminal) end a run at the next boundary between compiled calls; a second one ends it at once.

Under `stop_on_signals` the handlers raise nothing (a KeyboardInterrupt inside JAX/XLA's C++ callbacks would crash or
be swallowed): a wakeup socket and a watcher thread note the first signal at once, and the training loop asks
`requested()` between compiled calls, writes a checkpoint and raises `Stopped` (exit code 128 + the signal); a second
signal ends the process at once with its last line. The lines come from the training in progress (`reporting`).
With several processes every one stops at process 0's decision; the terminal hears process 0 alone
(`StopSignals.speaks`).

What happens when, the lines, the exit codes and why the handlers raise nothing: docs/guides/faults.md, "Signals"."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STOP_WATCHER = 0  # the byte `stop_on_signals` writes into its own wakeup socket to end the watcher


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name


def exit_code(signum: int) -> int:
    """The exit code of a process stopped by signal `signum`, as a shell shows one killed by it: 128 + signum.

    Args:
        signum: the signal's number.

    Returns:
        128 + signum.
    """
    return 128 + int(signum)


def again_text(signum: int) -> str:
    """How to send the same signal again, in words."""
    return "Ctrl-C again" if signum == signal.SIGINT else f"a second {signal_name(signum)}"


class Stopped(BaseException):
    """Training stopped at a boundary between compiled calls because of signal `signum` (a BaseException, like
    KeyboardInterrupt, so that no `except Exception` takes it); `text` says where and how to resume."""

    def __init__(self, signum: int, text: str = ""):
        super().__init__(text or f"stopped ({signal_name(signum)})")
        self.signum = int(signum)

    @property
    def text(self) -> str:
        return str(self)

    @property
    def exit_code(self) -> int:
        return exit_code(self.signum)


@dataclass
class Report:
    """Where the lines go and what they say: `log` writes a progress.log line; `where()` is the last completed
    step ("step 100 of 300"); `resume()` what a rerun does ("running again resumes from the checkpoint at …")."""

    log: Callable[[str], None]
    where: Callable[[], str]
    resume: Callable[[], str]


@dataclass
class StopSignals:
    """The signals received under one `stop_on_signals` block, in order, and the training reporting now."""

    terminal: object = None
    received: list = field(default_factory=list)
    report: Report | None = None
    ignored: frozenset = frozenset()  # the stop signals ignored when the block began: left ignored
    speaks: bool = True  # whether the lines go to the terminal: False in a process other than 0 of several

    def first(self) -> int | None:
        return self.received[0] if self.received else None

    def say(self, text: str) -> None:
        """One line in the terminal (stderr; unless `speaks` is off) and in progress.log; a terminal gone (SIGHUP) is
        not an error."""
        if self.speaks:
            with contextlib.suppress(OSError, ValueError):
                print(f"nht: {text}", file=self.terminal or sys.stderr, flush=True)
        if self.report is not None:
            with contextlib.suppress(OSError):
                self.report.log(text)

    def acknowledge(self, signum: int) -> None:
        name = signal_name(signum)
        if self.report is None:
            self.say(
                f"{name} received: stopping before the next compiled call, once the loading or compile in "
                f"flight ends; {again_text(signum)} stops at once"
            )
        else:
            self.say(
                f"{name} received after {self.report.where()}: stopping once the compiled call (or compile) in "
                f"flight ends; {again_text(signum)} stops at once"
            )

    def last_words(self, signum: int) -> None:
        name = signal_name(signum)
        if self.report is None:
            self.say(
                f"stopped at once by a second {name} while loading or compiling; run the same command again "
                f"to resume from the last checkpoint (or to start, without one)"
            )
        else:
            self.say(
                f"stopped at once by a second {name} during the call after {self.report.where()}; "
                f"{self.report.resume()}"
            )

    def on_signal(self, signum: int) -> None:
        """The watcher's reaction to one signal (module docstring)."""
        self.received.append(signum)
        if len(self.received) == 1:
            self.acknowledge(signum)
            return
        self.last_words(signum)
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(exit_code(signum))


_active: StopSignals | None = None


def requested() -> int | None:
    """The first stop signal received under the current `stop_on_signals` block; None without one (or a block)."""
    return _active.first() if _active is not None else None


@contextlib.contextmanager
def reporting(report: Report) -> Iterator[None]:
    """While the block runs, the lines about signals go to `report` (the training in progress) too.

    Args:
        report: the training's report.
    """
    active = _active
    if active is None:
        yield
        return
    previous, active.report = active.report, report
    try:
        yield
    finally:
        active.report = previous


def _watch(reader: socket.socket, stops: StopSignals) -> None:
    """The watcher thread: one byte per signal received (its number) until STOP_WATCHER."""
    while True:
        try:
            data = reader.recv(64)
        except InterruptedError:
            continue
        except OSError:
            return
        if not data:  # the other end closed
            return
        for signum in data:
            if signum == STOP_WATCHER:
                return
            if signum in STOP_SIGNALS:
                stops.on_signal(signum)


def _ignore(signum, frame) -> None:
    """The Python-level handler: nothing (the watcher thread reacts; raising here could land inside XLA)."""


def _install(stops: StopSignals) -> None:
    for sig in STOP_SIGNALS:
        if sig not in stops.ignored:
            signal.signal(sig, _ignore)


def handle_again() -> None:
    """Install the handlers of the current block again, after a library replaced one behind Python's back
    (`jax.distributed.initialize` starts a preemption notifier that takes SIGTERM in C++). Outside a block:
    nothing."""
    if _active is not None:
        _install(_active)


@contextlib.contextmanager
def stop_on_signals(terminal=None, then_default: bool = False) -> Iterator[StopSignals]:
    """Within the block, SIGINT, SIGTERM and SIGHUP stop the training at its next boundary, a second one at once
    (module docstring). On leaving, the previous handlers come back.

    Args:
        terminal: the stream the lines about signals go to (None: stderr).
        then_default: with a signal received, give the signals their default action on leaving instead (a command
            about to exit), so that a further one ends the process at once rather than raising KeyboardInterrupt
            somewhere in its exit.

    Yields:
        The `StopSignals` of the block (`received`: the signals in order).
    """
    global _active
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    stops = StopSignals(terminal, ignored=frozenset(sig for sig, h in previous.items() if h == signal.SIG_IGN))
    if threading.current_thread() is not threading.main_thread() or _active is not None:
        yield stops if _active is None else _active
        return
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    watcher = threading.Thread(target=_watch, args=(reader, stops), daemon=True, name="nht-stop-signals")
    watcher.start()
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    _active = stops
    try:
        _install(stops)  # all but those ignored (nohup's SIGHUP, a background job's SIGINT)
        yield stops
    finally:
        for sig, handler in previous.items():
            ending = then_default and stops.received and handler != signal.SIG_IGN
            signal.signal(sig, signal.SIG_DFL if ending or handler is None else handler)
        signal.set_wakeup_fd(previous_fd)
        _active = None
        with contextlib.suppress(OSError):
            writer.send(bytes([STOP_WATCHER]))
        watcher.join(timeout=5)
        writer.close()
        reader.close()


__all__ = ["Stopped", "exit_code", "reporting", "stop_on_signals"]
