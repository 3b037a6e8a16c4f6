"""The execution plan: sequential map, vmap, padding, sharding over (forced) host devices."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from nht_jax.engine.executor import pad_runs, plan, unpad
from nht_jax.config.sections import ExecutionConfig


@pytest.mark.parametrize(
    "execution,backend,devices,runs,expected",
    [
        (ExecutionConfig(), "cpu", 1, 16, ("map", 1, 1, 16)),
        (ExecutionConfig(runs_per_batch=4), "cpu", 1, 16, ("map", 4, 1, 16)),
        (ExecutionConfig(runs_per_batch=64), "cpu", 1, 16, ("map", 16, 1, 16)),
        (ExecutionConfig(), "gpu", 1, 16, ("vmap", 16, 1, 16)),
        (ExecutionConfig(), "gpu", 4, 10, ("vmap", 3, 4, 12)),  # 10 runs padded to 12, 3 per device
        (ExecutionConfig(shard="off"), "gpu", 4, 10, ("vmap", 10, 1, 10)),
        (ExecutionConfig(strategy="map", runs_per_batch=2), "tpu", 8, 20, ("map", 2, 8, 24)),
        (ExecutionConfig(), "gpu", 8, 3, ("vmap", 1, 3, 3)),  # never more devices than runs
        (ExecutionConfig(shard="on"), "cpu", 1, 5, ("map", 1, 1, 5)),
    ],
)
def test_plan_on_any_backend(execution, backend, devices, runs, expected):
    p = plan(execution, runs, backend=backend, num_devices=devices)
    assert (p.strategy, p.runs_per_batch, p.devices, p.padded_runs) == expected
    assert p.padded_runs % p.devices == 0 and p.padded_runs >= runs
    assert backend in p.describe()


def test_padding_repeats_the_last_run_and_is_dropped_after():
    runs = {"weight_decay": np.arange(5, dtype=np.float32), "seed": np.arange(5, dtype=np.uint32)}
    padded = pad_runs(runs, 8)
    np.testing.assert_array_equal(np.asarray(padded["weight_decay"]), [0, 1, 2, 3, 4, 4, 4, 4])
    np.testing.assert_array_equal(np.asarray(unpad(padded, 5)["seed"]), runs["seed"])


SHARDED = textwrap.dedent("""
    import chex, jax, numpy as np
    from nht_jax import experiment
    from nht_jax.experiment import build_trainer
    from nht_jax.engine.executor import GridRun
    assert jax.local_device_count() == 2
    out, spans = {}, {}
    for shard in ("on", "off"):
        config = experiment.load("tiny", ["train.steps=40", "train.log_every=10", "model.hidden=[32]",
                                          f"execution.shard={shard}", "grid.weight_decay=[0.01, 0.1, 1.0]",
                                          "grid.seed=[0]"])
        grid_run = GridRun(build_trainer(config), config.runs(), config.execution)
        states, first = grid_run.start()
        states, rest = grid_run.advance(states, grid_run.trainer.num_logs)
        spans[shard] = {len(leaf.sharding.device_set) for leaf in jax.tree.leaves(states)}
        out[shard] = {k: np.concatenate([first[k], rest[k]], axis=1) for k in first}
        print(shard, grid_run.plan.describe(), grid_run.plan.padded_runs)
    assert spans == {"on": {2}, "off": {1}}, spans
    chex.assert_trees_all_close(out["on"], out["off"], rtol=1e-5, atol=1e-6)
    print("sharded OK", out["on"]["norm_sq"].shape, len(out["on"]))
""")


def test_sharded_grid_spans_the_devices_and_matches_one_device():
    flags = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"  # keeps conftest's flags
    env = dict(os.environ, XLA_FLAGS=flags.strip(), JAX_PLATFORMS="cpu")
    result = subprocess.run([sys.executable, "-c", SHARDED], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "on lax.map, 1 run(s) at a time on 2 cpu device(s) 4" in result.stdout  # 3 runs padded to 4
    assert "sharded OK (3, 5) 12" in result.stdout  # every one of the 12 metrics compared
