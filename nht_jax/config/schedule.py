"""Logging schedules: at which steps a run is evaluated and its metrics recorded.

A schedule is a list of segments, each `(until, every)`: "evaluate every `every` steps up to step `until`", the
segments following one another from step 0; the logged steps are step 0 then every logged step of every segment in
order. Empty (the default) is the one-segment schedule [[train.steps, train.log_every]], left out of config.toml
and the results digest. Each segment's interval is static in the compiled program (`nht_jax.engine.loop`), and two
schedules over the same steps train exactly the same runs. "Log-spaced" (`LogSchedule.log_spaced`) schedules put the
figures' step axis on a log scale.

The TOML forms, the rules, what a schedule changes and what it does not: docs/configuration/index.md, "Logging
schedules"."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nht_jax.base.errors import ConfigError, check

SYNTAX = "[[until, every], …] or [{until = N, every = K}, …]"


def _whole(value) -> bool:
    return not isinstance(value, bool) and (isinstance(value, int) or (isinstance(value, float) and value.is_integer()))


@dataclass(frozen=True)
class LogSegment:
    """Evaluate every `every` steps up to step `until` (from the previous segment's end, or 0)."""

    until: int
    every: int

    @classmethod
    def from_toml(cls, where: str, value) -> "LogSegment":
        """A segment from `[until, every]` or `{until = N, every = K}` (ConfigError naming the form otherwise)."""
        if isinstance(value, dict):
            if set(value) != {"until", "every"}:
                raise ConfigError(
                    f"{where}: a segment table has exactly the keys until and every, got "
                    f"{sorted(value)}; write each segment as {SYNTAX}"
                )
            pair = [value["until"], value["every"]]
        elif isinstance(value, (list, tuple)) and len(value) == 2:
            pair = list(value)
        else:
            raise ConfigError(
                f"{where}: each segment is [until, every] or {{until = N, every = K}}, got {value!r}; "
                f"write the schedule as {SYNTAX}, e.g. [[500, 5], [3000, 50]]"
            )
        if not all(_whole(v) for v in pair):
            raise ConfigError(f"{where}: a segment's until and every are whole numbers of steps, got {value!r}")
        return cls(int(pair[0]), int(pair[1]))


@dataclass(frozen=True)
class LogSchedule:
    """The logged steps of a run (module docstring): `segments` in order, the last ending at the budget."""

    segments: tuple[LogSegment, ...]

    @classmethod
    def uniform(cls, steps: int, every: int) -> "LogSchedule":
        return cls((LogSegment(int(steps), int(every)),))

    @classmethod
    def of(cls, train) -> "LogSchedule":
        """A TrainConfig's schedule: `train.log_schedule`, or every `train.log_every` steps when it is empty."""
        return cls(tuple(train.log_schedule)) if train.log_schedule else cls.uniform(train.steps, train.log_every)

    @property
    def total_steps(self) -> int:
        return self.segments[-1].until

    @property
    def logs_per_segment(self) -> tuple[int, ...]:
        starts = (0, *(s.until for s in self.segments[:-1]))
        return tuple((s.until - a) // s.every for a, s in zip(starts, self.segments))

    @property
    def num_logs(self) -> int:
        """Log intervals (evaluations after step 0)."""
        return sum(self.logs_per_segment)

    @property
    def intervals(self) -> np.ndarray:
        """(num_logs,) steps trained before each log: Δt_j = t_j − t_{j−1}."""
        return np.repeat([s.every for s in self.segments], self.logs_per_segment).astype(np.int64)

    @property
    def steps(self) -> np.ndarray:
        """(num_logs + 1,) the logged steps t_0 = 0 < t_1 < … < t_J = the budget."""
        return np.concatenate([[0], np.cumsum(self.intervals)]).astype(np.int64)

    def is_logged(self, step: int) -> bool:
        """Whether `step` is a logged step, without building the step vector (a budget may be huge)."""
        start = 0
        for segment in self.segments:
            if step <= segment.until:
                return step >= start and (step - start) % segment.every == 0
            start = segment.until
        return False

    @property
    def is_uniform(self) -> bool:
        return len({s.every for s in self.segments}) == 1

    @property
    def log_spaced(self) -> bool:
        """At least two segments, each interval larger than the one before."""
        every = [s.every for s in self.segments]
        return len(every) > 1 and all(b > a for a, b in zip(every, every[1:]))

    def pieces(self, first_log: int, count: int) -> list[tuple[int, int]]:
        """Logs first_log + 1 … first_log + count as consecutive (logs, every) pieces, one per segment crossed."""
        out, at = [], 0
        for n, segment in zip(self.logs_per_segment, self.segments):
            lo, hi = max(first_log, at), min(first_log + count, at + n)
            if hi > lo:
                out.append((hi - lo, segment.every))
            at += n
        return out

    def segment_at(self, logs_done: int) -> tuple[int, int]:
        """(logs left in the segment of the next log, its every) after `logs_done` logs; (0, 0) at the end."""
        at = 0
        for n, segment in zip(self.logs_per_segment, self.segments):
            if logs_done < at + n:
                return at + n - logs_done, segment.every
            at += n
        return 0, 0

    def short(self) -> str:
        """ "every 50" (one interval: the words "log every 50" have always said), else `describe()`."""
        return f"every {self.segments[0].every}" if len(self.segments) == 1 else self.describe()

    def describe(self) -> str:
        """ "every 50 steps" or "every 5 steps to step 500, then every 50 to step 3000"."""
        if len(self.segments) == 1:
            return f"every {self.segments[0].every} steps"
        first, *rest = self.segments
        return f"every {first.every} steps to step {first.until}, " + ", ".join(
            f"then every {s.every} to step {s.until}" for s in rest
        )


def validate_schedule(segments, steps: int) -> None:
    """ConfigError saying the fix unless the segments make a schedule of `steps` steps (module docstring)."""
    where, previous = "train.log_schedule", 0
    for k, s in enumerate(segments):
        check(
            s.every > 0,
            f"{where}: segment {k + 1} [{s.until}, {s.every}] has every = {s.every}; an interval is at least 1 step",
        )
        check(
            s.until > previous,
            f"{where}: segment {k + 1} ends at step {s.until}, not after the previous end "
            f"({previous}); list the segments in increasing order of until",
        )
        length = s.until - previous
        check(
            length % s.every == 0,
            f"{where}: segment {k + 1} covers steps {previous}–{s.until} ({length} steps), not a multiple of its "
            f"every = {s.every}; make until − previous until a multiple of every (e.g. until = "
            f"{previous + max(1, round(length / s.every)) * s.every})",
        )
        previous = s.until
    check(
        previous == steps,
        f"{where} ends at step {previous}, but train.steps = {steps}; make the last segment's "
        f"until = {steps} (the schedule covers the whole budget)",
    )


__all__ = []
