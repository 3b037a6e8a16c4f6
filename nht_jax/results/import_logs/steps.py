"""The one step vector of an import (the package docstring's Steps)."""

from __future__ import annotations

import numpy as np

from nht_jax.base.errors import ConfigError, check
from nht_jax.results.import_logs.runs import Run

STEP_POLICIES = ("exact", "common")


def step_sets(runs: dict[str, Run]) -> dict[tuple[str, str], frozenset]:
    return {(key, metric): frozenset(series) for key, run in runs.items() for metric, series in run.series.items()}


def shared_steps(runs: dict[str, Run], policy="exact") -> tuple[np.ndarray, list[str], list[str]]:
    """(the step vector, the metrics kept, notes) under `policy` (package docstring: "exact", "common", or an
    integer K)."""
    metrics = list(dict.fromkeys(m for run in runs.values() for m in run.series))
    notes = []
    lacking = {m: [k for k, run in runs.items() if m not in run.series] for m in metrics}
    if policy == "exact":
        for metric, keys in lacking.items():
            if keys:
                raise ConfigError(
                    f"run {runs[keys[0]].hparams['__id__']} ({runs[keys[0]].where}) never logged "
                    f"{metric}, which other runs logged; pass --steps common to drop such metrics, or "
                    f"--ignore {metric}"
                )
        sets = step_sets(runs)
        (first_key, first), *_ = sets.items()
        for key, steps in sets.items():
            if steps != first:
                extra = sorted(steps ^ first)[:3]
                raise ConfigError(
                    f"run {runs[key[0]].hparams['__id__']} logged {key[1]} at {len(steps)} steps, run "
                    f"{runs[first_key[0]].hparams['__id__']} logged {first_key[1]} at {len(first)} (they differ at "
                    f"steps {extra}): an nht results folder holds every run and metric at one set of steps. Pass "
                    f"--steps common to keep the steps at which every run logged every metric, or --steps K to keep "
                    f"those that are multiples of K"
                )
        kept = sorted(first)
    else:
        dropped = [m for m, keys in lacking.items() if keys]
        if dropped:
            notes.append(f"dropped {', '.join(dropped)}: not logged by every run")
        metrics = [m for m in metrics if m not in dropped]
        check(metrics, "no metric was logged by every run; nothing to import")
        common = frozenset.intersection(*(frozenset(runs[k].series[m]) for k in runs for m in metrics))
        if policy != "common":
            common = frozenset(s for s in common if s % policy == 0)
        every = frozenset.union(*(frozenset(runs[k].series[m]) for k in runs for m in metrics))
        if len(every) > len(common):
            notes.append(f"kept {len(common)} of the {len(every)} logged steps (--steps {policy})")
        kept = sorted(common)
    check(
        len(kept) >= 2,
        f"only {len(kept)} step(s) are shared by every run and metric "
        f"{'(--steps ' + str(policy) + ')' if policy != 'exact' else ''}; an import needs at least "
        f"two logged steps",
    )
    steps = np.asarray(kept, np.int64)
    gaps = np.unique(np.diff(steps))
    check(
        len(gaps) == 1,
        f"the shared steps are not evenly spaced (gaps {gaps[:4].tolist()}…, steps "
        f"{steps[:6].tolist()}…): an nht results folder logs every log_every steps. Pass --steps K "
        f"to keep the steps that are multiples of K",
    )
    check(
        steps[0] % gaps[0] == 0,
        f"the shared steps {steps[:3].tolist()}… are evenly spaced by {gaps[0]} but not "
        f"multiples of it; shift them (log step 0, {gaps[0]}, {2 * gaps[0]}, …)",
    )
    return steps, metrics, notes


def parse_steps_policy(text: str):
    """--steps: "exact", "common" or an integer K ≥ 1."""
    if text in STEP_POLICIES:
        return text
    check(
        text.isdigit() and int(text) >= 1,
        f"--steps {text!r}: choose exact, common, or an integer K ≥ 1 (keep the shared steps that are multiples of K)",
    )
    return int(text)


__all__ = []
