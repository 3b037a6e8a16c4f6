"""Weight-decay conventions checked exactly with a zero loss gradient."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nht_jax.engine.settings import OptimConfig
from nht_jax.engine.metrics import sq_norm
from nht_jax.engine.optim import gamma_eff, make_optimizer, norm_shrink_factor

PARAMS = {"dense": {"kernel": jnp.full((3, 4), 0.5), "bias": jnp.full((4,), 2.0)}}
ETA, LAM = 0.05, 0.3


def zero_grad_norms(name, steps, decay_on="all", **kw):
    opt = make_optimizer(OptimConfig(name=name, decay_on=decay_on, **kw), ETA, LAM, PARAMS)
    params, state = PARAMS, opt.init(PARAMS)
    zeros = jax.tree.map(jnp.zeros_like, PARAMS)
    norms = [float(sq_norm(params))]
    for _ in range(steps):
        updates, state = opt.update(zeros, state, params)
        params = jax.tree.map(lambda p, u: p + u, params, updates)
        norms.append(float(sq_norm(params)))
    return np.array(norms), params


@pytest.mark.parametrize("name,factor", [("adamw", (1 - ETA * LAM) ** 2), ("sgdw", (1 - ETA * LAM) ** 2),
                                         ("sgdw_momentum", (1 - ETA * LAM) ** 2), ("sgd", (1 - 2 * ETA * LAM) ** 2)])
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
        tx = make_optimizer(OptimConfig(name="sgdw"), learning_rate_schedule("cosine", eta, 4), 0.0, params)
        state = tx.init(params)
        for _ in range(4):
            updates, state = tx.update({"w": jnp.ones(())}, state, params)
            params = optax.apply_updates(params, updates)
        return params["w"]

    expected = -sum(0.1 * 0.5 * (1 + np.cos(np.pi * t / 4)) for t in range(4))
    np.testing.assert_allclose(sgd_steps(0.1), expected, rtol=1e-6)
