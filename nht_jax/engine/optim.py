"""Optimisers built from traced (η, λ) and their weight-decay conventions.

Every optimiser here is an optax GradientTransformation whose η and λ may be traced
arrays, so one compiled program serves a whole grid. The convention of each (how
weight decay enters the update) is stated in `OptimConfig`'s docstring and below;
`gamma_eff` gives the resulting contraction rate of V = ‖θ‖².
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from nht_jax.engine.settings import OptimConfig, TrainConfig


def decay_mask(params, decay_on: str):
    """True for parameters that weight decay acts on: ndim ≥ 2 for "weights", all for "all"."""
    return jax.tree.map(lambda p: decay_on == "all" or jnp.ndim(p) >= 2, params)


def learning_rate_schedule(kind: str, learning_rate, steps: int):
    """η itself ("constant") or the schedule t ↦ η·(1 + cos(π·min(t, steps)/steps))/2 ("cosine").

    η may be a traced scalar: the schedule is built inside the traced function.
    """
    if kind == "constant":
        return learning_rate
    if kind == "cosine":
        return optax.cosine_decay_schedule(learning_rate, decay_steps=steps)
    raise ValueError(f"unknown learning-rate schedule {kind!r}")


def make_optimizer(optim: OptimConfig, learning_rate, weight_decay, params) -> optax.GradientTransformation:
    """The optimiser for one run. `learning_rate` is η (a scalar) or a schedule t ↦ η_t, in which
    case η_t replaces η below (decoupled weight decay then shrinks θ by (1 − η_t·λ)).

    adamw          θ ← θ(1 − ηλ) − η·m̂/(√v̂ + ε)
    sgd            θ ← θ − η(∇L + 2λθ)
    sgdw           θ ← θ(1 − ηλ) − η∇L
    sgd_momentum   m ← βm + ∇L + 2λθ;  θ ← θ − ηm
    sgdw_momentum  m ← βm + ∇L;        θ ← θ(1 − ηλ) − ηm
    """
    mask = decay_mask(params, optim.decay_on)
    if optim.name == "adamw":
        return optax.adamw(learning_rate, b1=optim.b1, b2=optim.b2, eps=optim.eps, weight_decay=weight_decay, mask=mask)
    momentum = optax.trace(decay=optim.momentum, nesterov=optim.nesterov)
    step = (optax.scale_by_schedule(lambda count: -learning_rate(count)) if callable(learning_rate)
            else optax.scale(-learning_rate))
    if optim.name == "sgd":
        return optax.chain(optax.add_decayed_weights(2.0 * weight_decay, mask), step)
    if optim.name == "sgdw":
        return optax.chain(optax.add_decayed_weights(weight_decay, mask), step)
    if optim.name == "sgd_momentum":
        return optax.chain(optax.add_decayed_weights(2.0 * weight_decay, mask), momentum, step)
    if optim.name == "sgdw_momentum":
        return optax.chain(momentum, optax.add_decayed_weights(weight_decay, mask), step)
    raise ValueError(f"unknown optimiser {optim.name!r}")


def theta_shrink(name: str, learning_rate, weight_decay):
    """s with θ ← (1 − s)θ per step from weight decay alone: ηλ (decoupled) or 2ηλ (ℓ2 penalty)."""
    eta_lam = np.asarray(learning_rate, np.float64) * np.asarray(weight_decay, np.float64)
    if name in ("adamw", "sgdw", "sgdw_momentum"):
        return eta_lam
    if name in ("sgd", "sgd_momentum"):
        return 2.0 * eta_lam
    raise ValueError(f"unknown optimiser {name!r}")


def gamma_eff(name: str, learning_rate, weight_decay, momentum: float = 0.9):
    """Contraction rate γ of V = ‖θ‖² per step under zero loss gradient: V_{t+1} = (1 − γ)V_t.

    Decoupled (adamw, sgdw, sgdw_momentum): θ shrinks by (1 − ηλ), γ = ηλ(2 − ηλ) ≈ 2ηλ.
    ℓ2 sgd: θ shrinks by (1 − 2ηλ), γ = 2ηλ(2 − 2ηλ) ≈ 4ηλ.
    ℓ2 sgd_momentum (asymptotic): θ_t ∝ r^t with r the larger root of
    r² − (1 + β − 2ηλ)r + β = 0 (heavy ball on λ‖θ‖²), γ = 1 − r² (complex roots: 1 − β).
    The paper's bound uses the weaker guaranteed rate ηλ (`gamma_theory`); for AdamW the
    realised rate with gradients differs again and is measured from trajectories.
    Computed in float64 on the host.
    """
    s = theta_shrink(name, learning_rate, weight_decay)
    if name != "sgd_momentum":
        return s * (2.0 - s)
    b = 1.0 + momentum - s
    disc = b * b - 4.0 * momentum
    root = 0.5 * (np.abs(b) + np.sqrt(np.maximum(disc, 0.0)))
    return np.where(disc >= 0, 1.0 - root ** 2, 1.0 - momentum)


def norm_shrink_factor(name: str, learning_rate, weight_decay, momentum: float = 0.9):
    """1 − γ: the per-step factor of V_{t+1} = (1 − γ)·V_t under zero loss gradient (see `gamma_eff`)."""
    return 1.0 - gamma_eff(name, learning_rate, weight_decay, momentum)


def gamma_theory(learning_rate, weight_decay):
    """The rate ηλ in the paper's Lyapunov bound E[V_{t+1}] ≤ (1 − ηλ)V_t + η²σ²."""
    return np.asarray(learning_rate) * np.asarray(weight_decay)


def optimizer_for(optim: OptimConfig, train: TrainConfig, hparams: dict, params) -> optax.GradientTransformation:
    """The one place a run's optax transformation is built from its traced grid values: η
    (`hparams["learning_rate"]`, through `train.lr_schedule`) and λ (`hparams["weight_decay"]`)."""
    eta = learning_rate_schedule(train.lr_schedule, hparams["learning_rate"], train.steps)
    return make_optimizer(optim, eta, hparams["weight_decay"], params)
