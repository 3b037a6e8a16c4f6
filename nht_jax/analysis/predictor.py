"""Predicting the delay at T_fit (companion paper's Algorithm 1, docs/science.md §5), checked on a finished sweep.

Algorithm 1: fit the exponential contraction of V over a short window after fitting, estimate the post-transition
norm V̂_post from a strongly regularised pilot (the runs of the same grid with a larger λ), predict
T = γ̂⁻¹·log(V_fit/V̂_post), report the error: per run and pooled (the MAPE with a bootstrap interval, against the
companion's ≈ 35 %, `COMPANION_MAPE`), with an "oracle" error from the run's own V_post. `nht analyze` writes
delay_predictor.csv from it.

Our reading of Algorithm 1, choice by choice (`PredictorOptions`), and the pooling: docs/methods/analysis.md,
"Delay predictor at T_fit"; the report's reading: docs/guides/analyse.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np

from nht_jax.engine.optim import declared_contraction
from nht_jax.analysis.series import finite_run, pool_mask, resolve_norm_metric, run_info
from nht_jax.analysis.bootstrap import MIN_DISTINCT_RESAMPLES, BootstrapOptions, distinct_resamples, interval_text
from nht_jax.analysis.record import Analysis
from nht_jax.analysis.tables import Tabular
from nht_jax.measure.forecast.v_post import select_pilots
from nht_jax.measure.forecast.window import extrapolate, first_peak
from nht_jax.config.forecast import Pilots, WindowFit
from nht_jax.results.folder import Results

COMPANION_MAPE = 0.35
"""The companion paper's mean absolute percentage error of Algorithm 1 (docs/science.md §5)."""


@dataclass(frozen=True)
class PredictorOptions(BootstrapOptions, WindowFit, Pilots):
    """Options of the delay predictor (module docstring: each choice).

    norm_metric: V; "auto" = the decayed parameters' norm.
    start: "fit_or_peak" (t_0 = the first peak of V at or after T_fit from which V falls by peak_drop) or "fit"
        (t_0 = T_fit); then + offset_steps.
    peak_drop, window_steps (the fit window's length in steps; 0 = window_logs logged intervals), window_logs,
        min_points (fewest logs in the window): the window fit's options (`nht_jax.config.forecast.
        WindowFit`, declared there once).
    pilot_norm: the pilots' V at their "transition", "fit" or "final" log.
    pilot_free_axes: axes on which a pilot may differ from the run (weight_decay must be one; `nht_jax.measure.forecast.
        options.Pilots`, declared there once).
    regimes, n_bootstrap, confidence, seed (`nht_jax.analysis.bootstrap.BootstrapOptions`): the pooled MAPE and
        its bootstrap interval.
    """

    n_bootstrap: int = 2000  # BootstrapOptions' field, this analysis's default
    norm_metric: str = "auto"
    start: Literal["fit", "fit_or_peak"] = "fit_or_peak"
    offset_steps: float = 0.0
    pilot_norm: Literal["transition", "fit", "final"] = "transition"


class Prediction(NamedTuple):
    """One run's prediction. `reason` explains any NaN among T_hat, ape, ape_delay (empty when all are finite)."""

    T_fit: float
    T_transition: float
    t_start: float  # t_0
    t_predict: float  # end of the fit window: when the prediction is available
    lead: float  # T_transition − t_predict
    gamma_hat: float  # fitted contraction rate of log V per step
    fit_rmse: float  # rms residual of log V over the window
    V_start: float  # V̂_0, the fit at t_0
    V_post: float  # V̂_post (pilot)
    T_hat: float
    delay: float  # T_transition − T_fit
    delay_hat: float  # T_hat − T_fit
    ape: float
    ape_delay: float
    V_post_oracle: float  # the run's own V at T_transition
    T_hat_oracle: float
    ape_oracle: float
    reason: str


NAN_PREDICTION = Prediction(*([np.nan] * 17), "")


class PredictorPooled(NamedTuple):
    n: int  # runs pooled with a finite ape
    n_pool: int  # runs in the pooled regimes
    mape: float
    mape_lo: float
    mape_hi: float
    median_ape: float
    mape_delay: float
    mape_oracle: float


@dataclass(frozen=True)
class PredictorReport(Tabular):
    """Algorithm 1's prediction for every run (one row per run, `Tabular`) and the pooled errors."""

    norm_metric: str
    predictions: tuple[Prediction, ...]
    pilots: tuple[tuple[int, ...], ...]  # pilot run indices per run
    gamma_eff: tuple[float, ...]  # −log(1 − γ_eff) per run
    info: tuple[dict, ...]
    pooled: PredictorPooled
    pool_note: str
    options: PredictorOptions = field(default_factory=PredictorOptions)
    contraction_reason: str = ""  # why γ_eff is unknown (`declared_contraction`); "" when declared

    def rows(self) -> list[dict]:
        rows = []
        for info, p, pilots, g in zip(self.info, self.predictions, self.pilots, self.gamma_eff):
            with np.errstate(divide="ignore", invalid="ignore"):
                amp = p.gamma_hat / g if g > 0 else np.nan
            row = {
                **info,
                **p._asdict(),
                "pilots": " ".join(map(str, pilots)),
                "gamma_wd": g,
                "contraction": "unknown" if np.isnan(g) else "declared",
                "amplification": amp,
            }
            row["reason"] = row.pop("reason")
            rows.append(row)
        return rows

    def shown(self) -> list[str]:
        axes = [a for a in (self.info[0] if self.info else {}) if a != "run"]
        return [
            "run",
            *axes,
            "T_fit",
            "T_transition",
            "t_predict",
            "gamma_hat",
            "amplification",
            "V_start",
            "V_post",
            "T_hat",
            "ape",
            "ape_delay",
            "ape_oracle",
            "pilots",
            "reason",
        ]

    def comparison(self) -> str:
        p = self.pooled
        if not np.isfinite(p.mape):
            return f"no pooled MAPE (no run of {self.pool_note.split('over ')[-1]} has a prediction and a transition)"
        verdict = (
            "no interval to compare with"
            if not (np.isfinite(p.mape_lo) and np.isfinite(p.mape_hi))
            else "below"
            if p.mape_hi < COMPANION_MAPE
            else "above"
            if p.mape_lo > COMPANION_MAPE
            else "compatible with"
        )
        return (
            f"MAPE {p.mape:.1%} {interval_text(p.mape_lo, p.mape_hi, p.n, 'runs', _pct)} over {p.n} of "
            f"{p.n_pool} runs: {verdict} the companion paper's ≈ {COMPANION_MAPE:.0%}"
        )

    def markdown(self) -> str:
        p, o = self.pooled, self.options
        window = f"{o.window_steps:g} steps" if o.window_steps > 0 else f"{o.window_logs} logs"
        start = "the first norm peak at or after T_fit" if o.start == "fit_or_peak" else "T_fit"
        if o.offset_steps:
            start += f" + {o.offset_steps:g}"
        head = (
            f"Delay predictor (companion Algorithm 1, nht_jax.analysis.predictor): V = {self.norm_metric}; "
            f"log V fitted linear over {window} from {start}; V̂_post = median V at the {o.pilot_norm} log of "
            f"the strongest fitting λ (axes free: {', '.join(o.pilot_free_axes)}).\n\n"
            f"{self.comparison()} ({o.confidence:.0%} bootstrap of the mean, {self.pool_note}); median "
            f"{_pct(p.median_ape)}; delay MAPE {_pct(p.mape_delay)}; with the oracle V_post {_pct(p.mape_oracle)}."
            f"\n\n"
        )
        if self.contraction_reason:
            unknown = sum(bool(np.isnan(g)) for g in self.gamma_eff)
            which = "every run is" if unknown == len(self.gamma_eff) else f"{unknown} of {len(self.gamma_eff)} runs are"
            head += (
                f"γ_eff unknown: {self.contraction_reason}; {which} marked contraction = unknown, their "
                f"amplification left empty (never computed from ηλ).\n\n"
            )
        return head + self.table()


def _pct(v: float) -> str:
    return "–" if not np.isfinite(v) else f"{v:.1%}"


# ----------------------------------------------------------------------------- the core on arrays


def value_at(steps, values, t: float) -> float:
    """The logged value at step t (NaN when t is NaN or not logged)."""
    if not np.isfinite(t):
        return np.nan
    hit = np.flatnonzero(np.asarray(steps, np.float64) == t)
    return float(np.asarray(values)[hit[0]]) if hit.size else np.nan


def predict_run(
    steps,
    v,
    t_fit: float,
    t_transition: float,
    v_post: float,
    options: PredictorOptions = PredictorOptions(),
    pilot_reason: str = "",
) -> Prediction:
    """Algorithm 1 on one run's V: the fit window after T_fit (or the peak), γ̂, T̂ from V̂_post, errors.

    Args:
        steps: the logged steps, (logs,).
        v: V at each log.
        t_fit: T_fit, in steps.
        t_transition: T_transition, in steps.
        v_post: V̂_post.
        options: the predictor options.
        pilot_reason: why `v_post` is NaN.

    Returns:
        The Prediction.
    """
    steps, v = np.asarray(steps, np.float64), np.asarray(v, np.float64)
    out = NAN_PREDICTION._replace(
        T_fit=float(t_fit), T_transition=float(t_transition), delay=float(t_transition - t_fit), V_post=float(v_post)
    )
    if not np.isfinite(t_fit):
        return out._replace(reason="never fits (strong regime)")
    if not (np.isfinite(v).all() and (v > 0).all()):
        return out._replace(reason="diverged: V is not finite and positive at every log")
    v_oracle = value_at(steps, v, t_transition)
    out = out._replace(V_post_oracle=v_oracle)
    t0 = float(t_fit)
    if options.start == "fit_or_peak":
        i_fit = int(np.searchsorted(steps, t_fit))
        p, c = first_peak(v[i_fit:], options.peak_drop)
        if c < 0:
            return out._replace(
                reason=f"V never falls {options.peak_drop:.0%} below a peak after T_fit: no contraction to fit"
            )
        t0 = float(steps[i_fit + p])
    t0 += options.offset_steps
    length = options.window_length(steps)
    fit = extrapolate(steps, v, t0, length, v_post, options.min_points, pilot_reason)
    out = out._replace(
        t_start=t0,
        t_predict=t0 + length,
        lead=float(t_transition - (t0 + length)),
        gamma_hat=fit.gamma_hat,
        fit_rmse=fit.fit_rmse,
        V_start=fit.V_start,
    )
    if not fit.gamma_hat > 0:  # too few logs in the window, or V does not contract over it
        return out._replace(reason=fit.reason)

    def error(pred, truth):
        return float(abs(pred - truth) / truth) if np.isfinite(truth) and truth > 0 else np.nan

    t_oracle = fit.time_at(v_oracle)
    out = out._replace(T_hat_oracle=t_oracle, ape_oracle=error(t_oracle, t_transition))
    if not np.isfinite(fit.T_hat):  # no V̂_post (why: `pilot_reason`), or no norm gap
        return out._replace(reason=fit.reason)
    t_hat = fit.T_hat
    out = out._replace(
        T_hat=t_hat,
        delay_hat=t_hat - t_fit,
        ape=error(t_hat, t_transition),
        ape_delay=error(t_hat - t_fit, t_transition - t_fit),
    )
    if not np.isfinite(t_transition):
        return out._replace(reason="no measured transition within the budget: T̂ cannot be checked")
    if t_transition == t_fit:
        return out._replace(reason="transition at T_fit (delay 0): no delay error")
    return out


def pilot_norm(
    steps, v: np.ndarray, pilots: tuple[int, ...], t_fit, t_transition, which: str = "transition"
) -> tuple[float, str]:
    """(V̂_post, reason when NaN): the median over the pilots of V at their transition / fit / last log."""
    if not pilots:
        return np.nan, "no pilot: no run with a larger λ fits (and transitions) at the same other hyperparameters"
    values = []
    for j in pilots:
        t = {"transition": t_transition[j], "fit": t_fit[j], "final": float(steps[-1])}[which]
        values.append(value_at(steps, v[j], t))
    values = np.asarray(values)
    if not np.isfinite(values).any():
        return np.nan, f"pilot run(s) {', '.join(map(str, pilots))} have no {which} step"
    return float(np.median(values[np.isfinite(values)])), ""


def pool_predictions(predictions, mask, options: PredictorOptions = PredictorOptions()) -> PredictorPooled:
    """MAPE (mean ape) over the masked runs with a bootstrap interval of the mean; median; delay and oracle MAPE."""
    chosen = [p for p, keep in zip(predictions, mask) if keep]
    ape = np.array([p.ape for p in chosen], np.float64)
    ape = ape[np.isfinite(ape)]

    def mean(xs):
        xs = np.asarray(xs, np.float64)
        xs = xs[np.isfinite(xs)]
        return float(xs.mean()) if xs.size else np.nan

    if ape.size == 0:
        lo = hi = med = np.nan
    else:
        rng = np.random.default_rng(options.seed)
        boots = ape[rng.integers(0, ape.size, size=(options.n_bootstrap, ape.size))].mean(axis=1)
        alpha = (1 - options.confidence) / 2
        lo, hi = (
            (float(np.quantile(boots, alpha)), float(np.quantile(boots, 1 - alpha)))
            if options.n_bootstrap
            else (np.nan, np.nan)
        )  # n_bootstrap = 0: no interval
        if distinct_resamples(ape.size) < MIN_DISTINCT_RESAMPLES:  # an artefact of a handful of resamples: none
            lo = hi = np.nan
        med = float(np.median(ape))
    return PredictorPooled(
        int(ape.size),
        len(chosen),
        mean(ape),
        lo,
        hi,
        med,
        mean([p.ape_delay for p in chosen]),
        mean([p.ape_oracle for p in chosen]),
    )


# ----------------------------------------------------------------------------- entry point


def predictor_report(res: Results, options: PredictorOptions = PredictorOptions()) -> PredictorReport:
    """Algorithm 1 for every run of a loaded results directory (T_fit, T_transition from its summary rows), and
    the pooled MAPE over `options.regimes`."""
    if "weight_decay" not in options.pilot_free_axes:
        raise ValueError("PredictorOptions.pilot_free_axes must contain 'weight_decay' (pilots differ in λ)")
    name = resolve_norm_metric(res, options.norm_metric)
    v = np.asarray(res.metrics[name], np.float64)
    steps = np.asarray(res.steps, np.float64)
    if res.summary:
        t_fit = np.array([row["T_fit"] for row in res.summary], np.float64)
        t_tr = np.array([row["T_transition"] for row in res.summary], np.float64)
    else:
        t_fit = t_tr = np.full(res.num_runs, np.nan)
    usable = t_fit if options.pilot_norm != "transition" else np.where(np.isfinite(t_tr), t_fit, np.nan)
    pilots = select_pilots(res.hparams, usable, options.pilot_free_axes)
    contraction = declared_contraction(
        res.config.optim, res.hparams["learning_rate"], res.hparams["weight_decay"], res.hparams
    )
    g_log = -np.log1p(-np.minimum(np.asarray(contraction.gamma, np.float64), 1 - 1e-16))
    predictions, infos = [], []
    for i in range(res.num_runs):
        infos.append(run_info(res, i))
        finite = finite_run(res, i)
        if not finite.all():
            predictions.append(
                NAN_PREDICTION._replace(
                    T_fit=t_fit[i], T_transition=t_tr[i], reason=f"diverged at step {steps[np.argmin(finite)]:.0f}"
                )
            )
            continue
        v_post, why = pilot_norm(steps, v, pilots[i], t_fit, t_tr, options.pilot_norm)
        predictions.append(predict_run(steps, v[i], t_fit[i], t_tr[i], v_post, options, why))
    mask, note = pool_mask(res, options.regimes)
    return PredictorReport(
        name,
        tuple(predictions),
        tuple(pilots),
        tuple(float(x) for x in np.atleast_1d(g_log)),
        tuple(infos),
        pool_predictions(predictions, mask, options),
        note,
        options,
        contraction.reason,
    )


ANALYSIS = Analysis(
    name="predictor",
    metrics=("norm_sq",),
    options=PredictorOptions,
    run=lambda results, options, needed: predictor_report(results, options),
    tables=lambda report: {"delay_predictor.csv": report.csv()},
    markdown=lambda report: "\n## Delay predictor at T_fit\n\n" + report.markdown(),
)
"""`nht analyze`'s record of the delay predictor (nht_jax.analysis.registry)."""


__all__ = ["ANALYSIS", "PredictorOptions", "predict_run"]
