"""Shards (`nht run … --shards K --shard I`, `nht merge`, `nht submit --executor local`): the partition is
deterministic and covers every run once; merged shards are the folder `nht run` writes, bit for bit; a merge refuses
unfinished, foreign, duplicate and missing shards in one line each; `nht submit` runs the shards as submitit jobs,
resubmits the one that failed on the next call, and merges. The grid is conftest's TINY (2 runs × 40 steps, width 8),
so every shard trains one run in the program the first shard compiled (the session's compile cache)."""

import importlib.util
import json
import shutil
import sys

import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.results import lock
from nht_jax.training import shards

from ..conftest import TINY


# ----------------------------------------------------------------------------- the partition (pure)

@pytest.mark.parametrize("sizes, count", [([8], 1), ([8], 3), ([8], 8), ([4, 4], 3), ([4, 4, 4], 2), ([3, 3, 3], 3),
                                          ([4, 4, 4, 4, 4], 3), ([2, 5, 3], 7), ([1, 1], 2), ([6, 6], 5)])
def test_partition_covers_every_run_once_in_order(sizes, count):
    parts = shards.partition(sizes, count)
    assert parts == shards.partition(list(sizes), count)  # deterministic: a function of the sizes and K alone
    assert len(parts) == count and all(parts)
    offsets = np.cumsum([0, *sizes])
    covered = [int(offsets[b]) + r for shard in parts for b, lo, hi in shard for r in range(lo, hi)]
    assert covered == list(range(sum(sizes)))  # every run exactly once, shards in run order
    for shard in parts:
        start, stop = shards.run_range(sizes, shard)
        assert stop - start == sum(hi - lo for _, lo, hi in shard)  # one contiguous block
        if count <= len(sizes):  # whole buckets first
            assert all((lo, hi) == (0, sizes[b]) for b, lo, hi in shard)
        else:  # then blocks of one bucket, as even as can be
            assert len(shard) == 1
    if count > len(sizes):
        for b, size in enumerate(sizes):
            blocks = [hi - lo for shard in parts for bb, lo, hi in shard if bb == b]
            assert max(blocks) - min(blocks) <= 1 and sum(blocks) == size


def test_partition_known_cases():
    assert shards.partition([4, 4, 4], 2) == [[(0, 0, 4)], [(1, 0, 4), (2, 0, 4)]]
    assert shards.partition([4, 4], 3) == [[(0, 0, 4)], [(1, 0, 2)], [(1, 2, 4)]]
    assert shards.partition([5], 2) == [[(0, 0, 2)], [(0, 2, 5)]]


def test_partition_refusals():
    with pytest.raises(ConfigError, match="more shards than the grid has runs"):
        shards.partition([2, 2], 5)
    with pytest.raises(ConfigError, match="bucket 1 of 2 2 shards but it has only 1 runs"):
        shards.partition([1, 3], 4)
    for count, index in ((2, None), (None, 0), (0, 0), (2, 2), (2, -1)):
        with pytest.raises(ConfigError):
            shards.parse(count, index)


def test_shard_flags_refused_in_one_line(tmp_path, capsys):
    for extra, said in ((["--shards", "2"], "go together"), (["--shards", "3", "--shard", "0"], "more shards"),
                        (["--shards", "2", "--shard", "0", "--processes", "2"], "drop --processes"),
                        (["--shards", "2", "--shard", "0", "--process-id", "1"], "drop --processes")):
        assert main(["run", *TINY, "--out", str(tmp_path / "x"), *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("nht: error:") and said in err and "\n" not in err


# ----------------------------------------------------------------------------- merge

@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """TINY trained as 2 shards (one run each) into OUT/shards; not merged."""
    out = tmp_path_factory.mktemp("sharded") / "out"
    for i in range(2):
        assert main(["run", *TINY, "--out", str(out), "--quiet", "--shards", "2", "--shard", str(i)]) == 0
    return out


def arrays(folder):
    with np.load(folder / "trajectories.npz") as data:
        return {k: data[k] for k in data.files}


def assert_same_results(merged, reference, shard_count=2):
    """trajectories.npz (keys in order, dtypes, every bit), summary.csv and config.toml equal; meta.json differs
    only in the fields the merge documents (nht_jax.training.merge)."""
    a, b = arrays(merged), arrays(reference)
    assert list(a) == list(b)
    for key in a:
        assert a[key].dtype == b[key].dtype and a[key].tobytes() == b[key].tobytes(), key
    for name in ("summary.csv", "config.toml"):
        assert (merged / name).read_bytes() == (reference / name).read_bytes(), name
    meta, ref = (json.loads((f / "meta.json").read_text()) for f in (merged, reference))
    allowed = {"train_wall_s", "finished", "run_slices", "memory_plan", "files", "shards", "profile"}
    assert {k for k in meta.keys() | ref.keys() if meta.get(k) != ref.get(k)} <= allowed
    assert meta["shards"]["count"] == shard_count
    assert all("loop" in each["profile"] for each in meta["shards"]["each"])  # each shard's timing record kept


def test_merge_equals_the_unsharded_run(sharded, finished, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(sharded, out)
    assert main(["merge", str(out)]) == 0
    assert_same_results(out, finished)
    import nht_jax

    res, ref = nht_jax.load_results(out), nht_jax.load_results(finished)  # what every analysis reads
    assert repr(res.summary) == repr(ref.summary) and res.num_runs == 2  # repr: NaN cells compare equal
    assert main(["merge", str(out)]) == 0  # merging again: already merged, nothing rewritten


def merge_error(capsys, *argv) -> str:
    assert main(["merge", *map(str, argv)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("nht: error:") and "\n" not in err, err
    return err


def test_merge_refuses_unfinished_foreign_duplicate_missing(sharded, tmp_path, capsys):
    s0, s1 = sharded / "shards" / "0-of-2", sharded / "shards" / "1-of-2"
    unfinished = tmp_path / "unfinished" / "shards" / "1-of-2"
    shutil.copytree(s1, unfinished)
    (unfinished / "meta.json").unlink()
    assert "is unfinished (meta.json is missing" in merge_error(capsys, s0, unfinished, "--out", tmp_path / "m1")
    assert "--shards 2 --shard 1" in merge_error(capsys, s0, unfinished, "--out", tmp_path / "m1")

    other = tmp_path / "other"  # shard 1 of another grid (another λ): trained for real, one run
    assert main(["run", *TINY, "--set", "grid.weight_decay=[0.01,2.0]", "--out", str(other), "--quiet",
                 "--shards", "2", "--shard", "1"]) == 0
    assert "is a shard of another configuration" in merge_error(capsys, s0, other / "shards" / "1-of-2", "--out",
                                                                 tmp_path / "m2")

    copy = tmp_path / "copy" / "1-of-2"
    shutil.copytree(s1, copy)
    assert "shard 1 of 2 is given twice" in merge_error(capsys, s0, s1, copy, "--out", tmp_path / "m3")

    lone = tmp_path / "lone"
    shutil.copytree(s0, lone / "shards" / "0-of-2")
    assert "shard 1 of 2 is missing" in merge_error(capsys, lone)
    assert not (tmp_path / "m1" / "meta.json").exists() and not (lone / "meta.json").exists()


# ----------------------------------------------------------------------------- nht submit --executor local

def test_submit_without_submitit_says_how_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "submitit", None)  # import submitit → ImportError
    assert main(["submit", *TINY, "--shards", "2", "--executor", "local", "--out", str(tmp_path / "x")]) == 2
    assert "pip install 'nht_jax[slurm]'" in capsys.readouterr().err


def test_submit_refuses_an_out_of_another_configuration(folder, capsys):
    """Before any job: OUT holds TINY's results, the submission another λ grid's."""
    assert main(["submit", *TINY, "--set", "grid.weight_decay=[0.01,2.0]", "--shards", "2", "--executor", "local",
                 "--out", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert "already holds results of another configuration" in err and "\n" not in err
    assert not (folder / "submit.json").exists() and not (folder / "submitit").exists()


def test_submit_local_resubmits_the_failed_shard_and_merges(sharded, finished, tmp_path, capsys):
    """Two submitit local jobs; shard 1's fails (its folder is held by another writer: this test), the first call
    says so (exit 1); the second submits shard 1 alone again, waits and merges. The jobs are real processes (about
    10 s each under load): the path through submitit is what is tested."""
    if importlib.util.find_spec("submitit") is None:  # not importorskip: submitit is imported as nht imports it
        pytest.skip("submitit is not installed (pip install 'nht_jax[slurm]')")
    out = tmp_path / "out"
    argv = ["submit", *TINY, "--shards", "2", "--executor", "local", "--out", str(out), "--poll", "0.2"]
    with lock.hold(shards.folder(out, shards.Shard(1, 2)), "a test holding shard 1"):
        assert main(argv) == 1
    err = capsys.readouterr().err
    assert "shard 1 of 2 did not finish" in err and "in use by `a test holding shard 1`" in err
    assert "run the same `nht submit` again" in err and "shard 0 of 2 did not finish" not in err
    assert not (out / "meta.json").exists()
    assert main(argv) == 0
    state = json.loads((out / "submit.json").read_text())
    assert [s["shards"] for s in state["submissions"]] == [[0, 1], [1]]
    assert state["submissions"][1]["resubmitted"] == [1]
    assert_same_results(out, finished)
    assert main(argv) == 0  # all done: nothing submitted
    assert len(json.loads((out / "submit.json").read_text())["submissions"]) == 2
