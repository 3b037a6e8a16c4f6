"""The forecast at T_fit calibrated on one folder and scored on another's seeds, by κ rule side by side
(docs/findings/forecast.md, "κ as a function of (λ, η)").

    python benchmarks/kappa_heldout.py CAL EVAL [--pools all,model,level] [--csv OUT.csv]

CAL: a finished results folder whose transitioned runs (every seed) calibrate κ, V★ and the interval; EVAL: a
finished folder of the same task and other seeds, scored (`nht_jax.analysis.tfit_forecast`, `calibration_folder`).
For each `kappa_pool` rule: the score row at T_fit (MAPE with its seed-level interval, median APE, coverage of the
90 % interval, scored runs, delay range), the residual r = log(T̂/T) by λ and by seed (mean, and the share of runs
forecast late, and the median of the runs' own law κ), and for "model" the fitted κ(λ, η) on CAL with its
seed-bootstrap slope interval. Prints Markdown; with --csv, every scored run's row (rule, seed, λ, T, T̂, ape, r, κ
and its interval, and `kappa_law`: the run's own law κ = log(V_mem/V_T)/(g·(T − T_fit)), the κ that would have made
its forecast exact up to V★; `first_passage.law_kappa`, as the calibration computes it for its own runs)."""

from __future__ import annotations

import argparse
import math

import numpy as np

from nht_jax import load_results
from nht_jax.analysis.tables import csv_text, markdown_table
from nht_jax.analysis.tfit_forecast import TfitOptions, calibration_of, runs_of, tfit_report
from nht_jax.forecast import first_passage, heldout, kappa_model


def own_law_kappa(runs: heldout.Runs, i: int) -> float:
    """Run i's own law κ: log(V at T_fit / V at T)/(g·(T − T_fit)), V at the last log ≤ each (`heldout.v_at`)."""
    t_fit, t = runs.t_fit[i], runs.t_tr[i]
    return first_passage.law_kappa(t_fit, t, heldout.v_at(runs, i, t_fit), heldout.v_at(runs, i, t), runs.g[i])


def scored_runs(report, runs: heldout.Runs) -> list[dict]:
    """The scored positives with a forecast at T_fit, with r = log(T̂/T) and their own law κ (`runs`: the scored
    folder's runs, `tfit_forecast.runs_of`)."""
    out = []
    for r in report.run_rows:
        if r["role"] != "positive" or not np.isfinite(r["T_hat"]):
            continue
        out.append(
            {
                "seed": r["seed"],
                "lambda": r["weight_decay"],
                "T_fit": r["T_fit"],
                "T": r["T_transition"],
                "T_hat": r["T_hat"],
                "T_lo": r["T_lo"],
                "T_hi": r["T_hi"],
                "ape": r["ape"],
                "r": math.log(r["T_hat"] / r["T_transition"]),
                "kappa": r["kappa"],
                "kappa_lo": r.get("kappa_lo", math.nan),
                "kappa_hi": r.get("kappa_hi", math.nan),
                "kappa_law": own_law_kappa(runs, r["run"]),
            }
        )
    return out


def by(rows: list[dict], key: str) -> list[dict]:
    """Mean r, mean ape and the share forecast late (r > 0) per value of `key`."""
    out = []
    for v in sorted({r[key] for r in rows}):
        mine = [r for r in rows if r[key] == v]
        out.append(
            {
                key: v,
                "runs": len(mine),
                "mean r = log(T̂/T)": np.mean([r["r"] for r in mine]),
                "MAPE": np.mean([r["ape"] for r in mine]),
                "late": np.mean([r["r"] > 0 for r in mine]),
                "law κ (median)": np.nanmedian([r["kappa_law"] for r in mine]),
            }
        )
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cal")
    p.add_argument("eval")
    p.add_argument("--pools", default="all,model,level")
    p.add_argument("--csv")
    a = p.parse_args(argv)
    res = load_results(a.eval)
    every = []
    for pool in a.pools.split(","):
        options = TfitOptions(calibration_folder=a.cal, kappa_pool=pool)
        report = tfit_report(res, options)
        s = report.score_rows[0]
        rows = scored_runs(report, runs_of(res, options))
        delays = np.array([r["T"] - r["T_fit"] for r in rows])
        print(f"\n### kappa_pool = {pool}\n\n{report.split}\n")
        print(
            markdown_table(
                [
                    {
                        "MAPE": s["mape"],
                        "lo": s["mape_lo"],
                        "hi": s["mape_hi"],
                        "median APE": s["median_ape"],
                        "coverage": s["coverage"],
                        "covered of": s["n_covered_of"],
                        "forecast": s["n_forecast"],
                        "positives": s["n_positive"],
                        "seeds": s["mape_seeds"],
                        "delays": f"{delays.min():g}–{delays.max():g} ({delays.max() / delays.min():.1f}×)",
                    }
                ],
                None,
            )
        )
        if pool == "model":
            cal = calibration_of(a.cal, options)
            m = cal.model
            b = np.quantile(m.boot[:, 1], [0.025, 0.975]) if m.boot.size else (math.nan, math.nan)
            print(f"\n{kappa_model.describe(m)}; b 95 % seed-bootstrap [{b[0]:.3g}, {b[1]:.3g}]\n")
        print(markdown_table(by(rows, "lambda"), None))
        print(markdown_table(by(rows, "seed"), None))
        every += [{"pool": pool, **r} for r in rows]
    if a.csv:
        with open(a.csv, "w") as f:
            f.write(csv_text(every))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
