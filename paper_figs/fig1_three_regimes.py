"""Figure 1 of the paper: the three regimes in λ.

Left: ‖θ‖² against step, one line per λ (seed mean). Right: the final headline metric (clean accuracy for images,
test accuracy for tokens) and the norm decay from peak against λ, coloured by the majority regime.
Data: the default preset (grokking, CPU-sized) as a stand-in for the paper's CIFAR-10; any results directory
with a λ axis works (other axes fixed at the value showing the most regimes, or --rho).

    .venv/bin/python paper_figs/fig1_three_regimes.py [RESULTS_DIR] [--out FILE.png] [--quick] [--no-run]

RESULTS_DIR holds no results: the preset is trained first (--quick: at the CPU-quick scale). The figure code is
nht_jax/papers/paper_figures.py (also behind `nht paper figs`); the title says the data, the preset and the scale.
"""

import sys

from nht_jax.papers.paper_figures import script_main

if __name__ == "__main__":
    sys.exit(script_main("fig1"))
