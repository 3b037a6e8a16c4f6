"""Estimators the engine records when `train.record_grad_noise` is on (pure JAX, run inside the scan).

grad_noise_var: σ̂² = (1/K) Σ_k ‖g_{B_k} − g‖², with g the exact full-train-set gradient of the loss and
    g_{B_k} the mean gradient of K independent minibatches of B rows drawn without replacement from the
    run's training set. Since g is exact, σ̂² is unbiased for σ² = E‖g_B − g‖², the total variance of the
    theory's noise ξ = −(g_B − g) at this θ (the weight-decay term is deterministic and adds no noise).
    B is `noise_batch_size`, else the training batch size; with full-batch training σ² = 0 exactly.
sharpness: |vᵀ∇²L v| for the unit vector v after `iters` power iterations of the train-loss Hessian
    (Hessian-vector products, started from the gradient direction). A Rayleigh quotient never exceeds the
    largest |eigenvalue|, so this is a *lower* bound on the smoothness constant L of the loss at θ: a run
    with η > λ/sharpness certainly violates the assumption η ≤ λ/L.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from nht_jax.engine.metrics import sq_norm

NOISE_KEY_SALT = 0x5EED  # separates the estimator's minibatch draws from the training draws


def _tree_sub(a, b):
    return jax.tree.map(jnp.subtract, a, b)


def grad_noise_var(
    loss_fn: Callable, params, full_grad, train_index, train_weight, key, batch_size: int, samples: int
) -> jnp.ndarray:
    """σ̂² = mean over `samples` minibatches of ‖∇loss_fn(params, idx_B, w_B) − full_grad‖².

    Args:
        loss_fn: (params, index, weight) → the weighted mean loss over rows `index`.
        params: θ.
        full_grad: the full-batch gradient at θ.
        train_index: the rows a minibatch is drawn from.
        train_weight: marks the run's own training rows among `train_index` (padding rows have weight 0 and are
            never drawn).
        key: the PRNG key of the draws.
        batch_size: rows per minibatch.
        samples: minibatches averaged.

    Returns:
        σ̂², a scalar.
    """
    capacity = train_index.shape[0]

    def one(k):
        scores = jnp.where(train_weight > 0, jax.random.uniform(k, (capacity,)), -1.0)
        picked_scores, picked = jax.lax.top_k(scores, batch_size)
        g_b = jax.grad(loss_fn)(params, train_index[picked], (picked_scores >= 0).astype(jnp.float32))
        return sq_norm(_tree_sub(g_b, full_grad))

    return jnp.mean(jax.lax.map(one, jax.random.split(key, samples)))


def sharpness(loss_of_params: Callable, params, start, iters: int = 10) -> jnp.ndarray:
    """|Rayleigh quotient| of the Hessian of `loss_of_params` after `iters` power iterations.

    Args:
        loss_of_params: θ → the loss.
        params: θ, where the Hessian is taken.
        start: the power iteration's first vector, a pytree like θ.
        iters: power iterations.

    Returns:
        The estimate of the largest |eigenvalue|, a scalar.
    """
    grad_fn = jax.grad(loss_of_params)

    def hvp(v):
        return jax.jvp(grad_fn, (params,), (v,))[1]

    def normalise(v):
        scale = jnp.sqrt(sq_norm(v))
        return jax.tree.map(lambda x: x / jnp.maximum(scale, 1e-30), v)

    def body(v, _):
        return normalise(hvp(v)), None

    v, _ = jax.lax.scan(body, normalise(start), None, length=iters)
    hv = hvp(v)
    return jnp.abs(sum(jnp.vdot(a, b) for a, b in zip(jax.tree.leaves(v), jax.tree.leaves(hv))))


__all__ = ["grad_noise_var", "sharpness"]
