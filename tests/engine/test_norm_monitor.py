"""`record_norms` in a plain optax loop written here (a Flax MLP on (a + b) mod p, optax.adamw): the loop is
bit-identical with and without it, the records equal norms computed independently, under jit and lax.scan, and
the buffer's overflow rules ("thin", "ring") keep the records they say."""

import jax
import jax.numpy as jnp
import flax.linen as nn
import numpy as np
import optax
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.engine.norm_monitor import history, layer_tree, norms_of, record_norms

P, WIDTH, STEPS = 23, 32, 300


class MLP(nn.Module):
    @nn.compact
    def __call__(self, a, b):
        embed = nn.Embed(P, WIDTH, name="embed")
        hidden = nn.Dense(WIDTH, name="hidden")(embed(a) + embed(b)) ** 2
        return nn.Dense(P, name="head")(hidden)


def task():
    a, b = (x.ravel() for x in np.meshgrid(np.arange(P), np.arange(P)))
    train = np.random.default_rng(0).permutation(a.size)[: a.size // 2]
    return a[train], b[train], (a[train] + b[train]) % P


def train(tx, steps=STEPS):
    """The loop: full-batch AdamW steps in one lax.scan; (final params, final optimiser state, params at every
    step before its update, loss at every step)."""
    a, b, y = task()
    model = MLP()
    params = jax.jit(model.init)(jax.random.PRNGKey(0), a[:1], b[:1])["params"]  # one program, not one per operation

    def loss_fn(p):
        return optax.softmax_cross_entropy_with_integer_labels(model.apply({"params": p}, a, b), y).mean()

    def step(carry, _):
        p, state = carry
        loss, grads = jax.value_and_grad(loss_fn)(p)
        updates, state = tx.update(grads, state, p)
        return (optax.apply_updates(p, updates), state), (p, loss)

    (params, state), (trajectory, losses) = jax.jit(lambda p: jax.lax.scan(step, (p, tx.init(p)), None, length=steps))(
        params
    )
    return params, state, trajectory, losses


def adamw():
    return optax.adamw(1e-2, b2=0.98, weight_decay=1.0)


def bits(tree):
    return [np.asarray(x).view(np.uint8).tobytes() for x in jax.tree.leaves(tree)]


def independent_norms(trajectory, k):
    """‖θ_k‖² and per layer, in float64 on the host."""
    layers = {
        name: sum(float(np.sum(np.asarray(x, np.float64)[k] ** 2)) for x in jax.tree.leaves(sub))
        for name, sub in trajectory.items()
    }
    return sum(layers.values()), layers


@pytest.fixture(scope="module")
def runs():
    return train(adamw()), train(optax.chain(record_norms(every=7, capacity=64), adamw()))


def test_the_loop_is_bit_identical_with_the_monitor(runs):
    (params, _, _, losses), (params_m, _, _, losses_m) = runs
    assert bits(params) == bits(params_m)
    assert bits(losses) == bits(losses_m)


def test_the_monitor_anywhere_in_the_chain_changes_nothing():
    plain = train(adamw(), steps=40)
    last = train(optax.chain(adamw(), record_norms(every=3)), steps=40)
    assert bits(plain[0]) == bits(last[0])
    np.testing.assert_array_equal(history(last[1]).steps, np.arange(0, 40, 3))


def test_the_records_equal_norms_computed_independently(runs):
    _, (_, state, trajectory, _) = runs
    h = history(state)
    np.testing.assert_array_equal(h.steps, np.arange(0, STEPS, 7))
    assert set(h.layers) == {"embed", "hidden", "head"}
    for i, k in enumerate(h.steps):
        total, layers = independent_norms(trajectory, k)
        np.testing.assert_allclose(h.norm_sq[i], total, rtol=1e-5)
        for name, value in layers.items():
            np.testing.assert_allclose(h.layers[name][i], value, rtol=1e-5)


def test_under_plain_jit_the_records_equal_those_of_the_scan(runs):
    _, (_, scanned, _, _) = runs
    a, b, y = task()
    model, tx = MLP(), optax.chain(record_norms(every=7, capacity=64), adamw())
    params = jax.jit(model.init)(jax.random.PRNGKey(0), a[:1], b[:1])["params"]
    state = jax.jit(tx.init)(params)

    @jax.jit
    def step(p, s):
        grads = jax.grad(
            lambda q: optax.softmax_cross_entropy_with_integer_labels(model.apply({"params": q}, a, b), y).mean()
        )(p)
        updates, s = tx.update(grads, s, p)
        return optax.apply_updates(p, updates), s

    for _ in range(50):
        params, state = step(params, state)
    h, ref = history(state), history(scanned)
    np.testing.assert_array_equal(h.steps, ref.steps[ref.steps < 50])
    np.testing.assert_allclose(h.norm_sq, ref.norm_sq[: h.steps.size], rtol=1e-6)


@pytest.mark.parametrize(
    "overflow, every, expected", [("thin", 1, np.arange(0, 30, 4)), ("ring", 3, np.arange(6, 30, 3))]
)
def test_a_full_buffer_keeps_what_its_overflow_rule_says(overflow, every, expected):
    _, state, trajectory, _ = train(
        optax.chain(record_norms(every=every, capacity=8, overflow=overflow), adamw()), steps=30
    )
    h = history(state)
    np.testing.assert_array_equal(h.steps, expected)
    np.testing.assert_allclose(h.norm_sq, [independent_norms(trajectory, k)[0] for k in expected], rtol=1e-5)


def test_vmapped_runs_each_keep_their_own_history():
    tx = record_norms(every=1, capacity=4)
    params = {"w": jnp.arange(3.0)[:, None] * jnp.ones((3, 2))}  # three runs: ‖θ‖² = 2·r²
    state = jax.jit(jax.vmap(tx.init))(params)
    _, state = jax.jit(jax.vmap(lambda u, s, p: tx.update(u, s, p)))(params, state, params)
    for r in range(3):
        h = history(jax.tree.map(lambda x: x[r], jax.device_get(state)))  # indexed on the host: nothing to compile
        np.testing.assert_allclose(h.norm_sq, [2.0 * r * r])
    with pytest.raises(ConfigError, match="batched"):
        history(state)


def test_norms_of_unwraps_flax_variables_and_splits_sequences():
    params = {"params": {"a": jnp.ones(3), "b": {"k": jnp.full((2, 2), 2.0)}}}
    norms = jax.jit(norms_of)(params)
    assert float(norms.norm_sq) == 19.0 and {k: float(v) for k, v in norms.layers.items()} == {"a": 3.0, "b": 16.0}
    assert set(layer_tree([jnp.ones(2), jnp.ones(1)])) == {"0", "1"} and layer_tree(jnp.ones(2)) == {}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"every": 0}, "every"),
        ({"capacity": 1}, "capacity"),
        ({"capacity": 9}, "even"),
        ({"overflow": "drop"}, "overflow"),
    ],
)
def test_bad_settings_are_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        record_norms(**kwargs)


def test_update_without_params_and_a_state_without_one_monitor_are_config_errors():
    tx = record_norms()
    state = tx.init({"w": jnp.ones(2)})
    with pytest.raises(ConfigError, match="params"):
        tx.update({"w": jnp.ones(2)}, state)
    with pytest.raises(ConfigError, match="2 record_norms states"):
        history((state, state))
    with pytest.raises(ConfigError, match="0 record_norms states"):
        history(optax.adam(1e-3).init({"w": jnp.ones(2)}))
