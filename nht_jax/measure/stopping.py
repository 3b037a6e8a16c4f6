"""Stopping rules: finished runs leave the compiled batch, so they stop costing.

The companion code stops a run 2,000 steps after it groks; a vmapped grid would run every run to the full
budget. With `stop.rule` set ("none", the default; "transition", `stop.margin_steps` after T_transition;
"diverged"; "transition_or_diverged"), the sweep checks every run still training after each chunk and removes
those that met the rule; the others are re-packed into a smaller compiled program (`nht_jax.training.loop`). A
run's `stopped_step` is defined at log resolution, so it does not depend on the chunking; its metrics after it hold
their value there; the rule and its margin enter the results digest when set.

The rules, `stopped_step` precisely, the padding and the digest: docs/guides/execution.md, "Stopping finished runs"
and "The stop rule, precisely"; the settings: docs/configuration/index.md ("[stop]")."""

from __future__ import annotations

import hashlib
import json

import numpy as np

from nht_jax import experiment
from nht_jax.config.sections import StopConfig
from nht_jax.experiment import AnalysisConfig, Config
from nht_jax.measure import summaries

RULES = ("none", "transition", "diverged", "transition_or_diverged")


def results_digest(config: Config) -> str:
    """`experiment.digest`, with the stop rule and margin folded in when a rule is set."""
    base = experiment.digest(config)
    stop = config.stop
    if stop.rule == "none":
        return base
    # the keys are the spellings of [execution] before [stop] existed: every digest of a sweep with a rule stays
    extra = json.dumps({"digest": base, "stop_rule": stop.rule, "stop_margin_steps": stop.margin_steps})
    return hashlib.sha256(extra.encode()).hexdigest()[:16]


class StopRule:
    """`stop_log(steps, metrics, first)`: the log index at which a run stops, or None."""

    def __init__(self, stop: StopConfig, rule: AnalysisConfig):
        self.name = stop.rule
        self.margin = stop.margin_steps
        self.rule = rule
        self.transition = self.name in ("transition", "transition_or_diverged")
        self.diverged = self.name in ("diverged", "transition_or_diverged")

    @property
    def active(self) -> bool:
        return self.name != "none"

    def describe(self) -> str:
        if not self.active:
            return "no stop rule"
        parts = []
        if self.transition:
            parts.append(f"{self.margin} steps after T_transition")
        if self.diverged:
            parts.append("at divergence")
        return f"runs stop {' or '.join(parts)} (stop.rule = {self.name})"

    def stop_log(self, steps: np.ndarray, metrics: dict[str, np.ndarray], first: int) -> int | None:
        """The first log index j ≥ first (j < len(steps)) at which the rule holds on metrics[: j + 1]; None when
        it holds at none. steps and metrics cover the logs so far; logs before `first` were checked already."""
        last = len(steps) - 1
        found = []
        row = summaries.summarize_run(steps, metrics, self.rule)
        if self.diverged and row["diverged"]:
            found.append(int(np.searchsorted(steps, row["diverged_step"])))  # a first crossing: final once found
        if self.transition:
            if not self.rule.transition_persists:
                t = row["T_transition"]  # a first crossing after T_fit (also one): final once found
                if not np.isnan(t):
                    j = int(np.searchsorted(steps, t + self.margin))
                    if j <= last:
                        found.append(j)
            else:
                for j in range(max(first, 0), last + 1):
                    if found and j >= min(found):
                        break
                    t = summaries.summarize_run(steps[: j + 1], {k: v[: j + 1] for k, v in metrics.items()}, self.rule)[
                        "T_transition"
                    ]
                    if not np.isnan(t) and t + self.margin <= steps[j]:
                        found.append(j)
                        break
        return min(found) if found else None


def hold_after(values: np.ndarray, index: int) -> None:
    """In place: every entry after `index` (last axis) takes the value at `index`."""
    values[..., index + 1 :] = values[..., index : index + 1]


__all__ = []
