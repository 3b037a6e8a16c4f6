"""Optimisers as optax chains of primitives, their weight-decay conventions and declared contraction.

Every optimiser is `optax.chain` of small primitives (`adam_moments`, `decayed_weights`, `heavy_ball`,
`learning_rate_step`), in the order optax itself composes them, and is one record of the registry `OPTIMISERS`: its
chain, its formula, its weight-decay shrink and its contraction γ of V = ‖θ‖² under zero loss gradient. η and λ may
be traced arrays, so one compiled program serves a whole grid. `optimiser_for` puts the `optim.before` slot
(`nht_jax.engine.slots`) in front of the chain; `declared_contraction` gives γ_eff of a whole configuration,
optimiser and slots together, or "unknown" with the reason.

Each optimiser's update, chain and γ_eff: docs/methods/index.md, "Optimisers and γ_eff", and
docs/extending/intervention.md."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from nht_jax.engine import slots
from nht_jax.engine.contraction import (
    Contraction,
    eta_lambda,
    heavy_ball_rate,
    shrink_rate,
)
from nht_jax.config.sections import OptimConfig, TrainConfig


def decay_mask(params, decay_on: str):
    """True for parameters that weight decay acts on: ndim ≥ 2 for "weights", all for "all".

    Args:
        params: θ, a pytree.
        decay_on: "weights" or "all".

    Returns:
        A pytree of booleans like θ.
    """
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


# ----------------------------------------------------------------------------- primitives


def adam_moments(b1: float, b2: float, eps: float) -> optax.GradientTransformation:
    """Adam's bias-corrected moment ratio (`optax.scale_by_adam`).

        m_t = β1·m_{t−1} + (1 − β1)·u,   v_t = β2·v_{t−1} + (1 − β2)·u²
        u ← m̂_t / (√v̂_t + ε),           m̂_t = m_t/(1 − β1^t), v̂_t = v_t/(1 − β2^t)

    Args:
      b1: β1, the decay of the first moment.
      b2: β2, the decay of the second moment.
      eps: ε, added to √v̂ (outside the root).

    Returns:
      An optax GradientTransformation with state (count, m, v).

    References:
      Kingma and Ba, Adam: A Method for Stochastic Optimization, 2015.
    """
    return optax.scale_by_adam(b1=b1, b2=b2, eps=eps)


def decayed_weights(rate, mask) -> optax.GradientTransformation:
    """Weight decay added to the update on the masked parameters (`optax.add_decayed_weights`).

        u ← u + rate·θ   where mask is True

    Before the learning-rate step this is decoupled decay θ ← θ(1 − η·rate) − …; before the momentum it is the
    gradient of the ℓ2 penalty (rate/2)‖θ‖².

    Args:
      rate: the decay coefficient (λ decoupled, 2λ for the penalty λ‖θ‖²); may be traced.
      mask: a pytree of booleans like the parameters (`decay_mask`).

    Returns:
      An optax GradientTransformation (stateless, masked).
    """
    return optax.add_decayed_weights(rate, mask)


def heavy_ball(momentum: float, nesterov: bool) -> optax.GradientTransformation:
    """Heavy-ball momentum (`optax.trace`).

        m_t = β·m_{t−1} + u,   u ← m_t          (nesterov: u ← β·m_t + u)

    Args:
      momentum: β.
      nesterov: use Nesterov's look-ahead form.

    Returns:
      An optax GradientTransformation with state m.

    References:
      Polyak, Some methods of speeding up the convergence of iteration methods, 1964.
    """
    return optax.trace(decay=momentum, nesterov=nesterov)


def learning_rate_step(learning_rate) -> optax.GradientTransformation:
    """The descent step (`optax.scale_by_learning_rate`): u ← −η_t·u.

    Args:
      learning_rate: η (a scalar, may be traced) or a schedule t ↦ η_t.

    Returns:
      An optax GradientTransformation (with a step count when η is a schedule).
    """
    return optax.scale_by_learning_rate(learning_rate)


# ----------------------------------------------------------------------------- the registry


class Optimiser(NamedTuple):
    """One optimiser family.

    chain(optim, learning_rate, weight_decay, mask) → its primitives in order; formula: its update in one line;
    decay: "decoupled" (θ shrinks by (1 − ηλ)) or "l2" (the penalty λ‖θ‖², θ shrinks by (1 − 2ηλ));
    contraction(optim, η, λ) → γ of V = ‖θ‖² per step under zero loss gradient (float64, exact)."""

    chain: Callable[[OptimConfig, object, object, object], list[optax.GradientTransformation]]
    formula: str
    decay: str
    contraction: Callable[[OptimConfig, object, object], np.ndarray]


def _shrink(decay: str, learning_rate, weight_decay) -> np.ndarray:
    return (1.0 if decay == "decoupled" else 2.0) * eta_lambda(learning_rate, weight_decay)


def _shrink_contraction(decay: str):
    """γ = s(2 − s) of the per-step shrink s of this decay convention."""
    return lambda optim, eta, lam: shrink_rate(_shrink(decay, eta, lam))


OPTIMISERS: dict[str, Optimiser] = {
    "adamw": Optimiser(
        lambda o, lr, wd, mask: [adam_moments(o.b1, o.b2, o.eps), decayed_weights(wd, mask), learning_rate_step(lr)],
        "θ ← θ(1 − ηλ) − η·m̂/(√v̂ + ε)",
        "decoupled",
        _shrink_contraction("decoupled"),
    ),
    "sgd": Optimiser(
        lambda o, lr, wd, mask: [decayed_weights(2.0 * wd, mask), learning_rate_step(lr)],
        "θ ← θ − η(g + 2λθ)",
        "l2",
        _shrink_contraction("l2"),
    ),
    "sgdw": Optimiser(
        lambda o, lr, wd, mask: [decayed_weights(wd, mask), learning_rate_step(lr)],
        "θ ← θ(1 − ηλ) − ηg",
        "decoupled",
        _shrink_contraction("decoupled"),
    ),
    "sgd_momentum": Optimiser(
        lambda o, lr, wd, mask: [
            decayed_weights(2.0 * wd, mask),
            heavy_ball(o.momentum, o.nesterov),
            learning_rate_step(lr),
        ],
        "m ← βm + g + 2λθ;  θ ← θ − ηm",
        "l2",
        lambda o, eta, lam: heavy_ball_rate(_shrink("l2", eta, lam), o.momentum),
    ),
    "sgdw_momentum": Optimiser(
        lambda o, lr, wd, mask: [heavy_ball(o.momentum, o.nesterov), decayed_weights(wd, mask), learning_rate_step(lr)],
        "m ← βm + g;  θ ← θ(1 − ηλ) − ηm",
        "decoupled",
        _shrink_contraction("decoupled"),
    ),
}
"""Every optimiser family by `optim.name`."""


def optimiser(name: str) -> Optimiser:
    """The registered optimiser called `name` (ValueError when there is none).

    Args:
        name: its name, e.g. "adamw".

    Returns:
        The Optimiser.
    """
    if name not in OPTIMISERS:
        raise ValueError(f"unknown optimiser {name!r}; known: {', '.join(OPTIMISERS)}")
    return OPTIMISERS[name]


def make_optimiser(optim: OptimConfig, learning_rate, weight_decay, params) -> optax.GradientTransformation:
    """The optimiser's own chain for one run (without the slots).

    Args:
        optim: the [optim] settings (`config.optim`).
        learning_rate: η (a scalar) or a schedule t ↦ η_t, in which case η_t replaces η (decoupled weight decay
            then shrinks θ by (1 − η_t·λ)).
        weight_decay: λ.
        params: the parameters (their tree gives the decay mask, `optim.decay_on`).

    Returns:
        optax.GradientTransformation.

    Examples:
        >>> tx = nht_jax.make_optimiser(nht_jax.load("default").optim, 1e-3, 1.0, params)
    """
    mask = decay_mask(params, optim.decay_on)
    return optax.chain(*optimiser(optim.name).chain(optim, learning_rate, weight_decay, mask))


def optimiser_for(optim: OptimConfig, train: TrainConfig, hparams: dict, params) -> optax.GradientTransformation:
    """The one place a run's optax transformation is built from its traced grid values: the `optim.before` slot
    on the raw gradient, then the optimiser with η (`hparams["learning_rate"]`, through `train.lr_schedule`) and
    λ (`hparams["weight_decay"]`). Without a `before` entry it is the optimiser's chain itself (same state)."""
    eta = learning_rate_schedule(train.lr_schedule, hparams["learning_rate"], train.steps)
    tx = make_optimiser(optim, eta, hparams["weight_decay"], params)
    before = slots.gradient_transformations(optim.before, hparams)
    return optax.chain(*before, tx) if before else tx


# ----------------------------------------------------------------------------- contraction


def theta_shrink(name: str, learning_rate, weight_decay):
    """s with θ ← (1 − s)θ per step from weight decay alone: ηλ (decoupled) or 2ηλ (ℓ2 penalty)."""
    return _shrink(optimiser(name).decay, learning_rate, weight_decay)


def gamma_eff(name: str, learning_rate, weight_decay, momentum: float = 0.9):
    """The optimiser's own contraction rate γ of V = ‖θ‖² per step under zero loss gradient: V_{t+1} = (1 − γ)V_t
    (no slots: `declared_contraction` reads a whole configuration).

    Decoupled (adamw, sgdw, sgdw_momentum): θ shrinks by (1 − ηλ), γ = ηλ(2 − ηλ) ≈ 2ηλ.
    ℓ2 sgd: θ shrinks by (1 − 2ηλ), γ = 2ηλ(2 − 2ηλ) ≈ 4ηλ.
    ℓ2 sgd_momentum (asymptotic): θ_t ∝ r^t with r the larger root of
    r² − (1 + β − 2ηλ)r + β = 0 (heavy ball on λ‖θ‖²), γ = 1 − r² (complex roots: 1 − β).
    The paper's bound uses the weaker guaranteed rate ηλ (`gamma_theory`); for AdamW the
    realised rate with gradients differs again and is measured from trajectories.
    Computed in float64 on the host.

    Args:
        name: the optimiser (`optim.name`: adamw, sgd, sgdw, sgd_momentum, …).
        learning_rate: η (a number or an array).
        weight_decay: λ (a number or an array, broadcast with η).
        momentum: β, for the momentum optimisers.

    Returns:
        γ per step, as an array of the broadcast shape.

    Examples:
        >>> round(float(nht_jax.gamma_eff("adamw", 1e-3, 1.0)), 6)  # ηλ(2 − ηλ)
        0.001999
    """
    return optimiser(name).contraction(OptimConfig(name=name, momentum=momentum), learning_rate, weight_decay)


def declared_contraction(optim: OptimConfig, learning_rate, weight_decay, hparams=None) -> Contraction:
    """γ_eff of a whole configuration per run: the optimiser's declared rate passed through every slot entry's
    declaration (`nht_jax.engine.slots.fold_contraction`), or NaN with the reason where some entry makes it
    unknown.

    Args:
        optim: the [optim] settings.
        learning_rate: η of the runs (with a schedule, the base η).
        weight_decay: λ of the runs.
        hparams: the runs' grid values; they let a run at an entry's identity (a clamp at c = 0 in a grid of
            clamps) keep the optimiser's rate.

    Returns:
        The Contraction: γ per run, and the reason where it is NaN.
    """
    rate = optimiser(optim.name).contraction(optim, learning_rate, weight_decay)
    return slots.fold_contraction(optim.before, optim.after, Contraction(np.asarray(rate, np.float64)), hparams)


def log_contraction(optim: OptimConfig, hparams: dict, num_runs: int) -> np.ndarray:
    """g = −log(1 − γ_eff) per run: the contraction of ‖θ‖² per step that weight decay alone imposes, in log units
    (≈ 2ηλ for AdamW), from `declared_contraction` at the runs' η and λ; NaN where γ_eff is unknown.

    Args:
        optim: the [optim] settings.
        hparams: the runs' values, with learning_rate and weight_decay.
        num_runs: runs.

    Returns:
        g, shape (num_runs,).
    """
    gamma = declared_contraction(optim, hparams["learning_rate"], hparams["weight_decay"], hparams).gamma
    return -np.log1p(-np.minimum(np.broadcast_to(np.asarray(gamma, np.float64), (num_runs,)), 1 - 1e-16))


def norm_shrink_factor(name: str, learning_rate, weight_decay, momentum: float = 0.9):
    """1 − γ: the per-step factor of V_{t+1} = (1 − γ)·V_t under zero loss gradient (see `gamma_eff`)."""
    return 1.0 - gamma_eff(name, learning_rate, weight_decay, momentum)


def gamma_theory(learning_rate, weight_decay):
    """The rate ηλ in the paper's Lyapunov bound E[V_{t+1}] ≤ (1 − ηλ)V_t + η²σ².

    Args:
        learning_rate: η (a number or an array).
        weight_decay: λ (a number or an array).

    Returns:
        ηλ, as an array of the broadcast shape.

    Examples:
        >>> float(nht_jax.gamma_theory(1e-3, 1.0))
        0.001
    """
    return np.asarray(learning_rate) * np.asarray(weight_decay)


__all__ = [
    "Optimiser",
    "adam_moments",
    "decay_mask",
    "decayed_weights",
    "declared_contraction",
    "gamma_eff",
    "gamma_theory",
    "heavy_ball",
    "learning_rate_step",
    "log_contraction",
    "make_optimiser",
    "optimiser",
]
