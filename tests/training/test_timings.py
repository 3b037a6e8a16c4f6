"""The training loop's timing record (`nht_jax.training.timings`), on a fake clock: parts add up, a block timed
inside another is counted once, under its own part."""

import types

from nht_jax.training import timings


def test_nested_parts_are_counted_once(monkeypatch):
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(timings, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))
    t = timings.Timings()
    with t.timed("checkpoint"):
        clock.now += 1.0
        with t.timed("snapshots"):  # a checkpoint's snapshots.npz, written inside it
            clock.now += 2.0
        clock.now += 0.5
    t.add("train", 4.0)
    t.move("train", "live.png", 1.0)
    assert t.seconds == {"checkpoint": 1.5, "snapshots": 2.0, "train": 3.0, "live.png": 1.0}
    assert t.describe(wall=10.0) == {"checkpoint": 1.5, "snapshots": 2.0, "train": 3.0, "live.png": 1.0, "loop": 2.5}
    assert t.describe(wall=1.0)["loop"] == 0.0  # never below zero
