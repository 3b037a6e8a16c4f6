"""Domain "toy_linear": the theory's exactly solvable model (a)/(c), over-parameterised linear regression
trained by the engine like any other domain, so a sweep over it has a known answer for every number the
analysis reports. Closed forms, bounds and their checks: nht_jax.theory (toy_models, verify; derivations in
docs/theory/toy_models.md).

A fixed problem (`task.problem_seed`) whose ridge solution θ_λ is the fixed point of the theory's ℓ2 update; each
run starts from θ_λ plus a null-space offset (the "shortcut", `null_sq`) and a row-space offset (`row_offset`), with
noise of variance `sigma2` per step (model (c)). It fits on `relative_train_loss` and transitions on
`excess_fraction` (its [analysis] defaults), so both regime boundaries are known in closed form.

The problem, the start, the metrics and the closed-form transition time: docs/theory/index.md, "The toy models as
domains"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nht_jax.base.errors import check
from nht_jax.domains import Domain
from nht_jax.engine.grid import Axis, number_check
from nht_jax.engine.loop import Trainer, assemble_trainer
from nht_jax.engine.metrics import divergence_flag
from nht_jax.config.sections import OptimConfig, TrainConfig
from nht_jax.engine.step import make_updater

SGD_L2 = OptimConfig(name="sgd", decay_on="all")  # the theory's update rule, decay on every parameter
CONSTANT = TrainConfig(lr_schedule="constant")  # constant η


@dataclass(frozen=True)
class ToyLinearSettings:
    """[task] name = "toy_linear": n examples, d parameters (n < d), the problem fixed by problem_seed."""

    name: Literal["toy_linear"] = "toy_linear"
    n: int = 6
    d: int = 16
    problem_seed: int = 0


@dataclass(frozen=True)
class LinearModelSettings:
    """[model] name = "linear": θ ∈ R^d, prediction Xθ (no options)."""

    name: Literal["linear"] = "linear"


class LinearProblem(NamedTuple):
    """X (n, d), y (n,), H = XᵀX/n with eigenpairs (h, Q), a unit null vector and a unit row-space vector."""

    X: np.ndarray
    y: np.ndarray
    h: np.ndarray  # (d,) eigenvalues of H, ascending (d − n of them are 0)
    Q: np.ndarray  # (d, d) eigenvectors as columns
    null_dir: np.ndarray  # (d,) unit vector in the null space of X
    row_dir: np.ndarray  # (d,) unit vector in the row space of X


def linear_problem(n: int = 6, d: int = 16, seed: int = 0) -> LinearProblem:
    """A random over-parameterised regression problem (float64, fixed by `seed`)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.normal(size=n)
    h, Q = np.linalg.eigh(X.T @ X / n)
    h = np.where(np.arange(d) < d - n, 0.0, h)  # exact zeros for the null space (eigh gives ~1e-16)
    null = Q[:, : d - n] @ rng.normal(size=d - n)
    row = Q[:, d - n :] @ rng.normal(size=n)
    return LinearProblem(X, y, h, Q, null / np.linalg.norm(null), row / np.linalg.norm(row))


class LinearState(NamedTuple):
    params: dict
    opt_state: object
    ridge: jnp.ndarray
    step: jnp.ndarray
    noise_key: jnp.ndarray


def make_linear_trainer(
    problem: LinearProblem,
    steps: int,
    optim: OptimConfig = SGD_L2,
    train: TrainConfig = CONSTANT,
    log_every: int = 1,
    divergence_norm: float = float("inf"),
) -> Trainer:
    """Model (a)/(c) as an engine `Trainer` (grid values: learning_rate, weight_decay, null_sq, row_offset,
    sigma2, seed).

    Step t draws ξ ~ N(0, (σ²/d)I) from the run's key folded with t and feeds the optimiser the gradient
    ∇L − ξ, so under ℓ2 "sgd" the step is θ ← θ − η(∇L + 2λθ) + ηξ. Records (metric names: DOMAIN.metrics):
    norm_sq V = ‖θ‖², excess_sq U = ‖θ − θ_λ‖², null_norm_sq N = ‖P_null θ‖², train_loss, relative_train_loss,
    excess_fraction, finite.
    """
    X = jnp.asarray(problem.X)
    y = jnp.asarray(problem.y)
    n, d = problem.X.shape
    null_proj = jnp.asarray(problem.Q[:, : d - n] @ problem.Q[:, : d - n].T)
    loss_at_zero = 0.5 * jnp.mean(y**2)
    updater = make_updater(optim, train)

    def loss(theta):
        return 0.5 * jnp.mean((X @ theta - y) ** 2)

    def init(hp: dict, key=None) -> LinearState:
        key = jax.random.PRNGKey(hp["seed"]) if key is None else key
        ridge = jnp.linalg.solve(X.T @ X / n + 2.0 * hp["weight_decay"] * jnp.eye(d, dtype=X.dtype), X.T @ y / n)
        theta0 = (
            ridge
            + jnp.sqrt(hp["null_sq"]) * jnp.asarray(problem.null_dir)
            + hp["row_offset"] * jnp.asarray(problem.row_dir)
        )
        params = {"theta": theta0}
        return LinearState(params, updater.init(hp, params), ridge, jnp.zeros((), jnp.int32), key)

    def step(state: LinearState, hp: dict) -> LinearState:
        grad = jax.grad(loss)(state.params["theta"])
        xi = jnp.sqrt(hp["sigma2"] / d) * jax.random.normal(
            jax.random.fold_in(state.noise_key, state.step), (d,), X.dtype
        )
        params, opt_state = updater.apply(hp, state.params, state.opt_state, {"theta": grad - xi})
        return state._replace(params=params, opt_state=opt_state, step=state.step + 1)

    def evaluate(state: LinearState, hp: dict) -> dict:
        th, ridge = state.params["theta"], state.ridge
        norm, excess, train_loss = th @ th, (th - ridge) @ (th - ridge), loss(th)
        initial_excess = hp["null_sq"] + hp["row_offset"] ** 2  # n̂ ⟂ r̂, both unit
        return {
            "norm_sq": norm,
            "excess_sq": excess,
            "null_norm_sq": th @ null_proj @ th,
            "train_loss": train_loss,
            "relative_train_loss": train_loss / loss_at_zero,
            "excess_fraction": jnp.where(
                initial_excess > 0, excess / jnp.where(initial_excess > 0, initial_excess, 1.0), 0.0
            ),
            "finite": divergence_flag(train_loss, norm, divergence_norm),
        }

    return assemble_trainer(init, step, evaluate, log_every=log_every, steps=steps, log_schedule=train.log_schedule)


def load_data(config) -> LinearProblem:
    return linear_problem(config.task.n, config.task.d, config.task.problem_seed)


def data_bytes(config) -> int:
    """Bytes of `linear_problem`'s float64 arrays: X (n, d), y (n), h (d), Q (d, d), two unit vectors (d)."""
    n, d = config.task.n, config.task.d
    return 8 * (n * d + n + d + d * d + 2 * d)


def make_trainer(config, problem: LinearProblem) -> Trainer:
    return make_linear_trainer(
        problem, config.train.steps, config.optim, config.train, config.train.log_every, config.train.divergence_norm
    )


def validate(config) -> None:
    task = config.task
    check(
        1 <= task.n < task.d,
        f"task.n must satisfy 1 ≤ n < d (an over-parameterised problem), got n = {task.n}, d = {task.d}",
    )
    check(
        config.train.batch_size == 0,
        "toy_linear trains full batch (noise comes from grid.sigma2): leave train.batch_size = 0",
    )
    check(not config.train.record_grad_noise, "train.record_grad_noise is not available for toy_linear")
    check(
        config.grid.get("init_scale", (1.0,)) == (1.0,),
        "toy_linear sets its start through grid.null_sq and grid.row_offset: leave grid.init_scale = [1.0]",
    )


AXES = {
    "null_sq": Axis(
        "null_sq",
        (100.0,),
        "null-space offset ‖n_0‖²",
        log=True,
        check=number_check("null_sq", lambda v: v >= 0, "must be ≥ 0"),
        meaning="‖n_0‖², the squared null-space offset of θ_0 from θ_λ (the shortcut's excess norm)",
    ),
    "row_offset": Axis(
        "row_offset",
        (0.0,),
        "row-space offset",
        check=number_check("row_offset", lambda v: True, "must be a number"),
        meaning="the row-space offset of θ_0 from θ_λ along a fixed unit vector (0: fits at once)",
    ),
    "sigma2": Axis(
        "sigma2",
        (0.0,),
        "noise σ²",
        check=number_check("sigma2", lambda v: v >= 0, "must be ≥ 0"),
        meaning="σ² = E‖ξ‖² of the Gaussian noise ηξ added at every step (the theory's model (c))",
    ),
}

METRICS = {
    "relative_train_loss": "train_loss / its value at zero parameters (L(0) = ‖y‖²/2n): the fit criterion",
    "excess_sq": "U = ‖θ − θ_λ‖², the squared distance to the ridge solution θ_λ (the attractor)",
    "excess_fraction": "U_t / U_0 (0 when U_0 = 0): the fraction of the initial excess left (the transition)",
    "null_norm_sq": "N = ‖P_null θ‖², the squared norm of θ's null-space component",
}

DOMAIN = Domain(
    name="toy_linear",
    settings=ToyLinearSettings,
    models={"linear": LinearModelSettings},
    default_model="linear",
    axes=AXES,
    metrics=METRICS,
    headline_metric="excess_fraction",
    validate=validate,
    load_data=load_data,
    make_trainer=make_trainer,
    recorded=lambda config: frozenset(METRICS) | {"train_loss", "norm_sq", "finite"},
    summary=lambda config: ("excess_fraction", "relative_train_loss"),
    analysis_defaults={
        "fit_metric": "relative_train_loss",
        "fit_direction": "below",
        "fit_threshold": 0.01,
        "transition_direction": "below",
        "transition_threshold": 0.01,
    },
    data_bytes=data_bytes,
)
