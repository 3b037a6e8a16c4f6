"""Fixtures of the report tests."""

import pytest

from nht_jax.run.sweep import run_sweep


@pytest.fixture(scope="session")
def tiny_results(tiny_config, tmp_path_factory):
    """The tiny sweep, trained once per session (and xdist worker) for test_separation, test_layers and
    test_predictor: 40 steps, so no run fits and every analysis must say why it has no value."""
    return run_sweep(tiny_config(), tmp_path_factory.mktemp("report-analyses-tiny"), progress=False, draw=False)
