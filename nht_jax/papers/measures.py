"""Our measured number for a claim of the papers, read from the files a part of `nht paper reproduce` wrote.

Every extractor reads what `nht run` (summary.csv, meta.json) and `nht analyze` (predictions.csv,
delay_fits.csv, delay_predictor.csv, interventions.csv, intervention_fits.csv) already wrote, or the
verify-bounds table (bounds.csv): nothing is recomputed from trajectories but one value read at one step (the
effective logit scale at T_fit, `logit_scale_collapse`). Each factory below returns a function of the claim's
result folders (one per part it names, in order) that gives a `Measurement`, or raises `NotMeasured` with the
reason the number does not exist (a verdict "n.a.", a fit without enough data, a file that is missing): the
scorecard shows that as [--], never as agreement or disagreement.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from nht_jax.experiment import AnalysisConfig
from nht_jax.analysis.predictions import NA, OK
from nht_jax.analysis.bootstrap import interval_text
from nht_jax.analysis.predictor import PredictorOptions
from nht_jax.analysis.tables import fmt
from nht_jax.results.folder import read_summary


class Measurement(NamedTuple):
    """value: what the claim's rule judges (a number, a verdict symbol, or a tuple of numbers / pairs);
    text: what the scorecard shows in the "ours" column."""

    value: object
    text: str


class NotMeasured(Exception):
    """No number to compare: the message says why."""


Measure = Callable[..., Measurement]

PEAK_DECAY_FRACTION = AnalysisConfig().norm_decay_fraction
"""A norm "decays after its peak" when ‖θ‖²_final ≤ (1 − this) · ‖θ‖²_peak: the analysis' default
`norm_decay_fraction` (the one regime_rule = "norm" uses)."""

LAMBDA_RTOL = 1e-6
"""Relative tolerance matching a claim's λ to the weight_decay column of summary.csv (6 significant digits)."""


# ----------------------------------------------------------------------------- reading a part's files


def rows(folder: Path, name: str) -> list[dict]:
    """The rows of FOLDER/NAME (a CSV written by nht run / nht analyze / reproduce), cells parsed."""
    path = Path(folder) / name
    if not path.exists():
        raise NotMeasured(f"{name} missing in {folder}")
    return read_summary(path)


def seed_count(folder: Path) -> int | None:
    """How many distinct seeds a part's runs have: the `seed` column of summary.csv (1 without a seed axis); None
    for a part without summary.csv (verify-bounds: no seeds)."""
    path = Path(folder) / "summary.csv"
    if not path.exists():
        return None
    table = read_summary(path)
    return len({r["seed"] for r in table}) if table and "seed" in table[0] else 1


def prediction_row(folder: Path, pid: str) -> dict:
    for row in rows(folder, "predictions.csv"):
        if row["id"] == pid:
            return row
    raise NotMeasured(f"{pid} not in {folder}/predictions.csv")


def final_step(folder: Path) -> int:
    """The step budget of the part's sweep (meta.json)."""
    path = Path(folder) / "meta.json"
    if not path.exists():
        raise NotMeasured(f"meta.json missing in {folder}")
    return int(json.loads(path.read_text())["steps"])


def number_after(label: str, text: str) -> float:
    """The number following `label =` in a verdict's text ("S = 0.299 [0.187, 0.35] …" → 0.299)."""
    match = re.search(re.escape(label) + r"\s*=\s*(-?\d+(?:\.\d*)?(?:e[-+]?\d+)?)", str(text))
    if match is None:
        raise NotMeasured(f"no '{label} = …' in '{text}'")
    return float(match.group(1))


def at_lambda(folder: Path, lam: float) -> list[dict]:
    """summary.csv rows whose weight_decay equals `lam`."""
    found = [r for r in rows(folder, "summary.csv") if np.isclose(r["weight_decay"], lam, rtol=LAMBDA_RTOL)]
    if not found:
        raise NotMeasured(f"λ = {lam:g} was not run (not in the grid of {Path(folder).name})")
    return found


def finite(values) -> np.ndarray:
    values = np.asarray(values, float)
    return values[np.isfinite(values)]


# ----------------------------------------------------------------------------- the six predictions


def prediction(pid: str) -> Measure:
    """P1–P6 of one part: the verdict symbol (✓ / ✗), shown with the number behind it; "n.a." is not measured.

    Args:
        pid: the prediction's id, "P1" … "P6".

    Returns:
        The Measure: a part's folder → its Measurement.
    """

    def measure(folder: Path) -> Measurement:
        row = prediction_row(folder, pid)
        if row["verdict"] == NA:
            raise NotMeasured(f"n.a.: {row['number']}")
        return Measurement(row["verdict"], f"{row['verdict']} ({row['number']})")

    return measure


def predictions_held(paper_count: int) -> Measure:
    """How many of P1–P6 hold (✓) in one part. A prediction that is n.a. could go either way, so the count is not
    measured while the n.a. ones could still make it equal `paper_count` (the paper's counts have no n.a.)."""

    def measure(folder: Path) -> Measurement:
        table = rows(folder, "predictions.csv")
        undecided = [r["id"] for r in table if r["verdict"] == NA]
        held = [r["id"] for r in table if r["verdict"] == OK]
        if undecided and len(held) <= paper_count <= len(held) + len(undecided):
            raise NotMeasured(
                f"{len(held)}/{len(table)} hold and {', '.join(undecided)} n.a.: the count could still be {paper_count}"
            )
        others = [f"{r['id']} {r['verdict']}" for r in table if r["verdict"] != OK]
        return Measurement(len(held), f"{len(held)}/{len(table)}" + (f" ({', '.join(others)})" if others else ""))

    return measure


def separation_score() -> Measure:
    """The pooled Norm Separation Score S of one part, as P5 reports it (predictions.csv)."""

    def measure(folder: Path) -> Measurement:
        row = prediction_row(folder, "P5")
        s = number_after("S", row["number"])
        return Measurement(s, f"S = {fmt(s)}")

    return measure


def separation_difference() -> Measure:
    """S of the first part minus S of the second (the paper's ordering of the domains)."""

    def measure(first: Path, second: Path) -> Measurement:
        a, b = separation_score()(first).value, separation_score()(second).value
        return Measurement(a - b, f"{fmt(a)} − {fmt(b)} = {fmt(a - b)}")

    return measure


# ----------------------------------------------------------------------------- the delay laws (delay_fits.csv)


def fits_of(folder: Path, kind: str) -> list[dict]:
    """The fits of one kind with numbers (status ok); NotMeasured with the statuses when none has."""
    table = [r for r in rows(folder, "delay_fits.csv") if r["fit"] == kind]
    usable = [r for r in table if r["status"] == "ok"]
    if not usable:
        reasons = sorted({str(r["status"]) for r in table}) or ["no fit of this kind"]
        raise NotMeasured(f"{kind}: {'; '.join(reasons)}")
    return usable


def power_law_exponents(kind: str = "power_law_lambda") -> Measure:
    """ν of every power-law fit delay ∝ λ^(−ν) (kind power_law_eta: ∝ η^(−ν)), one per value of the other varied
    axes, with its R²."""

    def measure(folder: Path) -> Measurement:
        fits = fits_of(folder, kind)
        text = "; ".join(f"ν = {fmt(r['nu'])} (R² {fmt(r['r2'])}, {r['n_runs']} runs, {r['slice']})" for r in fits)
        return Measurement(tuple(float(r["nu"]) for r in fits), text)

    return measure


def power_law_intervals(kind: str = "power_law_lambda") -> Measure:
    """The interval (ν_lo, ν_hi) of every power-law fit of `kind`, shown with ν; NotMeasured while a fit has no
    interval (too few seeds or resamples)."""

    def measure(folder: Path) -> Measurement:
        fits = fits_of(folder, kind)
        bounds = tuple((float(r["nu_lo"]), float(r["nu_hi"])) for r in fits)
        if not all(np.isfinite(b).all() for b in bounds):
            raise NotMeasured(f"{kind}: a fit without an interval")
        text = "; ".join(
            f"ν = {fmt(r['nu'])} [{fmt(r['nu_lo'])}, {fmt(r['nu_hi'])}] ({r['n_runs']} runs, {r['slice']})"
            for r in fits
        )
        return Measurement(bounds, text)

    return measure


def linear_fits(kind: str) -> Measure:
    """(slope, R²) of every fit of `kind` (inverse_lambda, inverse_eta, log_norm_ratio, collapse)."""

    def measure(folder: Path) -> Measurement:
        fits = fits_of(folder, kind)
        text = "; ".join(f"slope {fmt(r['slope'])}, R² {fmt(r['r2'])} ({r['n_runs']} runs, {r['slice']})" for r in fits)
        return Measurement(tuple((float(r["slope"]), float(r["r2"])) for r in fits), text)

    return measure


def predictor_error() -> Measure:
    """The delay predictor's MAPE: the mean absolute percentage error over the runs `nht analyze` pools
    (PredictorOptions.regimes) with a finite error, from delay_predictor.csv."""
    pool = PredictorOptions().regimes

    def measure(folder: Path) -> Measurement:
        table = [r for r in rows(folder, "delay_predictor.csv") if r["regime"] in pool]
        errors = finite([r["ape"] for r in table])
        if not errors.size:
            reasons = sorted({str(r["reason"]) for r in table if isinstance(r.get("reason"), str)})
            raise NotMeasured("no run with a predicted delay" + (f": {'; '.join(reasons)}" if reasons else ""))
        return Measurement(float(errors.mean()), f"MAPE {errors.mean():.0%} over {errors.size} runs")

    return measure


# ----------------------------------------------------------------------------- norm shapes (summary.csv)


def regime_count(regime: str) -> Measure:
    """How many runs of one part have this regime (with all the regime counts as text)."""

    def measure(folder: Path) -> Measurement:
        table = rows(folder, "summary.csv")
        counts = {}
        for r in table:
            counts[r["regime"]] = counts.get(r["regime"], 0) + 1
        text = (
            f"{counts.get(regime, 0)} of {len(table)} runs {regime} ("
            + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            + ")"
        )
        return Measurement(counts.get(regime, 0), text)

    return measure


def share(name: str, select: Callable[[dict], bool], holds: Callable[[dict, int], bool]) -> Measure:
    """The share of the selected runs (summary rows) for which `holds(row, final_step)` is true."""

    def measure(folder: Path) -> Measurement:
        chosen = [r for r in rows(folder, "summary.csv") if select(r)]
        if not chosen:
            raise NotMeasured(f"no run to judge ({name})")
        last = final_step(folder)
        k = sum(bool(holds(r, last)) for r in chosen)
        return Measurement(k / len(chosen), f"{k}/{len(chosen)} {name}")

    return measure


def weak_norm_still_rising() -> Measure:
    """Weak runs whose ‖θ‖² peaks at the last log (still growing at the end of the budget)."""
    return share(
        "weak runs with ‖θ‖² largest at the last log",
        lambda r: r["regime"] == "weak",
        lambda r, last: r["norm_peak_step"] >= last,
    )


def intermediate_norm_decays() -> Measure:
    """Intermediate runs whose final ‖θ‖² is at least PEAK_DECAY_FRACTION below its peak."""
    return share(
        f"intermediate runs with final ‖θ‖² ≤ {1 - PEAK_DECAY_FRACTION:g} × peak",
        lambda r: r["regime"] == "intermediate",
        lambda r, last: r["norm_final"] <= (1 - PEAK_DECAY_FRACTION) * r["norm_peak"],
    )


def norm_grows_after_fit() -> Measure:
    """Runs that fit whose final ‖θ‖² exceeds ‖θ‖² at T_fit."""
    return share(
        "fitting runs with final ‖θ‖² > ‖θ‖² at T_fit",
        lambda r: np.isfinite(r["T_fit"]),
        lambda r, last: r["norm_final"] > r["norm_at_fit"],
    )


# ----------------------------------------------------------------------------- one λ of a sweep (summary.csv)


def grok_rate(lam: float) -> Measure:
    """The share of runs at λ with a transition (T_transition) within the budget."""

    def measure(folder: Path) -> Measurement:
        runs = at_lambda(folder, lam)
        k = int(np.isfinite([r["T_transition"] for r in runs]).sum())
        return Measurement(k / len(runs), f"{k}/{len(runs)} within {final_step(folder):,} steps")

    return measure


def transition_time(lam: float, paper_high: float) -> Measure:
    """The mean T_transition over the runs at λ that transition. When some run has not transitioned and the
    budget ends before `paper_high` (the upper end of the paper's range), the budget cannot tell: not measured."""

    def measure(folder: Path) -> Measurement:
        runs = at_lambda(folder, lam)
        times = finite([r["T_transition"] for r in runs])
        budget = final_step(folder)
        if len(times) < len(runs) and budget < paper_high:
            raise NotMeasured(
                f"{len(times)}/{len(runs)} runs transition within {budget:,} steps, a budget shorter "
                f"than the paper's range (up to {paper_high:,.0f})"
            )
        if not times.size:
            return Measurement(float("inf"), f"no transition within {budget:,} steps")
        spread = f" ({', '.join(f'{t:,.0f}' for t in times)})" if len(times) > 1 else ""
        return Measurement(float(times.mean()), f"{times.mean():,.0f}{spread}, {len(times)}/{len(runs)} runs")

    return measure


def mean_column(lam: float | None, column: str, what: str) -> Measure:
    """The mean of a summary column over the runs at λ (every run when lam is None), finite values only."""

    def measure(folder: Path) -> Measurement:
        runs = at_lambda(folder, lam) if lam is not None else rows(folder, "summary.csv")
        values = finite([r[column] for r in runs])
        if not values.size:
            raise NotMeasured(f"no run has {what}")
        return Measurement(float(values.mean()), f"{values.mean():,.0f} (mean of {values.size} runs)")

    return measure


# ----------------------------------------------------------------------------- the theory (bounds.csv)


def bounds_held() -> Measure:
    """(held, total) of the verify-bounds claims, the failing ones named."""

    def measure(folder: Path) -> Measurement:
        table = rows(folder, "bounds.csv")
        failing = [r["claim"] for r in table if r["ok"] is not True]
        text = f"{len(table) - len(failing)}/{len(table)} hold"
        text += f"; failing: {'; '.join(failing)}" if failing else ""
        return Measurement((len(table) - len(failing), len(table)), text)

    return measure


# ----------------------------------------------------------------------------- the interventions (docs/science.md §9)

TRANSITIONING = ("intermediate", "structured")
"""The regimes whose runs transition (W_c is read from them, as `nht_jax.training.critical` does)."""


def critical_norm_spread() -> Measure:
    """The coefficient of variation (std / mean, population std as `nht_jax.training.critical`) of ‖θ‖ = √V at
    T_transition over the runs that transition, every seed and learning rate of the part pooled."""

    def measure(folder: Path) -> Measurement:
        table = [r for r in rows(folder, "summary.csv") if r["regime"] in TRANSITIONING]
        norms = np.sqrt(finite([r["norm_at_transition"] for r in table]))
        if norms.size < 2:
            raise NotMeasured(f"{norms.size} run(s) transition: a spread needs two")
        cv = float(norms.std() / norms.mean())
        rates = sorted({r["learning_rate"] for r in table})
        return Measurement(
            cv,
            f"CV {cv:.2%} of W_c = {norms.mean():.4g} over {norms.size} runs "
            f"(η ∈ {{{', '.join(f'{x:g}' for x in rates)}}}, every seed)",
        )

    return measure


def ok_fits(folder: Path, axis: str) -> list[dict]:
    """intervention_fits.csv rows of `axis` with status ok; NotMeasured with the statuses when none."""
    table = [r for r in rows(folder, "intervention_fits.csv") if r["axis"] == axis]
    usable = [r for r in table if r["status"] == "ok"]
    if not usable:
        raise NotMeasured(f"{axis}: " + ("; ".join(sorted({str(r["status"]) for r in table})) or "no fit"))
    return usable


def fit_interval(folder: Path, row: dict) -> str:
    """A dose fit's slope interval with its distinct-resample count (nht_jax.analysis.bootstrap.interval_text): its
    seed bootstrap clusters the part's seeds, or its runs when the part has one seed."""
    seeds = seed_count(folder) or 1
    clusters, unit = (seeds, "seeds") if seeds > 1 else (int(row["n_runs"]), "runs")
    return interval_text(float(row["slope_lo"]), float(row["slope_hi"]), clusters, unit, fmt)


def dose_parameter(axis: str, column: str) -> Measure:
    """`column` (slope, r2) of every `axis` dose fit of intervention_fits.csv (one per context), with the others."""

    def measure(folder: Path) -> Measurement:
        fits_ = ok_fits(folder, axis)
        text = "; ".join(
            f"{r['parameter']} = {fmt(r['slope'])} {fit_interval(folder, r)}, "
            f"R² {fmt(r['r2'])} ({r['n_runs']} runs, {r['context']})"
            for r in fits_
        )
        return Measurement(tuple(float(r[column]) for r in fits_), text)

    return measure


def cell_delays(table: list[dict], axes: tuple[str, str], origin: str) -> dict[tuple, float]:
    """{(a, b): exp(mean log T)} over the seeds of each cell of two grid axes, T = T_transition ("start") or
    T_transition − T_fit ("fit"); a cell with a run that does not transition is left out (its centre is unknown)."""
    cells: dict[tuple, list] = {}
    for r in table:
        t = r["T_transition"] - (r["T_fit"] if origin == "fit" else 0.0)
        cells.setdefault((r[axes[0]], r[axes[1]]), []).append(t if np.isfinite(t) and t > 0 else np.nan)
    return {k: float(np.exp(np.mean(np.log(v)))) for k, v in cells.items() if np.all(np.isfinite(v))}


def spans(cells: dict[tuple, float], along: int, values: set | None = None) -> list[float]:
    """max / min of the cell delays along axis `along` (0 or 1), one per value of the other axis whose slice has a
    known delay at every one of `values` (the axis' values in the grid; None: those of `cells`) and ≥ 2 of them:
    a slice with an unknown cell (a run that did not transition) has an unknown range, not a smaller one."""
    values = values if values is not None else {k[along] for k in cells}
    groups: dict = {}
    for key, t in cells.items():
        groups.setdefault(key[1 - along], {})[key[along]] = t
    return [max(v.values()) / min(v.values()) for v in groups.values() if set(v) == values and len(v) >= 2]


def delay_ranges(norm_axis: str, other: str, origin: str, leave_out: float = 0.0) -> Measure:
    """(R_norm, R_other): the delay range (max / min of the seed-centred delays) along `norm_axis` at each value of
    `other`, and along `other` at each value of `norm_axis`, each the geometric mean over the slices whose every
    cell is known (`spans`); runs at norm_axis = `leave_out` (the clamp off) are not part of it."""

    def measure(folder: Path) -> Measurement:
        table = [r for r in rows(folder, "summary.csv") if r[norm_axis] != leave_out]
        cells = cell_delays(table, (norm_axis, other), origin)
        total = len({(r[norm_axis], r[other]) for r in table})
        by_norm = spans(cells, 0, {r[norm_axis] for r in table})
        by_other = spans(cells, 1, {r[other] for r in table})
        if not by_norm or not by_other:
            raise NotMeasured(
                f"{len(cells)} of {total} cells of {norm_axis} × {other} have every run transitioning: "
                f"no complete slice along {norm_axis if not by_norm else other}"
            )
        r_norm, r_other = (float(np.exp(np.mean(np.log(x)))) for x in (by_norm, by_other))
        return Measurement(
            (r_norm, r_other),
            f"{norm_axis}: {r_norm:.3g}×, {other}: {r_other:.3g}× "
            f"(ratio {r_norm / r_other:.3g}; {len(cells)}/{total} cells)",
        )

    return measure


def temperature_slide(norm_axis: str = "clamp_rho") -> Measure:
    """(monotone, R_τ, R_norm) on a norm × temperature grid, delay = T_transition − T_fit centred over seeds:
    whether the delay falls as τ rises at every norm (a smaller effective logit scale, a shorter delay), the range
    of delays along τ at each norm and along the norm at each τ (geometric means over the other axis)."""

    def measure(folder: Path) -> Measurement:
        table = rows(folder, "summary.csv")
        cells = cell_delays(table, (norm_axis, "temperature"), "fit")
        total = len({(r[norm_axis], r["temperature"]) for r in table})
        if len(cells) < total:
            raise NotMeasured(
                f"{total - len(cells)} of {total} cells of {norm_axis} × temperature have a run that "
                f"does not transition: the slide is not known"
            )
        norms = sorted({k[0] for k in cells})
        falling = all(np.all(np.diff([cells[k] for k in sorted(c for c in cells if c[0] == n)]) < 0) for n in norms)
        r_tau, r_norm = (float(np.exp(np.mean(np.log(spans(cells, along))))) for along in (1, 0))
        return Measurement(
            (falling, r_tau, r_norm),
            f"{'falls' if falling else 'does not fall'} as τ rises at every "
            f"{norm_axis}; τ range {r_tau:.3g}×, {norm_axis} range "
            f"{r_norm:.3g}× ({len(cells)} cells)",
        )

    return measure


def logit_scale_collapse() -> Measure:
    """R² of log(T_transition − T_fit) = a + b·log s_eff by least squares over the usable runs (intermediate, a
    positive delay), s_eff = the recorded effective_logit_scale (RMS of z/τ) at each run's T_fit: the share of the
    delay's variance (on the log scale) that the effective logit scale explains."""

    def measure(folder: Path) -> Measurement:
        from nht_jax.results.folder import load_results

        table = rows(folder, "summary.csv")
        res = load_results(folder)
        if "effective_logit_scale" not in res.metrics:
            raise NotMeasured(f"{Path(folder).name} records no effective_logit_scale (its grid lists no temperature)")
        steps = np.asarray(res.steps, float)
        used = [i for i, r in enumerate(table) if r["regime"] == "intermediate" and r["T_transition"] > r["T_fit"]]
        if len(used) < 3:
            counts = {}
            for r in table:
                counts[r["regime"]] = counts.get(r["regime"], 0) + 1
            raise NotMeasured(
                f"{len(used)} of {len(table)} runs transition after their fit ("
                + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                + "): too few for a fit"
            )
        scale = [
            float(res.metrics["effective_logit_scale"][i][np.searchsorted(steps, table[i]["T_fit"])]) for i in used
        ]
        x = np.log(scale)
        y = np.log([table[i]["T_transition"] - table[i]["T_fit"] for i in used])
        slope, intercept = np.polyfit(x, y, 1)
        r2 = float(1 - np.sum((y - (slope * x + intercept)) ** 2) / np.sum((y - y.mean()) ** 2))
        return Measurement(r2, f"R² {r2:.3g}, slope {slope:.3g} over {len(used)}/{len(table)} runs")

    return measure


def injection_slope() -> Measure:
    """b / b_theory of the injection's dose fit T = a + b·log s² (intervention_fits.csv), b_theory = 1/γ_eff."""

    def measure(folder: Path) -> Measurement:
        fits_ = ok_fits(folder, "injection_scale")
        ratios = [float(r["slope"]) / float(r["predicted_slope"]) for r in fits_]
        if not all(np.isfinite(ratios)):
            raise NotMeasured("γ_eff unknown, so no predicted slope")
        text = "; ".join(
            f"b = {fmt(r['slope'])} {fit_interval(folder, r)} against 1/γ_eff = "
            f"{fmt(r['predicted_slope'])}: {q:.2f}× ({r['n_runs']} runs, {r['context']})"
            for r, q in zip(fits_, ratios)
        )
        return Measurement(tuple(ratios), text)

    return measure


def best_speedup(axis: str) -> Measure:
    """The largest speed-up 1/ratio (baseline delay / arm delay, interventions.csv) over the arms of `axis`; an arm
    whose runs all censor counts as no speed-up (its ratio_lower ≥ 1 when it slows, else it is not measured)."""

    def measure(folder: Path) -> Measurement:
        arms = [r for r in rows(folder, "interventions.csv") if r["axis"] == axis]
        if not arms:
            raise NotMeasured(f"no {axis} arm in interventions.csv")
        known = [r for r in arms if np.isfinite(r["ratio"])]
        if not known:
            raise NotMeasured(
                f"no {axis} arm has a ratio (censored: "
                + ", ".join(f"{r['strength']:g} > {fmt(r['ratio_lower'])}×" for r in arms)
                + ")"
            )
        best = min(known, key=lambda r: r["ratio"])
        text = "; ".join(
            f"{r['strength']:g}: {fmt(1 / r['ratio'])}× [{fmt(1 / r['ratio_hi'])}, {fmt(1 / r['ratio_lo'])}]"
            if np.isfinite(r["ratio"])
            else f"{r['strength']:g}: censored"
            for r in arms
        )
        return Measurement(float(1 / best["ratio"]), f"best {fmt(1 / best['ratio'])}× at {best['strength']:g} ({text})")

    return measure


__all__ = ["prediction"]
