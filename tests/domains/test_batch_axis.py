"""grid.batch_size, the token domains' static axis of train.batch_size (the gradient-noise axis of the batch-noise
preset, docs/papers/follow-up-data.md): one bucket per value with train.batch_size replaced, each bucket the runs
trained alone, a value ≥ the training set the full batch; bad values refused."""

import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.training import sweep

from ..conftest import make_tiny_config


def test_each_batch_size_is_a_bucket_and_one_at_least_the_train_set_is_the_full_batch(tmp_path, tiny_results):
    """p = 31, train fraction 0.5: 480 train rows; B = 1000 ≥ 480 trains exactly as the session's full-batch tiny
    sweep (tests/conftest.py), which it reuses (one compile here)."""
    config = make_tiny_config(grid={"batch_size": [16, 1000]})
    assert [(values, sub.train.batch_size) for values, sub in config.buckets()] == [
        ({"batch_size": 16}, 16),
        ({"batch_size": 1000}, 1000),
    ]
    full = sweep.run_sweep(make_tiny_config(grid={"batch_size": [1000]}), tmp_path / "full", progress=False)
    assert full.hparams["batch_size"].tolist() == [1000] * 4 and [r["batch_size"] for r in full.summary] == [1000] * 4
    for name, values in tiny_results.metrics.items():
        np.testing.assert_array_equal(full.metrics[name], values, err_msg=name)


@pytest.mark.parametrize("values", [[0, 16], [16, 16], [8.5]])
def test_a_batch_size_axis_takes_distinct_integers_of_at_least_one(values):
    with pytest.raises(ConfigError, match="grid.batch_size"):
        make_tiny_config(grid={"batch_size": values})
