"""`nht analyze DIR`: everything a sweep is run for, on any results directory of any domain.

Runs, in order: the delay-law fits and regime boundaries (nht_jax.analysis.fits), the Norm Separation Score
(separation), the layer order (layers), the delay predictor at T_fit (predictor) and the six predictions
(predictions), and, when the grid varies the width (a static axis), the emergence conjecture (emergence), each
with its options (`AnalyzeOptions`, set with `--set fits.n_bootstrap=200` and so on).
Writes into DIR, atomically, beside the sweep's own figures:

    analysis.md            the whole report: predictions, fits, boundaries, score, layer order, predictor
    predictions.csv        P1–P6: verdict, measured number, rule
    delay_fits.csv, boundaries.csv, separation.csv, layer_order.csv, delay_predictor.csv   one row per fit/run
    structure.csv          T_transition against T_structure per run, when the Fourier metrics were recorded
    emergence.csv, emergence.png   with a varied width only: V_sc/V_st, delay and N* per (λ, width); the figure
                           draws the ratio and the delay against width per λ and N* against λ
    phase_boundaries.png   the phase diagram with the estimated boundaries and their intervals
    delay_fits.png         delay against 1/λ (per value of the other axes) and the collapse delay·γ_eff
                           against log(V_fit/V_post), with the fitted lines
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nht_jax.base.atomic import atomic_write_text
from nht_jax.base.schema import apply_overrides, build, unknown_key
from nht_jax.domains import fourier
from nht_jax.analysis import emergence
from nht_jax.figures import folder
from nht_jax.analysis import fits
from nht_jax.analysis import layers
from nht_jax.analysis import predictions
from nht_jax.analysis import predictor
from nht_jax.analysis import separation
from nht_jax.figures.style import plt, save
from nht_jax.analysis.tables import csv_text, markdown_table
from nht_jax.run import lock
from nht_jax.run.results import Results, load_results


@dataclass(frozen=True)
class StructureOptions:
    """When the runs recorded the modular Fourier metrics (task.fourier_metrics): T_structure = first logged step
    with fourier_concentration ≥ concentration_min and fourier_sum_energy ≥ sum_energy_min
    (nht_jax.domains.fourier, where the defaults are argued), against T_transition of the summary."""

    concentration_min: float = fourier.STRUCTURE_THRESHOLD
    sum_energy_min: float = fourier.SUM_ENERGY_THRESHOLD


@dataclass(frozen=True)
class AnalyzeOptions:
    fits: fits.FitOptions = field(default_factory=fits.FitOptions)
    separation: separation.SeparationOptions = field(default_factory=separation.SeparationOptions)
    layers: layers.LayerOptions = field(default_factory=layers.LayerOptions)
    predictor: predictor.PredictorOptions = field(default_factory=predictor.PredictorOptions)
    predictions: predictions.PredictionOptions = field(default_factory=predictions.PredictionOptions)
    structure: StructureOptions = field(default_factory=StructureOptions)
    emergence: emergence.EmergenceOptions = field(default_factory=emergence.EmergenceOptions)


SECTIONS = {"fits": fits.FitOptions, "separation": separation.SeparationOptions, "layers": layers.LayerOptions,
            "predictor": predictor.PredictorOptions, "predictions": predictions.PredictionOptions,
            "structure": StructureOptions, "emergence": emergence.EmergenceOptions}


def options_from(overrides=()) -> AnalyzeOptions:
    """AnalyzeOptions from `section.key=value` strings (sections: fits, separation, layers, predictor,
    predictions, structure, emergence); unknown keys and bad values raise ConfigError with the known ones."""
    tables = apply_overrides({s: {} for s in SECTIONS}, list(overrides), tuple(SECTIONS))
    for section in tables:
        if section not in SECTIONS:
            raise unknown_key("", section, SECTIONS)
    return AnalyzeOptions(**{s: build(cls, tables[s], s) for s, cls in SECTIONS.items()})


def robustness_metric(res: Results) -> str | None:
    """P3's metric: worst-group accuracy where the domain records it, else its headline metric when that is an
    accuracy; None otherwise (the toy domains)."""
    if "worst_group_acc" in res.metrics:
        return "worst_group_acc"
    headline = res.domain.headline_metric
    return headline if headline.endswith("_acc") else None


def analyze(path, options: AnalyzeOptions = AnalyzeOptions()) -> dict:
    """Every analysis of the results directory `path`, written into it under its lock (nht_jax.run.lock);
    returns the parts and the Markdown."""
    lock.raise_if_held(path, "nht analyze")
    res = load_results(path)
    with lock.hold(res.path, "nht analyze"):
        return write_analysis(res, options)


def write_analysis(res: Results, options: AnalyzeOptions) -> dict:
    fit = fits.fit_report(res, options.fits)
    sep = separation.separation_report(res, options.separation)
    lay = layers.layer_report(res, options.layers)
    pre = predictor.predictor_report(res, options.predictor)
    power = [f for f in fit["delay_fits"] if f.kind == "power_law_lambda"]
    verdicts = [
        predictions.norm_ordering(fit["table"], res.summary, options.predictions),
        predictions.three_regimes(res.summary, fit["boundaries"]),
        predictions.robustness_ordering(res.summary, robustness_metric(res), options.predictions),
        predictions.layer_hierarchy(lay, options.predictions),
        predictions.clean_separation(sep, options.predictions),
        predictions.delay_scaling(power, options.predictions),
    ]
    structure = structure_rows(res, options.structure)
    emerge = emergence.emergence_report(res, options.emergence) if emergence.applies(res, options.emergence) else None
    text = "\n".join([
        f"# Analysis of {res.config.name} ({res.num_runs} runs, domain {res.domain.name})\n",
        "## The six predictions (PAPER.md §3; rules are ours: nht_jax/analysis/predictions.py)\n",
        predictions.markdown(verdicts),
        fits.report_markdown(fit),
        "\n## Norm Separation Score\n", sep.markdown(),
        "\n## Layer order\n", lay.markdown(),
        "\n## Delay predictor at T_fit\n", pre.markdown(),
        *(["\n## Structure against accuracy (Fourier metrics)\n", structure_markdown(structure, options.structure)]
          if structure else []),
        *(["\n## The emergence conjecture (PAPER.md §8)\n", emerge.markdown()] if emerge else []),
    ])
    out = res.path
    atomic_write_text(out / "analysis.md", text)
    atomic_write_text(out / "predictions.csv", csv_text([v._asdict() for v in verdicts]))
    atomic_write_text(out / "delay_fits.csv", csv_text([f.as_row() for f in fit["delay_fits"]]))
    atomic_write_text(out / "boundaries.csv", csv_text([b.as_row() for b in fit["boundaries"]]))
    atomic_write_text(out / "separation.csv", sep.csv())
    atomic_write_text(out / "layer_order.csv", lay.csv())
    atomic_write_text(out / "delay_predictor.csv", pre.csv())
    if structure:
        atomic_write_text(out / "structure.csv", csv_text(structure))
    if emerge:
        atomic_write_text(out / "emergence.csv", emerge.csv())
        emergence.draw_emergence(emerge, out / "emergence.png", f"{res.config.name}: emergence (width × λ)")
    folder.draw_phase_diagram(res, out / "phase_boundaries.png", fit["boundaries"])
    draw_delay_fits(res, fit, out / "delay_fits.png")
    return {"results": res, "fits": fit, "separation": sep, "layers": lay, "predictor": pre, "predictions": verdicts,
            "emergence": emerge, "markdown": text}


def structure_rows(res: Results, options: StructureOptions) -> list[dict]:
    """Per run: T_transition (the summary's) against T_structure; [] when the Fourier metrics were not recorded."""
    if "fourier_concentration" not in res.metrics:
        return []
    times = fourier.structure_transition_times(res.steps, res.metrics, options.concentration_min,
                                               options.sum_energy_min)
    return [{"run": row["run"], "weight_decay": row["weight_decay"], "seed": row["seed"], "regime": row["regime"],
             "T_transition": row["T_transition"], "T_structure": float(t),
             "structure_lead": row["T_transition"] - float(t)}
            for row, t in zip(res.summary, times["T_structure"])]


def structure_markdown(rows: list[dict], options: StructureOptions) -> str:
    both = [r for r in rows if np.isfinite(r["structure_lead"])]
    lead = f"median lead {np.median([r['structure_lead'] for r in both]):.0f} steps over {len(both)} runs" if both \
        else "no run has both times"
    return (f"T_structure: fourier_concentration ≥ {options.concentration_min:g} and fourier_sum_energy ≥ "
            f"{options.sum_energy_min:g}; structure_lead = T_transition − T_structure ({lead}).\n\n"
            + markdown_table(rows))


def draw_delay_fits(res: Results, fit: dict, path: Path) -> None:
    """Left: delay against 1/λ for every usable run, one colour per slice, with its fitted line. Right: the
    collapse delay·γ_eff against log(V_fit/V_post) with the pooled fit and the prediction slope 1."""
    table = fit["table"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    inverse = [f for f in fit["delay_fits"] if f.kind == "inverse_lambda"]
    colours = plt.cm.viridis(np.linspace(0, 0.9, max(len(inverse), 1)))
    for colour, f in zip(colours, inverse):
        runs = np.isin(table.run, f.runs)
        x, y = 1 / table.axes["weight_decay"][runs], table.delay[runs]
        label = fits.slice_text(f.slice)
        left.scatter(x, y, color=colour, s=16, label=label)
        if f.ok:
            grid = np.linspace(0, x.max() * 1.05, 50)
            left.plot(grid, f.intercept + f.slope * grid, color=colour, lw=1,
                      label=f"slope {f.slope:.3g}, R² {f.r2:.2f}")
    left.set(xlabel="1/λ", ylabel="T_transition − T_fit (steps)", title="delay against 1/λ (intermediate runs)")
    if inverse:
        left.legend(fontsize=7)
    collapse = [f for f in fit["delay_fits"] if f.kind == "collapse"]
    keep = np.isin(table.run, collapse[0].runs) if collapse else np.zeros(table.size, bool)
    x = np.log(table.v_fit[keep] / table.v_post[keep])
    right.scatter(x, table.delay[keep] * table.gamma[keep], s=16, color="k")
    if collapse and collapse[0].ok:
        grid = np.linspace(0, max(x.max(), 1e-9) * 1.05, 50)
        f = collapse[0]
        right.plot(grid, f.intercept + f.slope * grid, color="k", lw=1, label=f"fit: slope {f.slope:.3g}, R² {f.r2:.2f}")
        right.plot(grid, grid, color="grey", ls="--", lw=1, label="prediction: slope 1")
        right.legend(fontsize=7)
    right.set(xlabel="log(V_fit / V_post)", ylabel="delay · γ_eff",
              title="collapse" + ("" if collapse and collapse[0].ok else f" ({collapse[0].status if collapse else 'n.a.'})"))
    fig.suptitle(f"{res.config.name}: delay-law fits", fontsize=10)
    save(fig, path)


__all__ = ["AnalyzeOptions", "analyze", "options_from"]
