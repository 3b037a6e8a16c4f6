"""Figures of every results directory: the regime phase diagram and the trajectories, then the extra figures
its domain declares (`Domain.figures`, drawn by `nht_jax.figures.axis_figures` when their axis varies).

A product grid's phase diagram is cells over two axes; an irregular grid's (zipped or random axes,
`Results.grid_kind`) is a scatter of its points in the same two axes (`draw_phase_scatter`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib import cm
from matplotlib.colors import ListedColormap
from matplotlib.lines import Line2D

from nht_jax.base.atomic import remove_stale_temporaries
from nht_jax.engine.grid import PRODUCT, varied_axes
from nht_jax.figures import axis_figures
from nht_jax.measure.summaries import REGIMES
from nht_jax.figures.style import (
    axis_label,
    caption,
    cells,
    criteria_text,
    current_output,
    label as human_label,
    majority_regime,
    mark_legend_handles,
    output_names,
    REGIME_COLOURS,
    regime_handles,
    run_marks,
    noting,
    save,
    set_step_axis,
    subplots,
)
from nht_jax.figures import live as live_figure
from nht_jax.training import live as live_table
from nht_jax.results import lock
from nht_jax.results.folder import Results, load_results, partial_note, shard_note


def phase_axes(res: Results) -> tuple[str, str | None]:
    """(x, y) of the phase diagram: λ when it varies, else the first varied axis that is not the seed; y the next
    varied axis, preferring one that is not the seed (seeds are pooled, with the agreement shown)."""
    varied = varied_axes(res.axes)
    non_seed = [a for a in varied if a != "seed"]
    x = "weight_decay" if "weight_decay" in varied or not non_seed else non_seed[0]
    others = [a for a in non_seed if a != x] or [a for a in varied if a != x]
    return x, (others or [None])[0]


def phase_cells(res: Results):
    """(x axis, y axis, x values, y values, {(x index, y index): [summary rows]}) pooling every other axis."""
    x_axis, y_axis = phase_axes(res)
    ys = res.axes[y_axis] if y_axis else np.array([0])
    return x_axis, y_axis, res.axes[x_axis], ys, cells(res, x_axis, y_axis)


def cell_position(values: np.ndarray, x: float, log: bool) -> float:
    """Where the value x falls on an axis of cells 0, 1, … holding `values` (interpolated in log x on a log axis;
    beyond the ends, extrapolated by half a cell at most)."""
    values = np.asarray(values, float)
    if log:  # a λ = 0 cell has no logarithm: place it half a cell left of the smallest positive value
        positive = values > 0
        return float(np.interp(np.log(x), np.log(values[positive]), np.flatnonzero(positive))) if x > 0 else -0.5
    return float(np.interp(x, values, np.arange(len(values))))


def draw_boundaries(ax, res: Results, x_axis: str, y_axis: str | None, ys: np.ndarray, boundaries) -> None:
    """Estimated regime boundaries along the x axis as black lines, their intervals as grey bands, per y row.
    boundaries: `nht_jax.analysis.fits.Boundary` items (.axis, .transition, .slice = ((axis, value), …), .value, .ci,
    .ok)."""
    log = res.config.axes[x_axis].log
    xs = res.axes[x_axis]
    styles = {"weak→intermediate": "-", "intermediate→strong": "--"}
    drawn = set()
    for b in boundaries:
        if b.axis != x_axis or not b.ok:
            continue
        where = dict(b.slice)
        rows = [j for j, y in enumerate(ys) if y_axis is None or y_axis not in where or np.isclose(y, where[y_axis])]
        for j in rows:
            x = cell_position(xs, b.value, log)
            low, high = b.ci
            if np.isfinite(low) and np.isfinite(high):
                ax.fill_betweenx(
                    [j - 0.5, j + 0.5],
                    cell_position(xs, low, log),
                    cell_position(xs, high, log),
                    color="black",
                    alpha=0.18,
                    lw=0,
                )
            label = b.transition if b.transition not in drawn else None
            drawn.add(b.transition)
            ax.plot([x, x], [j - 0.5, j + 0.5], color="black", lw=1.6, ls=styles.get(b.transition, ":"), label=label)


def set_scale(ax, which: str, res: Results, axis: str, values) -> str:
    """A log scale on `which` ("x" or "y") when the Axis is log (symmetric log when a value is 0); its name."""
    values = np.asarray(values, float)
    if not res.config.axes[axis].log:
        return "linear"
    positive = values[values > 0]
    if len(positive) == len(values):
        getattr(ax, f"set_{which}scale")("log")
        return "log"
    getattr(ax, f"set_{which}scale")("symlog", linthresh=float(positive.min()) if len(positive) else 1.0)
    return "symmetric log"


def scatter_points(res: Results, x_axis: str, y_axis: str | None) -> dict[tuple[float, float], list[dict]]:
    """{(x, y): [summary rows]}: the runs at each point of the two axes (seeds and every other axis pooled)."""
    points: dict = {}
    for row in res.summary:
        points.setdefault((float(row[x_axis]), float(row[y_axis]) if y_axis else 0.0), []).append(row)
    return points


def draw_phase_scatter(res: Results, path: Path, boundaries=()) -> None:
    """The phase diagram of an irregular grid: one marker per point of (x, y) (the axes of `phase_axes`), on a
    log scale where the Axis is log, coloured by the majority regime of its runs (seeds pooled), labelled with
    the agreement where they disagree; boundaries (along x, ok ones) as a bar at their slice's y with their
    interval, or a vertical line and band when their slice does not fix y."""
    x_axis, y_axis = phase_axes(res)
    points = scatter_points(res, x_axis, y_axis)
    fig, ax = subplots(figsize=(7.0, 4.6))
    for (x, y), rows in points.items():
        regime = majority_regime(rows)
        agree = sum(r["regime"] == regime for r in rows)
        ax.scatter(
            [x],
            [y],
            s=60,
            color=REGIME_COLOURS[regime],
            edgecolors="black" if agree < len(rows) else "none",
            linewidths=0.8,
            zorder=3,
        )
        if agree < len(rows):
            ax.annotate(f"{agree}/{len(rows)}", (x, y), xytext=(4, 4), textcoords="offset points", fontsize=7)
    x_scale = set_scale(ax, "x", res, x_axis, [p[0] for p in points])
    y_scale = set_scale(ax, "y", res, y_axis, [p[1] for p in points]) if y_axis else "linear"
    handles = regime_handles(majority_regime(rows) for rows in points.values())
    styles = {"weak→intermediate": "-", "intermediate→strong": "--"}
    drawn = set()
    for b in boundaries:
        if b.axis != x_axis or not b.ok:
            continue
        where, (low, high) = dict(b.slice), b.ci
        label = b.transition if b.transition not in drawn else None
        drawn.add(b.transition)
        if y_axis and y_axis in where:
            xerr = [[b.value - low], [high - b.value]] if np.isfinite(low) and np.isfinite(high) else None
            ax.errorbar([b.value], [where[y_axis]], xerr=xerr, fmt="|", ms=16, color="black", capsize=3, label=label)
        else:
            if np.isfinite(low) and np.isfinite(high):
                ax.axvspan(low, high, color="black", alpha=0.12, lw=0)
            ax.axvline(b.value, color="black", lw=1.4, ls=styles.get(b.transition, ":"), label=label)
    if drawn:
        handles += ax.get_legend_handles_labels()[0]
    ax.set_xlabel(axis_label(res, x_axis) + f" ({x_scale} scale)")
    ax.set_ylabel(axis_label(res, y_axis) + f" ({y_scale} scale)" if y_axis else "")
    if not y_axis:
        ax.set_yticks([])
    groups = "; ".join(" with ".join(g) for g in res.config.zipped)
    ax.set_title(f"{res.config.name}: regime per point", fontsize=10)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    caption(
        fig,
        f"Regime of each point of an irregular grid ({res.num_runs} runs, {len(points)} points; paired: "
        f"{groups}); seeds pooled, colour = majority regime, k/n = runs agreeing with the colour"
        + ("; black lines: estimated boundaries, grey: their intervals" if drawn else "")
        + f". {criteria_text(res)}; {res.config.train.steps} steps.",
    )
    save(fig, path)


def draw_phase_diagram(res: Results, path: Path, boundaries=()) -> None:
    """Cells over (x, y) (λ and the second varied axis by default) coloured by majority regime, annotated with
    the median T_transition and, where pooled runs disagree, the agreement; with `boundaries` (from
    nht_jax.analysis.fits), the estimated regime boundaries and their intervals on top. An irregular grid gets
    `draw_phase_scatter` instead."""
    if res.grid_kind != PRODUCT:
        return draw_phase_scatter(res, path, boundaries)
    x_axis, y_axis, xs, ys, by_cell = phase_cells(res)
    grid = np.ma.masked_all((len(ys), len(xs)), int)  # a cell without runs (a shard's folder) stays blank
    fig, ax = subplots(figsize=(1.0 + 0.95 * len(xs), 1.6 + 0.55 * len(ys)))
    for (i, j), rows in by_cell.items():
        regime = majority_regime(rows)
        grid[j, i] = REGIMES.index(regime)
        times = [r["T_transition"] for r in rows if not np.isnan(r["T_transition"])]
        label = f"{np.median(times):.0f}" if times else "–"
        agree = sum(r["regime"] == regime for r in rows)
        if agree < len(rows):
            label += f"\n{agree}/{len(rows)}"
        ax.text(i, j, label, ha="center", va="center", fontsize=8, color="white")
    ax.imshow(
        grid,
        cmap=ListedColormap([REGIME_COLOURS[r] for r in REGIMES]),
        vmin=-0.5,
        vmax=len(REGIMES) - 0.5,
        aspect="auto",
        origin="lower",
    )
    handles = regime_handles(majority_regime(rows) for rows in by_cell.values())
    if len(boundaries):
        draw_boundaries(ax, res, x_axis, y_axis, ys, boundaries)
        handles += ax.get_legend_handles_labels()[0]
    ax.set_xticks(range(len(xs)), [f"{v:.3g}" for v in xs], rotation=45)
    ax.set_yticks(range(len(ys)), [f"{v:.3g}" for v in ys] if y_axis else [""])
    spacing = "log-spaced cells" if res.config.axes[x_axis].log else "cells"
    ax.set_xlabel(axis_label(res, x_axis) + f" ({spacing})")
    ax.set_ylabel(axis_label(res, y_axis) if y_axis else "")
    ax.set_title(f"{res.config.name}: regime per cell", fontsize=10)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    drawn = any(b.axis == x_axis and b.ok for b in boundaries)
    bounds = "; black lines: estimated boundaries, grey bands: their intervals" if drawn else ""
    caption(
        fig,
        f"Colour = majority regime of the cell's runs (other axes pooled); number = median "
        f"T_transition (– none), k/n = runs agreeing where they differ{bounds}. {criteria_text(res)}; "
        f"{res.config.train.steps} steps.",
    )
    save(fig, path)


def draw_trajectories(res: Results, path: Path, step_axis: str = "auto") -> None:
    """The domain's headline metric (solid) and the fit metric (dotted; train accuracy by default), and ‖θ‖²,
    against step; one colour per λ. Accuracies are drawn on [0, 1], other metrics (losses, fractions) on a log
    scale. Step on a log axis when the logging schedule is log-spaced (`style.STEP_AXES`: "auto", "log",
    "linear"). Each run's T_fit and T_transition (from its summary row) are short ticks in its colour along the
    bottom and top edges of both panels (`style.run_marks`). Fit for a paper: the legend beside the right panel
    names every colour, both line styles and both ticks, so no caption is needed (one is added with `--captions`,
    `style.FigureOutput.captions`); a ‖θ‖² the results hold as not logged (an import) is said in its panel."""
    headline, fit = res.domain.headline_metric, res.config.analysis.fit_metric
    lams = res.axes["weight_decay"]
    colours = cm.viridis(np.linspace(0, 0.95, len(lams)))
    fig, (acc_ax, norm_ax) = subplots(1, 2, figsize=(11, 4.2), layout="constrained")  # legend beside, kept in
    norm_logged = "norm_sq" not in res.not_logged
    for run in range(res.num_runs):
        i = int(np.argmin(np.abs(lams - res.hparams["weight_decay"][run])))
        first = run == res.select(weight_decay=lams[i])[0]
        acc_ax.plot(
            res.steps, res.metrics[headline][run], color=colours[i], lw=1.2, label=f"λ={lams[i]:.3g}" if first else None
        )
        acc_ax.plot(res.steps, res.metrics[fit][run], color=colours[i], lw=0.8, ls=":")
        if norm_logged:
            norm_ax.plot(res.steps, res.metrics["norm_sq"][run], color=colours[i], lw=1.2)
        if run < len(res.summary):
            times = {key: float(res.summary[run].get(key, np.nan)) for key in ("T_fit", "T_transition")}
            for ax in (acc_ax, norm_ax):
                run_marks(ax, times, colours[i])
    acc_ax.set(ylabel=f"{human_label(headline)} (solid), {human_label(fit)} (dotted)")
    if headline.endswith("_acc") and fit.endswith("_acc"):
        acc_ax.set_ylim(-0.02, 1.02)
    else:
        acc_ax.set_yscale("log")
    norm_ax.set(ylabel="‖θ‖² (all parameters)")
    if norm_logged:
        norm_ax.set_yscale("log")
    else:
        norm_ax.text(0.5, 0.5, "‖θ‖² not logged", transform=norm_ax.transAxes, ha="center", va="center", color="0.4")
        norm_ax.set_yticks([])
    for ax in (acc_ax, norm_ax):
        set_step_axis(ax, res, step_axis)
        ax.margins(x=0)  # the curves span the panel, first log to last
    handles, _ = acc_ax.get_legend_handles_labels()
    handles += [
        Line2D([], [], color="0.3", lw=1.2, label=human_label(headline)),
        Line2D([], [], color="0.3", lw=0.8, ls=":", label=human_label(fit)),
    ]
    marked = {line.get_gid() for ax in (acc_ax, norm_ax) for line in ax.lines} & {"T_fit", "T_transition"}
    handles += [h for h in mark_legend_handles() if h.get_gid() in marked]
    norm_ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        fontsize=7,
        borderaxespad=0,
        ncol=1 + len(handles) // 18,
    )
    origin = res.config.fork.origin_text() if res.config.fork else ""
    fig.suptitle(f"{res.config.name}: {res.num_runs} runs", fontsize=10)
    if current_output().captions or origin:
        caption(
            fig,
            f"One colour per weight decay λ (every seed drawn). Ticks along the bottom edge: each run's "
            f"T_fit; along the top edge: its T_transition (none: not reached). {criteria_text(res)}."
            + (f"\n{origin}" if origin else ""),
        )
    save(fig, path)


def extra_figures(res: Results) -> dict[str, tuple[str, str]]:
    """The domain's extra figures whose axis varies in this grid: file name → (kind, axis). On an irregular grid,
    only the kinds `axis_figures.DRAW_IRREGULAR` can draw as scatters (the others are skipped)."""
    kinds = axis_figures.DRAW if res.grid_kind == PRODUCT else axis_figures.DRAW_IRREGULAR
    return {
        name: (kind, axis)
        for name, (kind, axis) in res.domain.figures.items()
        if kind in kinds and axis in res.axes and len(res.axes[axis]) > 1
    }


def draw_all(res: Results, step_axis: str = "auto") -> None:
    draw_phase_diagram(res, res.path / "phase_diagram.png")
    draw_trajectories(res, res.path / "trajectories.png", step_axis)
    kinds = axis_figures.DRAW if res.grid_kind == PRODUCT else axis_figures.DRAW_IRREGULAR
    for name, (kind, axis) in extra_figures(res).items():
        kinds[kind](res, axis, res.path / name)
    if (res.path / live_table.LIVE_CSV).exists():  # a sweep with live.enabled: its live.png (nht_jax.training.live)
        live_figure.draw(res.path)


def figure_names(res: Results) -> list[str]:
    """The figures `draw_all` writes for this results directory, in the formats of the figure-output setting in
    force (`style.output_names`)."""
    live_png = [live_table.LIVE_PNG] if (res.path / live_table.LIVE_CSV).exists() else []
    return output_names(["phase_diagram.png", "trajectories.png", *extra_figures(res), *live_png])


def redraw(out: Path, step_axis: str = "auto", partial: bool = False) -> Results:
    """Load the results folder `out` and draw its figures (`nht report`, and `nht run` after training; step_axis:
    `style.STEP_AXES`). Drawing holds the folder's lock, so a redraw never races a sweep writing the same folder.
    partial: an unfinished sweep's folder is drawn from what it has logged so far, each title marked
    (`nht_jax.results.folder`: unfinished folders). A shard's folder draws its own runs, each title saying which
    shard (`shard_note`; its phase diagram's cells of other shards' runs left blank)."""
    if not Path(out).is_dir():
        return load_results(out)  # (a missing folder: "holds no results")
    with lock.hold(out, "nht report"):
        remove_stale_temporaries(out)  # a killed `nht report`'s half-written PNGs
        loaded = load_results(out, partial=partial)
        with noting("; ".join(filter(None, (partial_note(loaded), shard_note(loaded))))):
            draw_all(loaded, step_axis)
    return loaded
