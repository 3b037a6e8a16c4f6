"""W_c, the critical norm, measured from another results folder: what a norm clamp's `critical_from` refers to.

Our definition (the papers say only "the ‖θ‖ at which free runs grok"): W_c is the mean, over the source folder's
runs that transition (regime "intermediate" or "structured" under the [analysis] definitions, the source's by
default), of ‖θ‖ = √(norm_sq) at their T_transition. Its coefficient of variation (standard deviation / mean, over
the same runs; 0 for one run) says how well one number describes them (the papers report 1–2 % across seeds and
learning rates). `nht run` replaces an unresolved `optim.after` norm_clamp's `critical_from` by this value
(`nht_jax.engine.interventions.resolve_critical_norms`) before training: the value goes into config.toml (and so
the digest) as `critical_norm`, `critical_from` stays as its provenance, and meta.json's "critical_norm" records
the measurement (`CriticalNorm.describe`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import NamedTuple

import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.experiment import AnalysisConfig, Config
from nht_jax.results import folder as results
from nht_jax.measure import summaries

TRANSITIONING = ("intermediate", "structured")


class CriticalNorm(NamedTuple):
    """W_c of a folder: `value` (the mean ‖θ‖ at T_transition), `cv` (std / mean), the `runs` used with their
    ‖θ‖ (`norms`) and T_transition (`steps`), the folder and its results digest."""

    value: float
    cv: float
    runs: list
    norms: list
    steps: list
    folder: str
    digest: str

    def describe(self) -> dict:
        return {
            "from": self.folder,
            "source_digest": self.digest,
            "critical_norm": self.value,
            "coefficient_of_variation": self.cv,
            "runs": self.runs,
            "norm_at_transition": self.norms,
            "T_transition": self.steps,
            "definition": "mean over the runs that transition (intermediate, structured) of ‖θ‖ at T_transition",
        }


def critical_norm_of(folder, analysis: AnalysisConfig | None = None) -> CriticalNorm:
    """W_c of the results folder `folder` (module docstring), with the [analysis] definitions `analysis` (None:
    the folder's own). ConfigError when the folder is missing or incomplete, or none of its runs transitions."""
    path = Path(folder).expanduser().resolve()
    check = results.check_source_folder(
        path,
        f"critical_from = '{folder}'",
        "name the folder of a finished sweep of free runs (no clamp) for W_c to be measured from",
        "finish its sweep first",
    )
    res = results.load_results(path)
    rule = analysis or res.config.analysis
    rows = [
        summaries.summarize_run(res.steps, {k: v[i] for k, v in res.metrics.items()}, rule) for i in range(res.num_runs)
    ]
    used = [i for i, row in enumerate(rows) if row["regime"] in TRANSITIONING]
    if not used:
        counts = {r: sum(row["regime"] == r for row in rows) for r in summaries.REGIMES}
        raise ConfigError(
            f"critical_from = '{folder}': none of its {res.num_runs} runs transitions "
            f"({', '.join(f'{n} {r}' for r, n in counts.items() if n)}), so W_c is undefined; "
            f"train the free runs longer, or set critical_norm = W_c yourself"
        )
    norms = np.sqrt([rows[i]["norm_at_transition"] for i in used])
    value = float(norms.mean())
    return CriticalNorm(
        value,
        float(norms.std() / value),
        used,
        [float(n) for n in norms],
        [float(rows[i]["T_transition"]) for i in used],
        str(path),
        check.meta["config_digest"],
    )


def resolve(config: Config) -> tuple[Config, list[CriticalNorm]]:
    """`config` with every unresolved norm clamp's W_c measured (`critical_norm_of`, the source's [analysis]),
    and the measurements; unchanged (and []) when no clamp needs one."""
    if not config.optim.after:
        return config, []
    from nht_jax import experiment
    from nht_jax.engine import interventions

    if not interventions.critical_sources(config.optim.after):
        return config, []
    measured: dict[str, CriticalNorm] = {}

    def measure(folder: str) -> float:
        measured.setdefault(folder, critical_norm_of(folder))
        return measured[folder].value

    after = interventions.resolve_critical_norms(config.optim.after, measure)
    return experiment.revised(config, optim=dataclasses.replace(config.optim, after=after)), list(measured.values())


__all__ = []
