"""The forecast at T_fit calibrated on one folder and scored on another's seeds, by κ rule side by side
(docs/findings/forecast.md, "κ as a function of (λ, η)").

    python benchmarks/kappa_heldout.py CAL EVAL [--pools all,model,level] [--csv OUT.csv] [--tables DIR]

CAL: a finished results folder whose transitioned runs (every seed) calibrate κ, V★ and the interval; EVAL: a
finished folder of the same task and other seeds, scored (`nht_jax.analysis.tfit_forecast`, `calibration_folder`).
For each `kappa_pool` rule: the score row at T_fit (MAPE with its seed-level interval, median APE, coverage of the
90 % interval, scored runs, delay range), the residual r = log(T̂/T) by λ and by seed (mean, and the share of runs
forecast late, and the median of the runs' own law κ), and for "model" the fitted κ(λ, η) on CAL with its
seed-bootstrap slope interval. Prints Markdown; with --csv, every scored run's row (rule, seed, λ, T, T̂, ape, r, κ
and its interval, and `kappa_law`: the run's own law κ = log(V_mem/V_T)/(g·(T − T_fit)), the κ that would have made
its forecast exact up to V★; `first_passage.law_kappa`, as the calibration computes it for its own runs). With
--tables DIR: DIR/runs.csv (those rows), DIR/scores.csv (one score row per rule, with the delay range, the calibration's
median law κ and, for "model", e^a, b and b's interval), DIR/residuals.csv (the λ and seed tables) and
DIR/calibration.csv (the calibration runs' law κ per λ), the files a page quotes."""

from __future__ import annotations

import argparse
import math
import os

import numpy as np

from nht_jax import load_results
from nht_jax.analysis.tables import csv_text, markdown_table
from nht_jax.analysis.tfit_forecast import TfitOptions, calibration_of, runs_of, tfit_report
from nht_jax.measure.forecast import first_passage, heldout, kappa_model


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
    """Mean r = log(T̂/T), mean ape, the share forecast late (r > 0) and the runs' own law κ (median, range) per
    value of `key`."""
    out = []
    for v in sorted({r[key] for r in rows}):
        mine = [r for r in rows if r[key] == v]
        out.append(
            {
                key: v,
                "runs": len(mine),
                "mean_r": np.mean([r["r"] for r in mine]),
                "mape": np.mean([r["ape"] for r in mine]),
                "late": np.mean([r["r"] > 0 for r in mine]),
                "kappa_law_median": np.nanmedian([r["kappa_law"] for r in mine]),
                "kappa_law_min": np.nanmin([r["kappa_law"] for r in mine]),
                "kappa_law_max": np.nanmax([r["kappa_law"] for r in mine]),
            }
        )
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cal")
    p.add_argument("eval")
    p.add_argument("--pools", default="all,model,level")
    p.add_argument("--csv")
    p.add_argument("--tables")
    a = p.parse_args(argv)
    res = load_results(a.eval)
    every, scores, residuals = [], [], []
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
        cal = calibration_of(a.cal, options)
        m = cal.model
        b = (math.nan, math.nan)
        if pool == "model":
            b = np.quantile(m.boot[:, 1], [0.025, 0.975]) if m.boot.size else (math.nan, math.nan)
            print(f"\n{kappa_model.describe(m)}; b 95 % seed-bootstrap [{b[0]:.3g}, {b[1]:.3g}]\n")
        scores.append(
            {
                "pool": pool,
                **{k: s[k] for k in ("mape", "mape_lo", "mape_hi", "median_ape", "coverage", "n_covered_of")},
                "covered": int(round(s["coverage"] * s["n_covered_of"])) if s["n_covered_of"] else 0,
                **{k: s[k] for k in ("n_forecast", "n_positive", "mape_seeds")},
                "delay_min": delays.min(),
                "delay_max": delays.max(),
                "delay_ratio": delays.max() / delays.min(),
                "cal_runs": int(np.isfinite(cal.kappas).sum()),
                "cal_kappa_median": float(np.nanmedian(cal.kappas)),
                "model_e_a": math.exp(m.a) if pool == "model" else math.nan,
                "model_b": m.b if pool == "model" else math.nan,
                "model_b_lo": b[0],
                "model_b_hi": b[1],
                "model_runs": m.n if pool == "model" else 0,
            }
        )
        for key in ("lambda", "seed"):
            table = by(rows, key)
            print(markdown_table(table, None))
            residuals += [
                {"pool": pool, "by": key, "value": t[key], **{k: v for k, v in t.items() if k != key}} for t in table
            ]
        every += [{"pool": pool, **r} for r in rows]
    if a.csv:
        with open(a.csv, "w") as f:
            f.write(csv_text(every))
    if a.tables:
        os.makedirs(a.tables, exist_ok=True)
        calibration = [
            {
                "lambda": lam,
                "runs": int(np.isfinite(cal.kappas[cal.lam == lam]).sum()),
                "kappa_law_median": float(np.nanmedian(cal.kappas[cal.lam == lam])),
                "kappa_law_min": float(np.nanmin(cal.kappas[cal.lam == lam])),
                "kappa_law_max": float(np.nanmax(cal.kappas[cal.lam == lam])),
            }
            for lam in np.unique(cal.lam)
        ]
        tables = (("runs", every), ("scores", scores), ("residuals", residuals), ("calibration", calibration))
        for name, table in tables:
            with open(os.path.join(a.tables, f"{name}.csv"), "w") as f:
                f.write(csv_text(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
