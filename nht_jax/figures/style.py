"""What every figure of a results directory shares: the Agg backend, atomic PNG saving, regime colours and
letters, the majority regime of a cell, axis labels and the criteria text of titles."""

from __future__ import annotations

import collections
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from nht_jax.base.atomic import atomic_write_bytes  # noqa: E402
from nht_jax.run.summaries import REGIMES  # noqa: E402

REGIME_COLOURS = {"weak": "#4c72b0", "intermediate": "#55a868", "structured": "#8172b2", "strong": "#c44e52",
                  "diverged": "#7f7f7f"}
REGIME_LETTERS = {"weak": "W", "intermediate": "I", "structured": "S", "strong": "X", "diverged": "D"}


def save(fig, path: Path) -> None:
    """Write the figure as a PNG atomically and close it."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
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


__all__ = ["REGIME_COLOURS", "REGIME_LETTERS", "axis_label", "cells", "criteria_text", "majority_regime", "plt", "save"]
