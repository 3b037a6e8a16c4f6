"""Extra figures a domain can declare (`Domain.figures`: file name → (kind, axis)), for grids over λ and a
second axis y (the border correlation ρ of the image domain: docs/science.md §6, Figs. 2–4). The metric drawn is the
domain's headline metric.

Kinds: `metric_phase` (cells over (λ, y) with the regime contours), `metric_against_axis` (the final metric against
y, one line per λ) and `layer_norms` (each layer's norm over its peak, per λ). On an irregular grid
(`Results.grid_kind`) the first two are scatters (`DRAW_IRREGULAR`) and `layer_norms` is skipped.

Each kind, what it averages and draws: docs/methods/index.md, "Figures"."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from matplotlib import cm
from matplotlib.colors import LogNorm, Normalize

from nht_jax.measure.summaries import PAPER_NAMES, REGIMES
from nht_jax.figures.style import (
    axis_label,
    caption,
    cells,
    criteria_text,
    label as human_label,
    majority_regime,
    REGIME_LETTERS,
    save,
    set_step_axis,
    subplots,
)


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
    fig, ax = subplots(figsize=(1.6 + 0.95 * len(lams), 1.8 + 0.6 * len(ys)))
    image = ax.imshow(accuracy, cmap="viridis", vmin=0, vmax=1, aspect="auto", origin="lower")
    for (i, j), rows in by_cell.items():
        agree = sum(r["regime"] == regimes[j, i] for r in rows)
        label = f"{REGIME_LETTERS[regimes[j, i]]}\n{accuracy[j, i]:.2f}"
        if agree < len(rows):
            label += f" ({agree}/{len(rows)})"
        ax.text(i, j, label, ha="center", va="center", fontsize=7, color="black" if accuracy[j, i] > 0.6 else "white")
    for edge_x, edge_y in regime_boundaries(regimes):
        ax.plot(edge_x, edge_y, color="white", lw=3.5, solid_capstyle="round")
        ax.plot(edge_x, edge_y, color="black", lw=1.5, solid_capstyle="round")
    ax.set_xticks(range(len(lams)), [f"{v:.3g}" for v in lams], rotation=45)
    ax.set_yticks(range(len(ys)), [f"{v:.3g}" for v in ys])
    ax.set_xlabel("weight decay λ (log-spaced cells)")
    ax.set_ylabel(axis_label(res, y_axis))
    fig.colorbar(image, ax=ax, label=f"final {human_label(headline)} (mean over seeds)", fraction=0.05)
    present = [r for r in REGIMES if (regimes == r).any()]
    legend = ", ".join(f"{REGIME_LETTERS[r]} = {r} ({PAPER_NAMES[r]})" for r in present)
    ax.set_title(f"{res.config.name}: (λ, {human_label(y_axis)}) phase diagram", fontsize=10)
    caption(
        fig,
        f"Colour and number: the final {human_label(headline)} of each cell (mean over its runs); letter: the "
        f"majority regime ({legend}), (k/n) the runs agreeing where they differ; lines separate regimes. "
        f"{criteria_text(res)}; {res.config.train.steps} steps.",
    )
    save(fig, path)


def draw_metric_against_axis(res, y_axis: str, path: Path) -> None:
    lams, ys, by_cell = lambda_y_cells(res, y_axis)
    headline = res.domain.headline_metric
    colours = cm.viridis(np.linspace(0, 0.95, len(lams)))
    fig, ax = subplots(figsize=(6.5, 4.2))
    for i, lam in enumerate(lams):
        values = [[r[f"final_{headline}"] for r in by_cell.get((i, j), [])] for j in range(len(ys))]
        mean = np.array([np.nanmean(v) if v else np.nan for v in values])
        std = np.array([np.nanstd(v) if v else np.nan for v in values])
        ax.errorbar(ys, mean, yerr=std, color=colours[i], marker="o", ms=4, capsize=2, label=f"λ={lam:.3g}")
    ax.set(
        xlabel=axis_label(res, y_axis),
        ylabel=f"final {human_label(headline)}",
        ylim=(-0.02, 1.02),
        title=f"{res.config.name}: {human_label(headline)} against {human_label(y_axis)}",
    )
    ax.legend(fontsize=7, ncol=2)
    caption(
        fig,
        f"The final {human_label(headline)} against {human_label(y_axis)}, one line per weight decay λ: the mean over "
        f"seeds with ± one standard deviation as bars (no bar: one seed).",
    )
    save(fig, path)


def layer_names(metrics: dict) -> list[str]:
    """Layer names of the layer_norm_sq/<name> metrics, input side first, head last."""
    names = [k.split("/", 1)[1] for k in metrics if k.startswith("layer_norm_sq/")]

    def rank(name: str):
        number = [int(n) for n in re.findall(r"\d+", name)]
        group = (
            0
            if name.startswith(("stem", "embed", "tok", "pos"))
            else 3
            if name == "dense"
            else 4
            if name == "head"
            else 1
            if name.startswith("conv")
            else 2
        )
        return group, number, name

    return sorted(names, key=rank)


def draw_layer_norms(res, y_axis: str, path: Path) -> None:
    lams, y_top = res.axes["weight_decay"], float(np.max(res.axes[y_axis]))
    names = layer_names(res.metrics)
    colours = cm.plasma(np.linspace(0, 0.9, max(len(names), 1)))
    panels = len(lams) + 1
    cols = min(panels, 4)
    rows = -(-panels // cols)
    fig, axes = subplots(rows, cols, figsize=(3.4 * cols, 2.8 * rows), squeeze=False)
    axes = axes.ravel()
    lam_colours = cm.viridis(np.linspace(0, 0.95, len(lams)))
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
            axes[panels - 1].plot(
                res.steps, res.metrics["head_to_first_ratio"][run], color=lam_colours[i], label=f"λ={lam:.3g}"
            )
    ratio_ax = axes[panels - 1]
    ratio_ax.set(title="head / first-layer ‖θ‖²", yscale="log")
    ratio_ax.legend(fontsize=6)
    for ax in axes[panels:]:
        ax.axis("off")
    for ax in axes[:panels]:
        set_step_axis(ax, res, fontsize=8)  # a log axis when the logging schedule is log-spaced
    fig.suptitle(f"{res.config.name}: layer norms over their peak", fontsize=10)
    fig.tight_layout()
    caption(
        fig,
        f"Each layer's squared norm divided by its own peak, against step, one panel per weight decay λ at "
        f"{human_label(y_axis)} = {y_top:g} (seed {int(res.hparams['seed'][0])}); dashed: the total ‖θ‖². Last "
        f"panel: the head / first-layer squared-norm ratio, one line per λ.",
    )
    save(fig, path)


DRAW = {
    "metric_phase": draw_metric_phase,
    "metric_against_axis": draw_metric_against_axis,
    "layer_norms": draw_layer_norms,
}
"""Figure kind (as a domain names it in `Domain.figures`) → drawing function (res, y_axis, path)."""


def _points(res, y_axis: str) -> dict[tuple[float, float], list[dict]]:
    """{(λ, y): [summary rows]}, every other axis (the seeds) pooled."""
    points: dict = {}
    for row in res.summary:
        points.setdefault((float(row["weight_decay"]), float(row[y_axis])), []).append(row)
    return points


def _log_x(ax, values) -> None:
    values = np.asarray(values, float)
    if (values > 0).all():
        ax.set_xscale("log")
    elif (values > 0).any():
        ax.set_xscale("symlog", linthresh=float(values[values > 0].min()))


def draw_metric_scatter(res, y_axis: str, path: Path) -> None:
    """metric_phase of an irregular grid: (λ, y) points coloured by the mean final headline metric, lettered by
    the majority regime (with the agreement where the pooled runs disagree)."""
    points = _points(res, y_axis)
    headline = res.domain.headline_metric
    fig, ax = subplots(figsize=(7.0, 4.6))
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    means = [np.nanmean([r[f"final_{headline}"] for r in rows]) for rows in points.values()]
    image = ax.scatter(xs, ys, c=means, cmap="viridis", vmin=0, vmax=1, s=70, edgecolors="black", linewidths=0.5)
    for (x, y), rows in points.items():
        regime = majority_regime(rows)
        agree = sum(r["regime"] == regime for r in rows)
        label = REGIME_LETTERS[regime] + (f" ({agree}/{len(rows)})" if agree < len(rows) else "")
        ax.annotate(label, (x, y), xytext=(5, 4), textcoords="offset points", fontsize=7)
    _log_x(ax, xs)
    ax.set(xlabel="weight decay λ", ylabel=axis_label(res, y_axis))
    fig.colorbar(image, ax=ax, label=f"final {human_label(headline)} (mean over seeds)", fraction=0.05)
    present = {majority_regime(rows) for rows in points.values()}
    legend = ", ".join(f"{REGIME_LETTERS[r]} = {r} ({PAPER_NAMES[r]})" for r in REGIMES if r in present)
    ax.set_title(f"{res.config.name}: (λ, {human_label(y_axis)}) points", fontsize=10)
    caption(
        fig,
        f"The points of an irregular grid, coloured by the final {human_label(headline)} (mean over the runs at "
        f"a point); letter: the majority regime ({legend}), (k/n) the runs agreeing where they differ. "
        f"{criteria_text(res)}; {res.config.train.steps} steps.",
    )
    save(fig, path)


def draw_metric_against_axis_scatter(res, y_axis: str, path: Path) -> None:
    """metric_against_axis of an irregular grid: every run's final headline metric against y, coloured by λ
    (log colour scale when every λ is positive)."""
    headline = res.domain.headline_metric
    lams = np.array([float(r["weight_decay"]) for r in res.summary])
    ys = np.array([float(r[y_axis]) for r in res.summary])
    finals = np.array([float(r[f"final_{headline}"]) for r in res.summary])
    norm = LogNorm(lams.min(), lams.max()) if (lams > 0).all() and lams.max() > lams.min() else Normalize()
    fig, ax = subplots(figsize=(6.5, 4.2))
    image = ax.scatter(ys, finals, c=lams, cmap="viridis", norm=norm, s=30)
    fig.colorbar(image, ax=ax, label="weight decay λ", fraction=0.05)
    ax.set(
        xlabel=axis_label(res, y_axis),
        ylabel=f"final {human_label(headline)}",
        ylim=(-0.02, 1.02),
        title=f"{res.config.name}: {human_label(headline)} against {human_label(y_axis)}",
    )
    caption(
        fig,
        f"Every run's final {human_label(headline)} (one point per run, an irregular grid), coloured by its weight "
        f"decay λ.",
    )
    save(fig, path)


DRAW_IRREGULAR = {"metric_phase": draw_metric_scatter, "metric_against_axis": draw_metric_against_axis_scatter}
"""The kinds drawn on an irregular grid, as scatters; a kind absent here (layer_norms) is skipped there."""

__all__ = ["DRAW", "DRAW_IRREGULAR"]
