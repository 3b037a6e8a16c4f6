"""The window fit of log V and its extrapolation (Algorithm 1), the first contracting peak and the fitted floor,
pure numpy: the pieces the diagnosis (`nht_jax.measure.forecast.diagnosis`), the live table and the delay predictor
(`nht_jax.analysis.predictor`) share (docs/guides/monitor.md).

first_peak     the first running maximum of V from which V falls by a fraction before exceeding it
fit_log_linear log V_t = a − γ̂·t by least squares; `rate_se` the standard error of γ̂
extrapolate    Algorithm 1 on one window: T̂ = t_0 + γ̂⁻¹·log(V̂_0 / V̂_post), V̂_0 the fit at t_0
fit_floor      the asymptote ĉ of V_t = ĉ + A·e^{−κ(t − t_0)} (the run's own V̂_post when it has no pilot)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


def first_peak(values, fraction: float) -> tuple[int, int]:
    """(p, c): the first contracting peak of a finite series and its contraction index.

    p is the first running-maximum log (V_p ≥ every earlier value) after which the series falls to
    ≤ (1 − fraction)·V_p before it exceeds V_p again; c is the first such log. Where no log qualifies
    (still rising, or never falling by `fraction`), p = the global maximum (first occurrence) and c = −1.
    Unlike a global argmax, a late re-growth above the first peak does not move it.

    In one pass: with R_j = max_{i ≤ j} V_i and s_j the first log of that running maximum (V_{s_j} = R_j), c is
    the first j > s_j with V_j ≤ (1 − fraction)·R_j and p = s_c: within a record's reign (until V exceeds it)
    R_j is the record, and tied records share one reign whose first log qualifies first.
    """
    v = np.asarray(values, np.float64)
    running = np.maximum.accumulate(v)
    reign = np.searchsorted(running, running, side="left")  # s_j (R is non-decreasing)
    fell = np.flatnonzero((v <= (1.0 - fraction) * running) & (np.arange(v.size) > reign))
    if fell.size:
        return int(reign[fell[0]]), int(fell[0])
    return int(np.argmax(v)), -1


def first_step(mask: np.ndarray, steps: np.ndarray) -> float:
    """The first step where `mask` holds (NaN when none)."""
    hit = np.flatnonzero(mask)
    return float(steps[hit[0]]) if hit.size else np.nan


def fit_log_linear(steps, v) -> tuple[float, float, float]:
    """(a, γ̂, rms residual) of the least-squares line log V_t = a − γ̂·t."""
    t, y = np.asarray(steps, np.float64), np.log(np.asarray(v, np.float64))
    slope, intercept = np.polyfit(t, y, 1)
    resid = y - (intercept + slope * t)
    return float(intercept), float(-slope), float(np.sqrt(np.mean(resid**2)))


class Extrapolation(NamedTuple):
    """Algorithm 1's step on one window (`extrapolate`): NaN with `reason` where it gives no T̂."""

    t_start: float
    t_end: float
    gamma_hat: float
    V_start: float
    T_hat: float
    reason: str
    fit_rmse: float = math.nan  # rms residual of the log-linear fit

    def time_at(self, target: float) -> float:
        """t_start + γ̂⁻¹·log(V̂_0 / target): when the fitted line reaches V = target (NaN unless target < V̂_0)."""
        if not (np.isfinite(target) and target < self.V_start):
            return math.nan
        return float(self.t_start + np.log(self.V_start / target) / self.gamma_hat)


def extrapolate(steps, v, t0: float, length: float, v_post: float, min_points: int, why: str = "") -> Extrapolation:
    """log V_t = a − γ̂·t fitted over the logs in [t0, t0 + length], V̂_0 = e^{a − γ̂·t0}, and
        T̂ = t0 + γ̂⁻¹·log(V̂_0 / V̂_post);
    NaN with the reason: fewer than `min_points` logs, γ̂ ≤ 0, no V̂_post (`why`), V̂_post ≥ V̂_0."""
    steps, v = np.asarray(steps, np.float64), np.asarray(v, np.float64)
    out = Extrapolation(t0, t0 + length, math.nan, math.nan, math.nan, "")
    w = (steps >= t0) & (steps <= t0 + length)
    if w.sum() < min_points:
        return out._replace(
            reason=f"only {int(w.sum())} logs in the fit window [{t0:.0f}, {t0 + length:.0f}] "
            f"(< {min_points}; the run ends at {steps[-1]:.0f})"
        )
    a, rate, rmse = fit_log_linear(steps[w], v[w])
    v0 = float(np.exp(a - rate * t0))
    out = out._replace(gamma_hat=rate, V_start=v0, fit_rmse=rmse)
    if rate <= 0:
        return out._replace(reason=f"V does not contract over the fit window (γ̂ = {rate:.3g} ≤ 0)")
    if not np.isfinite(v_post):
        return out._replace(reason=why or "no V̂_post")
    if v_post >= v0:
        return out._replace(reason=f"no norm gap: V̂_post = {v_post:.4g} ≥ V at the window start {v0:.4g}")
    return out._replace(T_hat=out.time_at(v_post))


def rate_se(steps, v) -> float:
    """Standard error of the least-squares slope of log V on t (n ≥ 3)."""
    t, y = np.asarray(steps, np.float64), np.log(np.asarray(v, np.float64))
    slope, intercept = np.polyfit(t, y, 1)
    sse = float(np.sum((y - intercept - slope * t) ** 2))
    return math.sqrt(sse / (t.size - 2) / float(np.sum((t - t.mean()) ** 2)))


def floor_fits(t, v, log_kappa) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ĉ, Â, SSE) of V_t = ĉ + A·e^{−κt} by least squares for every κ = e^{log_kappa} at once (any shape).

    Given κ the model is linear in (ĉ, A): with e_t = e^{−κt} and centred ẽ = e − ē, ṽ = v − v̄,
        Â = Σ ẽ·ṽ / Σ ẽ²,   ĉ = v̄ − Â·ē,   SSE = Σ (ṽ − Â·ẽ)²
    (the normal equations of the two-column basis [1, e], solved in closed form; centring keeps them well
    conditioned when κt is small and e is nearly constant)."""
    t, v = np.asarray(t, np.float64), np.asarray(v, np.float64)
    e = np.exp(-np.exp(np.asarray(log_kappa, np.float64))[..., None] * t)
    e_mean = e.mean(axis=-1, keepdims=True)
    e_c, v_c = e - e_mean, v - v.mean()
    a = np.sum(e_c * v_c, axis=-1) / np.sum(e_c * e_c, axis=-1)
    c = v.mean() - a * e_mean[..., 0]
    return c, a, np.sum((v_c - a[..., None] * e_c) ** 2, axis=-1)


def floor_lstsq(t, v, log_kappa: float) -> tuple[np.ndarray, float]:
    """((ĉ, Â), SSE) of V_t = ĉ + A·e^{−κt} at one κ = e^{log_kappa}, by `np.linalg.lstsq` on the basis [1, e^{−κt}]."""
    basis = np.stack([np.ones_like(t), np.exp(-np.exp(log_kappa) * t)], axis=1)
    coef, *_ = np.linalg.lstsq(basis, v, rcond=None)
    return coef, float(np.sum((basis @ coef - v) ** 2))


def fit_floor(steps, v, grid: int = 200) -> tuple[float, str]:
    """(ĉ, reason when NaN): the asymptote of V_t = ĉ + A·e^{−κ(t − t_0)} by least squares over the logs.

    log κ on a `grid`-point grid over [log(0.01/span), log(100/span)], every point at once in closed form
    (`floor_fits`), then a bounded scalar search between the best point's neighbours (xatol 1e-10 in log κ) on
    `floor_lstsq`; no floor when the best grid point is an edge, or unless 0 < ĉ < V_last and Â > 0. (Before
    2026-12-02 the grid too was 200 `floor_lstsq` calls; the closed form picks the same grid point, so ĉ is
    unchanged, bit for bit, in ~1/15 of the time: 740 series, 2026-12-02.)"""
    t = np.asarray(steps, np.float64) - float(steps[0])
    v = np.asarray(v, np.float64)
    span = float(t[-1])
    logs = np.linspace(math.log(0.01 / span), math.log(100.0 / span), grid)
    i = int(np.argmin(floor_fits(t, v, logs)[2]))
    if i in (0, grid - 1):
        return math.nan, "no floor: the contraction shows no curvature toward an asymptote yet (give v_post)"
    from scipy import optimize  # here, not at the top: most commands never fit a floor (~1 s of import)

    best = optimize.minimize_scalar(
        lambda k: floor_lstsq(t, v, k)[1], bounds=(logs[i - 1], logs[i + 1]), method="bounded", options={"xatol": 1e-10}
    )
    (c, a), _ = floor_lstsq(t, v, best.x)
    if not (c > 0 and a > 0 and c < v[-1]):
        return (
            math.nan,
            f"no floor: the fitted asymptote {c:.4g} is not between 0 and the last V {v[-1]:.4g} (give v_post)",
        )
    return float(c), ""


__all__ = []
