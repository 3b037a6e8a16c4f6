"""Extra figures a domain can declare (`Domain.figures`: file name → (kind, axis)), for grids over λ and a
second axis y (the border correlation ρ of the image domain: PAPER.md §6, Figs. 2–4). The metric drawn is the
domain's headline metric.

metric_phase          cells over (λ, y): colour = final headline metric (mean over seeds and any other
                      axis), letter = majority regime, thick lines on the edges between cells whose
                      majority regimes differ (the regime contours)
metric_against_axis   the final headline metric against y, one line per λ (mean ± standard deviation over seeds)
layer_norms           at the largest y: each layer's squared norm divided by its own peak, against
                      step, one panel per λ (first seed); the last panel is the head / first-layer
                      squared-norm ratio for every λ (when recorded)
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from nht_jax.report.analysis import PAPER_NAMES, REGIMES
from nht_jax.report.style import REGIME_LETTERS, axis_label, cells, criteria_text, majority_regime, plt, save


def lambda_y_cells(res, y_axis: str) -> tuple[np.ndarray, np.ndarray, dict]:
    """(λ values, y values, {(λ index, y index): [summary rows]}) pooling every other axis."""
    return res.axes["weight_decay"], res.axes[y_axis], cells(res, "weight_decay", y_axis)


def regime_boundaries(regimes: np.ndarray) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """Edges ((x0, x1), (y0, y1)) between horizontally or vertically adjacent cells of different regime.

    regimes: (n_y, n_lambda) array of labels; cell (j, i) spans [i − ½, i + ½] × [j − ½, j + ½].
    """
    edges = []
    rows, cols = regimes.shape
    for j in range(rows):
        for i in range(cols):
            if i + 1 < cols and regimes[j, i] != regimes[j, i + 1]:
                edges.append(((i + 0.5, i + 0.5), (j - 0.5, j + 0.5)))
            if j + 1 < rows and regimes[j, i] != regimes[j + 1, i]:
                edges.append(((i - 0.5, i + 0.5), (j + 0.5, j + 0.5)))
    return edges


def draw_metric_phase(res, y_axis: str, path: Path) -> None:
    lams, ys, by_cell = lambda_y_cells(res, y_axis)
    headline = res.domain.headline_metric
    accuracy = np.full((len(ys), len(lams)), np.nan)
    regimes = np.full((len(ys), len(lams)), "", dtype=object)
    for (i, j), rows in by_cell.items():
        accuracy[j, i] = np.nanmean([r[f"final_{headline}"] for r in rows])
        regimes[j, i] = majority_regime(rows)
    fig, ax = plt.subplots(figsize=(1.6 + 0.95 * len(lams), 1.8 + 0.6 * len(ys)))
    image = ax.imshow(accuracy, cmap="viridis", vmin=0, vmax=1, aspect="auto", origin="lower")
    for (i, j), rows in by_cell.items():
        agree = sum(r["regime"] == regimes[j, i] for r in rows)
        label = f"{REGIME_LETTERS[regimes[j, i]]}\n{accuracy[j, i]:.2f}"
        if agree < len(rows):
            label += f" ({agree}/{len(rows)})"
        ax.text(i, j, label, ha="center", va="center", fontsize=7,
                color="black" if accuracy[j, i] > 0.6 else "white")
    for edge_x, edge_y in regime_boundaries(regimes):
        ax.plot(edge_x, edge_y, color="white", lw=3.5, solid_capstyle="round")
        ax.plot(edge_x, edge_y, color="black", lw=1.5, solid_capstyle="round")
    ax.set_xticks(range(len(lams)), [f"{v:.3g}" for v in lams], rotation=45)
    ax.set_yticks(range(len(ys)), [f"{v:.3g}" for v in ys])
    ax.set_xlabel("weight decay λ (log-spaced cells)")
    ax.set_ylabel(axis_label(res, y_axis))
    fig.colorbar(image, ax=ax, label=f"final {headline} (mean over seeds)", fraction=0.05)
    present = [r for r in REGIMES if (regimes == r).any()]
    legend = ", ".join(f"{REGIME_LETTERS[r]} = {r} ({PAPER_NAMES[r]})" for r in present)
    ax.set_title(f"{res.config.name}: (λ, {y_axis}) phase diagram, {res.config.train.steps} steps\n"
                 f"{criteria_text(res)}\n{legend}; lines separate regimes", fontsize=8)
    save(fig, path)


def draw_metric_against_axis(res, y_axis: str, path: Path) -> None:
    lams, ys, by_cell = lambda_y_cells(res, y_axis)
    headline = res.domain.headline_metric
    colours = plt.cm.viridis(np.linspace(0, 0.95, len(lams)))
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for i, lam in enumerate(lams):
        values = [[r[f"final_{headline}"] for r in by_cell.get((i, j), [])] for j in range(len(ys))]
        mean = np.array([np.nanmean(v) if v else np.nan for v in values])
        std = np.array([np.nanstd(v) if v else np.nan for v in values])
        ax.errorbar(ys, mean, yerr=std, color=colours[i], marker="o", ms=4, capsize=2, label=f"λ={lam:.3g}")
    ax.set(xlabel=axis_label(res, y_axis), ylabel=f"final {headline} (mean ± sd over seeds)",
           ylim=(-0.02, 1.02), title=f"{res.config.name}: {headline} against {y_axis}")
    ax.legend(fontsize=7, ncol=2)
    save(fig, path)


def layer_names(metrics: dict) -> list[str]:
    """Layer names of the layer_norm_sq/<name> metrics, input side first, head last."""
    names = [k.split("/", 1)[1] for k in metrics if k.startswith("layer_norm_sq/")]

    def rank(name: str):
        number = [int(n) for n in re.findall(r"\d+", name)]
        group = (0 if name.startswith(("stem", "embed", "tok", "pos")) else 3 if name == "dense"
                 else 4 if name == "head" else 1 if name.startswith("conv") else 2)
        return group, number, name

    return sorted(names, key=rank)


def draw_layer_norms(res, y_axis: str, path: Path) -> None:
    lams, y_top = res.axes["weight_decay"], float(np.max(res.axes[y_axis]))
    names = layer_names(res.metrics)
    colours = plt.cm.plasma(np.linspace(0, 0.9, max(len(names), 1)))
    panels = len(lams) + 1
    cols = min(panels, 4)
    rows = -(-panels // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.8 * rows), squeeze=False)
    axes = axes.ravel()
    lam_colours = plt.cm.viridis(np.linspace(0, 0.95, len(lams)))
    for i, lam in enumerate(lams):
        ax = axes[i]
        runs = res.select(weight_decay=lam, **{y_axis: y_top})
        if not len(runs):
            continue
        run = runs[0]
        for name, colour in zip(names, colours):
            values = res.metrics[f"layer_norm_sq/{name}"][run]
            ax.plot(res.steps, values / np.nanmax(values), color=colour, lw=1.1, label=name)
        total = res.metrics["norm_sq"][run]
        ax.plot(res.steps, total / np.nanmax(total), color="black", lw=1.3, ls="--", label="total")
        ax.set_title(f"λ={lam:.3g}", fontsize=9)
        ax.set_ylim(0, 1.05)
        if i == 0:
            ax.legend(fontsize=6, ncol=2)
        if "head_to_first_ratio" in res.metrics:
            axes[panels - 1].plot(res.steps, res.metrics["head_to_first_ratio"][run], color=lam_colours[i],
                                  label=f"λ={lam:.3g}")
    ratio_ax = axes[panels - 1]
    ratio_ax.set(title="head / first-layer ‖θ‖²", yscale="log")
    ratio_ax.legend(fontsize=6)
    for ax in axes[panels:]:
        ax.axis("off")
    for ax in axes[:panels]:
        ax.set_xlabel("step", fontsize=8)
    fig.suptitle(f"{res.config.name}: layer norms / their peak at {y_axis} = {y_top:g} "
                 f"(seed {int(res.hparams['seed'][0])})", fontsize=10)
    fig.tight_layout()
    save(fig, path)


DRAW = {"metric_phase": draw_metric_phase, "metric_against_axis": draw_metric_against_axis,
        "layer_norms": draw_layer_norms}
"""Figure kind (as a domain names it in `Domain.figures`) → drawing function (res, y_axis, path)."""

__all__ = ["DRAW", "draw_layer_norms", "draw_metric_against_axis", "draw_metric_phase", "lambda_y_cells",
           "layer_names", "regime_boundaries"]
