"""P6's exponent ν (delay ∝ λ^(−ν)) under the definitions the papers leave open, side by side, from one finished
results folder (docs/findings/default.md, "P6 and its definitions").

    python benchmarks/p6_definitions.py FOLDER [--every 50] [--floor-lambda 0.8] [--csv OUT.csv]

For each transition threshold (0.95, 0.99, 0.999) and two log resolutions (the folder's own logs, and only the logs
at multiples of `--every`, what a run logging every `--every` steps would have recorded: logging never changes
training, so the subsample is that run), the power-law fit of `nht analyze` (`nht_jax.analysis.fits`,
power_law_lambda, its default options) on every intermediate run, and again without the runs at λ ≥
`--floor-lambda` (whose delays lie within a few logs of T_fit, at the floor of the log resolution). Prints a
Markdown table and writes the CSV when asked."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from nht_jax import load_results
from nht_jax.analysis import fits
from nht_jax.analysis.tables import csv_text, markdown_table
from nht_jax.measure.summaries import summarize

THRESHOLDS = (0.95, 0.99, 0.999)


def at_resolution(results, every: int | None):
    """The results as a run logging only at multiples of `every` would hold them (None: as logged)."""
    if every is None:
        return results
    keep = np.asarray(results.steps) % every == 0
    return dataclasses.replace(
        results,
        steps=np.asarray(results.steps)[keep],
        metrics={k: np.asarray(v)[:, keep] for k, v in results.metrics.items()},
    )


def with_threshold(results, threshold: float):
    """The results summarised again with T_transition at test accuracy ≥ `threshold`."""
    config = dataclasses.replace(
        results.config, analysis=dataclasses.replace(results.config.analysis, transition_threshold=threshold)
    )
    rows = summarize(results.steps, results.metrics, results.hparams, config)
    return dataclasses.replace(results, config=config, summary=rows)


def exponent_rows(results, every: int, floor_lambda: float) -> list[dict]:
    """One row per (resolution, threshold, λ range): ν, its interval, R² and the runs fitted."""
    out = []
    for label, step in (("as logged", None), (f"every {every}", every)):
        for threshold in THRESHOLDS:
            report = fits.fit_report(with_threshold(at_resolution(results, step), threshold))
            table = report["table"]
            lam = np.asarray(table.axes["weight_decay"], np.float64)
            for scope, positions in (("all λ", None), (f"λ < {floor_lambda:g}", np.flatnonzero(lam < floor_lambda))):
                fit = fits.delay_fit(table, "power_law_lambda", report["options"], positions)
                out.append(
                    {
                        "logs": label,
                        "threshold": threshold,
                        "runs": scope,
                        "status": fit.status,
                        "n_runs": len(fit.runs),
                        "nu": fit.nu if fit.ok else np.nan,
                        "nu_lo": fit.nu_ci[0] if fit.ok else np.nan,
                        "nu_hi": fit.nu_ci[1] if fit.ok else np.nan,
                        "r2": fit.r2 if fit.ok else np.nan,
                    }
                )
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--floor-lambda", type=float, default=0.8)
    parser.add_argument("--csv", type=Path)
    args = parser.parse_args(argv)
    rows = exponent_rows(load_results(args.folder), args.every, args.floor_lambda)
    print(markdown_table([{**r, **{k: f"{r[k]:.3g}" for k in ("nu", "nu_lo", "nu_hi", "r2")}} for r in rows]))
    if args.csv:
        args.csv.write_text(csv_text(rows))


if __name__ == "__main__":
    main()
