"""One run as pure functions, and the shared loop that scans them.

A domain supplies `init(hparams, key) → state`, `step(state, hparams) → state` and
`evaluate(state, hparams) → {metric: scalar}`; `assemble_trainer` wraps them in the nested `lax.scan`
every sweep uses: the inner scan runs `every` steps, the outer one evaluates after each inner scan, so
memory is O(number of logs). The logging schedule (`nht_jax.config.schedule`: segments of `every` steps each,
one segment for a plain `log_every`) decides `every`: `advance(state, hparams, n, every)` runs n logs of one
segment, its inner length static, and `advance_through` strings the segments' scans together. `hparams` is one
run's dict of grid values (traced scalars), so the same functions vmap or `lax.map` over a grid.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp

from nht_jax.config.schedule import LogSchedule


class Trainer(NamedTuple):
    """The pieces of one run, each pure: the executor composes them over a grid. `advance(state, hparams, n,
    every)`: n logs, `every` steps before each (None: the schedule's interval, when it has only one)."""

    init: Callable[[dict, Any], Any]
    evaluate: Callable[[Any, dict], dict]
    advance: Callable[..., tuple[Any, dict]]
    train: Callable[[dict, Any], tuple[Any, dict]]
    step: Callable[[Any, dict], Any]
    num_logs: int
    schedule: LogSchedule


def one_interval(schedule: LogSchedule, every: int | None) -> int:
    """`every`, or the schedule's only interval when None (a schedule of several needs it named)."""
    if every is not None:
        return int(every)
    if not schedule.is_uniform:
        raise ValueError(f"advance needs `every` with a schedule of several intervals ({schedule.describe()})")
    return schedule.segments[0].every


def advance_through(advance: Callable, schedule: LogSchedule, state, hparams: dict, first_log: int, count: int):
    """Logs first_log + 1 … first_log + count: one `advance` per segment crossed, metrics joined on axis 0."""
    parts = []
    for n, every in schedule.pieces(first_log, count):
        state, metrics = advance(state, hparams, n, every)
        parts.append(metrics)
    return state, parts[0] if len(parts) == 1 else jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts)


def run_key(hparams: dict) -> jnp.ndarray:
    """The run's PRNG key from its seed.

    Args:
        hparams: the run's values, with its "seed".

    Returns:
        A PRNG key.
    """
    return jax.random.PRNGKey(hparams["seed"])


def assemble_trainer(
    init: Callable, step: Callable, evaluate: Callable, log_every: int, steps: int, log_schedule=()
) -> Trainer:
    """The Trainer of a run's pieces. `advance` is a scan of `every`-step scans with `evaluate` after each; `train`
    is init, a step-0 evaluation and every segment's blocks, metrics stacked on axis 0 (length num_logs + 1).
    The boundaries are checked when traced: a step keeps the state's shapes and dtypes, and every metric is
    floating point.

    Args:
        init: (hparams, data) → the run's initial state.
        step: (state, hparams) → the state one step on.
        evaluate: (state, hparams) → {metric: scalar}.
        log_every: steps between logs, when `log_schedule` is empty.
        steps: the run's steps, when `log_schedule` is empty (`steps / log_every` blocks of `log_every`).
        log_schedule: the log schedule's segments (empty: uniform).

    Returns:
        The Trainer.
    """
    schedule = LogSchedule(tuple(log_schedule)) if log_schedule else LogSchedule.uniform(steps, log_every)
    unchecked_step, unchecked_evaluate = step, evaluate

    def step(state, hparams: dict):
        new = unchecked_step(state, hparams)
        chex.assert_trees_all_equal_shapes_and_dtypes(new, state)
        return new

    def evaluate(state, hparams: dict) -> dict:
        metrics = unchecked_evaluate(state, hparams)
        chex.assert_type(list(metrics.values()), float)
        return metrics

    def advance(state, hparams: dict, num_logs: int, every: int | None = None):
        length = one_interval(schedule, every)

        def one_step(s, _):
            return step(s, hparams), None

        def one_block(s, _):
            s, _ = jax.lax.scan(one_step, s, None, length=length)
            return s, evaluate(s, hparams)

        return jax.lax.scan(one_block, state, None, length=num_logs)

    def train(hparams: dict, key=None):
        state = init(hparams, key)
        first = evaluate(state, hparams)
        state, rest = advance_through(advance, schedule, state, hparams, 0, schedule.num_logs)
        return state, jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, rest)

    return Trainer(
        init=init,
        evaluate=evaluate,
        advance=advance,
        train=train,
        step=step,
        num_logs=schedule.num_logs,
        schedule=schedule,
    )


__all__ = ["Trainer", "assemble_trainer", "run_key"]
