"""Structure against accuracy: when the runs recorded the modular Fourier metrics (task.fourier_metrics), the step
the structured solution appears in the logits against the step the accuracy jumps.

Per run: T_structure = the first logged step with fourier_concentration ≥ `concentration_min` and
fourier_sum_energy ≥ `sum_energy_min` (nht_jax.domains.fourier, where the defaults are argued), against the
summary's T_transition; structure_lead = T_transition − T_structure (> 0: the structure came first). The
analysis applies only where the Fourier metrics were recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nht_jax.analysis.record import Analysis
from nht_jax.analysis.tables import Tabular
from nht_jax.domains import fourier
from nht_jax.results.folder import Results


@dataclass(frozen=True)
class StructureOptions:
    """The thresholds of T_structure (module docstring)."""

    concentration_min: float = fourier.STRUCTURE_THRESHOLD
    sum_energy_min: float = fourier.SUM_ENERGY_THRESHOLD


@dataclass(frozen=True)
class StructureReport(Tabular):
    """T_transition against T_structure, one row per run (`Tabular`)."""

    runs: tuple[dict, ...]
    options: StructureOptions = field(default_factory=StructureOptions)

    def rows(self) -> list[dict]:
        return list(self.runs)

    def markdown(self) -> str:
        both = [r for r in self.runs if np.isfinite(r["structure_lead"])]
        lead = (
            f"median lead {np.median([r['structure_lead'] for r in both]):.0f} steps over {len(both)} runs"
            if both
            else "no run has both times"
        )
        return (
            f"T_structure: fourier_concentration ≥ {self.options.concentration_min:g} and fourier_sum_energy ≥ "
            f"{self.options.sum_energy_min:g}; structure_lead = T_transition − T_structure ({lead}).\n\n" + self.table()
        )


def structure_rows(res: Results, options: StructureOptions = StructureOptions()) -> list[dict]:
    """Per run: T_transition (the summary's) against T_structure; [] when the Fourier metrics were not recorded."""
    if "fourier_concentration" not in res.metrics:
        return []
    times = fourier.structure_transition_times(
        res.steps, res.metrics, options.concentration_min, options.sum_energy_min
    )
    return [
        {
            "run": row["run"],
            "weight_decay": row["weight_decay"],
            "seed": row["seed"],
            "regime": row["regime"],
            "T_transition": row["T_transition"],
            "T_structure": float(t),
            "structure_lead": row["T_transition"] - float(t),
        }
        for row, t in zip(res.summary, times["T_structure"])
    ]


def structure_report(res: Results, options: StructureOptions = StructureOptions()) -> StructureReport | None:
    """The report of a loaded results directory; None when it holds no Fourier metrics (or no summary rows)."""
    rows = structure_rows(res, options)
    return StructureReport(tuple(rows), options) if rows else None


ANALYSIS = Analysis(
    name="structure",
    options=StructureOptions,
    run=lambda results, options, needed: structure_report(results, options),
    tables=lambda report: {"structure.csv": report.csv()},
    markdown=lambda report: "\n## Structure against accuracy (Fourier metrics)\n\n" + report.markdown(),
)
"""`nht analyze`'s record of structure against accuracy; it applies when the Fourier metrics were recorded."""


__all__ = ["ANALYSIS"]
