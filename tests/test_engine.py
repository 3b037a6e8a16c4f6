"""The training engine: grid runs equal single runs, determinism, minibatches, isolation of diverging runs."""

import dataclasses

import jax
import numpy as np
import pytest

from conftest import tiny_config
from nht_jax.executor import run_grid
from nht_jax.grid import expand, take
from nht_jax.train import make_train, make_trainer


def grid_metrics(config):
    """The grid through the executor; metrics (runs, logs) from step log_every on (step 0 dropped)."""
    hparams = expand(config.grid)
    metrics = run_grid(make_trainer(config), hparams, config.train)
    return hparams, {k: v[:, 1:] for k, v in metrics.items()}


@pytest.mark.parametrize("strategy,per_batch", [("map", 1), ("map", 3), ("vmap", 1)])
def test_run_inside_grid_equals_run_alone(strategy, per_batch):
    config = tiny_config(strategy=strategy, runs_per_batch=per_batch)
    hparams, metrics = grid_metrics(config)
    train = jax.jit(make_train(config))
    for run in range(len(hparams.seed)):
        _, alone = train(take(hparams, run))
        for name in ("train_loss", "test_acc", "norm_sq", "grad_norm", "layer_norm_sq/head"):
            np.testing.assert_allclose(metrics[name][run], np.asarray(alone[name])[1:], rtol=1e-5, atol=1e-6,
                                       err_msg=f"{name} of run {run} ({strategy})")


def test_same_seed_same_result_and_different_seeds_differ():
    config = tiny_config()
    train = jax.jit(make_train(config))
    hparams = expand(config.grid)
    _, a = train(take(hparams, 0))
    _, b = train(take(hparams, 0))
    _, c = train(take(hparams, 1))  # seed 1
    if jax.default_backend() == "cpu":
        np.testing.assert_array_equal(a["norm_sq"], b["norm_sq"])
    else:  # GPU scatter-adds are atomic: bitwise repeatable only with --xla_gpu_deterministic_ops=true
        np.testing.assert_allclose(a["norm_sq"], b["norm_sq"], rtol=1e-5)
    assert not np.allclose(a["norm_sq"], c["norm_sq"])


def test_metrics_are_decimated():
    config = tiny_config(steps=60, log_every=20)
    _, metrics = jax.jit(make_train(config))(take(expand(config.grid), 0))
    assert metrics["train_acc"].shape == (4,)  # steps 0, 20, 40, 60
    assert {"train_loss", "test_loss", "train_acc", "test_acc", "norm_sq", "weight_norm_sq", "head_norm_sq",
            "logit_scale", "grad_norm", "layer_norm_sq/embed", "layer_norm_sq/head", "finite"} <= set(metrics)


def test_minibatch_runs_draw_their_own_batches():
    config = tiny_config(batch_size=64)
    hparams, metrics = grid_metrics(config)
    train = jax.jit(make_train(config))
    _, alone = train(take(hparams, 2))
    np.testing.assert_allclose(metrics["train_loss"][2], np.asarray(alone["train_loss"])[1:], rtol=1e-5, atol=1e-6)
    full = tiny_config()
    _, full_metrics = grid_metrics(full)
    assert not np.allclose(metrics["train_loss"], full_metrics["train_loss"])


def test_train_fraction_axis_shares_one_program():
    config = tiny_config()
    config = dataclasses.replace(config, grid=dataclasses.replace(config.grid, train_fraction=(0.3, 0.6), seed=(0,)))
    hparams, metrics = grid_metrics(config)
    train = jax.jit(make_train(config))
    for run in range(len(hparams.seed)):
        _, alone = train(take(hparams, run))
        np.testing.assert_allclose(metrics["train_loss"][run], np.asarray(alone["train_loss"])[1:], rtol=1e-5)


def test_diverging_run_is_isolated():
    config = tiny_config(steps=20, log_every=10)
    config = dataclasses.replace(config, optim=dataclasses.replace(config.optim, name="sgd"),
                                 grid=dataclasses.replace(config.grid, learning_rate=(1e-2, 1e6), seed=(0,)))
    hparams, metrics = grid_metrics(config)
    exploded = hparams.learning_rate > 1
    assert (metrics["finite"][exploded] == 0).all()
    assert (metrics["finite"][~exploded] == 1).all()
    assert np.isfinite(metrics["norm_sq"][~exploded]).all()


@pytest.mark.parametrize("model,layers", [
    (dict(name="mlp", embedding="learned", d_embed=8, hidden=(16, 16), activation="gelu"),
     {"embed", "hidden_0", "hidden_1", "head"}),
    (dict(name="transformer", d_model=16, n_heads=2, d_mlp=32, activation="relu", layer_norm="pre"),
     {"tok_embed", "pos_embed", "ln_attn", "attn", "ln_mlp", "mlp_in", "mlp_out", "ln_final", "head"}),
])
def test_other_models_train_in_the_grid(model, layers):
    config = tiny_config(steps=20, log_every=10)
    config = dataclasses.replace(config, model=dataclasses.replace(config.model, **model),
                                 task=dataclasses.replace(config.task, tokens="ab="))
    hparams, metrics = grid_metrics(config)
    assert {k.split("/", 1)[1] for k in metrics if k.startswith("layer_norm_sq/")} == layers
    assert np.isfinite(metrics["train_loss"]).all() and (metrics["train_loss"][:, -1] < metrics["train_loss"][:, 0]).all()
    by_layer = sum(metrics[f"layer_norm_sq/{name}"] for name in layers)
    np.testing.assert_allclose(by_layer, metrics["norm_sq"], rtol=1e-5)
