"""One run as pure functions, and the shared loop that scans them.

A domain supplies `init(hparams, key) → state`, `step(state, hparams) → state` and
`evaluate(state, hparams) → {metric: scalar}`; `assemble_trainer` wraps them in the nested `lax.scan`
every sweep uses: the inner scan runs `log_every` steps, the outer one evaluates after each inner scan, so
memory is O(steps / log_every). `hparams` is one run's dict of grid values (traced scalars), so the same
functions vmap or `lax.map` over a grid.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp


class Trainer(NamedTuple):
    """The pieces of one run, each pure: the executor composes them over a grid."""

    init: Callable[[dict, Any], Any]
    evaluate: Callable[[Any, dict], dict]
    advance: Callable[[Any, dict, int], tuple[Any, dict]]
    train: Callable[[dict, Any], tuple[Any, dict]]
    step: Callable[[Any, dict], Any]
    num_logs: int


def run_key(hparams: dict) -> jnp.ndarray:
    """The run's PRNG key from its seed."""
    return jax.random.PRNGKey(hparams["seed"])


def assemble_trainer(init: Callable, step: Callable, evaluate: Callable, log_every: int, steps: int) -> Trainer:
    """`advance` is a scan of `log_every`-step scans with `evaluate` after each; `train` is init, a step-0
    evaluation and `steps / log_every` blocks, metrics stacked on axis 0 (length steps / log_every + 1).
    The boundaries are checked when traced: a step keeps the state's shapes and dtypes, and every metric is
    floating point."""
    unchecked_step, unchecked_evaluate = step, evaluate

    def step(state, hparams: dict):
        new = unchecked_step(state, hparams)
        chex.assert_trees_all_equal_shapes_and_dtypes(new, state)
        return new

    def evaluate(state, hparams: dict) -> dict:
        metrics = unchecked_evaluate(state, hparams)
        chex.assert_type(list(metrics.values()), float)
        return metrics

    def advance(state, hparams: dict, num_logs: int):
        def one_step(s, _):
            return step(s, hparams), None

        def one_block(s, _):
            s, _ = jax.lax.scan(one_step, s, None, length=log_every)
            return s, evaluate(s, hparams)

        return jax.lax.scan(one_block, state, None, length=num_logs)

    num_logs = steps // log_every

    def train(hparams: dict, key=None):
        state = init(hparams, key)
        first = evaluate(state, hparams)
        state, rest = advance(state, hparams, num_logs)
        return state, jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, rest)

    return Trainer(init=init, evaluate=evaluate, advance=advance, train=train, step=step, num_logs=num_logs)


__all__ = ["Trainer", "assemble_trainer", "run_key"]
