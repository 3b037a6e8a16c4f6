"""Stopping rules: finished runs leave the compiled batch, so they stop costing.

The companion code stops a run 2,000 steps after it groks; a vmapped grid would run every run to the full
budget. With `stop.rule` set, the sweep checks every run still training after each chunk (between
compiled calls, `nht_jax.training.sweep`) and removes those that met the rule; the others are re-packed into a smaller
compiled program (see the sweep's docstring for the sizes).

Rules (`stop.rule`):
    none                     every run trains the whole budget (the default; nothing changes)
    transition               stop `stop.margin_steps` after T_transition
    diverged                 stop at the first log whose `finite` flag is 0 (no margin)
    transition_or_diverged   whichever comes first

T_transition and the divergence step are `nht_jax.measure.summaries.summarize_run`'s, computed on the metrics
logged so far, with the [analysis] definitions. A run's `stopped_step` is the first logged step s such that the
rule holds on the metrics up to s: for "transition", T_transition(metrics up to s) + margin ≤ s, so when
T_transition + margin is a logged step (a margin that is a multiple of `train.log_every`, or of the intervals of
`train.log_schedule` it spans) stopped_step = T_transition + margin exactly, and otherwise T_transition + margin
rounded up to the next logged step (the rule reads the logged steps, never k · log_every). It is defined at log resolution, not at chunk
boundaries, so it does not depend on how the sweep was chunked (chunks are sized by the clock): a run trains on to
the end of the chunk in which it stops, and those extra steps are discarded. A run that meets the rule only at the
last logged step trained its whole budget: its stopped_step is NaN, like a run that never met it.
(With `analysis.transition_persists` the rule is checked log by log: the criterion must have held since
T_transition for the margin; without it, T_transition on the logs so far is final once found, and one check per
run per chunk suffices.)

Padding: a stopped run's metrics after stopped_step hold their value at stopped_step (not NaN: a NaN in `finite`
or in ‖θ‖² would read as a divergence). So `summarize_run` on the padded trajectory gives what it gives on the
trajectory cut at stopped_step: T_fit, T_transition, the regime, the divergence step and the norm peak are those of
the uninterrupted run up to the stop, and final_* columns are the values at stopped_step. Up to and including
stopped_step the metrics are those of an uninterrupted sweep, bit for bit under strategy "map".

Digest: stopping changes the trajectories after stopped_step, so a sweep with a stop rule is a different result
from one without: `results_digest` folds the rule and its margin into the configuration digest when the rule is
not "none" (so the digest of a sweep without one, and every existing results folder and checkpoint, is
unchanged). The stop settings are [stop], recorded in config.toml; `stopped_step` is a summary column and an array in trajectories.npz (only when a rule is set).
"""

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
