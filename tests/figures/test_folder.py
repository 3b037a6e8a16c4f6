"""Pieces of the (λ, ρ) figures: regime contour edges and layer ordering."""

import numpy as np

from nht_jax.figures.axis_figures import layer_names, regime_boundaries


def test_regime_boundaries_lie_between_cells_of_different_regime():
    regimes = np.array(
        [["weak", "weak", "strong"], ["structured", "weak", "strong"]], dtype=object
    )  # rows = ρ, columns = λ
    edges = regime_boundaries(regimes)
    assert ((1.5, 1.5), (-0.5, 0.5)) in edges and ((1.5, 1.5), (0.5, 1.5)) in edges  # weak | strong, both rows
    assert ((-0.5, 0.5), (0.5, 0.5)) in edges  # weak above structured, column 0
    assert ((0.5, 0.5), (0.5, 1.5)) in edges  # structured | weak, row 1
    assert len(edges) == 4


def test_layer_names_run_from_input_to_head():
    metrics = {f"layer_norm_sq/{n}": 0 for n in ("head", "dense", "conv2", "conv1", "conv4", "conv3")}
    assert layer_names(metrics) == ["conv1", "conv2", "conv3", "conv4", "dense", "head"]
    resnet = {f"layer_norm_sq/{n}": 0 for n in ("stage2_block1", "head", "stem_norm", "stage1_block1", "stem_conv")}
    assert layer_names(resnet) == ["stem_conv", "stem_norm", "stage1_block1", "stage2_block1", "head"]
