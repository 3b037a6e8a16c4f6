"""The chunk sizer (`nht_jax.training.chunks`) times the compiled calls only: a slow live table between chunks
(`nht_jax.training.hooks.LiveTableHook`, `live.enabled`) leaves the chunks as they are with the table off. Timings are
simulated on a fake clock (no timing assertions, no sleeps): every log interval takes 1 s, the live step 60 s."""

import dataclasses
import types

import pytest

from nht_jax.engine.executor import GridRun
from nht_jax.training import hooks
from nht_jax.training import loop
from nht_jax.training import sweep

SECONDS_PER_LOG = 1.0
LIVE_STEP_SECONDS = 60.0  # longer than a chunk (execution.chunk_seconds = 5): counted in, every chunk would be one log


class FakeClock:
    """perf_counter advances only when told to: a compiled call of n logs by n s, a live step by 60 s."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


@pytest.fixture
def clocked(monkeypatch):
    """The fake clock in the training loop (its wall-clock `time.time` stays real), with the calls' sizes and the
    live steps recorded."""
    clock, sizes, live_steps = FakeClock(), [], []
    monkeypatch.setattr(loop, "time", types.SimpleNamespace(perf_counter=clock.perf_counter, time=loop.time.time))
    real_advance, real_live = GridRun.advance, hooks.LiveTableHook.after_chunk

    def advance(grid_run, states, n, every=None):
        out = real_advance(grid_run, states, n, every)
        clock.now += n * SECONDS_PER_LOG
        sizes.append(n)
        return out

    def slow_live_step(hook, sweep_, s, chunk):
        clock.now += LIVE_STEP_SECONDS
        live_steps.append(s.logs_done)
        real_live(hook, sweep_, s, chunk)

    monkeypatch.setattr(GridRun, "advance", advance)
    monkeypatch.setattr(hooks.LiveTableHook, "after_chunk", slow_live_step)
    return sizes, live_steps


@pytest.mark.parametrize("live", [True, False])
def test_a_slow_live_step_does_not_shrink_the_chunks(tmp_path, tiny_config, clocked, live):
    sizes, live_steps = clocked
    config = tiny_config(steps=120, log_every=10, chunk_logs=0)
    config = dataclasses.replace(config, live=dataclasses.replace(config.live, enabled=live))
    sweep.run_sweep(config, tmp_path / "out", progress=False)
    # 1 s per log interval, 5 s chunks: [1] (compiles), [1] (timed), [4] (compiles), [4], then the last 2 logs as
    # calls of a size compiled already: the same as with nothing between the chunks
    assert sizes == [1, 1, 4, 4, 1, 1]
    assert live_steps == [1, 2, 6, 10, 12]  # after every chunk (the table itself is off with live = false)
    lines = (tmp_path / "out" / "progress.log").read_text()
    assert ("live at step 120" in lines) == live
