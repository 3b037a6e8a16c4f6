"""How good was the live forecast: every run's forecast of T_transition replayed on its trajectory cut at a lead
time, scored against the measured T (docs/guides/live.md; docs/findings/forecast.md).

The forecaster is the live table's (`nht_jax.training.live.run_row`, `nht_jax.measure.forecast.diagnosis.diagnose`);
each choice is an option of `ForecastOptions` (`--set forecast.KEY=VALUE`). Per lead fraction, over the runs that
transition (and those that never do): the MAPE with a bootstrap interval, the coverage of the forecasts'
intervals and the AUROC of "transitions within the budget"; the first-passage law (`source` = "law") and the
rows live_history.csv recorded ("recorded") are scored the same way. `nht analyze` writes forecast_scores.csv,
forecast_runs.csv and forecast.png.

The runs, the lead times, the pilots, the scores and their intervals: docs/methods/analysis.md, "The live
forecast, replayed and scored"."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np

from nht_jax.analysis import tfit_forecast
from nht_jax.analysis.bootstrap import MIN_DISTINCT_RESAMPLES, BootstrapOptions, distinct_resamples, interval_text
from nht_jax.analysis.fits import percentile_interval
from nht_jax.analysis.record import Analysis
from nht_jax.analysis.series import finite_run, resolve_norm_metric
from nht_jax.analysis.tables import Tabular, csv_text, fmt
from nht_jax.base.errors import check
from nht_jax.figures import style
from nht_jax.figures.style import save, subplots
from nht_jax.training import live
from nht_jax.measure.forecast import v_post as v_post_rules
from nht_jax.measure.forecast.diagnosis import MonitorOptions, monitor_options
from nht_jax.config.forecast import ForecastSettings
from nht_jax.engine.optim import log_contraction
from nht_jax.measure.forecast import first_passage, heldout
from nht_jax.measure.forecast.heldout import auroc
from nht_jax.results.folder import Results

COMPANION_MAPE = (0.346, 0.300, 0.394)
"""The companion paper's MAPE of Algorithm 1 at T_mem with its interval (docs/science.md §5)."""
SPECTRAL_AUROC = 0.93
"""A spectral early-warning method's AUROC for grok / no grok (the issue's anchor)."""
GOALS = {"mape_at_fit": 0.25, "auroc_before_quarter": 0.95}
SOURCES = ("replay", "law", "recorded", "recorded law")


@dataclass(frozen=True)
class ForecastOptions(BootstrapOptions, ForecastSettings):
    """Options of the forecast scores (module docstring: each definition).

    leads: the lead fractions f of the way from T_fit to T at which a forecast is made.
    fit_lead_logs: the earliest forecast step, in logs after T_fit.
    weak_lead: "budget" or "delay": where a negative (no T) is cut at lead f.
    weak_regimes: the negatives' regimes (runs that fit and never transition).
    score: "forecast" or "state": the AUROC's score.
    norm_metric: V ("auto": the decayed parameters' norm, the live table's rule).
    The forecast's own options (`nht_jax.config.forecast.ForecastSettings`, declared there once):
    window, window_logs, window_steps, peak_drop, flat_tolerance, min_points, interval (its interval's level),
    pilot_free_axes, v_post ("pilot", "pilot-trend", "floor", or here also "oracle"), trend_weight,
    v_post_interval; defaults as in the live table.
    regimes, n_bootstrap, confidence, seed (`BootstrapOptions`): the positives and the bootstrap of the scores.
    """

    leads: tuple[float, ...] = (0.0, 0.1, 0.25, 0.5)
    fit_lead_logs: int = 2
    weak_lead: Literal["budget", "delay"] = "budget"
    weak_regimes: tuple[str, ...] = ("weak",)
    score: Literal["forecast", "state"] = "forecast"
    norm_metric: str = "auto"

    def __post_init__(self):
        super().__post_init__()
        check(
            len(self.leads) > 0 and all(0 <= f < 1 for f in self.leads),
            f"forecast.leads must be fractions in [0, 1) of the way from T_fit to T, got {list(self.leads)}",
        )
        check(self.fit_lead_logs >= 0, f"forecast.fit_lead_logs must be ≥ 0, got {self.fit_lead_logs}")
        check(
            self.weak_lead in ("budget", "delay"), f"forecast.weak_lead must be budget or delay, got {self.weak_lead!r}"
        )
        check(self.score in ("forecast", "state"), f"forecast.score must be forecast or state, got {self.score!r}")
        self.check("forecast.", extra_v_post=("oracle",))
        self.monitor()  # the diagnosis' own checks, with its messages

    def live(self) -> live.LiveOptions:
        """The live table's options of the replay (the oracle replays with the floor rule, its V̂_post given)."""
        return live.LiveOptions.of(dataclasses.replace(self, v_post="floor") if self.v_post == "oracle" else self)

    def monitor(self) -> MonitorOptions:
        return monitor_options(self, self.interval)


class Entry(NamedTuple):
    """One run's forecast at one lead."""

    source: str
    run: int
    role: str  # "positive" | "negative"
    lead: float
    t_forecast: float  # t_f
    T_fit: float
    T_transition: float
    state: str
    T_hat: float
    T_lo: float
    T_hi: float
    v_post_source: str
    late: bool  # t_f not before T (positives)
    ape: float
    reason: str
    V_post: float = math.nan  # the V̂_post the forecast used (NaN: none)
    v_post_error: float = math.nan  # ln(V̂_post / V at the run's own T) (positives)


class LeadScore(NamedTuple):
    """The scores of one source at one lead (module docstring)."""

    source: str
    lead: float
    n_positive: int
    n_late: int
    n_forecast: int
    mape: float
    mape_lo: float
    mape_hi: float
    median_ape: float
    mape_delay: float
    coverage: float
    n_negative: int
    auroc: float
    auroc_lo: float
    auroc_hi: float


# ----------------------------------------------------------------------------- pure pieces


def lead_steps(steps, t_fit: float, t_end: float, leads, fit_lead_logs: int) -> np.ndarray:
    """t_f = max(T_fit + f·(t_end − T_fit), the log fit_lead_logs after T_fit) for each f, cut to the last log
    ≤ it."""
    steps = np.asarray(steps, np.float64)
    i_fit = int(np.searchsorted(steps, t_fit))
    t_min = steps[min(i_fit + fit_lead_logs, steps.size - 1)]
    wanted = np.maximum(t_fit + np.asarray(leads, np.float64) * (t_end - t_fit), t_min)
    return steps[np.searchsorted(steps, wanted, side="right") - 1]


def score_of(entry: Entry, budget: float, kind: str) -> float:
    """The AUROC's score of one forecast (module docstring)."""
    if kind == "state":
        return {"peaked and contracting": 2.0, "contracting": 1.0}.get(entry.state, 0.0)
    return budget / entry.T_hat if np.isfinite(entry.T_hat) and entry.T_hat > 0 else 0.0


def bootstrap_interval(stat, samples: tuple[np.ndarray, ...], options: BootstrapOptions) -> tuple[float, float]:
    """Percentile interval of stat(*resampled) with each array resampled on its own (NaN when n_bootstrap = 0
    or an array is empty)."""
    if options.n_bootstrap == 0 or not all(s.size for s in samples):
        return math.nan, math.nan
    rng = np.random.default_rng(options.seed)
    draws = [stat(*(s[rng.integers(0, s.size, s.size)] for s in samples)) for _ in range(options.n_bootstrap)]
    return percentile_interval(np.asarray(draws, np.float64), options.confidence, len(draws))


def enough_resamples(*clusters: int) -> bool:
    """Whether a bootstrap resampling each of these cluster counts apart has ≥ MIN_DISTINCT_RESAMPLES distinct
    resamples (the product of their `distinct_resamples`; module docstring)."""
    return math.prod(distinct_resamples(n) for n in clusters) >= MIN_DISTINCT_RESAMPLES


def score_lead(entries: list[Entry], source: str, lead: float, budget: float, options: ForecastOptions) -> LeadScore:
    """The scores of the entries of one source and lead."""
    pos = [e for e in entries if e.role == "positive"]
    scored = [e for e in pos if not e.late]
    made = [e for e in scored if np.isfinite(e.T_hat)]
    ape = np.array([e.ape for e in made], np.float64)
    ape_delay = np.array(
        [abs(e.T_hat - e.T_transition) / (e.T_transition - e.T_fit) for e in made if e.T_transition > e.T_fit],
        np.float64,
    )
    covered = [e.T_lo <= e.T_transition <= e.T_hi for e in made]
    neg = [e for e in entries if e.role == "negative"]
    s_pos = np.array([score_of(e, budget, options.score) for e in scored])
    s_neg = np.array([score_of(e, budget, options.score) for e in neg])
    mape = float(ape.mean()) if ape.size else math.nan
    none = (math.nan, math.nan)  # too few distinct resamples: an artefact of a handful of points, no interval
    return LeadScore(
        source,
        lead,
        len(pos),
        len(pos) - len(scored),
        len(made),
        mape,
        *(bootstrap_interval(np.mean, (ape,), options) if enough_resamples(ape.size) else none),
        float(np.median(ape)) if ape.size else math.nan,
        float(ape_delay.mean()) if ape_delay.size else math.nan,
        float(np.mean(covered)) if covered else math.nan,
        len(neg),
        auroc(s_pos, s_neg),
        *(bootstrap_interval(auroc, (s_pos, s_neg), options) if enough_resamples(s_pos.size, s_neg.size) else none),
    )


def entry(
    source,
    run,
    role,
    lead,
    t,
    t_fit,
    t_tr,
    state,
    t_hat,
    t_lo,
    t_hi,
    v_source,
    reason,
    v_post=math.nan,
    v_true=math.nan,
) -> Entry:
    late = role == "positive" and t >= t_tr
    ape = abs(t_hat - t_tr) / t_tr if role == "positive" and np.isfinite(t_hat) and not late else math.nan
    error = math.log(v_post / v_true) if v_post > 0 and v_true > 0 else math.nan  # NaN compares False
    return Entry(
        source,
        run,
        role,
        float(lead),
        float(t),
        float(t_fit),
        float(t_tr),
        state,
        float(t_hat),
        float(t_lo),
        float(t_hi),
        v_source,
        bool(late),
        float(ape),
        reason,
        float(v_post),
        float(error),
    )


# ----------------------------------------------------------------------------- the two sources


def replay(
    res: Results, roles: dict[int, str], cuts: dict[int, np.ndarray], t_fit, t_tr, options: ForecastOptions
) -> list[Entry]:
    """The live forecaster on every scored run cut at each lead step (module docstring)."""
    norm = resolve_norm_metric(res, options.norm_metric)
    steps = np.asarray(res.steps, np.float64)
    table = options.live()
    full = [{"steps": steps, norm: np.asarray(res.metrics[norm][j], np.float64)} for j in range(res.num_runs)]
    transitioned = np.isfinite(t_tr) & np.isfinite(t_fit)
    at_t = [
        float(full[j][norm][int(np.searchsorted(steps, t_tr[j]))]) if transitioned[j] else math.nan
        for j in range(res.num_runs)
    ]
    out = []
    for i, role in roles.items():
        for lead, t in zip(options.leads, cuts[i]):
            n = int(np.searchsorted(steps, t, side="right"))
            history = {"steps": steps[:n], **{k: np.asarray(v[i, :n]) for k, v in res.metrics.items()}}
            usable = np.where(transitioned & (t_tr <= t), t_fit, np.nan)
            estimate = live.pilot_v_post(res.hparams, usable, full, t_tr, norm, table)[i]
            if options.v_post == "oracle" and role == "positive":
                estimate = v_post_rules.VPost(at_t[i], at_t[i], at_t[i], ())
            v_post = estimate.value if np.isfinite(estimate.value) else None
            row = live.run_row(
                history, res.config.analysis, norm, v_post, estimate.pilots, live.monitor_for(estimate, table)
            )
            out.append(
                entry(
                    "replay",
                    i,
                    role,
                    lead,
                    t,
                    t_fit[i],
                    t_tr[i],
                    row["state"],
                    row["T_hat"],
                    row["T_lo"],
                    row["T_hi"],
                    row["v_post_source"],
                    row["reason"],
                    row["V_post"],
                    at_t[i],
                )
            )
    return out


def law_replay(
    res: Results, roles: dict[int, str], cuts: dict[int, np.ndarray], t_fit, t_tr, options: ForecastOptions
) -> list[Entry]:
    """The law on every scored run at each lead step, calibrated on the runs transitioned by then (module
    docstring)."""
    runs = tfit_forecast.runs_of(res, options)
    seeds = tuple(sorted({float(s) for s in runs.seed}))
    norm = resolve_norm_metric(res, options.norm_metric)
    steps = np.asarray(res.steps, np.float64)
    calibrations: dict[float, tuple] = {}
    out = []
    for i, role in roles.items():
        v_true = float(res.metrics[norm][i][int(np.searchsorted(steps, t_tr[i]))]) if np.isfinite(t_tr[i]) else math.nan
        for lead, t in zip(options.leads, cuts[i]):
            if t not in calibrations:
                known = runs._replace(t_tr=np.where(runs.t_tr <= t, runs.t_tr, np.nan))
                calibrations[t] = (known, heldout.calibrate(known, seeds, options))
            known, cal = calibrations[t]
            f = heldout.forecast_run(known, i, cal, float(t), options)
            lo, hi = first_passage.interval(f.t, f.delay_hat, cal.bounds)
            out.append(
                entry(
                    "law",
                    i,
                    role,
                    lead,
                    t,
                    t_fit[i],
                    t_tr[i],
                    "",
                    f.T_hat,
                    lo,
                    hi,
                    f.kappa_source,
                    f.reason,
                    f.v_star,
                    v_true,
                )
            )
    return out


def number(text) -> float:
    return float(text) if text not in ("", None) else math.nan


def recorded(
    rows: list[dict],
    roles: dict[int, str],
    cuts: dict[int, np.ndarray],
    t_fit,
    t_tr,
    options: ForecastOptions,
    law: bool = False,
) -> list[Entry]:
    """The forecasts live_history.csv recorded: at each lead step a run's last row at or before it.

    Args:
        rows: live_history.csv's rows.
        roles: {run: role} of the runs scored ("positive", "negative", …).
        cuts: {run: the lead steps}, one per lead of `options`.
        t_fit: T_fit of each run.
        t_tr: T_transition of each run.
        options: the forecast options.
        law: the law's forecasts (T_law and its interval, source "recorded law") rather than Algorithm 1's
            (source "recorded").

    Returns:
        One Entry per run and lead.
    """
    source, columns = (
        ("recorded law", ("T_law", "T_law_lo", "T_law_hi")) if law else ("recorded", ("T_hat", "T_lo", "T_hi"))
    )
    by_run: dict[int, list[dict]] = {}
    for r in rows:
        by_run.setdefault(int(r["run"]), []).append(r)
    out = []
    for i, role in roles.items():
        mine = sorted(by_run.get(i, []), key=lambda r: number(r["step"]))  # stable: a resumed sweep's last wins
        made = np.array([number(r["step"]) for r in mine])
        for lead, t in zip(options.leads, cuts[i]):
            k = int(np.searchsorted(made, t, side="right")) - 1
            if k < 0:
                out.append(
                    entry(
                        source,
                        i,
                        role,
                        lead,
                        t,
                        t_fit[i],
                        t_tr[i],
                        "",
                        math.nan,
                        math.nan,
                        math.nan,
                        "",
                        "no row recorded by then (the first chunk ended later)",
                    )
                )
                continue
            r = mine[k]
            out.append(
                entry(
                    source,
                    i,
                    role,
                    lead,
                    t,
                    t_fit[i],
                    t_tr[i],
                    r["state"],
                    *(number(r.get(c, "")) for c in columns),
                    r["v_post_source"] if not law else "law",
                    "",
                )
            )
    return out


# ----------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class ForecastReport(Tabular):
    """One row per source and lead (`Tabular`), and every forecast scored."""

    scores: tuple[LeadScore, ...]
    entries: tuple[Entry, ...]
    budget: float
    norm_metric: str
    left_out: str
    options: ForecastOptions = field(default_factory=ForecastOptions)

    def rows(self) -> list[dict]:
        return [s._asdict() for s in self.scores]

    def shown(self) -> list[str]:
        return [
            "source",
            "lead",
            "n_positive",
            "n_late",
            "n_forecast",
            "mape",
            "mape_lo",
            "mape_hi",
            "median_ape",
            "coverage",
            "n_negative",
            "auroc",
            "auroc_lo",
            "auroc_hi",
        ]

    def entry_rows(self) -> list[dict]:
        return [e._asdict() for e in self.entries]

    def score(self, source: str, lead: float) -> LeadScore | None:
        return next((s for s in self.scores if s.source == source and s.lead == lead), None)

    def headline(self, source: str = "replay") -> str:
        """MAPE at the first lead and the AUROC at each lead before a quarter of the delay, against the goals."""
        first = self.score(source, min(self.options.leads))
        early = [s for s in self.scores if s.source == source and s.lead < 0.25]
        shown = interval_text(first.mape_lo, first.mape_hi, first.n_forecast, "forecasts", pct)  # n.a.: too few
        mape = (
            f"MAPE at T_fit (+{self.options.fit_lead_logs} logs) {pct(first.mape)} {shown} "
            f"over {first.n_forecast} of {first.n_positive - first.n_late} runs "
            f"(goal < {GOALS['mape_at_fit']:.0%}; companion {COMPANION_MAPE[0]:.1%})"
        )
        aurocs = ", ".join(f"{s.lead:g}: {fmt(s.auroc)}" for s in early)
        return (
            f"{mape}; AUROC before a quarter of the delay ({aurocs}; goal ≥ {GOALS['auroc_before_quarter']:g}, "
            f"spectral ≈ {SPECTRAL_AUROC:g}, {early[0].n_negative if early else 0} negatives)"
        )

    def summary_line(self) -> str:
        line = f"Forecast scored ({self.options.v_post}, score {self.options.score}): {self.headline()}"
        if any(s.source == "law" for s in self.scores):
            line += f"; by the law (κ {self.options.kappa}): {self.headline('law')}"
        if any(s.source == "recorded" for s in self.scores):
            line += f"; as recorded in live_history.csv: {self.headline('recorded')}"
        if any(s.source == "recorded law" for s in self.scores):
            line += f"; the law as recorded: {self.headline('recorded law')}"
        return line + "."

    def markdown(self) -> str:
        o = self.options
        return (
            f"The live forecaster replayed at lead fractions {', '.join(f'{f:g}' for f in o.leads)} of the way "
            f"from T_fit to T (at least {o.fit_lead_logs} logs after T_fit; negatives at fractions of the "
            f"{o.weak_lead}), V = {self.norm_metric}, V̂_post {o.v_post}; positives "
            f"{'/'.join(o.regimes)}, negatives {'/'.join(o.weak_regimes)} runs; left out: {self.left_out}. "
            f"MAPE with a {o.confidence:.0%} bootstrap interval of the mean (empty below "
            f"{MIN_DISTINCT_RESAMPLES} distinct resamples: 5 forecasts; the AUROC's likewise), coverage of the "
            f"{o.interval:.0%} interval, AUROC of the score {o.score}.\n\n"
            + self.table()
            + "\n"
            + self.summary_line()
            + "\n"
        )


def pct(v: float) -> str:
    return "–" if not np.isfinite(v) else f"{v:.1%}"


def forecast_report(res: Results, options: ForecastOptions = ForecastOptions()) -> ForecastReport | None:
    """The forecast scores of a loaded results folder; None without a summary or without a positive."""
    if not res.summary:
        return None
    regime = np.array([row["regime"] for row in res.summary])
    t_fit = np.array([float(row["T_fit"]) for row in res.summary])
    t_tr = np.array([float(row["T_transition"]) for row in res.summary])
    finite = np.array([finite_run(res, i).all() for i in range(res.num_runs)])
    fitted = finite & np.isfinite(t_fit)
    positive = np.isin(regime, options.regimes) & fitted & np.isfinite(t_tr)
    negative = np.isin(regime, options.weak_regimes) & fitted & np.isnan(t_tr)
    if not positive.any():
        return None
    others = regime[~(positive | negative)]
    left_out = ", ".join(f"{r} {int((others == r).sum())}" for r in dict.fromkeys(others)) or "none"
    steps = np.asarray(res.steps, np.float64)
    budget = float(steps[-1])
    delay = float(np.median((t_tr - t_fit)[positive]))
    roles = {int(i): ("positive" if positive[i] else "negative") for i in np.flatnonzero(positive | negative)}
    cuts = {
        i: lead_steps(
            steps,
            t_fit[i],
            t_tr[i] if role == "positive" else (budget if options.weak_lead == "budget" else t_fit[i] + delay),
            options.leads,
            options.fit_lead_logs,
        )
        for i, role in roles.items()
    }
    entries = replay(res, roles, cuts, t_fit, t_tr, options)
    if np.isfinite(log_contraction(res.config.optim, res.hparams, res.num_runs)).any():
        entries += law_replay(res, roles, cuts, t_fit, t_tr, options)
    history = recorded_history(res)
    if history:
        entries += recorded(history, roles, cuts, t_fit, t_tr, options)
        if "T_law" in history[0]:  # a folder trained since the live table has the law (2026-12-03)
            entries += recorded(history, roles, cuts, t_fit, t_tr, options, law=True)
    scores = [
        score_lead([e for e in entries if e.source == source and e.lead == lead], source, lead, budget, options)
        for source in SOURCES
        for lead in options.leads
        if any(e.source == source for e in entries)
    ]
    return ForecastReport(
        tuple(scores), tuple(entries), budget, resolve_norm_metric(res, options.norm_metric), left_out, options
    )


def recorded_history(res: Results) -> list[dict]:
    """The forecasts the sweep recorded (live_history.csv's rows): kept in the results when they have no folder
    (`Results.live_history`), else read from the folder; [] when there are none."""
    if res.live_history is not None:
        return res.live_history
    return live.read_history(res.path) if res.path is not None else []


# ----------------------------------------------------------------------------- figure


def draw_forecast(report: ForecastReport, path: Path, title: str = "") -> None:
    """Left: MAPE (interval as a band) and median ape against the lead; middle: the AUROC (interval as a band)
    with the goal; right: the interval's coverage with its nominal level. One line per source. `title`: the short
    title; the explanation is the caption under the panels."""
    fig, (err, roc, cov) = subplots(1, 3, figsize=(13, 4), layout="constrained")
    for source, colour in zip(SOURCES, ("#4c72b0", "#55a868", "#dd8452", "#8172b3")):
        mine = [s for s in report.scores if s.source == source]
        if not mine:
            continue
        f = np.array([s.lead for s in mine])
        col = {k: np.array([getattr(s, k) for s in mine], np.float64) for k in LeadScore._fields[2:]}
        err.plot(f, 100 * col["mape"], "o-", color=colour, label=f"{source} MAPE")
        err.fill_between(f, 100 * col["mape_lo"], 100 * col["mape_hi"], color=colour, alpha=0.2, lw=0)
        err.plot(f, 100 * col["median_ape"], "s--", color=colour, ms=4, label=f"{source} median")
        roc.plot(f, col["auroc"], "o-", color=colour, label=source)
        roc.fill_between(f, col["auroc_lo"], col["auroc_hi"], color=colour, alpha=0.2, lw=0)
        cov.plot(f, col["coverage"], "o-", color=colour, label=source)
    err.axhline(100 * GOALS["mape_at_fit"], color="0.3", ls=":", lw=1, label="goal at $T_\\mathrm{fit}$")
    err.axhspan(100 * COMPANION_MAPE[1], 100 * COMPANION_MAPE[2], color="0.85", label="companion at $T_\\mathrm{mem}$")
    err.set(
        xlabel="lead: fraction of the way from $T_\\mathrm{fit}$ to T",
        ylabel="error of T̂ (%)",
        title="absolute percentage error",
    )
    roc.axhline(GOALS["auroc_before_quarter"], color="0.3", ls=":", lw=1, label="goal")
    roc.axhline(SPECTRAL_AUROC, color="0.6", ls="--", lw=1, label="spectral anchor")
    roc.axvline(0.25, color="0.8", lw=0.8)
    roc.set(xlabel="lead fraction", ylabel="AUROC", ylim=(0, 1.05), title="transitions within the budget")
    cov.axhline(report.options.interval, color="0.3", ls=":", lw=1, label="nominal")
    cov.set(xlabel="lead fraction", ylabel="share of T inside its forecast interval", ylim=(0, 1.05), title="coverage")
    for ax in (roc, cov):
        ax.legend(fontsize=7)
    err.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # eight entries: beside the data, not on it
    fig.suptitle(title or "forecast of T_transition, scored", fontsize=10)
    o = report.options
    style.caption(
        fig,
        f"The live forecasts T̂ of T_transition at each lead (the fraction of the way from T_fit to "
        f"T), one colour per source: Algorithm 1 replayed (V̂_post {o.v_post}) and as recorded in "
        f"live_history.csv; the first-passage law replayed (law) and as recorded (recorded law). "
        f"Left: mean (circles) and median (squares) absolute percentage error; middle: AUROC of the "
        f"{o.score} score for a transition within the budget; shaded bands: their "
        f"{o.confidence:.0%} bootstrap intervals ({o.n_bootstrap} resamples). Right: the share of "
        f"runs whose T falls inside the forecast's {o.interval:.0%} interval (dotted: nominal).",
    )
    save(fig, path)


def draw_figures(results, report: ForecastReport, folder) -> tuple[str, ...]:
    draw_forecast(report, Path(folder) / "forecast.png", f"{results.config.name}: the live forecast, scored")
    return ("forecast.png",)


ANALYSIS = Analysis(
    name="forecast",
    metrics=("norm_sq",),
    options=ForecastOptions,
    run=lambda results, options, needed: forecast_report(results, options),
    tables=lambda report: {"forecast_scores.csv": report.csv(), "forecast_runs.csv": csv_text(report.entry_rows())},
    figures=draw_figures,
    markdown=lambda report: "\n## The live forecast, scored\n\n" + report.markdown(),
    summary=lambda report: report.summary_line(),
)
"""`nht analyze`'s record of the forecast scores (nht_jax.analysis.registry)."""


__all__ = ["ANALYSIS", "ForecastOptions", "recorded"]
