"""The PyTorch baseline of `nht bench` computes what the JAX run computes: the same parameter count, FLOPs per step
within a few %, the same AdamW update, losses of the same size. Skipped without torch (the `bench` extra)."""

import dataclasses

import jax
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: pip install 'nht_jax[bench]' (CPU torch)")

from nht_jax import experiment  # noqa: E402
from nht_jax.engine.grid import take  # noqa: E402
from nht_jax.engine.optim import optimizer_for  # noqa: E402
from benchmarks import torch_baseline
from benchmarks.harness import _flops, bench_config, markdown, run_benchmark  # noqa: E402


def small(preset: str):
    """The benchmark's configuration of a preset, 2 runs × 4 steps, the image evaluation sets shrunk."""
    config = bench_config(preset, runs=2, steps=4, log_every=2)
    if config.task.name == "images":
        config = dataclasses.replace(config, task=dataclasses.replace(config.task, eval_train_size=32,
                                                                      eval_test_size=32))
    return config


def host(hp) -> dict:
    return {name: np.asarray(value).item() for name, value in hp.items()}


@pytest.mark.parametrize("preset", ["default", "companion-exact-cpu", "border-digits"])
def test_same_parameters_flops_and_initial_loss(preset):
    config = small(preset)
    trainer = experiment.build_trainer(config)
    hp = take(config.runs(), 0)
    state = jax.jit(trainer.init)(hp)
    ours = sum(np.size(x) for x in jax.tree.leaves(state.params))
    base = torch_baseline.baseline(config)
    torch.manual_seed(0)
    model = base.model(host(hp))
    assert torch_baseline.param_count(model) == ours
    step_flops, _ = torch_baseline.flops(base, host(hp))
    xla = _flops(jax.jit(trainer.step), state, hp)
    # XLA counts every op, torch's counter the matrix products and convolutions only: a few % apart
    assert 0.9 < step_flops / xla <= 1.0, (step_flops, xla)
    loss0 = float(jax.jit(trainer.evaluate)(state, hp)["train_loss"])
    assert base.evaluate(model, host(hp))["train_loss"] == pytest.approx(loss0, rel=0.05)


def test_adamw_is_our_decoupled_update_on_the_same_parameters():
    """Three steps of torch's AdamW (through `make_optimizer`) and of our optax chain, on the same parameters and
    gradients: equal, with the bias left undecayed under decay_on = "weights"."""
    config = experiment.load("default", overrides=["optim.decay_on=weights"])
    hp = {"learning_rate": 0.1, "weight_decay": 0.5}
    layer = torch.nn.Linear(3, 2)
    params = {"kernel": layer.weight.detach().numpy().T.copy(), "bias": layer.bias.detach().numpy().copy()}
    tx = optimizer_for(config.optim, config.train, hp, params)
    opt_state = tx.init(params)
    optimizer, _ = torch_baseline.make_optimizer(layer, config, hp)
    rng = np.random.default_rng(0)
    for _ in range(3):
        grads = {"kernel": rng.normal(size=(3, 2)).astype(np.float32), "bias": rng.normal(size=2).astype(np.float32)}
        updates, opt_state = tx.update(grads, opt_state, params)
        params = jax.tree.map(lambda p, u: p + u, params, updates)
        layer.weight.grad, layer.bias.grad = torch.from_numpy(grads["kernel"].T.copy()), torch.from_numpy(grads["bias"])
        optimizer.step()
    np.testing.assert_allclose(layer.weight.detach().numpy().T, params["kernel"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.bias.detach().numpy(), params["bias"], rtol=1e-5, atol=1e-6)


def test_a_run_trains_and_is_timed():
    config = dataclasses.replace(small("default"), train=dataclasses.replace(small("default").train, steps=30,
                                                                             log_every=10))
    result = torch_baseline.baseline(config).run(host(take(config.runs(), 0)))
    assert result.wall_s > 0
    assert result.last["train_loss"] < result.first["train_loss"] - 0.1


def test_the_benchmark_prints_the_pytorch_row_and_its_checks(capsys):
    report = run_benchmark("tiny", runs=2, steps=4, ways=("grid", "loop", "torch"), log_every=2, torch_threads=1)
    ways = [r["way"] for r in report["rows"]]
    assert ways == ["grid (default)", "loop of jitted runs", "PyTorch loop"]
    assert report["torch"]["threads"] == 1 and report["torch"]["params"] == report["params"]
    table = markdown(report)
    assert "× PyTorch" in table and "1 thread(s)" in table
    assert f"Parameters {report['params']:,} (JAX) and {report['params']:,} (torch): equal" in table and "Train loss (mean over runs) at step 0" in table
    assert torch.get_num_threads() == report["torch"]["default_threads"]  # restored after the measurement


def test_a_configuration_without_a_baseline_is_named():
    config = experiment.load("tiny", overrides=["optim.name=sgd"])
    assert "sgd" in torch_baseline.unsupported(config)
    with pytest.raises(experiment.ConfigError, match="no PyTorch baseline for optimiser 'sgd'"):
        torch_baseline.baseline(config)
