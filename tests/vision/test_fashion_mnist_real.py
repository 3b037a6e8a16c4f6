"""The real Fashion-MNIST (Debian's dataset-fashion-mnist: the IDX files in /usr/share/datasets/fashion-mnist, or
$NHT_JAX_FASHION_MNIST_DIR), read and trained on through the fashion-border preset.

Skipped, with the reason, where the data is not installed; under `.ci/run` after `apt-get install
dataset-fashion-mnist` succeeded (NHT_REQUIRE_FASHION_MNIST=1) that skip is a failure instead. The training is the
preset's MLP on 512 real training images for 60 steps at ρ = 1: seconds, and enough for the border shortcut to show
in the group metrics."""

import os

import numpy as np
import pytest

from nht_jax.cli import main
from nht_jax.results.folder import load_results
from nht_jax.vision.datasets import load_fashion_mnist
from nht_jax.vision.datasets.mnist_like import default_dir

FIRST_LABELS = [9, 0, 0, 3, 0, 2, 7, 2, 5, 5]
"""The first ten training labels of the published Fashion-MNIST."""


@pytest.fixture(scope="module")
def fashion():
    """The two splits of the installed Fashion-MNIST (skip, or fail under NHT_REQUIRE_FASHION_MNIST=1, without it)."""
    folder = default_dir("fashion_mnist")
    if not (folder / "train-images-idx3-ubyte.gz").is_file() and not (folder / "train-images-idx3-ubyte").is_file():
        problem = (
            f"Fashion-MNIST is not installed in {folder}: `apt-get install dataset-fashion-mnist` (Debian/"
            f"Ubuntu) or set NHT_JAX_FASHION_MNIST_DIR to a folder with its four IDX files"
        )
        if os.environ.get("NHT_REQUIRE_FASHION_MNIST") == "1":
            pytest.fail(f"NHT_REQUIRE_FASHION_MNIST=1 but {problem}")
        pytest.skip(problem)
    return load_fashion_mnist("train"), load_fashion_mnist("test")


def test_the_real_images_are_read(fashion):
    train, test = fashion
    assert train.images.shape == (60_000, 32, 32, 3) and test.images.shape == (10_000, 32, 32, 3)
    assert np.bincount(train.labels).tolist() == [6000] * 10 and np.bincount(test.labels).tolist() == [1000] * 10
    assert train.labels[:10].tolist() == FIRST_LABELS
    assert abs(train.images[:, 2:30, 2:30, 0].mean() - 72.94) < 0.01  # the published mean pixel, 0.2860 · 255
    assert not train.images[:, :2].any()  # the black frame the border is painted in


def test_fashion_border_trains_on_real_pixels(fashion, tmp_path):
    out = tmp_path / "fashion"
    small = [
        "--set",
        "model.name='mlp'",
        "--set",
        "task.train_size=512",
        "--set",
        "task.eval_train_size=256",
        "--set",
        "task.eval_test_size=500",
        "--set",
        "train.steps=60",
        "--set",
        "train.log_every=30",
        "--set",
        "grid.weight_decay=[0.1]",
        "--set",
        "grid.rho=[1.0]",
        "--set",
        "grid.seed=[0]",
    ]
    assert (
        main(["run", "fashion-border", "--scale", "quick", *small, "--out", str(out), "--quiet", "--no-figures"]) == 0
    )
    res = load_results(out)
    final = {name: float(res.metrics[name][0, -1]) for name in ("aligned_acc", "conflicting_acc", "clean_acc")}
    assert np.isfinite(res.metrics["norm_sq"]).all()
    # at ρ = 1 the border is the cheap solution: the test images with their own border are classified far better
    # than the same images with another class's border
    assert final["aligned_acc"] > 0.9 and final["aligned_acc"] - final["conflicting_acc"] > 0.3, final
