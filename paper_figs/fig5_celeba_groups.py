"""Figure 5 of the paper: CelebA, ‖θ‖², worst-group and average accuracy against epoch for 3 λ.

Data: the celeba preset (needs a prepared TFDS copy of celeb_a; trained at a CPU-reduced scale when absent).
Without CelebA the PNG is a notice saying so and how to get it: no offline domain records group metrics.
Any results directory recording worst_group_acc (celeba, waterbirds) works.

    .venv/bin/python paper_figs/fig5_celeba_groups.py [RESULTS_DIR] [--out FILE.png] [--quick] [--no-run]

RESULTS_DIR holds no results: the preset is trained first (--quick: at the CPU-quick scale). The figure code is
nht_jax/papers/paper_figures.py (also behind `nht paper figs`); the title says the data, the preset and the scale.
"""

import sys

from nht_jax.papers.paper_figures import script_main

if __name__ == "__main__":
    sys.exit(script_main("fig5"))
