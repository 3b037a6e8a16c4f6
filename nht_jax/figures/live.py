"""live.png: a sweep's live table at a glance (`nht_jax.training.live`; docs/guides/live.md).

Left: how many runs are in each state at each chunk (from live_history.csv). Right: every forecast of
T_transition against the step at which it was made, one line per run with its interval shaded, the diagonal
T = step (a forecast below it is overdue), and each measured T_transition as a dot on the diagonal in the run's
colour. Forecasts settling on a level line before the diagonal are the ones to trust."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib import rcParams

from nht_jax.figures.style import integer_ticks, save, subplots
from nht_jax.training.live import LIVE_PNG, STATES, read_history

STATE_COLOURS = {"not fitted": "#c44e52", "rising": "#4c72b0", "flat": "#8c8c8c", "contracting": "#dd8452",
                 "peaked and contracting": "#ccb974", "transitioned": "#55a868", "diverged": "#000000",
                 "waiting": "#dddddd"}
# Margins of the 11 × 4.2 in figure, room for the state legend between the panels. Drawn while a sweep trains,
# live.png is laid out by hand: matplotlib's tight layout and a cropped save render it three times, not once
# (0.50 s against 0.30 s of CPU for the full default's 16 runs × 100 chunks, 2026-12-02).
LAYOUT = dict(left=0.055, right=0.985, bottom=0.12, top=0.92, wspace=0.6)


def number(text: str) -> float:
    return float(text) if text not in ("", None) else np.nan


def draw(folder: Path) -> Path:
    """Draw live.png of `folder` from its live_history.csv (nothing to draw: an empty figure saying so)."""
    folder = Path(folder)
    rows = read_history(folder)  # a damaged file: one line (`live.LiveFileError`)
    fig, (states, forecasts) = subplots(1, 2, figsize=(11, 4.2))
    made = np.array([number(r["step"]) for r in rows])
    steps, at = np.unique(made, return_inverse=True)
    state_of = np.array([r["state"] for r in rows])
    for state in STATES:
        n = np.bincount(at[state_of == state], minlength=steps.size)
        if n.any():
            states.plot(steps, n, marker=".", color=STATE_COLOURS[state], label=state)
    states.set(xlabel="step", ylabel="runs", title="state of each run")
    integer_ticks(states.yaxis)  # counts of runs
    if rows:
        states.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    colours = rcParams["axes.prop_cycle"].by_key()["color"]
    top = steps.max() if steps.size else 1.0
    for k, run in enumerate(sorted({int(r["run"]) for r in rows})):
        mine = [r for r in rows if int(r["run"]) == run]
        t = np.array([number(r["step"]) for r in mine])
        hat, lo, hi = (np.array([number(r[c]) for r in mine]) for c in ("T_hat", "T_lo", "T_hi"))
        colour = colours[k % len(colours)]
        if np.isfinite(hat).any():
            forecasts.plot(t, hat, marker=".", color=colour, lw=1)
            forecasts.fill_between(t, lo, np.where(np.isfinite(hi), hi, np.nan), color=colour, alpha=0.15, lw=0)
            top = max(top, float(np.nanmax(hat)))
        measured = [number(r["T_transition"]) for r in mine if np.isfinite(number(r["T_transition"]))]
        if measured:
            forecasts.plot([measured[-1]], [measured[-1]], "o", color=colour, ms=6)
    forecasts.plot([0, top], [0, top], color="k", lw=0.8, ls="--", label="T = step")
    forecasts.set_ylim(0, 1.3 * top)  # an open interval (T_hi = ∞ or far) is cut at the frame
    forecasts.set(xlabel="step the forecast was made", ylabel="forecast $T_\\mathrm{transition}$ (steps)",
                  title="forecasts (line, interval shaded) and measured T (dot)")
    forecasts.legend(fontsize=7, loc="upper left")
    for ax in (states, forecasts):
        ax.title.set_fontsize(10)  # the right title fits the fixed margins
    fig.subplots_adjust(**LAYOUT)  # fixed margins: one rendering per drawing (tight layout and crop took three)
    save(fig, folder / LIVE_PNG, tight=False)
    return folder / LIVE_PNG


__all__ = ["draw"]
