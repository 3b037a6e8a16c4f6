"""The benchmark's grid: the runs it asks for, and one bucket (the largest) of a preset with static axes."""

from nht_jax.run.benchmark import bench_config, largest_bucket, static_values
from nht_jax import experiment


def test_bench_config_sizes_the_grid():
    config = bench_config("default", runs=8, steps=20, log_every=10)
    assert len(config.runs()["seed"]) == 8
    assert config.train.steps == 20 and config.execution.chunk_logs == 2


def test_static_axes_are_timed_on_their_largest_bucket():
    preset = experiment.load("width-sweep")
    assert set(preset.static) == {"width"}
    assert static_values("width-sweep") == {"width": max(preset.grid["width"])}
    sub = largest_bucket(preset)
    assert not sub.static and list(sub.model.hidden) == [max(preset.grid["width"])]
    config = bench_config("width-sweep", runs=4, steps=20, log_every=10)
    assert not config.static and list(config.model.hidden) == [max(preset.grid["width"])]
    experiment.make_trainer(config)  # a preset with static axes could not be benchmarked before
