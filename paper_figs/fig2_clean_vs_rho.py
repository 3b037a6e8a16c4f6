"""Figure 2 of the paper: clean accuracy against the border correlation ρ at a fixed λ.

Data: border-digits (scikit-learn digits with a spurious border, offline) as a stand-in for CIFAR-10;
any results directory with λ and ρ axes works (--lam picks the fixed λ).

    .venv/bin/python paper_figs/fig2_clean_vs_rho.py [RESULTS_DIR] [--out FILE.png] [--quick] [--no-run]

RESULTS_DIR holds no results: the preset is trained first (--quick: at the CPU-quick scale). The figure code is
nht_jax/papers/paper_figures.py (also behind `nht paper figs`); the title says the data, the preset and the scale.
"""

import sys

from nht_jax.papers.paper_figures import script_main

if __name__ == "__main__":
    sys.exit(script_main("fig2"))
