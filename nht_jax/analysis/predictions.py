"""The paper's six predictions (docs/science.md §3) on one results directory: each ✓ / ✗ / n.a., the number behind the
verdict and the rule used. The paper states no rule for any verdict; these are ours, every threshold in
`PredictionOptions`, and the rules are printed next to the verdicts.

P1 norm ordering, P2 three regimes in λ, P3 robustness ordering, P4 layer hierarchy, P5 clean norm separation,
P6 delay scaling T ∝ 1/λ, each read from the other analyses (`nht_jax.analysis.fits`, `layers`, `separation`).
Every verdict is also recomputed under alternative definitions (`nht_jax.analysis.sensitivity`), and one that
flips is marked fragile. `nht analyze` writes predictions.csv from it.

Each prediction's number, rule and n.a. case, and the threshold sensitivity: docs/methods/analysis.md, "The six
predictions"; the report's reading: docs/guides/analyse.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from nht_jax.base.errors import check
from nht_jax.analysis import sensitivity
from nht_jax.analysis.bootstrap import interval_text
from nht_jax.analysis.record import Analysis
from nht_jax.analysis.tables import csv_text, fmt
from nht_jax.results.folder import Results

OK, FAIL, NA = "✓", "✗", "n.a."
PAPER_VERDICTS = "modular arithmetic 6/6, CIFAR-10 borders 5/6 (P6 fails), CelebA 4/6, Waterbirds 2/6"


@dataclass(frozen=True)
class PredictionOptions:
    """The thresholds of the verdicts (module docstring)."""

    norm_order_share: float = 0.75
    robustness_margin: float = 0.0
    head_first_share: float = 0.5
    separation_min: float = 0.5
    delay_r2_min: float = 0.8
    nu_tolerance: float = 0.25
    alternatives: tuple[str, ...] = ("auto",)

    def __post_init__(self):
        for text in self.alternatives:
            if text != "auto":
                sensitivity.parse_alternative(text)
        for name in ("norm_order_share", "head_first_share"):
            check(0 <= getattr(self, name) <= 1, f"predictions.{name} must lie in [0, 1], got {getattr(self, name)}")
        check(self.delay_r2_min <= 1, f"predictions.delay_r2_min must be ≤ 1, got {self.delay_r2_min}")
        check(self.nu_tolerance >= 0, f"predictions.nu_tolerance must be ≥ 0, got {self.nu_tolerance}")


class Verdict(NamedTuple):
    id: str
    prediction: str
    verdict: str
    number: str
    rule: str
    sensitivity: str = ""
    fragile: bool = False


def median_or_nan(values: np.ndarray) -> float:
    """`np.nanmedian` without its warning when every value is NaN (every run diverged): NaN then."""
    kept = values[~np.isnan(values)]
    return float(np.median(kept)) if kept.size else float("nan")


def norm_ordering(table, rows: list[dict], options: PredictionOptions) -> Verdict:
    """P1 from the fits' run table (V_fit, V_post per run) and the summary rows (final norms)."""
    keep = (table.regime == "intermediate") & np.isfinite(table.v_fit) & np.isfinite(table.v_post)
    lams = np.array([r["weight_decay"] for r in rows])
    finals = np.array([r["norm_final"] for r in rows], float)
    extremes = ""
    if len(np.unique(lams)) > 1:
        low, high = (median_or_nan(finals[lams == lams.min()]), median_or_nan(finals[lams == lams.max()]))
        extremes = f"; final ‖θ‖² at λ = {lams.min():g}: {fmt(low)}, at λ = {lams.max():g}: {fmt(high)}"
    rule = f"✓ when V_fit > V_post in ≥ {options.norm_order_share:.0%} of intermediate runs"
    if not keep.any():
        return Verdict(
            "P1", "norm ordering V_sc > V_st", NA, "no intermediate run with V_fit and V_post" + extremes, rule
        )
    drop = table.v_fit[keep] > table.v_post[keep]
    share = float(drop.mean())
    number = (
        f"V_fit > V_post in {int(drop.sum())}/{int(keep.sum())} runs; median V_fit/V_post "
        f"{fmt(float(np.median(table.v_fit[keep] / table.v_post[keep])))}" + extremes
    )
    return Verdict("P1", "norm ordering V_sc > V_st", OK if share >= options.norm_order_share else FAIL, number, rule)


def three_regimes(rows: list[dict], boundaries) -> Verdict:
    """P2 from the summary rows' regimes and the λ boundaries."""
    rule = "✓ when weak, intermediate (or structured) and strong all occur, ordered in median λ"
    n_lambdas = len({r["weight_decay"] for r in rows})
    if n_lambdas < 3:
        return Verdict("P2", "three regimes in λ", NA, f"λ takes {n_lambdas} value(s) in this grid", rule)
    groups = {"weak": ("weak",), "intermediate": ("intermediate", "structured"), "strong": ("strong",)}
    log_lams = {
        name: [np.log(r["weight_decay"]) for r in rows if r["regime"] in members and r["weight_decay"] > 0]
        for name, members in groups.items()
    }
    counts = ", ".join(f"{name} {sum(r['regime'] in members for r in rows)}" for name, members in groups.items())
    found = ", ".join(
        f"{b.transition} {b.value:.3g} [{fmt(b.ci[0])}, {fmt(b.ci[1])}]"
        + (f" ({', '.join(f'{a}={v:g}' for a, v in b.slice)})" if b.slice else "")
        for b in boundaries
        if b.axis == "weight_decay" and b.ok
    )
    number = counts + (f"; boundaries: {found}" if found else "; no boundary in range")
    present = all(log_lams.values())
    medians = [np.median(v) for v in log_lams.values()] if present else []
    ordered = present and medians[0] < medians[1] < medians[2]
    return Verdict("P2", "three regimes in λ", OK if ordered else FAIL, number, rule)


def robustness_ordering(rows: list[dict], metric: str | None, options: PredictionOptions) -> Verdict:
    """P3: the final robustness metric's median per regime (metric None: the domain has no accuracy-type one)."""
    rule = (
        f"✓ when the median final accuracy of intermediate runs exceeds that of weak and of strong runs by more "
        f"than {options.robustness_margin:g}"
    )
    if metric is None:
        return Verdict("P3", "robustness ordering", NA, "no accuracy-type metric in this domain", rule)
    column = f"final_{metric}"
    by_regime = {
        r: [row[column] for row in rows if row["regime"] == r and np.isfinite(row.get(column, np.nan))]
        for r in ("weak", "intermediate", "strong")
    }
    medians = {r: float(np.median(v)) for r, v in by_regime.items() if v}
    number = "; ".join(f"{r} {fmt(m)} (n = {len(by_regime[r])})" for r, m in medians.items()) or "no values"
    others = [m for r, m in medians.items() if r != "intermediate"]
    if "intermediate" not in medians or not others:
        return Verdict("P3", f"robustness ordering ({metric})", NA, number, rule)
    best = all(medians["intermediate"] - m > options.robustness_margin for m in others)
    return Verdict("P3", f"robustness ordering ({metric})", OK if best else FAIL, number, rule)


def layer_hierarchy(layer_report, options: PredictionOptions) -> Verdict:
    """P4 from `nht_jax.analysis.layers.layer_report`."""
    rule = (
        f"✓ when the head peaks and contracts first in > {options.head_first_share:.0%} of determined runs "
        f"and the median peak margin > 0"
    )
    p = layer_report.pooled
    if p.n_determined == 0:
        return Verdict("P4", "layer hierarchy (head first)", NA, f"no determined run ({layer_report.pool_note})", rule)
    number = (
        f"head first in {p.n_head_first}/{p.n_determined} runs ({p.n_tied} more tied at log resolution); "
        f"median peak margin {fmt(p.peak_margin.median)} steps "
        f"{interval_text(p.peak_margin.lo, p.peak_margin.hi, p.n_determined, 'runs', fmt)}"
    )
    holds = p.fraction_head_first > options.head_first_share and p.peak_margin.median > 0
    return Verdict("P4", "layer hierarchy (head first)", OK if holds else FAIL, number, rule)


def clean_separation(separation_report, options: PredictionOptions) -> Verdict:
    """P5 from `nht_jax.analysis.separation.separation_report`."""
    rule = f"✓ when the pooled Norm Separation Score S ≥ {options.separation_min:g} (our definition of S)"
    p = separation_report.pooled if separation_report is not None else None
    if p is None or not np.isfinite(p.median):
        return Verdict("P5", "clean norm separation", NA, "S undefined (no run with a norm peak and a φ switch)", rule)
    number = f"S = {fmt(p.median)} {interval_text(p.lo, p.hi, p.n, 'runs', fmt)} over {p.n} runs"
    return Verdict("P5", "clean norm separation", OK if p.median >= options.separation_min else FAIL, number, rule)


def unit(fit) -> str:
    """What a fit's bootstrap resampled: seeds, or runs when it had one seed."""
    return "seeds" if fit.resampled == "seeds" else "runs"


def delay_scaling(power_fits, options: PredictionOptions) -> Verdict:
    """P6 from the power-law fits delay ∝ λ^(−ν) (`nht_jax.analysis.fits`, kind "power_law_lambda")."""
    rule = f"✓ when every power-law fit has R² ≥ {options.delay_r2_min:g} and |ν − 1| ≤ {options.nu_tolerance:g}"
    usable = [f for f in power_fits if f.ok]
    if not usable:
        return Verdict("P6", "delay scaling T ∝ 1/λ", NA, "no power-law fit with ≥ 3 intermediate runs", rule)

    def consistent(f) -> bool:
        return bool(abs(f.nu - 1) <= options.nu_tolerance and f.r2 >= options.delay_r2_min)

    number = "; ".join(
        f"ν = {fmt(f.nu)} {interval_text(*f.nu_ci, f.clusters, unit(f), fmt)}, R² = {fmt(f.r2)}, "
        f"{len(f.runs)} runs" + (f" ({', '.join(f'{a}={v:g}' for a, v in f.slice)})" if f.slice else "")
        for f in usable
    )
    return Verdict("P6", "delay scaling T ∝ 1/λ", OK if all(map(consistent, usable)) else FAIL, number, rule)


def shown(v: Verdict) -> str:
    """The verdict as the table shows it: "✓", or "✓ fragile" when an alternative definition flips it."""
    return f"{v.verdict} fragile" if v.fragile else v.verdict


def markdown(verdicts: list[Verdict]) -> str:
    """The verdicts as a Markdown table, and how many checkable predictions hold.

    Args:
        verdicts: the verdicts.

    Returns:
        The Markdown.
    """
    lines = ["| | prediction | verdict | measured | rule | under other definitions |", "|---|---|---|---|---|---|"]
    lines += [
        f"| {v.id} | {v.prediction} | {shown(v)} | {v.number} | {v.rule} | {v.sensitivity or '–'} |" for v in verdicts
    ]
    held = sum(v.verdict == OK for v in verdicts)
    checked = sum(v.verdict != NA for v in verdicts)
    return "\n".join(lines) + f"\n\n{held}/{checked} checkable predictions hold here. Paper: {PAPER_VERDICTS}.\n"


def robustness_metric(res: Results) -> str | None:
    """P3's metric: worst-group accuracy where the domain records it, else its headline metric when that is an
    accuracy; None otherwise (the toy domains)."""
    if "worst_group_acc" in res.metrics:
        return "worst_group_acc"
    headline = res.domain.headline_metric
    return headline if headline.endswith("_acc") else None


def verdicts(res: Results, options: PredictionOptions, needed: dict) -> list[Verdict]:
    """P1–P6, each with its verdict under the alternative definitions (module docstring).

    Args:
        res: the results.
        options: the prediction options.
        needed: the reports of the fits, the separation score and the layer order, by name.

    Returns:
        The Verdicts.
    """
    found = plain_verdicts(res, options, needed)
    alternatives = alternatives_of(res, options)
    if not alternatives:
        return found
    under = {
        alt: plain_verdicts(other := sensitivity.alternative_results(res, alt), options, needed_again(other, needed))
        for alt in alternatives
    }
    return [
        v._replace(
            sensitivity="; ".join(f"{alt}: {under[alt][i].verdict}" for alt in alternatives),
            fragile=sensitivity.flips(v.verdict, [under[alt][i].verdict for alt in alternatives], OK, FAIL),
        )
        for i, v in enumerate(found)
    ]


def alternatives_of(res: Results, options: PredictionOptions) -> tuple[str, ...]:
    """The alternative definitions to try: "auto" expanded for this sweep's [analysis] (each once)."""
    texts = []
    for text in options.alternatives:
        texts += sensitivity.default_alternatives(res.config.analysis) if text == "auto" else [text]
    return tuple(dict.fromkeys(texts))


def needed_again(res: Results, needed: dict) -> dict:
    """The fits, separation and layer reports recomputed on `res` (an alternative summary) with the options the
    default reports used, without bootstrap (the verdicts read point values)."""
    from nht_jax.analysis import fits, layers, separation

    def again(report, compute):
        return None if report is None else compute(res, sensitivity.without_bootstrap(report.options))

    return {
        "fits": fits.fit_report(res, sensitivity.without_bootstrap(needed["fits"]["options"])),
        "separation": again(needed["separation"], separation.separation_report),
        "layers": again(needed["layers"], layers.layer_report),
    }


NORM_PREDICTIONS = ("P1", "P5")
"""The predictions read from ‖θ‖²: not applicable, saying why, where the results hold it as not logged."""


def plain_verdicts(res: Results, options: PredictionOptions, needed: dict) -> list[Verdict]:
    """P1–P6 under this sweep's own definitions (P1 and P5 n.a. without a logged ‖θ‖², `without_norm`)."""
    fit = needed["fits"]
    power = [f for f in fit["delay_fits"] if f.kind == "power_law_lambda"]
    return without_norm(
        res,
        [
            norm_ordering(fit["table"], res.summary, options),
            three_regimes(res.summary, fit["boundaries"]),
            robustness_ordering(res.summary, robustness_metric(res), options),
            layer_hierarchy(needed["layers"], options),
            clean_separation(needed["separation"], options),
            delay_scaling(power, options),
        ],
    )


def without_norm(res: Results, found: list[Verdict]) -> list[Verdict]:
    """`found` with the predictions read from ‖θ‖² (NORM_PREDICTIONS) n.a. where ‖θ‖² was not logged."""
    if "norm_sq" not in res.not_logged:
        return found
    return [
        v._replace(verdict=NA, number="needs ‖θ‖² (norm_sq), which these results do not hold (not logged)")
        if v.id in NORM_PREDICTIONS
        else v
        for v in found
    ]


def section(found: list[Verdict]) -> str:
    """The verdicts' section of analysis.md (and of what `nht analyze` prints)."""
    return (
        "## The six predictions (docs/science.md §3; rules are ours: nht_jax/analysis/predictions.py)\n\n"
        + markdown(found)
    )


ANALYSIS = Analysis(
    name="predictions",
    options=PredictionOptions,
    run=verdicts,
    needs=("fits", "separation", "layers"),
    tables=lambda report: {"predictions.csv": csv_text([v._asdict() for v in report])},
    markdown=section,
    summary=section,
)
"""`nht analyze`'s record of the six predictions: first in analysis.md and in what the command prints."""


__all__ = ["ANALYSIS", "PredictionOptions", "markdown", "verdicts"]
