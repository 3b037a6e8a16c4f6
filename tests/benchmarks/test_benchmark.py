"""The benchmark: the runs it asks for, one bucket (the largest) of a preset with static axes, the evaluation's FLOP
count, and the table without torch (the PyTorch rows themselves: tests/benchmarks/test_torch_baseline.py)."""

import dataclasses

import jax
import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.engine.grid import take
from benchmarks import torch_baseline
from benchmarks.harness import (
    _flops,
    bench_config,
    counting_config,
    largest_bucket,
    markdown,
    run_benchmark,
    static_values,
)


def test_bench_config_sizes_the_grid():
    config = bench_config("default", runs=8, steps=20, log_every=10)
    assert len(config.runs()["seed"]) == 8
    assert config.train.steps == 20 and config.execution.chunk_logs == 2


def test_overrides_apply_before_timing_and_name_themselves_in_the_table(monkeypatch):
    """`nht bench --set KEY=VALUE` times the preset with that setting (an opt-in speed setting, say), and the
    table's first line says so; a bad override is the preset's own ConfigError."""
    config = bench_config(
        "companion-exact-cpu", runs=2, steps=20, log_every=10, overrides=("model.block_positions=readout",)
    )
    assert config.model.block_positions == "readout" and config.train.steps == 20
    assert bench_config("companion-exact-cpu", runs=2, steps=20, log_every=10).model.block_positions == "all"
    monkeypatch.setattr(torch_baseline, "available", lambda: False)
    report = run_benchmark("default", runs=1, steps=4, ways=("grid",), log_every=2, overrides=("model.hidden=[8]",))
    assert report["params"] == 2 * 97 * 8 + 8 + 8 * 97 + 97
    assert markdown(report).startswith(f"Benchmark {report['date']}: preset `default` --set model.hidden=[8], 1 runs")
    with pytest.raises(ConfigError, match="block_positions"):
        bench_config("companion-exact-cpu", runs=2, steps=20, overrides=("model.block_positions=first",))


def test_static_axes_are_timed_on_their_largest_bucket():
    preset = experiment.load("width-sweep")
    assert set(preset.static) == {"width"}
    assert static_values("width-sweep") == {"width": max(preset.grid["width"])}
    sub = largest_bucket(preset)
    assert not sub.static and list(sub.model.hidden) == [max(preset.grid["width"])]
    config = bench_config("width-sweep", runs=4, steps=20, log_every=10)
    assert not config.static and list(config.model.hidden) == [max(preset.grid["width"])]
    experiment.build_trainer(config)  # a preset with static axes could not be benchmarked before


def test_without_torch_the_table_says_how_to_get_the_pytorch_rows(monkeypatch):
    monkeypatch.setattr(torch_baseline, "available", lambda: False)
    report = run_benchmark("tiny", runs=2, steps=4, ways=("grid", "torch"), log_every=2)
    assert [r["way"] for r in report["rows"]] == ["grid (default)"]
    table = markdown(report)
    assert "× PyTorch" not in table
    assert table.rstrip().endswith(torch_baseline.MISSING) and "pip install 'nht_jax[bench]'" in table


def test_bad_ways_and_threads_are_refused():
    with pytest.raises(ConfigError, match="unknown benchmark ways \\['pytorch'\\]"):
        run_benchmark("tiny", runs=2, steps=4, ways=("grid", "pytorch"))
    with pytest.raises(ConfigError, match="torch threads must be ≥ 1"):
        run_benchmark("tiny", runs=2, steps=4, ways=("torch",), torch_threads=0)


def test_the_evaluation_is_counted_whole_not_one_chunk():
    """XLA counts a loop body once: the image evaluation (a lax.map over chunks) is counted on `counting_config`,
    whose count does not depend on the chunk size and is about the sum of its chunks."""
    config = bench_config("border-digits", runs=2, steps=4, log_every=2)
    task = dataclasses.replace(config.task, image_size=16, eval_train_size=64, eval_test_size=64)

    def eval_flops(chunk: int, counted: bool) -> float:
        c = dataclasses.replace(config, task=task, train=dataclasses.replace(config.train, eval_batch_size=chunk))
        trainer = experiment.build_trainer(counting_config(c) if counted else c)
        hp = take(c.runs(), 0)
        return _flops(jax.jit(trainer.evaluate), jax.jit(trainer.init)(hp), hp)

    whole = eval_flops(32, counted=True)
    assert whole == pytest.approx(eval_flops(16, counted=True), rel=1e-6)
    assert eval_flops(16, counted=False) < 0.5 * whole  # one chunk of each set (the undercount it avoids)


def test_torch_is_the_bench_extra_and_never_the_test_one():
    """The CPU wheel (torch 2.13) is what `pip install 'nht_jax[bench]'` takes here; the test command never installs
    torch (from the package index it brings ~5 GB of CUDA libraries), so CI runs the no-torch path."""
    import tomllib
    from pathlib import Path

    extras = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert extras["bench"] == ["torch==2.13.*"]
    assert not any("torch" in dep and "tensorboard" not in dep for dep in extras["test"])
