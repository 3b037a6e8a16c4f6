"""Chunks: the steps a sweep trains between two moments where Python looks (progress bar, progress.log, checkpoints,
stop rules). A chunk is one compiled call of `GridRun.advance`, or a few; `ChunkSizer` decides which.

`execution.chunk_logs` ≥ 1 fixes every chunk's log intervals; 0 (the default) sizes chunks by the clock to about
`execution.chunk_seconds` each (`power_of_two_nearest`), so that every distinct call size compiles once and nothing
is compiled for a remainder. With a logging schedule of several segments (`nht_jax.config.schedule`) a chunk never
crosses a segment's end (`use(program, every)`). Chunking never changes a result: the metrics are the same scans
concatenated, bit for bit. (A chunk cuts time; the memory plan cuts the run axis into *run slices*,
`nht_jax.engine.memory`.)

How chunks are sized, and why: docs/guides/execution.md, "Chunks, progress and checkpoints"."""

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
