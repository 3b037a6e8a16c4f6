"""What every figure of a results directory shares: figures made without pyplot (`subplots`), atomic PNG saving,
regime colours and letters, the majority regime of a cell, axis labels and the criteria text of titles.

No global state: every figure is a `matplotlib.figure.Figure` of its own, never registered with pyplot, and saved
to PNG by its own canvas, so importing or drawing never switches the backend of the process (a Jupyter kernel's
inline plots keep working) and nothing has to be closed."""

from __future__ import annotations

import collections
import io
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from nht_jax.base.atomic import atomic_write_bytes
from nht_jax.base.errors import check
from nht_jax.engine.schedule import LogSchedule
from nht_jax.measure.summaries import REGIMES

REGIME_COLOURS = {"weak": "#4c72b0", "intermediate": "#55a868", "structured": "#8172b2", "strong": "#c44e52",
                  "diverged": "#7f7f7f"}
REGIME_LETTERS = {"weak": "W", "intermediate": "I", "structured": "S", "strong": "X", "diverged": "D"}


def subplots(nrows: int = 1, ncols: int = 1, *, figsize=None, layout=None, **grid) -> tuple[Figure, object]:
    """`matplotlib.pyplot.subplots` without pyplot: (a new `Figure`, its axes as `Figure.subplots` returns them).
    figsize and layout go to the Figure, the rest (squeeze, sharex, …) to `Figure.subplots`."""
    fig = Figure(figsize=figsize, layout=layout)
    return fig, fig.subplots(nrows, ncols, **grid)


def save(fig, path: Path, tight: bool = True) -> None:
    """Write the figure as a PNG atomically; `tight`: cropped to its content (one more rendering)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight" if tight else None)
    atomic_write_bytes(path, buffer.getvalue())


def majority_regime(rows: list[dict]) -> str:
    counts = collections.Counter(r["regime"] for r in rows)
    return max(REGIMES, key=lambda r: (counts[r], -REGIMES.index(r)))


def axis_label(res, name: str) -> str:
    axis = res.config.axes.get(name)
    return axis.label if axis else name


SIGNS = {"above": "≥", "below": "≤"}


def criteria_text(res) -> str:
    """The fit and transition criteria in words, for titles."""
    a = res.config.analysis
    fit = "train acc" if a.fit_metric == "train_acc" else a.fit_metric
    origin = res.config.fork.origin_text() if res.config.fork else ""  # a fork: its origin on a line of its own
    return (f"{fit} {SIGNS[a.fit_direction]} {a.fit_threshold:g} fits, "
            f"{a.transition_metric} {SIGNS[a.transition_direction]} {a.transition_threshold:g} transitions"
            + (f"\n{origin}" if origin else ""))


STEP_AXES = ("auto", "log", "linear")
"""How figures draw step: "auto" (a log axis when the logging schedule is log-spaced, `LogSchedule.log_spaced`:
its intervals grow from segment to segment; linear otherwise), or always "log" or "linear"."""


def log_steps(res, step_axis: str = "auto") -> bool:
    """Whether step goes on a log axis (`STEP_AXES`)."""
    check(step_axis in STEP_AXES, f"step axis {step_axis!r} is not one of {', '.join(STEP_AXES)}")
    return step_axis == "log" or (step_axis == "auto" and LogSchedule.of(res.config.train).log_spaced)


def set_step_axis(ax, res, step_axis: str = "auto", fontsize=None) -> None:
    """Label the x axis "step", on a log axis when `log_steps`: symlog, linear below the first logged step after 0,
    so that step 0 (the initialisation) is drawn too."""
    if not log_steps(res, step_axis):
        ax.set_xlabel("step", fontsize=fontsize)
        return
    steps = np.asarray(res.steps, np.float64)
    ax.set_xscale("symlog", linthresh=float(steps[steps > 0].min()) if (steps > 0).any() else 1.0)
    ax.set_xlabel("step (log scale; linear below the first log)", fontsize=fontsize)


def cells(res, x_axis: str, y_axis: str | None) -> dict:
    """{(x index, y index): [summary rows]} pooling every other axis."""
    xs = res.axes[x_axis]
    ys = res.axes[y_axis] if y_axis else None
    out = collections.defaultdict(list)
    for row in res.summary:
        i = int(abs(xs - row[x_axis]).argmin())
        j = int(abs(ys - row[y_axis]).argmin()) if y_axis else 0
        out[i, j].append(row)
    return out


__all__ = ["REGIME_COLOURS", "REGIME_LETTERS", "STEP_AXES", "log_steps", "set_step_axis", "axis_label", "cells", "criteria_text", "majority_regime", "save", "subplots"]
