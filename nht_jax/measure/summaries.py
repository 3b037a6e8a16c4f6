"""First analysis of a sweep: transition times, regimes, one summary row per run.

Per run, with the definitions of [analysis] (`nht_jax.experiment.AnalysisConfig`; thresholds default to the
companion paper's 99 %): T_fit, T_transition, the delay, ‖θ‖² at both, the norm peak, the regime ("accuracy" or
"norm" rule) and divergence; `summarize` gives summary.csv's rows, `summarize_run` one run (also on the logs so far,
for the stop rule and the live table). Times are logged steps: every function here reads the steps vector, never
k · log_every.

The definitions, the regimes and summary.csv's columns: docs/methods/index.md, "Analysis of a run"."""

from __future__ import annotations

import numpy as np

from nht_jax.experiment import AnalysisConfig, Config

REGIMES = ("weak", "intermediate", "structured", "strong", "diverged")
PAPER_NAMES = {
    "weak": "shortcut-dominated",
    "intermediate": "transition",
    "structured": "structured",
    "strong": "suppressed",
    "diverged": "diverged",
}
"""The paper's names of the regions of its (λ, ρ) phase diagram (docs/science.md §6, Fig. 3)."""


def first_step_crossing(
    values: np.ndarray, steps: np.ndarray, threshold: float, direction: str, start: float = 0, persist: bool = False
) -> float:
    """First step ≥ start whose value is ≥ threshold ("above") or ≤ threshold ("below"); NaN if none.

    persist: the first such step from which the condition holds at every later step too.
    """
    holds = values >= threshold if direction == "above" else values <= threshold
    if persist:
        holds = np.flip(np.logical_and.accumulate(np.flip(holds)))
    hit = np.flatnonzero(holds & (steps >= start))
    return float(steps[hit[0]]) if hit.size else float("nan")


def value_at(values: np.ndarray, steps: np.ndarray, step: float) -> float:
    """The value logged at `step`; NaN when step is NaN."""
    return float("nan") if np.isnan(step) else float(values[int(np.searchsorted(steps, step))])


def classify(t_fit: float, t_transition: float, norm: np.ndarray, diverged: bool, rule: AnalysisConfig) -> str:
    if diverged:
        return "diverged"
    if np.isnan(t_fit):
        return "strong"
    if rule.regime_rule == "accuracy":
        if np.isnan(t_transition):
            return "weak"
        return "structured" if t_transition == t_fit else "intermediate"
    peak = int(np.argmax(norm))
    fell = norm[peak] - norm[peak:].min() > rule.norm_decay_fraction * norm[peak]
    return "intermediate" if fell else "weak"


def summarize_run(
    steps: np.ndarray, metrics: dict[str, np.ndarray], rule: AnalysisConfig, final_metrics: tuple = ()
) -> dict:
    """Summary of one run from its (logs,) metric arrays; `final_metrics` (the domain's summary metrics) add
    final_<name> columns."""
    finite = metrics["finite"] > 0
    diverged = not bool(finite.all())
    diverged_step = float(steps[np.argmin(finite)]) if diverged else float("nan")
    norm = np.where(finite, metrics["norm_sq"], np.nan)
    t_fit = first_step_crossing(metrics[rule.fit_metric], steps, rule.fit_threshold, rule.fit_direction)
    t_transition = (
        first_step_crossing(
            metrics[rule.transition_metric],
            steps,
            rule.transition_threshold,
            rule.transition_direction,
            start=t_fit,
            persist=rule.transition_persists,
        )
        if not np.isnan(t_fit)
        else float("nan")
    )
    valid_norm = np.where(np.isnan(norm), -np.inf, norm)
    peak_index = int(np.argmax(valid_norm)) if not np.isnan(norm).all() else None  # None: no finite ‖θ‖² logged
    head = metrics.get("head_norm_sq")
    return {
        "regime": classify(t_fit, t_transition, norm[finite] if finite.any() else norm, diverged, rule),
        "T_fit": t_fit,
        "T_transition": t_transition,
        "delay": t_transition - t_fit,
        "norm_at_fit": value_at(metrics["norm_sq"], steps, t_fit),
        "norm_at_transition": value_at(metrics["norm_sq"], steps, t_transition),
        **{f"final_{name}": float(metrics[name][-1]) for name in ("train_acc", "train_loss") if name in metrics},
        **{f"final_{name}": float(metrics[name][-1]) for name in final_metrics},
        "norm_init": float(metrics["norm_sq"][0]),
        "norm_peak": float(valid_norm[peak_index]) if peak_index is not None else float("nan"),
        "norm_peak_step": float(steps[peak_index]) if peak_index is not None else float("nan"),
        "norm_final": float(metrics["norm_sq"][-1]),
        "head_norm_peak_step": float(steps[int(np.nanargmax(head))])
        if head is not None and np.isfinite(head).any()
        else float("nan"),
        "diverged": diverged,
        "diverged_step": diverged_step,
    }


def summarize(
    steps: np.ndarray, metrics: dict[str, np.ndarray], runs: dict[str, np.ndarray], config: Config
) -> list[dict]:
    """One row per run: index, its value on every grid axis, then `summarize_run`'s fields."""
    final_metrics = config.domain.summary(config)
    rows = []
    for i in range(len(runs["weight_decay"])):
        row = {"run": i}
        row.update({k: (int(v[i]) if np.issubdtype(v.dtype, np.integer) else float(v[i])) for k, v in runs.items()})
        row.update(summarize_run(steps, {k: v[i] for k, v in metrics.items()}, config.analysis, final_metrics))
        rows.append(row)
    return rows


def regime_counts(rows: list[dict]) -> dict[str, int]:
    return {r: sum(row["regime"] == r for row in rows) for r in REGIMES}
