"""`nht watch DIR`: the live table of a sweep that trains elsewhere (another terminal, another host with the folder
mounted), read from DIR/live.csv and DIR/progress.log (`nht_jax.training.live`; docs/guides/live.md).

It prints the table, then again whenever either file changes, until the sweep ends (no process holds the folder's
lock, `nht_jax.results.lock`, and the folder is finished or not: `results.check_folder`), then the last table with
how it ended. `new=True` (`nht watch --new`) follows the next sweep to start in DIR. A damaged live.csv
(`live.LiveFileError`) is shown as its one line and the watching goes on. Reads only; takes no lock.

When the watching ends, --new, and what Ctrl-C stops: docs/guides/live.md, "nht watch DIR"."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Callable

from nht_jax.base.errors import ConfigError
from nht_jax.results import lock
from nht_jax.results import folder as results
from nht_jax.training.live import COLUMNS, LIVE_CSV, LiveFileError, read_table
from nht_jax.training.progress import PROGRESS_LOG

SHOWN = ("run", "state", "step", "T_fit", "T_transition", "T_hat", "interval", "V_post", "source", "T_law")


def last_live_line(folder: Path) -> str:
    """The last "live at step …" line of progress.log (without its time stamp), or ""."""
    try:
        lines = (Path(folder) / PROGRESS_LOG).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return ""
    live = [line.split("  ", 1)[-1] for line in lines if "  live at step " in line]
    return live[-1] if live else ""


def number(text: str) -> str:
    if not text:
        return "–"
    value = float(text)
    return "∞" if math.isinf(value) else f"{value:.0f}" if abs(value) >= 10 else f"{value:.3g}"


def table_text(folder: Path) -> str:
    """The live table of `folder` as text: the last progress.log live line, then one line per run."""
    try:
        rows = read_table(folder)
    except LiveFileError as e:
        return f"{folder}: {e}"
    if not rows:
        return f"{folder}: no {LIVE_CSV} yet (the sweep has not finished its first chunk, or live.enabled = false)"
    axes = [c for c in rows[0] if c not in ("run", *COLUMNS) and len({r[c] for r in rows}) > 1]  # the grid's axes
    header = ["run", *axes, *SHOWN[1:]]
    lines = [
        [
            r["run"],
            *(r[a] for a in axes),
            r["state"] + (f" (stopped {number(r['stopped_step'])})" if r.get("stopped_step") else ""),
            number(r["step"]),
            number(r["T_fit"]),
            number(r["T_transition"]),
            number(r["T_hat"]),
            f"[{number(r['T_lo'])}, {number(r['T_hi'])}]" if r["T_hat"] else "–",
            number(r["V_post"]),
            (r["v_post_source"] + (f" {r['pilots']}" if r["pilots"] else "")) if r["T_hat"] else "–",
            number(r.get("T_law", "")),
        ]
        for r in rows
    ]
    widths = [max(len(str(x)) for x in column) for column in zip(header, *lines)]
    body = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip() for line in [header, *lines]]
    return "\n".join([f"{folder}: {last_live_line(folder) or 'live table'}", *body, *COLUMN_KEY])


COLUMN_KEY = (
    "T_hat [interval]: T_transition forecast from the run's own contraction, V falling at its recent rate to V_post",
    "V_post: where V settles after the transition; source: where V_post came from (pilot: runs of the grid that "
    "transitioned, their indices; floor: the asymptote of the run's own contraction)",
    "T_law: T_transition forecast by the first-passage law t + log(V_t / V★) / (κ·g), from T_fit on; "
    "every term: docs/glossary.md",
)
"""What the table's forecast columns mean, printed under it (the glossary, docs/glossary.md, says more)."""


def signature(folder: Path) -> tuple:
    """What changes when the sweep writes: (size, mtime) of live.csv and progress.log."""
    out = []
    for name in (LIVE_CSV, PROGRESS_LOG):
        try:
            st = (Path(folder) / name).stat()
            out.append((st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            out.append(None)
    return tuple(out)


def held(folder: Path) -> bool:
    """Whether another process holds the folder's lock (a sweep is writing it).

    Args:
        folder: the results folder.

    Returns:
        True when one does.
    """
    try:
        lock.raise_if_held(folder, "nht watch")
    except ConfigError:
        return True
    return False


def finished_text(check: results.FolderCheck) -> str:
    when = check.meta.get("finished") if check.meta else None
    return "finished: the folder is complete" + (f" (finished {when})" if when else "")


def ended(folder: Path) -> str:
    """How the sweep ended ("" while a process holds the folder): complete, or stopped (or not started).

    Args:
        folder: the results folder.

    Returns:
        The text, or "".
    """
    if held(folder):
        return ""
    check = results.check_folder(folder)
    if check.complete:
        return finished_text(check)
    return "no sweep holds the folder: it has stopped (run the same `nht run` again to resume) or not started"


def watch(folder, interval: float = 1.0, say: Callable[[str], None] = print, new: bool = False) -> str:
    """Print the table of `folder` and follow it until the sweep ends (module docstring).

    Args:
        folder: the results folder.
        interval: seconds between looks.
        say: where the lines go.
        new: wait for the next sweep to start there.

    Returns:
        How it ended.
    """
    folder = Path(folder)
    if not new and not folder.is_dir():
        raise ConfigError(
            f"nht watch: no folder {folder}; give the results folder of a sweep (its --out), or pass "
            f"--new to wait for a sweep to start there"
        )
    if not interval > 0:
        raise ConfigError(f"nht watch: --interval must be > 0 seconds, got {interval}")
    before = signature(folder)
    started = not new
    first = True  # the first look since a start was seen: a folder complete then is an earlier sweep's
    seen = None
    if new:
        say(f"{folder}: waiting for a sweep to start there (--new); Ctrl-C stops the watching")
    try:
        while True:
            # before reading: a sweep that ended has written its last table
            end = ended(folder) if folder.is_dir() else "not started"
            now = signature(folder)
            started = started or not end or now != before
            if not started:
                time.sleep(interval)
                continue
            if now != seen or end:
                say(table_text(folder))
                seen = now
            if end:
                if end.startswith("finished") and first and not new:
                    end += (
                        "; this is the table of the sweep that wrote it (to follow a sweep starting now: "
                        "nht watch --new DIR)"
                    )
                say(end)
                return end
            first = False
            time.sleep(interval)
    except KeyboardInterrupt:
        say("stopped watching (the sweep itself goes on)")
        return "interrupted"


__all__ = ["ended", "held", "watch"]
