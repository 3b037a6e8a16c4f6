"""Where a sweep's training wall time went: a cheap record of seconds per part, kept by the loop
(`nht_jax.training.loop`) and its hooks, written to meta.json as "profile" and read back by the end-to-end
benchmark (benchmarks/main_command.py).

Parts (seconds of wall time, summed over the sweep, each timed by `time.perf_counter` around the work itself):
"start", "compile", "train", each hook's part (`hooks.Hook.part`) and "loop", the rest. The record costs two clock
reads per hook call; it changes no result.

What each part counts: docs/guides/execution.md, "Chunks, progress and checkpoints"; measured:
docs/findings/timings.md."""

from __future__ import annotations

import contextlib
import time


class Timings:
    """Seconds per part (module docstring), in the order first met; `describe(wall)` adds "loop", the rest of
    the wall time."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.inner: list[float] = []  # per `timed` block open: the seconds of the blocks timed inside it

    def add(self, part: str, seconds: float) -> None:
        self.seconds[part] = self.seconds.get(part, 0.0) + float(seconds)

    def move(self, source: str, target: str, seconds: float) -> None:
        """Count `seconds` of `source` under `target` instead (a hook's time that was another part's work)."""
        if seconds:
            self.add(source, -seconds)
            self.add(target, seconds)

    @contextlib.contextmanager
    def timed(self, part: str):
        """Time the block under `part`, less the blocks timed inside it (each counted once, under its own part:
        a checkpoint's snapshots.npz under "snapshots", not also under "checkpoint")."""
        tick = time.perf_counter()
        self.inner.append(0.0)
        try:
            yield
        finally:
            took = time.perf_counter() - tick
            self.add(part, took - self.inner.pop())
            if self.inner:
                self.inner[-1] += took

    def total(self) -> float:
        return sum(self.seconds.values())

    def describe(self, wall: float) -> dict:
        """{part: seconds} rounded to the millisecond, with "loop" = wall − the timed parts (never below 0)."""
        parts = {part: round(s, 3) for part, s in self.seconds.items()}
        parts["loop"] = round(max(wall - self.total(), 0.0), 3)
        return parts


__all__ = ["Timings"]
