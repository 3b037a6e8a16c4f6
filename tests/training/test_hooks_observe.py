"""Hooks only observe (issue 47, item 3): the loop owns what changes a result (the stop rule, re-packing, when a
checkpoint is due), so a sweep trained with no hooks at all gives the default hooks' metrics and stop steps bit for
bit; a hook sees each run slice as a read-only view, so one that tries to write a metric, a stop step, the active
runs or the states is refused at once, whatever point it tries at."""

import dataclasses

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.measure import stopping
from nht_jax.training import loop
from nht_jax.training import sweep as sweep_lib
from nht_jax.training.hooks import Hook, default_hooks

# The early-stop test's toy: 9 runs, three of which transition (and leave) within 800 steps and three (η = 1) diverge
# at once, so the stop rule, re-packing and a checkpoint after every chunk all happen.
SETTINGS = [
    "train.steps=800",
    "train.log_every=10",
    "execution.chunk_logs=2",
    "execution.strategy=map",
    "grid.weight_decay=[0.02, 0.01, 1e-4]",
    "grid.learning_rate=[0.1, 0.3, 1.0]",
    "stop.rule=transition_or_diverged",
    "stop.margin_steps=100",
    "execution.checkpoint_every_s=0",
]


def trained(out, hooks) -> loop.Trained:
    config = experiment.load("toy-linear", SETTINGS)
    data = config.domain.load_data(config)
    out.mkdir()
    sweep = loop.Sweep(
        config, sweep_lib.make_trainer(config, data, None), config.runs(), data, out, stopping.results_digest(config)
    )
    return loop.train(sweep, hooks(config))


class Meddler(Hook):
    """Tries, at every point that hands it a run slice, to change what training computes; records what happened."""

    def __init__(self):
        self.refused, self.allowed = [], []

    def meddle(self, point, s):
        attempts = {
            "a metric": lambda: s.buffer[next(iter(s.buffer))].__setitem__((0, 0), 0.0),
            "a stop step": lambda: s.stopped.__setitem__(0, 1.0),
            "the active runs": lambda: s.active.__setitem__(slice(None), 0) if s.active.size else s.active.sort(),
            "the states": lambda: setattr(s, "states", None),
            "the steps trained": lambda: setattr(s, "logs_done", 0),
        }
        for what, attempt in attempts.items():
            try:
                attempt()
            except (ValueError, dataclasses.FrozenInstanceError):
                self.refused.append((point, what))
            else:
                self.allowed.append((point, what))

    def on_slice_start(self, sweep, s):
        self.meddle("on_slice_start", s)

    def on_leave(self, sweep, s, rows):
        self.meddle("on_leave", s)

    def on_checkpoint(self, sweep, at):
        if at.slice is not None:
            self.meddle("on_checkpoint", at.slice)

    def after_chunk(self, sweep, s, chunk):
        self.meddle("after_chunk", s)

    def on_slice_end(self, sweep, s):
        self.meddle("on_slice_end", s)


@pytest.fixture(scope="module")
def with_default_hooks(tmp_path_factory):
    return trained(tmp_path_factory.mktemp("hooks") / "default", lambda config: default_hooks(config, False))


def assert_same_results(a: loop.Trained, b: loop.Trained):
    assert set(a.metrics) == set(b.metrics)
    for name, values in a.metrics.items():
        assert np.array_equal(values, b.metrics[name], equal_nan=True), name
    assert np.array_equal(a.stopped_step, b.stopped_step, equal_nan=True)


def test_a_sweep_with_no_hooks_gives_the_same_results_and_stops(with_default_hooks, tmp_path):
    bare = trained(tmp_path / "bare", lambda config: [])
    # the rule ran: three runs left after their transition (steps 191, 383, 575 in closed form, logged at 200, 390,
    # 580, plus the margin) and the three at η = 1 when they diverged
    assert sorted(bare.stopped_step[np.isfinite(bare.stopped_step)])[3:] == [300.0, 490.0, 680.0]
    assert np.isfinite(bare.stopped_step).sum() == 6
    assert_same_results(bare, with_default_hooks)
    assert not (tmp_path / "bare" / "checkpoint.npz").exists()  # writing checkpoints is a hook's job


def test_a_hook_cannot_write_what_training_computes(with_default_hooks, tmp_path):
    meddler = Meddler()
    meddled = trained(tmp_path / "meddled", lambda config: [meddler, *default_hooks(config, False)])
    assert meddler.allowed == []
    points = {point for point, _ in meddler.refused}
    assert points == {"on_slice_start", "on_leave", "on_checkpoint", "after_chunk", "on_slice_end"}
    assert_same_results(meddled, with_default_hooks)
