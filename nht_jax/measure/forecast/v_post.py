"""V̂_post, the norm a run's forecast extrapolates to (Algorithm 1, `nht_jax.measure.forecast.diagnosis.forecast`), from the runs of
the same grid that have transitioned so far (docs/guides/live.md; docs/findings/forecast.md).

A pilot of run i is a run j that has transitioned (T_j known) and equals run i on every axis outside
`pilot_free_axes` (`same_cell`); V_j = its V at T_j. The rules (`RULES`): "pilot", the median V_j over the pilots with
the largest λ above λ_i (`select_pilots`); "pilot-trend", a damped local power law in λ through the two nearest λ
levels (`trend_weight`), its bracket the V̂_post range the interval carries (`interval_range`); "floor", the run's
own fitted floor (`nht_jax.measure.forecast.window.fit_floor`). Every rule falls back to the floor while a run has
no pilot; `trend_estimate` gives V★ for the forecast at T_fit.

The rules, the power law and why w = ½: docs/guides/live.md ("What each run gets"); measured:
docs/findings/forecast.md."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from nht_jax.config.forecast import V_POST_RULES

RULES = V_POST_RULES


def same_cell(hparams: dict[str, np.ndarray], free_axes: tuple[str, ...] = ("weight_decay", "seed")) -> np.ndarray:
    """same[i, j]: run j has run i's value on every axis outside `free_axes` (relative tolerance 1e-6)."""
    n = np.asarray(hparams["weight_decay"]).size
    same = np.ones((n, n), bool)
    for k, values in hparams.items():
        if k not in free_axes:
            values = np.asarray(values).astype(np.float64)
            same &= np.isclose(values[None, :], values[:, None], rtol=1e-6, atol=0)
    return same


def select_pilots(
    hparams: dict[str, np.ndarray], t_fit: np.ndarray, free_axes: tuple[str, ...] = ("weight_decay", "seed")
) -> list[tuple[int, ...]]:
    """Per run, the indices of its pilots: same values on every axis outside `free_axes` (`same_cell`), a fitting
    run (finite `t_fit`; pass NaN for runs that may not serve), λ the largest among such runs and greater than the
    run's own λ; () when there is none."""
    lam = np.asarray(hparams["weight_decay"], np.float64)
    fits = np.isfinite(np.asarray(t_fit, np.float64))
    candidates = same_cell(hparams, free_axes) & fits[None, :] & (lam[None, :] > lam[:, None] * (1 + 1e-6))
    out = []
    for i in range(lam.size):
        cand = np.flatnonzero(candidates[i])
        if cand.size == 0:
            out.append(())
            continue
        top = lam[cand].max()
        out.append(tuple(int(j) for j in cand[np.isclose(lam[cand], top, rtol=1e-6, atol=0)]))
    return out


class VPost(NamedTuple):
    """One run's V̂_post (NaN: no pilot, the forecast uses the floor), the range [lo, hi] it may lie in (equal to it
    when the rule states none), and the pilots it came from."""

    value: float
    lo: float
    hi: float
    pilots: tuple[int, ...]


NONE = VPost(math.nan, math.nan, math.nan, ())
LOG_FLOAT_MAX = math.log(np.finfo(np.float64).max)


def distinct_levels(lams) -> np.ndarray:
    """The λ levels in descending order, one per group of λ within a relative 1e-6 of the group's largest (the
    tolerance of `same_cell` and `select_pilots`: λ = 1 and 1.0000005 are one level)."""
    kept: list[float] = []
    for level in np.unique(np.asarray(lams, np.float64))[::-1]:
        if not kept or not np.isclose(level, kept[-1], rtol=1e-6, atol=0):
            kept.append(float(level))
    return np.asarray(kept, np.float64)


def nearest_levels(lam: float, levels: np.ndarray) -> np.ndarray:
    """The distinct λ levels (`distinct_levels`) ordered by |ln λ_ℓ − ln λ| (ties: the larger λ first)."""
    levels = distinct_levels(levels)  # descending, so a stable sort puts larger first
    return levels[np.argsort(np.abs(np.log(levels) - math.log(lam)), kind="stable")]


def trend_estimate(lam: float, lams, values, trend_weight: float) -> tuple[float, float, float, np.ndarray]:
    """(V̂_post, lo, hi, used) of the pilot-trend rule (module docstring).

    Args:
        lam: λ of the run.
        lams: λ of each pilot.
        values: V of each pilot at its T.
        trend_weight: the weight of the secant's rise, 0 (nearest level) … 1 (the full secant).

    Returns:
        (V̂_post, lo, hi, used), `used` masking the pilots at the one or two levels used.
    """
    lams, values = np.asarray(lams, np.float64), np.asarray(values, np.float64)
    order = nearest_levels(lam, lams)
    at = [np.isclose(lams, level, rtol=1e-6, atol=0) for level in order[:2]]
    v1 = float(np.median(values[at[0]]))
    if order.size < 2:
        return v1, v1, v1, at[0]
    v2 = float(np.median(values[at[1]]))
    rise = math.log(v2 / v1) / math.log(order[1] / order[0]) * math.log(lam / order[0])  # b·ln(λ/λ_1)
    if rise > LOG_FLOAT_MAX - math.log(v1):  # the secant leaves the float range: the nearest level alone
        return v1, v1, v1, at[0]
    line = v1 * math.exp(rise)
    return v1 * math.exp(trend_weight * rise), min(v1, line), max(v1, line), at[0] | at[1]


def v_post_estimates(
    rule: str,
    hparams: dict[str, np.ndarray],
    usable_t_fit,
    v_at_transition,
    free_axes: tuple[str, ...],
    trend_weight: float = 0.5,
) -> list[VPost]:
    """Every run's V̂_post under `rule` (module docstring). usable_t_fit: T_fit of the runs that may serve as pilots
    (transitioned, not diverged; NaN for the others); v_at_transition: each run's V at its T_transition (read
    only where usable)."""
    lam = np.asarray(hparams["weight_decay"], np.float64)
    usable = np.isfinite(np.asarray(usable_t_fit, np.float64))
    v = np.asarray(v_at_transition, np.float64)
    if rule == "floor":
        return [NONE] * lam.size
    if rule == "pilot":
        out = []
        for pilots in select_pilots(hparams, usable_t_fit, free_axes):
            value = float(np.median(v[list(pilots)])) if pilots else math.nan
            out.append(VPost(value, value, value, pilots) if pilots else NONE)
        return out
    pool = same_cell(hparams, free_axes) & usable[None, :] & ~np.eye(lam.size, dtype=bool)
    pool &= (lam > 0)[None, :]  # a power law in λ needs λ > 0
    out = []
    for i in range(lam.size):
        cand = np.flatnonzero(pool[i])
        if not lam[i] > 0:  # no weight decay: no power law to follow, the pilot rule
            out.append(v_post_estimates("pilot", hparams, usable_t_fit, v, free_axes)[i])
            continue
        if cand.size == 0:
            out.append(NONE)
            continue
        value, lo, hi, used = trend_estimate(float(lam[i]), lam[cand], v[cand], trend_weight)
        out.append(VPost(value, lo, hi, tuple(int(j) for j in cand[used])))
    return out


def interval_range(estimate: VPost) -> tuple[float, float] | None:
    """The V̂_post range the forecast's interval carries (`MonitorOptions.v_post_range`): None when the rule
    states none (lo = hi), else (lo, hi)."""
    if not np.isfinite(estimate.value) or estimate.lo == estimate.hi:
        return None
    return float(estimate.lo), float(estimate.hi)


__all__ = ["trend_estimate"]
