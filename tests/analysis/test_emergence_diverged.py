"""A run that diverged counts as not transitioned in the emergence analysis, whatever its T_transition says."""

import numpy as np

from nht_jax.analysis.emergence import critical_width, width_runs

STEPS = np.arange(0, 50, 10)


def rows(diverged):
    """Widths 32, 32, 64, 64 (seeds 0, 1), every run fitting at step 10 and transitioning at step 20."""
    return [
        {
            "run": i,
            "width": w,
            "seed": s,
            "regime": "diverged" if d else "intermediate",
            "T_fit": 10.0,
            "T_transition": 20.0,
            "diverged": d,
        }
        for i, (w, s, d) in enumerate(zip([32, 32, 64, 64], [0, 1, 0, 1], diverged))
    ]


def test_a_diverged_seed_is_left_out_of_the_transition_counts():
    norm = np.tile([1.0, 4.0, 2.0, 2.0, 2.0], (4, 1))
    runs = width_runs(rows([False, True, False, False]), STEPS, norm)
    assert runs.transitioned.tolist() == [True, False, True, True]
    found = critical_width(runs.width, runs.transitioned, runs.seed)
    assert found.shares == (0.5, 1.0)
    clean = width_runs(rows([False, False, False, False]), STEPS, norm)
    assert clean.transitioned.all()  # the same runs, none diverged: every one counts
