"""Figures of grids over the border correlation ρ (PAPER.md §6, Figs. 2–4).

phase_lambda_rho.png  cells over (λ, ρ): colour = final clean accuracy (mean over seeds and any other
                      axis), letter = majority regime, thick lines on the edges between cells whose
                      majority regimes differ (the regime contours)
clean_vs_rho.png      final clean accuracy against ρ, one line per λ (mean ± standard deviation over seeds)
layer_norms.png       at the largest ρ: each layer's squared norm divided by its own peak, against
                      step, one panel per λ (first seed); the last panel is the head / first-layer
                      squared-norm ratio for every λ
"""

from __future__ import annotations

import collections
import re
from pathlib import Path

import numpy as np

from nht_jax.analysis import PAPER_NAMES, REGIMES
from nht_jax.plots import _save, criteria_text, majority_regime, plt
from nht_jax.results import Results

REGIME_LETTERS = {"weak": "W", "intermediate": "I", "structured": "S", "strong": "X", "diverged": "D"}


def lambda_rho_cells(res: Results) -> tuple[np.ndarray, np.ndarray, dict]:
    """(λ values, ρ values, {(λ index, ρ index): [summary rows]}) pooling every other axis."""
    lams, rhos = res.axes["weight_decay"], res.axes["rho"]
    cells = collections.defaultdict(list)
    for row in res.summary:
        i = int(np.argmin(np.abs(lams - row["weight_decay"])))
        j = int(np.argmin(np.abs(rhos - row["rho"])))
        cells[i, j].append(row)
    return lams, rhos, cells


def regime_boundaries(regimes: np.ndarray) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """Edges ((x0, x1), (y0, y1)) between horizontally or vertically adjacent cells of different regime.

    regimes: (n_rho, n_lambda) array of labels; cell (j, i) spans [i − ½, i + ½] × [j − ½, j + ½].
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


def draw_phase_lambda_rho(res: Results, path: Path) -> None:
    lams, rhos, cells = lambda_rho_cells(res)
    accuracy = np.full((len(rhos), len(lams)), np.nan)
    regimes = np.full((len(rhos), len(lams)), "", dtype=object)
    for (i, j), rows in cells.items():
        accuracy[j, i] = np.nanmean([r["final_test_acc"] for r in rows])
        regimes[j, i] = majority_regime(rows)
    fig, ax = plt.subplots(figsize=(1.6 + 0.95 * len(lams), 1.8 + 0.6 * len(rhos)))
    image = ax.imshow(accuracy, cmap="viridis", vmin=0, vmax=1, aspect="auto", origin="lower")
    for (i, j), rows in cells.items():
        agree = sum(r["regime"] == regimes[j, i] for r in rows)
        label = f"{REGIME_LETTERS[regimes[j, i]]}\n{accuracy[j, i]:.2f}"
        if agree < len(rows):
            label += f" ({agree}/{len(rows)})"
        ax.text(i, j, label, ha="center", va="center", fontsize=7,
                color="black" if accuracy[j, i] > 0.6 else "white")
    for xs, ys in regime_boundaries(regimes):
        ax.plot(xs, ys, color="white", lw=3.5, solid_capstyle="round")
        ax.plot(xs, ys, color="black", lw=1.5, solid_capstyle="round")
    ax.set_xticks(range(len(lams)), [f"{v:.3g}" for v in lams], rotation=45)
    ax.set_yticks(range(len(rhos)), [f"{v:.3g}" for v in rhos])
    ax.set_xlabel("weight decay λ (log-spaced cells)")
    ax.set_ylabel("border correlation ρ")
    fig.colorbar(image, ax=ax, label="final clean accuracy (mean over seeds)", fraction=0.05)
    present = [r for r in REGIMES if (regimes == r).any()]
    legend = ", ".join(f"{REGIME_LETTERS[r]} = {r} ({PAPER_NAMES[r]})" for r in present)
    ax.set_title(f"{res.config.name}: (λ, ρ) phase diagram, {res.config.train.steps} steps\n"
                 f"{criteria_text(res)}\n{legend}; lines separate regimes", fontsize=8)
    _save(fig, path)


def draw_clean_vs_rho(res: Results, path: Path) -> None:
    lams, rhos, cells = lambda_rho_cells(res)
    colours = plt.cm.viridis(np.linspace(0, 0.95, len(lams)))
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for i, lam in enumerate(lams):
        values = [[r["final_test_acc"] for r in cells.get((i, j), [])] for j in range(len(rhos))]
        mean = np.array([np.nanmean(v) if v else np.nan for v in values])
        std = np.array([np.nanstd(v) if v else np.nan for v in values])
        ax.errorbar(rhos, mean, yerr=std, color=colours[i], marker="o", ms=4, capsize=2, label=f"λ={lam:.3g}")
    ax.set(xlabel="border correlation ρ (training)", ylabel="final clean accuracy (mean ± sd over seeds)",
           ylim=(-0.02, 1.02), title=f"{res.config.name}: clean accuracy against ρ")
    ax.legend(fontsize=7, ncol=2)
    _save(fig, path)


def layer_names(metrics: dict) -> list[str]:
    """Layer names of the layer_norm_sq/<name> metrics, input side first, head last."""
    names = [k.split("/", 1)[1] for k in metrics if k.startswith("layer_norm_sq/")]

    def rank(name: str):
        number = [int(n) for n in re.findall(r"\d+", name)]
        group = (0 if name.startswith(("stem", "embed", "tok", "pos")) else 3 if name == "dense"
                 else 4 if name == "head" else 1 if name.startswith("conv") else 2)
        return group, number, name

    return sorted(names, key=rank)


def draw_layer_norms(res: Results, path: Path) -> None:
    lams, rho = res.axes["weight_decay"], float(np.max(res.axes["rho"]))
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
        runs = res.select(weight_decay=lam, rho=rho)
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
        axes[panels - 1].plot(res.steps, res.metrics["head_to_first_ratio"][run], color=lam_colours[i],
                              label=f"λ={lam:.3g}")
    ratio_ax = axes[panels - 1]
    ratio_ax.set(title="head / first-layer ‖θ‖²", yscale="log")
    ratio_ax.legend(fontsize=6)
    for ax in axes[panels:]:
        ax.axis("off")
    for ax in axes[:panels]:
        ax.set_xlabel("step", fontsize=8)
    fig.suptitle(f"{res.config.name}: layer norms / their peak at ρ = {rho:g} (seed {int(res.hparams.seed[0])})",
                 fontsize=10)
    fig.tight_layout()
    _save(fig, path)


__all__ = ["draw_clean_vs_rho", "draw_layer_norms", "draw_phase_lambda_rho", "lambda_rho_cells", "layer_names",
           "regime_boundaries"]
