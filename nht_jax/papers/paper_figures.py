"""The figures of the paper (docs/science.md §6), each regenerated from a results directory: `nht paper figs`, and the thin
scripts in paper_figs/ (`python paper_figs/fig2_clean_vs_rho.py [RESULTS_DIR] [--out FILE.png] [--quick]`).

fig1–fig5 and the companion delay-law figure, each drawn from the preset that makes its results (`SOURCES`: default,
border-digits, celeba, toy-linear as offline stand-ins where the paper's data is CIFAR-10 or a GPU-sized sweep).
A figure's results directory (`find_results`) is RESULTS_DIR, else the first finished one under ROOT, else the
preset is trained at one of its own scales (`scale_of`); every caption says the data, the preset and the scale
(`scale_note`). Fig. 5 without CelebA is a notice saying how to get the data, never made-up curves.

Each figure, its source and stand-in, where the results come from: docs/papers/figures.md."""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from matplotlib import cm
from matplotlib.colors import Normalize

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.base.presets import QUICK, REDUCED
from nht_jax.measure.summaries import PAPER_NAMES, REGIMES
from nht_jax.figures.axis_figures import layer_names, regime_boundaries
from nht_jax.figures.style import (
    caption,
    cells,
    criteria_text,
    fit_drawable,
    label as human_label,
    majority_regime,
    REGIME_COLOURS,
    REGIME_LETTERS,
    save,
    subplots,
)
from nht_jax.results.folder import Results, load_results

DEFAULT_ROOT = Path("runs/out")
DEFAULT_OUT = DEFAULT_ROOT / "paper_figs"


# ----------------------------------------------------------------------------- where each figure's data comes from


@dataclass(frozen=True)
class Source:
    """The preset a figure is drawn from. Its sizes are the preset's own scales (`scale_of`). paper: the data of
    the paper's figure; stand_in: why this preset replaces it ("" when it does not); no_stand_in: why nothing
    replaces the data when it is missing; quick: whether --quick trains the preset's [scale.quick] (False: the
    figure keeps the preset's grid as shipped, which takes seconds)."""

    preset: str
    paper: str
    stand_in: str = ""
    no_stand_in: str = ""
    quick: bool = True


SOURCES = {
    "default": Source(
        "default",
        paper="CIFAR-10 with a spurious border",
        stand_in="grokking on modular addition, whose three regimes in λ are clean on a CPU",
    ),
    "border-digits": Source(
        "border-digits",
        paper="CIFAR-10 with a spurious border",
        stand_in="offline digits with the same border (CIFAR-10 needs tensorflow-datasets data)",
    ),
    "celeba": Source(
        "celeba",
        paper="CelebA (Smiling, spurious Blond_Hair)",
        no_stand_in="No offline dataset of nht_jax has groups (scikit-learn digits has none), so no "
        "offline run records worst-group accuracy: nothing replaces it.",
    ),
    "toy-linear": Source(
        "toy-linear",
        paper="a one-layer transformer on (a + b) mod 97 over λ and η (companion-transformer, GPU-sized)",
        stand_in="the exactly solvable linear model of the theory, on the same λ × η grid shape",
        quick=False,
    ),
}


MAX_SETTINGS = 3
"""Settings other than steps and grid listed by `scale_note` (the rest counted)."""


def shipped_preset(name: str):
    """The shipped preset of that name as a Config, or None."""
    try:
        return experiment.load(name)
    except ConfigError:
        return None


def preset_text(config) -> str:
    """ "preset NAME (scale note)", or "configuration NAME (not a shipped preset)"."""
    note = scale_note(config)
    return f"{'configuration' if note == 'not a shipped preset' else 'preset'} {config.name} ({note})"


def scale_note(config) -> str:
    """How the results' configuration differs from the shipped preset of its name: "preset as shipped", or
    "reduced scale: …" (fewer steps or runs) / "modified: …", listing steps, grid axes and other settings."""
    shipped = shipped_preset(config.name)
    if shipped is None:
        return "not a shipped preset"
    mine, theirs = experiment.to_dict(config), experiment.to_dict(shipped)
    notes, reduced = [], False
    if config.train.steps != shipped.train.steps:
        notes.append(f"{config.train.steps} of {shipped.train.steps} steps")
        reduced |= config.train.steps < shipped.train.steps
    for axis in list(mine["grid"]) + [a for a in theirs["grid"] if a not in mine["grid"]]:
        a, b = mine["grid"].get(axis, []), theirs["grid"].get(axis, [])
        if len(a) != len(b) or not np.allclose(np.asarray(a, float), np.asarray(b, float)):
            symbol = {"weight_decay": "λ", "learning_rate": "η", "rho": "ρ"}.get(axis, axis)
            shown = ", ".join(f"{v:g}" for v in a) if len(a) <= 4 else f"{len(a)} values"
            notes.append(f"{symbol} {shown} (preset: {len(b)} value{'s' * (len(b) != 1)})")
            reduced |= len(a) < len(b)
    settings = [
        f"{section}.{key} = {mine[section].get(key)!r} (preset: {theirs[section].get(key)!r})"
        for section in ("task", "model", "optim", "train", "analysis")
        for key in sorted(set(mine[section]) | set(theirs[section]))
        if key != "steps" and mine[section].get(key) != theirs[section].get(key)
    ]
    notes += settings[:MAX_SETTINGS] + (
        [f"{len(settings) - MAX_SETTINGS} more settings (see its config.toml)"] if len(settings) > MAX_SETTINGS else []
    )
    if not notes:
        return "preset as shipped"
    return ("reduced scale: " if reduced else "modified: ") + ", ".join(notes)


def data_source(config) -> str:
    """The data of a configuration in words."""
    task = config.task
    if task.name == "images":
        side = task.side
        names = {
            "digits": f"scikit-learn digits ({side}×{side}, offline)",
            "cifar10": "CIFAR-10",
            "celeba": f"CelebA {side}×{side} ({task.target_attribute}, spurious {task.spurious_attribute})",
            "waterbirds": f"Waterbirds {side}×{side}",
        }
        border = f" + spurious border ({task.border_width} px)" if task.border_width else ""
        return names.get(task.dataset, task.dataset) + border
    if task.name == "modular":
        return f"(a {task.op} b) mod {task.p}"
    if task.name == "toy_linear":
        return f"toy linear regression (n = {task.n}, d = {task.d}; exact model)"
    return f"task {task.name}"


def title_lines(res: Results, source: Source | None, what: str, width: int = 150) -> str:
    """`what`, then the data, preset and scale, then the stand-in note when the data is not the paper's; lines
    wrapped at `width` characters."""
    import textwrap

    lines = [what, *data_lines(res, source)]
    return "\n".join(textwrap.fill(line, width, break_long_words=False) for line in lines)


def data_lines(res: Results, source: Source | None) -> list[str]:
    """The data, preset and scale, then the stand-in note when the data is not the paper's: what every paper
    figure's caption starts with (its title is only the figure's name)."""
    lines = [
        f"Data: {data_source(res.config)}; {preset_text(res.config)}; "
        f"{res.num_runs} runs × {res.config.train.steps} steps."
    ]
    if source is not None and source.stand_in and res.config.name == source.preset:
        lines.append(f"Stand-in for the paper's {source.paper}: {source.stand_in}.")
    return lines


def paper_caption(fig, res: Results, source: Source | None, *more: str) -> None:
    """The caption under a paper figure: `more` (what the figure shows), then `data_lines`."""
    caption(fig, "\n".join([" ".join(m for m in more if m), *data_lines(res, source)]))


# ----------------------------------------------------------------------------- helpers on results


class FigureNeedsData(Exception):
    """The results cannot give this figure (an axis not varied, a metric not recorded); the message says why."""


def symbol(axis: str) -> str:
    return {
        "weight_decay": "λ",
        "learning_rate": "η",
        "rho": "ρ",
        "init_scale": "init scale",
        "train_fraction": "train fraction",
    }.get(axis, axis)


def varied(res: Results, exclude=("seed",)) -> list[str]:
    return [a for a, values in res.axes.items() if len(values) > 1 and a not in exclude]


def nearest(values, x: float) -> float:
    values = np.asarray(values, float)
    return float(
        values[np.argmin(np.abs(np.log(values) - np.log(x)) if (values > 0).all() and x > 0 else np.abs(values - x))]
    )


def pick_slice(res: Results, along: str, fixed: dict | None = None) -> dict:
    """Values of every varied axis other than `along` and the seed: those given in `fixed` (snapped to the grid),
    the others chosen to show the most regimes along `along` (ties: the most intermediate runs, then the larger
    value)."""
    fixed = {k: nearest(res.axes[k], v) for k, v in (fixed or {}).items() if k in res.axes}
    free = [a for a in varied(res) if a != along and a not in fixed]
    if not free:
        return fixed
    best, best_score = None, None
    for combo in np.array(np.meshgrid(*[res.axes[a] for a in free], indexing="ij")).reshape(len(free), -1).T:
        where = {**fixed, **dict(zip(free, map(float, combo)))}
        rows = [res.summary[i] for i in res.select(**where)]
        score = (len({r["regime"] for r in rows}), sum(r["regime"] == "intermediate" for r in rows), tuple(combo))
        if best_score is None or score > best_score:
            best, best_score = where, score
    return best


def slice_text(where: dict) -> str:
    return ", ".join(f"{symbol(k)} = {v:g}" for k, v in where.items())


def lambda_colours(n: int):
    return cm.viridis(np.linspace(0, 0.92, n))


def epochs_per_step(config) -> float | None:
    """1 / steps per epoch for image datasets of known size (None: plot steps)."""
    sizes = {"celeba": 162_770, "waterbirds": 4_795, "cifar10": 50_000, "digits": 1_347}
    n = sizes.get(getattr(config.task, "dataset", ""), 0)
    if not n or config.train.batch_size == 0:
        return None
    return 1.0 / (n // min(config.train.batch_size, n))


# ----------------------------------------------------------------------------- the figures


def draw_fig1(res: Results, path: Path, source: Source | None = None, fixed: dict | None = None) -> str:
    """Fig. 1: ‖θ‖² against step (seed mean) per λ; final headline metric and norm decay from peak against λ,
    coloured by the majority regime. Other varied axes are fixed (`pick_slice`)."""
    if len(res.axes["weight_decay"]) < 2:
        raise FigureNeedsData("fig1 needs a grid over λ (weight_decay has one value)")
    where = pick_slice(res, "weight_decay", fixed)
    headline = res.domain.headline_metric
    lams = res.axes["weight_decay"]
    fig, (norm_ax, acc_ax) = subplots(1, 2, figsize=(12, 4.6))
    xs, acc, decay, regimes = [], [], [], []
    for colour, lam in zip(lambda_colours(len(lams)), lams):
        runs = res.select(weight_decay=lam, **where)
        if not len(runs):
            continue
        norm = res.metrics["norm_sq"][runs]
        norm_ax.plot(res.steps, np.nanmean(norm, 0), color=colour, label=f"λ={lam:.3g}")
        peak, final = np.nanmax(norm, 1), norm[:, -1]
        xs.append(float(lam))
        acc.append(res.metrics[headline][runs, -1])
        decay.append((peak - final) / peak)
        regimes.append(majority_regime([res.summary[i] for i in runs]))
    norm_ax.set(xlabel="step", ylabel="‖θ‖² (seed mean)", yscale="log", title="norm per λ")
    norm_ax.legend(fontsize=7, ncol=2)
    for values, marker, style, label in (
        (acc, "o", "-", f"final {human_label(headline)}"),
        (decay, "s", "--", "norm decay from peak (V_peak − V_final)/V_peak"),
    ):
        means = np.array([np.nanmean(v) for v in values])
        spread = np.array([[m - np.nanmin(v), np.nanmax(v) - m] for v, m in zip(values, means)]).T
        acc_ax.errorbar(xs, means, yerr=spread, color="k", lw=0.8, ls=style, capsize=2)
        acc_ax.scatter(
            xs,
            means,
            c=[REGIME_COLOURS[r] for r in regimes],
            marker=marker,
            s=55,
            zorder=3,
            edgecolors="black",
            linewidths=0.4,
        )
        acc_ax.plot([], [], color="k", ls=style, marker=marker, mfc="white", label=label)
    for regime in dict.fromkeys(regimes):
        acc_ax.scatter([], [], color=REGIME_COLOURS[regime], label=f"{regime} ({PAPER_NAMES[regime]})")
    acc_ax.set(
        xscale="log" if min(xs) > 0 else "symlog",
        xlabel="weight decay λ",
        ylim=(-0.05, 1.05),
        ylabel="seed mean",
        title="regimes along λ",
    )
    acc_ax.legend(fontsize=7)
    extra = f"; fixed {slice_text(where)}" if where else ""
    fig.suptitle(f"Fig. 1 — three regimes in λ{extra}", fontsize=10)
    fig.tight_layout()
    paper_caption(
        fig,
        res,
        source,
        f"Left: ‖θ‖² against step, the mean over seeds, one colour per λ. Right: the "
        f"final {human_label(headline)} (circles) and the norm's decay from its peak (squares) "
        f"against λ, seed mean with bars from the smallest to the largest seed; colour = "
        f"the majority regime.",
        f"{criteria_text(res)}.",
    )
    save(fig, path)
    counts = collections.Counter(regimes)
    return f"regimes along λ{extra}: " + ", ".join(f"{k} {v}" for k, v in counts.items())


def require_rho(res: Results, figure: str) -> None:
    if "rho" not in res.axes or len(res.axes["rho"]) < 2:
        raise FigureNeedsData(
            f"{figure} needs a grid over the border correlation ρ (an images preset with "
            f"grid.rho = [several values], e.g. border-digits); '{res.path}' has none"
        )


def draw_fig2(res: Results, path: Path, source: Source | None = None, lam: float | None = None) -> str:
    """Fig. 2: final clean accuracy against ρ at a fixed λ (seed mean, bars min–max), the other λ thin for
    context. lam: the fixed λ (default: the grid's geometric middle)."""
    require_rho(res, "fig2")
    headline = res.domain.headline_metric
    lams, rhos = res.axes["weight_decay"], res.axes["rho"]
    chosen = nearest(lams, lam) if lam is not None else float(lams[(len(lams) - 1) // 2])
    fig, ax = subplots(figsize=(7.0, 4.6))
    for colour, value in zip(lambda_colours(len(lams)), lams):
        finals = [res.metrics[headline][res.select(weight_decay=value, rho=r), -1] for r in rhos]
        mean = np.array([np.nanmean(f) if len(f) else np.nan for f in finals])
        if np.isclose(value, chosen):
            low = np.array([np.nanmin(f) if len(f) else np.nan for f in finals])
            high = np.array([np.nanmax(f) if len(f) else np.nan for f in finals])
            ax.errorbar(
                rhos,
                mean,
                yerr=[mean - low, high - mean],
                color="black",
                lw=2.2,
                marker="o",
                capsize=3,
                zorder=4,
                label=f"λ = {value:.3g} (fixed)",
            )
            for r, m in zip(rhos, mean):
                ax.annotate(f"{m:.2f}", (r, m), xytext=(4, 6), textcoords="offset points", fontsize=7)
        else:
            ax.plot(rhos, mean, color=colour, lw=0.9, alpha=0.6, marker=".", label=f"λ = {value:.3g}")
    ax.set(
        xlabel="border correlation ρ (training)",
        ylabel=f"final {human_label(headline)} (seed mean)",
        ylim=(-0.02, 1.02),
    )
    ax.legend(fontsize=7, ncol=2)
    ax.set_title(f"Fig. 2 — {human_label(headline)} against ρ at λ = {chosen:.3g}", fontsize=10)
    paper_caption(
        fig,
        res,
        source,
        f"The final {human_label(headline)} against the training border correlation ρ at the "
        f"fixed λ = {chosen:.3g} (black: seed mean, bars from the smallest to the largest "
        f"seed), the other λ thin for context.",
    )
    save(fig, path)
    return f"fixed λ = {chosen:.3g}"


def draw_fig3(res: Results, path: Path, source: Source | None = None) -> str:
    """Fig. 3: cells over (λ, ρ) coloured by the seed-mean final clean accuracy, lettered by majority regime,
    with lines on the edges between cells of different regime."""
    require_rho(res, "fig3")
    headline = res.domain.headline_metric
    lams, rhos = res.axes["weight_decay"], res.axes["rho"]
    by_cell = cells(res, "weight_decay", "rho")
    accuracy = np.full((len(rhos), len(lams)), np.nan)
    regimes = np.full((len(rhos), len(lams)), "", dtype=object)
    for (i, j), rows in by_cell.items():
        accuracy[j, i] = np.nanmean([r[f"final_{headline}"] for r in rows])
        regimes[j, i] = majority_regime(rows)
    fig, ax = subplots(figsize=(max(6.5, 1.8 + 1.0 * len(lams)), 2.6 + 0.65 * len(rhos)))
    image = ax.imshow(accuracy, cmap="viridis", norm=Normalize(0, 1), aspect="auto", origin="lower")
    for (i, j), rows in by_cell.items():
        agree = sum(r["regime"] == regimes[j, i] for r in rows)
        label = f"{REGIME_LETTERS[regimes[j, i]]} {accuracy[j, i]:.2f}" + (
            f"\n{agree}/{len(rows)}" if agree < len(rows) else ""
        )
        ax.text(i, j, label, ha="center", va="center", fontsize=8, color="black" if accuracy[j, i] > 0.6 else "white")
    for edge_x, edge_y in regime_boundaries(regimes):
        ax.plot(edge_x, edge_y, color="white", lw=4, solid_capstyle="round")
        ax.plot(edge_x, edge_y, color="black", lw=1.8, solid_capstyle="round")
    ax.set_xticks(range(len(lams)), [f"{v:.3g}" for v in lams], rotation=45)
    ax.set_yticks(range(len(rhos)), [f"{v:.3g}" for v in rhos])
    ax.set(xlabel="weight decay λ (log-spaced cells)", ylabel="border correlation ρ")
    fig.colorbar(image, ax=ax, label=f"final {human_label(headline)} (seed mean)", fraction=0.05)
    present = [r for r in REGIMES if (regimes == r).any()]
    legend = ", ".join(f"{REGIME_LETTERS[r]} = {r} ({PAPER_NAMES[r]})" for r in present)
    ax.set_title("Fig. 3 — (λ, ρ) phase diagram", fontsize=10)
    paper_caption(
        fig,
        res,
        source,
        f"Colour and number: the final {human_label(headline)} of each cell (seed mean); "
        f"letter: the majority regime ({legend}); k/n = runs agreeing with the letter; "
        f"lines: regime contours.",
        f"{criteria_text(res)}.",
    )
    save(fig, path)
    counts = collections.Counter(r for r in regimes.ravel() if r)
    return "cells: " + ", ".join(f"{k} {v}" for k, v in counts.items())


def draw_fig4(
    res: Results, path: Path, source: Source | None = None, fixed: dict | None = None, lam: float | None = None
) -> str:
    """Fig. 4 at one slice of the other axes (`pick_slice`; e.g. the ρ with most regimes): (a) each layer's
    ‖θ‖² over its own peak and the total over its peak, for one run (an intermediate one when there is one,
    else the λ given or the middle λ; seed 0), with T_fit and T_transition; (b) total ‖θ‖² per λ; (c) the
    head / first-layer ratio per λ (first seed)."""
    from nht_jax.analysis.layers import layer_curves, resolve_layers

    names = layer_names(res.metrics)
    if not names:
        raise FigureNeedsData(f"fig4 needs per-layer norms (layer_norm_sq/<layer>); '{res.path}' records none")
    where = pick_slice(res, "weight_decay", fixed)
    lams = res.axes["weight_decay"]
    first_runs = {float(lam): res.select(weight_decay=lam, **where) for lam in lams}
    first_runs = {lam: runs[0] for lam, runs in first_runs.items() if len(runs)}
    if lam is not None:
        run = first_runs[nearest(list(first_runs), lam)]
    else:
        middle = first_runs[list(first_runs)[(len(first_runs) - 1) // 2]]
        intermediate = [r for r in first_runs.values() if res.summary[r]["regime"] == "intermediate"]
        run = intermediate[len(intermediate) // 2] if intermediate else middle
    head, first, _ = resolve_layers(res)
    curves = layer_curves(res, run)
    fig, (layer_ax, total_ax, ratio_ax) = subplots(1, 3, figsize=(15, 4.4))
    for name, colour in zip(names, cm.plasma(np.linspace(0, 0.85, len(names)))):
        layer_ax.plot(curves["steps"], curves[name], color=colour, lw=1.3, label=name)
    total = res.metrics["norm_sq"][run]
    layer_ax.plot(res.steps, total / np.nanmax(total), color="black", ls="--", lw=1.4, label="total")
    row = res.summary[run]
    for key, style in (("T_fit", ":"), ("T_transition", "-.")):
        if np.isfinite(row.get(key, np.nan)):
            layer_ax.axvline(row[key], color="grey", ls=style, lw=1, label=f"$T_\\mathrm{{{key[2:]}}}$")
    layer_ax.set(
        xlabel="step",
        ylabel="layer ‖θ‖² / its peak",
        ylim=(0, 1.05),
        title=f"one run: λ = {res.hparams['weight_decay'][run]:.3g}, seed {int(res.hparams['seed'][run])} "
        f"({row['regime']})",
    )
    layer_ax.legend(fontsize=7, ncol=2)
    for colour, (lam, r) in zip(lambda_colours(len(lams)), first_runs.items()):
        label = f"λ={lam:.3g} ({REGIME_LETTERS[res.summary[r]['regime']]})"
        total_ax.plot(res.steps, res.metrics["norm_sq"][r], color=colour, label=label)
        if "ratio" in curves:
            ratio = layer_curves(res, r)["ratio"]
            ratio_ax.plot(res.steps, ratio, color=colour, label=label)
    total_ax.set(xlabel="step", ylabel="‖θ‖² (all parameters)", yscale="log", title="total norm per λ (first seed)")
    total_ax.legend(fontsize=7, ncol=2)
    ratio_ax.set(xlabel="step", ylabel="head / first-layer ‖θ‖²", yscale="log", title="head / first-layer ratio")
    ratio_ax.legend(fontsize=7, ncol=2)
    extra = f"; fixed {slice_text(where)}" if where else ""
    fig.suptitle(f"Fig. 4 — layer-wise norms{extra}", fontsize=10)
    fig.tight_layout()
    shown = dict.fromkeys(res.summary[r]["regime"] for r in first_runs.values())
    paper_caption(
        fig,
        res,
        source,
        "Left: each layer's ‖θ‖² over its own peak for one run, with its T_fit and "
        "T_transition. Middle: the total ‖θ‖² per λ (first seed). Right: the ratio "
        f"‖θ‖² of the head ({head}) over that of the first layer ({first}), per λ. "
        "Letters: regime, " + ", ".join(f"{REGIME_LETTERS[r]} = {r}" for r in shown) + ".",
    )
    save(fig, path)
    return f"layers {', '.join(names)}; run {run} (λ = {res.hparams['weight_decay'][run]:.3g}){extra}"


def draw_fig5(res: Results, path: Path, source: Source | None = None) -> str:
    """Fig. 5: ‖θ‖², worst-group accuracy and average accuracy (clean_acc solid, training-weighted dashed)
    against epoch, one colour per λ (seed mean)."""
    if "worst_group_acc" not in res.metrics:
        raise FigureNeedsData(
            f"fig5 needs group metrics (worst_group_acc: CelebA or Waterbirds); "
            f"'{res.path}' ({data_source(res.config)}) records none"
        )
    lams = res.axes["weight_decay"]
    per_step = epochs_per_step(res.config)
    x = res.steps * per_step if per_step else res.steps
    fig, axes = subplots(1, 3, figsize=(15, 4.4))
    for colour, lam in zip(lambda_colours(len(lams)), lams):
        runs = res.select(weight_decay=lam)
        label = f"λ={lam:.3g}"
        axes[0].plot(x, np.nanmean(res.metrics["norm_sq"][runs], 0), color=colour, label=label)
        axes[1].plot(x, np.nanmean(res.metrics["worst_group_acc"][runs], 0), color=colour, label=label)
        axes[2].plot(x, np.nanmean(res.metrics["clean_acc"][runs], 0), color=colour, label=f"{label} average")
        if "weighted_avg_acc" in res.metrics:
            axes[2].plot(
                x,
                np.nanmean(res.metrics["weighted_avg_acc"][runs], 0),
                color=colour,
                ls="--",
                label=f"{label} train-weighted",
            )
    xlabel = "epoch" if per_step else "step"
    axes[0].set(xlabel=xlabel, ylabel="‖θ‖² (seed mean)", yscale="log", title="norm")
    axes[1].set(xlabel=xlabel, ylabel="worst-group accuracy", ylim=(-0.02, 1.02), title="worst group")
    axes[2].set(
        xlabel=xlabel, ylabel="accuracy", ylim=(-0.02, 1.02), title="average (solid) and train-weighted (dashed)"
    )
    for ax in axes:
        ax.legend(fontsize=7)
    fig.suptitle("Fig. 5 — norm, worst-group and average accuracy", fontsize=10)
    fig.tight_layout()
    paper_caption(
        fig,
        res,
        source,
        f"Against {xlabel}, one colour per λ, the mean over seeds: ‖θ‖², the worst-group "
        "accuracy, and the average accuracy (solid) with the training-weighted one "
        "(dashed).",
    )
    save(fig, path)
    return f"{len(lams)} λ, worst-group at the end: " + ", ".join(
        f"{np.nanmean(res.metrics['worst_group_acc'][res.select(weight_decay=lam), -1]):.2f}" for lam in lams
    )


def _fit_label(fit) -> str:
    if not fit.ok:
        return f"{fit.status}"
    ci = f" [{fit.slope_ci[0]:.3g}, {fit.slope_ci[1]:.3g}]" if np.all(np.isfinite(fit.slope_ci)) else ""
    return f"slope {fit.slope:.3g}{ci}, R² {fit.r2:.3f}"


def _fit_panel(ax, table, fits, x_of, colour_of, xlabel: str, empty: str, from_zero: bool = True) -> int:
    """Points (usable runs of each fit) and the fitted lines (from x = 0, showing the intercept, or over the
    points' range); returns the number of fits drawn."""
    drawn = 0
    for fit, colour in zip(fits, colour_of(len(fits))):
        if not fit.runs:
            continue
        where = np.isin(table.run, fit.runs)
        x, y = x_of(table)[where], table.delay[where]
        name = ", ".join(f"{symbol(a)}={v:g}" for a, v in fit.slice) or "all runs"
        ax.scatter(x, y, color=colour, s=18, zorder=3)
        if fit.ok and fit_drawable(x):
            grid = np.linspace(0 if from_zero else x.min(), x.max() * (1.05 if from_zero else 1.0), 50)
            ax.plot(
                grid,
                fit.intercept + fit.slope * grid,
                color=colour,
                lw=1.1,
                gid="fit",
                label=f"{name}: {_fit_label(fit)}",
            )
            drawn += 1
        elif fit.ok:
            ax.plot([], [], color=colour, marker="o", ls="none", label=f"{name}: too few points for a fit")
        else:
            ax.plot([], [], color=colour, label=f"{name}: {fit.status}")
    if not any(f.runs for f in fits):
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes, fontsize=8, wrap=True)
    ax.set(xlabel=xlabel, ylabel=human_label("delay"))
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6)
    return drawn


def draw_delay(res: Results, path: Path, source: Source | None = None, n_bootstrap: int = 300) -> str:
    """The companion delay-law figure: delay against 1/λ (one fit per η), against 1/η (one fit per λ), and
    against log(V_mem/V_post) (every usable run pooled), from `nht_jax.analysis.fits.fit_report` (intermediate
    runs; V_mem = ‖θ‖² at T_fit, V_post = ‖θ‖² at T_transition; 95 % seed-bootstrap slope intervals)."""
    from nht_jax.analysis.fits import FitOptions, fit_report

    report = fit_report(res, FitOptions(n_bootstrap=n_bootstrap))
    table = report["table"]
    by_kind = collections.defaultdict(list)
    for fit in report["delay_fits"]:
        by_kind[fit.kind].append(fit)
    skipped = {s["analysis"]: s["reason"] for s in report["skipped"]}
    fig, axes = subplots(1, 3, figsize=(16, 4.8))
    panels = (
        ("inverse_lambda", lambda t: 1 / t.axes["weight_decay"], "1/λ", cm.cool),
        ("inverse_eta", lambda t: 1 / t.axes["learning_rate"], "1/η", cm.autumn),
        ("log_norm_ratio", lambda t: np.log(t.v_fit / t.v_post), human_label("log_norm_ratio"), cm.winter),
    )
    drawn = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for ax, (kind, x_of, xlabel, cmap) in zip(axes, panels):
            fits = [f for f in by_kind.get(kind, []) if f.runs or not f.slice]
            empty = skipped.get(kind) or "no usable (intermediate) runs"
            drawn[kind] = _fit_panel(
                ax,
                table,
                fits,
                x_of,
                lambda n, c=cmap: c(np.linspace(0, 0.85, max(n, 1))),
                xlabel,
                empty,
                from_zero=kind != "log_norm_ratio",
            )
            ax.set_title(f"delay against {xlabel}", fontsize=10)
    usable = len(set().union(*[set(f.runs) for f in report["delay_fits"]])) if report["delay_fits"] else 0
    fig.suptitle("Companion figure — the delay law", fontsize=10)
    fig.tight_layout()
    paper_caption(
        fig,
        res,
        source,
        f"The delay T_transition − T_fit of {usable} usable (intermediate) runs against "
        f"1/λ (one least-squares line per η), 1/η (one per λ) and log(V_mem/V_post) "
        f"(every usable run pooled; V_mem = ‖θ‖² at T_fit, V_post = ‖θ‖² at "
        f"T_transition)."
        + (
            f" Legend: each slope with its 95 % seed-bootstrap interval [low, high] ({n_bootstrap} resamples) and R²."
            if sum(drawn.values())
            else ""
        )
        + " No line where fewer than 4 distinct x values were fitted (too few points "
        "for a fit).",
        f"{criteria_text(res)}.",
    )
    save(fig, path)
    return "fits drawn: " + ", ".join(f"{k} {v}" for k, v in drawn.items())


def draw_notice(path: Path, title: str, message: str) -> None:
    """A figure that draws no data: the title and why (wrapped)."""
    import textwrap

    fig, ax = subplots(figsize=(10, 4.2))
    ax.axis("off")
    body = "\n".join(textwrap.fill(part, 110) for part in message.split("\n"))
    title = textwrap.fill(title, 100)
    ax.text(
        0.0,
        1.0,
        f"{title}\n\nNOT DRAWN — no data shown.\n\n{body}",
        va="top",
        ha="left",
        fontsize=9,
        family="monospace",
        transform=ax.transAxes,
    )
    save(fig, path)


# ----------------------------------------------------------------------------- the registry and running


@dataclass(frozen=True)
class PaperFigure:
    key: str
    filename: str
    what: str
    source: Source
    draw: Callable


FIGURES = {
    f.key: f
    for f in (
        PaperFigure("fig1", "fig1_three_regimes.png", "three regimes in λ", SOURCES["default"], draw_fig1),
        PaperFigure(
            "fig2", "fig2_clean_vs_rho.png", "clean accuracy against ρ at fixed λ", SOURCES["border-digits"], draw_fig2
        ),
        PaperFigure("fig3", "fig3_phase_lambda_rho.png", "(λ, ρ) phase diagram", SOURCES["border-digits"], draw_fig3),
        PaperFigure("fig4", "fig4_layer_norms.png", "layer-wise norms", SOURCES["border-digits"], draw_fig4),
        PaperFigure(
            "fig5",
            "fig5_celeba_groups.png",
            "CelebA: norm, worst-group and average accuracy",
            SOURCES["celeba"],
            draw_fig5,
        ),
        PaperFigure("delay", "companion_delay_law.png", "companion delay law", SOURCES["toy-linear"], draw_delay),
    )
}
"""Every figure of docs/science.md §6 by key, in order."""


def finished(path: Path) -> bool:
    """A results directory whose sweep finished (meta.json is written last)."""
    return (Path(path) / "meta.json").exists() and (Path(path) / "trajectories.npz").exists()


def scale_of(source: Source, quick: bool) -> str | None:
    """The preset scale of the run a figure makes when it finds no results: with quick the preset's "quick" scale
    (unless the source keeps the shipped grid), else its "reduced" one (a GPU-sized preset cut to a CPU), else
    None (the preset as shipped is CPU-sized). It trains into ROOT/<preset>-<scale> (ROOT/<preset> for None)."""
    scales = experiment.scales(source.preset)
    if quick and source.quick and QUICK in scales:
        return QUICK
    return REDUCED if REDUCED in scales else None


def folder_name(source: Source, scale: str | None) -> str:
    return source.preset + (f"-{scale}" if scale else "")


def find_results(source: Source, root: Path, quick: bool) -> Path | None:
    """The first finished folder of ROOT/<preset>, ROOT/<preset>-reduced, and with quick ROOT/<preset>-quick."""
    suffixes = ["", "-reduced"] + (["-quick"] if quick else [])
    for suffix in suffixes:
        if finished(Path(root) / f"{source.preset}{suffix}"):
            return Path(root) / f"{source.preset}{suffix}"
    return None


def run_command(source: Source, out: Path, scale: str | None) -> str:
    return f"nht run {source.preset}{f' --scale {scale}' if scale else ''} --out {out}"


def data_missing(error: ConfigError) -> bool:
    """Whether a ConfigError of `run_sweep` says the dataset (or the package reading it) is not on this machine."""
    from nht_jax.vision.datasets.errors import DataNotFoundError

    return isinstance(error, DataNotFoundError) or "tensorflow-datasets, which is not installed" in str(error)


@dataclass
class Outcome:
    key: str
    png: Path
    status: str  # "drawn", "trained and drawn", "not drawn …", "FAILED, nothing written"
    results: Path | None
    note: str

    @property
    def failed(self) -> bool:
        return self.status.startswith("FAILED")

    def line(self) -> str:
        where = f" from {self.results}" if self.results else ""
        return f"{self.key:<6} {self.status}{where}: {self.png}\n       {self.note}"


def make_figure(
    key: str,
    results_dir: Path | None = None,
    out: Path | None = None,
    quick: bool = False,
    root: Path = DEFAULT_ROOT,
    allow_run: bool = True,
    progress: bool = True,
    **options,
) -> Outcome:
    """Draw figure `key` (a key of FIGURES) into `out` (default: DEFAULT_OUT/<filename>), from `results_dir` or
    the folder `find_results` picks, training the figure's preset first when there is none (unless allow_run is
    False: then a ConfigError gives the command). A dataset that is not on this machine, or results that cannot
    give the figure, give a notice PNG that says so (status "not drawn")."""
    from nht_jax.training.sweep import run_sweep

    figure = FIGURES[key]
    source = figure.source
    out = Path(out) if out else DEFAULT_OUT / figure.filename
    out.parent.mkdir(parents=True, exist_ok=True)
    scale = scale_of(source, quick)
    path = Path(results_dir) if results_dir else find_results(source, root, quick)
    trained = False
    if path is None or not finished(path):
        path = path or Path(root) / folder_name(source, scale)
        command = run_command(source, path, scale)
        if not allow_run:
            raise ConfigError(
                f"{key}: '{path}' holds no finished results; make them with `{command}`, or run without --no-run"
            )
        print(
            f"{key}: no results in {path}; training {source.preset}"
            f"{f' at scale {scale}' if scale else ' as shipped'}: {command}",
            flush=True,
        )
        try:
            config = experiment.load(source.preset, scale=scale)
            run_sweep(config, path, progress=progress)
        except ConfigError as error:
            if not data_missing(error):
                raise
            message = (
                f"The paper's figure uses {source.paper}, which is not on this machine. {source.no_stand_in}\n"
                f"{error}\nThen make the results: `{command}` ({scale or 'as shipped'} scale), or "
                f"`nht run {source.preset}` (full scale, accelerator), and draw: "
                f"`python paper_figs/{figure.filename[:-4]}.py {path}`."
            )
            draw_notice(out, f"Fig. {key[3:] or key} — {figure.what}: needs {source.paper}", message)
            return Outcome(key, out, "not drawn (needs data)", None, message.replace("\n", "\n       "))
        trained = True
    res = load_results(path)
    try:
        note = figure.draw(res, out, source, **options)
    except FigureNeedsData as reason:
        draw_notice(out, f"{key} — {figure.what}", str(reason))
        return Outcome(key, out, "not drawn", path, str(reason))
    note = f"{data_source(res.config)}; {preset_text(res.config)}; {note}"
    return Outcome(key, out, "trained and drawn" if trained else "drawn", path, note)


def check_figures(only) -> None:
    """ConfigError when `only` names a figure that is not in FIGURES (before anything is written)."""
    unknown = sorted(set(only or ()) - set(FIGURES))
    if unknown:
        raise ConfigError(f"unknown figure(s) {', '.join(unknown)}; choose among {', '.join(FIGURES)}")


def make_all(
    out_dir: Path = DEFAULT_OUT,
    quick: bool = False,
    root: Path = DEFAULT_ROOT,
    allow_run: bool = True,
    only=None,
    progress: bool = True,
) -> list[Outcome]:
    """Every figure (or those in `only`) into out_dir, printing what each used and how long it took."""
    check_figures(only)
    outcomes = []
    for key, figure in FIGURES.items():
        if only and key not in only:
            continue
        start = time.perf_counter()
        try:
            outcome = make_figure(
                key, out=Path(out_dir) / figure.filename, quick=quick, root=root, allow_run=allow_run, progress=progress
            )
        except ConfigError as error:  # this figure's results cannot be made or read: say why, go on
            outcome = Outcome(key, Path(out_dir) / figure.filename, "FAILED, nothing written", None, str(error))
        outcome.note += f" [{time.perf_counter() - start:.0f} s]"
        print(outcome.line(), flush=True)
        outcomes.append(outcome)
    return outcomes


# ----------------------------------------------------------------------------- the scripts of paper_figs/


def script_main(key: str, argv=None) -> int:
    """`python paper_figs/<figure>.py [RESULTS_DIR] [--out FILE.png] [--quick] [--no-run] [options]`.

    Args:
        key: the figure's key in FIGURES.
        argv: the command line's arguments (None: sys.argv's).

    Returns:
        The exit code: 0, or 2 on a ConfigError.
    """
    import argparse

    figure = FIGURES[key]
    source = figure.source
    scale, quick = scale_of(source, False), scale_of(source, True)
    parser = argparse.ArgumentParser(
        prog=f"{figure.filename[:-4]}.py",
        description=f"{figure.what} (docs/science.md §6) from a results directory of the {source.preset} preset.",
        epilog=f"Without RESULTS_DIR: the first finished of runs/out/{source.preset}, runs/out/{source.preset}-reduced "
        f"(and with --quick runs/out/{source.preset}-quick); when none, the preset is trained first "
        f"(into runs/out/{folder_name(source, scale)}, or runs/out/{folder_name(source, quick)} with "
        f"--quick).",
    )
    parser.add_argument("results", nargs="?", type=Path, help="results directory (made when it holds no results)")
    parser.add_argument("--out", type=Path, help=f"the PNG (default: runs/out/paper_figs/{figure.filename})")
    quick_settings = experiment.scales(source.preset)[quick].overrides if quick else ()
    parser.add_argument(
        "--quick",
        action="store_true",
        help="when training is needed, "
        + (f"the preset's scale {quick}: " + ", ".join(quick_settings) if quick else "the preset as shipped"),
    )
    parser.add_argument("--no-run", action="store_true", help="never train: say which command makes the results")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="where results folders are looked for")
    if key in ("fig2", "fig4"):
        parser.add_argument("--lam", type=float, help="the fixed λ (fig2) / the λ of the one-run panel (fig4)")
    if key in ("fig1", "fig4"):
        parser.add_argument("--rho", type=float, help="fix ρ (default: the ρ showing the most regimes)")
    args = parser.parse_args(argv)
    options = {}
    if getattr(args, "lam", None) is not None:
        options["lam"] = args.lam
    if getattr(args, "rho", None) is not None:
        options["fixed"] = {"rho": args.rho}
    try:
        outcome = make_figure(
            key, args.results, args.out, quick=args.quick, root=args.root, allow_run=not args.no_run, **options
        )
    except ConfigError as error:
        print(f"{figure.filename[:-4]}: error: {error}")
        return 2
    print(outcome.line())
    return 0


__all__ = ["FIGURES", "PaperFigure", "Source", "script_main"]
