"""Exactly solvable models and their closed forms. The models are registered domains like any other
(nht_jax.domains.toy_linear for (a)/(c), nht_jax.domains.toy_diagonal for (b): `nht run toy-linear`,
`nht run toy-diagonal`); their trainers are engine `Trainer`s, and a grid of runs is one compiled program through
`nht_jax.engine.executor.run_grid`. This module adds the grid helpers the checks use and an independent closed
form in NumPy float64 for each. Run them under `jax.enable_x64(True)` for tight tolerances.

(a) over-parameterised linear regression under the ℓ2 "sgd" update, whose null-space component contracts by
exactly (1 − 2ηλ) per step; (b) a diagonal linear network w = u ⊙ v, whose balancedness decays exactly; (c) (a)
with injected Gaussian noise.

The models, their closed forms and the derivations: docs/theory/toy_models.md."""

from __future__ import annotations


import jax.numpy as jnp
import numpy as np

from nht_jax.domains.toy_diagonal import SparseProblem, make_diagonal_trainer, sparse_problem
from nht_jax.domains.toy_linear import SGD_L2, LinearProblem, linear_problem, make_linear_trainer
from nht_jax.engine.executor import run_grid
from nht_jax.config.sections import OptimConfig


# ----------------------------------------------------------------------------- solutions


def ridge_solution(problem: LinearProblem, lam) -> np.ndarray:
    """θ_λ = (H + 2λI)⁻¹ Xᵀy/n, the fixed point of ℓ2 SGD (minimiser of L + λ‖θ‖²)."""
    X, y = problem.X, problem.y
    n, d = X.shape
    return np.linalg.solve(X.T @ X / n + 2.0 * float(lam) * np.eye(d), X.T @ y / n)


def min_norm_interpolant(problem: LinearProblem | SparseProblem) -> np.ndarray:
    """X⁺y, the limit of θ_λ as λ → 0."""
    return np.linalg.pinv(problem.X) @ problem.y


# ----------------------------------------------------------------------------- (a) and (c): training


LINEAR_AXES = ("learning_rate", "weight_decay", "null_sq", "row_offset", "sigma2", "seed")
"""Grid values of one run of model (a)/(c) (the toy_linear domain's axes besides init_scale)."""


def run_linear_grid(
    problem: LinearProblem,
    steps: int,
    eta,
    lam,
    null_sq,
    row_offset=0.0,
    sigma2=0.0,
    seed=0,
    optim: OptimConfig = SGD_L2,
) -> dict:
    """Train every point of a grid (1-D arrays of equal length, or scalars) as one compiled program.

    Returns each record as (runs, steps + 1)."""
    arrays = np.broadcast_arrays(
        *(np.atleast_1d(np.asarray(a, np.float64)) for a in (eta, lam, null_sq, row_offset, sigma2)),
        np.atleast_1d(np.asarray(seed)),
    )
    dtype = jnp.asarray(problem.X).dtype
    runs = {name: jnp.asarray(a, dtype) for name, a in zip(LINEAR_AXES[:5], arrays[:5])}
    runs["seed"] = jnp.asarray(arrays[5], jnp.uint32)
    return run_grid(make_linear_trainer(problem, steps, optim), runs)


# ----------------------------------------------------------------------------- (a) and (c): closed forms


def linear_mean_trajectory(problem: LinearProblem, steps: int, eta, lam, null_sq, row_offset=0.0, sigma2=0.0) -> dict:
    """E[V_t], E[U_t] for t = 0..steps in closed form (ℓ2 SGD, noise ξ ~ N(0, (σ²/d)I)), float64.

    δ_t = Σ_i a_i^t ⟨q_i, δ_0⟩ q_i,  a_i = 1 − η(h_i + 2λ)
    E[U_t] = ‖δ_t‖² + η²(σ²/d) Σ_i (1 − a_i^{2t})/(1 − a_i²)
    E[V_t] = ‖θ_λ + δ_t‖² + η²(σ²/d) Σ_i (1 − a_i^{2t})/(1 − a_i²)
    """
    eta, lam, sigma2 = float(eta), float(lam), float(sigma2)
    d = problem.X.shape[1]
    ridge = ridge_solution(problem, lam)
    delta0 = np.sqrt(float(null_sq)) * problem.null_dir + float(row_offset) * problem.row_dir
    a = 1.0 - eta * (problem.h + 2.0 * lam)
    t = np.arange(steps + 1)[:, None]
    coeff = problem.Q.T @ delta0
    delta_t = (a[None, :] ** t * coeff[None, :]) @ problem.Q.T
    noise = eta**2 * (sigma2 / d) * np.sum((1.0 - a[None, :] ** (2 * t)) / (1.0 - a[None, :] ** 2), axis=1)
    return {
        "V": np.sum((ridge[None] + delta_t) ** 2, axis=1) + noise,
        "U": np.sum(delta_t**2, axis=1) + noise,
        "noise": noise,
        "ridge_sq": float(ridge @ ridge),
    }


def linear_stationary_excess(problem: LinearProblem, eta, lam, sigma2) -> float:
    """lim E[U_t] = η²(σ²/d) Σ_i 1/(1 − a_i²): the exact noise floor around θ_λ (compare V_∞ = ησ²/λ)."""
    d = problem.X.shape[1]
    a = 1.0 - float(eta) * (problem.h + 2.0 * float(lam))
    return float(eta) ** 2 * float(sigma2) / d * float(np.sum(1.0 / (1.0 - a**2)))


def null_transition_time(eta, lam, eps):
    """Model (a) started at θ_λ + n_0 (n_0 in the null space), zero noise: the excess V_t − ‖θ_λ‖² = (1 − 2ηλ)^{2t}‖n_0‖².

    Transition = the excess falls to a fraction ε of its initial value. Returns (continuous, integer):
        T_c = log(1/ε) / (−2 log|1 − 2ηλ|),   T = ⌈T_c⌉ (first step at or below the threshold).
    """
    a = np.abs(1.0 - 2.0 * np.asarray(eta, np.float64) * np.asarray(lam, np.float64))
    t_c = np.log(1.0 / np.asarray(eps, np.float64)) / (-2.0 * np.log(a))
    return t_c, np.ceil(t_c - 1e-9)


def l2_lyapunov_failure_step(eta, lam, null_sq, ridge_sq):
    """First step t at which V = ‖θ‖² breaks V_{t+1} ≤ (1 − ηλ)V_t in model (a) (zero noise, start θ_λ + n_0).

    With a = 1 − 2ηλ, R = ‖θ_λ‖², N_t = a^{2t}N_0: R + a²N_t ≤ (1 − ηλ)(R + N_t) ⟺ N_t ≥ R/(3 − 4ηλ).
    So the literal inequality (attractor at 0) holds while the null excess is at least R/(3 − 4ηλ) and fails
    at the first t with a^{2t}N_0 < R/(3 − 4ηλ): t = ⌊log(N_0(3 − 4ηλ)/R) / (−2 log|a|)⌋ + 1 (0 if it fails at once).

    Args:
        eta: η, the learning rate.
        lam: λ, the weight decay.
        null_sq: N_0, the squared norm of the start's null-space excess n_0.
        ridge_sq: R = ‖θ_λ‖².

    Returns:
        The step t.
    """
    x = float(eta) * float(lam)
    ratio = float(null_sq) * (3.0 - 4.0 * x) / float(ridge_sq)
    if ratio < 1.0:
        return 0
    return int(np.floor(np.log(ratio) / (-2.0 * np.log(abs(1.0 - 2.0 * x))))) + 1


def first_crossing(values: np.ndarray, threshold: float) -> float:
    """First index i with values[i] ≤ threshold (NaN when none)."""
    hit = np.flatnonzero(np.asarray(values) <= threshold)
    return float(hit[0]) if hit.size else float("nan")


def log_linear_crossing(values: np.ndarray, threshold: float) -> float:
    """Continuous crossing time of a positive, decreasing series, interpolating log(value) linearly (exact for geometric)."""
    i = first_crossing(values, threshold)
    if np.isnan(i) or i == 0:
        return i
    i = int(i)
    lo, hi = np.log(values[i - 1]), np.log(values[i])
    return (i - 1) + (lo - np.log(threshold)) / (lo - hi)


# ----------------------------------------------------------------------------- (b) diagonal linear network


def kernel_interpolant(problem: SparseProblem) -> np.ndarray:
    """The min-ℓ2 interpolant X⁺y, the kernel-regime solution (dense)."""
    return min_norm_interpolant(problem)


DIAGONAL_AXES = ("learning_rate", "weight_decay", "init_scale")
"""Grid values of one run of model (b): η, λ and the initial scale α (the common init_scale axis)."""


def run_diagonal_grid(problem: SparseProblem, steps: int, eta, lam, alpha, log_every: int = 1) -> dict:
    arrays = np.broadcast_arrays(*(np.atleast_1d(np.asarray(a, np.float64)) for a in (eta, lam, alpha)))
    dtype = jnp.asarray(problem.X).dtype
    runs = {name: jnp.asarray(a, dtype) for name, a in zip(DIAGONAL_AXES, arrays)}
    return run_grid(make_diagonal_trainer(problem, steps, log_every), runs)


def balance_factor(eta, lam, r):
    """Exact per-step factor of Δ_i = u_i² − v_i² under ℓ2 SGD on w = u ⊙ v: (1 − 2ηλ)² − η² r_i².

    Derivation: u' = (1 − 2ηλ)u − η v r, v' = (1 − 2ηλ)v − η u r; the cross terms cancel in u'² − v'².
    """
    return (1.0 - 2.0 * np.asarray(eta) * np.asarray(lam)) ** 2 - np.asarray(eta) ** 2 * np.asarray(r) ** 2


def diagonal_time_scale(eta, lam, alpha, delta_c):
    """T = log(Δ_0/Δ_c)/(−2 log(1 − 2ηλ)) with Δ_0 = α²: steps for the balancedness to fall from Δ_0 to Δ_c."""
    rate = -2.0 * np.log(1.0 - 2.0 * np.asarray(eta, np.float64) * np.asarray(lam, np.float64))
    return np.log(np.asarray(alpha, np.float64) ** 2 / delta_c) / rate


__all__ = ["l2_lyapunov_failure_step", "linear_problem", "sparse_problem"]
