"""Shards (`nht run … --shards K --shard I`, `nht merge`, `nht submit --executor local`): the partition is
deterministic and covers every run once; merged shards are the folder `nht run` writes, bit for bit; a merge refuses
unfinished, foreign, duplicate and missing shards in one line each; `nht submit` runs the shards as submitit jobs,
resubmits the one that failed on the next call, and merges. The grid is conftest's TINY (2 runs × 40 steps, width 8),
so every shard trains one run in the program the first shard compiled (the session's compile cache)."""

import dataclasses
import importlib.util
import itertools
import json
import shutil
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.measure import stopping
from nht_jax.results import lock
from nht_jax.training import merge, shards, submit

from ..conftest import TINY


# ----------------------------------------------------------------------------- the partition (pure)


@pytest.mark.parametrize(
    "sizes, count",
    [
        ([8], 1),
        ([8], 3),
        ([8], 8),
        ([4, 4], 3),
        ([4, 4, 4], 2),
        ([3, 3, 3], 3),
        ([4, 4, 4, 4, 4], 3),
        ([2, 5, 3], 7),
        ([1, 1], 2),
        ([6, 6], 5),
    ],
)
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


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(1, 9), min_size=1, max_size=6), data=st.data())
def test_shards_partition_any_grid_into_contiguous_blocks_in_order(sizes, data):
    """For any bucket sizes and K: refused exactly when K exceeds the runs, or (K > B) when some bucket b would get
    more of its ⌊(b+1)K/B⌋ − ⌊bK/B⌋ shards (module docstring) than it has runs; else K non-empty shards, in
    order, each one contiguous block [start, stop) (`run_range`), covering every run exactly once, whole buckets
    as evenly as can be when K ≤ B, otherwise slices of one bucket differing by at most one run."""
    count = data.draw(st.integers(1, sum(sizes) + 2), label="count")
    buckets = len(sizes)
    shares = [(b + 1) * count // buckets - b * count // buckets for b in range(buckets)]
    if count > sum(sizes) or (count > buckets and any(m > n for m, n in zip(shares, sizes))):
        with pytest.raises(ConfigError):
            shards.partition(sizes, count)
        return
    parts = shards.partition(sizes, count)
    offsets = np.cumsum([0, *sizes])
    runs = [[int(offsets[b]) + r for b, lo, hi in shard for r in range(lo, hi)] for shard in parts]
    assert len(parts) == count and all(runs)
    assert [r for block in runs for r in block] == list(range(sum(sizes)))
    for shard, block in zip(parts, runs):
        assert shards.run_range(sizes, shard) == (block[0], block[-1] + 1) and len(block) == block[-1] + 1 - block[0]
    if count <= buckets:
        assert all((lo, hi) == (0, sizes[b]) for shard in parts for b, lo, hi in shard)
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
    else:
        assert all(len(shard) == 1 for shard in parts)
        for b in range(buckets):
            blocks = [hi - lo for ((bb, lo, hi),) in parts if bb == b]
            assert len(blocks) == shares[b] and max(blocks) - min(blocks) <= 1


def test_shard_flags_parse_to_the_shard_they_name():
    """--shards K --shard I is shard I of K for every 0 ≤ I < K, K ≥ 1 (one shard: the whole grid); neither flag:
    no shard (the refusals: test_partition_refusals)."""
    assert shards.parse(None, None) is None
    assert shards.parse(1, 0) == shards.Shard(0, 1)
    assert shards.parse(3, 0) == shards.Shard(0, 3) and shards.parse(3, 2) == shards.Shard(2, 3)


@settings(max_examples=50, deadline=None)
@given(count=st.integers(1, 40), data=st.data())
def test_a_shard_folder_name_reads_back_as_its_shard(count, data):
    """of_name reads back every name Shard.name writes (I-of-K, I from 0); I ≥ K, K-of-K included, is no shard."""
    index = data.draw(st.integers(0, count - 1), label="index")
    assert shards.of_name(shards.Shard(index, count).name) == shards.Shard(index, count)
    assert shards.of_name(f"{count + index}-of-{count}") is None


def test_a_folder_named_like_a_count_from_one_or_anything_around_i_of_k_is_not_a_shard():
    """Shards count from 0: of K = 2 the folders are 0-of-2 and 1-of-2, so "2-of-2" (the last shard counted from
    1), "1-of-1" and "0-of-0" are other folders, as are names with anything around "I-of-K" (a backup "1-of-2.old")."""
    assert shards.of_name("0-of-1") == shards.Shard(0, 1) and shards.of_name("1-of-2") == shards.Shard(1, 2)
    assert shards.of_name("12-of-13") == shards.Shard(12, 13)
    for name in (
        "2-of-2",
        "1-of-1",
        "3-of-2",
        "0-of-0",
        "1-of-2.old",
        "old-1-of-2",
        "x1-of-2",
        "-1-of-2",
        "1-of-",
        "1_of_2",
        "1-of-2 ",
    ):
        assert shards.of_name(name) is None, name


def test_a_shard_trains_in_out_shards_i_of_k_under_its_own_digest(tmp_path):
    """The on-disk names every shard folder, checkpoint and `nht submit` state rests on (module docstring): OUT/shards/
    I-of-K, and the identity DIGEST+shard-I-of-K, so a folder of another shard or digest is another identity."""
    shard = shards.Shard(1, 3)
    assert (shard.name, shard.label) == ("1-of-3", "shard 1 of 3")
    assert shards.folder(tmp_path, shard) == tmp_path / "shards" / "1-of-3"
    assert shards.shard_digest("5691d71eb8acb22c", shard) == "5691d71eb8acb22c+shard-1-of-3"


def test_shards_refuse_forks_and_snapshots(tiny_config):
    """A merge joins no per-run states: a [fork], snapshot_steps and snapshot_at_fit are each refused alone; a plain
    grid is not."""
    config = tiny_config()
    shards.refuse_unsupported(config)
    execution = config.execution
    forked = dataclasses.replace(config, fork=experiment.ForkConfig(from_="elsewhere"))
    for changed, said in (
        (forked, "cannot train a \\[fork\\]"),
        (
            dataclasses.replace(config, execution=dataclasses.replace(execution, snapshot_steps=(20,))),
            "cannot keep snapshots",
        ),
        (
            dataclasses.replace(config, execution=dataclasses.replace(execution, snapshot_at_fit=True)),
            "cannot keep snapshots",
        ),
    ):
        with pytest.raises(ConfigError, match=said):
            shards.refuse_unsupported(changed)


def test_shard_flags_refused_in_one_line(tmp_path, capsys):
    for extra, said in (
        (["--shards", "2"], "go together"),
        (["--shards", "3", "--shard", "0"], "more shards"),
        (["--shards", "2", "--shard", "0", "--processes", "2"], "drop --processes"),
        (["--shards", "2", "--shard", "0", "--process-id", "1"], "drop --processes"),
    ):
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
    assert (
        main(
            [
                "run",
                *TINY,
                "--set",
                "grid.weight_decay=[0.01,2.0]",
                "--out",
                str(other),
                "--quiet",
                "--shards",
                "2",
                "--shard",
                "1",
            ]
        )
        == 0
    )
    assert "is a shard of another configuration" in merge_error(
        capsys, s0, other / "shards" / "1-of-2", "--out", tmp_path / "m2"
    )

    copy = tmp_path / "copy" / "1-of-2"
    shutil.copytree(s1, copy)
    assert "shard 1 of 2 is given twice" in merge_error(capsys, s0, s1, copy, "--out", tmp_path / "m3")

    lone = tmp_path / "lone"
    shutil.copytree(s0, lone / "shards" / "0-of-2")
    assert "shard 1 of 2 is missing" in merge_error(capsys, lone)
    assert not (tmp_path / "m1" / "meta.json").exists() and not (lone / "meta.json").exists()


def edit_meta(folder, **entries):
    """Set `entries` in the shard folder's meta.json (not in its manifest: the folder stays complete)."""
    path = folder / "meta.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **entries}))


def as_shard(whole, dest, shard, runs):
    """A copy of the unsharded folder `whole` at `dest`, made `shard` holding the grid's `runs` in the on-disk format
    `run_shard` writes: meta.json's config_digest the shard's identity, its "shard" entry the shard."""
    shutil.copytree(whole, dest)
    digest = json.loads((dest / "meta.json").read_text())["config_digest"]
    edit_meta(
        dest,
        config_digest=shards.shard_digest(digest, shard),
        shard={"index": shard.index, "count": shard.count, "config_digest": digest, "runs": list(runs)},
    )
    return dest


def digest_of(argv):
    """The results digest of the configuration `nht run ARGV` trains (ARGV: a preset, then --set pairs)."""
    return stopping.results_digest(experiment.load(argv[0], list(argv[2::2])))


def merge_into(out, count=None):
    """`nht merge OUT` without its figures."""
    return merge.merge(merge.shard_folders(out, count)[0], out)


FOUR = [*TINY, "--set", "grid.learning_rate=[0.01,30.0]", "--set", "stop.rule=diverged"]


@pytest.fixture(scope="module")
def three_shards(tmp_path_factory):
    """FOUR (2 λ × 2 η, one seed; η = 30 with λ = 1 diverges at once and stops: stop.rule = diverged)
    trained whole ("reference") and as 3 shards of 1, 1 and 2 runs into OUT/shards, not merged → (OUT, reference).
    Shards of unequal sizes and distinct runs, only the last run stopped: any other order of them gives other
    arrays, stopped_step and summary rows."""
    root = tmp_path_factory.mktemp("three")
    assert main(["run", *FOUR, "--out", str(root / "reference"), "--quiet"]) == 0
    for i in range(3):
        assert main(["run", *FOUR, "--out", str(root / "out"), "--quiet", "--shards", "3", "--shard", str(i)]) == 0
    return root / "out", root / "reference"


def test_shards_named_in_any_order_merge_into_the_unsharded_run(three_shards, tmp_path):
    """Every order of the 3 shard folders merges into the folder `nht run` of the whole grid wrote (the known
    answer): the merge orders shards by their index, never as named; meta.json's "shards" and progress.log list
    them in that order too."""
    out, reference = three_shards
    stopped = arrays(reference)["stopped_step"]
    assert np.isnan(stopped[:3]).all() and stopped[3] > 0  # the answer is asymmetric: only the last run stopped
    folders = [shards.folder(out, shards.Shard(i, 3)) for i in range(3)]
    for n, order in enumerate(itertools.permutations(folders)):
        merged = merge.merge(list(order), tmp_path / str(n))
        assert_same_results(merged, reference, shard_count=3)
        each = json.loads((merged / "meta.json").read_text())["shards"]["each"]
        assert [(e["folder"], e["runs"]) for e in each] == [
            (str(folders[0]), [0, 1]),
            (str(folders[1]), [1, 2]),
            (str(folders[2]), [2, 4]),
        ]
        lines = (merged / "progress.log").read_text().splitlines()
        assert [line.split("  ", 1)[1].split(" from ")[0] for line in lines[:3]] == [
            "shard 0 of 3: runs 0–0 (1)",
            "shard 1 of 3: runs 1–1 (1)",
            "shard 2 of 3: runs 2–3 (2)",
        ]
        assert lines[3].endswith("merged: 3 shards, 40 steps × 4 runs; results written") and len(lines) == 4


def test_merged_train_wall_s_is_the_shards_sum(sharded, finished, tmp_path):
    """meta.json of a merge: train_wall_s the sum of the shards' (to 0.01 s), run_slices the sum of theirs, each
    shard's own under "shards" (and in progress.log); no "shard" or "profile" of its own. Known answer by hand:
    shards that ran 1.234 s in 2 slices and 2.345 s in 3 slices → 3.58 s (not the largest, 2.35, nor the
    unrounded 3.579) in 5 slices. Merging again rewrites nothing."""
    out = tmp_path / "out"
    shutil.copytree(sharded, out)
    edit_meta(out / "shards" / "0-of-2", train_wall_s=1.234, run_slices=2)
    edit_meta(out / "shards" / "1-of-2", train_wall_s=2.345, run_slices=3)
    merge_into(out)
    assert_same_results(out, finished)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["train_wall_s"] == 3.58 and meta["run_slices"] == 5
    assert "shard" not in meta and "profile" not in meta
    own = [json.loads((out / "shards" / f"{i}-of-2" / "meta.json").read_text()) for i in range(2)]
    assert meta["shards"]["each"] == [
        {
            "folder": str(out / "shards" / f"{i}-of-2"),
            "runs": m["shard"]["runs"],
            "train_wall_s": m["train_wall_s"],
            "machine": m["machine"],
            "devices": m["devices"],
            "finished": m["finished"],
            "profile": m["profile"],
            "code": m["code"],
        }
        for i, m in enumerate(own)
    ]
    log = (out / "progress.log").read_text()
    assert "trained for 1.2 s" in log and "trained for 2.3 s" in log
    written = {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()}
    merge_into(out)  # already merged: nothing to do
    assert {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()} == written


def test_merged_meta_of_a_bucketed_grid_names_the_metrics_a_bucket_lacks(tiny_config):
    """Two shards of two static buckets (width 16, 32), a metric "b" logged by the first bucket alone: each shard's
    own meta.json names no metric missing from a bucket, the merge's names "b", from the joined metrics; its
    "buckets" are every shard's, in order, and no bucket was done before a resume of the merge (shard 0's own
    resume is its own). Known answer by hand (in memory, no training)."""
    from types import SimpleNamespace

    from nht_jax.results.blocks import merge_metrics

    config = tiny_config(grid={"width": [16, 32]})
    sizes = shards.bucket_sizes(config)
    assert sizes == [4, 4]
    found = [
        (
            shards.Shard(i, 2),
            SimpleNamespace(
                path=f"s{i}",
                meta={
                    "config_digest": f"d+shard-{i}-of-2",
                    "shard": {"runs": [4 * i, 4 * i + 4]},
                    "train_wall_s": 1.0,
                    "run_slices": 1,
                    "buckets": [{"values": {"width": width}}],
                    "buckets_done_before_resume": 1 - i,
                    "metrics_not_in_every_bucket": [],
                },
            ),
        )
        for i, width in enumerate((16, 32))
    ]  # shard 0 resumed after its bucket
    metrics = merge_metrics([({"a": np.ones((4, 3)), "b": np.ones((4, 3))}, 4), ({"a": np.ones((4, 3))}, 4)])
    meta = merge.merged_meta(config, "d", found, metrics, sizes)
    assert meta["metrics_not_in_every_bucket"] == ["b"] and meta["buckets_done_before_resume"] == 0
    assert meta["buckets"] == [{"values": {"width": 16}}, {"values": {"width": 32}}]
    assert (meta["config_digest"], meta["runs"], meta["steps"]) == ("d", 8, 40)


def test_a_k_of_k_folder_beside_the_shards_is_not_merged(sharded, finished, tmp_path):
    """OUT/shards/2-of-2 (here a copy of shard 1, as a count from 1 would name it) is no shard of K = 2: `nht merge
    OUT` leaves it out (it would otherwise be shard 1 given twice) and merges 0-of-2 and 1-of-2."""
    out = tmp_path / "out"
    shutil.copytree(sharded, out)
    shutil.copytree(out / "shards" / "1-of-2", out / "shards" / "2-of-2")
    assert merge.shard_folders(out) == ([out / "shards" / "0-of-2", out / "shards" / "1-of-2"], 2)
    merge_into(out)
    assert_same_results(out, finished)


def test_merge_refuses_a_shard_of_another_split(sharded, finished, tmp_path, capsys):
    """Shard 0 of 1 (the whole grid) with shard 1 of 2 of the same grid: indices 0 and 1, complete, of one
    configuration, but of two splits: refused in one line, nothing written."""
    whole = as_shard(finished, tmp_path / "0-of-1", shards.Shard(0, 1), [0, 2])
    err = merge_error(capsys, sharded / "shards" / "1-of-2", whole, "--out", tmp_path / "m")
    assert "is a shard of a split into 2, not 1" in err
    assert not (tmp_path / "m" / "meta.json").exists()


def test_merge_of_an_out_with_two_splits_merges_the_one_chosen(sharded, finished, tmp_path, capsys):
    """OUT/shards holding shards of K = 1 and K = 2: `nht merge OUT` asks for one (one line); --shards 2 merges 0-of-2
    and 1-of-2 alone, --shards 1 lists 0-of-1 alone."""
    out = tmp_path / "out"
    shutil.copytree(sharded, out)
    as_shard(finished, out / "shards" / "0-of-1", shards.Shard(0, 1), [0, 2])
    assert "holds shards of 2 splits (K = 1, K = 2): choose one with --shards K" in merge_error(capsys, out)
    assert merge.shard_folders(out, 1) == ([out / "shards" / "0-of-1"], 1)
    assert merge.shard_folders(out, 2) == ([out / "shards" / "0-of-2", out / "shards" / "1-of-2"], 2)
    merge_into(out, 2)
    assert_same_results(out, finished)


def test_merge_refuses_an_out_of_another_configuration(sharded, three_shards, tmp_path, capsys):
    """OUT holding another grid's results (FOUR's): the shards of TINY are not merged into it, its files untouched."""
    out = tmp_path / "out"
    shutil.copytree(three_shards[1], out)
    before = {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()}
    err = merge_error(capsys, sharded / "shards" / "0-of-2", sharded / "shards" / "1-of-2", "--out", out)
    assert "already holds results of another configuration" in err
    assert {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()} == before


def test_merge_refuses_what_is_not_a_complete_shard_of_this_partition(sharded, finished, tmp_path, capsys):
    """Each refusal of `read_shard` and `check_set` not met above, one line each, nothing written: no folders, an OUT
    without shards, a path that is no folder, an unsharded results folder, a shard with a damaged file (the hint:
    its own command with --overwrite), an unfinished folder not named I-of-K, a shard holding other runs than its
    block, shards whose config.toml is not the configuration their "shard" entry names."""
    s0, s1, m = sharded / "shards" / "0-of-2", sharded / "shards" / "1-of-2", tmp_path / "m"
    with pytest.raises(ConfigError, match="no shard folders to merge"):
        merge.merge([], m)
    (tmp_path / "empty").mkdir()
    assert "holds no shard folders (I-of-K)" in merge_error(capsys, tmp_path / "empty")
    assert "is not a folder" in merge_error(capsys, s0, tmp_path / "nothing", "--out", m)
    assert "is not a shard folder" in merge_error(capsys, s0, finished, "--out", m)

    damaged = shutil.copytree(s1, tmp_path / "damaged" / "1-of-2")
    (damaged / "summary.csv").write_text("run\n")
    err = merge_error(capsys, s0, damaged, "--out", m)
    assert "holds damaged results" in err and "--shards 2 --shard 1" in err and "--overwrite" in err

    unnamed = shutil.copytree(s1, tmp_path / "unnamed")
    (unnamed / "meta.json").unlink()
    assert "is unfinished" in (err := merge_error(capsys, s0, unnamed, "--out", m))
    assert "finish it with its `nht run` command" in err

    moved = shutil.copytree(s1, tmp_path / "moved" / "1-of-2")
    edit_meta(moved, shard={**json.loads((moved / "meta.json").read_text())["shard"], "runs": [0, 2]})
    assert "holds runs [0, 2], not the block [1, 2] of shard 1 of 2" in merge_error(capsys, s0, moved, "--out", m)

    renamed = [shutil.copytree(s, tmp_path / "renamed" / s.name) for s in (s0, s1)]
    for s in renamed:
        edit_meta(s, shard={**json.loads((s / "meta.json").read_text())["shard"], "config_digest": "0123456789abcdef"})
    assert "its config.toml is not the configuration its meta.json names" in merge_error(capsys, *renamed, "--out", m)
    assert not m.exists() or not any(m.iterdir())


def test_merge_refuses_a_shard_another_process_writes(sharded, tmp_path, capsys):
    """A shard folder whose lock is held (its `nht run --overwrite` training it again): refused in one line naming
    the folder, nothing written. The lock is taken here on another open file, as another process's would be."""
    import fcntl

    s1 = shutil.copytree(sharded / "shards" / "1-of-2", tmp_path / "held" / "1-of-2")
    with open(s1 / ".lock", "a+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        err = merge_error(capsys, sharded / "shards" / "0-of-2", s1, "--out", tmp_path / "m")
    assert f"'{s1}' is in use by" in err and "`nht merge` again" in err
    assert not (tmp_path / "m" / "meta.json").exists()


def test_merge_refuses_shards_of_different_code_unless_allowed(sharded, tmp_path, capsys):
    """Issue 46 item 1: shard 1 trained by a patched tree (its "code" another diff hash, at the same commit) is
    refused in one line naming both shards' code and --allow-mixed-code, nothing written; with the flag it merges,
    the mix recorded in meta.json and progress.log."""
    out = shutil.copytree(sharded, tmp_path / "out")
    s1 = out / "shards" / "1-of-2"
    code = json.loads((s1 / "meta.json").read_text())["code"]
    assert code["version"] and set(code) == {"version", "commit", "dirty", "diff_sha256"}
    patched = {**code, "commit": code["commit"] or "0" * 40, "dirty": True, "diff_sha256": "f" * 64}
    edit_meta(s1, code=patched)
    err = merge_error(capsys, out)
    assert "shards of different code: shard 0 of 2 ran" in err and "shard 1 of 2 ran" in err
    assert "uncommitted changes ffffffff" in err and "--allow-mixed-code" in err
    assert not (out / "meta.json").exists() and not (out / "summary.csv").exists()
    assert main(["merge", str(out), "--allow-mixed-code"]) == 0
    assert "merged shards of different code (--allow-mixed-code)" in capsys.readouterr().out
    meta = json.loads((out / "meta.json").read_text())
    assert meta["code"] == {"mixed": True, "allowed_by": "--allow-mixed-code", "shards": [code, patched]}
    assert meta["shards"]["code"] == "mixed" and [e["code"] for e in meta["shards"]["each"]] == [code, patched]
    assert "different code (--allow-mixed-code)" in (out / "progress.log").read_text()
    assert main(["merge", str(out)]) == 0  # merged already: said in one line, not refused
    assert "already holds the merged results" in capsys.readouterr().out


def test_merge_of_shards_without_code_notes_it_and_refuses_a_mix_of_known_and_unknown(sharded, tmp_path, capsys):
    """Shards of older code (no "code" in meta.json): all of them merge with a note ("code": null, verdict
    "unknown"); one of them beside a shard that records its code is refused as mixed."""

    def without_code(name):
        out = shutil.copytree(sharded, tmp_path / name)
        for i in range(2):
            path = out / "shards" / f"{i}-of-2" / "meta.json"
            meta = json.loads(path.read_text())
            del meta["code"]
            if name == "all" or i == 1:
                path.write_text(json.dumps(meta))
        return out

    old = without_code("all")
    assert main(["merge", str(old)]) == 0
    assert "record no code" in capsys.readouterr().out
    meta = json.loads((old / "meta.json").read_text())
    assert meta["code"] is None and meta["shards"]["code"] == "unknown"
    mixed = without_code("one")
    assert "shard 1 of 2 ran unknown" in merge_error(capsys, mixed)


def test_merge_of_one_code_records_it(sharded, tmp_path):
    out = shutil.copytree(sharded, tmp_path / "out")
    merge_into(out)
    meta = json.loads((out / "meta.json").read_text())
    shard_code = json.loads((out / "shards" / "0-of-2" / "meta.json").read_text())["code"]
    assert meta["code"] == shard_code and meta["shards"]["code"] == "same"
    assert meta["shards"]["merged_by_code"]["version"] == shard_code["version"]


# ----------------------------------------------------------------------------- nht submit --executor local


def test_submit_without_submitit_says_how_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "submitit", None)  # import submitit → ImportError
    assert main(["submit", *TINY, "--shards", "2", "--executor", "local", "--out", str(tmp_path / "x")]) == 2
    assert "pip install 'nht_jax[slurm]'" in capsys.readouterr().err


def test_submit_refuses_an_out_of_another_configuration(folder, capsys):
    """Before any job: OUT holds TINY's results, the submission another λ grid's."""
    assert (
        main(
            [
                "submit",
                *TINY,
                "--set",
                "grid.weight_decay=[0.01,2.0]",
                "--shards",
                "2",
                "--executor",
                "local",
                "--out",
                str(folder),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert "already holds results of another configuration" in err and "\n" not in err
    assert not (folder / "submit.json").exists() and not (folder / "submitit").exists()


def test_a_shard_folder_of_another_configuration_or_shard_is_never_done(sharded, tmp_path, capsys):
    """`nht submit` counts shard I done only when OUT/shards/I-of-K holds shard I of its configuration: not another
    grid's (another λ), not shard 0's results in shard 1's folder; and `nht run` of that shard refuses such a folder
    in one line rather than saying it is finished."""
    digest, other = digest_of(TINY), digest_of([*TINY, "--set", "grid.weight_decay=[0.01,2.0]"])
    assert digest != other
    assert all(submit.shard_done(sharded, shards.Shard(i, 2), digest) for i in range(2))
    assert not submit.shard_done(sharded, shards.Shard(1, 2), other)
    out = tmp_path / "out"
    shutil.copytree(sharded / "shards" / "0-of-2", out / "shards" / "1-of-2")
    assert not submit.shard_done(out, shards.Shard(1, 2), digest)
    for argv in (TINY, [*TINY, "--set", "grid.weight_decay=[0.01,2.0]"]):
        assert main(["run", *argv, "--out", str(out), "--quiet", "--shards", "2", "--shard", "1"]) == 2
        err = capsys.readouterr().err.strip()
        assert "already holds results of another shard or configuration" in err and "\n" not in err


def test_submit_refuses_a_submit_json_of_another_split_or_configuration(tmp_path, capsys):
    """OUT/submit.json of TINY into 1 shard (written as `nht submit` writes it): `nht submit --shards 2` (whose shards
    and jobs are others) refuses it in one line before any job; so does a submit.json of another configuration."""
    if importlib.util.find_spec("submitit") is None:
        pytest.skip("submitit is not installed (pip install 'nht_jax[slurm]')")
    identity = {
        "preset": "tiny",
        "overrides": TINY[2::2],
        "scale": None,
        "shards": 2,
        "config_digest": digest_of(TINY),
        "executor": "local",
    }
    assert submit.read_state(tmp_path, identity) == {**identity, "jobs": {}, "submissions": []}
    for changed in ({"shards": 1}, {"config_digest": digest_of([*TINY, "--set", "grid.weight_decay=[0.01,2.0]"])}):
        out = tmp_path / str(changed)
        out.mkdir()
        state = json.dumps(
            {
                **identity,
                **changed,
                "jobs": {"0": {"id": "999999999", "submitted": "", "stdout": "", "stderr": ""}},
                "submissions": [{"at": "", "shards": [0], "resubmitted": [], "jobs": ["999999999"]}],
            }
        )
        (out / "submit.json").write_text(state)
        with pytest.raises(ConfigError, match="holds a submission of another configuration or split"):
            submit.read_state(out, identity)
        assert main(["submit", *TINY, "--shards", "2", "--executor", "local", "--out", str(out), "--no-wait"]) == 2
        err = capsys.readouterr().err.strip()
        assert "holds a submission of another configuration or split" in err and "\n" not in err
        assert (out / "submit.json").read_text() == state and not (out / "submitit").exists()


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
