"""The PyTorch baseline of `nht bench` computes what the JAX run computes: every model it implements (the MLP, the
transformer under each layer norm, SimpleCNN) is the JAX model's function once the JAX parameters are copied across
(the same logits, loss, gradients and one AdamW step, weight decay on the same parameters), the same parameter count,
FLOPs per step within a few %, losses of the same size. Skipped without torch (the `bench` extra)."""

import dataclasses

import jax
import numpy as np
import pytest

from benchmarks import torch_baseline
from benchmarks.harness import _flops, bench_config, markdown, run_benchmark
from nht_jax import experiment
from nht_jax.engine.grid import take
from nht_jax.engine.optim import optimiser_for
from nht_jax.models.mlp import MLPSettings
from nht_jax.models.transformer import TransformerSettings
from nht_jax.vision.models import SimpleCNNSettings

from ..conftest import unless_installed

pytestmark = unless_installed("torch", extra="bench")  # CPU torch; imported by the tests that use it


def small(preset: str):
    """The benchmark's configuration of a preset, 2 runs × 4 steps, the image evaluation sets shrunk."""
    config = bench_config(preset, runs=2, steps=4, log_every=2)
    if config.task.name == "images":
        config = dataclasses.replace(
            config, task=dataclasses.replace(config.task, eval_train_size=32, eval_test_size=32)
        )
    return config


def host(hp) -> dict:
    return {name: np.asarray(value).item() for name, value in hp.items()}


@pytest.mark.parametrize("preset", ["default", "companion-exact-cpu", "border-digits"])
def test_same_parameters_flops_and_initial_loss(preset):
    import torch

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
    import torch

    config = experiment.load("default", overrides=["optim.decay_on=weights"])
    hp = {"learning_rate": 0.1, "weight_decay": 0.5}
    layer = torch.nn.Linear(3, 2)
    params = {"kernel": layer.weight.detach().numpy().T.copy(), "bias": layer.bias.detach().numpy().copy()}
    tx = optimiser_for(config.optim, config.train, hp, params)
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
    config = dataclasses.replace(
        small("default"), train=dataclasses.replace(small("default").train, steps=30, log_every=10)
    )
    result = torch_baseline.baseline(config).run(host(take(config.runs(), 0)))
    assert result.wall_s > 0
    assert result.last["train_loss"] < result.first["train_loss"] - 0.1


def test_the_benchmark_prints_the_pytorch_row_and_its_checks(capsys):
    import torch

    report = run_benchmark("tiny", runs=2, steps=4, ways=("grid", "loop", "torch"), log_every=2, torch_threads=1)
    ways = [r["way"] for r in report["rows"]]
    assert ways == ["grid (default)", "loop of jitted runs", "PyTorch loop"]
    assert report["torch"]["threads"] == 1 and report["torch"]["params"] == report["params"]
    table = markdown(report)
    assert "× PyTorch" in table and "1 thread(s)" in table
    assert (
        f"Parameters {report['params']:,} (JAX) and {report['params']:,} (torch): equal" in table
        and "Train loss (mean over runs) at step 0" in table
    )
    assert torch.get_num_threads() == report["torch"]["default_threads"]  # restored after the measurement


def test_a_configuration_without_a_baseline_is_named():
    config = experiment.load("tiny", overrides=["optim.name=sgd"])
    assert "sgd" in torch_baseline.unsupported(config)
    with pytest.raises(experiment.ConfigError, match="no PyTorch baseline for optimiser 'sgd'"):
        torch_baseline.baseline(config)


# ---- the same function: every model the baseline implements, parameters copied across (issue 29 item 8) -----------

VOCAB, N_CTX, CLASSES, ROWS = 11, 3, 7, 24
MODEL_CASES = {
    "mlp quadratic, two hidden layers": ("mlp", MLPSettings(hidden=(24, 16))),
    "mlp relu": ("mlp", MLPSettings(hidden=(24,), activation="relu")),
    **{
        f"transformer {norm}": (
            "transformer",
            TransformerSettings(
                d_model=16, n_heads=4, d_mlp=32, layer_norm=norm, activation=act, layer_norm_eps=eps, init=init
            ),
        )
        for norm, act, eps, init in (
            ("none", "quadratic", 1e-6, "flax"),
            ("final", "relu", 1e-6, "flax"),
            ("pre", "gelu", 1e-6, "flax"),
            ("post", "gelu_exact", 1e-5, "pytorch"),
        )
    },
    "simple_cnn": ("simple_cnn", SimpleCNNSettings()),
}


def both_models(kind: str, settings):
    """(the JAX module, the baseline's torch module, JAX inputs, torch inputs, labels) of one small problem."""
    import torch

    rng = np.random.default_rng(0)
    labels = rng.integers(0, CLASSES, ROWS)
    if kind == "simple_cnn":
        images = rng.random((ROWS, 16, 16, 3), dtype=np.float32)
        return (
            settings.build(CLASSES),
            torch_baseline.make_simple_cnn(CLASSES, 16),
            images,
            torch.from_numpy(images.transpose(0, 3, 1, 2).copy()),
            labels,
        )
    tokens = rng.integers(0, VOCAB, (ROWS, N_CTX))
    make = torch_baseline.make_mlp if kind == "mlp" else torch_baseline.make_transformer
    return (
        settings.build(VOCAB, CLASSES, N_CTX),
        make(settings, VOCAB, CLASSES, N_CTX),
        tokens,
        torch.from_numpy(tokens),
        labels,
    )


def assert_state(model, expected: dict, what: str, grads: bool = False, atol: float = 1e-5):
    names = [name for name, _ in model.named_parameters()]
    assert sorted(names) == sorted(expected), what  # every parameter has its counterpart, none is left over
    for name, p in model.named_parameters():
        got = (p.grad if grads else p).detach().numpy()
        np.testing.assert_allclose(got, expected[name], rtol=1e-4, atol=atol, err_msg=f"{what}: {name}")


@pytest.mark.parametrize("case", list(MODEL_CASES))
def test_the_torch_model_is_the_jax_model(case):
    """The JAX parameters copied into the baseline's torch module (`load_jax_params`): the same logits, the same
    cross-entropy and gradients, and after one AdamW step (λ on the parameters JAX decays) the same parameters."""
    import optax
    import torch

    kind, settings = MODEL_CASES[case]
    jax_model, torch_model, x, x_torch, labels = both_models(kind, settings)
    config = experiment.load("default", overrides=["optim.decay_on=weights"])
    hp = {"learning_rate": 0.01, "weight_decay": 0.5}

    @jax.jit
    def initial(key):
        """The initial parameters, biases and LayerNorms moved off 0 and 1."""
        params = jax_model.init(key, x[:2])["params"]
        return jax.tree.map(lambda p: p + 0.05 * jax.random.normal(jax.random.fold_in(key, p.size), p.shape), params)

    @jax.jit  # a program of its own, as the trainer's step is (fused with `initial`, XLA:CPU at the suite's
    def jax_side(params):  # --xla_backend_optimization_level=0 returned other first-convolution gradients)
        """Logits, loss, gradients and one AdamW step."""
        logits = jax_model.apply({"params": params}, x)

        def loss(p):
            return optax.softmax_cross_entropy_with_integer_labels(jax_model.apply({"params": p}, x), labels).mean()

        value, grads = jax.value_and_grad(loss)(params)
        tx = optimiser_for(config.optim, config.train, hp, params)
        updates, _ = tx.update(grads, tx.init(params), params)
        return logits, value, grads, optax.apply_updates(params, updates)

    params = initial(jax.random.PRNGKey(1))
    jax_logits, value, grads, stepped = jax_side(params)
    torch_baseline.load_jax_params(torch_model, kind, params)
    assert_state(torch_model, torch_baseline.torch_state(kind, params), "copied")
    logits = torch_model(x_torch)
    np.testing.assert_allclose(logits.detach().numpy(), jax_logits, rtol=1e-4, atol=1e-5)
    torch_loss = torch.nn.functional.cross_entropy(logits, torch.from_numpy(labels))
    torch_loss.backward()
    assert float(torch_loss) == pytest.approx(float(value), rel=1e-5)
    assert_state(torch_model, torch_baseline.torch_state(kind, grads), "gradients", grads=True, atol=1e-6)

    optimizer, _ = torch_baseline.make_optimizer(torch_model, config, hp)
    optimizer.step()
    assert_state(torch_model, torch_baseline.torch_state(kind, stepped), "one step")
