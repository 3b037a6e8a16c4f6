"""The diagnosis of one run from its history, pure numpy: what `nht_jax.diagnose` (any training loop) and the live
table (`nht_jax.training.live`, a sweep while it trains) say of a run (docs/guides/monitor.md, docs/guides/live.md).
The window fit, the peak and the floor it uses are `nht_jax.measure.forecast.window`; `nht_jax.analysis.monitor`
re-exports `diagnose` with readers of a CSV log and of a results folder.

A history is (step, V = ‖θ‖²[, per-layer norms, train accuracy]). From it: whether the run diverged, T_fit, the
recent window's trend, the first contracting peak, the norm's state, the papers' practical signal (docs/science.md
§5), the head's trend and warning, and for a fitted run that contracts, Algorithm 1's forecast T̂ with its interval;
each option a field of `MonitorOptions`.

Every definition (the window, the trend, the peak, the signal, the head, the forecast, V̂_post, the interval):
docs/guides/monitor.md, "diagnose(...)"."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.config.forecast import RecentWindow
from nht_jax.measure.forecast.window import extrapolate, first_peak, first_step, fit_floor, fit_log_linear, rate_se


@dataclass(frozen=True)
class MonitorOptions(RecentWindow):
    """Options of `diagnose` (module docstring: each definition). The window's fields (peak_drop, window_logs,
    window_steps, min_points, window, flat_tolerance) are declared once, in `nht_jax.config.forecast`."""

    fit_threshold: float = 0.99
    v_post: float | None = None
    v_post_range: tuple[float, float] | None = None
    floor_min_points: int = 4
    confidence: float = 0.9
    head_layer: str = "head"
    divergence_norm: float = math.inf


class Forecast(NamedTuple):
    """T_transition forecast (NaN with `reason` when none)."""

    T_hat: float
    T_lo: float
    T_hi: float
    gamma_hat: float  # contraction rate of log V per step over the window
    gamma_se: float
    t_start: float  # the window [t_start, t_end]
    t_end: float
    V_start: float  # V̂_0, the fit at t_start
    V_post: float
    v_post_source: str  # "given" | "floor" | ""
    reason: str


NO_FORECAST = Forecast(*([math.nan] * 9), "", "")


class Diagnosis(NamedTuple):
    """What `diagnose` returns (module docstring: each field's definition)."""

    step: float  # the last log
    fit: str  # "fitted" | "not fitted" | "unknown" | "diverged"
    T_fit: float
    norm: str  # "rising" | "flat" | "contracting" | "peaked and contracting" | "" (diverged)
    signal: str
    norm_sq: float  # V at the last log
    window_change: float  # Δ log V over the recent window
    peak_step: float
    contract_step: float
    diverged_step: float
    head_norm: str  # the head's trend ("" without a head layer)
    head_peak_step: float
    head_contract_step: float
    head_warning: bool
    forecast: Forecast
    options: MonitorOptions

    def text(self) -> str:
        """One line for a log."""
        if self.fit == "diverged":
            return f"step {self.step:g}: diverged at step {self.diverged_step:g}"
        fit = f"fitted at {self.T_fit:g}" if self.fit == "fitted" else self.fit.replace("unknown", "fit unknown")
        peak = f" (peak at {self.peak_step:g})" if np.isfinite(self.peak_step) else ""
        line = f"step {self.step:g}: {fit}; ‖θ‖² {self.norm}{peak}; {self.signal}"
        if self.head_warning:
            line += f"; the head contracts while ‖θ‖² is {self.norm} (early warning)"
        f = self.forecast
        if np.isfinite(f.T_hat):
            line += (
                f"; T_transition ≈ {f.T_hat:.0f} [{f.T_lo:.0f}, {f.T_hi:.0f}] (V_post {f.V_post:.4g}, "
                f"{f.v_post_source})"
            )
        elif f.reason:
            line += f"; no forecast: {f.reason}"
        return line


def options_from(options: dict) -> MonitorOptions:
    names = {f.name for f in dataclasses.fields(MonitorOptions)}
    unknown = sorted(set(options) - names)
    if unknown:
        raise ConfigError(
            f"diagnose: unknown option(s) {', '.join(unknown)}; the options are {', '.join(sorted(names))}"
        )
    o = MonitorOptions(**options)
    if o.window not in ("recent", "after_peak"):
        raise ConfigError(f"diagnose: window = {o.window!r} must be 'recent' or 'after_peak'")
    if not (0 < o.peak_drop < 1 and 0 < o.confidence < 1):
        raise ConfigError("diagnose: peak_drop and confidence must lie strictly between 0 and 1")
    if o.min_points < 3 or o.floor_min_points < 4:
        raise ConfigError("diagnose: min_points must be ≥ 3 (a rate and its error) and floor_min_points ≥ 4")
    if o.v_post is not None and not (np.isfinite(o.v_post) and o.v_post > 0):
        raise ConfigError(f"diagnose: v_post = {o.v_post!r} must be a finite positive squared norm (or None)")
    if o.v_post_range is not None and not (
        o.v_post is not None
        and len(o.v_post_range) == 2
        and 0 < o.v_post_range[0] <= o.v_post <= o.v_post_range[1] < math.inf
    ):
        raise ConfigError(
            f"diagnose: v_post_range = {o.v_post_range!r} must be (lo, hi) with 0 < lo ≤ v_post ≤ hi "
            f"(v_post = {o.v_post!r}), or None"
        )
    return o


def monitor_options(settings: RecentWindow, confidence: float, **overrides) -> MonitorOptions:
    """The diagnosis' options with the window of `settings` (a `nht_jax.config.forecast.ForecastSettings`
    or any `RecentWindow`) and the interval level `confidence`, checked (`options_from`)."""
    return options_from(
        dict(
            window=settings.window,
            window_logs=settings.window_logs,
            window_steps=settings.window_steps,
            peak_drop=settings.peak_drop,
            flat_tolerance=settings.flat_tolerance,
            min_points=settings.min_points,
            confidence=confidence,
            **overrides,
        )
    )


def series(name: str, values, n: int) -> np.ndarray:
    v = np.asarray(values, np.float64)
    if v.shape != (n,):
        raise ConfigError(f"diagnose: {name} has shape {v.shape}, the steps {(n,)}: one value per logged step")
    return v


def window_mask(steps: np.ndarray, options: MonitorOptions) -> np.ndarray:
    """The recent window [t_last − W, t_last]."""
    return steps >= steps[-1] - options.window_length(steps)


def trend(steps, v, mask, tolerance: float) -> tuple[str, float]:
    """("rising" | "contracting" | "flat", Δ log V over the masked logs)."""
    if mask.sum() < 2:
        return "flat", 0.0
    _, rate, _ = fit_log_linear(steps[mask], v[mask])
    change = -rate * float(steps[mask][-1] - steps[mask][0])
    return ("rising" if change > tolerance else "contracting" if change < -tolerance else "flat"), change


def contracting_peak(steps, v, start: float, drop: float) -> tuple[float, float]:
    """(peak_step, contract_step) of the first contracting peak at or after `start` (NaN, NaN when none)."""
    i0 = int(np.searchsorted(steps, start))
    p, c = first_peak(v[i0:], drop)
    return (float(steps[i0 + p]), float(steps[i0 + c])) if c >= 0 else (math.nan, math.nan)


def forecast(steps, v, t_fit: float, peak_step: float, o: MonitorOptions) -> Forecast:
    """Algorithm 1 from the peak (or T_fit) on, V̂_post given or the fitted floor, with the rate's interval."""
    start = t_fit if not np.isfinite(peak_step) else peak_step
    since = (steps >= start) & window_mask(steps, o)
    if o.v_post is not None:
        v_post, source, why = float(o.v_post), "given", ""
    elif since.sum() < o.floor_min_points:
        v_post, source, why = (
            math.nan,
            "",
            f"only {int(since.sum())} logs in the window for the floor (< {o.floor_min_points})",
        )
    else:
        (v_post, why), source = fit_floor(steps[since], v[since]), "floor"
    if o.window == "after_peak":
        i_fit = int(np.searchsorted(steps, t_fit))
        p, c = first_peak(v[i_fit:], o.peak_drop)
        if c < 0:
            return NO_FORECAST._replace(
                V_post=float(v_post),
                v_post_source=source,
                reason=f"V never falls {o.peak_drop:.0%} below a peak after T_fit: no contraction to fit",
            )
        t0 = float(steps[i_fit + p])
        length = o.window_length(steps)
    else:
        t0 = max(start, float(steps[window_mask(steps, o)][0]))
        length = max(float(steps[-1]) - t0, 1e-9)
    p = extrapolate(steps, v, t0, length, v_post, o.min_points, why)
    out = NO_FORECAST._replace(
        gamma_hat=p.gamma_hat,
        t_start=p.t_start,
        t_end=p.t_end,
        V_start=p.V_start,
        V_post=float(v_post),
        v_post_source=source,
    )
    if not np.isfinite(p.T_hat):
        return out._replace(reason=p.reason)
    w = (steps >= p.t_start) & (steps <= p.t_end)
    se = rate_se(steps[w], v[w])
    from scipy import stats  # here, not at the top (~1 s of import)

    q = float(stats.t.ppf(0.5 + o.confidence / 2, int(w.sum()) - 2))
    v_lo, v_hi = o.v_post_range if o.v_post_range is not None and source == "given" else (v_post, v_post)
    near, far = max(math.log(p.V_start / v_hi), 0.0), math.log(p.V_start / v_lo)
    lo_rate = p.gamma_hat - q * se
    t_hi = p.t_start + far / lo_rate if lo_rate > 0 else math.inf
    return out._replace(T_hat=p.T_hat, T_lo=p.t_start + near / (p.gamma_hat + q * se), T_hi=t_hi, gamma_se=se)


def read_signal(fit: str, norm: str, peaked: bool) -> str:
    if fit != "fitted":
        return "not fitted" if fit == "not fitted" else "undecided"
    if norm == "rising":
        return "re-growing" if peaked else "weak"
    if norm == "peaked and contracting":
        return "transition under way"
    return "settled" if peaked and norm == "flat" else "undecided"


def diagnose(
    steps, norm_sq, layer_norms: dict | None = None, fitted_at: float | None = None, train_acc=None, **options
) -> Diagnosis:
    """Where a run stands, from its norm history: fitted or not, the norm's state, the head signal and a forecast
    of T_transition (module docstring: each definition).

    Args:
        steps: the logged steps, increasing (at least two).
        norm_sq: V = ‖θ‖² at each step.
        layer_norms: {layer: ‖θ_layer‖² at each step}; the head signal reads `head_layer`'s.
        fitted_at: T_fit when known.
        train_acc: the training accuracy at each step, which gives T_fit when fitted_at is not known.
        **options: `MonitorOptions` fields (fit_threshold, window, head_layer, …).

    Returns:
        Diagnosis: a NamedTuple (fit, T_fit, norm, signal, forecast, …); `.text()` says it in one line.

    Raises:
        ConfigError: steps not increasing, a series of another length, or an unknown option.

    Examples:
        >>> res = nht_jax.sweep("default", grid={"weight_decay": 0.72, "seed": 0}, train={"steps": 500})
        >>> from nht_jax.analysis.monitor import from_results
        >>> print(nht_jax.diagnose(**from_results(res, 0)).text())
    """
    o = options_from(options)
    steps = np.asarray(steps, np.float64)
    if steps.ndim != 1 or steps.size < 2 or not (np.diff(steps) > 0).all():
        raise ConfigError(
            f"diagnose: steps must be a 1-D increasing sequence of at least two logged steps (got shape {steps.shape})"
        )
    n = steps.size
    v = series("norm_sq", norm_sq, n)
    layers = {str(k): series(f"layer_norms[{k!r}]", x, n) for k, x in (layer_norms or {}).items()}
    bad = ~np.isfinite(v) | (v >= o.divergence_norm)
    empty = dict(
        norm="",
        signal="",
        window_change=math.nan,
        peak_step=math.nan,
        contract_step=math.nan,
        head_norm="",
        head_peak_step=math.nan,
        head_contract_step=math.nan,
        head_warning=False,
    )
    if bad.any():
        return Diagnosis(
            float(steps[-1]),
            "diverged",
            math.nan,
            **{**empty, "signal": "diverged"},
            norm_sq=float(v[-1]),
            diverged_step=first_step(bad, steps),
            forecast=NO_FORECAST._replace(reason="diverged"),
            options=o,
        )
    if fitted_at is not None:
        fit = "fitted" if float(fitted_at) <= steps[-1] else "not fitted"
        t_fit = float(fitted_at) if fit == "fitted" else math.nan
    elif train_acc is not None:
        t_fit = first_step(series("train_acc", train_acc, n) >= o.fit_threshold, steps)
        fit = "fitted" if np.isfinite(t_fit) else "not fitted"
    else:
        t_fit, fit = math.nan, "unknown"
    start = t_fit if fit == "fitted" else float(steps[0])
    peak_step, contract_step = contracting_peak(steps, v, start, o.peak_drop)
    peaked = bool(np.isfinite(peak_step))
    recent = window_mask(steps, o) & (steps >= (peak_step if peaked else steps[0]))
    direction, change = trend(steps, v, recent, o.flat_tolerance)
    norm = "peaked and contracting" if direction == "contracting" and peaked else direction
    head = layers.get(o.head_layer)
    head_norm, head_peak, head_contract = "", math.nan, math.nan
    if head is not None and np.isfinite(head).all() and (head > 0).all():
        head_norm, _ = trend(steps, head, recent, o.flat_tolerance)
        head_peak, head_contract = contracting_peak(steps, head, start, o.peak_drop)
    if fit != "fitted":
        why = {"unknown": "T_fit unknown: give fitted_at or train_acc", "not fitted": "not fitted yet"}[fit]
        fc = NO_FORECAST._replace(reason=why)
    elif direction != "contracting":
        fc = NO_FORECAST._replace(reason=f"‖θ‖² is {direction} over the recent window: no contraction to extrapolate")
    else:
        fc = forecast(steps, v, t_fit, peak_step, o)
    return Diagnosis(
        float(steps[-1]),
        fit,
        t_fit,
        norm,
        read_signal(fit, norm, peaked),
        float(v[-1]),
        change,
        peak_step,
        contract_step,
        math.nan,
        head_norm,
        head_peak,
        head_contract,
        head_norm == "contracting" and direction != "contracting",
        fc,
        o,
    )


__all__ = ["Forecast", "MonitorOptions", "diagnose"]
