"""Snapshots of run states (`nht_jax.training.snapshots`): taken inside the compiled scan, bit-identical trajectories,
the state at T_fit, kept across a kill and resume."""

import shutil

import jax
import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.engine.executor import GridRun
from nht_jax.results import folder as results
from nht_jax.training import snapshots
from nht_jax.training import training
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
    settings = BASE + SNAP + ["execution.chunk_logs=1", "execution.checkpoint_every_s=0",
                              "execution.stop_rule=transition", "execution.stop_margin_steps=0",
                              "analysis.transition_threshold=0.3"]
    config = experiment.load("tiny", settings)
    reference = run_sweep(config, tmp_path / "uninterrupted", progress=False)
    assert 0 < reference.meta["runs_stopped"] < reference.num_runs, reference.stopped_step

    calls, call = {"n": 0}, training.Training.call

    def dies_in_call_6(self, s, live, n):
        calls["n"] += 1
        if calls["n"] == 6:  # after the runs that stop at step 250 left: their snapshots are in the store
            raise Killed
        return call(self, s, live, n)

    monkeypatch.setattr(training.Training, "call", dies_in_call_6)
    out = tmp_path / "killed"
    with pytest.raises(Killed):
        run_sweep(config, out, progress=False)
    with np.load(out / "checkpoint.npz") as checkpoint:
        assert int(checkpoint["logs_done"]) == 5
    before = snapshots.read(out / "snapshots.npz")
    gone = np.isfinite(reference.stopped_step)
    assert np.array_equal(before.taken["fit"], gone)  # the store: the runs that left; the others in the states
    kept_partial = shutil.copy(out / "snapshots.npz", tmp_path / "partial.npz")

    monkeypatch.setattr(training.Training, "call", call)
    resumed = run_sweep(config, out, progress=False)
    assert "resumed at step 250 of 300" in (out / "progress.log").read_text()
    after, whole = snapshots.read(out / "snapshots.npz"), snapshots.read(reference.path / "snapshots.npz")
    for kind in whole.kinds:
        assert np.array_equal(after.taken[kind], whole.taken[kind]) and np.array_equal(after.step[kind],
                                                                                      whole.step[kind])
        for a, b in zip(after.leaves[kind], whole.leaves[kind]):
            assert np.array_equal(a, b), kind
    for name, values in reference.metrics.items():
        assert np.array_equal(values, resumed.metrics[name], equal_nan=True), name
    partial = snapshots.read(kept_partial)
    stopped = np.flatnonzero(partial.taken["fit"])
    for a, b in zip(partial.leaves["fit"], whole.leaves["fit"]):
        assert np.array_equal(a[stopped], b[stopped])
    assert results.check_folder(out).complete
