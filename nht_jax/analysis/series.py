"""Per-run series helpers shared by the analyses (separation, layers, predictor): a run's leading columns, its
finite logs, the norm it is scored on, its first contracting peak, and the bootstrap of a pooled median."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nht_jax.results.folder import Results


class Pooled(NamedTuple):
    """A median over runs with its percentile-bootstrap interval."""

    n: int
    median: float
    lo: float
    hi: float


def bootstrap_median(values, confidence: float = 0.95, n_bootstrap: int = 2000, seed: int = 0) -> Pooled:
    """Median of the finite values and a percentile bootstrap interval for it.

    Args:
        values: the values.
        confidence: the interval's coverage.
        n_bootstrap: resamples of the values (0: no interval, NaN).
        seed: the bootstrap's random seed.

    Returns:
        The Pooled: n, median and interval (NaN where n = 0; the interval is the point itself where n = 1).
    """
    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return Pooled(0, np.nan, np.nan, np.nan)
    med = float(np.median(v))
    if n_bootstrap == 0:  # "no interval" (`nht_jax.analysis.bootstrap`)
        return Pooled(int(v.size), med, np.nan, np.nan)
    if v.size == 1:
        return Pooled(1, med, med, med)
    rng = np.random.default_rng(seed)
    boots = np.median(v[rng.integers(0, v.size, size=(n_bootstrap, v.size))], axis=1)
    alpha = (1.0 - confidence) / 2.0
    return Pooled(int(v.size), med, float(np.quantile(boots, alpha)), float(np.quantile(boots, 1.0 - alpha)))


def pool_mask(res: Results, regimes: tuple[str, ...]) -> tuple[np.ndarray, str]:
    """Runs whose summary regime is in `regimes`, and a note; every run (noted) when there is no summary."""
    if not res.summary:
        return np.ones(res.num_runs, bool), "no summary.csv: pooled over every run"
    return np.array([row["regime"] in regimes for row in res.summary]), f"pooled over {'/'.join(regimes)} runs"


def run_info(res: Results, i: int) -> dict:
    """The leading columns of a row: run index, its grid values, its regime."""
    row = {"run": i}
    for axis, values in res.hparams.items():
        v = values[i]
        row[axis] = int(v) if np.issubdtype(values.dtype, np.integer) else float(v)
    row["regime"] = res.summary[i]["regime"] if res.summary else ""
    return row


def resolve_norm_metric(res: Results, name: str) -> str:
    """ "auto" → "weight_norm_sq" when weight decay acts on weights only (optim.decay_on = "weights") and it is
    recorded, else "norm_sq" (the same rule as `nht_jax.theory.recorded`); any other name as given."""
    if name != "auto":
        return name
    if res.config.optim.decay_on == "weights" and "weight_norm_sq" in res.metrics:
        return "weight_norm_sq"
    return "norm_sq"


def finite_run(res: Results, i: int) -> np.ndarray:
    """True at logs where the run is still finite (the engine's "finite" metric; all True when absent)."""
    if "finite" in res.metrics:
        return np.asarray(res.metrics["finite"][i]) > 0
    return np.ones(res.steps.shape, bool)


__all__ = ["bootstrap_median"]
