"""live.png: a sweep's live table at a glance (`nht_jax.training.live`; docs/guides/live.md).

Left: how many runs are in each state at each chunk (from live_history.csv). Right: every forecast of
T_transition against the step at which it was made, one line per run with its interval shaded, the diagonal
T = step (a forecast below it is overdue), and each measured T_transition as a dot on the diagonal in the run's
colour. Forecasts settling on a level line before the diagonal are the ones to trust."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib import cm, rcParams

from nht_jax.figures.style import integer_ticks, save, subplots
from nht_jax.training.live import COLUMNS, LIVE_PNG, STATES, LiveFileError, read_history, read_table

STATE_COLOURS = {
    "not fitted": "#c44e52",
    "rising": "#4c72b0",
    "flat": "#8c8c8c",
    "contracting": "#dd8452",
    "peaked and contracting": "#ccb974",
    "transitioned": "#55a868",
    "diverged": "#000000",
    "waiting": "#dddddd",
}
# Margins of the 12 × 4.2 in figure: room for the state legend between the panels and the runs' legend on the
# right. Drawn while a sweep trains, live.png is laid out by hand: matplotlib's tight layout and a cropped save render
# it three times, not once (0.50 s against 0.30 s of CPU for the full default's 16 runs × 100 chunks, 2026-12-02).
LAYOUT = dict(left=0.05, right=0.80, bottom=0.12, top=0.92, wspace=0.62)


def number(text: str) -> float:
    return float(text) if text not in ("", None) else np.nan


def run_labels(folder: Path) -> dict[int, str]:
    """{run: "run 3: λ=0.12, seed=1"} from live.csv's grid columns (the axes that vary); {} when it cannot be
    read (each line then "run 3")."""
    try:
        rows = read_table(folder)
    except LiveFileError:
        return {}
    axes = [c for c in (rows[0] if rows else {}) if c not in COLUMNS and c != "run"]
    varied = [a for a in axes if len({r[a] for r in rows}) > 1]
    names = {"weight_decay": "λ", "learning_rate": "η"}
    return {
        int(r["run"]): f"run {r['run']}: " + ", ".join(f"{names.get(a, a)}={plain(r[a])}" for a in varied)
        for r in rows
        if varied
    }


def plain(text: str) -> str:
    value = number(text)
    return f"{value:g}" if np.isfinite(value) else str(text)


def draw(folder: Path) -> Path:
    """Draw live.png of `folder` from its live_history.csv (nothing to draw: an empty figure saying so). Fit for a
    paper: both panels span their data (x from the first forecast step to the last, y to the largest forecast or
    measured T), every run's forecast line is named in the legend beside its panel, and no caption is baked in
    (the legends say what the lines, bands and dots are; docs/guides/live.md, the glossary's columns).

    Args:
        folder: the results folder.

    Returns:
        The path of live.png.
    """
    folder = Path(folder)
    rows = read_history(folder)  # a damaged file: one line (`live.LiveFileError`)
    fig, (states, forecasts) = subplots(1, 2, figsize=(12, 4.2))
    made = np.array([number(r["step"]) for r in rows])
    steps, at = np.unique(made, return_inverse=True)
    state_of = np.array([r["state"] for r in rows])
    for state in STATES:
        n = np.bincount(at[state_of == state], minlength=steps.size)
        if n.any():
            states.plot(steps, n, marker=".", ms=3, color=STATE_COLOURS[state], label=state)
    states.set(xlabel="step", ylabel="runs", title="state of each run")
    integer_ticks(states.yaxis)  # counts of runs
    if rows:
        states.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    runs = sorted({int(r["run"]) for r in rows})
    colours = (
        rcParams["axes.prop_cycle"].by_key()["color"]
        if len(runs) <= 10
        else [cm.tab20(i % 20) for i in range(len(runs))]
    )  # one colour per run, up to 20
    labels = run_labels(folder)
    last = steps.max() if steps.size else 1.0
    top = last
    for k, run in enumerate(runs):
        mine = [r for r in rows if int(r["run"]) == run]
        t = np.array([number(r["step"]) for r in mine])
        hat, lo, hi = (np.array([number(r[c]) for r in mine]) for c in ("T_hat", "T_lo", "T_hi"))
        colour = colours[k % len(colours)]
        measured = [number(r["T_transition"]) for r in mine if np.isfinite(number(r["T_transition"]))]
        label = labels.get(run, f"run {run}")  # on the run's first artist: its line, else its dot
        if np.isfinite(hat).any():
            forecasts.plot(t, hat, color=colour, lw=1.2, label=label)
            forecasts.fill_between(t, lo, np.where(np.isfinite(hi), hi, np.nan), color=colour, alpha=0.15, lw=0)
            top, label = max(top, float(np.nanmax(hat))), None
        if measured:
            forecasts.plot([measured[-1]], [measured[-1]], "o", color=colour, ms=5, label=label)
            top = max(top, measured[-1])
    forecasts.plot([0, last], [0, last], color="k", lw=0.8, ls="--", label="T = step (below: overdue)")
    forecasts.plot([], [], "o", color="0.4", ms=5, label="measured $T_\\mathrm{transition}$")
    forecasts.fill_between([], [], [], color="0.4", alpha=0.15, lw=0, label="the forecast's interval")
    forecasts.set_xlim(0, last)  # the steps at which forecasts were made
    forecasts.set_ylim(0, 1.05 * top)  # the largest forecast or measured T; an open interval is cut at the frame
    forecasts.set(
        xlabel="step the forecast was made",
        ylabel="forecast $T_\\mathrm{transition}$ (steps)",
        title="forecast of $T_\\mathrm{transition}$",
    )
    handles = forecasts.get_legend_handles_labels()[0]
    forecasts.legend(
        handles=handles,
        fontsize=7,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0,
        ncol=1 + len(handles) // 22,
    )
    for ax in (states, forecasts):
        ax.title.set_fontsize(10)
    fig.subplots_adjust(**LAYOUT)  # fixed margins: one rendering per drawing (tight layout and crop took three)
    save(fig, folder / LIVE_PNG, tight=False)
    return folder / LIVE_PNG


__all__ = ["draw"]
