"""The emergence conjecture (docs/science.md §8) on a sweep over width × λ × seed. Pure NumPy on summary rows and
‖θ‖² trajectories.

The conjecture: as the width N grows, the norm gap V_sc(N)/V_st(N) between the shortcut and the structured
solution shrinks, so the delay falls under the step budget only above a critical width N*. Its three testable
statements E1–E3 each get ✓ / ✗ / n.a. with the number behind it, by rules and thresholds of ours
(`EmergenceOptions`). `emergence_report(results, options)` runs it on a loaded `Results` for `nht analyze`
(`applies`: the width axis is varied); `width_runs` and `emergence_analysis` work on plain rows and arrays.

The rules of E1–E3 and every threshold: docs/methods/analysis.md, "The emergence conjecture"."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np
from matplotlib import cm
from matplotlib.ticker import NullLocator

from nht_jax.config.schedule import LogSchedule
from nht_jax.base.errors import check
from nht_jax.analysis import fits
from nht_jax.analysis.bootstrap import BootstrapOptions
from nht_jax.analysis.predictions import FAIL, NA, OK, Verdict
from nht_jax.analysis.record import Analysis
from nht_jax.analysis.series import resolve_norm_metric
from nht_jax.figures import style
from nht_jax.figures.style import save, subplots
from nht_jax.analysis.tables import Tabular, fmt, markdown_table

NAN = float("nan")
INF = float("inf")


@dataclass(frozen=True)
class EmergenceOptions(BootstrapOptions):
    """Choices of the emergence analysis (module docstring: what each means).

    regimes, n_bootstrap, confidence, seed (`nht_jax.analysis.bootstrap.BootstrapOptions`): the runs entering
    the ratio, the delay and E3; the seed bootstrap. width_axis: the grid axis holding the width. norm_metric: V
    ("norm_sq"; "auto": the decayed parameters' norm when optim.decay_on = "weights"). v_sc: "fit" | "peak";
    v_st: "final" | "transition" | "min_after_transition". min_share: the share of a width's runs that must
    transition for it to count in N*. peak_drop: the relative fall from the peak that counts as a decay (E3);
    peak_share: the share of usable runs E3 needs. ratio_needs_interval: E1 needs the slope's interval below 0,
    not only the slope.
    """

    width_axis: str = "width"
    norm_metric: str = "norm_sq"
    v_sc: Literal["fit", "peak"] = "fit"
    v_st: Literal["final", "transition", "min_after_transition"] = "final"
    min_share: float = 0.5
    peak_drop: float = 0.1
    peak_share: float = 0.75
    ratio_needs_interval: bool = True

    def __post_init__(self):
        super().__post_init__()
        check(self.v_sc in ("fit", "peak"), f"emergence.v_sc must be 'fit' or 'peak', got {self.v_sc!r}")
        check(
            self.v_st in ("final", "transition", "min_after_transition"),
            f"emergence.v_st must be 'final', 'transition' or 'min_after_transition', got {self.v_st!r}",
        )
        check(0 < self.min_share <= 1, f"emergence.min_share must lie in (0, 1], got {self.min_share}")
        check(0 <= self.peak_drop < 1, f"emergence.peak_drop must lie in [0, 1), got {self.peak_drop}")
        check(0 <= self.peak_share <= 1, f"emergence.peak_share must lie in [0, 1], got {self.peak_share}")

    def fit_options(self) -> fits.FitOptions:
        return fits.FitOptions(n_bootstrap=self.n_bootstrap, confidence=self.confidence, seed=self.seed)


# ----------------------------------------------------------------------------- per run


class WidthRuns(NamedTuple):
    """Per-run arrays (runs,): the fits' RunTable (axes, regime, T_fit, T_transition, V_sc as v_fit, V_st as
    v_post), the width, the seed, transitioned, the peak drop d and whether V rose to its peak."""

    table: fits.RunTable
    width: np.ndarray
    seed: np.ndarray
    transitioned: np.ndarray
    drop: np.ndarray
    rose: np.ndarray

    @property
    def ratio(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.table.v_fit / self.table.v_post

    def usable(self, regimes: tuple[str, ...]) -> np.ndarray:
        v_sc, v_st = self.table.v_fit, self.table.v_post
        return (
            self.transitioned
            & np.isin(self.table.regime, list(regimes))
            & np.isfinite(v_sc)
            & np.isfinite(v_st)
            & (v_sc > 0)
            & (v_st > 0)
        )


def peak_drops(steps, norm_sq, t_transition) -> tuple[np.ndarray, np.ndarray]:
    """(d, rose) per run: d = 1 − V(T_transition)/max V over the logs up to T_transition (NaN without a
    transition); rose = that maximum exceeds V at the first log."""
    steps, norm_sq = np.asarray(steps, np.float64), np.asarray(norm_sq, np.float64)
    t_transition = np.asarray(t_transition, np.float64)
    before = steps[None, :] <= np.nan_to_num(t_transition, nan=-np.inf)[:, None]
    peak = np.where(before & np.isfinite(norm_sq), norm_sq, -np.inf).max(1)
    at = fits.norm_at(steps, norm_sq, t_transition)
    with np.errstate(divide="ignore", invalid="ignore"):
        drop = np.where(np.isfinite(at) & (peak > 0), 1 - at / peak, NAN)
    return drop, np.isfinite(drop) & (peak > norm_sq[:, 0])


def width_runs(
    rows: list[dict], steps, norm_sq, options: EmergenceOptions = EmergenceOptions(), axes: dict | None = None
) -> WidthRuns:
    """The per-run arrays of summary rows (`nht_jax.measure.summaries.summarize`) and their (runs, logs) V
    trajectories; `axes` (the exact grid values per run) defaults to the rows' grid columns."""
    table = fits.run_table(rows, steps, norm_sq, v_post=options.v_st, axes=axes, v_fit=options.v_sc)
    check(
        options.width_axis in table.axes,
        f"emergence: no axis '{options.width_axis}' among {list(table.axes)} (set emergence.width_axis)",
    )
    drop, rose = peak_drops(steps, norm_sq, table.t_transition)
    seed = table.axes["seed"] if "seed" in table.axes else np.zeros(table.size)
    return WidthRuns(
        table, table.axes[options.width_axis], seed, np.isfinite(table.t_transition) & ~table.diverged, drop, rose
    )


# ----------------------------------------------------------------------------- critical width


class CriticalWidth(NamedTuple):
    """N* of one slice (module docstring). value: N* (∞ above the grid); bracket, interval: (lo, hi] widths;
    position: "inside" | "below the grid" | "above the grid"."""

    slice: tuple
    widths: tuple
    shares: tuple
    fitted: tuple
    value: float
    bracket: tuple
    interval: tuple
    position: str
    monotone: bool
    resampled: str
    n_resamples: int

    def text(self) -> str:
        if self.position == "above the grid":
            return f"> {self.widths[-1]:g}"
        if self.position == "below the grid":
            return f"≤ {self.value:g}"
        return f"{self.value:g}"

    def interval_text(self) -> str:
        lo, hi = self.interval
        return f"({lo:g}, {hi:g}]" if np.isfinite(hi) else f"({lo:g}, ∞)"


def first_reaching(shares: np.ndarray, widths: np.ndarray, min_share: float) -> np.ndarray:
    """Per row of shares (B, W) the first width whose share ≥ min_share; ∞ where none (NaN shares never)."""
    reach = np.nan_to_num(shares, nan=-1.0) >= min_share
    return np.where(reach.any(1), widths[np.argmax(reach, 1)], INF)


def bracket(value: float, widths: np.ndarray) -> tuple[float, float]:
    """(previous grid width or 0, value] for a grid width; (largest width, ∞) for ∞."""
    if not np.isfinite(value):
        return float(widths[-1]), INF
    k = int(np.searchsorted(widths, value))
    return (float(widths[k - 1]) if k > 0 else 0.0), float(value)


def critical_width(
    width, transitioned, seed, options: EmergenceOptions = EmergenceOptions(), fitted=None, slice_label: tuple = ()
) -> CriticalWidth:
    """N* of one slice's runs (arrays (runs,)): width, transitioned (bool), seed; fitted (bool, default all)
    only feeds the share of fitting runs per width that E2 uses to leave out λ that never fit."""
    width, seed = np.asarray(width, np.float64), np.asarray(seed)
    hit = np.asarray(transitioned, bool).astype(np.float64)
    fitted = np.ones(len(width), bool) if fitted is None else np.asarray(fitted, bool)
    widths, column = np.unique(width, return_inverse=True)
    onehot = np.eye(len(widths))[column.ravel()]
    shares = (hit @ onehot) / onehot.sum(0)
    value = float(first_reaching(shares[None], widths, options.min_share)[0])
    position = "above the grid" if not np.isfinite(value) else "below the grid" if value == widths[0] else "inside"
    monotone = bool(np.all(shares[widths >= value] >= options.min_share)) if np.isfinite(value) else True
    interval, resampled, n = bracket(value, widths), "none (one seed)", 0
    if len(np.unique(seed)) > 1 and options.n_bootstrap:
        weights, resampled = fits.resample_weights(seed, options.n_bootstrap, np.random.default_rng(options.seed))
        with np.errstate(divide="ignore", invalid="ignore"):
            samples = first_reaching(
                (weights @ (onehot * hit[:, None])) / (weights @ onehot), widths, options.min_share
            )
        tail = (1 - options.confidence) / 2
        low = float(np.quantile(samples, tail, method="lower"))
        high = float(np.quantile(samples, 1 - tail, method="higher"))
        interval, n = (bracket(low, widths)[0], high), len(samples)
    elif not options.n_bootstrap:
        resampled = "none (n_bootstrap = 0)"
    return CriticalWidth(
        slice_label,
        tuple(map(float, widths)),
        tuple(map(float, shares)),
        tuple(map(float, (fitted.astype(float) @ onehot) / onehot.sum(0))),
        value,
        bracket(value, widths),
        interval,
        position,
        monotone,
        resampled,
        n,
    )


# ----------------------------------------------------------------------------- trends


def within_slopes(x, y, strata, weights: np.ndarray) -> np.ndarray:
    """The common slope of y on x with one intercept per stratum, for each row of weights (B, runs) (module
    docstring); NaN where x does not vary within any stratum."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    _, index = np.unique(strata, return_inverse=True)
    onehot = np.eye(index.max() + 1)[index.ravel()]
    total = weights @ onehot
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_x = np.where(total > 0, (weights @ (onehot * x[:, None])) / total, 0)
        mean_y = np.where(total > 0, (weights @ (onehot * y[:, None])) / total, 0)
    sxy = weights @ (x * y) - (total * mean_x * mean_y).sum(1)
    sxx = weights @ (x * x) - (total * mean_x**2).sum(1)
    ok = sxx > 1e-12 * np.maximum(weights @ (x * x), 1e-300)
    return np.where(ok, sxy / np.where(ok, sxx, 1.0), NAN)


class PooledSlope(NamedTuple):
    status: str
    slope: float = NAN
    ci: tuple = (NAN, NAN)
    n_runs: int = 0
    n_slices: int = 0
    resampled: str = ""


def pooled_slope(x, y, strata, seeds, options: EmergenceOptions = EmergenceOptions()) -> PooledSlope:
    """The within-slice slope of y on x (E1) with its seed-bootstrap interval."""
    x, y, strata = np.asarray(x, np.float64), np.asarray(y, np.float64), np.asarray(strata)
    varied = [s for s in np.unique(strata) if len(np.unique(x[strata == s])) > 1] if len(x) else []
    if len(x) < fits.MIN_RUNS or not varied:
        why = f"{len(x)} usable run(s), need {fits.MIN_RUNS}" if len(x) < fits.MIN_RUNS else "no slice with two widths"
        return PooledSlope(f"not enough data: {why}", n_runs=len(x))
    slope = float(within_slopes(x, y, strata, np.ones((1, len(x))))[0])
    ci, unit = (NAN, NAN), "none (n_bootstrap = 0)"
    if options.n_bootstrap:
        weights, unit = fits.resample_weights(
            np.asarray(seeds), options.n_bootstrap, np.random.default_rng(options.seed)
        )
        ci = fits.percentile_interval(within_slopes(x, y, strata, weights), options.confidence, options.n_bootstrap)
    return PooledSlope("ok", slope, ci, len(x), len(varied), unit)


def width_trend(width, y, seeds, options: EmergenceOptions = EmergenceOptions()) -> fits.LineStats | str:
    """OLS of y on log width with the seed-cluster bootstrap (fits.fit_line), or the reason there is none."""
    width, y = np.asarray(width, np.float64), np.asarray(y, np.float64)
    if len(y) < fits.MIN_RUNS or len(np.unique(width)) < 2:
        return f"not enough data: {len(y)} run(s) at {len(np.unique(width))} width(s)"
    return fits.fit_line(np.log(width), y, seeds, options.fit_options())


# ----------------------------------------------------------------------------- verdicts


def ratio_verdict(pooled: PooledSlope, ratios, options: EmergenceOptions) -> Verdict:
    """E1 from the pooled within-slice slope of log(V_sc/V_st) on log width and the usable runs' ratios."""
    need = "and its interval's upper end < 0" if options.ratio_needs_interval else "(point estimate)"
    rule = f"✓ when the within-λ slope of log(V_sc/V_st) on log width < 0 {need}"
    name = "V_sc/V_st decreases with width"
    if pooled.status != "ok":
        return Verdict("E1", name, NA, pooled.status, rule)
    ratios = np.asarray(ratios, np.float64)
    above = int((ratios > 1).sum())
    number = (
        f"slope {fmt(pooled.slope)} [{fmt(pooled.ci[0])}, {fmt(pooled.ci[1])}] over {pooled.n_runs} runs in "
        f"{pooled.n_slices} slice(s); V_sc > V_st in {above}/{len(ratios)} (median ratio "
        f"{fmt(float(np.median(ratios)))})"
    )
    holds = pooled.slope < 0 and (not options.ratio_needs_interval or pooled.ci[1] < 0)
    return Verdict("E1", name, OK if holds else FAIL, number, rule)


def lambda_of(label: tuple) -> tuple[float, tuple]:
    """(λ, the rest of the slice label) of a slice label."""
    values = dict(label)
    return values.get("weight_decay", NAN), tuple((a, v) for a, v in label if a != "weight_decay")


def critical_width_verdict(critical: list[CriticalWidth], options: EmergenceOptions) -> Verdict:
    """E2 from the N* of every slice (module docstring)."""
    rule = (
        "✓ when N* never rises with λ and is lower at the largest λ than at the smallest (λ at which no width "
        f"fits in ≥ {options.min_share:.0%} of runs left out)"
    )
    name = "stronger decay lowers N*"
    groups: dict[tuple, list] = {}
    for c in critical:
        lam, rest = lambda_of(c.slice)
        if np.isfinite(lam):
            groups.setdefault(rest, []).append((lam, c))
    outcomes, texts = [], []
    for rest, members in groups.items():
        members.sort(key=lambda item: item[0])
        kept = [(lam, c) for lam, c in members if max(c.fitted) >= options.min_share]
        dropped = [lam for lam, c in members if max(c.fitted) < options.min_share]
        series = np.array([c.value for _, c in kept])
        text = ", ".join(f"{c.text()} at λ={lam:g}" for lam, c in kept) or "no λ that fits"
        text = (f"({fits.slice_text(rest)}) " if rest else "") + "N* " + text
        if dropped:
            text += f" (never fits at λ = {', '.join(f'{lam:g}' for lam in dropped)})"
        texts.append(text)
        if len(kept) < 2:
            outcomes.append(NA)
        elif np.any(series[1:] > series[:-1]):
            outcomes.append(FAIL)
        elif series[-1] < series[0]:
            outcomes.append(OK)
        else:
            censored = all(c.position != "inside" for _, c in kept)
            outcomes.append(NA if censored else FAIL)
    if not texts:
        return Verdict("E2", name, NA, "λ not varied", rule)
    checked = [o for o in outcomes if o != NA]
    verdict = NA if not checked else (OK if all(o == OK for o in checked) else FAIL)
    return Verdict("E2", name, verdict, "; ".join(texts), rule)


def peak_verdict(runs: WidthRuns, options: EmergenceOptions) -> Verdict:
    """E3 from the usable runs' peak drops."""
    rule = (
        f"✓ when ≥ {options.peak_share:.0%} of usable runs rise to a V peak and fall ≥ {options.peak_drop:.0%} "
        f"below it before T_transition"
    )
    name = "a norm peak-then-decay precedes the jump"
    usable = runs.usable(options.regimes)
    if not usable.any():
        return Verdict("E3", name, NA, "no usable run (transitioned, regime in emergence.regimes)", rule)
    shown = runs.rose[usable] & (runs.drop[usable] >= options.peak_drop)
    number = (
        f"{int(shown.sum())}/{int(usable.sum())} runs; median drop from the peak to T_transition "
        f"{fmt(float(np.median(runs.drop[usable])))}"
    )
    return Verdict("E3", name, OK if shown.mean() >= options.peak_share else FAIL, number, rule)


# ----------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class EmergenceReport(Tabular):
    """Everything the emergence analysis found: per-run arrays, N* per slice, trend fits per slice, the pooled
    slope and the verdicts E1–E3. Its table (`Tabular`, emergence.csv): one row per slice and width."""

    runs: WidthRuns
    slices: tuple
    critical: tuple
    ratio_trends: tuple
    delay_trends: tuple
    pooled: PooledSlope
    verdicts: tuple
    options: EmergenceOptions
    notes: tuple = ()

    def rows(self) -> list[dict]:
        """One row per (slice, width): counts, medians of V_sc, V_st, ratio, delay, runs without V_st, and the
        slice's N* with its interval."""
        r, t, usable = self.runs, self.runs.table, self.runs.usable(self.options.regimes)
        rows = []
        for (label, positions), crit in zip(self.slices, self.critical):
            for w in crit.widths:
                at = positions[r.width[positions] == w]
                use = at[usable[at]]

                def median(values, use=use):
                    return float(np.median(values[use])) if len(use) else NAN

                rows.append(
                    {
                        **{a: v for a, v in label},
                        self.options.width_axis: w,
                        "n_runs": len(at),
                        "n_fit": int(np.isfinite(t.t_fit[at]).sum()),
                        "n_transitioned": int(r.transitioned[at].sum()),
                        "n_usable": len(use),
                        "V_sc": median(t.v_fit),
                        "V_st": median(t.v_post),
                        "ratio": median(r.ratio),
                        "delay": median(t.delay),
                        "peak_then_decay": int((r.rose[use] & (r.drop[use] >= self.options.peak_drop)).sum()),
                        "no_V_st_runs": " ".join(str(int(k)) for k in t.run[at[~r.transitioned[at]]]),
                        "N*": crit.value,
                        "N*_lo": crit.interval[0],
                        "N*_hi": crit.interval[1],
                        "N*_position": crit.position,
                    }
                )
        return rows

    def critical_rows(self) -> list[dict]:
        return [
            {
                "slice": fits.slice_text(c.slice),
                "N*": c.text(),
                "interval": c.interval_text(),
                "transitioned share per width": " ".join(f"{w:g}:{s:.2f}" for w, s in zip(c.widths, c.shares)),
                "monotone": c.monotone,
                "resampled": c.resampled,
            }
            for c in self.critical
        ]

    def trend_rows(self) -> list[dict]:
        rows = []
        for (label, _), ratio, delay in zip(self.slices, self.ratio_trends, self.delay_trends):
            for kind, trend in (("log(V_sc/V_st)", ratio), ("log delay", delay)):
                row = {"slice": fits.slice_text(label), "y ~ log width": kind}
                if isinstance(trend, str):
                    rows.append({**row, "status": trend, "slope": NAN, "slope_lo": NAN, "slope_hi": NAN, "r2": NAN})
                else:
                    rows.append(
                        {
                            **row,
                            "status": "ok",
                            "slope": trend.slope,
                            "slope_lo": trend.slope_ci[0],
                            "slope_hi": trend.slope_ci[1],
                            "r2": trend.r2,
                        }
                    )
        return rows

    def verdicts_markdown(self) -> str:
        lines = ["| | statement (docs/science.md §8) | verdict | measured | rule |", "|---|---|---|---|---|"]
        lines += [f"| {v.id} | {v.prediction} | {v.verdict} | {v.number} | {v.rule} |" for v in self.verdicts]
        return "\n".join(lines) + "\n"

    def markdown(self) -> str:
        o = self.options
        head = (
            f"V = {o.norm_metric}; V_sc = V {'at T_fit' if o.v_sc == 'fit' else 'at its peak from T_fit to T_transition'}; "
            f"V_st = V {'at the last log' if o.v_st == 'final' else o.v_st.replace('_', ' ')} (runs that never "
            f"transitioned have none: n_transitioned < n_runs, listed in no_V_st_runs); N* = the first width "
            f"whose runs transition within the budget in ≥ {o.min_share:.0%} of seeds, interval (lo, hi] "
            f"from a {o.confidence:.0%} seed bootstrap (nht_jax.analysis.emergence). Rules are ours.\n\n"
        )
        pooled = (
            f"\nPooled within-λ slope of log(V_sc/V_st) on log width: {self.pooled.status}"
            + (
                f", {fmt(self.pooled.slope)} [{fmt(self.pooled.ci[0])}, {fmt(self.pooled.ci[1])}] "
                f"(resampled: {self.pooled.resampled})"
                if self.pooled.status == "ok"
                else ""
            )
            + "\n"
        )
        notes = "".join(f"- {n}\n" for n in self.notes)
        return (
            head
            + self.verdicts_markdown()
            + pooled
            + ("\n" + notes if notes else "")
            + "\n### Critical width per slice\n\n"
            + markdown_table(self.critical_rows())
            + "\n### Trends against log width\n\n"
            + markdown_table(self.trend_rows())
            + "\n### Per slice and width (emergence.csv)\n\n"
            + self.table()
        )


def emergence_analysis(
    runs: WidthRuns, options: EmergenceOptions = EmergenceOptions(), notes: tuple = ()
) -> EmergenceReport:
    """N*, trends and verdicts of the per-run arrays (module docstring)."""
    table = runs.table
    slices = fits.slices(table, options.width_axis)
    usable = runs.usable(options.regimes)
    fitted = np.isfinite(table.t_fit) & ~table.diverged
    critical, ratio_trends, delay_trends = [], [], []
    for label, positions in slices:
        critical.append(
            critical_width(
                runs.width[positions],
                runs.transitioned[positions],
                runs.seed[positions],
                options,
                fitted[positions],
                label,
            )
        )
        use = positions[usable[positions]]
        ratio_trends.append(width_trend(runs.width[use], np.log(runs.ratio[use]), runs.seed[use], options))
        use = use[table.delay[use] > 0]
        delay_trends.append(width_trend(runs.width[use], np.log(table.delay[use]), runs.seed[use], options))
    stratum = np.zeros(table.size, int)
    for k, (_, positions) in enumerate(slices):
        stratum[positions] = k
    pooled = pooled_slope(
        np.log(runs.width[usable]), np.log(runs.ratio[usable]), stratum[usable], runs.seed[usable], options
    )
    verdicts = (
        ratio_verdict(pooled, runs.ratio[usable], options),
        critical_width_verdict(critical, options),
        peak_verdict(runs, options),
    )
    return EmergenceReport(
        runs,
        tuple(slices),
        tuple(critical),
        tuple(ratio_trends),
        tuple(delay_trends),
        pooled,
        verdicts,
        options,
        tuple(notes),
    )


def applies(results, options: EmergenceOptions = EmergenceOptions()) -> bool:
    """Whether the sweep varies the width axis (so the emergence analysis has something to say).

    Args:
        results: the loaded results.
        options: the emergence options (the width axis).

    Returns:
        True when it does.
    """
    return options.width_axis in results.axes and len(np.unique(results.axes[options.width_axis])) > 1


def emergence_report(results, options: EmergenceOptions = EmergenceOptions()) -> EmergenceReport:
    """The emergence analysis of a loaded `Results` whose width axis is varied."""
    check(applies(results, options), f"emergence: the grid does not vary '{options.width_axis}'")
    rows = results.summary
    if not rows:
        from nht_jax.measure.summaries import summarize

        rows = summarize(results.steps, results.metrics, results.hparams, results.config)
    metric = resolve_norm_metric(results, options.norm_metric)
    check(
        metric in results.metrics,
        f"emergence.norm_metric: '{metric}' was not recorded (recorded: {', '.join(sorted(results.metrics))})",
    )
    runs = width_runs(rows, results.steps, results.metrics[metric], options, dict(results.hparams))
    notes = (f"budget: {results.config.train.steps} steps, logged {LogSchedule.of(results.config.train).short()}",)
    return emergence_analysis(runs, options, notes)


# ----------------------------------------------------------------------------- the figure


def draw_emergence(report: EmergenceReport, path, title: str = "") -> None:
    """Left: V_sc/V_st against width per slice (usable runs as dots, medians joined; dotted: ratio 1). Middle: the
    delay against width. Right: N* against λ with its interval; ▲ above the grid (no width within the budget),
    ▼ at or below the smallest width; the interval's open upper end drawn to the top. `title`: the short title;
    the explanation is the caption under the panels."""
    runs, table, o = report.runs, report.runs.table, report.options
    usable = runs.usable(o.regimes)
    grid = np.unique(runs.width)
    fig, (left, middle, right) = subplots(1, 3, figsize=(15, 4.4), layout="constrained")
    colours = cm.viridis(np.linspace(0, 0.9, max(len(report.slices), 1)))
    for colour, (label, positions) in zip(colours, report.slices):
        use = positions[usable[positions]]
        if not len(use):
            continue
        widths = np.unique(runs.width[use])
        for ax, values in ((left, runs.ratio), (middle, table.delay.astype(float))):
            ax.scatter(runs.width[use], values[use], color=colour, s=14, alpha=0.7)
            ax.plot(
                widths,
                [np.median(values[use][runs.width[use] == w]) for w in widths],
                color=colour,
                lw=1,
                label=fits.slice_text(label),
            )
    for ax, ylabel, what in ((left, style.label("v_ratio"), "norm ratio"), (middle, style.label("delay"), "delay")):
        ax.set(xlabel=style.label(o.width_axis), ylabel=ylabel, title=f"{what} against width")
        if usable.any():
            ax.set(
                xscale="log",
                yscale="log",
                xticks=grid,
                xticklabels=[f"{w:g}" for w in grid],
                xlim=(grid[0] / 1.3, grid[-1] * 1.3),
            )
            ax.xaxis.set_minor_locator(NullLocator())
            ax.legend(fontsize=7)
        else:
            ax.text(0.5, 0.5, "no usable run (none transitioned after fitting)", ha="center", transform=ax.transAxes)
    if usable.any():
        left.axhline(1, color="grey", ls=":", lw=1)
    lams = np.array([lambda_of(c.slice)[0] for c in report.critical])
    if np.isfinite(lams).any():
        low, high = grid[0] / 1.6, grid[-1] * 1.6
        for lam, c in zip(lams, report.critical):
            if c.position == "above the grid":
                right.scatter([lam], [grid[-1] * 1.3], marker="^", color="k")
                continue
            right.plot([lam, lam], [max(c.interval[0], low), min(c.interval[1], high)], color="k", lw=1)
            right.scatter([lam], [c.value], marker="v" if c.position == "below the grid" else "o", color="k")
        right.axhline(grid[-1], color="grey", ls=":", lw=1)
        right.set(
            xscale="log",
            yscale="log",
            ylim=(low, high),
            yticks=grid,
            yticklabels=[f"{w:g}" for w in grid],
            xticks=np.unique(lams[np.isfinite(lams)]),
            xticklabels=[f"{v:g}" for v in np.unique(lams)],
            xlabel=style.label("weight_decay"),
            ylabel=f"N* ({style.label(o.width_axis)})",
            title="critical width N*",
        )
        right.minorticks_off()
    else:
        right.set(title="critical width: λ not varied")
    fig.suptitle(title or "emergence: width × λ", fontsize=10)
    style.caption(
        fig,
        f"Left and middle: the usable runs' V_sc/V_st and delay against width (dots), one colour per "
        f"slice, medians joined; dotted: ratio 1. Right: the critical width N* per λ, the smallest "
        f"width at which ≥ {o.min_share:.0%} of the seeds transition, with its interval (vertical "
        f"line); ▲: no width within the budget, ▼: at or below the smallest width; dotted: the "
        f"largest width of the grid.",
    )
    save(fig, path)


def draw_figures(results, report: EmergenceReport, folder) -> tuple[str, ...]:
    draw_emergence(report, Path(folder) / "emergence.png", f"{results.config.name}: emergence (width × λ)")
    return ("emergence.png",)


ANALYSIS = Analysis(
    name="emergence",
    options=EmergenceOptions,
    run=lambda results, options, needed: emergence_report(results, options) if applies(results, options) else None,
    tables=lambda report: {"emergence.csv": report.csv()},
    figures=draw_figures,
    markdown=lambda report: "\n## The emergence conjecture (docs/science.md §8)\n\n" + report.markdown(),
    summary=lambda report: "## The emergence conjecture (docs/science.md §8)\n\n" + report.verdicts_markdown(),
)
"""`nht analyze`'s record of the emergence conjecture; it applies when the grid varies the width."""


__all__ = ["ANALYSIS", "applies"]
