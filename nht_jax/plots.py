"""Figures of a results directory: the regime phase diagram and the trajectories; for grids over the
border correlation ρ also the (λ, ρ) phase diagram, clean accuracy against ρ and layer-wise norms."""

from __future__ import annotations

import collections
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from nht_jax.analysis import REGIMES  # noqa: E402
from nht_jax.config import AXES  # noqa: E402
from nht_jax.results import Results, atomic_write_bytes  # noqa: E402

REGIME_COLOURS = {"weak": "#4c72b0", "intermediate": "#55a868", "structured": "#8172b2", "strong": "#c44e52",
                  "diverged": "#7f7f7f"}
AXIS_LABELS = {"weight_decay": "weight decay λ", "learning_rate": "learning rate η", "seed": "seed",
               "init_scale": "init scale", "train_fraction": "train fraction", "rho": "border correlation ρ"}


def _save(fig, path: Path) -> None:
    import io
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(path, buffer.getvalue())


def second_axis(res: Results) -> str | None:
    """The y axis of the phase diagram: the first varied axis besides λ, preferring one that is not the seed."""
    varied = [a for a in AXES if a != "weight_decay" and len(res.axes[a]) > 1]
    non_seed = [a for a in varied if a != "seed"]
    return (non_seed or varied or [None])[0]


def phase_cells(res: Results):
    """{(λ index, y index): [summary rows]} pooling every axis other than λ and the y axis."""
    y_axis = second_axis(res)
    lams = res.axes["weight_decay"]
    ys = res.axes[y_axis] if y_axis else np.array([0])
    cells = collections.defaultdict(list)
    for row in res.summary:
        i = int(np.argmin(np.abs(lams - row["weight_decay"])))
        j = int(np.argmin(np.abs(ys - row[y_axis]))) if y_axis else 0
        cells[i, j].append(row)
    return y_axis, lams, ys, cells


def majority_regime(rows: list[dict]) -> str:
    counts = collections.Counter(r["regime"] for r in rows)
    return max(REGIMES, key=lambda r: (counts[r], -REGIMES.index(r)))


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
    ax.set_xlabel(AXIS_LABELS["weight_decay"] + " (log-spaced cells)")
    ax.set_ylabel(AXIS_LABELS.get(y_axis, ""))
    ax.set_title(f"{res.config.name}: regime per cell, number = median T_transition\n"
                 f"({criteria_text(res)}, {res.config.train.steps} steps)", fontsize=9)
    ax.legend(handles=[Patch(color=REGIME_COLOURS[r], label=r) for r in REGIMES], loc="upper left",
              bbox_to_anchor=(1.01, 1), fontsize=8)
    _save(fig, path)


def criteria_text(res: Results) -> str:
    """The fit and transition criteria in words, for titles."""
    a = res.config.analysis
    sign = "≥" if a.transition_direction == "above" else "≤"
    return (f"train acc ≥ {a.fit_threshold:g} fits, {a.transition_metric} {sign} {a.transition_threshold:g} "
            f"transitions")


def draw_trajectories(res: Results, path: Path) -> None:
    """Test (solid) and train (dotted) accuracy, and ‖θ‖², against step; one colour per λ."""
    lams = res.axes["weight_decay"]
    colours = plt.cm.viridis(np.linspace(0, 0.95, len(lams)))
    fig, (acc_ax, norm_ax) = plt.subplots(1, 2, figsize=(12, 4.2))
    for run in range(res.num_runs):
        i = int(np.argmin(np.abs(lams - res.hparams.weight_decay[run])))
        first = run == res.select(weight_decay=lams[i])[0]
        acc_ax.plot(res.steps, res.metrics["test_acc"][run], color=colours[i], lw=1.2,
                    label=f"λ={lams[i]:.3g}" if first else None)
        acc_ax.plot(res.steps, res.metrics["train_acc"][run], color=colours[i], lw=0.8, ls=":")
        norm_ax.plot(res.steps, res.metrics["norm_sq"][run], color=colours[i], lw=1.2)
    acc_ax.set(xlabel="step", ylabel="accuracy (solid test, dotted train)", ylim=(-0.02, 1.02))
    norm_ax.set(xlabel="step", ylabel="‖θ‖² (all parameters)", yscale="log")
    acc_ax.legend(fontsize=7, ncol=2)
    fig.suptitle(f"{res.config.name}: {res.num_runs} runs", fontsize=10)
    _save(fig, path)


def draw_all(res: Results) -> None:
    draw_phase_diagram(res, res.path / "phase_diagram.png")
    draw_trajectories(res, res.path / "trajectories.png")
    if len(res.axes["rho"]) > 1:
        from nht_jax.plots_rho import draw_clean_vs_rho, draw_layer_norms, draw_phase_lambda_rho

        draw_phase_lambda_rho(res, res.path / "phase_lambda_rho.png")
        draw_clean_vs_rho(res, res.path / "clean_vs_rho.png")
        draw_layer_norms(res, res.path / "layer_norms.png")


def figure_names(res: Results) -> list[str]:
    """The figures `draw_all` writes for this results directory."""
    names = ["phase_diagram.png", "trajectories.png"]
    if len(res.axes["rho"]) > 1:
        names += ["phase_lambda_rho.png", "clean_vs_rho.png", "layer_norms.png"]
    return names
