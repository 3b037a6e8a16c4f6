"""`nht merge` pinned by known answers, without training (issue 43): shard folders and the unsharded folder are written
by the sweep's own writer (`training.sweep.write_results`, as `nht run --shards K --shard I` and `nht run` call it)
from hand-made metrics, so every rule of `nht_jax.training.merge` runs in milliseconds: the merged folder is the
unsharded one bit for bit whatever order the shards are named in, meta.json's sums are sums (walls, run slices and
stopped runs chosen asymmetric so that a first, a last, a mean or a count cannot pass), progress.log names each
shard's runs and time, and each refusal names its rule. tests/training/test_shards.py checks the same on real
training; this file is what a mutation run of merge.py uses."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.measure import stopping
from nht_jax.results import folder as results
from nht_jax.results import lock, provenance
from nht_jax.training import merge, partition
from nht_jax.training.shards import describe
from nht_jax.training.sweep import write_results

from ..conftest import make_tiny_config

STEPS = np.array([0, 10, 20, 30, 40])
WALLS = (1.25, 2.5, 4.0)  # the shards' train_wall_s: their sum 7.75, not 3 × any one of them
SLICES = (1, 2, 4)  # their run_slices: sum 7


def config(stop_rule=False):
    """5 runs (5 λ × 1 seed), so that 3 shards hold blocks of different sizes (1, 2, 2)."""
    extra = {"stop_rule": "transition", "stop_margin_steps": 10} if stop_rule else {}
    return make_tiny_config(grid={"weight_decay": [0.01, 0.1, 0.3, 1.0, 3.0], "seed": [0]}, **extra)


def metrics(runs: int) -> dict:
    """Hand-made histories {name: (runs, logs)}: every run and log distinct, accuracies rising to 1 at different
    logs (so summaries differ run to run)."""
    r, t = np.arange(runs)[:, None], np.arange(len(STEPS))[None, :]
    train = np.minimum(1.0, 0.3 + 0.35 * t + 0.0 * r)
    test = np.minimum(1.0, 0.1 + 0.2 * t / (1 + r))
    return {
        "train_acc": train.astype(np.float32),
        "test_acc": test.astype(np.float32),
        "train_loss": (2.0 / (1 + t + r)).astype(np.float32),
        "test_loss": (3.0 / (1 + t)).repeat(runs, 0).astype(np.float32),
        "norm_sq": (100.0 - 7 * t + 3 * r).astype(np.float32),
        "finite": np.ones((runs, len(STEPS)), np.float32),
    }


def trained(metrics_: dict, stopped: np.ndarray, wall: float, run_slices: int, runs_stopped=None):
    """What `training.loop.train` returns, as `write_results` reads it."""
    stop_part = {} if runs_stopped is None else {"stop_rule": "transition (+10)", "runs_stopped": runs_stopped}
    sweep = SimpleNamespace(
        hooks=[],
        stop_rule_part=lambda: stop_part,
        describe=lambda: {
            "train_wall_s": wall,
            "execution": "map over 1 device",
            "run_slices": run_slices,
            "memory_plan": {},
            "profile": {"train": wall},
        },
    )
    return SimpleNamespace(
        metrics=metrics_, stopped_step=stopped, wall=wall, steps=STEPS, sweep=sweep, described=lambda: stop_part
    )


def stopped_steps(runs: int) -> np.ndarray:
    """Runs 1 and 3 stopped (at steps 20 and 30), the others trained to the end."""
    out = np.full(runs, np.nan)
    out[1], out[3] = 20.0, 30.0
    return out


def stops_early(cfg) -> bool:
    return stopping.StopRule(cfg.stop, cfg.analysis).active


def write_shards(out, cfg, count=3, walls=WALLS, slices=SLICES):
    """Shards 0 … count − 1 of `cfg` into OUT/shards/I-of-K, as `nht run … --shards K --shard I` writes them; the
    unsharded folder's metrics sliced. Returns the shard folders in index order."""
    runs, full, stops = cfg.runs(), metrics(5), stopped_steps(5)
    digest = stopping.results_digest(cfg)
    folders = []
    for index in range(count):
        shard = partition.Shard(index, count)
        lo, hi = partition.runs_of(cfg, shard)
        where = partition.folder(out, shard)
        where.mkdir(parents=True)
        part = {k: v[lo:hi] for k, v in full.items()}
        n_stopped = int(np.isfinite(stops[lo:hi]).sum()) if stops_early(cfg) else None
        write_results(
            where,
            cfg,
            partition.shard_digest(digest, shard),
            {k: np.asarray(v)[lo:hi] for k, v in runs.items()},
            trained(part, stops[lo:hi], walls[index], slices[index], n_stopped),
            None,
            run_index=np.arange(lo, hi),
            extra_meta={"shard": describe(cfg, shard, digest)},
        )
        folders.append(where)
    return folders


def write_unsharded(out, cfg):
    out.mkdir(parents=True)
    stops = stopped_steps(5)
    write_results(
        out,
        cfg,
        stopping.results_digest(cfg),
        cfg.runs(),
        trained(metrics(5), stops, 9.0, 1, int(np.isfinite(stops).sum()) if stops_early(cfg) else None),
        None,
    )
    return out


def arrays(folder) -> dict:
    with np.load(folder / "trajectories.npz") as data:
        return {k: data[k] for k in data.files}


def meta(folder) -> dict:
    return json.loads((folder / "meta.json").read_text())


@pytest.mark.parametrize("stop_rule", [False, True])
@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1), (1, 2, 0)])
def test_shards_in_any_order_merge_into_the_unsharded_folder(tmp_path, order, stop_rule):
    cfg = config(stop_rule)
    assert [partition.runs_of(cfg, partition.Shard(i, 3)) for i in range(3)] == [(0, 1), (1, 3), (3, 5)]
    shards = write_shards(tmp_path / "out", cfg)
    reference = write_unsharded(tmp_path / "reference", cfg)
    merged = merge.merge([shards[i] for i in order], tmp_path / "merged")
    a, b = arrays(merged), arrays(reference)
    assert set(a) == set(b)
    for name in b:
        assert np.array_equal(a[name], b[name], equal_nan=True), name
    assert (merged / "summary.csv").read_bytes() == (reference / "summary.csv").read_bytes()
    assert (merged / "config.toml").read_bytes() == (reference / "config.toml").read_bytes()
    m = meta(merged)
    assert m["config_digest"] == stopping.results_digest(cfg) and m["runs"] == 5 and m["steps"] == 40
    assert m["train_wall_s"] == 7.75 and m["run_slices"] == 7
    assert ("runs_stopped" in m) == stop_rule and m.get("runs_stopped", 2) == 2  # run 1 in shard 1, run 3 in shard 2
    each = m["shards"]["each"]
    assert each == [
        {
            "folder": str(s),
            "runs": meta(s)["shard"]["runs"],
            "train_wall_s": meta(s)["train_wall_s"],
            "machine": meta(s)["machine"],
            "devices": meta(s)["devices"],
            "finished": meta(s)["finished"],
            "profile": meta(s)["profile"],
            "code": meta(s)["code"],
        }
        for s in shards
    ]
    assert [e["runs"] for e in each] == [[0, 1], [1, 3], [3, 5]]
    assert [e["train_wall_s"] for e in each] == list(WALLS)
    assert m["shards"]["merged_by_code"] == provenance.code_provenance()
    assert abs(time.time() - time.mktime(time.strptime(m["finished"], "%Y-%m-%dT%H:%M:%S%z"))) < 600  # the merge's
    assert m["shards"]["count"] == 3 and m["shards"]["code"] == "same" and m["code"] == meta(shards[0])["code"]
    assert "shard" not in m and "files" in m and "profile" not in m
    assert [e["profile"] for e in each] == [{"train": wall} for wall in WALLS]  # each shard's own
    lines = [line.split("  ", 1)[1] for line in (merged / "progress.log").read_text().splitlines()]
    assert lines == [
        f"shard 0 of 3: runs 0–0 (1) from {shards[0]}, trained for 1.2 s",
        f"shard 1 of 3: runs 1–2 (2) from {shards[1]}, trained for 2.5 s",
        f"shard 2 of 3: runs 3–4 (2) from {shards[2]}, trained for 4.0 s",
        "merged: 3 shards, 40 steps × 5 runs; results written",
    ]


def test_merging_into_a_folder_that_holds_the_merge_writes_nothing(tmp_path, capsys):
    cfg = config()
    shards = write_shards(tmp_path / "out", cfg)
    merged = merge.merge(shards, tmp_path / "merged")

    def written():  # the results, not the lock the merge holds
        return {p.name: p.stat().st_mtime_ns for p in merged.iterdir() if p.name != ".lock"}

    before = written()
    assert merge.merge(shards[::-1], merged) == merged
    assert "already holds the merged results of these 3 shards" in capsys.readouterr().out
    assert written() == before


def test_merge_out_finds_the_shards_of_one_split_and_leaves_other_names_out(tmp_path):
    cfg = config()
    out = tmp_path / "out"
    shards = write_shards(out, cfg)
    (out / "shards" / "3-of-3").mkdir()  # no shard of K = 3 (indices 0 … 2)
    (out / "shards" / "notes").mkdir()
    assert merge.shard_folders(out) == (shards, 3)
    write_shards(tmp_path / "two", cfg, count=2)
    (out / "shards" / "0-of-2").mkdir()
    with pytest.raises(ConfigError, match="holds shards of 2 splits"):
        merge.shard_folders(out)
    assert merge.shard_folders(out, 3) == (shards, 3)
    assert merge.shard_folders(out, 2) == ([out / "shards" / "0-of-2"], 2)
    with pytest.raises(ConfigError, match="holds no shard folders"):
        merge.shard_folders(tmp_path / "empty")


def refusal(folders, out) -> str:
    with pytest.raises(ConfigError) as raised:
        merge.merge(folders, out)
    assert not out.exists() or not (out / "meta.json").exists()
    return str(raised.value)


def test_each_refusal_names_its_rule_and_writes_nothing(tmp_path):
    cfg = config()
    s0, s1, s2 = write_shards(tmp_path / "out", cfg)
    assert "is given twice" in refusal([s0, s1, s2, s1], tmp_path / "m1")
    assert "shard 1 of 3 is missing" in refusal([s0, s2], tmp_path / "m2")
    assert "shards 1, 2 of 3 are missing" in refusal([s0], tmp_path / "m3")
    assert "shard 0 of 3 is missing" in refusal([s1, s2], tmp_path / "m3b")  # the first shard counts too
    assert "shards 0, 2 of 3 are missing" in refusal([s1], tmp_path / "m3c")
    other = write_shards(tmp_path / "other", config(stop_rule=True))
    assert "is a shard of another configuration" in refusal([s0, other[1], s2], tmp_path / "m4")
    two = write_shards(tmp_path / "two", cfg, count=2)
    assert "is a shard of a split into 2, not 3" in refusal([s0, two[1], s2], tmp_path / "m5")
    assert "no shard folders to merge" in refusal([], tmp_path / "m6")
    assert "is not a folder" in refusal([s0, s1, tmp_path / "nowhere"], tmp_path / "m7")
    unsharded = write_unsharded(tmp_path / "plain", cfg)
    assert "is not a shard folder" in refusal([s0, s1, unsharded], tmp_path / "m8")


def test_a_shard_whose_runs_are_not_its_block_is_refused(tmp_path):
    cfg = config()
    s0, s1, s2 = write_shards(tmp_path / "out", cfg)
    m = meta(s1)
    m["shard"]["runs"] = [1, 4]
    (s1 / "meta.json").write_text(json.dumps(m))
    assert "holds runs [1, 4], not the block [1, 3] of shard 1 of 3" in refusal([s0, s1, s2], tmp_path / "m")


def test_shards_that_logged_other_steps_are_refused(tmp_path):
    cfg = config()
    s0, s1, s2 = write_shards(tmp_path / "out", cfg)
    data = arrays(s2)
    data["step"] = data["step"] + 1
    np.savez(s2 / "trajectories.npz", **data)
    m = meta(s2)
    m.pop("files", None)  # written anew below with the changed file's manifest
    results.write_meta(s2, m)
    assert "logged other steps than" in refusal([s0, s1, s2], tmp_path / "m")


def test_mixed_code_is_refused_unless_allowed_and_then_recorded(tmp_path, capsys):
    cfg = config()
    s0, s1, s2 = write_shards(tmp_path / "out", cfg)
    m = meta(s1)
    patched = dict(m["code"] or {}, dirty=True, diff_sha256="0" * 64)
    m["code"] = patched
    (s1 / "meta.json").write_text(json.dumps(m))
    message = refusal([s0, s1, s2], tmp_path / "m")
    assert not (tmp_path / "m").exists()  # refused before the folder (or its lock) is made
    assert "shards of different code" in message and "--allow-mixed-code" in message
    assert (
        f"shards 0, 2 of 3 ran {provenance.describe(meta(s0)['code'])}; shard 1 of 3 ran {provenance.describe(patched)}"
    ) in message
    merged = merge.merge([s0, s1, s2], tmp_path / "allowed", allow_mixed_code=True)
    code = meta(merged)["code"]
    assert code["mixed"] is True and code["allowed_by"] == "--allow-mixed-code"
    assert code["shards"] == [meta(s0)["code"], patched, meta(s2)["code"]]
    assert meta(merged)["shards"]["code"] == "mixed"
    assert "note: merged shards of different code" in capsys.readouterr().out
    logged = [line.split("  ", 1)[1] for line in (merged / "progress.log").read_text().splitlines()]
    assert logged[0] == (
        "merged shards of different code (--allow-mixed-code): shards 0, 2 of 3 ran "
        f"{provenance.describe(meta(s0)['code'])}; shard 1 of 3 ran {provenance.describe(patched)}"
    )
    # merged already: the same shards again without the flag are not refused, nothing is written
    assert merge.merge([s0, s1, s2], merged) == merged
    assert "already holds the merged results" in capsys.readouterr().out


def test_shards_that_record_no_code_merge_with_a_note(tmp_path, capsys):
    cfg = config()
    folders = write_shards(tmp_path / "out", cfg)
    for s in folders:
        m = meta(s)
        m.pop("code")
        (s / "meta.json").write_text(json.dumps(m))
    merged = merge.merge(folders, tmp_path / "m")
    assert meta(merged)["code"] is None and meta(merged)["shards"]["code"] == "unknown"
    assert capsys.readouterr().out.splitlines()[0] == (
        "note: the shards' meta.json record no code (written before nht_jax recorded it): merged without checking "
        "that one code trained them"
    )


def test_the_merged_meta_sums_what_older_shards_lack_as_zero_and_rounds_the_wall(tmp_path):
    """A shard written before "train_wall_s", "run_slices" or "runs_stopped" existed counts 0 for it; the summed
    wall is rounded to 10 ms (0.1 + 0.2 + 0.4 is 0.7000000000000001 in floats: written 0.7); fields of how a shard
    was made ("recovered", "profile", its "shard" entry, its file list) are not the merge's."""
    cfg = config(stop_rule=True)
    assert 0.1 + 0.2 + 0.4 != 0.7
    s0, s1, s2 = write_shards(tmp_path / "out", cfg, walls=(0.1, 0.2, 0.4))
    m = meta(s0)
    m["recovered"] = "meta.json written again"
    m.pop("files")
    results.write_meta(s0, m)
    merged = merge.merge([s0, s1, s2], tmp_path / "m")
    got = meta(merged)
    assert got["train_wall_s"] == 0.7 and got["run_slices"] == 7 and got["runs_stopped"] == 2
    assert not {"recovered", "profile", "shard"} & set(got)
    for s, key in ((s1, "train_wall_s"), (s2, "run_slices"), (s1, "runs_stopped")):
        m = meta(s)
        m.pop(key)
        m.pop("files")
        results.write_meta(s, m)
    m = meta(s0)  # a wall written by hand to the millisecond, and shard 0 finished long ago
    m.update(train_wall_s=0.104, finished="2020-01-01T00:00:00+0000")
    m.pop("files")
    results.write_meta(s0, m)
    older = merge.merge([s0, s1, s2], tmp_path / "older")
    got = meta(older)
    assert got["train_wall_s"] == 0.5 and got["run_slices"] == 3 and got["runs_stopped"] == 1  # 0.504 → 0.5
    assert got["finished"] != "2020-01-01T00:00:00+0000"  # the merge's own time, not shard 0's
    assert f"from {s1}, trained for 0.0 s" in (older / "progress.log").read_text()  # no wall recorded: 0


def test_an_unfinished_shard_is_named_with_the_command_that_finishes_it(tmp_path):
    cfg = config()
    s0, s1, s2 = write_shards(tmp_path / "out", cfg)
    (s1 / "meta.json").unlink()
    message = refusal([s0, s1, s2], tmp_path / "m")
    assert f"shard folder '{s1}' is unfinished" in message
    assert "nht run PRESET --shards 3 --shard 1 --out OUT" in message
    elsewhere = tmp_path / "renamed"
    s1.rename(elsewhere)
    assert "finish it with its `nht run` command, then merge" in refusal([s0, elsewhere, s2], tmp_path / "m2")


def test_a_duplicate_names_both_folders_and_a_shard_held_by_a_run_is_refused(tmp_path):
    cfg = config()
    s0, s1, s2 = write_shards(tmp_path / "out", cfg)
    copy = tmp_path / "copy" / "1-of-3"
    copy.parent.mkdir()
    import shutil

    shutil.copytree(s1, copy)
    assert f"shard 1 of 3 is given twice: '{s1}' and '{copy}'" in refusal([s0, s1, copy, s2], tmp_path / "m")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(s2)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout.readline().strip() == "held"  # waits for the other process, however loaded the machine
        held = refusal([s0, s1, s2], tmp_path / "m2")
    finally:
        holder.communicate("", timeout=300)
    assert str(s2) in held and "wait for it to finish and run `nht merge` again" in held


HOLDER = """
import sys
from nht_jax.results import lock
with lock.hold(sys.argv[1], "nht run"):
    print("held", flush=True)
    sys.stdin.read()
"""
ROOT = Path(__file__).resolve().parents[2]


def test_while_it_writes_the_merge_holds_its_folder_as_nht_merge(tmp_path, monkeypatch):
    """Whoever else tries the folder while the merge writes is told who holds it: the lock file names `nht merge`
    and this process."""
    shards = write_shards(tmp_path / "out", config())
    out, seen = tmp_path / "merged", []
    joined = merge.merge_metrics

    def reading_the_lock(*args, **kwargs):
        seen.append(json.loads((out / lock.LOCK_NAME).read_text()))
        return joined(*args, **kwargs)

    monkeypatch.setattr(merge, "merge_metrics", reading_the_lock)
    merge.merge(shards, out)
    assert len(seen) == 1 and seen[0]["command"] == "nht merge" and seen[0]["pid"] == os.getpid()


def test_a_shard_holding_a_pickled_array_is_refused_in_one_line_never_unpickled(tmp_path):
    """An object array in trajectories.npz (nht_jax never writes one; loading it would run pickle) with a manifest
    that lists the file as it is: refused by name, nothing merged."""
    s0, s1, s2 = write_shards(tmp_path / "out", config())
    data = arrays(s1)
    data["metric/planted"] = np.array([{"a": 1}, {"b": 2}], dtype=object)
    np.savez(s1 / "trajectories.npz", **data)
    m = meta(s1)
    m.pop("files")
    results.write_meta(s1, m)
    message = refusal([s0, s1, s2], tmp_path / "m")
    assert f"'{s1 / 'trajectories.npz'}' holds what nht_jax never writes" in message and "allow_pickle" in message
