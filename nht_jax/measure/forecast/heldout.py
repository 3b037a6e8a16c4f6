"""The forecast at T_fit on seeds its calibration never saw, and its scores, pure numpy (docs/guides/forecast.md).

Over the runs of one grid (`Runs`): the split by seed (`splits`: leave one seed out, given calibration seeds, or a
`prior` calibration from another grid), the calibration of κ and V★ on the calibration seeds' transitioned runs
(`calibrate`, `kappa_of`, `nht_jax.measure.forecast.kappa_model`) with its interval from their own residuals
(`residuals`), the forecast of a run from a step t ≥ T_fit (`forecast_run`), the scores over the scored seeds
(`score`: MAPE with a seed-level interval, coverage, hit and false-alarm rates and AUROC at lead fractions), and
each fitted run's status (`status`: transitioned, anti-grokked, censored, missed, no forecast). The live table's
law (`law_forecasts`) is here too.

The split, the calibration, the forecast, the scores and the status column: docs/guides/forecast.md."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from nht_jax.measure.forecast import first_passage, kappa_model
from nht_jax.config.forecast import ForecastSettings
from nht_jax.measure.forecast.v_post import trend_estimate


class Runs(NamedTuple):
    """One grid's runs (module docstring)."""

    steps: np.ndarray  # (logs,)
    v: np.ndarray  # (runs, logs)
    seed: np.ndarray
    lam: np.ndarray
    g: np.ndarray
    cell: np.ndarray
    t_fit: np.ndarray
    t_tr: np.ndarray
    positive: np.ndarray
    negative: np.ndarray
    eta: np.ndarray | None = None  # η of each run (None: not known; κ(λ, η) is then λ only)


def v_at(runs: Runs, i: int, t: float) -> float:
    """V of run i at its last log ≤ t."""
    return float(runs.v[i, max(int(np.searchsorted(runs.steps, t, side="right")) - 1, 0)])


def transitioned(runs: Runs) -> np.ndarray:
    """Runs that fit and transition after T_fit with a finite positive V at every log up to T_transition: the
    ones a calibration can use (what comes after T is never read; in a live table it is not there yet).

    Args:
        runs: one grid's runs.

    Returns:
        A boolean mask over the runs.
    """
    ok = np.isfinite(runs.t_fit) & np.isfinite(runs.t_tr) & (runs.t_tr > runs.t_fit)
    before = runs.steps[None, :] <= np.where(ok, runs.t_tr, -np.inf)[:, None]
    with np.errstate(invalid="ignore"):
        good = np.isfinite(runs.v) & (runs.v > 0)
    return ok & np.where(before, good, True).all(axis=1)


def cells(hparams: dict[str, np.ndarray], free_axes: tuple[str, ...]) -> np.ndarray:
    """A cell key per run: its values on every axis outside `free_axes`, as text ("learning_rate=0.001, …", six
    significant digits), so that runs of two grids with the same values share a key."""
    n = np.asarray(hparams["weight_decay"]).size
    axes = sorted(k for k in hparams if k not in free_axes)
    return np.array([", ".join(f"{k}={float(np.asarray(hparams[k])[i]):.6g}" for k in axes) for i in range(n)])


def splits(seeds, calibration_seeds=()) -> list[tuple[tuple, tuple]]:
    """[(scored seeds, calibration seeds)]: leave one seed out when `calibration_seeds` is empty, else one split
    (the others, the given); never a seed in both."""
    seeds = tuple(sorted({float(s) for s in np.asarray(seeds).ravel()}))
    if not calibration_seeds:
        return [((s,), tuple(c for c in seeds if c != s)) for s in seeds]
    cal = tuple(sorted({float(s) for s in calibration_seeds}))
    return [(tuple(s for s in seeds if s not in cal), cal)]


class Calibration(NamedTuple):
    """What the calibration runs give (module docstring)."""

    seeds: tuple
    kappa: dict  # {cell or "all": median κ}
    kappa_n: dict  # {cell or "all": runs pooled}
    lam: np.ndarray  # the calibration runs' λ, cell, V at T and own κ (`law_kappa`)
    cell: np.ndarray
    v_t: np.ndarray
    kappas: np.ndarray
    bounds: tuple[float, float]  # the interval's (r_lo, r_hi)
    eta: np.ndarray | None = None  # the calibration runs' η and seed (κ(λ, η)'s fit and its bootstrap)
    run_seed: np.ndarray | None = None
    model: kappa_model.KappaModel = kappa_model.NO_MODEL  # κ(λ, η) when kappa_pool = "model"


def pooled_kappa(kappas: np.ndarray, cell: np.ndarray, pool: str) -> tuple[dict, dict]:
    """({key: median κ}, {key: runs pooled}) over the finite κ: one key "all" when `pool` is "all" (or "model",
    whose κ is `Calibration.model`'s, the median kept beside it), else one per
    cell ("cell", and "level", whose κ at a λ is read from the runs' own κ but keeps these per cell)."""
    keys = ["all"] if pool in ("all", "model") else sorted(set(cell.tolist()))
    kappa, kappa_n = {}, {}
    for key in keys:
        mine = np.isfinite(kappas) & ((cell == key) if key != "all" else True)
        kappa[key] = float(np.median(kappas[mine])) if mine.any() else math.nan
        kappa_n[key] = int(mine.sum())
    return kappa, kappa_n


def etas(runs: Runs) -> np.ndarray:
    """Every run's η (NaN where the grid does not say)."""
    n = runs.lam.size
    return np.full(n, math.nan) if runs.eta is None else np.broadcast_to(np.asarray(runs.eta, np.float64), (n,))


def with_model(cal: Calibration, options: ForecastSettings) -> Calibration:
    """`cal` with κ(λ, η) fitted on its runs when `kappa_pool` is "model" (`kappa_model.fit`, its interval at the
    forecast interval's level), else as it is."""
    if options.kappa_pool != "model":
        return cal
    return cal._replace(model=kappa_model.fit(cal.lam, cal.eta, cal.kappas, cal.run_seed, confidence=options.interval))


def calibrate(runs: Runs, seeds: tuple, options: ForecastSettings, with_bounds: bool = True) -> Calibration:
    """The calibration on the runs of `seeds` (module docstring).

    Args:
        runs: one grid's runs.
        seeds: the seeds whose transitioned runs calibrate.
        options: the forecast settings.
        with_bounds: also compute the conformal bounds of the interval (False leaves them (−∞, ∞)).

    Returns:
        The calibration: pooled κ, its model, and the interval's bounds.
    """
    use = transitioned(runs) & np.isin(runs.seed.astype(np.float64), np.asarray(seeds, np.float64))
    idx = np.flatnonzero(use)
    v_t = np.array([v_at(runs, j, runs.t_tr[j]) for j in idx])
    v_mem = np.array([v_at(runs, j, runs.t_fit[j]) for j in idx])
    kappas = np.array(
        [first_passage.law_kappa(runs.t_fit[j], runs.t_tr[j], m, s, runs.g[j]) for j, m, s in zip(idx, v_mem, v_t)]
    )
    kappa, kappa_n = pooled_kappa(kappas, runs.cell[idx], options.kappa_pool)
    cal = with_model(
        Calibration(
            tuple(seeds),
            kappa,
            kappa_n,
            runs.lam[idx],
            runs.cell[idx],
            v_t,
            kappas,
            (-math.inf, math.inf),
            etas(runs)[idx],
            runs.seed[idx].astype(np.float64),
        ),
        options,
    )
    if with_bounds:
        cal = cal._replace(bounds=first_passage.conformal_bounds(residuals(runs, seeds, options), options.interval))
    return cal


def joined(prior: Calibration, own: Calibration, options: ForecastSettings) -> Calibration:
    """One calibration of both: the transitioned runs of `prior` (a pilot sweep's) and of `own` pooled, κ their
    median again (over all, or per cell); the interval's bounds `own`'s, or `prior`'s while `own` has none."""
    lam, cell = np.concatenate([prior.lam, own.lam]), np.concatenate([prior.cell, own.cell]).astype(str)
    kappas = np.concatenate([prior.kappas, own.kappas])
    kappa, kappa_n = pooled_kappa(kappas, cell, options.kappa_pool)
    bounds = own.bounds if np.isfinite(own.bounds).all() else prior.bounds

    def both(field):
        return np.concatenate(
            [np.full(c.lam.size, math.nan) if getattr(c, field) is None else getattr(c, field) for c in (prior, own)]
        )

    return with_model(
        Calibration(
            tuple(sorted({*prior.seeds, *own.seeds})),
            kappa,
            kappa_n,
            lam,
            cell,
            np.concatenate([prior.v_t, own.v_t]),
            kappas,
            bounds,
            both("eta"),
            both("run_seed"),
        ),
        options,
    )


def v_star(cal: Calibration, lam: float, cell, weight: float) -> float:
    """V★ at λ in `cell` from the calibration's transitions (NaN when it has none there or λ ≤ 0)."""
    return level_estimate(cal, cal.v_t, lam, cell, weight)


def level_estimate(cal: Calibration, values: np.ndarray, lam: float, cell, weight: float) -> float:
    """A calibration quantity (V at T, κ) at λ in `cell`: the median at λ's level when the calibration has it,
    else the power law in λ through the two nearest levels with a share `weight` of its slope
    (`v_post.trend_estimate`); NaN without a finite value in the cell, or λ ≤ 0."""
    mine = (cal.cell == cell) & (cal.lam > 0) & np.isfinite(values) & (values > 0)
    if not (mine.any() and lam > 0):
        return math.nan
    return trend_estimate(lam, cal.lam[mine], values[mine], weight)[0]


def kappa_of(cal: Calibration, lam: float, cell, options: ForecastSettings, eta: float = math.nan) -> float:
    """The calibrated κ for a run at λ (and η) in `cell`: pooled over every calibration run ("all"), over its cell
    ("cell"), at its λ level ("level": `level_estimate` of the runs' own κ, `v_star_weight`), or κ(λ, η) fitted
    on every calibration run ("model": `kappa_model`)."""
    if options.kappa_pool == "model":
        return float(kappa_model.predict(cal.model, lam, eta))
    if options.kappa_pool == "level":
        return level_estimate(cal, cal.kappas, lam, cell, options.v_star_weight)
    return cal.kappa.get("all" if options.kappa_pool == "all" else cell, math.nan)


class TfitForecast(NamedTuple):
    """One run's forecast from step `t` (NaN fields with `reason` when none)."""

    t: float  # the step it is made at
    T_hat: float
    delay_hat: float  # T̂ − t
    kappa: float
    kappa_source: str  # "calibrated" | "run" | "fixed"
    v_now: float  # V_t
    v_star: float
    reason: str
    kappa_lo: float = math.nan  # κ(λ, η)'s seed-bootstrap interval (kappa_pool = "model"; else NaN)
    kappa_hi: float = math.nan


def forecast_run(runs: Runs, i: int, cal: Calibration, t: float, options: ForecastSettings) -> TfitForecast:
    """Run i's forecast from step t (module docstring)."""
    v_now = v_at(runs, i, t)
    star = v_star(cal, float(runs.lam[i]), runs.cell[i], options.v_star_weight)
    if options.kappa == "run":
        kappa = first_passage.realised_kappa(
            runs.steps, runs.v[i], runs.t_fit[i], t, runs.g[i], options.min_points, options.interval
        ).kappa
    elif options.kappa == "fixed":
        kappa = options.kappa_fixed
    else:
        kappa = kappa_of(cal, float(runs.lam[i]), runs.cell[i], options, float(etas(runs)[i]))
    span = (
        kappa_model.interval(cal.model, float(runs.lam[i]), float(etas(runs)[i]))
        if options.kappa == "calibrated" and options.kappa_pool == "model"
        else (math.nan, math.nan)
    )
    out = TfitForecast(float(t), math.nan, math.nan, float(kappa), options.kappa, v_now, star, "", *span)
    if not np.isfinite(star):
        return out._replace(reason="no V★: no calibration run of this cell transitioned (or λ = 0)")
    if not np.isfinite(kappa):
        return out._replace(
            reason="no κ"
            + (
                ": V does not contract past its peak yet"
                if options.kappa == "run"
                else ": no calibration run to measure it"
            )
        )
    delay = first_passage.law_delay(v_now, star, kappa, float(runs.g[i]))
    if not np.isfinite(delay):
        return out._replace(reason="no decay-only contraction g (γ_eff unknown or 0)")
    return out._replace(T_hat=float(t) + delay, delay_hat=delay)


def forecast_step(runs: Runs, i: int, options: ForecastSettings) -> float:
    """ "At T_fit": T_fit itself, or with κ from the run the first log at which it has one."""
    if options.kappa != "run":
        return float(runs.t_fit[i])
    return first_passage.first_log_with_kappa(runs.steps, runs.v[i], runs.t_fit[i], runs.g[i], options.min_points)


def residuals(runs: Runs, seeds: tuple, options: ForecastSettings) -> list[float]:
    """log(D / D̂) at T_fit of every transitioned run of `seeds`, each forecast from a calibration on the other
    seeds of `seeds` (none with fewer than two seeds)."""
    out = []
    ok = transitioned(runs)
    for scored, others in splits(seeds):
        if not others:
            continue
        cal = calibrate(runs, others, options, with_bounds=False)
        for i in np.flatnonzero(ok & (runs.seed.astype(np.float64) == scored[0])):
            t = forecast_step(runs, i, options)
            if not (np.isfinite(t) and t < runs.t_tr[i]):
                continue
            f = forecast_run(runs, int(i), cal, t, options)
            if f.delay_hat > 0:
                out.append(math.log((runs.t_tr[i] - t) / f.delay_hat))
    return out


class Scored(NamedTuple):
    """One run's held-out forecast at T_fit with its interval, and the forecasts at the lead fractions."""

    run: int
    seed: float
    role: str  # "positive" | "negative" | "other"
    calibration_seeds: tuple
    forecast: TfitForecast
    T_lo: float
    T_hi: float
    at_leads: tuple  # T̂(t_f) per lead fraction
    at_budget: TfitForecast  # the forecast made at the run's last log (its status)


def lead_step(runs: Runs, i: int, f: float, median_delay: float) -> float:
    """t_f = T_fit + f·(T − T_fit) for a positive, T_fit + f·(median delay) otherwise, on the last log ≤ it."""
    d = runs.t_tr[i] - runs.t_fit[i] if runs.positive[i] else median_delay
    t = runs.t_fit[i] + f * d
    return float(runs.steps[max(int(np.searchsorted(runs.steps, t, side="right")) - 1, 0)])


def heldout(
    runs: Runs,
    options: ForecastSettings,
    calibration_seeds=(),
    leads=(0.25, 0.5, 0.75),
    prior: Calibration | None = None,
) -> list[Scored]:
    """Every fitted run of the scored seeds forecast from a calibration that never saw its seed (module
    docstring).

    Args:
        runs: one grid's runs.
        options: the forecast settings.
        calibration_seeds: the seeds that calibrate, the others scored; empty: leave one seed out.
        leads: fractions f of the way from T_fit to T (or of the median delay) to forecast from as well.
        prior: another grid's calibration; when given, every seed of `runs` outside `prior.seeds` is scored from it
            alone.

    Returns:
        One Scored per forecast run.
    """
    fitted = np.isfinite(runs.t_fit) & np.isfinite(runs.v).all(axis=1)
    delays = (runs.t_tr - runs.t_fit)[runs.positive]
    median_delay = float(np.median(delays)) if delays.size else math.nan
    out = []
    if prior is not None:
        unseen = tuple(s for s in sorted({float(s) for s in runs.seed}) if s not in {float(c) for c in prior.seeds})
        plan = [(unseen, tuple(prior.seeds))]
    else:
        plan = splits(runs.seed, calibration_seeds)
    for scored, cal_seeds in plan:
        cal = prior if prior is not None else calibrate(runs, cal_seeds, options)
        for i in np.flatnonzero(fitted & np.isin(runs.seed.astype(np.float64), np.asarray(scored, np.float64))):
            i = int(i)
            role = "positive" if runs.positive[i] else "negative" if runs.negative[i] else "other"
            t = forecast_step(runs, i, options)
            f = (
                forecast_run(runs, i, cal, t, options)
                if np.isfinite(t)
                else TfitForecast(
                    math.nan,
                    math.nan,
                    math.nan,
                    math.nan,
                    options.kappa,
                    math.nan,
                    math.nan,
                    "no realised κ: V never contracts past its peak",
                )
            )
            lo, hi = first_passage.interval(f.t, f.delay_hat, cal.bounds)
            at = tuple(
                forecast_run(runs, i, cal, max(lead_step(runs, i, lf, median_delay), t), options).T_hat
                if np.isfinite(t) and np.isfinite(median_delay)
                else math.nan
                for lf in leads
            )
            last = float(runs.steps[-1])
            out.append(
                Scored(
                    i, float(runs.seed[i]), role, cal_seeds, f, lo, hi, at, forecast_run(runs, i, cal, last, options)
                )
            )
    return out


class LawForecast(NamedTuple):
    """One run's forecast by the law from its latest log, with its interval (`law_forecasts`)."""

    forecast: TfitForecast
    T_lo: float
    T_hi: float


def law_forecasts(
    runs: Runs, now, options: ForecastSettings, prior: Calibration | None = None
) -> dict[int, LawForecast]:
    """The live table's forecast by the law: every run that has fit and not yet transitioned (finite T_fit, NaN
    T_transition, V finite up to `now`), forecast from its log at `now[i]` with κ and V★ calibrated on every run
    that has transitioned so far, whatever its seed (a run is never in its own calibration: it has not
    transitioned), and on `prior`'s runs too when given (a pilot sweep's calibration, `joined`). The interval's
    bounds are those runs' own leave-one-seed-out errors at their T_fit (`residuals`): none with fewer than two
    seeds among them, or too few errors for the level (then `prior`'s)."""
    now = np.asarray(now, np.float64)
    done = transitioned(runs)
    seeds = tuple(sorted({float(s) for s in runs.seed[done]}))
    cal = calibrate(runs, seeds, options)
    if prior is not None:
        cal = joined(prior, cal, options)
    out = {}
    for i in np.flatnonzero(np.isfinite(runs.t_fit) & np.isnan(runs.t_tr) & np.isfinite(now)):
        i = int(i)
        seen = runs.v[i, runs.steps <= now[i]]
        if not (seen.size and np.isfinite(seen).all() and now[i] >= runs.t_fit[i]):
            continue
        f = forecast_run(runs, i, cal, float(now[i]), options)
        lo, hi = first_passage.interval(f.t, f.delay_hat, cal.bounds)
        out[i] = LawForecast(f, lo, hi)
    return out


def auroc(positive, negative) -> float:
    """P(s₊ > s₋) + ½·P(s₊ = s₋) over all pairs (NaN without both)."""
    p, n = np.asarray(positive, np.float64), np.asarray(negative, np.float64)
    if not (p.size and n.size):
        return math.nan
    d = p[:, None] - n[None, :]
    return float(np.mean((d > 0) + 0.5 * (d == 0)))


def seed_bootstrap(values, seeds, n_bootstrap: int, confidence: float, seed: int) -> tuple[float, float]:
    """Percentile interval of the mean of `values` with the seeds resampled (their values together)."""
    values, seeds = np.asarray(values, np.float64), np.asarray(seeds, np.float64)
    levels = np.unique(seeds)
    if n_bootstrap == 0 or values.size == 0:
        return math.nan, math.nan
    groups = [values[seeds == s] for s in levels]
    rng = np.random.default_rng(seed)
    means = [
        np.concatenate([groups[k] for k in rng.integers(0, levels.size, levels.size)]).mean()
        for _ in range(n_bootstrap)
    ]
    alpha = (1 - confidence) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def status(
    runs: Runs,
    i: int,
    s: Scored | None,
    metric=None,
    threshold: float = math.nan,
    direction: str = "above",
    margin: float = 0.1,
    logs: int = 3,
) -> str:
    """Run i's forecast status (module docstring).

    Args:
        runs: one grid's runs.
        i: the run's index.
        s: its held-out forecast, None without one.
        metric: the transition metric at every log (None: anti-grokking is not checked).
        threshold: the transition threshold of the metric.
        direction: "above" or "below": the side of the threshold the transition crosses to.
        margin: how far past the threshold the metric must fall back to count as anti-grokked.
        logs: the consecutive logs it must stay there.

    Returns:
        "transitioned", "anti-grokked", "censored", "missed" or "no forecast".
    """
    if np.isfinite(runs.t_tr[i]):
        if metric is not None and anti_grokked(runs.steps, metric, runs.t_tr[i], threshold, direction, margin, logs):
            return "anti-grokked"
        return "transitioned"
    if s is None or not np.isfinite(s.at_budget.T_hat):
        return "no forecast"
    return "censored" if s.at_budget.T_hat > runs.steps[-1] else "missed"


def anti_grokked(
    steps, metric, t_transition: float, threshold: float, direction: str, margin: float, logs: int
) -> bool:
    """After T_transition the metric falls past the threshold by `margin` (below threshold − margin when the
    transition is "above", above threshold + margin when "below") at `logs` consecutive logs."""
    steps, m = np.asarray(steps, np.float64), np.asarray(metric, np.float64)
    after = m[steps > t_transition]
    bad = after < threshold - margin if direction == "above" else after > threshold + margin
    run = 0
    for b in bad:
        run = run + 1 if b else 0
        if run >= logs:
            return True
    return False


__all__ = ["calibrate", "heldout", "status", "transitioned"]
