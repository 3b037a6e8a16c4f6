"""Figure 4 of the paper: layer-wise norms over their peak, the total norm, the head / first-layer ratio.

Data: border-digits (offline stand-in for CIFAR-10); any results directory recording layer_norm_sq/<layer>
works (the default preset too). --rho fixes ρ, --lam the λ of the one-run panel.

    .venv/bin/python paper_figs/fig4_layer_norms.py [RESULTS_DIR] [--out FILE.png] [--quick] [--no-run]

RESULTS_DIR holds no results: the preset is trained first (--quick: at the CPU-quick scale). The figure code is
nht_jax/papers/paper_figures.py (also behind `nht paper figs`); the title says the data, the preset and the scale.
"""

import sys

from nht_jax.papers.paper_figures import script_main

if __name__ == "__main__":
    sys.exit(script_main("fig4"))
