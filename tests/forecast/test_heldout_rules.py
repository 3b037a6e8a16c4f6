"""Known answers of the held-out forecast's rules (`nht_jax.forecast.heldout`) that the other files leave open: the
joined calibration's κ per cell, the anti-grokking rule for a metric that transitions downward (its strict margin on
the right side of the threshold), and float32 histories (JAX's default) read at their exact values in float64.
Small inputs built by hand, pure numpy (issue 43)."""

import math

import numpy as np
import pytest

from nht_jax.forecast import heldout
from nht_jax.forecast.options import ForecastSettings


def calibration(cells, kappas, seeds, bounds=(-0.1, 0.2)):
    n = len(kappas)
    return heldout.Calibration(tuple(seeds), {}, {}, np.full(n, 0.1), np.asarray(cells), np.arange(1.0, n + 1.0),
                               np.asarray(kappas, float), bounds)


@pytest.mark.parametrize("pool", ["cell", "level"])
def test_a_joined_calibration_pools_kappa_per_cell_over_both_calibrations(pool):
    """Pilot: cell a κ 0.1, 0.5, cell b κ 0.3; own: a 0.2, b 0.9 and a NaN. Per cell over both: a = median(0.1, 0.5,
    0.2) = 0.2 (mean 0.27), b = median(0.3, 0.9) = 0.6 from 2 runs (the NaN dropped); "level" keeps the same per-cell
    keys (its κ at a λ is read from the runs' own κ)."""
    prior = calibration(["a", "a", "b"], [0.1, 0.5, 0.3], (5.0,))
    own = calibration(["a", "b", "b"], [0.2, 0.9, math.nan], (0.0,))
    both = heldout.joined(prior, own, ForecastSettings(kappa_pool=pool))
    assert both.kappa == {"a": pytest.approx(0.2), "b": pytest.approx(0.6)} and both.kappa_n == {"a": 3, "b": 2}
    assert list(both.cell) == ["a", "a", "b", "a", "b", "b"]


def test_a_downward_transition_anti_groks_only_above_threshold_plus_margin():
    """Direction "below", threshold 0.5, margin 0.25 (both exact in binary): a log is bad only when the metric is
    strictly above 0.75. Three logs after T = 1 at 0.75 exactly, or at 0.6 (above the threshold, below 0.75, above
    0.5 − 0.25), are not an anti-grokking; at 0.76 they are."""
    steps = np.arange(8.0)
    for level, expected in ((0.75, False), (0.6, False), (0.76, True)):
        metric = np.where((steps >= 2) & (steps <= 4), level, 0.1)
        assert heldout.anti_grokked(steps, metric, 1.0, 0.5, "below", 0.25, 3) is expected, level


def test_float32_steps_and_metric_are_compared_in_float64():
    """A JAX history comes in float32. The metric 0.9f is 0.89999998 < 1 − 0.1 = 0.9 in float64 (equal in float32):
    three bad logs after T = 1, anti-grokked. The step 1.0f lies after T = 1 − 10⁻⁹ in float64 (not in float32, where
    T rounds to 1): with a dip at steps 1 … 3 only, three bad logs after T, not two."""
    steps = np.arange(6.0)
    metric = np.array([1.0, 1.0, 0.9, 0.9, 0.9, 1.0], np.float32)
    assert heldout.anti_grokked(steps, metric, 1.0, 1.0, "above", 0.1, 3)
    assert not heldout.anti_grokked(steps, metric.astype(np.float64) + 1e-7, 1.0, 1.0, "above", 0.1, 3)
    dip = np.array([1.0, 0.5, 0.5, 0.5, 1.0, 1.0])
    assert heldout.anti_grokked(steps.astype(np.float32), dip, 1.0 - 1e-9, 0.99, "above", 0.1, 3)
    assert not heldout.anti_grokked(steps.astype(np.float32), dip, 1.0, 0.99, "above", 0.1, 3)
