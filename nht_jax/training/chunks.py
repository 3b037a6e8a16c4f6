"""Chunks: the steps a sweep trains between two moments where Python looks (progress bar, progress.log, checkpoints,
stop rules). A chunk is one compiled call of `GridRun.advance`, or a few; `ChunkSizer` decides which.

`execution.chunk_logs` ≥ 1: every chunk is one compiled call of exactly that many log intervals (the last takes what
is left). 0 (the default): chunks are sized by the clock to about `execution.chunk_seconds` each, whatever the
preset: one log interval first (that call compiles), one more to time it, then chunks of the power of two nearest
to chunk_seconds / (seconds per log interval) on a log scale (`power_of_two_nearest`: a chunk lasts between 1/√2
and √2 times chunk_seconds), resized only when they drift outside [¼, 2] × chunk_seconds. (Until 2026-12-03 the
power of two at or below was taken: with 3.1 s per log interval and 5-s chunks that is 1, so the default preset's
chunks never grew past one log interval of 50 steps and paid the work between chunks every 50 steps.) The
number of log intervals per call is static in the compiled program, so every distinct call size compiles once. A
chunk size is therefore compiled only when at least two whole chunks of it remain; otherwise (a short sweep, the end
of a sweep) the chunk runs as several calls of sizes compiled already (the bar still moves after each), so nothing is
compiled for a remainder: usually two programs in all (1 and the chunk size), one more per resizing. A chunk is
never shorter than one log interval: if one takes minutes, so does a chunk (a smaller `train.log_every` gives finer
progress but changes results). Chunking never changes a result: the metrics are the same scans concatenated, bit for
bit.

With a logging schedule of several segments (`train.log_schedule`, `nht_jax.config.schedule`) a chunk never crosses
a segment's end, since a call's interval is static: `use(program, every)` switches to the segment's interval, which
has its own compiled call sizes and its own pace (a log of every 50 steps takes about ten times one of every 5), so
each segment is sized as a sweep of its own interval would be.

(A chunk cuts time. The memory plan cuts the run axis into *run slices*, `nht_jax.engine.memory`; each run slice is
trained chunk by chunk.)
"""

from __future__ import annotations

import math

from nht_jax.config.sections import ExecutionConfig


class ChunkSizer:
    """Which compiled calls make the next chunk (module docstring): `next(remaining)` → call sizes in log
    intervals, `record(n, seconds)` after each call."""

    MAX_LOGS = 1 << 20

    def __init__(self, execution: ExecutionConfig):
        self.fixed = execution.chunk_logs
        self.target_s = execution.chunk_seconds
        self.size = 1  # log intervals per chunk (a power of two) when sized by time
        self.timed = False  # whether a call has been timed yet (until then the size is 1)
        self.compiled: set[int] = set()
        self.by_program: dict = {(None, None): self.compiled}
        self.every = None  # the interval of the calls now (a schedule segment's); None: the only one
        self.pace: dict = {}  # interval → (size, timed) of the intervals not in use

    def use(self, program, every: int | None = None) -> None:
        """Calls now go to another compiled program (a run slice's, or the smaller one a stop rule re-packed the
        runs into) or another log interval (a segment of the schedule): each pair has its own set of call sizes
        compiled already, each interval its own chunk size."""
        program_every = (program, every)
        self.compiled = self.by_program.setdefault(program_every, set())
        if every != self.every:
            self.pace[self.every] = (self.size, self.timed)
            self.size, self.timed = self.pace.get(every, (1, False))
            self.every = every

    def describe(self) -> str:
        if self.fixed:
            return f"chunks of {self.fixed} log intervals (execution.chunk_logs)"
        return f"chunks sized to about {self.target_s:g} s (execution.chunk_seconds)"

    def next(self, remaining: int) -> list[int]:
        if self.fixed:
            return [min(self.fixed, remaining)]
        if self.size not in self.compiled and remaining >= 2 * self.size:
            return [self.size]  # worth compiling: it makes at least two whole chunks
        calls, left = [], min(self.size, remaining)
        for size in sorted(self.compiled | {1}, reverse=True):  # sizes compiled already, largest first
            calls += [size] * (left // size)
            left %= size
        return calls

    def record(self, n: int, seconds: float) -> bool:
        """Note that a call of n logs took `seconds`; True when that call compiled (first call of its size)."""
        compiled = n not in self.compiled
        self.compiled.add(n)
        if self.fixed or compiled:  # a compiling call says nothing about the speed
            return compiled
        per_log = max(seconds, 1e-9) / n
        if not self.timed or not self.target_s / 4 <= self.size * per_log <= 2 * self.target_s:
            self.size = power_of_two_nearest(min(self.target_s / per_log, self.MAX_LOGS))
            self.timed = True
        return compiled


def power_of_two_at_most(x: float) -> int:
    """The largest power of two ≤ x, and 1 for x < 2."""
    return 1 << (int(x).bit_length() - 1) if x >= 2 else 1


def power_of_two_nearest(x: float) -> int:
    """The power of two nearest to x on a log scale (2^k with x ∈ [2^k/√2, 2^k·√2)), and 1 for x < √2."""
    k = power_of_two_at_most(x)
    return 2 * k if x >= k * math.sqrt(2) else k


__all__ = []
