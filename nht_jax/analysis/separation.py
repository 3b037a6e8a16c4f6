"""Norm Separation Score S (docs/science.md §3, P5, Definition 4.1): *our* definition; the paper gives no formula.

Definition 4.1 asks for a scalar φ(θ) that is 1 on the shortcut set and 0 on the structured set, is
monotonically related to V = ‖θ‖² near the interpolation set, and switches sharply relative to the escape
time. S scores one run's trajectory on exactly these three clauses, one factor each:

    S = M · κ · A ∈ [−1, 1]

φ_t (the shortcut-reliance signal) is a recorded metric m_t mapped onto the definition's scale,
    φ_t = (m_t − m_structured) / (m_shortcut − m_structured)   (not clipped),
with `SeparationOptions.phi_metric` / `phi_direction` / the two levels. direction "high": high values mean
shortcut (reliance metrics; levels shortcut 1, structured 0, so φ = m); "low": low values mean shortcut
(accuracies; levels 0 and 1, so φ = 1 − m). Chance level is not subtracted by default (our choice: a
memorised table scores test accuracy ≈ 1/p ≈ 0, a shape-using image model scores shortcut reliance ≈ 1/K on
gray images); set the levels to subtract it. Default metric ("auto"), first that the results hold:
    1. the analysis's transition metric (config.analysis.transition_metric), direction from
       transition_direction ("above" → "low", "below" → "high"): φ is then the very signal T_transition is
       read from (test_acc for token tasks, shortcut_reliance for CIFAR borders, conflicting_reliance for
       border digits, worst_group_acc for CelebA / Waterbirds);
    2. otherwise the first recorded of shortcut_reliance (high), conflicting_reliance (high),
       worst_group_acc (low), test_acc (low), clean_acc (low).
The domain's reliance metrics are listed in `nht_jax.domains.images.IMAGE_METRICS`: shortcut_reliance =
fraction of mid-gray images carrying only a class border that are predicted as that class.

Window W (per run): the logs from the norm peak t_peak to the end, t_peak = the first log at which V reaches
a running maximum from which it then falls by `min_norm_drop` before exceeding it (`first_peak`: a late
re-growth of V above that peak does not move it; summary's norm_peak_step is the global argmax); when T_fit is
later than t_peak and `start_after_fit`, from T_fit ("near the interpolation set"). V = `norm_metric`
("norm_sq", the paper's ‖θ‖², by default). S is NaN, with the reason, when
    the run diverged (a non-finite V or φ, or finite = 0, at some log);
    there is no norm peak: V never falls by `min_norm_drop` of a running maximum (default 0.1, like
        AnalysisConfig.norm_decay_fraction): still rising at the last log (weak regime), or too flat;
    W holds fewer than `min_points` logs.

M, monotone association (clause "monotonically related to ‖θ‖²"), default `monotonicity = "isotonic"`:
    M = R²_inc − R²_dec,  R²_± = 1 − SSE(best non-decreasing / non-increasing fit of φ on V) / SST(φ),
over W (isotonic regression, scipy.optimize.isotonic_regression). M = 1 exactly when φ is a noiseless
non-decreasing function of V of any shape — a step included — and −1 for a non-increasing one; for φ
unrelated to V both fits explain about equally little and M ≈ 0. Why not Spearman's ρ (the first proposal):
the ideal of Definition 4.1 is a *step* of φ in V with flat plateaus, and a rank correlation scores a step
at most √(3p(1 − p)) (≈ 0.87 for a switch halfway through W, less when off-centre) and scores the noise
inside the plateaus as disagreement; it cannot reach 1 on the very shape the definition describes.
Spearman's ρ is still reported, and `monotonicity = "spearman"` uses it as M.
M = 0 when φ is constant over W (no association to measure).

A, completeness (clause "φ = 1 on the shortcut set, 0 on the structured set"):
    φ_a = median of φ over the first `level_logs` logs of W, φ_b = median over the last ones,
    A = min(|φ_a − φ_b|, 1).
A run that leaves a border-reliance of 1 for one of 0.3 has done 70 % of the switch and scores A = 0.7.

κ, sharpness (clause "switches sharply relative to T_escape"): with ψ_t = (φ_t − φ_b)/(φ_a − φ_b) (1 at the
start level, 0 at the end level, whichever the direction), t_90, t_50, t_10 = the first logs of W with
ψ ≤ 0.9, 0.5, 0.1 (`switch_levels` gives the outer pair); switch width w = t_10 − t_90 (first passages:
a φ that wanders before settling gets a wide switch); escape time T_esc = t_50 − t_peak, the contraction
time the run spends before its switch;
    κ = T_esc / (T_esc + w) ∈ [0, 1]:
1 for an instantaneous switch after a long contraction, 1/2 when the switch takes as long as the escape,
→ 0 for a switch spread over the whole contraction. κ = 0 when A = 0, and when T_esc = 0 (φ is already half
switched at the norm peak: a switch the contraction did not produce; also the value of 0/0).

Planted checks (tests/analysis/test_separation.py): φ a sigmoid of V (lockstep) → S ≈ 0.9; the same φ values
shuffled in time → S ≈ 0; φ rising as V falls → S ≈ −0.9.

Pooled per sweep: the median of S over the runs whose regime (summary row) is in `regimes`
(default: intermediate, the only runs with a transition after a norm peak), with a percentile bootstrap
interval (`confidence`, `n_bootstrap` resamples, generator seeded with `seed`; `nht_jax.analysis.bootstrap`).

Paper's values, to compare the *ordering* with: modular arithmetic S ≈ 1, CIFAR-10 with borders 0.5–0.7,
CelebA −0.11, Waterbirds ≈ 0 (`PAPER_S`).

Shared helpers: nht_jax.analysis.series (per-run series, pooled medians) and nht_jax.analysis.tables.
"""

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
