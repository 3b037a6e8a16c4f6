"""Figure 1 of the paper for a results directory: the three regimes in λ.

Left: ‖θ‖² against step, one line per λ (seed mean). Right: final test accuracy and the
norm decay from peak, (V_peak − V_final) / V_peak, against λ (seed mean ± range), each
point coloured by the majority regime of its runs.

    .venv/bin/python paper_figs/fig1_three_regimes.py [RESULTS_DIR] [--out FILE.png]

RESULTS_DIR defaults to runs/out/default (made by `nht run`).
"""

import argparse
import collections
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from nht_jax.report.style import REGIME_COLOURS, majority_regime  # noqa: E402
from nht_jax.run.results import load_results  # noqa: E402


def per_lambda(res):
    """{λ: indices of its runs}, in grid order."""
    groups = collections.OrderedDict()
    for lam in res.axes["weight_decay"]:
        groups[float(lam)] = res.select(weight_decay=lam)
    return groups


def draw(res, out: Path) -> None:
    groups = per_lambda(res)
    colours = plt.cm.viridis(np.linspace(0, 0.95, len(groups)))
    fig, (norm_ax, acc_ax) = plt.subplots(1, 2, figsize=(12, 4.2))
    lams, acc, decay, regimes = [], [], [], []
    for colour, (lam, runs) in zip(colours, groups.items()):
        norm = res.metrics["norm_sq"][runs]
        norm_ax.plot(res.steps, norm.mean(0), color=colour, label=f"λ={lam:.3g}")
        peak, final = norm.max(1), norm[:, -1]
        lams.append(lam)
        acc.append(res.metrics[res.domain.headline_metric][runs, -1])
        decay.append((peak - final) / peak)
        regimes.append(majority_regime([res.summary[i] for i in runs]))
    norm_ax.set(xlabel="step", ylabel="‖θ‖² (seed mean)", yscale="log", title="norm trajectories")
    norm_ax.legend(fontsize=7, ncol=2)
    for values, marker, label in ((acc, "o", f"final {res.domain.headline_metric}"), (decay, "s", "norm decay from peak")):
        means = np.array([v.mean() for v in values])
        spread = np.array([[v.mean() - v.min(), v.max() - v.mean()] for v in values]).T
        acc_ax.errorbar(lams, means, yerr=spread, color="k", lw=0.8, marker=None, label=None)
        acc_ax.scatter(lams, means, c=[REGIME_COLOURS[r] for r in regimes], marker=marker, zorder=3, label=label)
    acc_ax.set(xscale="log", xlabel="weight decay λ", ylim=(-0.05, 1.05), title="colour = majority regime")
    acc_ax.legend(fontsize=8)
    fig.suptitle(f"{res.config.name}: three regimes ({res.config.train.steps} steps)", fontsize=10)
    fig.savefig(out, dpi=120, bbox_inches="tight")
    print(f"wrote {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="?", default="runs/out/default", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    draw(load_results(args.results), args.out or args.results / "fig1_three_regimes.png")
