"""Grids larger than memory: the estimate's terms, the cap, the split into run-chunks; a sweep under a cap that forces
several run-chunks gives the metrics of one run-chunk bit for bit, logs its plan, and a kill in its last run-chunk
resumes there."""

import jax
import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.engine import memory
from nht_jax.engine.executor import GridRun
from nht_jax.engine.settings import ExecutionConfig
from nht_jax.run import results, sweep

SETTINGS = ["train.steps=40", "train.log_every=10", "execution.chunk_logs=2", "execution.strategy=map",
            "model.hidden=[16]", "grid.weight_decay=[0.01, 0.1, 1.0]", "grid.seed=[0, 1]"]  # 6 runs


def config(*extra):
    return experiment.load("tiny", [*SETTINGS, *extra])


@pytest.fixture(scope="module")
def estimate():
    c = config()
    data = c.domain.load_data(c)
    return memory.estimate(c.domain.make_trainer(c, data), c.runs(), data, c.execution, 5)


def test_the_estimate_counts_state_history_buffers_and_data(estimate):
    c = config()
    one = jax.tree.map(lambda x: x[0], c.runs())
    trainer = experiment.make_trainer(c)
    state = jax.eval_shape(trainer.init, one)
    assert estimate.state == sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(state))
    assert estimate.history == 5 * 4 * len(jax.eval_shape(trainer.evaluate, state, one))  # float32 metrics × logs
    assert estimate.measured and estimate.io >= 2 * estimate.state and estimate.temp_1 > 0
    assert estimate.shared > 0 and estimate.temp_step == 0 and not estimate.vectorised  # lax.map, one at a time
    per_run = estimate.bytes_for(2) - estimate.bytes_for(1)
    assert per_run == estimate.io + estimate.history  # sequential: buffers do not grow with the runs
    assert estimate.bytes_for(6) == estimate.bytes_for(1) + 5 * per_run


def test_vectorised_buffers_grow_with_the_runs():
    c = config("execution.strategy=vmap")
    data = c.domain.load_data(c)
    est = memory.estimate(c.domain.make_trainer(c, data), c.runs(), data, c.execution, 5)
    assert est.vectorised and est.temp_step > 0
    assert est.bytes_for(4) - est.bytes_for(3) == est.io + est.history + est.temp_step


@pytest.mark.parametrize("fit,runs,expected", [(6, 6, 6), (3, 6, 3), (4, 6, 3), (5, 6, 3), (2, 7, 2), (1, 6, 1),
                                               (0, 6, 1)])
def test_run_chunks_fit_the_cap_and_are_even(estimate, fit, runs, expected):
    cap = estimate.bytes_for(fit) if fit else estimate.bytes_for(1) - 1
    assert memory.runs_that_fit(estimate, cap, runs) == expected  # 4 or 5 that fit → 2 run-chunks of 3


def test_the_cap_comes_from_the_setting_or_the_host():
    assert memory.device_cap(ExecutionConfig(memory_cap_gib=0.5)) == (2 ** 29, "execution.memory_cap_gib")
    cap, source = memory.device_cap(ExecutionConfig())
    if jax.default_backend() == "cpu":
        assert "half the host's" in source and "report no memory limit" in source and cap > 0
    with pytest.raises(experiment.ConfigError, match="execution.memory_cap_gib must be ≥ 0"):
        config("execution.memory_cap_gib=-1")


def test_intermediate_bytes_counts_every_value_once():
    """sin and +1 on 10 float32 (40 bytes each), then a scan of 3 steps whose body makes one (10,) value and stacks
    it: body 40 once, the scan's outputs (carry 40 + stacked 3 × 40)."""
    def f(x):
        y = jax.numpy.sin(x) + 1.0
        return jax.lax.scan(lambda c, _: (c * 2.0, c), y, None, length=3)

    jaxpr = jax.make_jaxpr(f)(jax.ShapeDtypeStruct((10,), np.float32)).jaxpr
    assert memory.intermediate_bytes(jaxpr) == 40 + 40 + 40 + (40 + 120)


@pytest.mark.parametrize("strategy", ["map", "vmap"])
def test_the_traced_bound_is_above_the_compiled_estimate(strategy):
    c = config(f"execution.strategy={strategy}")
    data = c.domain.load_data(c)
    trainer = c.domain.make_trainer(c, data)
    compiled = memory.estimate(trainer, c.runs(), data, c.execution, 5)
    traced = memory.estimate(trainer, c.runs(), data, c.execution, 5, traced=True)
    assert traced.source == "traced" and compiled.source == "compiled"
    assert (traced.state, traced.history, traced.shared) == (compiled.state, compiled.history, compiled.shared)
    assert traced.vectorised == compiled.vectorised == (strategy == "vmap")
    assert traced.temp_step == (traced.temp_1 if traced.vectorised else 0)  # every run's intermediates again
    for runs in range(1, 7):
        assert traced.bytes_for(runs) >= compiled.bytes_for(runs), runs


class Estimates:
    """Records whether each estimate a plan made was traced (True) or compiled (False)."""

    def __init__(self, monkeypatch):
        self.traced = []
        for name, traced in (("traced_estimate", True), ("compiled_estimate", False)):
            def recording(*args, _real=getattr(memory, name), _traced=traced):
                self.traced.append(_traced)
                return _real(*args)

            monkeypatch.setattr(memory, name, recording)


def plan(*extra):
    c = config(*extra)
    data = c.domain.load_data(c)
    return memory.plan_run_chunks(c.domain.make_trainer(c, data), c.runs(), data, c.execution, 5)


def test_a_roomy_cap_plans_from_the_traced_bound_without_compiling(monkeypatch):
    calls = Estimates(monkeypatch)
    roomy = plan()
    assert calls.traced == [True] and roomy.num_chunks == 1 and roomy.estimate.source == "traced"
    assert "6 runs in 1 run-chunk of ≤ 6 runs, estimated ≤ " in roomy.describe()
    assert "traced bound: every intermediate value counted, nothing compiled" in roomy.describe()


def test_a_cap_the_traced_bound_does_not_clear_is_measured(monkeypatch, estimate):
    traced = plan().estimate.bytes_for(6)
    cap = (traced * memory.TRACED_MARGIN - 1) / memory.GIB
    assert estimate.bytes_for(6) <= cap * memory.GIB  # the compiled estimate fits: one run-chunk after measuring
    calls = Estimates(monkeypatch)
    tight = plan(f"execution.memory_cap_gib={cap!r}")
    assert calls.traced == [True, False] and tight.estimate.source == "compiled" and tight.num_chunks == 1
    assert "traced bound" not in tight.describe() and "estimated ≤" not in tight.describe()


def cap_for(runs: int, estimate) -> str:
    return f"execution.memory_cap_gib={estimate.bytes_for(runs) / memory.GIB!r}"


@pytest.fixture(scope="module")
def one_chunk(tmp_path_factory):
    return sweep.run_sweep(config(), tmp_path_factory.mktemp("one") / "one", progress=False)


class Calls:
    """Wraps GridRun.advance: the (run count, logs) of each call; KeyboardInterrupt on call number `die_on`."""

    def __init__(self, monkeypatch, die_on=None):
        self.calls, real = [], GridRun.advance

        def advance(grid_run, states, n):
            if len(self.calls) + 1 == die_on:
                raise KeyboardInterrupt
            self.calls.append((grid_run.num_runs, n))
            return real(grid_run, states, n)

        monkeypatch.setattr(GridRun, "advance", advance)


def test_a_cap_that_forces_run_chunks_gives_the_same_results(tmp_path, monkeypatch, capsys, estimate, one_chunk):
    calls = Calls(monkeypatch)
    out = tmp_path / "chunked"
    res = sweep.run_sweep(config(cap_for(2, estimate)), out, progress=False)
    assert calls.calls == [(2, 2)] * 6  # 3 run-chunks of 2 runs, 2 calls of 2 logs each
    plan = "6 runs in 3 run-chunks of ≤ 2 runs, estimated "
    assert plan in capsys.readouterr().out
    text = (out / "progress.log").read_text()
    assert plan in text.splitlines()[0] and "against a cap of" in text.splitlines()[0]
    assert "(execution.memory_cap_gib)" in text.splitlines()[0]
    assert "6 runs in 1 run-chunk of ≤ 6 runs" in one_chunk.meta["memory_plan"]
    assert [line.split("  ", 1)[1] for line in text.splitlines() if "done (runs" in line] == [
        "run-chunk 1/3 done (runs 0–1); checkpoint written", "run-chunk 2/3 done (runs 2–3); checkpoint written"]
    assert "2 runs (run-chunk 3/3)  chunk 2 logs" in text
    assert res.meta["run_chunks"] == 3 and set(res.metrics) == set(one_chunk.metrics)
    for name, values in one_chunk.metrics.items():
        np.testing.assert_array_equal(res.metrics[name], values, err_msg=name)
    assert (out / "summary.csv").read_text() == (one_chunk.path / "summary.csv").read_text()
    assert not (out / "checkpoint.npz").exists()


def test_a_smaller_last_run_chunk_reuses_the_program(tmp_path, monkeypatch, estimate, one_chunk):
    calls = Calls(monkeypatch)
    res = sweep.run_sweep(config(cap_for(4, estimate), "execution.chunk_logs=4"), tmp_path / "uneven",
                          progress=False)
    assert calls.calls == [(3, 4), (3, 4)]  # 4 fit: evened out to 2 run-chunks of 3
    for name, values in one_chunk.metrics.items():
        np.testing.assert_array_equal(res.metrics[name], values, err_msg=name)


def test_a_kill_in_the_last_run_chunk_resumes_there(tmp_path, monkeypatch, capsys, estimate, one_chunk):
    out = tmp_path / "killed"
    settings = (cap_for(2, estimate), "execution.checkpoint_every_s=3600")  # checkpoints only between run-chunks
    Calls(monkeypatch, die_on=6)  # the second call of run-chunk 3
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(config(*settings), out, progress=False)
    monkeypatch.undo()
    assert (out / "progress.log").read_text().splitlines()[-1].endswith(
        "stopped (KeyboardInterrupt) at step 20 of 40 in run-chunk 3/3; running again resumes from the checkpoint at "
        "step 0 in run-chunk 3/3")
    saved = results.read_checkpoint(out / "checkpoint.npz", experiment.digest(config()))
    assert saved.bounds == [0, 2, 4, 6] and saved.chunk == 2 and not saved.in_progress
    assert saved.done_metrics["norm_sq"].shape == (4, 5)
    calls = Calls(monkeypatch)
    res = sweep.run_sweep(config(*settings), out, progress=False)
    assert calls.calls == [(2, 2), (2, 2)]  # only run-chunk 3 is trained again
    assert "at step 0 of 40 in run-chunk 3/3" in capsys.readouterr().out
    for name, values in one_chunk.metrics.items():
        np.testing.assert_array_equal(res.metrics[name], values, err_msg=name)


def test_a_kill_inside_a_run_chunk_resumes_at_its_checkpoint(tmp_path, monkeypatch, estimate, one_chunk):
    out = tmp_path / "killed"
    settings = (cap_for(2, estimate), "execution.checkpoint_every_s=0")
    Calls(monkeypatch, die_on=4)  # the second call of run-chunk 2, after its checkpoint at step 20
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(config(*settings), out, progress=False)
    monkeypatch.undo()
    calls = Calls(monkeypatch)
    res = sweep.run_sweep(config(cap_for(3, estimate)), out, progress=False)  # another cap: the rest re-split
    assert calls.calls == [(2, 2), (2, 2), (2, 2)]  # run-chunk 2 from step 20, then runs 4–5 (3 fit, 2 are left)
    for name, values in one_chunk.metrics.items():
        np.testing.assert_array_equal(res.metrics[name], values, err_msg=name)
