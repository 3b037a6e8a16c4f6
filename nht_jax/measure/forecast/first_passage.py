"""The forecast at T_fit: the first-passage delay law, pure numpy (docs/guides/forecast.md).

Under decoupled weight decay V contracts, once the training set is fit, at a share κ of the rate weight decay alone
would impose; the transition comes when V has fallen from V_mem (at T_fit) to the norm V★ at which the structured
solution takes over: T − T_mem = log(V_mem / V★) / (κ·g) (arXiv 2605.18845). Here: κ from transitioned runs
(`law_kappa`) or from the run itself (`realised_kappa`), V★ from transitioned runs
(`nht_jax.measure.forecast.v_post.trend_estimate`), the law from any log t ≥ T_fit, and a split-conformal interval
from the calibration runs' own log-delay errors (`conformal_bounds`).

The law, its inputs, its interval and the paper's numbers: docs/guides/forecast.md, "The law"."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


def law_delay(v_mem: float, v_star: float, kappa: float, g: float) -> float:
    """D = log(V_mem / V★) / (κ·g): the delay the law gives (0 when V_mem ≤ V★; NaN without a positive κ·g or
    positive norms)."""
    if not (v_mem > 0 and v_star > 0 and kappa > 0 and g > 0 and np.isfinite(kappa * g)):
        return math.nan
    return max(math.log(v_mem / v_star), 0.0) / (kappa * g)


def law_kappa(t_mem: float, t: float, v_mem: float, v_star: float, g: float) -> float:
    """κ = log(V_mem / V★) / (g·(T − T_mem)): the κ that makes the law exact on a transitioned run (NaN when the
    delay is not positive, V did not fall or g is not positive)."""
    delay = t - t_mem
    if not (delay > 0 and g > 0 and v_mem > v_star > 0):
        return math.nan
    return math.log(v_mem / v_star) / (g * delay)


class Kappa(NamedTuple):
    """A run's realised κ = γ̂/g with its interval, the step from which it was fitted and the logs used."""

    kappa: float
    lo: float
    hi: float
    t_start: float
    n: int


NO_KAPPA = Kappa(math.nan, math.nan, math.nan, math.nan, 0)


def realised_kappa(
    steps, v, t_fit: float, t_now: float, g: float, min_points: int = 3, confidence: float = 0.9
) -> Kappa:
    """κ = γ̂/g over the logs in [t_peak, t_now], t_peak = the running maximum of V over [T_fit, t_now] (module
    docstring); NO_KAPPA with fewer than `min_points` logs there, γ̂ ≤ 0 or g ≤ 0."""
    steps, v = np.asarray(steps, np.float64), np.asarray(v, np.float64)
    seen = (steps >= t_fit) & (steps <= t_now)
    if seen.sum() < min_points or not g > 0:
        return NO_KAPPA
    idx = np.flatnonzero(seen)
    peak = idx[int(np.argmax(v[idx]))]
    window = idx[idx >= peak]
    if window.size < min_points:
        return NO_KAPPA
    t, y = steps[window], np.log(v[window])
    dt, dy = t - t.mean(), y - y.mean()  # centred: a flat V gives a slope of exactly 0, not a rounding ±1e-16
    sxx = float(np.sum(dt * dt))
    slope = float(np.sum(dt * dy)) / sxx
    gamma = -slope
    if not gamma > 0:
        return NO_KAPPA
    se = math.sqrt(float(np.sum((dy - slope * dt) ** 2)) / (t.size - 2) / sxx)
    from scipy import stats  # here, not at the top (~1 s of import)

    q = float(stats.t.ppf(0.5 + confidence / 2, t.size - 2))
    return Kappa(gamma / g, (gamma - q * se) / g, (gamma + q * se) / g, float(steps[peak]), int(t.size))


def first_log_with_kappa(steps, v, t_fit: float, g: float, min_points: int) -> float:
    """The earliest log at which `realised_kappa` gives a κ (NaN when none does): the fewest logs the run's own
    rate needs."""
    steps = np.asarray(steps, np.float64)
    for t in steps[steps >= t_fit]:
        if np.isfinite(realised_kappa(steps, v, t_fit, t, g, min_points).kappa):
            return float(t)
    return math.nan


def conformal_bounds(residuals, confidence: float) -> tuple[float, float]:
    """(r_lo, r_hi): the split-conformal order statistics of the residuals for a two-sided interval at level
    `confidence` (module docstring); (−∞, ∞) when there are too few residuals for the level."""
    r = np.sort(np.asarray([x for x in residuals if np.isfinite(x)], np.float64))
    n = r.size
    alpha = (1.0 - confidence) / 2.0
    k_lo = math.floor((n + 1) * alpha + 1e-9)  # 1-based rank of the lower bound (1e-9: 0.9 is not exact
    k_hi = math.ceil((n + 1) * (1.0 - alpha) - 1e-9)  # in binary); of the upper bound
    if n == 0 or k_lo < 1 or k_hi > n:
        return -math.inf, math.inf
    return float(r[k_lo - 1]), float(r[k_hi - 1])


def interval(t_from: float, delay_hat: float, bounds: tuple[float, float]) -> tuple[float, float]:
    """[T_lo, T_hi] = t_from + D̂·[e^{r_lo}, e^{r_hi}] (t_from itself for a zero delay); NaN without a forecast or
    without finite bounds (too few calibration residuals for the level: no interval rather than (−∞, ∞)).

    Args:
        t_from: the step the forecast is made from.
        delay_hat: D̂, the forecast delay in steps.
        bounds: (r_lo, r_hi), the conformal bounds of the log-residual.

    Returns:
        (T_lo, T_hi) in steps, or (NaN, NaN).
    """
    lo, hi = bounds
    if not (np.isfinite(delay_hat) and np.isfinite(lo) and np.isfinite(hi)):
        return math.nan, math.nan
    return t_from + delay_hat * math.exp(lo), t_from + delay_hat * math.exp(hi)


__all__ = ["interval"]
