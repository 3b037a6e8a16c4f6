"""Weight-decay conventions checked exactly with a zero loss gradient; the optimisers as chains of primitives:
AdamW bit for bit against optax.adamw, every chain against its stated formula, every constant reaching the update."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from nht_jax.engine.metrics import sq_norm
from nht_jax.engine.optim import (
    OPTIMISERS,
    declared_contraction,
    gamma_eff,
    learning_rate_schedule,
    make_optimiser,
    norm_shrink_factor,
)
from nht_jax.config.sections import OptimConfig

PARAMS = {"dense": {"kernel": jnp.full((3, 4), 0.5), "bias": jnp.full((4,), 2.0)}}
ETA, LAM = 0.05, 0.3


def zero_grad_norms(name, steps, decay_on="all", **kw):
    opt = make_optimiser(OptimConfig(name=name, decay_on=decay_on, **kw), ETA, LAM, PARAMS)
    params, state = PARAMS, opt.init(PARAMS)
    zeros = jax.tree.map(jnp.zeros_like, PARAMS)
    norms = [float(sq_norm(params))]
    for _ in range(steps):
        updates, state = opt.update(zeros, state, params)
        params = jax.tree.map(lambda p, u: p + u, params, updates)
        norms.append(float(sq_norm(params)))
    return np.array(norms), params


@pytest.mark.parametrize(
    "name,factor",
    [
        ("adamw", (1 - ETA * LAM) ** 2),
        ("sgdw", (1 - ETA * LAM) ** 2),
        ("sgdw_momentum", (1 - ETA * LAM) ** 2),
        ("sgd", (1 - 2 * ETA * LAM) ** 2),
    ],
)
def test_zero_gradient_contraction_is_exact(name, factor):
    norms, _ = zero_grad_norms(name, 10)
    np.testing.assert_allclose(norms[1:] / norms[:-1], factor, rtol=1e-5)
    np.testing.assert_allclose(float(norm_shrink_factor(name, ETA, LAM)), factor, rtol=1e-6)
    np.testing.assert_allclose(float(gamma_eff(name, ETA, LAM)), 1 - factor, rtol=1e-5)


def test_gamma_eff_first_order_rates():
    assert float(gamma_eff("adamw", 1e-4, 1e-2)) == pytest.approx(2e-6, rel=1e-3)
    assert float(gamma_eff("sgd", 1e-4, 1e-2)) == pytest.approx(4e-6, rel=1e-3)


def test_l2_momentum_reaches_its_asymptotic_rate():
    norms, _ = zero_grad_norms("sgd_momentum", 400, momentum=0.5)
    measured = norms[-1] / norms[-2]
    assert measured == pytest.approx(float(norm_shrink_factor("sgd_momentum", ETA, LAM, 0.5)), rel=1e-4)
    assert measured < (1 - 2 * ETA * LAM) ** 2  # momentum amplifies the ℓ2 contraction


def test_weights_only_mask_leaves_biases_alone():
    _, params = zero_grad_norms("adamw", 5, decay_on="weights")
    np.testing.assert_allclose(params["dense"]["bias"], 2.0)
    np.testing.assert_allclose(params["dense"]["kernel"], 0.5 * (1 - ETA * LAM) ** 5, rtol=1e-6)


def test_cosine_schedule_from_a_traced_learning_rate():
    import optax

    from nht_jax.engine.optim import learning_rate_schedule

    assert learning_rate_schedule("constant", 0.1, 100) == 0.1

    @jax.jit
    def rates(eta):
        schedule = learning_rate_schedule("cosine", eta, 100)
        return jnp.stack([schedule(0), schedule(50), schedule(100), schedule(150)])

    np.testing.assert_allclose(rates(0.1), [0.1, 0.05, 0.0, 0.0], atol=1e-7)

    @jax.jit
    def sgd_steps(eta):  # plain SGD under the schedule: θ_t+1 = θ_t − η_t·g with g = 1
        params = {"w": jnp.zeros(())}
        tx = make_optimiser(OptimConfig(name="sgdw"), learning_rate_schedule("cosine", eta, 4), 0.0, params)
        state = tx.init(params)
        for _ in range(4):
            updates, state = tx.update({"w": jnp.ones(())}, state, params)
            params = optax.apply_updates(params, updates)
        return params["w"]

    expected = -sum(0.1 * 0.5 * (1 + np.cos(np.pi * t / 4)) for t in range(4))
    np.testing.assert_allclose(sgd_steps(0.1), expected, rtol=1e-6)


# ----------------------------------------------------------------------------- the chains of primitives

TREE = {"layer": {"kernel": (3, 4), "bias": (4,)}, "embed": (5, 2)}


def random_tree(key, scale=1.0):
    leaves, treedef = jax.tree.flatten(TREE, is_leaf=lambda x: isinstance(x, tuple))
    keys = jax.random.split(key, len(leaves))
    return jax.tree.unflatten(treedef, [scale * jax.random.normal(k, s) for k, s in zip(keys, leaves)])


def run_updates(tx, steps=40, seed=0):
    """θ after `steps` updates of `tx` on random gradients (the same for every tx with the same seed)."""
    params = random_tree(jax.random.PRNGKey(seed))
    state = tx.init(params)
    history = []
    for t in range(steps):
        grads = random_tree(jax.random.PRNGKey(1000 + t), scale=0.1)
        updates, state = tx.update(grads, state, params)
        params = optax.apply_updates(params, updates)
        history.append(params)
    return history


def test_the_registry_is_every_optimiser_name():
    from typing import get_args, get_type_hints

    assert set(OPTIMISERS) == set(get_args(get_type_hints(OptimConfig)["name"]))


@pytest.mark.parametrize("schedule", ["constant", "cosine"])
@pytest.mark.parametrize("decay_on", ["weights", "all"])
def test_the_adamw_chain_is_optax_adamw_bit_for_bit(schedule, decay_on):
    cfg = OptimConfig(name="adamw", b1=0.8, b2=0.95, eps=1e-6, decay_on=decay_on)
    params = random_tree(jax.random.PRNGKey(0))
    eta = learning_rate_schedule(schedule, 3e-2, 30)
    ours = run_updates(make_optimiser(cfg, eta, 0.5, params))
    mask = jax.tree.map(lambda p: decay_on == "all" or p.ndim >= 2, params)
    reference = run_updates(optax.adamw(eta, b1=0.8, b2=0.95, eps=1e-6, weight_decay=0.5, mask=mask))
    for a, b in zip(ours, reference):
        assert all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def formula_trajectory(cfg: OptimConfig, eta, lam, steps=40):
    """The stated update rules in float64 NumPy, decay on ndim ≥ 2 leaves (decay_on = "weights")."""
    theta = [np.asarray(x, np.float64) for x in jax.tree.leaves(random_tree(jax.random.PRNGKey(0)))]
    decay = [float(x.ndim >= 2) for x in theta]
    m = [np.zeros_like(x) for x in theta]
    v = [np.zeros_like(x) for x in theta]
    out = []
    for t in range(1, steps + 1):
        grads = [np.asarray(x, np.float64) for x in jax.tree.leaves(random_tree(jax.random.PRNGKey(999 + t), 0.1))]
        for i, g in enumerate(grads):
            d = decay[i] * lam * theta[i]
            if cfg.name == "adamw":
                m[i] = cfg.b1 * m[i] + (1 - cfg.b1) * g
                v[i] = cfg.b2 * v[i] + (1 - cfg.b2) * g * g
                m_hat, v_hat = m[i] / (1 - cfg.b1**t), v[i] / (1 - cfg.b2**t)
                theta[i] = theta[i] - eta * d - eta * m_hat / (np.sqrt(v_hat) + cfg.eps)
            elif cfg.name == "sgd":
                theta[i] = theta[i] - eta * (g + 2 * d)
            elif cfg.name == "sgdw":
                theta[i] = theta[i] - eta * d - eta * g
            else:
                g_in = g + 2 * d if cfg.name == "sgd_momentum" else g
                m[i] = cfg.momentum * m[i] + g_in
                step = cfg.momentum * m[i] + g_in if cfg.nesterov else m[i]
                theta[i] = theta[i] - eta * step - (eta * d if cfg.name == "sgdw_momentum" else 0.0)
        out.append([x.copy() for x in theta])
    return out


FORMULA_CASES = [
    OptimConfig(name="adamw", b1=0.7, b2=0.9, eps=1e-2),
    OptimConfig(name="sgd"),
    OptimConfig(name="sgdw"),
    OptimConfig(name="sgd_momentum", momentum=0.6),
    OptimConfig(name="sgd_momentum", momentum=0.6, nesterov=True),
    OptimConfig(name="sgdw_momentum", momentum=0.6),
    OptimConfig(name="sgdw_momentum", momentum=0.6, nesterov=True),
]


@pytest.mark.parametrize("cfg", FORMULA_CASES, ids=lambda c: f"{c.name}{'-nesterov' if c.nesterov else ''}")
def test_each_chain_follows_its_stated_formula(cfg):
    """Non-default constants (β1, β2, ε, β, nesterov): a chain that drops one of them leaves this formula."""
    params = random_tree(jax.random.PRNGKey(0))
    ours = run_updates(make_optimiser(cfg, 0.05, 0.3, params), seed=0)
    expected = formula_trajectory(cfg, 0.05, 0.3)
    for a, b in zip(ours, expected):
        for x, y in zip(jax.tree.leaves(a), b):
            np.testing.assert_allclose(x, y, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize(
    "name,field,value",
    [
        ("adamw", "b1", 0.5),
        ("adamw", "b2", 0.5),
        ("adamw", "eps", 1.0),
        ("sgd_momentum", "momentum", 0.2),
        ("sgdw_momentum", "momentum", 0.2),
        ("sgd_momentum", "nesterov", True),
        ("sgdw_momentum", "nesterov", True),
    ],
)
def test_every_constant_reaches_the_update(name, field, value):
    params = random_tree(jax.random.PRNGKey(0))
    base = OptimConfig(name=name)
    changed = OptimConfig(**{**base.__dict__, field: value})
    a = run_updates(make_optimiser(base, 0.05, 0.3, params), steps=5)[-1]
    b = run_updates(make_optimiser(changed, 0.05, 0.3, params), steps=5)[-1]
    assert not all(np.allclose(x, y, rtol=1e-6) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


@pytest.mark.parametrize("name", sorted(OPTIMISERS))
def test_declared_contraction_of_a_bare_optimiser_is_its_gamma_eff(name):
    eta, lam = np.array([0.1, 0.01]), np.array([0.5, 2.0])
    c = declared_contraction(OptimConfig(name=name, momentum=0.7), eta, lam)
    assert c.known and c.reason == ""
    np.testing.assert_array_equal(c.gamma, gamma_eff(name, eta, lam, 0.7))
