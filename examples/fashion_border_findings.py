"""The tables of docs/findings/fashion-border.md from a finished `nht run fashion-border --scale reduced` folder: the
(λ, ρ) diagram with seed intervals and the preregistered claims F1, F2 and F5 (F3, F4 and F6 are `nht analyze`'s
P6, P1 and the count of P1–P6).

    python examples/fashion_border_findings.py RESULTS_DIR

Intervals are percentile bootstraps over seeds (2,000 resamples, seed 0): of the seed mean for accuracies, of the
pooled median for the F1 difference. With 3 seeds a mean has only 10 distinct resamples: the interval is coarse.
"""

from __future__ import annotations

import sys
from collections import defaultdict

import numpy as np

from nht_jax.analysis.series import bootstrap_median
from nht_jax.results.folder import load_results


def bootstrap_mean(values, n_bootstrap: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(mean, lo, hi): the mean of the values and its 95 % percentile-bootstrap interval."""
    v = np.asarray(values, float)
    boots = v[np.random.default_rng(seed).integers(0, v.size, (n_bootstrap, v.size))].mean(axis=1)
    return float(v.mean()), float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975))


def cells(rows: list[dict]) -> dict:
    """{(ρ, λ): [rows of its seeds]}."""
    out = defaultdict(list)
    for row in rows:
        out[(float(row["rho"]), float(row["weight_decay"]))].append(row)
    return out


def number(value) -> float:
    return float(value) if value not in (None, "") else float("nan")


def fmt(triple, digits=2) -> str:
    mean, lo, hi = triple
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def diagram(grid: dict, metric) -> str:
    """A markdown table ρ × λ of `metric(rows)` strings."""
    rhos, lams = sorted({k[0] for k in grid}, reverse=True), sorted({k[1] for k in grid})
    lines = ["| ρ \\ λ | " + " | ".join(f"{lam:g}" for lam in lams) + " |", "|---" * (len(lams) + 1) + "|"]
    lines += [f"| {rho:g} | " + " | ".join(metric(grid[(rho, lam)]) for lam in lams) + " |" for rho in rhos]
    return "\n".join(lines)


def regimes(rows) -> str:
    counts = defaultdict(int)
    for row in rows:
        counts[row["regime"]] += 1
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))


def transitions(rows) -> str:
    times = [number(r["T_transition"]) for r in rows]
    done = [t for t in times if np.isfinite(t)]
    if not done:
        return "none within 1,000"
    return f"{np.median(done):.0f} ({len(done)}/{len(times)})"


def final(name: str):
    return lambda rows: fmt(bootstrap_mean([number(r[f"final_{name}"]) for r in rows]))


def gap(rows) -> tuple[float, float, float]:
    return bootstrap_mean([number(r["final_aligned_acc"]) - number(r["final_conflicting_acc"]) for r in rows])


def claim_f1(grid: dict) -> str:
    """Seed-paired T_transition(ρ = 0.98) − T_transition(ρ = 0.9) per λ, pooled; holds when the interval is above 0."""
    diffs = []
    for lam in sorted({k[1] for k in grid}):
        low = {r["seed"]: number(r["T_transition"]) for r in grid.get((0.9, lam), [])}
        high = {r["seed"]: number(r["T_transition"]) for r in grid.get((0.98, lam), [])}
        diffs += [high[s] - low[s] for s in low if s in high and np.isfinite(low[s]) and np.isfinite(high[s])]
    pooled = bootstrap_median(diffs)
    verdict = "holds" if pooled.n and pooled.lo > 0 else "does not hold"
    return (
        f"F1: {pooled.n} seed-paired differences, median {pooled.median:.0f} steps "
        f"[{pooled.lo:.0f}, {pooled.hi:.0f}]: {verdict}"
    )


def claim_f2(rows) -> str:
    at_one = [r for r in rows if float(r["rho"]) == 1.0]
    left = sum(number(r["final_conflicting_reliance"]) < 0.5 for r in at_one)
    return f"F2: {left} of {len(at_one)} runs at ρ = 1 end with conflicting reliance below 0.5: " + (
        "holds" if left == 0 else "does not hold"
    )


def claim_f5(grid: dict) -> str:
    lam = min(k[1] for k in grid)
    gaps = {rho: gap(grid[(rho, lam)]) for rho in sorted({k[0] for k in grid})}
    holds = gaps[1.0][0] > 0.5 and gaps[0.9][0] < gaps[1.0][0]
    return (
        f"F5 (λ = {lam:g}): "
        + ", ".join(f"ρ = {rho:g}: {fmt(g)}" for rho, g in gaps.items())
        + (": holds" if holds else ": does not hold")
    )


def main(folder: str) -> None:
    rows = load_results(folder).summary
    grid = cells(rows)
    print("regimes\n" + diagram(grid, regimes))
    print("\nT_transition, median over the seeds that transitioned\n" + diagram(grid, transitions))
    for name in ("clean_acc", "aligned_acc", "conflicting_acc", "conflicting_reliance"):
        print(f"\nfinal {name}, seed mean [95 % bootstrap]\n" + diagram(grid, final(name)))
    print("\nfinal aligned − conflicting, seed mean [95 % bootstrap]\n" + diagram(grid, lambda r: fmt(gap(r))))
    print("\n" + "\n".join((claim_f1(grid), claim_f2(rows), claim_f5(grid))))


if __name__ == "__main__":
    main(sys.argv[1])
