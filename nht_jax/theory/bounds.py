"""The bounds of docs/science.md §2 as pure functions (NumPy, float64, broadcasting over grids).

Conventions (theory/bounds.md states them in full):
    V = ‖θ‖², the squared L2 norm, counted per optimiser step t.
    The theory's update is the ℓ2 penalty λ‖θ‖² with SGD noise ξ, E ξ = 0, E‖ξ‖² = σ²:
        θ_{t+1} = θ_t − η(∇L(θ_t) + 2λθ_t) + ηξ_t           (optimiser "sgd" of the engine).
    σ² is the total variance of the gradient noise (trace of its covariance), not per coordinate.
    Decoupled decay (adamw, sgdw) shrinks θ by (1 − ηλ) per step instead of (1 − 2ηλ).

Every time returned here is in optimiser steps and may be fractional (the continuous solution
of the inequality); "not applicable" is returned as NaN together with a reason, never as a number.
"""

from __future__ import annotations

import numpy as np

from nht_jax.engine.optim import gamma_eff as _engine_gamma_eff
from nht_jax.engine.optim import gamma_theory, theta_shrink


def _f(x):
    return np.asarray(x, np.float64)


def one_step_bound(v, eta, lam, sigma2=0.0):
    """Right-hand side of the Lyapunov inequality E[V_{t+1} | θ_t] ≤ (1 − ηλ)V_t + η²σ².

    Args:
        v: V_t.
        eta: η, the learning rate.
        lam: λ, the weight decay.
        sigma2: σ², the gradient-noise variance.

    Returns:
        The bound on E[V_{t+1} | θ_t].
    """
    return (1.0 - _f(eta) * _f(lam)) * _f(v) + _f(eta) ** 2 * _f(sigma2)


def multi_step_bound(v, eta, lam, sigma2, k):
    """The inequality iterated k times (σ² held fixed over the k steps):

        E[V_{t+k} | θ_t] ≤ q^k V_t + η²σ² (1 − q^k)/(1 − q),   q = 1 − ηλ.

    k = 1 gives `one_step_bound`. Used on recorded runs, which log V every k steps.

    Args:
        v: V_t.
        eta: η, the learning rate.
        lam: λ, the weight decay.
        sigma2: σ², the gradient-noise variance.
        k: steps.

    Returns:
        The bound on E[V_{t+k} | θ_t].
    """
    q = 1.0 - _f(eta) * _f(lam)
    qk = q ** _f(k)
    return qk * _f(v) + _f(eta) ** 2 * _f(sigma2) * (1.0 - qk) / (1.0 - q)


def noise_floor(eta, lam, sigma2):
    """V_∞ = ησ²/λ: the limit of the unrolled bound, η²σ²·Σ_j (1 − ηλ)^j = η²σ²/(ηλ).

    Args:
        eta: η, the learning rate.
        lam: λ, the weight decay.
        sigma2: σ², the gradient-noise variance.

    Returns:
        V_∞.
    """
    return _f(eta) * _f(sigma2) / _f(lam)


def unrolled_bound(t, v0, eta, lam, sigma2=0.0):
    """E[V_t] ≤ (1 − ηλ)^t V_0 + V_∞ (the paper's form; `multi_step_bound` is the sharper exact sum).

    Args:
        t: steps.
        v0: V_0.
        eta: η, the learning rate.
        lam: λ, the weight decay.
        sigma2: σ², the gradient-noise variance.

    Returns:
        The bound on E[V_t].
    """
    return (1.0 - _f(eta) * _f(lam)) ** _f(t) * _f(v0) + noise_floor(eta, lam, sigma2)


def escape_time_upper(v_sc, v_st, eta, lam, sigma2=0.0):
    """Steps after which the bound guarantees E[V_t] ≤ V_st, starting from V_sc.

    Exact solution of (1 − ηλ)^t V_sc + V_∞ = V_st:
        T_upper = log(V_sc / (V_st − V_∞)) / (−log(1 − ηλ))
    which is ≤ the paper's (1/ηλ)·log(V_sc/(V_st − V_∞)) since −log(1 − x) ≥ x.

    Args:
        v_sc: V_sc, the norm at the start (at T_fit).
        v_st: V_st, the target norm.
        eta: η, the learning rate.
        lam: λ, the weight decay.
        sigma2: σ², the gradient-noise variance (V_∞ = ησ²/λ).

    Returns:
        (T_upper, T_paper) in steps; both NaN where V_st ≤ V_∞ (the bound says nothing: the noise floor lies above
        the target) and 0 where V_sc ≤ V_st already.
    """
    v_sc, v_st, floor = _f(v_sc), _f(v_st), noise_floor(eta, lam, sigma2)
    gap = v_st - floor
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.where(gap > 0, np.log(v_sc / gap), np.nan)
        log_ratio = np.maximum(log_ratio, 0.0)
        x = _f(eta) * _f(lam)
        return log_ratio / -np.log1p(-x), log_ratio / x


def escape_time_lower(v_sc, v_st, eta, lam, c):
    """Lower bound under the assumption that one step shrinks V by at most (1 − cηλ): V_{t+1} ≥ (1 − cηλ)V_t.

    Then V_t ≥ (1 − cηλ)^t V_sc, so V_t ≤ V_st needs
        t ≥ T_lower = log(V_sc/V_st) / (−log(1 − cηλ)).
    The paper writes (cηλ)⁻¹ log(V_sc/V_st); that is larger than T_lower by −log(1 − cηλ)/(cηλ) ≥ 1, so it
    is *not* a valid lower bound for finite cηλ (only its leading order).

    Args:
        v_sc: V_sc, the norm at the start (at T_fit).
        v_st: V_st, the target norm.
        eta: η, the learning rate.
        lam: λ, the weight decay.
        c: one step shrinks V by at most (1 − cηλ) (`contraction_c`).

    Returns:
        (T_lower, T_paper) in steps; T_lower NaN where cηλ ≥ 1 (the assumption allows V to vanish in one step).
    """
    x = _f(c) * _f(eta) * _f(lam)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.maximum(np.log(_f(v_sc) / _f(v_st)), 0.0)
        lower = np.where(x < 1, log_ratio / -np.log1p(-np.minimum(x, 1 - 1e-300)), np.nan)
        return lower, log_ratio / x


def contraction_c(optimizer: str, eta, lam, momentum: float = 0.9):
    """c such that weight decay alone shrinks V per step by (1 − cηλ): c = γ_eff/(ηλ).

    adamw/sgdw: c = 2 − ηλ; ℓ2 sgd: c = 4 − 4ηλ. This is the natural c for `escape_time_lower`; it is an
    assumption (gradients can shrink V faster), checked on trajectories by `max_realised_c`.
    """
    return _engine_gamma_eff(optimizer, eta, lam, momentum) / (_f(eta) * _f(lam))


def layer_gamma_eff(eta, lam, alpha, kappa, factor: float = 1.0):
    """Proposition 4.2: γ_eff^(ℓ) = ηλ + factor·η·α_ℓ·κ_ℓ (factor 1 in the main text, 2 in the appendix).

    α_ℓ is layer ℓ's share of the shortcut gradient, κ_ℓ its curvature. Both factors are returned by
    the caller's choice; the papers disagree (docs/science.md §7) and we do not pick one silently.

    Args:
        eta: η, the learning rate.
        lam: λ, the weight decay.
        alpha: α_ℓ, the layer's share of the shortcut gradient.
        kappa: κ_ℓ, the layer's curvature.
        factor: 1 (main text) or 2 (appendix).

    Returns:
        γ_eff^(ℓ), per step.
    """
    return _f(eta) * _f(lam) + factor * _f(eta) * _f(alpha) * _f(kappa)


def gamma_eff(optimizer: str, eta, lam, momentum: float = 0.9):
    """γ_eff of the engine's optimiser (exact zero-gradient contraction rate of V per step).

    Re-exported from `nht_jax.engine.optim.gamma_eff`: adamw/sgdw ηλ(2 − ηλ); ℓ2 sgd 2ηλ(2 − 2ηλ);
    sgd_momentum from the heavy-ball root. The Lyapunov bound uses the weaker `gamma_theory` = ηλ.
    The optimiser alone: a configuration with slot entries declares its rate through
    `nht_jax.engine.optim.declared_contraction` (which `nht_jax.theory.recorded` reads).

    Args:
        optimizer: the optimiser's name.
        eta: η, the learning rate.
        lam: λ, the weight decay.
        momentum: β, for the momentum optimisers.

    Returns:
        γ_eff, per step.
    """
    return _engine_gamma_eff(optimizer, eta, lam, momentum)


def convention(optimizer: str) -> str:
    """One line: how weight decay enters this optimiser, and whether the theory's update rule applies.

    Args:
        optimizer: the optimiser's name ("sgd", "sgdw", "sgd_momentum", "sgdw_momentum" or "adamw").

    Returns:
        The line.
    """
    return {
        "sgd": "ℓ2 penalty λ‖θ‖², θ shrinks by (1 − 2ηλ): the theory's update rule",
        "sgdw": "decoupled, θ shrinks by (1 − ηλ): not the theory's rule (half its decay)",
        "sgd_momentum": "ℓ2 penalty through heavy-ball momentum: not the theory's rule (momentum)",
        "sgdw_momentum": "decoupled with momentum: not the theory's rule",
        "adamw": "decoupled, θ shrinks by (1 − ηλ), gradient preconditioned by Adam: not the theory's rule",
    }[optimizer]


def step_size_condition(eta, lam, smoothness):
    """The assumption η ≤ λ/L (True where it holds). L is the loss's smoothness constant."""
    return _f(eta) <= _f(lam) / _f(smoothness)


__all__ = [
    "one_step_bound",
    "multi_step_bound",
    "noise_floor",
    "unrolled_bound",
    "escape_time_upper",
    "escape_time_lower",
    "layer_gamma_eff",
    "gamma_eff",
    "gamma_theory",
    "convention",
    "theta_shrink",
]
