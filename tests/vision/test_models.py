"""SimpleCNN parameter count; ResNet18 norm variants; BatchNorm statistics carried functionally under scan and vmap."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.vision import ResNet, ResNet18, SimpleCNN, count_params, simple_cnn_param_count


def fast_key(seed):
    """An "rbg" PRNG key: initialisation compiles several times faster on CPU than with threefry."""
    return jax.random.key(seed, impl="rbg")


@pytest.mark.parametrize("side, classes, expected", [(32, 10, 287_898), (24, 10, 223_386), (64, 2, 729_490)])
def test_simple_cnn_parameter_count(side, classes, expected):
    variables = jax.eval_shape(lambda: SimpleCNN(classes).init(jax.random.PRNGKey(0), jnp.zeros((1, side, side, 3))))
    n = count_params(variables["params"])
    print(f"SimpleCNN at {side}x{side}, {classes} classes: {n:,} parameters")
    assert n == expected == simple_cnn_param_count(side, side, num_classes=classes)
    assert list(variables["params"]) == ["conv1", "conv2", "conv3", "conv4", "dense", "head"]
    assert set(variables) == {"params"}  # no normalisation, no state


def test_simple_cnn_forward():
    model = SimpleCNN(10)
    x = jax.random.uniform(jax.random.PRNGKey(1), (2, 24, 24, 3))
    params = jax.jit(model.init)(fast_key(0), x)
    assert jax.jit(model.apply)(params, x).shape == (2, 10)


def test_resnet18_parameter_counts_and_names():
    shapes = {
        norm: jax.eval_shape(lambda n=norm: ResNet18(10, n).init(jax.random.PRNGKey(0), jnp.zeros((1, 32, 32, 3))))
        for norm in ("batch", "group", "none")
    }
    counts = {norm: count_params(v["params"]) for norm, v in shapes.items()}
    print("ResNet18 parameters:", counts)
    assert counts == {"batch": 11_173_962, "group": 11_173_962, "none": 11_169_162}
    assert set(shapes["batch"]) == {"params", "batch_stats"}
    assert set(shapes["group"]) == set(shapes["none"]) == {"params"}
    names = list(shapes["batch"]["params"])
    assert {"stem_conv", "stem_norm", "head"} <= set(names)
    assert sum(n.startswith("stage") for n in names) == 8


@pytest.mark.parametrize("norm", ["group", "none"])
def test_resnet_small_forward(norm):
    model = ResNet(3, norm, width=4, stage_sizes=(1, 1))
    x = jnp.ones((2, 8, 8, 3))
    variables = jax.jit(model.init)(fast_key(0), x)
    assert set(variables) == {"params"}
    assert jax.jit(model.apply)(variables, x).shape == (2, 3)


def test_resnet18_unknown_norm():
    with pytest.raises(ConfigError, match="norm must be one of"):
        ResNet18(10, "layer").init(jax.random.PRNGKey(0), jnp.zeros((1, 8, 8, 3)))


def test_batchnorm_state_threads_through_scan_and_vmap_matches_single_runs():
    # the code paths of ResNet18 (stem, plain and projection blocks, BatchNorm state) with two one-block
    # stages, so that it compiles in seconds on CPU
    model = ResNet(4, "batch", width=4, stage_sizes=(1, 1))
    tx = optax.sgd(0.05)

    def init(key):
        variables = model.init(key, jnp.zeros((1, 8, 8, 3)))
        return variables["params"], variables["batch_stats"], tx.init(variables["params"])

    def step(carry, batch):
        params, stats, opt_state = carry
        x, y = batch

        def loss_fn(p):
            logits, updates = model.apply({"params": p, "batch_stats": stats}, x, train=True, mutable=["batch_stats"])
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), updates["batch_stats"]

        (loss, new_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), new_stats, opt_state), loss

    def train(state, xs, ys):
        (params, stats, _), losses = jax.lax.scan(step, state, (xs, ys))
        return params, stats, losses

    runs = 2
    states = jax.jit(jax.vmap(init))(jax.random.split(fast_key(0), runs))  # different initial weights per run
    xs = jax.random.normal(jax.random.PRNGKey(1), (runs, 3, 8, 8, 8, 3)) + 0.5  # run, step, batch, H, W, C
    ys = jax.random.randint(jax.random.PRNGKey(2), (runs, 3, 8), 0, 4)
    vmapped = jax.jit(jax.vmap(train))(states, xs, ys)
    single = jax.jit(train)
    states, xs, ys, vmapped = jax.tree.map(np.asarray, (states, xs, ys, vmapped))  # run r sliced on the host
    for r in range(runs):
        alone = single(jax.tree.map(lambda v: v[r], states), xs[r], ys[r])
        for a, b in zip(jax.tree.leaves(alone), jax.tree.leaves(jax.tree.map(lambda v: v[r], vmapped))):
            np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    assert not np.allclose(vmapped[0]["head"]["kernel"][0], vmapped[0]["head"]["kernel"][1])
    # the running statistics really moved away from their initial values (mean 0, var 1)
    stem_stats = vmapped[1]["stem_norm"]
    assert float(jnp.abs(stem_stats["mean"]).max()) > 1e-3
    assert not np.allclose(stem_stats["var"], 1.0)
    # evaluation uses the running averages and mutates nothing
    params, stats = jax.tree.map(lambda v: v[0], (vmapped[0], vmapped[1]))
    logits = jax.jit(functools.partial(model.apply, train=False))(
        {"params": params, "batch_stats": stats}, jnp.ones((2, 8, 8, 3))
    )
    assert logits.shape == (2, 4)
