"""Threshold sensitivity: a verdict recomputed under the definitions the papers leave open.

The papers fix no threshold for T_transition (nor whether the crossing must persist) and no rule for T_fit; a
verdict that flips when one of ours moves within its plausible range is *fragile*. An alternative definition is one
`KEY=VALUE` of AnalysisConfig (`DEFINITION_KEYS`); the summaries are recomputed from the logged trajectories under it
(`alternative_results`), nothing retrained, and the analysis runs without bootstrap (`without_bootstrap`).
`default_alternatives` picks those `nht analyze` tries.

The default alternatives and how a fragile verdict is shown: docs/guides/analyse.md, "The six predictions"."""

from __future__ import annotations

import dataclasses
import tomllib

import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.experiment import AnalysisConfig
from nht_jax.measure.summaries import summarize

DEFINITION_KEYS = ("transition_threshold", "transition_persists", "fit_threshold")
"""The definitions the papers leave open that an alternative may change."""

ACCURACY_THRESHOLDS = (0.95, 0.99, 0.999)
"""The thresholds tried for an accuracy (the issue's 0.95 / 0.99 / 0.999)."""


def parse_alternative(text: str) -> tuple[str, object]:
    """ "transition_threshold=0.95" → ("transition_threshold", 0.95); any other key is refused with the known."""
    key, sep, raw = str(text).partition("=")
    key = key.strip()
    if not sep or key not in DEFINITION_KEYS:
        raise ConfigError(
            f"an alternative definition is KEY=VALUE with KEY one of {', '.join(DEFINITION_KEYS)}, got {text!r}"
        )
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    if key == "transition_persists" and not isinstance(value, bool):
        raise ConfigError(f"transition_persists takes true or false, got {raw.strip()!r}")
    if key != "transition_persists" and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ConfigError(f"{key} takes a number, got {raw.strip()!r}")
    return key, value


def with_definition(rule: AnalysisConfig, text: str) -> AnalysisConfig:
    """`rule` with one definition changed (`parse_alternative`)."""
    key, value = parse_alternative(text)
    return dataclasses.replace(rule, **{key: float(value) if key != "transition_persists" else value})


def nearby_thresholds(threshold: float, direction: str) -> tuple[float, ...]:
    """The alternatives of one threshold (module docstring): accuracies 0.95 / 0.99 / 0.999, else ±0.05 or ×0.8 /
    ×1.2 of a threshold crossed from above."""
    if direction == "below":
        return (round(threshold * 0.8, 6), round(threshold * 1.2, 6))
    if any(np.isclose(threshold, t) for t in ACCURACY_THRESHOLDS):
        return tuple(t for t in ACCURACY_THRESHOLDS if not np.isclose(threshold, t))
    return tuple(round(t, 6) for t in (threshold - 0.05, threshold + 0.05) if 0 < t < 1)


def default_alternatives(rule: AnalysisConfig) -> tuple[str, ...]:
    """The alternatives of `rule` tried by default (module docstring), as KEY=VALUE texts."""
    return (
        *(
            f"transition_threshold={t:g}"
            for t in nearby_thresholds(rule.transition_threshold, rule.transition_direction)
        ),
        f"transition_persists={'false' if rule.transition_persists else 'true'}",
        *(f"fit_threshold={t:g}" for t in nearby_thresholds(rule.fit_threshold, rule.fit_direction)),
    )


def alternative_results(res, text: str):
    """`res` (a loaded `nht_jax.results.folder.Results`) with its summary recomputed under one alternative
    definition: the same trajectories, T_fit, T_transition, the regimes and the norms at those steps as
    `nht_jax.measure.summaries.summarize` gives them under the changed AnalysisConfig. Columns the summary has
    beyond those (stopped_step) are kept."""
    rule = with_definition(res.config.analysis, text)
    config = dataclasses.replace(res.config, analysis=rule)
    fresh = summarize(res.steps, res.metrics, res.hparams, config)
    old = res.summary or [{} for _ in fresh]
    return dataclasses.replace(res, config=config, summary=[{**o, **f} for o, f in zip(old, fresh)])


def without_bootstrap(options):
    """A bootstrapping analysis' options with n_bootstrap = 0 (others as they are)."""
    fields = {f.name for f in dataclasses.fields(options)}
    return dataclasses.replace(options, n_bootstrap=0) if "n_bootstrap" in fields else options


def flips(default: str, others: list[str], agree: str, disagree: str) -> bool:
    """Whether any alternative verdict is the opposite of the default (agree ↔ disagree); an undecided one is no
    flip."""
    opposite = {agree: disagree, disagree: agree}.get(default)
    return opposite is not None and opposite in others


__all__ = []
