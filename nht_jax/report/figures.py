"""Figures of every results directory: the regime phase diagram and the trajectories, then the extra figures
its domain declares (`Domain.figures`, drawn by `nht_jax.report.axis_figures` when their axis varies)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from nht_jax.engine.grid import varied_axes
from nht_jax.report import axis_figures
from nht_jax.report.analysis import REGIMES
from nht_jax.report.style import REGIME_COLOURS, axis_label, cells, criteria_text, majority_regime, plt, save
from nht_jax.run.results import Results


def second_axis(res: Results) -> str | None:
    """The y axis of the phase diagram: the first varied axis besides λ, preferring one that is not the seed."""
    varied = [a for a in varied_axes(res.axes) if a != "weight_decay"]
    non_seed = [a for a in varied if a != "seed"]
    return (non_seed or varied or [None])[0]


def phase_cells(res: Results):
    """(y axis, λ values, y values, {(λ index, y index): [summary rows]}) pooling every other axis."""
    y_axis = second_axis(res)
    ys = res.axes[y_axis] if y_axis else np.array([0])
    return y_axis, res.axes["weight_decay"], ys, cells(res, "weight_decay", y_axis)


def draw_phase_diagram(res: Results, path: Path) -> None:
    """Cells over (λ, second axis) coloured by (majority) regime, annotated with the median T_transition."""
    y_axis, lams, ys, cells = phase_cells(res)
    grid = np.zeros((len(ys), len(lams)), int)
    fig, ax = plt.subplots(figsize=(1.0 + 0.95 * len(lams), 1.6 + 0.55 * len(ys)))
    for (i, j), rows in cells.items():
        regime = majority_regime(rows)
        grid[j, i] = REGIMES.index(regime)
        times = [r["T_transition"] for r in rows if not np.isnan(r["T_transition"])]
        label = f"{np.median(times):.0f}" if times else "–"
        agree = sum(r["regime"] == regime for r in rows)
        if agree < len(rows):
            label += f"\n{agree}/{len(rows)}"
        ax.text(i, j, label, ha="center", va="center", fontsize=8, color="white")
    ax.imshow(grid, cmap=ListedColormap([REGIME_COLOURS[r] for r in REGIMES]), vmin=-0.5, vmax=len(REGIMES) - 0.5,
              aspect="auto", origin="lower")
    ax.set_xticks(range(len(lams)), [f"{v:.3g}" for v in lams], rotation=45)
    ax.set_yticks(range(len(ys)), [f"{v:.3g}" for v in ys] if y_axis else [""])
    ax.set_xlabel(axis_label(res, "weight_decay") + " (log-spaced cells)")
    ax.set_ylabel(axis_label(res, y_axis) if y_axis else "")
    ax.set_title(f"{res.config.name}: regime per cell, number = median T_transition\n"
                 f"({criteria_text(res)}, {res.config.train.steps} steps)", fontsize=9)
    ax.legend(handles=[Patch(color=REGIME_COLOURS[r], label=r) for r in REGIMES], loc="upper left",
              bbox_to_anchor=(1.01, 1), fontsize=8)
    save(fig, path)


def draw_trajectories(res: Results, path: Path) -> None:
    """The domain's headline metric (solid) and train accuracy (dotted), and ‖θ‖², against step; one colour per λ."""
    headline = res.domain.headline_metric
    lams = res.axes["weight_decay"]
    colours = plt.cm.viridis(np.linspace(0, 0.95, len(lams)))
    fig, (acc_ax, norm_ax) = plt.subplots(1, 2, figsize=(12, 4.2))
    for run in range(res.num_runs):
        i = int(np.argmin(np.abs(lams - res.hparams["weight_decay"][run])))
        first = run == res.select(weight_decay=lams[i])[0]
        acc_ax.plot(res.steps, res.metrics[headline][run], color=colours[i], lw=1.2,
                    label=f"λ={lams[i]:.3g}" if first else None)
        acc_ax.plot(res.steps, res.metrics["train_acc"][run], color=colours[i], lw=0.8, ls=":")
        norm_ax.plot(res.steps, res.metrics["norm_sq"][run], color=colours[i], lw=1.2)
    acc_ax.set(xlabel="step", ylabel=f"solid {headline}, dotted train_acc", ylim=(-0.02, 1.02))
    norm_ax.set(xlabel="step", ylabel="‖θ‖² (all parameters)", yscale="log")
    acc_ax.legend(fontsize=7, ncol=2)
    fig.suptitle(f"{res.config.name}: {res.num_runs} runs", fontsize=10)
    save(fig, path)


def extra_figures(res: Results) -> dict[str, tuple[str, str]]:
    """The domain's extra figures whose axis varies in this grid: file name → (kind, axis)."""
    return {name: (kind, axis) for name, (kind, axis) in res.domain.figures.items()
            if axis in res.axes and len(res.axes[axis]) > 1}


def draw_all(res: Results) -> None:
    draw_phase_diagram(res, res.path / "phase_diagram.png")
    draw_trajectories(res, res.path / "trajectories.png")
    for name, (kind, axis) in extra_figures(res).items():
        axis_figures.DRAW[kind](res, axis, res.path / name)


def figure_names(res: Results) -> list[str]:
    """The figures `draw_all` writes for this results directory."""
    return ["phase_diagram.png", "trajectories.png", *extra_figures(res)]
