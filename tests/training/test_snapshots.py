"""Snapshots of run states (`nht_jax.training.snapshots`): taken inside the compiled scan, bit-identical trajectories,
the state at T_fit, kept across a kill and across a stop signal and resume (a fork starts from them), none after a
run's stopped_step, and never an incomplete snapshots.npz written or read."""

import shutil
import signal

import jax
import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.base.atomic import atomic_write_bytes, npz_bytes
from nht_jax.base.errors import ConfigError
from nht_jax.engine.executor import GridRun
from nht_jax.training import fork
from nht_jax.training import loop
from nht_jax.results import folder as results
from nht_jax.training import signals
from nht_jax.training import snapshots
from nht_jax.training.sweep import run_sweep

BASE = ["train.steps=300", "model.hidden=[16]"]
SNAP = ["execution.snapshot_steps=[100]", "execution.snapshot_at_fit=true"]


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("snapshots")
    plain = run_sweep(experiment.load("tiny", BASE), root / "plain", progress=False)
    kept = run_sweep(experiment.load("tiny", BASE + SNAP), root / "snap", progress=False)
    return plain, kept


def evaluated(config, leaves: list) -> dict:
    """The metrics of stacked run states given as leaves (one row per run of config), evaluated by the sweep's
    program."""
    trainer = config.domain.make_trainer(config, config.domain.load_data(config))
    grid = GridRun(trainer, config.runs(), config.execution)
    structure = jax.tree.structure(jax.eval_shape(grid.init))
    return grid.evaluate(grid.place(jax.tree.unflatten(structure, leaves)))


def test_trajectories_with_and_without_snapshots_are_bit_identical(sweeps):
    plain, kept = sweeps
    assert plain.meta["config_digest"] == kept.meta["config_digest"]
    for name, values in plain.metrics.items():
        assert np.array_equal(values, kept.metrics[name], equal_nan=True), name
    assert (plain.path / "summary.csv").read_text() == (kept.path / "summary.csv").read_text()
    assert "snapshot" not in (plain.path / "config.toml").read_text()  # unset: config.toml as before
    assert "snapshots.npz" in kept.meta["files"] and "snapshots.npz" not in plain.meta["files"]
    assert not (plain.path / "snapshots.npz").exists()


def test_the_snapshot_at_fit_is_the_state_at_t_fit_and_a_step_snapshot_the_state_at_its_step(sweeps):
    _, kept = sweeps
    snaps = snapshots.read(kept.path / "snapshots.npz")
    assert snaps.kinds == ("step_100", "fit") and snaps.digest == kept.meta["config_digest"]
    assert snaps.paths[0].startswith(".params")
    t_fit = np.array([row["T_fit"] for row in kept.summary])
    assert np.isfinite(t_fit).all() and len(set(t_fit)) > 1  # runs fit at different chunks' steps
    assert np.array_equal(snaps.step["fit"], t_fit) and snaps.taken["fit"].all()
    assert (snaps.step["step_100"] == 100).all()
    for kind, steps in (("fit", t_fit), ("step_100", np.full(len(t_fit), 100))):
        metrics = evaluated(kept.config, snaps.leaves[kind])
        rows = np.searchsorted(kept.steps, steps)
        for name, values in metrics.items():
            expected = kept.metrics[name][np.arange(len(rows)), rows]
            assert np.array_equal(values[:, 0], expected, equal_nan=True), (kind, name)


def test_snapshot_steps_must_be_logged_steps_and_snapshots_need_one_compiled_program():
    with pytest.raises(ConfigError, match="not logged steps; choose multiples of train.log_every = 50"):
        experiment.load("tiny", ["execution.snapshot_steps=[120]"])
    with pytest.raises(ConfigError, match="repeats a step"):
        experiment.load("tiny", ["execution.snapshot_steps=[100, 100]"])
    with pytest.raises(ConfigError, match="static axes width"):
        experiment.load("tiny", ["execution.snapshot_at_fit=true", "grid.width=[8, 16]"])


class Killed(Exception):
    """Stands for the process dying at a chunk boundary, right after a checkpoint."""


def test_snapshots_taken_before_a_kill_survive_the_resume(tmp_path, monkeypatch):
    # runs leave the batch as they "transition" (test acc ≥ 0.3), so snapshots live both in the store (runs gone)
    # and in the checkpointed states (runs still training) when the sweep dies
    settings = (
        BASE
        + SNAP
        + [
            "execution.chunk_logs=1",
            "execution.checkpoint_every_s=0",
            "stop.rule=transition",
            "stop.margin_steps=0",
            "analysis.transition_threshold=0.3",
        ]
    )
    config = experiment.load("tiny", settings)
    reference = run_sweep(config, tmp_path / "uninterrupted", progress=False)
    assert 0 < reference.meta["runs_stopped"] < reference.num_runs, reference.stopped_step

    calls, call = {"n": 0}, loop.call

    def dies_in_call_6(sweep, s, live, n):
        calls["n"] += 1
        if calls["n"] == 6:  # after the runs that stop at step 250 left: their snapshots are in the store
            raise Killed
        return call(sweep, s, live, n)

    monkeypatch.setattr(loop, "call", dies_in_call_6)
    out = tmp_path / "killed"
    with pytest.raises(Killed):
        run_sweep(config, out, progress=False)
    with np.load(out / "checkpoint.npz") as checkpoint:
        assert int(checkpoint["logs_done"]) == 5
    before = snapshots.read(out / "snapshots.npz")
    gone = np.isfinite(reference.stopped_step)
    assert np.array_equal(before.taken["fit"], gone)  # the store: the runs that left; the others in the states
    kept_partial = shutil.copy(out / "snapshots.npz", tmp_path / "partial.npz")

    monkeypatch.setattr(loop, "call", call)
    resumed = run_sweep(config, out, progress=False)
    assert "resumed at step 250 of 300" in (out / "progress.log").read_text()
    after, whole = snapshots.read(out / "snapshots.npz"), snapshots.read(reference.path / "snapshots.npz")
    for kind in whole.kinds:
        assert np.array_equal(after.taken[kind], whole.taken[kind]) and np.array_equal(
            after.step[kind], whole.step[kind]
        )
        for a, b in zip(after.leaves[kind], whole.leaves[kind]):
            assert np.array_equal(a, b), kind
    for name, values in reference.metrics.items():
        assert np.array_equal(values, resumed.metrics[name], equal_nan=True), name
    partial = snapshots.read(kept_partial)
    stopped = np.flatnonzero(partial.taken["fit"])
    for a, b in zip(partial.leaves["fit"], whole.leaves["fit"]):
        assert np.array_equal(a[stopped], b[stopped])
    assert results.check_folder(out).complete


def stop_after_call(monkeypatch, n: int) -> None:
    """SIGTERM as `nht run` receives it (`signals.requested` answers it), from compiled call n on: the sweep stops
    at the boundary after that call, with a checkpoint."""
    calls, call = {"n": 0}, loop.call

    def counted(sweep, s, live, k):
        calls["n"] += 1
        return call(sweep, s, live, k)

    monkeypatch.setattr(loop, "call", counted)
    monkeypatch.setattr(signals, "requested", lambda: signal.SIGTERM if calls["n"] >= n else None)


def same_npz(a, b) -> None:
    with np.load(a) as x, np.load(b) as y:
        assert sorted(x.files) == sorted(y.files)
        for key in y.files:
            assert np.array_equal(x[key], y[key]), key


def test_a_sweep_stopped_before_any_run_left_resumes_with_every_snapshot_and_a_fork_starts_from_it(
    sweeps, tmp_path, monkeypatch
):
    # stopped at step 150: no run has left training, so every snapshot taken (step 0 … step 100, T_fit of the
    # fast runs) is only in the checkpoint's states, and snapshots.npz is written with none yet
    _, kept = sweeps
    config = experiment.load("tiny", BASE + SNAP + ["execution.chunk_logs=1", "execution.checkpoint_every_s=3600"])
    out = tmp_path / "stopped"
    stop_after_call(monkeypatch, 3)
    with pytest.raises(signals.Stopped, match="stopped .SIGTERM. at step 150 of 300"):
        run_sweep(config, out, progress=False)
    monkeypatch.undo()
    resumed = run_sweep(config, out, progress=False)
    assert "resumed at step 150 of 300" in (out / "progress.log").read_text()
    same_npz(out / "snapshots.npz", kept.path / "snapshots.npz")  # every array, bit for bit the uninterrupted one's
    assert resumed.meta["snapshots"] == kept.meta["snapshots"] and results.check_folder(out).complete
    forked = experiment.load(
        "tiny",
        [
            "model.hidden=[16]",
            "train.steps=50",
            f"fork.from={str(out)!r}",
            "fork.select={weight_decay = 1.0}",
            'fork.step="fit"',
        ],
    )
    res = run_sweep(forked, tmp_path / "forked", progress=False)
    for r in range(res.num_runs):  # step 0 of the fork is its source run at T_fit
        source = {s["seed"]: s for s in res.config.fork.sources}[int(res.hparams["seed"][r])]
        j = int(np.searchsorted(kept.steps, source["step"]))
        for name, values in res.metrics.items():
            assert np.array_equal(values[r, 0], kept.metrics[name][source["run"], j], equal_nan=True), name


def test_no_snapshot_after_a_runs_stopped_step_is_kept_across_a_stop_and_resume(tmp_path, monkeypatch):
    # one chunk spans the whole run, so the runs that stop at step 250 train on to step 300 and take its snapshot
    # in the compiled scan; stopped after call 5 of 6 (runs left at 250) and resumed
    settings = BASE + [
        "execution.snapshot_steps=[100, 300]",
        "execution.snapshot_at_fit=true",
        "stop.rule=transition",
        "stop.margin_steps=0",
        "analysis.transition_threshold=0.3",
    ]
    whole = run_sweep(
        experiment.load("tiny", settings + ["execution.chunk_logs=6"]), tmp_path / "whole", progress=False
    )
    config = experiment.load("tiny", settings + ["execution.chunk_logs=1", "execution.checkpoint_every_s=3600"])
    stop_after_call(monkeypatch, 5)
    with pytest.raises(signals.Stopped):
        run_sweep(config, tmp_path / "resumed", progress=False)
    monkeypatch.undo()
    resumed = run_sweep(config, tmp_path / "resumed", progress=False)
    stopped = np.isfinite(whole.stopped_step)
    assert stopped.any() and (whole.stopped_step[stopped] < 300).all()
    for res in (whole, resumed):
        np.testing.assert_array_equal(res.stopped_step, whole.stopped_step)
        snaps = snapshots.read(res.path / "snapshots.npz")
        for kind in snaps.kinds:
            after = snaps.taken[kind] & (snaps.step[kind] > np.where(stopped, whole.stopped_step, np.inf))
            assert not after.any(), (kind, snaps.step[kind], whole.stopped_step)
        assert not snaps.taken["step_300"][stopped].any() and snaps.taken["step_300"][~stopped].all()
        assert all((x[stopped] == 0).all() for x in snaps.leaves["step_300"])
    same_npz(resumed.path / "snapshots.npz", whole.path / "snapshots.npz")
    run = int(np.flatnonzero(stopped)[0])
    settings = [
        "model.hidden=[16]",
        "fork.step=300",
        f"grid.seed=[{int(whole.hparams['seed'][run])}]",
        f"fork.select={{weight_decay = {float(whole.hparams['weight_decay'][run])!r}}}",
    ]
    with pytest.raises(ConfigError, match="have no snapshot at step 300"):  # a fork cannot start after the stop
        fork.prepare(experiment.load("tiny", [*settings, f"fork.from={str(whole.path)!r}"]))
    # a folder whose snapshots.npz holds one all the same (written by other code, its manifest made to match) is
    # refused as a fork's source
    planted = tmp_path / "planted"
    shutil.copytree(whole.path, planted)
    with np.load(planted / "snapshots.npz") as data:
        arrays = {k: data[k] for k in data.files}
    arrays["step_300/taken"][run], arrays["step_300/step"][run] = True, 300
    atomic_write_bytes(planted / "snapshots.npz", npz_bytes(arrays))
    results.write_meta(planted, {k: v for k, v in whole.meta.items() if k != "files"})
    with pytest.raises(
        ConfigError,
        match=f"holds snapshot step_300 of run {run} at step 300, stopped at step {whole.stopped_step[run]:g}",
    ):
        fork.prepare(experiment.load("tiny", [*settings, f"fork.from={str(planted)!r}"]))


def test_an_incomplete_snapshot_store_is_never_written_nor_read(tmp_path):
    store = snapshots.Store(("step_100",), 2)
    store.paths = [".params['Dense_0']['kernel']"]
    store.taken["step_100"][0], store.step["step_100"][0] = True, 100  # taken, but no state arrays
    with pytest.raises(
        RuntimeError,
        match=r"store is incomplete \(1 run\(s\) have snapshot step_100 without all of "
        r"their state \(0 state arrays for 1 state leaves\)\)",
    ):
        store.write(tmp_path, "digest")
    assert not (tmp_path / snapshots.SNAPSHOTS).exists()
    for paths in (store.paths, []):  # such a file on disk (another version's): refused, whether or not it names paths
        store.paths = paths
        atomic_write_bytes(tmp_path / snapshots.SNAPSHOTS, npz_bytes(store.arrays("digest")))
        with pytest.raises(ConfigError, match="is not a readable snapshots file"):
            snapshots.read(tmp_path / snapshots.SNAPSHOTS)
