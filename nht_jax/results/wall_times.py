"""When the training logged each step, read from the folder's progress.log (`nht_jax.training.progress`): the
exports (`nht_jax.results.export`) give every logged value the training's own wall time, not the export's.

The training records no wall time per logged step (trajectories.npz holds values only, and nothing that changes
a training result is added for this): the times are derived from progress.log, whose lines carry an ISO time stamp
to the second. The rule, line by line in file order:
- the first "started …" line is when step 0 was logged (the loop evaluates step 0 before the first chunk; a
  resumed training and each static-axis bucket write one too, an `--overwrite` one starts afresh);
- a chunk line "step S/T … N runs … chunk …" (the runs followed, where there are several, by "(run slice k/K)"
  and "in bucket b/B") is when every logged step in (P, S] was logged, P being the previous chunk line's step of
  the same run slice and bucket (0 at first);
- "resumed at step C of T" forgets the times of steps after C (the resumed training logs them again).
A step gets the first time found for it after the last resume that concerns it, so with several run slices or
static-axis buckets (each trains every step, one after the other) it is the time the first of them logged it.
Steps no line covers (an imported folder has no progress.log) are NaN; the export then fills them (`export`)."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import numpy as np

STAMPED = re.compile(r"^(\S+)  (.*)$")
CHUNK = re.compile(r"^step (\d+)/\d+ \([^)]*\)  \d+ runs(.*?)  chunk ")
RESUMED = re.compile(r"^resumed at step (\d+)")


def stamp_seconds(stamp: str) -> float | None:
    """An ISO-8601 time stamp as POSIX seconds; None when the text is no time stamp."""
    try:
        return datetime.datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def log_wall_times(progress_text: str, steps) -> np.ndarray:
    """(logs,) POSIX seconds at which each logged step of `steps` was logged, by the rule of the module docstring;
    NaN where no line says."""
    steps = np.asarray(steps, dtype=np.int64)
    times = np.full(len(steps), np.nan)
    previous: dict[str, int] = {}
    for line in progress_text.splitlines():
        found = STAMPED.match(line)
        seconds = stamp_seconds(found.group(1)) if found else None
        if seconds is None:
            continue
        text = found.group(2)
        if text.startswith("started "):  # every start, a resumed one and each bucket's too
            if text.endswith("(--overwrite)"):
                times[:] = np.nan
            previous.clear()
            times[(steps == 0) & np.isnan(times)] = seconds
        elif resumed := RESUMED.match(text):
            times[steps > int(resumed.group(1))] = np.nan
            previous.clear()
        elif chunk := CHUNK.match(text):
            step, group = int(chunk.group(1)), chunk.group(2)
            covered = (steps > previous.get(group, 0)) & (steps <= step) & np.isnan(times)
            times[covered] = seconds
            previous[group] = step
    return times


def folder_wall_times(folder, steps) -> np.ndarray:
    """`log_wall_times` of folder/progress.log; all NaN when the folder has none (or no folder: None)."""
    path = Path(folder) / "progress.log" if folder is not None else None
    if path is None or not path.is_file():
        return np.full(len(steps), np.nan)
    return log_wall_times(path.read_text(encoding="utf-8", errors="replace"), steps)


__all__ = []
