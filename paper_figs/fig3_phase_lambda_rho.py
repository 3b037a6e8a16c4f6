"""Figure 3 of the paper: the (λ, ρ) phase diagram coloured by clean accuracy, with regime contours.

Data: border-digits (offline stand-in for CIFAR-10); any results directory with λ and ρ axes works.

    .venv/bin/python paper_figs/fig3_phase_lambda_rho.py [RESULTS_DIR] [--out FILE.png] [--quick] [--no-run]

RESULTS_DIR holds no results: the preset is trained first (--quick: at the CPU-quick scale). The figure code is
nht_jax/papers/paper_figures.py (also behind `nht paper figs`); the title says the data, the preset and the scale.
"""

import sys

from nht_jax.papers.paper_figures import script_main

if __name__ == "__main__":
    sys.exit(script_main("fig3"))
