"""Domain "toy_diagonal": the theory's exactly solvable model (b), a diagonal linear network w = u ⊙ v with the
ℓ2 penalty on (u, v), trained by the engine like any other domain. Closed forms and checks: nht_jax.theory
(toy_models, verify; derivations in docs/theory/toy_models.md).

A fixed problem (`task.problem_seed`) with a k-sparse w*; each run starts at u_0 = α·1, v_0 = 0 (α the `init_scale`
axis), so a large α first fits the dense minimum-ℓ2 interpolant (the "shortcut") and the sparse solution takes
over after a delay known in closed form. It fits on `relative_train_loss` and transitions on `recovery_error` (its
[analysis] defaults).

The problem, the start, the metrics and the closed form: docs/theory/index.md, "The toy models as domains"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nht_jax.base.errors import check
from nht_jax.domains import Domain
from nht_jax.domains.toy_linear import CONSTANT, SGD_L2
from nht_jax.engine.loop import Trainer, assemble_trainer
from nht_jax.engine.metrics import divergence_flag, layer_sq_norms
from nht_jax.config.sections import OptimConfig, TrainConfig
from nht_jax.engine.step import make_updater


@dataclass(frozen=True)
class ToyDiagonalSettings:
    """[task] name = "toy_diagonal": n examples, d coordinates, a k-sparse target, fixed by problem_seed."""

    name: Literal["toy_diagonal"] = "toy_diagonal"
    n: int = 10
    d: int = 20
    k: int = 2
    problem_seed: int = 0


@dataclass(frozen=True)
class DiagonalModelSettings:
    """[model] name = "diagonal": w = u ⊙ v, u, v ∈ R^d (no options)."""

    name: Literal["diagonal"] = "diagonal"


class SparseProblem(NamedTuple):
    """X (n, d) with orthonormal rows scaled so H = XᵀX/n has eigenvalues 1 (n) and 0 (d − n); y = Xw*."""

    X: np.ndarray
    y: np.ndarray
    w_star: np.ndarray


def sparse_problem(n: int = 10, d: int = 20, k: int = 2, seed: int = 0) -> SparseProblem:
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(d, n)))
    X = np.sqrt(n) * q.T
    w_star = np.zeros(d)
    w_star[rng.choice(d, k, replace=False)] = rng.choice([-1.0, 1.0], k) * (1.0 + rng.random(k))
    return SparseProblem(X, X @ w_star, w_star)


class DiagonalState(NamedTuple):
    params: dict
    opt_state: object


def make_diagonal_trainer(
    problem: SparseProblem,
    steps: int,
    log_every: int = 1,
    optim: OptimConfig = SGD_L2,
    train: TrainConfig = CONSTANT,
    record_vectors: bool | None = None,
    divergence_norm: float = float("inf"),
) -> Trainer:
    """Model (b) as an engine `Trainer` (grid values: learning_rate, weight_decay, init_scale = α).

    Records every `log_every` steps: norm_sq V = ‖u‖² + ‖v‖², train_loss, relative_train_loss, recovery_error,
    off_support_l1, balance_sum, layer_norm_sq/u and /v, finite. With record_vectors (default: when
    log_every = 1) it also records Δ (d,) as "delta" and r = ∇_w L (d,) as "r", for the exact balancedness
    identity (theory only: a results directory holds scalar metrics).
    """
    X, y, w_star = (jnp.asarray(a) for a in problem)
    n, d = problem.X.shape
    off = jnp.asarray(problem.w_star == 0)
    loss_at_zero = 0.5 * jnp.mean(y**2)
    record_vectors = log_every == 1 if record_vectors is None else record_vectors
    updater = make_updater(optim, train)

    def loss_w(w):
        return 0.5 * jnp.mean((X @ w - y) ** 2)

    def init(hp: dict, key=None) -> DiagonalState:
        params = {"u": hp["init_scale"] * jnp.ones(d, X.dtype), "v": jnp.zeros(d, X.dtype)}
        return DiagonalState(params, updater.init(hp, params))

    def step(state: DiagonalState, hp: dict) -> DiagonalState:
        grads = jax.grad(lambda q: loss_w(q["u"] * q["v"]))(state.params)
        return DiagonalState(*updater.apply(hp, state.params, state.opt_state, grads))

    def evaluate(state: DiagonalState, hp: dict) -> dict:
        p = state.params
        w = p["u"] * p["v"]
        norm, train_loss = p["u"] @ p["u"] + p["v"] @ p["v"], loss_w(w)
        rec = {
            "norm_sq": norm,
            "train_loss": train_loss,
            "relative_train_loss": train_loss / loss_at_zero,
            "recovery_error": jnp.sum((w - w_star) ** 2) / jnp.sum(w_star**2),
            "off_support_l1": jnp.sum(jnp.where(off, jnp.abs(w), 0.0)),
            "balance_sum": jnp.sum(p["u"] ** 2 - p["v"] ** 2),
            **{f"layer_norm_sq/{name}": value for name, value in layer_sq_norms(p).items()},
            "finite": divergence_flag(train_loss, norm, divergence_norm),
        }
        if record_vectors:
            rec["delta"] = p["u"] ** 2 - p["v"] ** 2
            rec["r"] = jax.grad(loss_w)(w)
        return rec

    return assemble_trainer(init, step, evaluate, log_every=log_every, steps=steps, log_schedule=train.log_schedule)


def load_data(config) -> SparseProblem:
    task = config.task
    return sparse_problem(task.n, task.d, task.k, task.problem_seed)


def data_bytes(config) -> int:
    """Bytes of `sparse_problem`'s float64 arrays: X (n, d), y (n), w* (d)."""
    n, d = config.task.n, config.task.d
    return 8 * (n * d + n + d)


def make_trainer(config, problem: SparseProblem) -> Trainer:
    return make_diagonal_trainer(
        problem,
        config.train.steps,
        config.train.log_every,
        config.optim,
        config.train,
        record_vectors=False,
        divergence_norm=config.train.divergence_norm,
    )


def validate(config) -> None:
    task = config.task
    check(1 <= task.n < task.d, f"task.n must satisfy 1 ≤ n < d, got n = {task.n}, d = {task.d}")
    check(1 <= task.k <= task.d, f"task.k (the support size of w*) must lie in [1, d = {task.d}], got {task.k}")
    check(config.train.batch_size == 0, "toy_diagonal trains full batch: leave train.batch_size = 0")
    check(not config.train.record_grad_noise, "train.record_grad_noise is not available for toy_diagonal")


METRICS = {
    "relative_train_loss": "train_loss / its value at zero parameters (L(0) = ‖y‖²/2n): the fit criterion",
    "recovery_error": "‖w − w*‖²/‖w*‖², the relative error from the sparse target (the transition criterion)",
    "off_support_l1": "Σ |w_i| over the coordinates where w* is 0: the dense interpolant's spurious mass",
    "balance_sum": "Σ_i Δ_i = ‖u‖² − ‖v‖², the total balancedness (starts at d·α²)",
}

DOMAIN = Domain(
    name="toy_diagonal",
    settings=ToyDiagonalSettings,
    models={"diagonal": DiagonalModelSettings},
    default_model="diagonal",
    axes={},
    metrics=METRICS,
    headline_metric="recovery_error",
    validate=validate,
    load_data=load_data,
    make_trainer=make_trainer,
    recorded=lambda config: (
        frozenset(METRICS) | {"train_loss", "norm_sq", "finite", "layer_norm_sq/u", "layer_norm_sq/v"}
    ),
    summary=lambda config: ("recovery_error", "relative_train_loss"),
    analysis_defaults={
        "fit_metric": "relative_train_loss",
        "fit_direction": "below",
        "fit_threshold": 0.001,
        "transition_direction": "below",
        "transition_threshold": 0.05,
    },
    data_bytes=data_bytes,
)
