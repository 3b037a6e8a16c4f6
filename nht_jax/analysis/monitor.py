"""Diagnose a run while it trains: from a history of (step, ‖θ‖²[, per-layer norms, train accuracy]) the current
state, the head-norm signal and a forecast of T_transition (docs/guides/monitor.md; docs/science.md §5).

The history comes from `nht_jax.engine.norm_monitor.history`, from `from_csv` (any framework's log) or from
`from_results` (one run of a results folder). `diagnose` and its definitions (each option a field of
`MonitorOptions`: diverged, T_fit, the recent window, trend, peak, signal, head warning, the forecast with its
V̂_post and interval) live in `nht_jax.measure.forecast.diagnosis`, the pure core a sweep also runs between chunks
(`nht_jax.training.live`); they are re-exported here unchanged.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.measure.forecast.diagnosis import Diagnosis, Forecast, MonitorOptions, diagnose
from nht_jax.measure.forecast.window import fit_floor
from nht_jax.results.folder import Results

LAYER_PREFIX = "layer_norm_sq/"
"""The toolkit's per-layer norm columns (`nht_jax.engine.metrics.VOCABULARY`)."""


def from_csv(
    path, step: str = "step", norm: str = "norm_sq", layer_prefix: str = LAYER_PREFIX, train_acc: str | None = "auto"
) -> dict:
    """The arguments of `diagnose` from a CSV of one run, any framework's. Rows with an empty norm cell (a metric
    logged at other steps) are dropped. `diagnose(**from_csv(p))`.

    Args:
        path: the CSV file.
        step: the column of steps.
        norm: the column of ‖θ‖².
        layer_prefix: the prefix of the layer columns, `layer_prefix`<name> ("" = none).
        train_acc: the column of the train accuracy ("auto": "train_acc" when present; None: none).

    Returns:
        `diagnose`'s keyword arguments.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"from_csv: no file {path}")
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        columns, rows = list(reader.fieldnames or []), list(reader)
    acc = ("train_acc" if "train_acc" in columns else None) if train_acc == "auto" else train_acc
    for name in (step, norm, *([acc] if acc else [])):
        if name not in columns:
            raise ConfigError(
                f"from_csv: {path} has no column {name!r} (columns: {', '.join(columns)}); "
                f"name it with step=, norm= or train_acc="
            )
    layer_columns = [c for c in columns if layer_prefix and c.startswith(layer_prefix)]
    kept = [r for r in rows if (r.get(norm) or "").strip()]

    def column(name):
        try:
            return np.array([float(r[name]) if (r[name] or "").strip() else math.nan for r in kept])
        except ValueError as err:
            raise ConfigError(
                f"from_csv: column {name!r} of {path} holds a value that is not a number ({err})"
            ) from None

    steps = column(step)
    if steps.size < 2 or not (np.diff(steps) > 0).all():
        raise ConfigError(f"from_csv: the {step!r} column of {path} must increase from row to row, two rows at least")
    return {
        "steps": steps,
        "norm_sq": column(norm),
        "layer_norms": {c[len(layer_prefix) :]: column(c) for c in layer_columns} or None,
        "train_acc": column(acc) if acc else None,
    }


def from_results(res: Results, run: int) -> dict:
    """The arguments of `diagnose` for one run of a results folder: its norm_sq, layer norms, and its summary's
    T_fit (the domain's own fit rule) or, without a summary, its train accuracy.

    Args:
        res: the results.
        run: the run's index.

    Returns:
        `diagnose`'s keyword arguments.
    """
    if not 0 <= run < res.num_runs:
        raise ConfigError(f"from_results: run {run} is not one of the folder's runs 0 … {res.num_runs - 1}")
    layers = {k[len(LAYER_PREFIX) :]: np.asarray(x[run]) for k, x in res.metrics.items() if k.startswith(LAYER_PREFIX)}
    out = {
        "steps": np.asarray(res.steps),
        "norm_sq": np.asarray(res.metrics["norm_sq"][run]),
        "layer_norms": layers or None,
    }
    if res.summary:
        t_fit = float(res.summary[run]["T_fit"])
        return {**out, "fitted_at": t_fit if np.isfinite(t_fit) else math.inf}
    return {**out, "train_acc": np.asarray(res.metrics["train_acc"][run]) if "train_acc" in res.metrics else None}


__all__ = ["Diagnosis", "Forecast", "MonitorOptions", "diagnose", "from_csv", "from_results", "fit_floor"]
