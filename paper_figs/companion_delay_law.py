"""The companion paper's delay-law figure: delay against 1/λ, 1/η and log(V_mem/V_post), with fits.

Data: toy-linear (the exactly solvable model on a λ × η grid; seconds on a CPU) as a stand-in for the
GPU-sized companion-transformer sweep; any results directory with λ and η axes works (fits:
nht_jax.analysis.fits, intermediate runs).

    .venv/bin/python paper_figs/companion_delay_law.py [RESULTS_DIR] [--out FILE.png] [--quick] [--no-run]

RESULTS_DIR holds no results: the preset is trained first (--quick: at the CPU-quick scale). The figure code is
nht_jax/papers/paper_figures.py (also behind `nht paper figs`); the title says the data, the preset and the scale.
"""

import sys

from nht_jax.papers.paper_figures import script_main

if __name__ == "__main__":
    sys.exit(script_main("delay"))
