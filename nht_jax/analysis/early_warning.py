"""Early-warning signals, scored (docs/science.md §5): does a logged series announce the transition before it
happens, and does the head norm announce it earlier and more reliably than the total norm?

The seed papers give the advice (a peak-then-decay of the norm signals a transition under way; the head norm is
"an earlier, more sensitive indicator") but no rule and no threshold. Ours, every one an option of
`EarlyWarningOptions` (`--set early_warning.KEY=VALUE`), fire each signal per run; each signal is scored by its
lead time before T_transition and its miss and false-alarm rates, and `paired_comparison` gives a verdict on the
head against the total norm. `nht analyze` writes early_warning.csv, early_warning_runs.csv and early_warning.png.

The signals, their rules, the scores and the verdict: docs/methods/analysis.md, "Early-warning signals"; what they
found: docs/findings/early-warning.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np

from nht_jax.analysis.bootstrap import BootstrapOptions
from nht_jax.analysis.layers import PREFIX, LayerOptions, head_first_ratio, resolve_layers
from nht_jax.analysis.record import Analysis
from nht_jax.analysis.series import Pooled, bootstrap_median, finite_run
from nht_jax.analysis.tables import Tabular, csv_text, fmt
from nht_jax.base.errors import check
from nht_jax.figures import style
from nht_jax.figures.style import save, subplots
from nht_jax.results.folder import Results
from nht_jax.measure.summaries import REGIMES

RULES = ("drop", "rise")


class Signal(NamedTuple):
    """A signal: its rule on the first recorded of its metrics (none for the derived head/first ratio)."""

    rule: str
    metrics: tuple[str, ...]


SIGNALS: dict[str, Signal] = {
    "total_norm": Signal("drop", ("norm_sq",)),
    "head_norm": Signal("drop", ("head_norm_sq", f"{PREFIX}head")),
    "head_first_ratio": Signal("drop", ("head_to_first_ratio",)),  # derived from the layer norms first
    "logit_scale": Signal("drop", ("logit_scale", "clean_logit_scale")),
    "grad_norm": Signal("rise", ("grad_norm", "minibatch_grad_norm")),
    "fourier": Signal("rise", ("fourier_concentration",)),
}
"""The built-in signals (module docstring)."""


def parse_extra(entry: str) -> Signal:
    """ "METRIC:RULE" → Signal(RULE, (METRIC,))."""
    metric, _, rule = entry.rpartition(":")
    check(
        bool(metric) and rule in RULES,
        f'early_warning.extra entries are "METRIC:RULE" with RULE one of '
        f'{", ".join(RULES)} (e.g. "null_norm_sq:drop"), got {entry!r}',
    )
    return Signal(rule, (metric,))


@dataclass(frozen=True)
class EarlyWarningOptions(BootstrapOptions):
    """Options of the early-warning scores (module docstring: the definitions).

    signals: the built-in signals scored (`SIGNALS`).
    extra: more signals, "METRIC:RULE" with RULE drop or rise.
    drop_fraction: f of the drop rule, in (0, 1).
    rise_factor: g of the rise rule, > 0.
    start: "fit" (rules read from T_fit) or "init" (from the first log).
    first_layer: the first layer of the head/first ratio; "" = the layer order's rule.
    weak_regimes: the runs that never transition, where a firing is a false alarm (a run of these regimes with
        a T_transition is not read as one).
    regimes, n_bootstrap, confidence, seed (`BootstrapOptions`): the transitioning runs whose lead times and
        misses are scored, and the bootstrap of the medians.
    """

    signals: tuple[str, ...] = tuple(SIGNALS)
    extra: tuple[str, ...] = ()
    drop_fraction: float = 0.1
    rise_factor: float = 1.0
    start: Literal["fit", "init"] = "fit"
    first_layer: str = ""
    weak_regimes: tuple[str, ...] = ("weak",)

    def __post_init__(self):
        super().__post_init__()
        unknown = [s for s in self.signals if s not in SIGNALS]
        check(
            not unknown,
            f"early_warning.signals: unknown {', '.join(unknown)}; known: {', '.join(SIGNALS)} "
            f'(any other metric: early_warning.extra = ["METRIC:drop"])',
        )
        for entry in self.extra:
            parse_extra(entry)
        check(0 < self.drop_fraction < 1, f"early_warning.drop_fraction must lie in (0, 1), got {self.drop_fraction}")
        check(self.rise_factor > 0, f"early_warning.rise_factor must be > 0, got {self.rise_factor}")
        check(
            not isinstance(self.weak_regimes, str) and set(self.weak_regimes) <= set(REGIMES),
            f"early_warning.weak_regimes must be a list of {list(REGIMES)}, got {self.weak_regimes!r}",
        )

    def signal_table(self) -> dict[str, Signal]:
        """{name: Signal} of every scored signal, built-in then extra."""
        return {**{s: SIGNALS[s] for s in self.signals}, **{e: parse_extra(e) for e in self.extra}}


# ----------------------------------------------------------------------------- the rules on arrays


def _from(steps, values, start: float) -> tuple[np.ndarray, np.ndarray]:
    steps, values = np.asarray(steps, np.float64), np.asarray(values, np.float64)
    keep = steps >= start
    return steps[keep], values[keep]


def drop_step(steps, values, start: float, fraction: float) -> float:
    """First logged t > t_0 (the first log ≥ `start`) with V_t < (1 − fraction)·max_{t_0 ≤ s ≤ t} V_s; NaN if
    none."""
    t, v = _from(steps, values, start)
    running = np.fmax.accumulate(np.where(np.isfinite(v), v, np.nan)) if v.size else v
    hit = np.flatnonzero(v[1:] < (1.0 - fraction) * running[1:])
    return float(t[1 + hit[0]]) if hit.size else np.nan


def rise_step(steps, values, start: float, factor: float) -> float:
    """First logged t > t_0 (the first log ≥ `start`) with V_t > (1 + factor)·min_{t_0 ≤ s ≤ t} V_s; NaN if
    none."""
    t, v = _from(steps, values, start)
    running = np.fmin.accumulate(np.where(np.isfinite(v), v, np.nan)) if v.size else v
    hit = np.flatnonzero(v[1:] > (1.0 + factor) * running[1:])
    return float(t[1 + hit[0]]) if hit.size else np.nan


def fire_step(rule: str, steps, values, start: float, options: EarlyWarningOptions) -> float:
    """The step at which `rule` fires on one run's series from `start` (NaN: never)."""
    if rule == "drop":
        return drop_step(steps, values, start, options.drop_fraction)
    return rise_step(steps, values, start, options.rise_factor)


# ----------------------------------------------------------------------------- the scores


class SignalScore(NamedTuple):
    """One signal's scores (module docstring); NaN and 0 counts where it is not recorded."""

    signal: str
    rule: str
    metric: str  # what it read ("" when not recorded)
    n_transition: int  # transitioning runs scored
    n_early: int  # fired before T_transition
    n_late: int  # fired at or after T_transition
    n_never: int
    lead: Pooled  # T_transition − t_fire over the runs where it fired
    miss_rate: float
    n_weak: int
    n_false_alarm: int
    false_alarm_rate: float
    note: str


class Paired(NamedTuple):
    """Head lead − total lead over the transitioning runs where both fire."""

    delta: Pooled
    n_head_earlier: int
    n_tied: int
    n_head_later: int
    verdict: str  # "for" | "against" | "neither"
    reason: str


def lead_times(fire: np.ndarray, t_transition: np.ndarray) -> np.ndarray:
    """T_transition − t_fire per run (NaN where it never fires)."""
    return np.asarray(t_transition, np.float64) - np.asarray(fire, np.float64)


def score_signal(
    name: str,
    signal: Signal,
    metric: str,
    fire: np.ndarray,
    t_transition: np.ndarray,
    transitioning: np.ndarray,
    weak: np.ndarray,
    options: EarlyWarningOptions,
) -> SignalScore:
    """The scores of one signal from its (runs,) firing steps and the runs' T_transition and pools."""
    lead = lead_times(fire, t_transition)[transitioning]
    fired = np.isfinite(lead)
    n_t, n_early, n_w = int(transitioning.sum()), int((lead > 0).sum()), int(weak.sum())
    n_alarm = int(np.isfinite(np.asarray(fire)[weak]).sum())
    pooled = bootstrap_median(lead[fired], options.confidence, options.n_bootstrap, options.seed)
    return SignalScore(
        name,
        signal.rule,
        metric,
        n_t,
        n_early,
        int((fired & (lead <= 0)).sum()),
        int((~fired).sum()),
        pooled,
        (n_t - n_early) / n_t if n_t else np.nan,
        n_w,
        n_alarm,
        n_alarm / n_w if n_w else np.nan,
        "" if n_t else "no transitioning run",
    )


def unrecorded(name: str, signal: Signal, why: str, transitioning, weak) -> SignalScore:
    return SignalScore(
        name,
        signal.rule,
        "",
        int(np.sum(transitioning)),
        0,
        0,
        0,
        Pooled(0, np.nan, np.nan, np.nan),
        np.nan,
        int(np.sum(weak)),
        0,
        np.nan,
        why,
    )


def steps_text(value: float) -> str:
    """A number of steps as a whole number ("–" for NaN)."""
    return f"{value:.0f}" if np.isfinite(value) else "–"


def coarsest_interval(steps) -> int:
    """The largest step between two logs: train.log_every, or the coarsest segment of a train.log_schedule (a lead
    is resolved to at most this)."""
    return int(np.max(np.diff(np.asarray(steps))))


def paired_comparison(
    head_lead,
    total_lead,
    head: SignalScore,
    total: SignalScore,
    log_every: int,
    options: EarlyWarningOptions = EarlyWarningOptions(),
) -> Paired:
    """Δ = head lead − total lead over the runs where both are finite, and the verdict on the seed's claim
    (module docstring)."""
    if not head.metric or not total.metric:
        missing = "; ".join(f"{s.signal} {s.note}" for s in (head, total) if not s.metric)
        return Paired(Pooled(0, np.nan, np.nan, np.nan), 0, 0, 0, "neither", missing)
    head_lead, total_lead = np.asarray(head_lead, np.float64), np.asarray(total_lead, np.float64)
    both = np.isfinite(head_lead) & np.isfinite(total_lead)
    delta = head_lead[both] - total_lead[both]
    pooled = bootstrap_median(delta, options.confidence, options.n_bootstrap, options.seed)
    counts = int((delta > 0).sum()), int((delta == 0).sum()), int((delta < 0).sum())
    worse = [
        what
        for what, h, t in (
            ("misses", head.miss_rate, total.miss_rate),
            ("false alarms", head.false_alarm_rate, total.false_alarm_rate),
        )
        if np.isfinite(h) and np.isfinite(t) and h > t
    ]
    rates = (
        f"miss rate head {fmt(head.miss_rate)} vs total {fmt(total.miss_rate)}, false-alarm rate head "
        f"{fmt(head.false_alarm_rate)} vs total {fmt(total.false_alarm_rate)}"
    )
    resolution = f"log_every = {log_every} steps"
    if not delta.size:
        return Paired(pooled, *counts, "neither", f"no transitioning run where both fire ({rates})")
    spread = (
        f"median Δ = {steps_text(pooled.median)} steps [{steps_text(pooled.lo)}, {steps_text(pooled.hi)}] over "
        f"{pooled.n} runs "
        f"(head earlier {counts[0]}, tied {counts[1]}, later {counts[2]}; {resolution})"
    )
    if worse:
        return Paired(pooled, *counts, "against", f"the head has more {' and more '.join(worse)}; {spread}; {rates}")
    if pooled.lo > 0:
        return Paired(pooled, *counts, "for", f"the head fires earlier: {spread}; {rates}")
    if pooled.hi < 0:
        return Paired(pooled, *counts, "against", f"the head fires later: {spread}; {rates}")
    if counts[1] == delta.size:
        return Paired(pooled, *counts, "neither", f"tied at log resolution in every run: {spread}; {rates}")
    return Paired(pooled, *counts, "neither", f"no clear order, the interval contains 0: {spread}; {rates}")


# ----------------------------------------------------------------------------- entry point


def signal_series(
    res: Results, name: str, signal: Signal, options: EarlyWarningOptions
) -> tuple[str, np.ndarray | None]:
    """(what it reads, its (runs, logs) series) or (why not, None)."""
    if name == "head_first_ratio":
        head, first, _ = resolve_layers(res, LayerOptions(first_layer=options.first_layer))
        if f"{PREFIX}{head}" in res.metrics and f"{PREFIX}{first}" in res.metrics:
            return (
                f"{PREFIX}{head} / {PREFIX}{first}",
                head_first_ratio(res.metrics[f"{PREFIX}{head}"], res.metrics[f"{PREFIX}{first}"]),
            )
    recorded = [m for m in signal.metrics if m in res.metrics]
    if recorded:
        return recorded[0], np.asarray(res.metrics[recorded[0]], np.float64)
    needs = " or ".join(signal.metrics) + (
        " or the head's and first layer's layer_norm_sq" if name == "head_first_ratio" else ""
    )
    return f"not recorded (needs {needs})", None


@dataclass(frozen=True)
class EarlyWarningReport(Tabular):
    """One row per signal (`Tabular`), the firing step of every signal in every run, and the head-vs-total
    comparison."""

    scores: tuple[SignalScore, ...]
    fires: dict  # {signal: (runs,) firing steps}
    run_info: tuple[dict, ...]  # run, regime, T_fit, T_transition of each run
    paired: Paired
    log_every: int
    left_out: str
    options: EarlyWarningOptions = field(default_factory=EarlyWarningOptions)

    def rows(self) -> list[dict]:
        return [
            {
                "signal": s.signal,
                "rule": s.rule,
                "metric": s.metric,
                "log_every": self.log_every,
                "n_transition": s.n_transition,
                "n_fired": s.lead.n,
                "lead_median": s.lead.median,
                "lead_lo": s.lead.lo,
                "lead_hi": s.lead.hi,
                "lead_logs": s.lead.median / self.log_every,
                "n_early": s.n_early,
                "n_late": s.n_late,
                "n_never": s.n_never,
                "miss_rate": s.miss_rate,
                "n_weak": s.n_weak,
                "n_false_alarm": s.n_false_alarm,
                "false_alarm_rate": s.false_alarm_rate,
                "left_out": self.left_out,
                "note": s.note,
            }
            for s in self.scores
        ]

    def shown(self) -> list[str]:
        return [
            "signal",
            "rule",
            "n_transition",
            "lead_median",
            "lead_lo",
            "lead_hi",
            "lead_logs",
            "n_early",
            "n_late",
            "n_never",
            "miss_rate",
            "n_weak",
            "n_false_alarm",
            "false_alarm_rate",
            "note",
        ]

    def run_rows(self) -> list[dict]:
        return [
            {**info, **{f"fire_{name}": float(steps[i]) for name, steps in self.fires.items()}}
            for i, info in enumerate(self.run_info)
        ]

    def verdict_line(self) -> str:
        return (
            f"Head norm earlier and more reliable than the total norm (docs/science.md §5): "
            f"**{self.paired.verdict}**: {self.paired.reason}."
        )

    def markdown(self) -> str:
        o = self.options
        origin = "T_fit" if o.start == "fit" else "the first log"
        rules = (
            f"drop: below (1 − {o.drop_fraction:g}) × the running maximum; rise: above "
            f"(1 + {o.rise_factor:g}) × the running minimum; from {origin}"
        )
        return (
            f"Rules ({rules}); lead = T_transition − firing step over the {'/'.join(o.regimes)} runs "
            f"(median, {o.confidence:.0%} bootstrap interval over runs; negative = fired late), miss = not "
            f"fired before T_transition, false alarm = fired in a {'/'.join(o.weak_regimes)} run. Times are "
            f"logged steps: log_every = {self.log_every} (lead_logs = lead / log_every). Left out: "
            f"{self.left_out}.\n\n" + self.table() + "\n" + self.verdict_line() + "\n"
        )


def early_warning_report(
    res: Results, options: EarlyWarningOptions = EarlyWarningOptions()
) -> EarlyWarningReport | None:
    """The early-warning scores of a loaded results folder; None (nothing written) without a summary."""
    if not res.summary:
        return None
    regime = np.array([row["regime"] for row in res.summary])
    t_fit = np.array([float(row["T_fit"]) for row in res.summary])
    t_transition = np.array([float(row["T_transition"]) for row in res.summary])
    finite = np.array([finite_run(res, i).all() for i in range(res.num_runs)])
    transitioning = np.isin(regime, options.regimes) & finite & np.isfinite(t_fit) & np.isfinite(t_transition)
    weak = np.isin(regime, options.weak_regimes) & finite & np.isfinite(t_fit) & np.isnan(t_transition)
    others = regime[~(transitioning | weak)]
    left_out = ", ".join(f"{r} {int((others == r).sum())}" for r in REGIMES if (others == r).any()) or "none"
    start = t_fit if options.start == "fit" else np.full(res.num_runs, -np.inf)
    scores, fires = [], {}
    for name, signal in options.signal_table().items():
        metric, series = signal_series(res, name, signal, options)
        if series is None:
            scores.append(unrecorded(name, signal, metric, transitioning, weak))
            continue
        fire = np.array(
            [
                fire_step(signal.rule, res.steps, series[i], start[i], options) if (transitioning | weak)[i] else np.nan
                for i in range(res.num_runs)
            ]
        )
        fires[name] = fire
        scores.append(score_signal(name, signal, metric, fire, t_transition, transitioning, weak, options))
    by_name = {s.signal: s for s in scores}
    none = np.full(res.num_runs, np.nan)
    head = by_name.get("head_norm", unrecorded("head_norm", SIGNALS["head_norm"], "not scored", transitioning, weak))
    total = by_name.get(
        "total_norm", unrecorded("total_norm", SIGNALS["total_norm"], "not scored", transitioning, weak)
    )
    paired = paired_comparison(
        lead_times(fires.get("head_norm", none), t_transition)[transitioning],
        lead_times(fires.get("total_norm", none), t_transition)[transitioning],
        head,
        total,
        coarsest_interval(res.steps),
        options,
    )
    info = tuple(
        {"run": i, "regime": str(regime[i]), "T_fit": float(t_fit[i]), "T_transition": float(t_transition[i])}
        for i in range(res.num_runs)
    )
    return EarlyWarningReport(tuple(scores), fires, info, paired, coarsest_interval(res.steps), left_out, options)


# ----------------------------------------------------------------------------- figure


def draw_early_warning(report: EarlyWarningReport, path: Path, title: str = "") -> None:
    """Left: the lead time of each signal (every run's as a dot, the median with its interval as a bar), the log
    resolution shaded around 0; right: its miss and false-alarm rates with their counts. `title`: the short
    title; the explanation is the caption under the panels."""
    scores = report.scores
    x = np.arange(len(scores))
    fig, (lead_ax, rate_ax) = subplots(1, 2, figsize=(max(8.0, 1.6 * len(scores) + 4), 4), layout="constrained")
    lead_ax.axhspan(
        -report.log_every, report.log_every, color="0.9", label=f"± one log interval ({report.log_every:g} steps)"
    )
    lead_ax.axhline(0, color="0.4", lw=0.8)
    transitioning = np.array([np.isfinite(r["T_transition"]) for r in report.run_info])
    t_transition = np.array([r["T_transition"] for r in report.run_info])
    for i, s in enumerate(scores):
        if s.signal in report.fires:
            lead = lead_times(report.fires[s.signal], t_transition)[transitioning]
            lead = lead[np.isfinite(lead)]
            lead_ax.plot(np.full(lead.size, i) + np.linspace(-0.15, 0.15, lead.size), lead, "o", ms=3, color="0.55")
        if s.lead.n:
            lead_ax.errorbar(
                i,
                s.lead.median,
                yerr=[[s.lead.median - s.lead.lo], [s.lead.hi - s.lead.median]],
                fmt="s",
                color="#55a868",
                capsize=4,
            )
        else:
            why = "not recorded" if not s.metric else "no transitioning run" if not s.n_transition else "never fired"
            lead_ax.text(i, 0, why, ha="center", va="bottom", rotation=90, fontsize=7)
    lead_ax.set(
        xticks=x,
        xlim=(-0.5, len(scores) - 0.5),
        ylabel="lead $T_\\mathrm{transition}$ − firing step (steps)",
        title="lead time",
    )
    lead_ax.set_xticklabels([style.label(s.signal) for s in scores], rotation=30, ha="right", fontsize=8)
    lead_ax.legend(fontsize=7)
    width = 0.38
    miss = [s.miss_rate for s in scores]
    alarm = [s.false_alarm_rate for s in scores]
    rate_ax.bar(x - width / 2, np.nan_to_num(miss), width, color="#c44e52", label="miss rate")
    rate_ax.bar(x + width / 2, np.nan_to_num(alarm), width, color="#4c72b0", label="false-alarm rate")
    for i, s in enumerate(scores):
        if not s.metric:
            rate_ax.text(i, 0.02, "not recorded", ha="center", va="bottom", rotation=90, fontsize=7)
            continue
        rate_ax.text(
            i - width / 2,
            np.nan_to_num(s.miss_rate) + 0.02,
            f"{s.n_transition - s.n_early}/{s.n_transition}",
            ha="center",
            fontsize=7,
        )
        rate_ax.text(
            i + width / 2,
            np.nan_to_num(s.false_alarm_rate) + 0.02,
            f"{s.n_false_alarm}/{s.n_weak}",
            ha="center",
            fontsize=7,
        )
    rate_ax.set(xticks=x, ylim=(0, 1.15), ylabel="share of runs", title="misses and false alarms")
    rate_ax.set_xticklabels([style.label(s.signal) for s in scores], rotation=30, ha="right", fontsize=8)
    rate_ax.legend(fontsize=7)
    fig.suptitle(title or "early-warning signals", fontsize=10)
    o = report.options
    style.caption(
        fig,
        f"Left: each transitioning run's lead time (grey dots) and, per signal, the median with its "
        f"{o.confidence:.0%} bootstrap interval (green bars; {o.n_bootstrap} resamples); the grey band "
        f"is one log interval either side of 0, the resolution of the logs. Right: misses "
        f"(transitioning runs the signal did not warn early, k/n) and false alarms (weak runs it "
        f"fired on, k/n). Head-norm claim: {report.paired.verdict}.",
    )
    save(fig, path)


def draw_figures(results, report: EarlyWarningReport, folder) -> tuple[str, ...]:
    draw_early_warning(report, Path(folder) / "early_warning.png", f"{results.config.name}: early-warning signals")
    return ("early_warning.png",)


ANALYSIS = Analysis(
    name="early_warning",
    metrics=("norm_sq",),
    options=EarlyWarningOptions,
    run=lambda results, options, needed: early_warning_report(results, options),
    tables=lambda report: {"early_warning.csv": report.csv(), "early_warning_runs.csv": csv_text(report.run_rows())},
    figures=draw_figures,
    markdown=lambda report: "\n## Early-warning signals (docs/science.md §5)\n\n" + report.markdown(),
    summary=lambda report: report.verdict_line(),
)
"""`nht analyze`'s record of the early-warning scores (nht_jax.analysis.registry)."""


__all__ = ["ANALYSIS"]
