"""Metrics of consecutive blocks of runs joined along the run axis: the buckets of a sweep over static axes
(`nht_jax.training.buckets`) and the shards of a grid (`nht_jax.training.merge`) are joined the same way."""

from __future__ import annotations

import numpy as np


def merge_metrics(parts: list[tuple[dict, int]]) -> dict:
    """Metrics of consecutive blocks of runs [(metrics {name: (runs, L)}, runs), …] concatenated in order, with
    the union of their names: a block without a name gets NaN there (float; float32 unless it needs more)."""
    names = list(dict.fromkeys(name for metrics, _ in parts for name in metrics))
    out = {}
    for name in names:
        present = [np.asarray(m[name]) for m, _ in parts if name in m]
        logs = present[0].shape[1:]
        blocks = []
        for metrics, count in parts:
            if name in metrics:
                blocks.append(np.asarray(metrics[name]))
            elif count:
                dtype = np.result_type(present[0].dtype, np.float32)
                blocks.append(np.full((count, *logs), np.nan, dtype))
        out[name] = np.concatenate(blocks) if len(blocks) > 1 else blocks[0]
    return out


def metrics_not_in_every_bucket(metrics: dict, sizes: list[int]) -> list[str]:
    """The names of metrics that are NaN for every run of some bucket (and not for all runs)."""
    bounds = np.cumsum([0, *sizes])
    return sorted(
        name
        for name, v in metrics.items()
        if any(np.isnan(v[a:b]).all() for a, b in zip(bounds, bounds[1:])) and not np.isnan(v).all()
    )


__all__ = []
