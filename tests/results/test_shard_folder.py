"""One shard's folder read on its own (issue 46 item 4): `to_xarray()` and `to_pandas()` give its runs along `run`
(their indices in the whole grid), `as_grid` refuses in one line, `nht report` draws only its runs and says it is a
shard (the phase diagram's cells of the other shard blank, each title naming the shard); `nht export --wandb` gives
its runs ids W&B takes, with their index in the whole grid."""

import json

import matplotlib.image
import numpy as np
import pytest

import nht_jax
from nht_jax.base.errors import ConfigError
from nht_jax.cli import main

from ..conftest import TINY, unless_installed


@pytest.fixture(scope="module")
def second_shard(tmp_path_factory):
    """Shard 1 of 2 of TINY (λ = 1, the grid's run 1), trained alone."""
    out = tmp_path_factory.mktemp("shard") / "out"
    assert main(["run", *TINY, "--out", str(out), "--quiet", "--shards", "2", "--shard", "1"]) == 0
    return out / "shards" / "1-of-2"


@unless_installed("xarray", extra="xarray")
def test_to_xarray_of_a_shard_holds_its_runs_along_run(second_shard, finished):
    res, whole = nht_jax.load_results(second_shard), nht_jax.load_results(finished)
    ds = res.to_xarray(squeeze=False)
    assert ds.test_acc.dims == ("run", "step") and ds.run.values.tolist() == [1]
    assert ds.weight_decay.values.tolist() == [1.0] and ds.attrs["shard"] == "shard 1 of 2, runs 1–1 of 2"
    np.testing.assert_array_equal(ds.test_acc.values[0], whole.metrics["test_acc"][1])
    assert res.to_pandas()[0].run.unique().tolist() == [1]
    with pytest.raises(ConfigError, match="is shard 1 of 2, runs 1–1 of 2: a block of the grid"):
        res.as_grid("test_acc")


def test_report_of_a_shard_draws_its_runs_and_says_so(second_shard, tmp_path, capsys):
    import shutil

    folder = tmp_path / "shard"
    shutil.copytree(second_shard, folder)
    assert main(["report", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"note: '{folder}' is shard 1 of 2, runs 1–1 of 2: its figures show these runs alone" in out
    assert "regimes: strong 1" in out
    # The phase diagram: the cell of λ = 0.01 (the other shard's run) is blank, λ = 1's is coloured.
    image = matplotlib.image.imread(folder / "phase_diagram.png")[..., :3]
    height, width = image.shape[:2]
    row = image[int(height * 0.3)]
    coloured = np.flatnonzero(np.ptp(row, axis=1) > 0.2)  # pixels with a hue (not white, grey or black)
    assert len(coloured) > 0 and coloured.min() > width * 0.35, "λ = 0.01's cell is drawn, but no run of it is here"


def test_a_shards_runs_get_w_and_b_ids_of_their_index_in_the_grid(second_shard, tmp_path):
    """A shard's digest ("…+shard-1-of-2") holds a + that W&B ids do not take, and its run 0 is the grid's run 1."""
    pytest.importorskip("wandb")
    from nht_jax.results import export

    folders = export.export(nht_jax.load_results(second_shard), "wandb", tmp_path, project="p q")[1]
    digest = json.loads((second_shard / "meta.json").read_text())["config_digest"]
    assert digest.endswith("+shard-1-of-2")
    assert [f.name.split("-", 3)[-1] for f in folders] == [digest.replace("+", "-") + "-1"]
