"""Phase-diagram cells: seeds pooled per (x, y) cell, the majority regime, and where a diverged seed counts; when a
fitted line may be drawn (4 distinct x)."""

from types import SimpleNamespace

import numpy as np

from nht_jax.figures import style
from nht_jax.figures.style import cells, fit_drawable, majority_regime


def rows_of(*regimes):
    return [{"regime": r} for r in regimes]


def test_a_diverged_seed_never_wins_a_tie_nor_outvotes_the_others():
    assert majority_regime(rows_of("weak", "diverged")) == "weak"
    assert majority_regime(rows_of("intermediate", "intermediate", "diverged")) == "intermediate"
    assert majority_regime(rows_of("strong", "diverged")) == "strong"
    assert majority_regime(rows_of("diverged", "diverged", "weak")) == "diverged"  # a strict majority shows
    assert majority_regime(rows_of("weak", "intermediate")) == "weak"  # ties go to the earlier regime


def test_cells_pool_the_seeds_of_each_point_of_the_two_axes():
    summary = [
        {"weight_decay": lam, "rho": rho, "seed": s, "regime": r}
        for (lam, rho, s, r) in [
            (0.1, 0.0, 0, "weak"),
            (0.1, 0.0, 1, "diverged"),
            (1.0, 0.0, 0, "strong"),
            (1.0, 0.5, 0, "intermediate"),
            (1.0, 0.5, 1, "intermediate"),
        ]
    ]
    res = SimpleNamespace(axes={"weight_decay": np.array([0.1, 1.0]), "rho": np.array([0.0, 0.5])}, summary=summary)
    by_cell = cells(res, "weight_decay", "rho")
    assert {k: [r["seed"] for r in v] for k, v in by_cell.items()} == {(0, 0): [0, 1], (1, 0): [0], (1, 1): [0, 1]}
    assert majority_regime(by_cell[0, 0]) == "weak"
    assert [k for k in cells(res, "weight_decay", None)] == [(0, 0), (1, 0)]


def test_a_fitted_line_needs_four_distinct_finite_x():
    """`style.MIN_FIT_POINTS` = 4 distinct x: four points on three values (a λ twice) and six on three (3 λ × 2
    seeds) draw no line; four distinct do, in any order and with repeats; NaN and ±inf are no values."""
    assert style.MIN_FIT_POINTS == 4
    assert not fit_drawable([1.0, 1.0, 2.0, 3.0])
    assert not fit_drawable([0.5, 2.0, 0.5, 2.0, 8.0, 8.0])
    assert fit_drawable([3.0, 1.0, 4.0, 2.0]) and fit_drawable([1, 1, 2, 3, 4])
    assert not fit_drawable([1.0, 2.0, 3.0, np.nan, np.inf, -np.inf])
    assert fit_drawable([1.0, 2.0, 3.0, 4.0, np.nan])
    assert not fit_drawable([])
