"""Norm Separation Score S (docs/science.md §3, P5, Definition 4.1): *our* definition; the paper gives no formula.

S = M · κ · A ∈ [−1, 1] scores one run's trajectory on the three clauses of Definition 4.1, one factor each: M the
monotone association of the shortcut-reliance signal φ with V = ‖θ‖², A the completeness of φ's switch, κ its
sharpness relative to the escape time, over the logs from the norm peak on. Pooled per sweep: the median of S over
the runs of `regimes`, with a bootstrap interval. `nht analyze` writes it to separation.csv; `PAPER_S` holds the
paper's values to compare the ordering with. Shared helpers: nht_jax.analysis.series and nht_jax.analysis.tables.

The definitions of φ, the window, M, A and κ, when S is NaN, and the planted checks: docs/methods/analysis.md,
"Norm Separation Score"; the report's reading: docs/guides/analyse.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np
from scipy.optimize import isotonic_regression
from scipy.stats import spearmanr

from nht_jax.analysis.series import Pooled, bootstrap_median, finite_run, pool_mask, resolve_norm_metric, run_info
from nht_jax.measure.forecast.window import first_peak, first_step
from nht_jax.analysis.bootstrap import BootstrapOptions
from nht_jax.analysis.record import Analysis
from nht_jax.analysis.tables import Tabular, fmt
from nht_jax.results.folder import Results

PAPER_S = {
    "modular arithmetic": (1.0, 1.0),
    "CIFAR-10 borders": (0.5, 0.7),
    "CelebA": (-0.11, -0.11),
    "Waterbirds": (0.0, 0.0),
}
"""The paper's Norm Separation Scores (low, high), docs/science.md §3."""

AUTO_PHI = (
    ("shortcut_reliance", "high"),
    ("conflicting_reliance", "high"),
    ("worst_group_acc", "low"),
    ("test_acc", "low"),
    ("clean_acc", "low"),
)
"""Fallback sources of φ, in order, when the analysis's transition metric is not recorded."""


# ----------------------------------------------------------------------------- options and results


@dataclass(frozen=True)
class SeparationOptions(BootstrapOptions):
    """Options of the Norm Separation Score (module docstring: the definition).

    phi_metric: source metric of φ; "" = auto (the analysis's transition metric, else `AUTO_PHI`).
    phi_direction: "high" (high values = shortcut), "low" (low values = shortcut), "auto" (from the
        transition direction or `AUTO_PHI`; "low" for an unknown metric whose name ends in "acc", else "high").
    phi_shortcut_level, phi_structured_level: the metric's value on the shortcut / structured solution;
        None = 1 / 0 for "high", 0 / 1 for "low".
    norm_metric: V ("norm_sq" = ‖θ‖², the paper's V; "auto" = the decayed parameters' norm, see
        `resolve_norm_metric`).
    min_norm_drop: a norm peak counts when V falls after it by at least this fraction of the peak.
    start_after_fit: the window starts at T_fit when the run fits after its norm peak.
    min_points: fewest logs in the window.
    level_logs: logs at each end of the window whose median gives the start / end levels of φ.
    switch_levels: (upper, lower) fractions of the switch between which its width is measured.
    monotonicity: "isotonic" (M = R²_inc − R²_dec) or "spearman" (M = Spearman's ρ of V and φ).
    regimes, n_bootstrap, confidence, seed (`nht_jax.analysis.bootstrap.BootstrapOptions`): the pooled median
        and its bootstrap interval.
    """

    n_bootstrap: int = 2000  # BootstrapOptions' field, this analysis's default
    phi_metric: str = ""
    phi_direction: Literal["auto", "high", "low"] = "auto"
    phi_shortcut_level: float | None = None
    phi_structured_level: float | None = None
    norm_metric: str = "norm_sq"
    min_norm_drop: float = 0.1
    start_after_fit: bool = True
    min_points: int = 5
    level_logs: int = 3
    switch_levels: tuple[float, float] = (0.9, 0.1)
    monotonicity: Literal["isotonic", "spearman"] = "isotonic"


class PhiSource(NamedTuple):
    metric: str
    direction: str  # "high" | "low"
    shortcut_level: float
    structured_level: float
    why: str  # how it was chosen


class SeparationRun(NamedTuple):
    """One run's score and its parts (module docstring). `reason` is empty when S is defined."""

    S: float
    M: float  # monotone association of φ with V over the window
    sharpness: float  # κ
    amplitude: float  # A
    spearman: float  # Spearman's ρ(V, φ) over the window (reported whatever `monotonicity` is)
    peak_step: float  # t_peak
    window_start: float
    phi_start: float  # φ_a
    phi_end: float  # φ_b
    switch_start: float  # t_90
    switch_mid: float  # t_50
    switch_end: float  # t_10
    escape_time: float  # T_esc = t_50 − t_peak
    switch_width: float  # w = t_10 − t_90
    n_points: int
    reason: str


NAN_RUN = SeparationRun(*([np.nan] * 14), 0, "")


@dataclass(frozen=True)
class SeparationReport(Tabular):
    """Per-run scores of a sweep and the pooled S; one row per run (`Tabular`)."""

    phi: PhiSource
    norm_metric: str
    runs: tuple[SeparationRun, ...]
    info: tuple[dict, ...]  # run index, grid values, regime per run
    pooled: Pooled
    pool_note: str
    options: SeparationOptions = field(default_factory=SeparationOptions)

    def shown(self) -> list[str] | None:
        hidden = ("phi_start", "phi_end", "switch_start", "switch_end")
        return [c for c in self.rows()[0] if c not in hidden] if self.runs else None

    def markdown(self) -> str:
        p = self.pooled
        head = (
            f"Norm Separation Score S = M·κ·A (our definition, nht_jax.analysis.separation); φ from "
            f"{self.phi.metric} ({self.phi.direction} = shortcut; {self.phi.why}), V = {self.norm_metric}.\n\n"
            f"Pooled S: median {fmt(p.median)} [{fmt(p.lo)}, {fmt(p.hi)}] "
            f"({self.options.confidence:.0%} bootstrap) over {p.n} runs, {self.pool_note}. "
            f"Paper: modular arithmetic ≈ 1, CIFAR-10 borders 0.5–0.7, CelebA −0.11, Waterbirds ≈ 0.\n\n"
        )
        return head + self.table()


# ----------------------------------------------------------------------------- the core on arrays


def reliance_signal(
    values, direction: str, shortcut_level: float | None = None, structured_level: float | None = None
) -> np.ndarray:
    """φ = (m − structured)/(shortcut − structured), levels defaulting to (1, 0) for "high", (0, 1) for "low"."""
    if direction not in ("high", "low"):
        raise ValueError(f"phi direction must be 'high' or 'low', got {direction!r}")
    short = shortcut_level if shortcut_level is not None else (1.0 if direction == "high" else 0.0)
    struct = structured_level if structured_level is not None else (0.0 if direction == "high" else 1.0)
    if short == struct:
        raise ValueError("phi's shortcut and structured levels must differ")
    return (np.asarray(values, np.float64) - struct) / (short - struct)


def monotone_association(v: np.ndarray, phi: np.ndarray) -> float:
    """M = R²_inc − R²_dec of the best non-decreasing and non-increasing fits of φ on V (0 if φ is constant)."""
    order = np.argsort(v, kind="stable")
    y = np.asarray(phi, np.float64)[order]
    sst = float(np.sum((y - y.mean()) ** 2))
    if sst <= 1e-12 * max(1.0, float(np.sum(y**2))):
        return 0.0
    inc = isotonic_regression(y, increasing=True).x
    dec = isotonic_regression(y, increasing=False).x
    return float(np.sum((y - dec) ** 2) - np.sum((y - inc) ** 2)) / sst


def separation_score(
    steps, v, phi, t_fit: float = np.nan, options: SeparationOptions = SeparationOptions()
) -> SeparationRun:
    """S of one run from its (logs,) arrays: V, φ (already on the 1 = shortcut, 0 = structured scale, see
    `reliance_signal`) and T_fit (NaN when unknown or never). NaN S with a reason where S is undefined."""
    steps = np.asarray(steps, np.float64)
    v, phi = np.asarray(v, np.float64), np.asarray(phi, np.float64)

    def undefined(reason, **known):
        return NAN_RUN._replace(reason=reason, **known)

    if not (np.isfinite(v).all() and np.isfinite(phi).all()):
        return undefined("diverged or missing values: V or φ is not finite at some log")
    p, contracted = first_peak(v, options.min_norm_drop)
    t_peak = float(steps[p])
    if contracted < 0:
        if p == v.size - 1:
            return undefined("no norm peak: V is largest at the last log (still rising, weak regime)", peak_step=t_peak)
        drop = (v[p] - v[p:].min()) / v[p] if v[p] > 0 else 0.0
        return undefined(
            f"no norm peak: V falls by {drop:.1%} after its peak (< {options.min_norm_drop:.0%})", peak_step=t_peak
        )
    start = t_fit if options.start_after_fit and np.isfinite(t_fit) and t_fit > t_peak else t_peak
    w = steps >= start
    n = int(w.sum())
    if n < options.min_points:
        return undefined(
            f"only {n} logs after the norm peak / fit (< {options.min_points})",
            peak_step=t_peak,
            window_start=start,
            n_points=n,
        )
    ts, vw, fw = steps[w], v[w], phi[w]

    with np.errstate(invalid="ignore", divide="ignore"):
        rho = float(spearmanr(vw, fw).statistic) if np.ptp(fw) > 0 else np.nan
    if options.monotonicity == "spearman":
        m = rho if np.isfinite(rho) else 0.0
    else:
        m = monotone_association(vw, fw)
    k = max(1, min(options.level_logs, n // 3))
    phi_a, phi_b = float(np.median(fw[:k])), float(np.median(fw[-k:]))
    amplitude = min(abs(phi_a - phi_b), 1.0)
    known = {
        "M": m,
        "amplitude": amplitude,
        "spearman": rho,
        "peak_step": t_peak,
        "window_start": start,
        "phi_start": phi_a,
        "phi_end": phi_b,
        "n_points": n,
    }
    if amplitude == 0.0:
        return SeparationRun(**{**NAN_RUN._asdict(), **known, "S": 0.0, "sharpness": 0.0, "reason": ""})
    psi = (fw - phi_b) / (phi_a - phi_b)
    upper, lower = options.switch_levels
    t_hi, t_mid, t_lo = (first_step(psi <= upper, ts), first_step(psi <= 0.5, ts), first_step(psi <= lower, ts))
    escape, width = t_mid - t_peak, t_lo - t_hi
    known.update(switch_start=t_hi, switch_mid=t_mid, switch_end=t_lo, escape_time=escape, switch_width=width)
    kappa = escape / (escape + width) if escape > 0 else 0.0
    return SeparationRun(S=m * kappa * amplitude, sharpness=kappa, reason="", **known)


# ----------------------------------------------------------------------------- entry point


def resolve_phi(res: Results, options: SeparationOptions = SeparationOptions()) -> PhiSource:
    """The source of φ for these results (see `SeparationOptions` and the module docstring)."""
    analysis = res.config.analysis
    metric, direction, why = options.phi_metric, options.phi_direction, "set in the options"
    if not metric:
        if analysis.transition_metric in res.metrics:
            metric, why = analysis.transition_metric, "the analysis's transition metric"
            if direction == "auto":
                direction = "low" if analysis.transition_direction == "above" else "high"
        else:
            found = [(m, d) for m, d in AUTO_PHI if m in res.metrics]
            if not found:
                raise ValueError(
                    f"no shortcut-reliance metric among {sorted(res.metrics)}; set SeparationOptions.phi_metric"
                )
            metric, auto_dir = found[0]
            why = "the first recorded of " + ", ".join(m for m, _ in AUTO_PHI)
            direction = auto_dir if direction == "auto" else direction
    if metric not in res.metrics:
        raise ValueError(f"phi metric {metric!r} is not recorded; recorded: {sorted(res.metrics)}")
    if direction == "auto":
        direction = dict(AUTO_PHI).get(metric, "low" if metric.endswith("acc") else "high")
    short = (
        options.phi_shortcut_level if options.phi_shortcut_level is not None else (1.0 if direction == "high" else 0.0)
    )
    struct = (
        options.phi_structured_level
        if options.phi_structured_level is not None
        else (0.0 if direction == "high" else 1.0)
    )
    return PhiSource(metric, direction, float(short), float(struct), why)


def separation_report(res: Results, options: SeparationOptions = SeparationOptions()) -> SeparationReport:
    """S for every run of a loaded results directory, and the pooled median over `options.regimes`."""
    phi_src = resolve_phi(res, options)
    norm_name = resolve_norm_metric(res, options.norm_metric)
    runs, infos = [], []
    for i in range(res.num_runs):
        finite = finite_run(res, i)
        info = run_info(res, i)
        if not finite.all():
            runs.append(NAN_RUN._replace(reason=f"diverged at step {res.steps[np.argmin(finite)]:.0f}"))
        else:
            phi = reliance_signal(
                res.metrics[phi_src.metric][i], phi_src.direction, phi_src.shortcut_level, phi_src.structured_level
            )
            t_fit = float(res.summary[i]["T_fit"]) if res.summary else np.nan
            runs.append(separation_score(res.steps, res.metrics[norm_name][i], phi, t_fit, options))
        infos.append(info)
    mask, note = pool_mask(res, options.regimes)
    pooled = bootstrap_median(
        [r.S for r, keep in zip(runs, mask) if keep], options.confidence, options.n_bootstrap, options.seed
    )
    return SeparationReport(phi_src, norm_name, tuple(runs), tuple(infos), pooled, note, options)


ANALYSIS = Analysis(
    name="separation",
    metrics=("norm_sq",),
    options=SeparationOptions,
    run=lambda results, options, needed: separation_report(results, options),
    tables=lambda report: {"separation.csv": report.csv()},
    markdown=lambda report: "\n## Norm Separation Score\n\n" + report.markdown(),
)
"""`nht analyze`'s record of the Norm Separation Score (nht_jax.analysis.registry)."""


__all__ = ["ANALYSIS"]
