"""The forecast at T_fit, scored on seeds its calibration never saw (docs/guides/forecast.md;
docs/findings/forecast.md). The maths is `nht_jax.measure.forecast.first_passage` and
`nht_jax.measure.forecast.heldout`; this module reads a results folder into their arrays (V the decayed parameters'
norm, g from the optimiser's declared contraction: `nht_jax.training.live.folder_runs`) and writes the tables
forecast_tfit_scores.csv (one row per lead fraction) and forecast_tfit_runs.csv (every fitted run, with its
`forecast_status`). It runs when the folder has ≥ 2 seeds and a summary, or with `calibration_folder`.

The split, the scores, the status and the tables' columns: docs/guides/forecast.md."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from nht_jax.analysis.bootstrap import MIN_DISTINCT_RESAMPLES, BootstrapOptions, distinct_resamples, interval_text
from nht_jax.analysis.record import Analysis
from nht_jax.analysis.series import resolve_norm_metric, run_info
from nht_jax.analysis.tables import csv_text, markdown_table
from nht_jax.base.errors import check
from nht_jax.measure.forecast import first_passage, heldout
from nht_jax.config.forecast import ForecastSettings
from nht_jax.results.folder import Results, load_results
from nht_jax.training import live

PAPER_MAPE = 0.177
"""arXiv 2605.18845: MAPE of the calibrated first-passage law on 26 held-out runs (41× delay range)."""
PAPER_UNCALIBRATED = (0.328, 0.374)
GOALS = {"mape": PAPER_MAPE, "coverage": 0.8}
STATUSES = ("transitioned", "anti-grokked", "censored", "missed", "no forecast")


@dataclass(frozen=True)
class TfitOptions(BootstrapOptions, ForecastSettings):
    """Options of the forecast at T_fit (module docstring).

    calibration_seeds: the seeds that calibrate (the others are scored); empty = leave one seed out.
    calibration_folder: a finished results folder of the same task whose transitioned runs (all its seeds)
        calibrate κ, V★ and the interval; every seed of this folder it does not have is scored ("" = none: the
        split is within this folder, `calibration_seeds`).
    leads: lead fractions of the delay at which T̂, the alarm and the AUROC are scored (0 = at T_fit; the first
        lead's row carries the interval's coverage).
    weak_regimes: the negatives (fit, never transition).
    anti_margin, anti_logs: a transitioned run is anti-grokked when its transition metric falls past the threshold
        by anti_margin for anti_logs consecutive logs after T_transition.
    norm_metric: V ("auto": the decayed parameters' norm).
    The forecast's own options (`nht_jax.config.forecast.ForecastSettings`): kappa ("calibrated", "run",
    "fixed"), kappa_fixed, kappa_pool ("all", "cell", "level", "model": κ(λ, η)), v_star_weight, interval,
    min_points, pilot_free_axes.
    regimes, n_bootstrap, confidence, seed (`BootstrapOptions`): the positives and the seed-level bootstrap.
    """

    calibration_seeds: tuple[float, ...] = ()
    calibration_folder: str = ""
    leads: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75)
    weak_regimes: tuple[str, ...] = ("weak",)
    anti_margin: float = 0.1
    anti_logs: int = 3
    norm_metric: str = "auto"

    def __post_init__(self):
        super().__post_init__()
        self.check("forecast_tfit.")
        check(
            len(self.leads) > 0 and all(0 <= f < 1 for f in self.leads),
            f"forecast_tfit.leads must be fractions in [0, 1) of the delay, got {list(self.leads)}",
        )
        check(
            not (self.calibration_folder and self.calibration_seeds),
            "forecast_tfit.calibration_folder and calibration_seeds exclude each other (the folder calibrates)",
        )
        check(
            self.anti_margin >= 0 and self.anti_logs >= 1,
            f"forecast_tfit.anti_margin must be ≥ 0 and anti_logs ≥ 1, got {self.anti_margin}, {self.anti_logs}",
        )


def runs_of(res: Results, options: TfitOptions) -> heldout.Runs:
    """The folder's runs as `heldout.Runs`."""
    runs = live.folder_runs(res, resolve_norm_metric(res, options.norm_metric), options.pilot_free_axes)
    regime = np.array([row["regime"] for row in res.summary])
    ok = np.isfinite(runs.v).all(axis=1) & np.isfinite(runs.t_fit)
    positive = np.isin(regime, options.regimes) & ok & np.isfinite(runs.t_tr) & (runs.t_tr > runs.t_fit)
    negative = np.isin(regime, options.weak_regimes) & ok & np.isnan(runs.t_tr)
    return runs._replace(positive=positive, negative=negative)


@dataclass(frozen=True)
class TfitReport:
    """The scores (one row per lead) and every fitted run's forecast."""

    score_rows: tuple[dict, ...]
    run_rows: tuple[dict, ...]
    split: str
    norm_metric: str
    options: TfitOptions = field(default_factory=TfitOptions)

    def headline(self) -> str:
        r = self.score_rows[0]
        goal = (
            np.isfinite(r["mape"])
            and r["mape"] <= GOALS["mape"]
            and np.isfinite(r["coverage"])
            and r["coverage"] >= GOALS["coverage"]
        )
        shown = interval_text(r["mape_lo"], r["mape_hi"], r["mape_seeds"], "seeds", pct)  # n.a. on too few seeds
        return (
            f"MAPE at T_fit {pct(r['mape'])} {shown} over {r['n_forecast']} "
            f"of {r['n_positive']} held-out runs, coverage of the {self.options.interval:.0%} interval "
            f"{num(r['coverage'])} (goal: MAPE ≤ {PAPER_MAPE:.1%} with coverage ≥ {GOALS['coverage']:g}: "
            f"{'met' if goal else 'not met'}; {self.split})"
        )

    def summary_line(self) -> str:
        counts = {s: sum(r["forecast_status"] == s for r in self.run_rows) for s in STATUSES}
        shown = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        return f"Forecast at T_fit (κ {self.options.kappa}), held out by seed: {self.headline()}; status: {shown}."

    def markdown(self) -> str:
        o = self.options
        head = (
            f"T̂ = T_fit + log(V_mem / V★) / (κ·g), g = −log(1 − γ_eff) ≈ 2ηλ, V = {self.norm_metric}; κ "
            f"{o.kappa} ({kappa_text(o)}), V★ from the calibration runs' V at T_transition. "
            f"Split: {self.split}. MAPE with a {o.confidence:.0%} seed-level bootstrap interval; coverage of the "
            f"{o.interval:.0%} interval (split-conformal, from the calibration's own leave-one-seed-out "
            f"errors); at each lead fraction f of the delay the alarm T̂ ≤ budget (hit rate over positives, "
            f"false-alarm rate over the {'/'.join(o.weak_regimes)} runs) and the AUROC of budget / T̂. The "
            f"anchor (arXiv 2605.18845): MAPE {PAPER_MAPE:.1%} on 26 held-out runs, uncalibrated "
            f"{PAPER_UNCALIBRATED[0]:.1%}–{PAPER_UNCALIBRATED[1]:.1%}.\n\n"
        )
        shown = [
            "run",
            "seed",
            "weight_decay",
            "regime",
            "forecast_status",
            "t_forecast",
            "T_hat",
            "T_lo",
            "T_hi",
            "T_transition",
            "ape",
            "kappa",
            "kappa_run",
            "V_mem",
            "V_star",
            "T_hat_at_budget",
        ]
        return (
            head
            + markdown_table(list(self.score_rows), None)
            + "\n"
            + self.summary_line()
            + "\n\n"
            + markdown_table(
                list(self.run_rows), [c for c in shown if c in (self.run_rows[0] if self.run_rows else {})]
            )
            + "\n"
        )


def kappa_text(o: TfitOptions) -> str:
    if o.kappa_pool == "model":
        return "κ(λ, η) = e^a·λ^b·η^c fitted on the calibration runs, seed-bootstrap interval in kappa_lo, kappa_hi"
    return f"pooled over {o.kappa_pool}"


def pct(v: float) -> str:
    return "–" if not np.isfinite(v) else f"{v:.1%}"


def num(v: float) -> str:
    return "–" if not np.isfinite(v) else f"{v:.2f}"


def split_text(seeds, calibration_seeds, folder: str = "") -> str:
    levels = sorted({float(s) for s in np.asarray(seeds).ravel()})
    names = ", ".join(f"{s:g}" for s in levels)
    if folder:
        cal = sorted(float(s) for s in calibration_seeds)
        return (
            f"calibration {folder} (seeds {', '.join(f'{s:g}' for s in cal)}), scored seeds "
            f"{', '.join(f'{s:g}' for s in levels if s not in cal)}"
        )
    if not calibration_seeds:
        return f"leave one seed out over seeds {names} (each seed scored with the others calibrating)"
    cal = sorted(float(s) for s in calibration_seeds)
    return (
        f"calibration seeds {', '.join(f'{s:g}' for s in cal)}, scored seeds "
        f"{', '.join(f'{s:g}' for s in levels if s not in cal)}"
    )


def score_rows(runs: heldout.Runs, scored: list[heldout.Scored], options: TfitOptions, split: str) -> list[dict]:
    """One row per lead (module docstring).

    Args:
        runs: the grid's runs.
        scored: their held-out forecasts.
        options: the T_fit-forecast options (the leads).
        split: the calibration split's description, named in every row.

    Returns:
        The rows.
    """
    budget = float(runs.steps[-1])
    pos = [s for s in scored if s.role == "positive"]
    neg = [s for s in scored if s.role == "negative"]
    rows = []
    for k, lead in enumerate(options.leads):

        def t_hat(s):
            return s.at_leads[k]

        made = [s for s in pos if np.isfinite(t_hat(s))]
        ape = np.array([abs(t_hat(s) - runs.t_tr[s.run]) / runs.t_tr[s.run] for s in made])
        seeds = len({s.seed for s in made})
        lo, hi = heldout.seed_bootstrap(
            ape, [s.seed for s in made], options.n_bootstrap, options.confidence, options.seed
        )
        if distinct_resamples(seeds) < MIN_DISTINCT_RESAMPLES:  # an artefact of a handful of resamples: none
            lo, hi = math.nan, math.nan
        covered = [s.T_lo <= runs.t_tr[s.run] <= s.T_hi for s in made if np.isfinite(s.T_lo)] if k == 0 else []

        def score(s):
            t = t_hat(s)
            return budget / t if np.isfinite(t) and t > 0 else 0.0

        def alarm(s):
            return bool(np.isfinite(t_hat(s)) and t_hat(s) <= budget)

        rows.append(
            {
                "lead": lead,
                "n_positive": len(pos),
                "n_forecast": len(made),
                "mape": float(ape.mean()) if ape.size else math.nan,
                "mape_lo": lo,
                "mape_hi": hi,
                "mape_seeds": seeds,
                "distinct_resamples": distinct_resamples(seeds),
                "median_ape": float(np.median(ape)) if ape.size else math.nan,
                "coverage": float(np.mean(covered)) if covered else math.nan,
                "n_covered_of": len(covered),
                "n_negative": len(neg),
                "auroc": heldout.auroc([score(s) for s in pos], [score(s) for s in neg]),
                "hit_rate": float(np.mean([alarm(s) for s in pos])) if pos else math.nan,
                "false_alarm_rate": float(np.mean([alarm(s) for s in neg])) if neg else math.nan,
                "kappa": options.kappa,
                "split": split,
            }
        )
    return rows


def run_rows(res: Results, runs: heldout.Runs, scored: list[heldout.Scored], options: TfitOptions) -> list[dict]:
    """Every fitted run (module docstring)."""
    rule = res.config.analysis
    metric = res.metrics.get(rule.transition_metric)
    out = []
    for s in scored:
        i, f = s.run, s.forecast
        mine = np.asarray(metric[i], np.float64) if metric is not None else None
        k = first_passage.realised_kappa(
            runs.steps, runs.v[i], runs.t_fit[i], float(runs.steps[-1]), runs.g[i], options.min_points, options.interval
        )
        t = runs.t_tr[i]
        out.append(
            {
                **run_info(res, i),
                "seed": s.seed,
                "role": s.role,
                "forecast_status": heldout.status(
                    runs,
                    i,
                    s,
                    mine,
                    rule.transition_threshold,
                    rule.transition_direction,
                    options.anti_margin,
                    options.anti_logs,
                ),
                "calibration_seeds": " ".join(f"{c:g}" for c in s.calibration_seeds),
                "t_forecast": f.t,
                "T_hat": f.T_hat,
                "T_lo": s.T_lo,
                "T_hi": s.T_hi,
                "T_fit": runs.t_fit[i],
                "T_transition": t,
                "ape": abs(f.T_hat - t) / t if np.isfinite(f.T_hat) and np.isfinite(t) else math.nan,
                "kappa": f.kappa,
                "kappa_lo": f.kappa_lo,
                "kappa_hi": f.kappa_hi,
                "kappa_source": f.kappa_source,
                "V_mem": f.v_now,
                "V_star": f.v_star,
                "g": float(runs.g[i]),
                "kappa_run": k.kappa,
                "kappa_run_lo": k.lo,
                "kappa_run_hi": k.hi,
                "T_hat_at_budget": s.at_budget.T_hat,
                "reason": f.reason,
            }
        )
    return out


def calibration_of(folder: str, options: TfitOptions) -> heldout.Calibration:
    """The calibration of another finished folder (`calibration_folder`): its transitioned runs, every seed, V its
    `norm_metric`, the interval's bounds from its own leave-one-seed-out errors (ConfigError, one line, when it is
    not a finished results folder)."""
    other = load_results(folder)
    runs = live.folder_runs(other, resolve_norm_metric(other, options.norm_metric), options.pilot_free_axes)
    return heldout.calibrate(runs, tuple(sorted({float(s) for s in runs.seed})), options)


def tfit_report(res: Results, options: TfitOptions = TfitOptions()) -> TfitReport | None:
    """The held-out forecast at T_fit of a loaded results folder; None without a summary, with fewer than two
    seeds (without `calibration_folder`), or without a positive; with `calibration_folder`, None when it has
    every seed of this folder.

    Args:
        res: the results.
        options: the T_fit-forecast options.

    Returns:
        The TfitReport, or None.
    """
    folder = options.calibration_folder
    if not res.summary or (not folder and ("seed" not in res.hparams or np.unique(res.hparams["seed"]).size < 2)):
        return None
    runs = runs_of(res, options)
    if not runs.positive.any():
        return None
    prior = calibration_of(folder, options) if folder else None
    if prior is not None and not set(runs.seed.tolist()) - set(prior.seeds):
        return None
    scored = heldout.heldout(runs, options, options.calibration_seeds, options.leads, prior)
    split = split_text(runs.seed, prior.seeds if prior is not None else options.calibration_seeds, folder)
    return TfitReport(
        tuple(score_rows(runs, scored, options, split)),
        tuple(run_rows(res, runs, scored, options)),
        split,
        resolve_norm_metric(res, options.norm_metric),
        options,
    )


ANALYSIS = Analysis(
    name="forecast_tfit",
    metrics=("norm_sq",),
    options=TfitOptions,
    run=lambda results, options, needed: tfit_report(results, options),
    tables=lambda report: {
        "forecast_tfit_scores.csv": csv_text(list(report.score_rows)),
        "forecast_tfit_runs.csv": csv_text(list(report.run_rows)),
    },
    markdown=lambda report: "\n## The forecast at T_fit, held out by seed\n\n" + report.markdown(),
    summary=lambda report: report.summary_line(),
)
"""`nht analyze`'s record of the held-out forecast at T_fit (nht_jax.analysis.registry)."""


__all__ = ["TfitOptions", "score_rows", "tfit_report"]
