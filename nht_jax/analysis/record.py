"""What one analysis of `nht analyze` is: a record of its name, options and the functions that run, write, draw
and report it. Each analysis module ends with its record (`ANALYSIS = Analysis(...)`); nht_jax.analysis.registry
lists them in the order of analysis.md."""

from __future__ import annotations

from dataclasses import dataclass, is_dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from nht_jax.base.errors import check
from nht_jax.results.folder import Results


RESERVED = ("results", "markdown", "summary", "written", "tables", "applied")
"""Keys of `nht analyze`'s result beside the reports: no analysis may take them as its name."""


def no_tables(report) -> dict[str, str]:
    return {}


def no_figures(results: Results, report, folder: Path) -> tuple[str, ...]:
    return ()


def no_text(report) -> str:
    return ""


@dataclass(frozen=True)
class Analysis:
    """One analysis.

    name: its section: the key of `--set NAME.KEY=VALUE` options and of its report in `nht analyze`'s result.
    options: its options, a frozen dataclass whose every field has a default (built from `--set` by
        `nht_jax.base.schema.build`; bootstrapping analyses inherit `nht_jax.analysis.bootstrap.BootstrapOptions`).
    run: (results, options, needed) → its report, or None where it does not apply to these results (then
        nothing of it is written, drawn or printed); `needed` = {name: report} of the analyses in `needs`.
    tables: report → {file name: text}, files written atomically into the results folder.
    figures: (results, report, folder) → the names of the figures it drew into the folder.
    markdown: report → its section of analysis.md, heading included ("" for none).
    summary: report → what `nht analyze` prints of it ("" for nothing).
    needs: the analyses whose reports `run` reads; they run first, wherever they stand in the registry.
    metrics: the recorded metrics it cannot do without (("norm_sq",): ‖θ‖²). Where the results hold one as not
        logged (`Results.not_logged`: an import of logs without it), it is not run (its report None) and
        analysis.md and `nht analyze` say so in one line (`unmet_line`).
    """

    name: str
    options: type
    run: Callable[[Results, Any, Mapping[str, Any]], Any]
    tables: Callable[[Any], dict[str, str]] = no_tables
    figures: Callable[[Results, Any, Path], tuple[str, ...]] = no_figures
    markdown: Callable[[Any], str] = no_text
    summary: Callable[[Any], str] = no_text
    needs: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()

    def unmet(self, results: Results) -> tuple[str, ...]:
        """The metrics of `metrics` that `results` hold as not logged."""
        return tuple(m for m in self.metrics if m in results.not_logged)

    def __post_init__(self):
        check(
            self.name.isidentifier(),
            f"an analysis name must be an identifier (it is a --set section), got {self.name!r}",
        )
        check(self.name not in RESERVED, f"an analysis cannot be named {self.name!r} (reserved: {', '.join(RESERVED)})")
        check(
            is_dataclass(self.options) and isinstance(self.options, type),
            f"analysis {self.name}: options must be a dataclass (got {self.options!r})",
        )
        check(not isinstance(self.needs, str), f"analysis {self.name}: needs must be a tuple of names")


METRIC_WORDS = {"norm_sq": "‖θ‖² (norm_sq)"}


def unmet_line(analysis: Analysis, missing: tuple[str, ...]) -> str:
    """The one line of an analysis not run for want of a metric the results do not hold."""
    names = ", ".join(METRIC_WORDS.get(m, m) for m in missing)
    return f"- {analysis.name}: not run: it needs {names}, which these results do not hold (not logged)."


__all__ = ["Analysis"]
