"""Grids larger than memory: the estimate's terms, the cap, the cut into run slices; a sweep under a cap that forces
several run slices gives the metrics of one run slice bit for bit, logs its plan, and a kill in its last run slice
resumes there; a checkpoint of older code (its run slice stored as "chunk") resumes too."""

import jax
import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.engine import memory
from nht_jax.config.sections import ExecutionConfig
from nht_jax.results import folder as results
from nht_jax.training import sweep

SETTINGS = [
    "train.steps=40",
    "train.log_every=10",
    "execution.chunk_logs=2",
    "execution.strategy=map",
    "model.hidden=[16]",
    "grid.weight_decay=[0.01, 0.1, 1.0]",
    "grid.seed=[0, 1]",
]  # 6 runs


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
    trainer = experiment.build_trainer(c)
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


@pytest.mark.parametrize(
    "fit,runs,expected", [(6, 6, 6), (3, 6, 3), (4, 6, 3), (5, 6, 3), (2, 7, 2), (1, 6, 1), (0, 6, 1)]
)
def test_run_slices_fit_the_cap_and_are_even(estimate, fit, runs, expected):
    cap = estimate.bytes_for(fit) if fit else estimate.bytes_for(1) - 1
    assert memory.runs_that_fit(estimate, cap, runs) == expected  # 4 or 5 that fit → 2 run slices of 3


def test_the_cap_comes_from_the_setting_or_the_host():
    assert memory.device_cap(ExecutionConfig(memory_cap_gib=0.5)) == (2**29, "execution.memory_cap_gib")
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
    return memory.plan_run_slices(c.domain.make_trainer(c, data), c.runs(), data, c.execution, 5)


def test_a_roomy_cap_plans_from_the_traced_bound_without_compiling(monkeypatch):
    calls = Estimates(monkeypatch)
    roomy = plan()
    assert calls.traced == [True] and roomy.num_slices == 1 and roomy.estimate.source == "traced"
    assert "6 runs in 1 run slice of ≤ 6 runs, estimated ≤ " in roomy.describe()
    assert "traced bound: every intermediate value counted, nothing compiled" in roomy.describe()


def test_a_cap_the_traced_bound_does_not_clear_is_measured(monkeypatch, estimate):
    traced = plan().estimate.bytes_for(6)
    cap = (traced * memory.TRACED_MARGIN - 1) / memory.GIB
    assert estimate.bytes_for(6) <= cap * memory.GIB  # the compiled estimate fits: one run slice after measuring
    calls = Estimates(monkeypatch)
    tight = plan(f"execution.memory_cap_gib={cap!r}")
    assert calls.traced == [True, False] and tight.estimate.source == "compiled" and tight.num_slices == 1
    assert "traced bound" not in tight.describe() and "estimated ≤" not in tight.describe()


def cap_for(runs: int, estimate) -> str:
    return f"execution.memory_cap_gib={estimate.bytes_for(runs) / memory.GIB!r}"


@pytest.fixture(scope="module")
def one_slice(tmp_path_factory):
    return sweep.run_sweep(config(), tmp_path_factory.mktemp("one") / "one", progress=False)


def test_a_cap_that_forces_run_slices_gives_the_same_results(tmp_path, capsys, estimate, one_slice, advances):
    calls = advances()
    out = tmp_path / "sliced"
    res = sweep.run_sweep(config(cap_for(2, estimate)), out, progress=False)
    assert calls.shapes == [(2, 2)] * 6  # 3 run slices of 2 runs, 2 calls of 2 logs each
    plan = "6 runs in 3 run slices of ≤ 2 runs, estimated "
    assert plan in capsys.readouterr().out
    text = (out / "progress.log").read_text()
    assert plan in text.splitlines()[0] and "against a cap of" in text.splitlines()[0]
    assert "(execution.memory_cap_gib)" in text.splitlines()[0]
    assert "6 runs in 1 run slice of ≤ 6 runs" in one_slice.meta["memory_plan"]
    assert [line.split("  ", 1)[1] for line in text.splitlines() if "done (runs" in line] == [
        "run slice 1/3 done (runs 0–1); checkpoint written",
        "run slice 2/3 done (runs 2–3); checkpoint written",
    ]
    assert "2 runs (run slice 3/3)  chunk 2 logs" in text
    assert res.meta["run_slices"] == 3 and set(res.metrics) == set(one_slice.metrics)
    for name, values in one_slice.metrics.items():
        np.testing.assert_array_equal(res.metrics[name], values, err_msg=name)
    assert (out / "summary.csv").read_text() == (one_slice.path / "summary.csv").read_text()
    assert not (out / "checkpoint.npz").exists()


def test_a_smaller_last_run_slice_reuses_the_program(tmp_path, estimate, one_slice, advances):
    calls = advances()
    res = sweep.run_sweep(config(cap_for(4, estimate), "execution.chunk_logs=4"), tmp_path / "uneven", progress=False)
    assert calls.shapes == [(3, 4), (3, 4)]  # 4 fit: evened out to 2 run slices of 3
    for name, values in one_slice.metrics.items():
        np.testing.assert_array_equal(res.metrics[name], values, err_msg=name)


def test_a_kill_in_the_last_run_slice_resumes_there(tmp_path, monkeypatch, capsys, estimate, one_slice, advances):
    out = tmp_path / "killed"
    settings = (cap_for(2, estimate), "execution.checkpoint_every_s=3600")  # checkpoints only between run slices
    advances(die_on=6)  # the second call of run slice 3
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(config(*settings), out, progress=False)
    monkeypatch.undo()
    assert (
        (out / "progress.log")
        .read_text()
        .splitlines()[-1]
        .endswith(
            "stopped (KeyboardInterrupt) at step 20 of 40 in run slice 3/3; running again resumes from the checkpoint at "
            "step 0 in run slice 3/3"
        )
    )
    saved = results.read_checkpoint(out / "checkpoint.npz", experiment.digest(config()))
    assert saved.bounds == [0, 2, 4, 6] and saved.run_slice == 2 and not saved.in_progress
    assert saved.done_metrics["norm_sq"].shape == (4, 5)
    calls = advances()
    res = sweep.run_sweep(config(*settings), out, progress=False)
    assert calls.shapes == [(2, 2), (2, 2)]  # only run slice 3 is trained again
    assert "at step 0 of 40 in run slice 3/3" in capsys.readouterr().out
    for name, values in one_slice.metrics.items():
        np.testing.assert_array_equal(res.metrics[name], values, err_msg=name)


def test_a_kill_inside_a_run_slice_resumes_at_its_checkpoint(tmp_path, monkeypatch, estimate, one_slice, advances):
    out = tmp_path / "killed"
    settings = (cap_for(2, estimate), "execution.checkpoint_every_s=0")
    advances(die_on=4)  # the second call of run slice 2, after its checkpoint at step 20
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(config(*settings), out, progress=False)
    monkeypatch.undo()
    calls = advances()
    res = sweep.run_sweep(config(cap_for(3, estimate)), out, progress=False)  # another cap: the rest cut anew
    assert calls.shapes == [(2, 2), (2, 2), (2, 2)]  # run slice 2 from step 20, then runs 4–5 (3 fit, 2 are left)
    for name, values in one_slice.metrics.items():
        np.testing.assert_array_equal(res.metrics[name], values, err_msg=name)


def test_chunks_and_run_slices_are_named_apart(tmp_path, monkeypatch, capsys, estimate, advances):
    """A chunk cuts time, a run slice cuts the run axis: a sweep of 3 run slices of 2 chunks each says both, each
    where it belongs (progress.log, stdout, meta.json), and never the older "run-chunk"."""
    out = tmp_path / "both"
    advances(die_on=4)  # run slice 2's second chunk, after its checkpoint at step 20
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(config(cap_for(2, estimate), "execution.checkpoint_every_s=0"), out, progress=False)
    monkeypatch.undo()
    res = sweep.run_sweep(config(cap_for(2, estimate)), out, progress=False)
    lines = [line.split("  ", 1)[1] for line in (out / "progress.log").read_text().splitlines()]
    chunk_lines = [line for line in lines if line.startswith("step ")]
    assert [line.split("  ")[1] for line in chunk_lines] == [f"2 runs (run slice {k}/3)" for k in (1, 1, 2, 2, 3, 3)]
    assert all(line.split("  ")[2].startswith("chunk 2 logs in ") for line in chunk_lines)
    assert "3 run slices of ≤ 2 runs, estimated " in lines[0] and " per run slice against a cap of " in lines[0]
    assert "chunks of 2 log intervals (execution.chunk_logs)" in lines[0]
    assert (
        "stopped (KeyboardInterrupt) at step 20 of 40 in run slice 2/3; running again resumes from the checkpoint "
        "at step 20 in run slice 2/3"
    ) in lines
    assert "resumed at step 20 of 40 in run slice 2/3 from checkpoint.npz" in lines
    assert [line for line in lines if " done (runs " in line] == [
        "run slice 1/3 done (runs 0–1); checkpoint written",
        "run slice 2/3 done (runs 2–3); checkpoint written",
    ]
    assert res.meta["run_slices"] == 3 and "run_chunks" not in res.meta
    printed = capsys.readouterr().out
    assert "resuming " in printed and "at step 20 of 40 in run slice 2/3" in printed
    everything = "\n".join([*lines, printed, (out / "meta.json").read_text()])
    assert "run-chunk" not in everything and "run_chunk" not in everything


def older(path):
    """Rewrite a checkpoint as the code before run slices had names wrote it: the run slice under the key "chunk"."""
    with np.load(path) as data:
        arrays = {("chunk" if k == "run_slice" else k): data[k] for k in data.files}
    assert "chunk" in arrays
    np.savez(path.with_suffix(".tmp.npz"), **arrays)
    path.with_suffix(".tmp.npz").replace(path)


def test_a_checkpoint_of_older_code_resumes(tmp_path, monkeypatch, estimate, one_slice, advances):
    """A user upgrading mid-sweep: a checkpoint inside run slice 2 written with the key "chunk" resumes there."""
    out = tmp_path / "upgraded"
    settings = (cap_for(2, estimate), "execution.checkpoint_every_s=0")
    advances(die_on=4)  # the second call of run slice 2, after its checkpoint at step 20
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(config(*settings), out, progress=False)
    monkeypatch.undo()
    older(out / "checkpoint.npz")
    saved = results.read_checkpoint(out / "checkpoint.npz", experiment.digest(config()))
    assert saved.run_slice == 1 and saved.in_progress and saved.logs_done == 2
    calls = advances()
    res = sweep.run_sweep(config(*settings), out, progress=False)
    assert calls.shapes == [(2, 2)] * 3  # run slice 2 from step 20, then run slice 3
    for name, values in one_slice.metrics.items():
        np.testing.assert_array_equal(res.metrics[name], values, err_msg=name)


def test_results_of_older_code_load(tmp_path, one_slice):
    """meta.json of older code says "run_chunks" (and "run-chunk" in its memory plan): the folder still loads, and
    `nht run` into it finds it finished."""
    import shutil

    out = tmp_path / "older"
    shutil.copytree(one_slice.path, out)
    meta = (out / "meta.json").read_text()
    assert '"run_slices": 1' in meta
    (out / "meta.json").write_text(meta.replace('"run_slices"', '"run_chunks"').replace("run slice", "run-chunk"))
    loaded = results.load_results(out)
    assert loaded.meta["run_chunks"] == 1 and "run-chunk" in loaded.meta["memory_plan"]
    np.testing.assert_array_equal(loaded.metrics["norm_sq"], one_slice.metrics["norm_sq"])
    again = sweep.run_sweep(config(), out, progress=False)  # finished: nothing trained
    assert again.meta["run_chunks"] == 1
