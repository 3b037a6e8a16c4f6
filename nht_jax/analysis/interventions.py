"""Interventions (docs/science.md §9): the delay under each intervention arm of a grid against the grid's
baseline, and the dose responses the follow-up papers state. Pure NumPy on summary rows (γ_eff from
`nht_jax.engine.optim.declared_contraction`).

Intervention axes are the grid axes that declare an identity value (`nht_jax.engine.grid.Axis.identity`); the
analysis applies when the grid lists at least one. Per context (the other varied axes but the seed): the baseline
and each arm's delay, its ratio to the baseline (paired by seed where it can be), lower bounds from censored runs,
the shift, and the dose-response fits. `intervention_report(results, options)` runs it on a loaded `Results` for
`nht analyze` (None without an intervention axis: `intervention_axes`); `intervention_analysis` works on plain
summary rows and arrays.

Every definition (baseline, arm, delay, usable and censored runs, centre, ratio, shift, intervals) and the dose
responses' laws: docs/guides/interventions-report.md."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np
from matplotlib import cm
from matplotlib.ticker import NullLocator

from nht_jax.config.schedule import LogSchedule
from nht_jax.analysis import fits
from nht_jax.analysis.bootstrap import BootstrapOptions
from nht_jax.analysis.record import Analysis
from nht_jax.analysis.tables import Tabular, csv_text, fmt, markdown_table
from nht_jax.base.errors import check
from nht_jax.figures import style
from nht_jax.figures.style import save, subplots
from nht_jax.measure.summaries import REGIMES, summarize

NAN = float("nan")
BASELINE = "baseline"


@dataclass(frozen=True)
class InterventionOptions(BootstrapOptions):
    """Choices of the interventions analysis (module docstring: what each means).

    regimes, n_bootstrap, confidence, seed (`nht_jax.analysis.bootstrap.BootstrapOptions`): the runs whose delays
    enter; the intervals. center: "geometric_mean" | "median", the centre of an arm's delays and ratios.
    delay_from: "auto" | "fit" | "start", where the delay is counted from. paired: pair arm and baseline runs by
    seed when their seeds match. w_c: W_c, the ‖θ‖ at which free runs grok (> 0: a clamp_norm axis is fitted in
    ρ = norm / W_c; 0: the configured clamp's critical_norm, if any).
    """

    center: Literal["geometric_mean", "median"] = "geometric_mean"
    delay_from: Literal["auto", "fit", "start"] = "auto"
    paired: bool = True
    w_c: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        check(
            self.center in ("geometric_mean", "median"),
            f"interventions.center must be 'geometric_mean' or 'median', got {self.center!r}",
        )
        check(
            self.delay_from in ("auto", "fit", "start"),
            f"interventions.delay_from must be 'auto', 'fit' or 'start', got {self.delay_from!r}",
        )
        check(self.w_c >= 0, f"interventions.w_c must be ≥ 0 (0: W_c unknown), got {self.w_c}")


# ----------------------------------------------------------------------------- the laws


class Law(NamedTuple):
    """A dose response: its formula, the regressor's label, x(strengths), whether y is log T (else T), whether
    the baseline runs enter at the identity, and the name of the slope."""

    formula: str
    x_label: str
    x: Callable[[np.ndarray], np.ndarray]
    log_delay: bool
    with_baseline: bool
    parameter: str


def law_of(axis: str, w_c: float = 0.0) -> Law | None:
    """The dose response the papers give for an intervention axis (module docstring), None for the others; w_c:
    W_c (> 0: a clamp_norm axis is fitted in ρ = norm / W_c)."""
    if axis == "clamp_rho" or (axis == "clamp_norm" and w_c > 0):
        scale = w_c if axis == "clamp_norm" else 1.0
        label = "ρ" if axis == "clamp_rho" else f"ρ = clamp_norm / {w_c:g}"
        return Law(
            "log T = a + α·ρ (T ∝ exp(αρ))", label, lambda v: np.asarray(v, np.float64) / scale, True, False, "α"
        )
    if axis == "clamp_norm":
        return Law(
            "log T = a + α·norm (T ∝ exp(α·norm); W_c unknown)",
            "clamp_norm",
            lambda v: np.asarray(v, np.float64),
            True,
            False,
            "α",
        )
    if axis == "temperature":
        return Law(
            "log T = a + β·log τ (T ∝ τ^β)", "log τ", lambda v: np.log(np.asarray(v, np.float64)), True, True, "β"
        )
    if axis == "injection_scale":
        return Law(
            "T = a + b·log s² (theory: b = 1/γ_eff)",
            "log s²",
            lambda v: np.log(np.asarray(v, np.float64) ** 2),
            False,
            True,
            "b",
        )
    return None


# ----------------------------------------------------------------------------- the configuration


def intervention_axes(config) -> dict[str, float]:
    """{axis name: identity} of the grid's intervention axes, in grid order."""
    axes = config.axes
    return {
        name: float(axes[name].identity) for name in config.grid if name in axes and axes[name].identity is not None
    }


def critical_norm(config, options: InterventionOptions) -> float:
    """W_c, for the intervention analysis.

    Args:
        config: the configuration.
        options: the intervention options; `options.w_c` when given.

    Returns:
        `options.w_c` when given, else the critical_norm of a configured entry with a clamp_norm axis (the norm
        clamp's W_c), else 0 (unknown).
    """
    if options.w_c > 0:
        return options.w_c
    from nht_jax.engine import slots  # imported here: it loads JAX

    for settings in (*config.optim.before, *config.optim.after):
        if "clamp_norm" in {a.name for a in slots.entry_of_settings(settings).axes.values()}:
            return float(getattr(settings, "critical_norm", 0.0) or 0.0)
    return 0.0


def forked(config) -> bool:
    """Whether the configuration is a fork of a memorised state: it has a `fork` section that says something (a
    non-empty table, or a settings dataclass with some field off its default).

    Args:
        config: the configuration.

    Returns:
        True when it is.
    """
    fork = getattr(config, "fork", None)
    if dataclasses.is_dataclass(fork):
        return any(getattr(fork, f.name) != default_of(f) for f in dataclasses.fields(fork))
    return bool(fork)


def default_of(field: dataclasses.Field):
    """A dataclass field's default (a fresh one from its factory; a sentinel when it has none)."""
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return object()


def delay_origin(config, options: InterventionOptions) -> str:
    """ "fit" (delay = T_transition − T_fit) or "start" (delay = T_transition in the fork's steps)."""
    if options.delay_from != "auto":
        return options.delay_from
    return "start" if forked(config) else "fit"


def origin_text(origin: str, options: InterventionOptions) -> str:
    """Where the delay is counted from, and why, in words."""
    if options.delay_from != "auto":
        return f"delay counted from {'T_fit' if origin == 'fit' else 'step 0'} (interventions.delay_from)"
    if origin == "start":
        return "delay = T_transition in the fork's steps (the configuration forks a memorised state)"
    return "delay = T_transition − T_fit (trained from scratch)"


def baseline_gamma(config, learning_rate: float, weight_decay: float, interventions) -> tuple[float, str]:
    """(γ_eff, note) at the baseline's η and λ: the declared contraction of the configuration without the slot
    entries whose strengths are intervention axes; NaN with the reason when another entry makes it unknown."""
    from nht_jax.engine import slots  # imported here: these modules load JAX
    from nht_jax.engine.optim import declared_contraction

    def kept(entries):
        return tuple(
            s for s in entries if not {a.name for a in slots.entry_of_settings(s).axes.values()} & set(interventions)
        )

    optim = dataclasses.replace(config.optim, before=kept(config.optim.before), after=kept(config.optim.after))
    contraction = declared_contraction(optim, np.float64(learning_rate), np.float64(weight_decay))
    gamma = float(np.asarray(contraction.gamma))
    note = (
        f"γ_eff = {gamma:.4g} (declared contraction of '{config.optim.name}' at η = {learning_rate:g}, "
        f"λ = {weight_decay:g}, intervention entries left out)"
        if contraction.known
        else f"γ_eff unknown: {contraction.reason}"
    )
    return gamma, note


# ----------------------------------------------------------------------------- per run


class InterventionRuns(NamedTuple):
    """Per-run arrays (runs,): run index, seed, context index, regime, delay (NaN: none), the censoring bound B
    (NaN unless censored), usable, censored, and each intervention axis's value ({axis: (runs,)})."""

    run: np.ndarray
    seed: np.ndarray
    context: np.ndarray
    regime: np.ndarray
    delay: np.ndarray
    bound: np.ndarray
    usable: np.ndarray
    censored: np.ndarray
    strengths: dict


def run_delays(rows: list[dict], last_step: float, origin: str, regimes, stopped_step=None):
    """(delay, bound, usable, censored) per summary row (module docstring); origin "fit" or "start"."""
    t_fit = np.array([row["T_fit"] for row in rows], np.float64)
    t_transition = np.array([row["T_transition"] for row in rows], np.float64)
    regime = np.array([row["regime"] for row in rows])
    diverged = np.array([bool(row.get("diverged", False)) for row in rows]) | (regime == "diverged")
    start = t_fit if origin == "fit" else np.zeros_like(t_fit)
    delay = t_transition - start
    end = np.full(len(rows), float(last_step))
    if stopped_step is not None:
        end = np.where(np.isfinite(stopped_step), np.minimum(stopped_step, end), end)
    censored = np.isfinite(t_fit) & ~np.isfinite(t_transition) & ~diverged
    bound = np.where(censored, end - start, NAN)
    usable = np.isin(regime, list(regimes)) & np.isfinite(delay) & (delay > 0) & ~diverged
    return delay, bound, usable, censored


def context_index(axes: Mapping[str, np.ndarray], exclude) -> tuple[list[tuple], np.ndarray]:
    """([context label ((axis, value), …)], per-run context index) over the varied axes not in `exclude`."""
    size = len(next(iter(axes.values())))
    others = [a for a, v in axes.items() if a not in exclude and len(np.unique(v)) > 1]
    if not others:
        return [()], np.zeros(size, int)
    keys = np.stack([np.asarray(axes[a], np.float64) for a in others], 1)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    return [tuple(zip(others, map(float, row))) for row in unique], inverse.ravel()


def intervention_runs(
    rows: list[dict],
    axes: Mapping[str, np.ndarray],
    identities: Mapping[str, float],
    last_step: float,
    origin: str,
    options: InterventionOptions = InterventionOptions(),
    stopped_step=None,
) -> tuple[InterventionRuns, list[tuple]]:
    """The per-run arrays and the context labels of summary rows and the runs' grid values `axes`."""
    delay, bound, usable, censored = run_delays(rows, last_step, origin, options.regimes, stopped_step)
    labels, context = context_index(axes, {"seed", *identities})
    seed = np.asarray(axes["seed"]) if "seed" in axes else np.zeros(len(rows), int)
    strengths = {a: np.asarray(axes[a], np.float64) for a in identities}
    runs = InterventionRuns(
        np.array([row.get("run", i) for i, row in enumerate(rows)]),
        seed,
        context,
        np.array([row["regime"] for row in rows]),
        delay,
        bound,
        usable,
        censored,
        strengths,
    )
    return runs, labels


def at_identity(runs: InterventionRuns, identities: Mapping[str, float]) -> dict[str, np.ndarray]:
    """{axis: (runs,) bool}: the run's value of the axis is its identity (float32 grid values compared)."""
    return {
        a: np.isclose(runs.strengths[a], np.float32(identity), rtol=1e-6, atol=1e-12)
        for a, identity in identities.items()
    }


def moves_alone(identity: Mapping[str, np.ndarray], axis: str) -> np.ndarray:
    """Runs of the arms of `axis`: off its identity, every other intervention axis at its own."""
    rest = np.ones_like(identity[axis])
    for other, at in identity.items():
        if other != axis:
            rest = rest & at
    return ~identity[axis] & rest


# ----------------------------------------------------------------------------- centres and bootstraps


def centre(values: np.ndarray, how: str, axis: int = -1) -> np.ndarray:
    """Mean ("geometric_mean": of values already on the log scale) or median along `axis`."""
    return np.mean(values, axis) if how == "geometric_mean" else np.median(values, axis)


def resample(values: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, len) resamples with replacement of a 1-d array (or (n, 0) when there are no values or n = 0)."""
    if not len(values) or not n:
        return np.empty((0, len(values)))
    return values[rng.integers(0, len(values), size=(n, len(values)))]


class Estimate(NamedTuple):
    """A point with its bootstrap interval and what was resampled."""

    value: float
    lo: float
    hi: float
    n: int
    unit: str


def one_sample(values, how: str, options: InterventionOptions, log: bool) -> Estimate:
    """The centre of values (on the log scale when `log`: exp(c(log v))) with its bootstrap interval."""
    v = np.log(values) if log else np.asarray(values, np.float64)
    if not len(v):
        return Estimate(NAN, NAN, NAN, 0, "")
    back = np.exp if log else (lambda x: x)
    boots = centre(resample(v, options.n_bootstrap, np.random.default_rng(options.seed)), how)
    lo, hi = fits.percentile_interval(boots, options.confidence, len(boots))
    return Estimate(float(back(centre(v, how))), float(back(lo)), float(back(hi)), len(v), "runs")


def two_sample(arm, base, how: str, options: InterventionOptions, log: bool) -> Estimate:
    """Unpaired: c(arm) − c(base) (exp of it on the log scale), the two resampled independently."""
    a = np.log(arm) if log else np.asarray(arm, np.float64)
    b = np.log(base) if log else np.asarray(base, np.float64)
    if not len(a) or not len(b):
        return Estimate(NAN, NAN, NAN, 0, "")
    back = np.exp if log else (lambda x: x)
    rng = np.random.default_rng(options.seed)
    boots = centre(resample(a, options.n_bootstrap, rng), how) - centre(resample(b, options.n_bootstrap, rng), how)
    lo, hi = fits.percentile_interval(boots, options.confidence, len(boots))
    return Estimate(
        float(back(centre(a, how) - centre(b, how))),
        float(back(lo)),
        float(back(hi)),
        min(len(a), len(b)),
        "arm and baseline runs",
    )


def paired(arm, base, how: str, options: InterventionOptions, log: bool) -> Estimate:
    """Paired by seed: c(arm(s)/base(s)) on the log scale (`log`) or c(arm(s) − base(s)), the seeds resampled."""
    arm, base = np.asarray(arm, np.float64), np.asarray(base, np.float64)
    estimate = one_sample(arm / base if log else arm - base, how, options, log)
    return estimate._replace(unit="seeds (paired)" if estimate.n else "")


# ----------------------------------------------------------------------------- arms


@dataclass(frozen=True)
class Arm:
    """One arm (or the baseline: axis "baseline") of one context, with its estimates (module docstring).
    delay_lower: the centre of its delays with each censored run at its bound B, a lower bound of its delay (NaN
    without censored runs)."""

    context: tuple
    axis: str
    strength: float
    runs: tuple
    counts: dict
    censored_runs: tuple
    censored_above: float
    delay: Estimate
    delay_lower: float
    ratio: Estimate
    ratio_lower: float
    shift: Estimate
    pairing: str
    shift_predicted: float = NAN

    @property
    def n_runs(self) -> int:
        return len(self.runs)

    @property
    def n_censored(self) -> int:
        return len(self.censored_runs)

    def as_row(self) -> dict:
        return {
            "context": fits.slice_text(self.context),
            "axis": self.axis,
            "strength": self.strength,
            "n_runs": self.n_runs,
            **{f"n_{r}": self.counts.get(r, 0) for r in REGIMES},
            "n_usable": self.delay.n,
            "n_censored": self.n_censored,
            "censored_runs": " ".join(str(int(r)) for r in self.censored_runs),
            "censored_above": self.censored_above,
            "delay": self.delay.value,
            "delay_lo": self.delay.lo,
            "delay_hi": self.delay.hi,
            "delay_lower": self.delay_lower,
            "ratio": self.ratio.value,
            "ratio_lo": self.ratio.lo,
            "ratio_hi": self.ratio.hi,
            "ratio_lower": self.ratio_lower,
            "pairing": self.pairing,
            "shift": self.shift.value,
            "shift_lo": self.shift.lo,
            "shift_hi": self.shift.hi,
            "shift_predicted": self.shift_predicted,
        }


def pairs_of(runs: InterventionRuns, arm: np.ndarray, base: np.ndarray, options: InterventionOptions) -> bool:
    """Whether arm and baseline runs are paired by seed: asked for, and the same seeds each once on both sides."""
    seeds_arm, seeds_base = runs.seed[arm], runs.seed[base]
    return (
        options.paired
        and len(np.unique(seeds_arm)) == len(seeds_arm) == len(seeds_base) == len(np.unique(seeds_base))
        and set(seeds_arm.tolist()) == set(seeds_base.tolist())
    )


def by_seed(runs: InterventionRuns, positions: np.ndarray) -> dict:
    return {runs.seed[p].item(): p for p in positions}


def arm_estimates(runs: InterventionRuns, arm: np.ndarray, base: np.ndarray, options: InterventionOptions):
    """(ratio, ratio_lower, shift, pairing) of the arm's runs against the baseline's (module docstring)."""
    how = options.center
    with_bound = np.where(runs.usable, runs.delay, runs.bound)
    censored = arm[runs.censored[arm]]
    if pairs_of(runs, arm, base, options):
        base_of = by_seed(runs, base)
        matched = [(p, base_of[runs.seed[p].item()]) for p in arm if runs.usable[base_of[runs.seed[p].item()]]]
        both = np.array([(a, b) for a, b in matched if runs.usable[a]], int).reshape(-1, 2)
        ratio = paired(runs.delay[both[:, 0]], runs.delay[both[:, 1]], how, options, True)
        shift = paired(runs.delay[both[:, 0]], runs.delay[both[:, 1]], how, options, False)
        bounded = np.array([(a, b) for a, b in matched if runs.usable[a] or runs.censored[a]], int).reshape(-1, 2)
        lower = (
            float(np.exp(centre(np.log(with_bound[bounded[:, 0]]) - np.log(runs.delay[bounded[:, 1]]), how)))
            if len(censored) and len(bounded)
            else NAN
        )
        return ratio, lower, shift, f"paired ({len(both)} seeds)"
    arm_usable, base_usable = arm[runs.usable[arm]], base[runs.usable[base]]
    ratio = two_sample(runs.delay[arm_usable], runs.delay[base_usable], how, options, True)
    shift = two_sample(runs.delay[arm_usable], runs.delay[base_usable], how, options, False)
    bounded = arm[runs.usable[arm] | runs.censored[arm]]
    lower = (
        float(np.exp(centre(np.log(with_bound[bounded]), how) - centre(np.log(runs.delay[base_usable]), how)))
        if len(censored) and len(base_usable)
        else NAN
    )
    reason = "unpaired (seeds differ)" if options.paired else "unpaired (interventions.paired = false)"
    return ratio, lower, shift, reason


NONE = Estimate(NAN, NAN, NAN, 0, "")


def make_arm(
    runs: InterventionRuns,
    label: tuple,
    axis: str,
    strength: float,
    members: np.ndarray,
    base: np.ndarray | None,
    options: InterventionOptions,
    predicted: float = NAN,
) -> Arm:
    """The Arm of the runs at positions `members` against the baseline runs at positions `base` (the baseline
    itself: axis "baseline", ratio 1 and shift 0; base None: no baseline, no ratio)."""
    counts = {r: int((runs.regime[members] == r).sum()) for r in REGIMES}
    censored = members[runs.censored[members]]
    above = float(np.min(runs.bound[censored])) if len(censored) else NAN
    delay = one_sample(runs.delay[members[runs.usable[members]]], options.center, options, True)
    bounded = members[runs.usable[members] | runs.censored[members]]
    lower = (
        float(np.exp(centre(np.log(np.where(runs.usable, runs.delay, runs.bound)[bounded]), options.center)))
        if len(censored)
        else NAN
    )
    head = (label, axis, strength, tuple(runs.run[members]), counts, tuple(runs.run[censored]), above, delay, lower)
    if axis == BASELINE:
        return Arm(
            *head, Estimate(1.0, 1.0, 1.0, delay.n, ""), NAN, Estimate(0.0, 0.0, 0.0, delay.n, ""), "", predicted
        )
    if base is None:
        return Arm(*head, NONE, NAN, NONE, "no baseline runs", predicted)
    ratio, ratio_lower, shift, pairing = arm_estimates(runs, members, base, options)
    return Arm(*head, ratio, ratio_lower, shift, pairing, predicted)


# ----------------------------------------------------------------------------- dose responses


@dataclass(frozen=True)
class DoseFit:
    """One dose response (module docstring): status "ok" or "not enough data: …" with NaN numbers."""

    context: tuple
    axis: str
    law: str
    x_label: str
    parameter: str
    status: str
    slope: float = NAN
    slope_ci: tuple = (NAN, NAN)
    intercept: float = NAN
    r2: float = NAN
    resampled: str = ""
    n_runs: int = 0
    n_strengths: int = 0
    n_censored: int = 0
    left_out: str = ""
    predicted_slope: float = NAN
    predicted_intercept: float = NAN
    gamma_note: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def as_row(self) -> dict:
        return {
            "context": fits.slice_text(self.context),
            "axis": self.axis,
            "law": self.law,
            "parameter": self.parameter,
            "status": self.status,
            "slope": self.slope,
            "slope_lo": self.slope_ci[0],
            "slope_hi": self.slope_ci[1],
            "intercept": self.intercept,
            "r2": self.r2,
            "n_runs": self.n_runs,
            "n_strengths": self.n_strengths,
            "n_censored": self.n_censored,
            "left_out": self.left_out,
            "predicted_slope": self.predicted_slope,
            "predicted_intercept": self.predicted_intercept,
            "resampled": self.resampled,
        }


def dose_fit(
    runs: InterventionRuns,
    label: tuple,
    axis: str,
    law: Law,
    arms: list[Arm],
    baseline: Arm | None,
    options: InterventionOptions,
    predicted_slope: float = NAN,
    gamma_note: str = "",
) -> DoseFit:
    """The law's OLS over the usable runs of the axis's arms (and of the baseline where the law includes it)."""
    members = [a for a in arms if a.axis == axis] + ([baseline] if law.with_baseline and baseline else [])
    left_out = [a for a in members if a.delay.n == 0]
    positions = np.flatnonzero(np.isin(runs.run, [r for a in members for r in a.runs]) & runs.usable)
    base = np.flatnonzero(np.isin(runs.run, baseline.runs) & runs.usable) if baseline else np.empty(0, int)
    predicted_intercept = (
        float(centre(runs.delay[base], options.center)) if np.isfinite(predicted_slope) and len(base) else NAN
    )
    head = dict(
        context=label,
        axis=axis,
        law=law.formula,
        x_label=law.x_label,
        parameter=law.parameter,
        n_censored=sum(a.n_censored for a in members),
        left_out=" ".join(f"{a.strength:g}" if a.axis != BASELINE else "baseline" for a in left_out),
        predicted_slope=predicted_slope,
        predicted_intercept=predicted_intercept,
        gamma_note=gamma_note,
    )
    x = law.x(runs.strengths[axis][positions])
    y = np.log(runs.delay[positions]) if law.log_delay else runs.delay[positions]
    strengths = len(np.unique(x))
    if len(positions) < fits.MIN_RUNS or strengths < 2:
        return DoseFit(
            **head,
            status=f"not enough data: {len(positions)} usable runs at {strengths} strengths "
            f"(needs ≥ {fits.MIN_RUNS} runs at ≥ 2)",
            n_runs=len(positions),
            n_strengths=strengths,
        )
    line = fits.fit_line(
        x,
        y,
        runs.seed[positions],
        fits.FitOptions(n_bootstrap=options.n_bootstrap, confidence=options.confidence, seed=options.seed),
    )
    return DoseFit(
        **head,
        status="ok",
        slope=line.slope,
        slope_ci=line.slope_ci,
        intercept=line.intercept,
        r2=line.r2,
        resampled=line.resampled,
        n_runs=len(positions),
        n_strengths=strengths,
    )


# ----------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class InterventionReport(Tabular):
    """The arms (baseline first, per context), the dose fits and the notes; its table (`Tabular`,
    interventions.csv): one row per arm."""

    identities: dict
    arms: tuple
    fits: tuple
    origin: str
    options: InterventionOptions
    notes: tuple = ()
    n_mixed: int = 0
    w_c: float = 0.0

    def rows(self) -> list[dict]:
        return [a.as_row() for a in self.arms]

    def shown(self) -> list[str]:
        return [
            "context",
            "axis",
            "strength",
            "n_runs",
            "n_usable",
            "n_censored",
            "delay",
            "delay_lo",
            "delay_hi",
            "ratio",
            "ratio_lo",
            "ratio_hi",
            "ratio_lower",
            "pairing",
            "shift",
            "shift_predicted",
        ]

    def fit_rows(self) -> list[dict]:
        return [f.as_row() for f in self.fits]

    def definition(self) -> str:
        o = self.options
        delay = (
            "T_transition − T_fit"
            if self.origin == "fit"
            else "T_transition in the fork's steps (from the fork at the source's T_fit)"
        )
        axes = ", ".join(f"{a} (identity {v:g})" for a, v in self.identities.items())
        return (
            f"Intervention axes: {axes}. Delay = {delay}; usable runs: regime {'/'.join(o.regimes)} with a "
            f"delay > 0; centre = {o.center.replace('_', ' ')} on the log scale; ratio = delay / baseline delay "
            f"(paired by seed where seeds match), ratio_lower = the ratio with censored runs at their bound; "
            f"{o.confidence:.0%} percentile bootstrap, {o.n_bootstrap} resamples (nht_jax.analysis.interventions)."
            f"\n"
        )

    def markdown(self) -> str:
        notes = "".join(f"- {n}\n" for n in self.notes)
        return (
            self.definition()
            + ("\n" + notes if notes else "")
            + "\n### Arms (interventions.csv)\n\n"
            + self.table()
            + "\n### Dose responses (intervention_fits.csv)\n\n"
            + markdown_table(
                self.fit_rows(),
                [
                    "context",
                    "axis",
                    "law",
                    "parameter",
                    "status",
                    "slope",
                    "slope_lo",
                    "slope_hi",
                    "r2",
                    "n_runs",
                    "n_censored",
                    "left_out",
                    "predicted_slope",
                ],
            )
        )

    def summary(self) -> str:
        lines = []
        for a in self.arms:
            if a.axis == BASELINE:
                continue
            censored = f", {a.n_censored}/{a.n_runs} censored" if a.n_censored else ""
            where = f" ({fits.slice_text(a.context)})" if a.context else ""
            shift = (
                f", shift {fmt(a.shift.value)} [{fmt(a.shift.lo)}, {fmt(a.shift.hi)}] steps (theory "
                f"{fmt(a.shift_predicted)})"
                if a.axis == "injection_scale"
                else ""
            )
            lines.append(
                f"- {a.axis} = {a.strength:g}{where}: ratio {fmt(a.ratio.value)} [{fmt(a.ratio.lo)}, "
                f"{fmt(a.ratio.hi)}]{shift}{censored}"
            )
        for f in self.fits:
            lines.append(
                f"- {f.axis}: {f.law}: {f.parameter} = {fmt(f.slope)} [{fmt(f.slope_ci[0])}, "
                f"{fmt(f.slope_ci[1])}], R² {fmt(f.r2)}"
                if f.ok
                else f"- {f.axis}: {f.status}"
            )
        return "## Interventions\n\n" + "\n".join(lines) + "\n"


def intervention_analysis(
    runs: InterventionRuns,
    labels: list[tuple],
    identities: Mapping[str, float],
    origin: str,
    options: InterventionOptions = InterventionOptions(),
    gammas=None,
    notes: tuple = (),
    w_c: float | None = None,
) -> InterventionReport:
    """Arms and dose fits of the per-run arrays (module docstring); gammas: (γ_eff, note) per context (the
    injection law's prediction; None: unknown); w_c: W_c of the clamp_norm law (default `options.w_c`)."""
    w_c = options.w_c if w_c is None else w_c
    identity = at_identity(runs, identities)
    everywhere = np.logical_and.reduce(list(identity.values()))
    alone = {a: moves_alone(identity, a) for a in identities}
    n_mixed = int((~everywhere & ~np.logical_or.reduce(list(alone.values()))).sum())
    arms, dose = [], []
    for k, label in enumerate(labels):
        inside = runs.context == k
        positions = np.flatnonzero(inside & everywhere)
        gamma, gamma_note = gammas[k] if gammas is not None else (NAN, "γ_eff not given")
        injected = "injection_scale" in identities
        baseline = (
            make_arm(runs, label, BASELINE, NAN, positions, positions, options, 0.0 if injected else NAN)
            if len(positions)
            else None
        )
        base = positions if baseline else None
        arms += [baseline] if baseline else []
        for axis in identities:
            moved = inside & alone[axis]
            axis_arms = []
            for strength in np.unique(runs.strengths[axis][moved]):
                predicted = np.log(strength**2) / gamma if axis == "injection_scale" and gamma > 0 else NAN
                members = np.flatnonzero(moved & (runs.strengths[axis] == strength))
                axis_arms.append(make_arm(runs, label, axis, float(strength), members, base, options, predicted))
            arms += axis_arms
            law = law_of(axis, w_c)
            if law is not None and axis_arms:
                slope = 1 / gamma if axis == "injection_scale" and gamma > 0 else NAN
                dose.append(
                    dose_fit(
                        runs,
                        label,
                        axis,
                        law,
                        axis_arms,
                        baseline,
                        options,
                        slope,
                        gamma_note if axis == "injection_scale" else "",
                    )
                )
    notes = (*notes, *sorted({f.gamma_note for f in dose if f.gamma_note}))
    if n_mixed:
        notes = (
            *notes,
            (f"{n_mixed} runs move more than one intervention axis at once: neither an arm nor the baseline, left out"),
        )
    if not any(a.axis == BASELINE for a in arms):
        notes = (
            *notes,
            (
                "no baseline runs (every intervention axis at its identity): no ratio can be formed; give "
                "each axis its identity in [grid] (in a zipped grid, one row of identities)"
            ),
        )
    return InterventionReport(dict(identities), tuple(arms), tuple(dose), origin, options, tuple(notes), n_mixed, w_c)


def context_gammas(results, runs: InterventionRuns, labels: list[tuple], identities) -> list[tuple[float, str]]:
    """(γ_eff, note) per context at its first baseline run's η and λ (`baseline_gamma`); only the injection law
    reads it, so (NaN, "") without an injection_scale axis or without baseline runs."""
    everywhere = np.logical_and.reduce(list(at_identity(runs, identities).values()))
    gammas = []
    for k in range(len(labels)):
        base = np.flatnonzero((runs.context == k) & everywhere)
        if not len(base) or "injection_scale" not in identities:
            gammas.append((NAN, ""))
            continue
        gammas.append(
            baseline_gamma(
                results.config,
                float(results.hparams["learning_rate"][base[0]]),
                float(results.hparams["weight_decay"][base[0]]),
                identities,
            )
        )
    return gammas


def intervention_report(results, options: InterventionOptions = InterventionOptions()) -> InterventionReport | None:
    """The interventions analysis of a loaded `Results`; None when its grid has no intervention axis."""
    identities = intervention_axes(results.config)
    if not identities:
        return None
    rows = results.summary or summarize(results.steps, results.metrics, results.hparams, results.config)
    origin = delay_origin(results.config, options)
    runs, labels = intervention_runs(
        rows, results.hparams, identities, float(results.steps[-1]), origin, options, results.stopped_step
    )
    budget = f"budget: {results.config.train.steps} steps, logged {LogSchedule.of(results.config.train).short()}"
    w_c = critical_norm(results.config, options) if "clamp_norm" in identities else 0.0
    return intervention_analysis(
        runs,
        labels,
        identities,
        origin,
        options,
        context_gammas(results, runs, labels, identities),
        (budget, origin_text(origin, options)),
        w_c,
    )


# ----------------------------------------------------------------------------- the figure


def draw_baseline(ax, baseline: Arm | None, colour, name: str, identity_text: str = "") -> bool:
    """The baseline's delay as a dashed horizontal line in the band of its interval (the identity is not a point of
    the x axis); whether anything was drawn."""
    if baseline is None or not np.isfinite(baseline.delay.value):
        return False
    if np.isfinite(baseline.delay.lo):
        ax.axhspan(baseline.delay.lo, baseline.delay.hi, color=colour, alpha=0.15, lw=0)
    ax.axhline(
        baseline.delay.value,
        color=colour,
        ls="--",
        lw=1,
        label=f"baseline{f' ({identity_text})' if identity_text else ''} {name}".strip(),
    )
    return True


def draw_arms(ax, arms: list[Arm], colour, name: str) -> bool:
    """Each arm's delay with its interval as error bars; ▲ at the lower bound of an arm with censored runs,
    labelled "k/n censored"; whether anything was drawn."""
    shown = [a for a in arms if np.isfinite(a.delay.value)]
    if shown:
        x, y = np.array([a.strength for a in shown]), np.array([a.delay.value for a in shown])
        lo = np.array([a.delay.lo for a in shown])
        hi = np.array([a.delay.hi for a in shown])
        error = np.nan_to_num([y - lo, hi - y], nan=0.0)
        ax.errorbar(x, y, yerr=error, fmt="o", color=colour, capsize=3, ms=5, label=f"arms {name}".strip())
    marked = [a for a in arms if a.n_censored and np.isfinite(a.delay_lower)]
    for k, a in enumerate(marked):
        ax.scatter(
            [a.strength],
            [a.delay_lower],
            marker="^",
            s=60,
            facecolors="none",
            edgecolors=colour,
            label=f"censored: lower bound {name}".strip() if k == 0 else None,
        )
        ax.annotate(
            f"{a.n_censored}/{a.n_runs} censored",
            (a.strength, a.delay_lower),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=7,
            color=colour,
        )
    return bool(shown or marked)


def draw_dose(ax, fit: DoseFit, law: Law, strengths: list[float], colour, log_x: bool) -> None:
    """The fitted dose response over the arms' strengths (the identity, where the law includes the baseline, is
    fitted but not drawn: it is off the x axis), and, for the injection, the theory's line: the baseline's mean
    delay + γ_eff⁻¹·log s². Lines have gid "fit" (the figure tests find them)."""
    low, high = min(strengths), max(strengths)
    grid = np.geomspace(low, high, 60) if log_x and low > 0 else np.linspace(low, high, 60)
    line = fit.intercept + fit.slope * law.x(grid)
    ax.plot(
        grid,
        np.exp(line) if law.log_delay else line,
        color=colour,
        lw=1,
        gid="fit",
        label=f"fit: {fit.parameter} = {fit.slope:.3g}, R² {fit.r2:.3f}",
    )
    if np.isfinite(fit.predicted_slope) and np.isfinite(fit.predicted_intercept):
        ax.plot(
            grid,
            fit.predicted_intercept + fit.predicted_slope * law.x(grid),
            color=colour,
            lw=1,
            ls=":",
            gid="theory",
            label="theory: baseline + log s²/γ_eff",
        )


PANELS_PER_ROW = 3
"""Panels of the interventions figure per row (one panel per intervention axis)."""


def fitted_strengths(report: InterventionReport, axis: str, arms: list[Arm]) -> list[float]:
    """The distinct strengths a dose fit went through: its arms with a delay, and the identity when the law takes
    the baseline in."""
    law = law_of(axis, report.w_c)
    return sorted({a.strength for a in arms if a.delay.n} | ({report.identities[axis]} if law.with_baseline else set()))


def draw_interventions(report: InterventionReport, path, title: str = "", log_axes=()) -> None:
    """One panel per intervention axis: the delay of each arm (centre, bootstrap interval as error bars) against
    its strength, the baseline as a dashed horizontal line in the band of its interval (its identity strength is
    left off the x axis, which spans the arms), one colour per context; an arm with censored runs marked ▲ at its
    lower bound with "k/n censored"; a fitted dose response drawn through its arms when it went through at least
    `style.MIN_FIT_POINTS` strengths (injection_scale: also the theory's line), otherwise the caption says "too few
    points for a fit". log_axes: the axes whose strengths are drawn on a log scale. The explanation is the caption
    under the panels; `title` is the short title above them."""
    axes = list(report.identities)
    columns = min(len(axes), PANELS_PER_ROW)
    rows = -(-len(axes) // columns)
    fig, grid = subplots(rows, columns, figsize=(5.2 * columns, 4.2 * rows), layout="constrained", squeeze=False)
    panels = [list(grid.flat)]
    for unused in grid.flat[len(axes) :]:
        unused.set_axis_off()
    contexts = list(dict.fromkeys(a.context for a in report.arms))
    colours = dict(zip(contexts, cm.viridis(np.linspace(0, 0.85, max(len(contexts), 1)))))
    too_few, fitted = [], []
    for ax, axis in zip(panels[0], axes):
        drawn = False
        identity_text = f"{style.unit_free(style.label(axis))} = {report.identities[axis]:g}"
        for context in contexts:
            colour, name = colours[context], fits.slice_text(context) if context else ""
            baseline = next((a for a in report.arms if a.context == context and a.axis == BASELINE), None)
            arms = [a for a in report.arms if a.context == context and a.axis == axis]
            drawn = draw_baseline(ax, baseline, colour, name, identity_text) | draw_arms(ax, arms, colour, name) | drawn
            law = law_of(axis, report.w_c)
            for fit in (f for f in report.fits if f.axis == axis and f.context == context and f.ok):
                through = fitted_strengths(report, axis, arms)
                if not style.fit_drawable(through):
                    too_few.append(f"{style.label(axis)}{f' ({name})' if name else ''}: {len(through)} strengths")
                    continue
                fitted.append(f"{style.label(axis)}: {law.formula}")
                draw_dose(ax, fit, law, [a.strength for a in arms if a.delay.n], colour, axis in log_axes)
        strengths = sorted({a.strength for a in report.arms if a.axis == axis})
        if axis in log_axes:
            ax.set_xscale("log")
            strengths = [v for v in strengths if v > 0]
        if strengths:
            ax.set_xticks(strengths, [style.plain_number(v) for v in strengths])
            ax.set_xlim(*style.span_without(strengths, report.identities[axis], axis in log_axes))
        ax.xaxis.set_minor_locator(NullLocator())
        if axis != "injection_scale" and drawn:
            ax.set_yscale("log")
        ylabel = style.label("delay" if report.origin == "fit" else "delay_from_start")
        ax.set(xlabel=style.label(axis), ylabel=ylabel, title=f"delay against {style.unit_free(style.label(axis))}")
        if drawn:
            ax.legend(fontsize=7)
        else:
            ax.text(0.5, 0.5, "no arm with a delay", ha="center", transform=ax.transAxes)
    fig.suptitle(title or "interventions: delay per arm", fontsize=10)
    o = report.options
    centre = "geometric mean" if o.center == "geometric_mean" else "median"
    text = (
        f"Points: each arm's delay ({centre} over its runs) with its {o.confidence:.0%} percentile-bootstrap "
        f"interval as bars ({o.n_bootstrap} resamples; no bar: a single run). Dashed line and band: the baseline "
        f"(every intervention at its identity, which is left off the x axis) and its interval."
        + (" ▲: lower bound of an arm with censored runs." if any(a.n_censored for a in report.arms) else "")
    )
    if fitted:
        text += " Lines: least-squares dose responses (" + "; ".join(fitted) + ")."
    if too_few:
        text += (
            f" No line where there are too few points for a fit (a line needs {style.MIN_FIT_POINTS} "
            f"strengths): " + "; ".join(too_few) + " — the fit's numbers are in intervention_fits.csv."
        )
    style.caption(fig, text)
    save(fig, path)


def draw_figures(results, report: InterventionReport, folder) -> tuple[str, ...]:
    axes = results.config.axes
    log_axes = tuple(a for a in report.identities if a in axes and axes[a].log)
    draw_interventions(
        report, Path(folder) / "interventions.png", f"{results.config.name}: delay per intervention arm", log_axes
    )
    return ("interventions.png",)


ANALYSIS = Analysis(
    name="interventions",
    options=InterventionOptions,
    run=lambda results, options, needed: intervention_report(results, options),
    tables=lambda report: {"interventions.csv": report.csv(), "intervention_fits.csv": csv_text(report.fit_rows())},
    figures=draw_figures,
    markdown=lambda report: "\n## Interventions (docs/science.md §9)\n\n" + report.markdown(),
    summary=lambda report: report.summary(),
)
"""`nht analyze`'s record of the interventions analysis; it applies when the grid lists an intervention axis."""


__all__ = ["ANALYSIS", "Arm", "Law", "critical_norm", "forked"]
