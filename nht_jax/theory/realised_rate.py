"""The realised contraction rate: fit V_t = A·r^t + C after the norm peak (t in optimiser steps).

For each r the model is linear in (A, C), so the fit profiles the least-squares error over the rate
u = −log r alone (log-spaced scan, then a bounded scalar refinement) and solves (A, C) exactly.
The realised rate −log r is compared with the optimiser's weight-decay rate in the same units,
−log(1 − γ_eff) (= γ_eff to first order), where γ_eff is the exact zero-gradient contraction rate of V
(`nht_jax.engine.optim.gamma_eff`): amplification = −log r / −log(1 − γ_eff). It is 1 exactly when V contracts
by weight decay alone (ℓ2 SGD on a null-space component), and the companion paper's order-one AdamW
factor otherwise.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar

from nht_jax.engine.optim import gamma_eff


def _profile(u, t, y):
    """(sse, A, C) of the best A·e^{−ut} + C."""
    basis = np.stack([np.exp(-u * t), np.ones_like(t)], axis=1)
    coef, *_ = np.linalg.lstsq(basis, y, rcond=None)
    return float(np.sum((basis @ coef - y) ** 2)), float(coef[0]), float(coef[1])


def fit_exponential(t: np.ndarray, y: np.ndarray) -> dict:
    """Least-squares V = A·r^t + C on (t, y), t ≥ 0 increasing. Returns r, rate = −log r, A, C, rel_rmse, status.

    Rates are searched in [1e-3/t_max, 30/Δt_min]; a best rate on either end is reported as "unresolved"
    (contraction too slow for the window, or complete within one logged interval). A fit with A ≤ 0
    (the norm rises) is "not contracting".
    """
    t, y = np.asarray(t, np.float64), np.asarray(y, np.float64)
    nan = {"r": np.nan, "rate": np.nan, "A": np.nan, "C": np.nan, "rel_rmse": np.nan}
    keep = np.isfinite(y)
    t, y = t[keep], y[keep]
    if t.size < 4:
        return {**nan, "status": "too few points"}
    t = t - t[0]
    lo, hi = 1e-3 / t[-1], 30.0 / np.min(np.diff(t))
    grid = np.geomspace(lo, hi, 400)
    sse = np.array([_profile(u, t, y)[0] for u in grid])
    best = int(np.argmin(sse))
    a, b = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    res = minimize_scalar(
        lambda lu: _profile(np.exp(lu), t, y)[0],
        bounds=(np.log(a), np.log(b)),
        method="bounded",
        options={"xatol": 1e-12},
    )
    u = float(np.exp(res.x)) if res.fun <= sse[best] else float(grid[best])
    err, amp, const = _profile(u, t, y)
    status = "ok"
    if best in (0, grid.size - 1):
        status = "unresolved"
    elif amp <= 0:
        status = "not contracting"
    scale = max(float(np.max(np.abs(y))), 1e-300)
    return {
        "r": float(np.exp(-u)),
        "rate": u,
        "A": amp,
        "C": const,
        "rel_rmse": float(np.sqrt(err / t.size)) / scale,
        "status": status,
    }


def fit_after_peak(steps: np.ndarray, v: np.ndarray) -> dict:
    """`fit_exponential` on the part of a trajectory from its (finite) maximum on; adds peak_step."""
    v = np.asarray(v, np.float64)
    finite = np.isfinite(v)
    if not finite.any():
        return {**fit_exponential(steps[:0], v[:0]), "peak_step": np.nan}
    peak = int(np.argmax(np.where(finite, v, -np.inf)))
    out = fit_exponential(np.asarray(steps)[peak:], v[peak:])
    out["peak_step"] = float(steps[peak])
    return out


def amplification(rate, optimizer: str, eta, lam, momentum: float = 0.9, gamma=None):
    """Realised rate −log r over the optimiser's weight-decay rate −log(1 − γ_eff); NaN where λ = 0 or γ_eff is
    unknown.

    Args:
        rate: the realised rate −log r per step (`fit_after_peak`).
        optimizer: the optimiser's name.
        eta: η, the learning rate.
        lam: λ, the weight decay.
        momentum: β, for the momentum optimisers.
        gamma: a declared γ_eff to use instead of the optimiser's own (`declared_contraction`, slots included).

    Returns:
        The ratio.
    """
    g = np.asarray(gamma_eff(optimizer, eta, lam, momentum) if gamma is None else gamma, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(g > 0, np.asarray(rate, np.float64) / -np.log1p(-np.minimum(g, 1 - 1e-16)), np.nan)


def aggregate(values) -> dict:
    """Median, quartiles, min, max and count of the finite values."""
    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {"n": 0, "median": np.nan, "q25": np.nan, "q75": np.nan, "min": np.nan, "max": np.nan}
    return {
        "n": int(v.size),
        "median": float(np.median(v)),
        "q25": float(np.quantile(v, 0.25)),
        "q75": float(np.quantile(v, 0.75)),
        "min": float(v.min()),
        "max": float(v.max()),
    }


__all__ = ["amplification"]
