"""Shared by the fault tests: `TINY`, the `nht run` arguments of a sweep that trains in seconds (2 runs × 40 steps,
width 8), and the fixtures `finished` (that sweep trained once per session, never written to again) and `folder`
(a copy of it for one test to damage)."""

import shutil

import pytest

from nht_jax.cli import main

TINY = ["tiny", "--set", "train.steps=40", "--set", "train.log_every=20", "--set", "model.hidden=[8]",
        "--set", "grid.seed=[0]"]


@pytest.fixture(scope="session")
def finished(tmp_path_factory):
    """A finished results folder of `nht run TINY`, shared by every test of the session: copy it (`folder`) before
    changing anything in it."""
    out = tmp_path_factory.mktemp("faults") / "finished"
    assert main(["run", *TINY, "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture
def folder(finished, tmp_path):
    """A copy of `finished` for this test alone."""
    out = tmp_path / "res"
    shutil.copytree(finished, out)
    return out
