"""Fits of a finished sweep: the delay law (docs/science.md §3, P6) and the regime boundaries in λ (P2). Pure NumPy.

Per run: the delay T_transition − T_fit, V_fit, V_post, r_V = log(V_fit / V_post) and γ_eff; then the delay-law
fits (`DELAY_FITS`, ordinary least squares with a bootstrap interval resampling seeds) and the regime boundaries
along λ or any varied axis (`regime_boundaries`, a ridge-penalised logistic regression, or the midpoint of a
clean step). `fit_report(results, options)` runs it all on a loaded `Results` for `nht analyze`; the rest works
on plain arrays and summary rows (`run_table`, `table_from_arrays`) and imports no JAX.

Every definition and choice (V_fit, V_post, the fits, the intervals, the usable runs, the boundaries):
docs/methods/analysis.md, "Delay-law fits and regime boundaries"; the report's reading: docs/guides/analyse.md."""

from __future__ import annotations

import collections
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np

from nht_jax.base.errors import check
from nht_jax.analysis.bootstrap import BootstrapOptions, distinct_resamples
from nht_jax.analysis.record import Analysis
from nht_jax.analysis.tables import csv_text, markdown_table

NAN = float("nan")
MIN_RUNS = 3
REGIME_RANK = {"weak": 0, "intermediate": 1, "structured": 1, "strong": 2}
TRANSITIONS = (("weak→intermediate", 1), ("intermediate→strong", 2))
"""Each boundary and the regime rank a run must reach to count as beyond it."""
REGIME_EXCLUSION = {
    "weak": "regime weak: no transition within the budget",
    "strong": "regime strong: never fits",
    "structured": "regime structured: delay 0 at log resolution",
    "intermediate": "regime intermediate: not in FitOptions.regimes",
    "diverged": "diverged",
}
SYMBOLS = {"weight_decay": "λ", "learning_rate": "η"}


@dataclass(frozen=True)
class FitOptions(BootstrapOptions):
    """Choices of the fits (see the module docstring for what each means).

    regimes, n_bootstrap, confidence, seed (`nht_jax.analysis.bootstrap.BootstrapOptions`): the regimes whose
    runs enter the delay fits; resamples per interval (0: no intervals); the intervals' level; the PRNG seed
    every fit starts from. v_fit: "fit" | "peak"; v_post: "transition" | "final" | "min_after_transition".
    structured_as: "intermediate" | "exclude", how the boundaries count structured runs. ridge: the logistic
    penalty on the standardised slope.
    """

    v_fit: Literal["fit", "peak"] = "fit"
    v_post: Literal["transition", "final", "min_after_transition"] = "transition"
    structured_as: Literal["intermediate", "exclude"] = "intermediate"
    ridge: float = 1e-2

    def __post_init__(self):
        super().__post_init__()
        check(self.v_fit in ("fit", "peak"), f"v_fit must be 'fit' or 'peak', got {self.v_fit!r}")
        check(
            self.v_post in ("transition", "final", "min_after_transition"),
            f"v_post must be 'transition', 'final' or 'min_after_transition', got {self.v_post!r}",
        )
        check(
            self.structured_as in ("intermediate", "exclude"),
            f"structured_as must be 'intermediate' or 'exclude', got {self.structured_as!r}",
        )
        check(self.ridge > 0, f"ridge must be > 0, got {self.ridge}")


# ----------------------------------------------------------------------------- per-run table


class RunTable(NamedTuple):
    """Per-run arrays, all (runs,): `axes` {axis: grid value}, regime, diverged, T_fit, T_transition, V_fit,
    V_post, γ_eff; `run` the runs' indices in the sweep."""

    run: np.ndarray
    axes: dict
    regime: np.ndarray
    diverged: np.ndarray
    t_fit: np.ndarray
    t_transition: np.ndarray
    v_fit: np.ndarray
    v_post: np.ndarray
    gamma: np.ndarray

    @property
    def delay(self) -> np.ndarray:
        return self.t_transition - self.t_fit

    @property
    def size(self) -> int:
        """The number of runs (len() counts the fields)."""
        return len(self.run)


def grid_values(values) -> np.ndarray:
    """Grid values as float64; float32 ones (Results.hparams) through their shortest decimal, so 1e-3 stays 0.001."""
    values = np.asarray(values)
    return values.astype(str).astype(np.float64) if values.dtype == np.float32 else values.astype(np.float64)


def table_from_arrays(
    axes: dict, regime, t_fit, t_transition, v_fit=None, v_post=None, gamma=None, diverged=None, run=None
) -> RunTable:
    """A RunTable from plain sequences; missing V and γ are NaN, `diverged` defaults to regime == "diverged"."""
    regime = np.asarray(regime, dtype=object)
    n = len(regime)

    def floats(values):
        return np.full(n, NAN) if values is None else np.asarray(values, np.float64).reshape(n)

    return RunTable(
        run=np.arange(n) if run is None else np.asarray(run, int),
        axes={k: grid_values(v).reshape(n) for k, v in axes.items()},
        regime=regime,
        diverged=(regime == "diverged") if diverged is None else np.asarray(diverged, bool) | (regime == "diverged"),
        t_fit=floats(t_fit),
        t_transition=floats(t_transition),
        v_fit=floats(v_fit),
        v_post=floats(v_post),
        gamma=floats(gamma),
    )


def norm_at(steps: np.ndarray, norm_sq: np.ndarray, times: np.ndarray) -> np.ndarray:
    """norm_sq[i] (runs, logs) at the logged step nearest times[i]; NaN where times[i] is NaN."""
    times = np.asarray(times, np.float64)
    index = np.abs(np.asarray(steps, np.float64)[None, :] - np.nan_to_num(times)[:, None]).argmin(1)
    values = np.asarray(norm_sq, np.float64)[np.arange(len(times)), index]
    return np.where(np.isnan(times), NAN, values)


def fit_norm(
    steps: np.ndarray, norm_sq: np.ndarray, t_fit: np.ndarray, t_transition: np.ndarray, v_fit: str
) -> np.ndarray:
    """V_fit per run by the `FitOptions.v_fit` rule: ‖θ‖² at T_fit ("fit") or its largest finite value logged
    from T_fit to T_transition ("peak"; to the last log when there is no transition); NaN without a fit."""
    if v_fit == "fit":
        return norm_at(steps, norm_sq, t_fit)
    steps, norm_sq = np.asarray(steps, np.float64), np.asarray(norm_sq, np.float64)
    start = np.nan_to_num(np.asarray(t_fit, np.float64), nan=np.inf)[:, None]
    end = np.nan_to_num(np.asarray(t_transition, np.float64), nan=np.inf)[:, None]
    inside = (steps[None, :] >= start) & (steps[None, :] <= end) & np.isfinite(norm_sq)
    largest = np.where(inside, norm_sq, -np.inf).max(1)
    return np.where(np.isfinite(largest), largest, NAN)


def post_norm(steps: np.ndarray, norm_sq: np.ndarray, t_transition: np.ndarray, v_post: str) -> np.ndarray:
    """V_post per run by the `FitOptions.v_post` rule; NaN where the run has no transition."""
    norm_sq = np.asarray(norm_sq, np.float64)
    t_transition = np.asarray(t_transition, np.float64)
    if v_post == "transition":
        return norm_at(steps, norm_sq, t_transition)
    if v_post == "final":
        return np.where(np.isnan(t_transition), NAN, norm_sq[:, -1])
    after = np.asarray(steps)[None, :] >= np.nan_to_num(t_transition, nan=np.inf)[:, None]
    masked = np.where(after & np.isfinite(norm_sq), norm_sq, np.inf)
    smallest = masked.min(1)
    return np.where(np.isfinite(smallest), smallest, NAN)


def run_table(
    rows: list[dict],
    steps=None,
    norm_sq=None,
    gamma=None,
    v_post: str = "transition",
    axes: dict | None = None,
    v_fit: str = "fit",
) -> RunTable:
    """The RunTable of summary rows (`nht_jax.measure.summaries.summarize`), V_fit and V_post read from the
    (runs, logs) ‖θ‖² trajectories when given. `axes` (the exact grid values per run, e.g. Results.hparams)
    defaults to the rows' columns between "run" and "regime"."""
    if axes is None:
        keys = list(rows[0]) if rows else ["regime"]
        axes_names = keys[keys.index("run") + 1 if "run" in keys else 0 : keys.index("regime")]
        axes = {name: [row[name] for row in rows] for name in axes_names}
    t_fit = np.array([row["T_fit"] for row in rows], np.float64)
    t_transition = np.array([row["T_transition"] for row in rows], np.float64)
    have_norms = steps is not None and norm_sq is not None
    return table_from_arrays(
        axes,
        [row["regime"] for row in rows],
        t_fit,
        t_transition,
        v_fit=fit_norm(steps, norm_sq, t_fit, t_transition, v_fit) if have_norms else None,
        v_post=post_norm(steps, norm_sq, t_transition, v_post) if have_norms else None,
        gamma=gamma,
        diverged=[bool(row.get("diverged", False)) for row in rows],
        run=[row.get("run", i) for i, row in enumerate(rows)],
    )


def varied(table: RunTable) -> list[str]:
    """Axes with more than one distinct value among the table's runs."""
    return [name for name, values in table.axes.items() if len(np.unique(values)) > 1]


def slices(table: RunTable, along: str | None) -> list[tuple[tuple, np.ndarray]]:
    """[(slice label ((axis, value), …), run positions)] over every combination of the varied axes other than
    `along` and the seed; one slice of every run when there are none.

    Args:
        table: the runs.
        along: the axis a fit runs along, or None.

    Returns:
        The slices.
    """
    others = [a for a in varied(table) if a not in (along, "seed")]
    if not others:
        return [((), np.arange(table.size))]
    keys = np.stack([table.axes[a] for a in others], 1)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    return [
        (tuple(zip(others, map(float, values))), np.flatnonzero(inverse.ravel() == k))
        for k, values in enumerate(unique)
    ]


# ----------------------------------------------------------------------------- bootstrap and lines


def resample_weights(groups: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """(n, runs) multiplicities of a cluster bootstrap: G groups drawn with replacement, each drawn group's runs
    all taken. A single group: runs drawn instead. Returns the weights and the unit resampled."""
    labels, inverse = np.unique(groups, return_inverse=True)
    if len(labels) > 1:
        counts = rng.multinomial(len(labels), np.full(len(labels), 1 / len(labels)), size=n)
        return counts[:, inverse.ravel()].astype(np.float64), "seeds"
    m = len(groups)
    return rng.multinomial(m, np.full(m, 1 / m), size=n).astype(np.float64), "runs (one seed)"


def stratified_weights(strata: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, runs) multiplicities of a bootstrap resampling runs within each stratum (each keeps its count)."""
    weights = np.zeros((n, len(strata)))
    for label in np.unique(strata):
        members = np.flatnonzero(strata == label)
        weights[:, members] = rng.multinomial(len(members), np.full(len(members), 1 / len(members)), size=n)
    return weights


def weighted_lines(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(slopes, intercepts) of weighted least squares for each row of weights (B, runs); NaN where a row puts
    weight on fewer than two distinct x."""
    x0 = x.mean()
    xc = x - x0
    sw = weights.sum(1)
    mx, my = weights @ xc / sw, weights @ y / sw
    sxx = weights @ (xc * xc) / sw - mx * mx
    sxy = weights @ (xc * y) / sw - mx * my
    _, x_id = np.unique(x, return_inverse=True)
    distinct = (weights @ np.eye(x_id.max() + 1)[x_id.ravel()] > 0).sum(1)
    ok = distinct >= 2
    slope = np.where(ok, sxy / np.where(ok, sxx, 1.0), NAN)
    return slope, np.where(ok, my - slope * (mx + x0), NAN)


def percentile_interval(samples: np.ndarray, confidence: float, total: int) -> tuple[float, float]:
    """Central percentile interval of the finite samples; NaN when fewer than half of `total` are finite."""
    finite = samples[np.isfinite(samples)]
    if total == 0 or len(finite) < 0.5 * total:
        return NAN, NAN
    tail = (1 - confidence) / 2
    low, high = np.quantile(finite, [tail, 1 - tail])
    return float(low), float(high)


class LineStats(NamedTuple):
    slope: float
    intercept: float
    r2: float
    slope_ci: tuple[float, float]
    intercept_ci: tuple[float, float]
    resampled: str
    n_resamples: int


def fit_line(x, y, groups, options: FitOptions) -> LineStats:
    """OLS y = intercept + slope·x with R² and cluster-bootstrap intervals. Needs ≥ 2 distinct x.

    Args:
        x: the x values.
        y: the y values.
        groups: each run's seed, the bootstrap's clusters.
        options: the fit options (confidence, resamples).

    Returns:
        The LineStats.
    """
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    slope, intercept = (float(v[0]) for v in weighted_lines(x, y, np.ones((1, len(x)))))
    residual = y - (intercept + slope * x)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1 - float((residual**2).sum()) / ss_tot if ss_tot > 0 else NAN
    rng = np.random.default_rng(options.seed)
    weights, unit = resample_weights(np.asarray(groups), options.n_bootstrap, rng)
    slopes, intercepts = weighted_lines(x, y, weights) if options.n_bootstrap else (np.empty(0), np.empty(0))
    return LineStats(
        slope,
        intercept,
        r2,
        percentile_interval(slopes, options.confidence, options.n_bootstrap),
        percentile_interval(intercepts, options.confidence, options.n_bootstrap),
        unit,
        int(np.isfinite(slopes).sum()),
    )


# ----------------------------------------------------------------------------- delay-law fits


@dataclass(frozen=True)
class LineFit:
    """One delay-law fit. status "ok", or "not enough data: …" with NaN numbers. slice: the fixed values of the
    other varied axes (() = every usable run pooled). runs: the usable runs' indices; excluded: (run, reason)."""

    kind: str
    x_label: str
    y_label: str
    slice: tuple
    status: str
    slope: float = NAN
    intercept: float = NAN
    r2: float = NAN
    slope_ci: tuple = (NAN, NAN)
    intercept_ci: tuple = (NAN, NAN)
    resampled: str = ""
    n_resamples: int = 0
    runs: tuple = ()
    excluded: tuple = ()
    clusters: int = 0

    @property
    def distinct_resamples(self) -> int:
        """How many different resamples the cluster bootstrap over `clusters` seeds (or runs) can draw."""
        return distinct_resamples(self.clusters)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def nu(self) -> float:
        """The power-law exponent ν of delay ∝ λ^(−ν) or η^(−ν) (the POWER_LAWS fits only)."""
        return -self.slope

    @property
    def nu_ci(self) -> tuple[float, float]:
        return -self.slope_ci[1], -self.slope_ci[0]

    def as_row(self) -> dict:
        """A flat row for CSV/Markdown (ν columns NaN except for the POWER_LAWS fits)."""
        power = self.kind in POWER_LAWS
        return {
            "fit": self.kind,
            "y ~ x": f"{self.y_label} ~ {self.x_label}",
            "slice": slice_text(self.slice),
            "status": self.status,
            "n_runs": len(self.runs),
            "slope": self.slope,
            "slope_lo": self.slope_ci[0],
            "slope_hi": self.slope_ci[1],
            "intercept": self.intercept,
            "intercept_lo": self.intercept_ci[0],
            "intercept_hi": self.intercept_ci[1],
            "r2": self.r2,
            "nu": self.nu if power else NAN,
            "nu_lo": self.nu_ci[0] if power else NAN,
            "nu_hi": self.nu_ci[1] if power else NAN,
            "resampled": self.resampled,
            "clusters": self.clusters,
            "distinct_resamples": self.distinct_resamples,
            "n_excluded": len(self.excluded),
            "excluded": reason_counts(self.excluded),
        }


def _inverse(values: np.ndarray, symbol: str):
    with np.errstate(divide="ignore"):
        return np.where(values > 0, 1 / values, NAN), np.where(values > 0, "", f"{symbol} = 0: 1/{symbol} undefined")


def _log(values: np.ndarray, reason: str):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(values > 0, np.log(values), NAN), np.where(values > 0, "", reason)


def _log_ratio(table: RunTable):
    defined = np.isfinite(table.v_fit) & np.isfinite(table.v_post) & (table.v_post > 0)
    drop = defined & (table.v_fit > table.v_post)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(drop, np.log(table.v_fit / table.v_post), NAN)
    reason = np.where(~defined, "V_fit or V_post not recorded", np.where(drop, "", "V_fit ≤ V_post: no norm drop"))
    return x, reason


def _no_reason(values: np.ndarray):
    return values, np.full(len(values), "", dtype=object)


def _gamma_delay(table: RunTable):
    ok = np.isfinite(table.gamma) & (table.gamma > 0)
    why = np.where(np.isnan(table.gamma), "γ_eff unknown (see the notes)", "γ_eff not positive")
    return np.where(ok, table.delay * table.gamma, NAN), np.where(ok, "", why)


class DelayFitSpec(NamedTuple):
    """x_label, y_label; along: the grid axis x is made of, which must vary (None: x is measured); per_slice: one
    fit per value of the other varied axes; x, y: table ↦ (values, reason per run, "" where defined)."""

    x_label: str
    y_label: str
    along: str | None
    per_slice: bool
    x: object
    y: object


DELAY_FITS = {
    "inverse_lambda": DelayFitSpec(
        "1/λ",
        "delay",
        "weight_decay",
        True,
        lambda t: _inverse(t.axes["weight_decay"], "λ"),
        lambda t: _no_reason(t.delay),
    ),
    "inverse_eta": DelayFitSpec(
        "1/η",
        "delay",
        "learning_rate",
        True,
        lambda t: _inverse(t.axes["learning_rate"], "η"),
        lambda t: _no_reason(t.delay),
    ),
    "power_law_lambda": DelayFitSpec(
        "log λ",
        "log delay",
        "weight_decay",
        True,
        lambda t: _log(t.axes["weight_decay"], "λ = 0: log λ undefined"),
        lambda t: _log(t.delay, "delay 0 at log resolution"),
    ),
    "power_law_eta": DelayFitSpec(
        "log η",
        "log delay",
        "learning_rate",
        True,
        lambda t: _log(t.axes["learning_rate"], "η = 0: log η undefined"),
        lambda t: _log(t.delay, "delay 0 at log resolution"),
    ),
    "log_norm_ratio": DelayFitSpec(
        "log(V_fit/V_post)", "delay", None, False, _log_ratio, lambda t: _no_reason(t.delay)
    ),
    "collapse": DelayFitSpec("log(V_fit/V_post)", "delay·γ_eff", None, False, _log_ratio, _gamma_delay),
}
"""Every delay-law fit (see the module docstring)."""
POWER_LAWS = ("power_law_lambda", "power_law_eta")
"""The fits whose ν = −slope is an exponent of the delay law."""


def exclusion_reasons(table: RunTable, kind: str, regimes: tuple[str, ...]) -> np.ndarray:
    """Per run the first reason it cannot enter fit `kind` ("" = usable)."""
    spec = DELAY_FITS[kind]
    reasons = np.full(table.size, "", dtype=object)
    checks = [
        np.where(table.diverged, "diverged", ""),
        np.array(
            [REGIME_EXCLUSION.get(r, f"regime {r}") if r not in regimes else "" for r in table.regime], dtype=object
        ),
        np.where(np.isfinite(table.delay), "", "no delay: T_fit or T_transition undefined"),
        spec.x(table)[1],
        spec.y(table)[1],
    ]
    for reason in checks:
        reasons = np.where(reasons == "", reason, reasons)
    return reasons


def delay_fit(
    table: RunTable, kind: str, options: FitOptions = FitOptions(), positions=None, slice_label: tuple = ()
) -> LineFit:
    """Fit `kind` on the table's runs.

    Args:
        table: the runs.
        kind: the fit, a key of DELAY_FITS.
        options: the fit options.
        positions: the runs' positions in the table (None: all).
        slice_label: ((axis, value), …) of the slice fitted, recorded with it.

    Returns:
        The LineFit.
    """
    spec = DELAY_FITS[kind]
    positions = np.arange(table.size) if positions is None else np.asarray(positions)
    reasons = exclusion_reasons(table, kind, options.regimes)[positions]
    usable = positions[reasons == ""]
    excluded = tuple((int(table.run[p]), str(r)) for p, r in zip(positions, reasons) if r)
    base = {
        "kind": kind,
        "x_label": spec.x_label,
        "y_label": spec.y_label,
        "slice": slice_label,
        "excluded": excluded,
        "runs": tuple(int(r) for r in table.run[usable]),
    }
    x, y = spec.x(table)[0][usable], spec.y(table)[0][usable]
    distinct = len(np.unique(x))
    if len(usable) < MIN_RUNS or distinct < 2:
        why = (
            f"{len(usable)} usable run(s), need {MIN_RUNS}"
            if len(usable) < MIN_RUNS
            else f"x not varied ({distinct} distinct value)"
        )
        return LineFit(status=f"not enough data: {why}", **base)
    seeds = table.axes["seed"][usable] if "seed" in table.axes else np.zeros(len(usable))
    stats = fit_line(x, y, seeds, options)
    clusters = len(np.unique(seeds)) if len(np.unique(seeds)) > 1 else len(usable)
    return LineFit(
        status="ok",
        slope=stats.slope,
        intercept=stats.intercept,
        r2=stats.r2,
        slope_ci=stats.slope_ci,
        intercept_ci=stats.intercept_ci,
        resampled=stats.resampled,
        n_resamples=stats.n_resamples,
        clusters=clusters,
        **base,
    )


def delay_fits(table: RunTable, kind: str, options: FitOptions = FitOptions()) -> list[LineFit]:
    """Fit `kind` once per slice of the other varied axes (inverse_*, power law) or once on every run.

    Args:
        table: the runs.
        kind: the fit, a key of DELAY_FITS.
        options: the fit options.

    Returns:
        One LineFit per slice.
    """
    spec = DELAY_FITS[kind]
    if not spec.per_slice:
        return [delay_fit(table, kind, options)]
    return [delay_fit(table, kind, options, positions, label) for label, positions in slices(table, spec.along)]


# ----------------------------------------------------------------------------- boundaries


def logistic_fits(
    z: np.ndarray, y: np.ndarray, weights: np.ndarray, ridge: float, iterations: int = 100
) -> tuple[np.ndarray, np.ndarray]:
    """(b0, b1) per row of weights (B, runs) maximising Σ w[y·η − log(1 + e^η)] − ridge·b1²/2, η = b0 + b1z:
    damped Newton with step halving (the objective is strictly convex for ridge > 0 and mixed y)."""

    def objective(b0, b1):
        eta = b0[:, None] + b1[:, None] * z
        return (weights * (np.logaddexp(0, eta) - y * eta)).sum(1) + 0.5 * ridge * b1**2

    mean_y = np.clip((weights @ y) / weights.sum(1), 1e-6, 1 - 1e-6)
    b0, b1 = np.log(mean_y / (1 - mean_y)), np.zeros(len(weights))
    for _ in range(iterations):
        p = 0.5 * (1 + np.tanh(0.5 * (b0[:, None] + b1[:, None] * z)))  # σ without overflow
        r, h = weights * (p - y), weights * p * (1 - p)
        g0, g1 = r.sum(1), r @ z + ridge * b1
        h00, h01, h11 = h.sum(1) + 1e-12, h @ z, h @ (z * z) + ridge
        det = h00 * h11 - h01**2
        d0, d1 = (h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det
        current, t = objective(b0, b1), np.ones(len(b0))
        for _ in range(40):
            worse = objective(b0 - t * d0, b1 - t * d1) > current + 1e-12
            if not worse.any():
                break
            t = np.where(worse, t / 2, t)
        b0, b1 = b0 - t * d0, b1 - t * d1
        if np.max(np.abs(t * d0) + np.abs(t * d1)) < 1e-10:
            break
    return b0, b1


def clean_steps(fractions: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Per row of `fractions` (B, K) (the share of runs beyond the boundary at each sorted grid value u_k) the
    midpoint (u_k + u_{k+1})/2 of a clean step (every grid value 0 or 1, one switch); NaN when there is none."""
    binary = np.all((fractions == 0) | (fractions == 1), 1)
    switches = np.abs(np.diff(fractions, axis=1)).sum(1)
    step = binary & (switches == 1)
    k = np.argmax(np.abs(np.diff(fractions, axis=1)) > 0, 1)
    midpoint = 0.5 * (columns[k] + columns[np.minimum(k + 1, len(columns) - 1)])
    return np.where(step, midpoint, NAN)


class BoundaryEstimate(NamedTuple):
    status: str
    value: float = NAN
    ci: tuple = (NAN, NAN)
    method: str = ""
    direction: str = ""
    resampled: str = ""
    n_resamples: int = 0
    columns: tuple = ()
    fractions: tuple = ()


def find_boundary(x, outcome, options: FitOptions = FitOptions(), log: bool = True) -> BoundaryEstimate:
    """Where a binary outcome switches along an axis x (log or linear): logistic regression over every run, a
    clean step's midpoint, or "no boundary in range" (see the module docstring). x > 0 on a log axis."""
    x, y = np.asarray(x, np.float64), np.asarray(outcome, bool).astype(np.float64)
    to_u = np.log if log else (lambda v: v)
    back = np.exp if log else (lambda v: v)
    grid, column_of = np.unique(x, return_inverse=True)
    u, columns, column_of = to_u(x), to_u(grid), column_of.ravel()
    onehot = np.eye(len(columns))[column_of]
    fractions = (y @ onehot) / onehot.sum(0)
    shown = {"columns": tuple(float(c) for c in grid), "fractions": tuple(float(f) for f in fractions)}
    if len(y) < MIN_RUNS or len(columns) < 2:
        return BoundaryEstimate(f"not enough data: {len(y)} run(s) at {len(columns)} grid value(s)", **shown)
    if y.min() == y.max():
        return BoundaryEstimate(f"no boundary in range: every run is {'beyond' if y[0] else 'before'} it", **shown)
    direction = "increasing" if np.corrcoef(u, y)[0, 1] >= 0 else "decreasing"
    step = clean_steps(fractions[None], columns)[0]
    if np.isfinite(step):
        k = int(np.searchsorted(columns, step))
        return BoundaryEstimate(
            "ok",
            float(back(step)),
            (float(grid[k - 1]), float(grid[k])),
            "midpoint (clean step)",
            direction,
            "",
            0,
            **shown,
        )
    center, scale = u.mean(), u.std()
    z = (u - center) / scale
    b0, b1 = logistic_fits(z, y, np.ones((1, len(y))), options.ridge)
    u_star = center - scale * b0[0] / b1[0] if b1[0] != 0 else NAN
    value = float(back(u_star))
    direction = "increasing" if b1[0] > 0 else "decreasing"
    ci, resampled, n_valid = (NAN, NAN), "runs within each grid value", 0
    if onehot.sum(0).max() < 2:
        resampled = "none (one run per grid value)"
    elif options.n_bootstrap:
        weights = stratified_weights(column_of, options.n_bootstrap, np.random.default_rng(options.seed))
        c0, c1 = logistic_fits(z, y, weights, options.ridge)
        with np.errstate(divide="ignore", invalid="ignore"):
            logistic = center - scale * c0 / c1
            share = (weights @ (onehot * y[:, None])) / (weights @ onehot)
        one_side = np.all(share == 0, 1) | np.all(share == 1, 1)
        steps = clean_steps(share, columns)
        samples = back(np.where(one_side, NAN, np.where(np.isfinite(steps), steps, logistic)))
        ci = percentile_interval(samples, options.confidence, options.n_bootstrap)
        n_valid = int(np.isfinite(samples).sum())
    inside = columns[0] <= u_star <= columns[-1]
    status = "ok" if inside else f"no boundary in range: the logistic crossing x = {value:.4g} lies outside the grid"
    return BoundaryEstimate(status, value, ci, "logistic", direction, resampled, n_valid, **shown)


@dataclass(frozen=True)
class Boundary:
    """A regime boundary along `axis` at fixed values of the other varied axes (`slice`), with the grid values
    (`columns`) and the share of runs beyond the boundary at each (`fractions`)."""

    axis: str
    transition: str
    slice: tuple
    status: str
    value: float = NAN
    ci: tuple = (NAN, NAN)
    method: str = ""
    direction: str = ""
    log: bool = True
    resampled: str = ""
    n_resamples: int = 0
    columns: tuple = ()
    fractions: tuple = ()
    runs: tuple = ()
    excluded: tuple = ()

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def as_row(self) -> dict:
        return {
            "axis": self.axis,
            "boundary": self.transition,
            "slice": slice_text(self.slice),
            "status": self.status,
            "value": self.value,
            "lo": self.ci[0],
            "hi": self.ci[1],
            "method": self.method,
            "direction": self.direction,
            "scale": "log" if self.log else "linear",
            "share beyond": " ".join(f"{c:.3g}:{f:.2f}" for c, f in zip(self.columns, self.fractions)),
            "n_runs": len(self.runs),
            "resampled": self.resampled,
            "n_excluded": len(self.excluded),
            "excluded": reason_counts(self.excluded),
        }


def regime_ranks(table: RunTable, axis: str, options: FitOptions, log: bool) -> tuple[np.ndarray, np.ndarray]:
    """(rank per run (−1 when left out), reason per run ("" when kept)) for boundaries along `axis`."""
    rank, reasons = np.full(table.size, -1), np.full(table.size, "", dtype=object)
    for i, (regime, diverged, x) in enumerate(zip(table.regime, table.diverged, table.axes[axis])):
        if diverged or regime == "diverged":
            reasons[i] = "diverged"
        elif regime == "structured" and options.structured_as == "exclude":
            reasons[i] = "regime structured: left out (FitOptions.structured_as)"
        elif regime not in REGIME_RANK:
            reasons[i] = f"regime {regime}: not ordered"
        elif log and not x > 0:
            reasons[i] = f"{axis} = {x:g}: no logarithm on a log axis"
        else:
            rank[i] = REGIME_RANK[regime]
    return rank, reasons


def regime_boundaries(
    table: RunTable, axis: str = "weight_decay", options: FitOptions = FitOptions(), log: bool = True
) -> list[Boundary]:
    """The weak→intermediate and intermediate→strong boundaries along `axis` for every value of the other
    varied axes (every seed pooled).

    Args:
        table: the runs.
        axis: the axis along which the regimes change.
        options: the fit options.
        log: interpolate the boundaries in log of the axis.

    Returns:
        One Boundary per slice.
    """
    rank, reasons = regime_ranks(table, axis, options, log)
    out = []
    for label, positions in slices(table, axis):
        kept = positions[reasons[positions] == ""]
        excluded = tuple((int(table.run[p]), str(reasons[p])) for p in positions if reasons[p])
        for name, threshold in TRANSITIONS:
            estimate = find_boundary(table.axes[axis][kept], rank[kept] >= threshold, options, log)
            out.append(
                Boundary(
                    axis=axis,
                    transition=name,
                    slice=label,
                    log=log,
                    excluded=excluded,
                    runs=tuple(int(r) for r in table.run[kept]),
                    **estimate._asdict(),
                )
            )
    return out


# ----------------------------------------------------------------------------- tables and the report


def slice_text(label: tuple) -> str:
    return ", ".join(f"{SYMBOLS.get(a, a)}={v:g}" for a, v in label) or "all runs"


def reason_counts(excluded: tuple) -> str:
    """ "reason ×n; …" of (run, reason) pairs, most frequent first."""
    counts = collections.Counter(reason for _, reason in excluded)
    return "; ".join(f"{reason} ×{n}" for reason, n in counts.most_common())


def exclusion_rows(items) -> list[dict]:
    """One row per excluded run of each fit or boundary: what, slice, run, reason."""
    rows = []
    for item in items:
        what = item.kind if isinstance(item, LineFit) else f"{item.axis} {item.transition}"
        rows += [
            {"analysis": what, "slice": slice_text(item.slice), "run": run, "reason": reason}
            for run, reason in item.excluded
        ]
    return rows


def fit_report(results, options: FitOptions = FitOptions()) -> dict:
    """Every applicable fit of a loaded `Results`: {"options", "table" (RunTable), "delay_fits" [LineFit],
    "boundaries" [Boundary], "skipped" [{"analysis", "reason"}], "notes" [str]}. Fits whose x axis has one
    value in the grid are skipped with the reason; boundaries run along every varied axis but the seed.

    Args:
        results: the loaded results.
        options: the fit options.

    Returns:
        The report, a dict.
    """
    from nht_jax.engine.optim import declared_contraction  # imported here: that module loads JAX

    config, hparams = results.config, results.hparams
    rows = results.summary
    if not rows:
        from nht_jax.measure.summaries import summarize

        rows = summarize(results.steps, results.metrics, hparams, config)
    contraction = declared_contraction(
        config.optim, hparams["learning_rate"].astype(np.float64), hparams["weight_decay"].astype(np.float64), hparams
    )
    table = run_table(
        rows, results.steps, results.metrics["norm_sq"], contraction.gamma, options.v_post, dict(hparams), options.v_fit
    )
    grid_varied = [name for name, values in results.axes.items() if len(values) > 1]
    fits, skipped = [], []
    for kind, spec in DELAY_FITS.items():
        if spec.along is not None and spec.along not in grid_varied:
            skipped.append({"analysis": kind, "reason": f"x not varied: {spec.along} has one value in the grid"})
        else:
            fits += delay_fits(table, kind, options)
    boundaries = []
    for axis in grid_varied:
        if axis != "seed":
            axis_spec = config.axes.get(axis)
            log = bool(axis_spec.log) if axis_spec else False
            boundaries += regime_boundaries(table, axis, options, log)
    if "weight_decay" not in grid_varied:
        skipped.append(
            {
                "analysis": "regime boundaries along weight_decay",
                "reason": "x not varied: weight_decay has one value in the grid",
            }
        )
    v_fit_text = "at T_fit" if options.v_fit == "fit" else "at its peak from T_fit to T_transition"
    notes = [
        (
            f"V_fit = ‖θ‖² {v_fit_text}; "
            f"V_post = ‖θ‖² {'at T_transition' if options.v_post == 'transition' else options.v_post}; "
            f"γ_eff of '{config.optim.name}' and its slots (nht_jax.engine.optim.declared_contraction)"
        ),
        (
            f"delay fits use regimes {', '.join(options.regimes)}; intervals: {options.confidence:.0%} "
            f"percentile bootstrap, {options.n_bootstrap} resamples"
        ),
    ]
    if config.train.lr_schedule != "constant":
        notes.append(f"γ_eff uses the peak η ({config.train.lr_schedule} schedule)")
    if not contraction.known:
        unknown = int(np.isnan(np.broadcast_to(contraction.gamma, (results.num_runs,))).sum())
        which = "every run is" if unknown == results.num_runs else f"{unknown} of {results.num_runs} runs are"
        notes.append(
            f"γ_eff unknown: {contraction.reason}; {which} excluded from the fits that need it "
            f"(collapse), none is fitted with ηλ instead"
        )
    return {
        "options": options,
        "table": table,
        "delay_fits": fits,
        "boundaries": boundaries,
        "skipped": skipped,
        "notes": notes,
        "contraction": contraction,
    }


def report_markdown(report: dict) -> str:
    """The report of `fit_report` as Markdown: notes, delay fits, boundaries, skipped analyses, excluded runs."""
    fits, boundaries = report["delay_fits"], report["boundaries"]
    parts = [
        "## Delay-law fits\n",
        "\n".join(f"- {n}" for n in report["notes"]) + "\n\n",
        markdown_table([f.as_row() for f in fits]),
        "\n## Regime boundaries\n\n",
        markdown_table([b.as_row() for b in boundaries]),
    ]
    if report["skipped"]:
        parts += ["\n## Skipped\n\n", markdown_table(report["skipped"])]
    parts += ["\n## Excluded runs\n\n", markdown_table(exclusion_rows(fits + boundaries))]
    return "".join(parts)


# ----------------------------------------------------------------------------- figures and the record


def draw_delay_fits(res, fit: dict, path: Path) -> None:
    """Left: delay against 1/λ for every usable run, one colour per slice, with its fitted line. Right: the
    collapse delay·γ_eff against log(V_fit/V_post) with the pooled fit and the prediction slope 1. A fitted line
    is drawn only through at least `style.MIN_FIT_POINTS` distinct x values (else the caption says "too few points
    for a fit"); what the panels mean is the caption under them."""
    from matplotlib import cm

    from nht_jax.figures import style  # imported here: the fits themselves draw nothing
    from nht_jax.figures.style import save, subplots

    table = fit["table"]
    fig, (left, right) = subplots(1, 2, figsize=(11, 4.2))
    inverse = [f for f in fit["delay_fits"] if f.kind == "inverse_lambda"]
    colours = cm.viridis(np.linspace(0, 0.9, max(len(inverse), 1)))
    notes = []
    for colour, f in zip(colours, inverse):
        runs = np.isin(table.run, f.runs)
        x, y = 1 / table.axes["weight_decay"][runs], table.delay[runs]
        label = slice_text(f.slice)
        left.scatter(x, y, color=colour, s=16, label=label)
        if f.ok and style.fit_drawable(x):
            grid = np.linspace(0, x.max() * 1.05, 50)
            left.plot(
                grid,
                f.intercept + f.slope * grid,
                color=colour,
                lw=1,
                gid="fit",
                label=f"slope {f.slope:.3g}, R² {f.r2:.2f}",
            )
        elif f.ok:
            notes.append(f"{label}: too few points for a fit ({len(np.unique(x))} values of 1/λ)")
        else:
            notes.append(f"{label}: {f.status}")
    left.set(xlabel="1/λ", ylabel=style.label("delay"), title="delay against 1/λ")
    if inverse:
        left.legend(fontsize=7)
    collapse = [f for f in fit["delay_fits"] if f.kind == "collapse"]
    keep = np.isin(table.run, collapse[0].runs) if collapse else np.zeros(table.size, bool)
    x = np.log(table.v_fit[keep] / table.v_post[keep])
    right.scatter(x, table.delay[keep] * table.gamma[keep], s=16, color="k")
    if collapse and collapse[0].ok and not style.fit_drawable(x):
        notes.append(f"collapse: too few points for a fit ({len(np.unique(x))} runs)")
    elif collapse and collapse[0].ok:
        grid = np.linspace(0, max(x.max(), 1e-9) * 1.05, 50)
        f = collapse[0]
        right.plot(
            grid,
            f.intercept + f.slope * grid,
            color="k",
            lw=1,
            gid="fit",
            label=f"fit: slope {f.slope:.3g}, R² {f.r2:.2f}",
        )
        right.plot(grid, grid, color="grey", ls="--", lw=1, label="prediction: slope 1")
        right.legend(fontsize=7)
    if not (collapse and collapse[0].ok):
        notes.append(f"collapse: {collapse[0].status if collapse else 'n.a.'}")
    right.set(
        xlabel="log($V_\\mathrm{fit} / V_\\mathrm{post}$)",
        ylabel="delay · $γ_\\mathrm{eff}$ (dimensionless)",
        title="collapse",
    )
    fig.suptitle(f"{res.config.name}: delay-law fits", fontsize=10)
    style.caption(
        fig,
        "Left: the delay T_transition − T_fit of every usable (intermediate) run against 1/λ, one "
        "colour per slice of the other axes, with its least-squares line. Right: the collapse "
        "delay·γ_eff against log(V_fit/V_post), every usable run pooled, with its fit and the "
        "prediction (slope 1, dashed)." + (" " + "; ".join(notes) + "." if notes else ""),
    )
    save(fig, path)


def draw_figures(res, report: dict, folder) -> tuple[str, ...]:
    """phase_boundaries.png (the phase diagram with the estimated boundaries) and delay_fits.png."""
    from nht_jax.figures.folder import draw_phase_diagram

    draw_phase_diagram(res, Path(folder) / "phase_boundaries.png", report["boundaries"])
    draw_delay_fits(res, report, Path(folder) / "delay_fits.png")
    return "phase_boundaries.png", "delay_fits.png"


ANALYSIS = Analysis(
    name="fits",
    options=FitOptions,
    run=lambda results, options, needed: fit_report(results, options),
    tables=lambda report: {
        "delay_fits.csv": csv_text([f.as_row() for f in report["delay_fits"]]),
        "boundaries.csv": csv_text([b.as_row() for b in report["boundaries"]]),
    },
    figures=draw_figures,
    markdown=report_markdown,
)
"""`nht analyze`'s record of the delay-law fits and the regime boundaries (nht_jax.analysis.registry)."""


__all__ = [
    "ANALYSIS",
    "FitOptions",
    "delay_fit",
    "delay_fits",
    "fit_line",
    "fit_report",
    "markdown_table",
    "regime_boundaries",
    "slices",
]
