"""The analyses `nht analyze` runs, one line each, in the order of their sections in analysis.md and of the files
they write. An analysis is a module ending with its record (`nht_jax.analysis.record.Analysis`) plus one line in
`ANALYSES`; its name is also its `--set NAME.KEY=VALUE` section. `register` / `unregister` add and remove one at
run time (a plugin, a test)."""

from __future__ import annotations

from nht_jax.analysis import (
    early_warning,
    emergence,
    fits,
    forecast,
    interventions,
    layers,
    predictions,
    predictor,
    separation,
    structure,
    tfit_forecast,
)
from nht_jax.analysis.record import Analysis
from nht_jax.base.errors import ConfigError, check

ANALYSES: dict[str, Analysis] = {
    a.name: a
    for a in (
        predictions.ANALYSIS,  # P1–P6, from the fits, the separation score and the layer order
        fits.ANALYSIS,  # delay-law fits and regime boundaries
        separation.ANALYSIS,  # Norm Separation Score
        layers.ANALYSIS,  # layer order
        predictor.ANALYSIS,  # delay predictor at T_fit
        structure.ANALYSIS,  # structure against accuracy (Fourier metrics recorded)
        emergence.ANALYSIS,  # emergence conjecture (width varied)
        interventions.ANALYSIS,  # intervention arms against the baseline (intervention axes in the grid)
        early_warning.ANALYSIS,  # early-warning signals scored: lead times, misses, false alarms
        forecast.ANALYSIS,  # the live forecast of T_transition replayed at lead times, scored
        tfit_forecast.ANALYSIS,  # the forecast at T_fit (first-passage law), scored on held-out seeds
    )
}


def analyses() -> tuple[Analysis, ...]:
    """The registered analyses, in registry order.

    Returns:
        The analyses.
    """
    return tuple(ANALYSES.values())


def register(analysis: Analysis, before: str | None = None) -> Analysis:
    """Add `analysis` at the end (or just before the analysis named `before`); a taken name or a `needs` entry
    that is not registered fails with the registered names.

    Args:
        analysis: the Analysis.
        before: the name of the analysis it goes before (None: at the end).

    Returns:
        `analysis`.
    """
    check(isinstance(analysis, Analysis), f"register expects an nht_jax.analysis.record.Analysis, got {analysis!r}")
    check(
        analysis.name not in ANALYSES,
        f"an analysis named '{analysis.name}' is already registered; registered: {', '.join(ANALYSES)}",
    )
    missing = [n for n in analysis.needs if n not in ANALYSES]
    check(
        not missing,
        f"analysis {analysis.name} needs {', '.join(missing)}, which is not registered; "
        f"registered: {', '.join(ANALYSES)}",
    )
    check(
        before is None or before in ANALYSES,
        f"no analysis '{before}' to register {analysis.name} before; registered: {', '.join(ANALYSES)}",
    )
    items = list(ANALYSES.items())
    at = len(items) if before is None else list(ANALYSES).index(before)
    items.insert(at, (analysis.name, analysis))
    ANALYSES.clear()
    ANALYSES.update(items)
    return analysis


def unregister(name: str) -> Analysis:
    """Remove the analysis `name` (one another analysis needs cannot be removed).

    Args:
        name: the analysis's name.

    Returns:
        The Analysis removed.
    """
    if name not in ANALYSES:
        raise ConfigError(f"no analysis '{name}' is registered; registered: {', '.join(ANALYSES)}")
    users = [a.name for a in ANALYSES.values() if name in a.needs]
    check(not users, f"analysis {name} is needed by {', '.join(users)}; unregister those first")
    return ANALYSES.pop(name)


__all__ = ["ANALYSES", "analyses", "register", "unregister"]
