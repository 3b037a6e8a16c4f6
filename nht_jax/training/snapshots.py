"""Snapshots of run states, kept while a sweep trains and stored beside its results (snapshots.npz).

`execution.snapshot_steps = [N, …]` keeps every run's whole state at those logged steps; `execution.snapshot_at_fit`
keeps each run's state at its T_fit; a `[fork]` (`nht_jax.training.fork`) continues from one exactly. They are
captured in the compiled scan (`capturing`, `Captured`: one held copy per snapshot, taken with `jnp.where` after
each evaluation; those of step 0 on the host, `taken_at_start`), so the trajectories are those of a sweep without
snapshots. On the host a `Store` gathers the snapshots of runs leaving training, written to snapshots.npz before
every checkpoint and with the results; no snapshot after a run's stopped_step is kept (`drop_after`), and an
incomplete store is never written (`Store.write`) nor read (`read`).

The settings, what a snapshot holds, snapshots.npz's layout and how a fork reads it: docs/guides/forks.md,
"Snapshots"; a stopped run's snapshots: docs/guides/execution.md, "Stopping finished runs"."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nht_jax.base.atomic import atomic_write_bytes, npz_bytes
from nht_jax.base.errors import ConfigError
from nht_jax.engine.loop import Trainer, advance_through, one_interval

SNAPSHOTS = "snapshots.npz"
FIT = "fit"


def kinds(execution) -> tuple[str, ...]:
    """The snapshots a sweep keeps, by name: "step_N" per snapshot step (in the order listed), then "fit".

    Args:
        execution: the [execution] settings.

    Returns:
        The names.
    """
    return tuple(f"step_{n}" for n in execution.snapshot_steps) + ((FIT,) if execution.snapshot_at_fit else ())


def kind_of_step(step) -> str:
    """The snapshot kind of a `[fork] step`: "fit" or "step_N"."""
    return FIT if step == FIT else f"step_{int(step)}"


def requested(config) -> bool:
    return bool(kinds(config.execution))


class Captured(NamedTuple):
    """A run's state with its snapshots: `run` its own state; `held` one state per kind; `taken` (kinds,) bool;
    `at` (kinds,) the logged step each was taken at (-1: not yet); `logs` the log intervals done."""

    run: Any
    held: tuple
    taken: Any
    at: Any
    logs: Any


def due_rule(config):
    """due(step, metrics) → (kinds,) bool: which snapshots' conditions hold at the log just evaluated (at logged
    step `step`): its step is the snapshot step, or (fit) the fit criterion holds."""
    a = config.analysis
    steps = [n for n in config.execution.snapshot_steps]

    def due(step, metrics):
        shape = jnp.shape(metrics[a.fit_metric]) if a.fit_metric in metrics else ()
        out = [jnp.broadcast_to(step == n, shape) for n in steps]
        if config.execution.snapshot_at_fit:
            value = metrics[a.fit_metric]
            out.append(value >= a.fit_threshold if a.fit_direction == "above" else value <= a.fit_threshold)
        return jnp.stack(out)

    return due


def capturing(trainer: Trainer, config) -> Trainer:
    """`trainer` with `Captured` states: snapshots taken inside the compiled scan (module docstring)."""
    count, due = len(kinds(config.execution)), due_rule(config)
    logged_steps = jnp.asarray(trainer.schedule.steps, jnp.int32)  # the step of log j (`nht_jax.config.schedule`)

    def keep(c: Captured, metrics) -> Captured:
        # the barrier keeps the capture out of the run's own fusions, so its numbers are a plain sweep's
        run, metrics = jax.lax.optimization_barrier((c.run, metrics))
        c = c._replace(run=run)
        step = logged_steps[c.logs]
        hit = due(step, metrics) & ~c.taken
        held = tuple(jax.tree.map(lambda h, r, k=k: jnp.where(hit[k], r, h), c.held[k], c.run) for k in range(count))
        return c._replace(held=held, taken=c.taken | hit, at=jnp.where(hit, step, c.at))

    def init(hparams: dict, key=None) -> Captured:
        # nothing taken: the snapshots of step 0 are taken on the host (`taken_at_start`), since a program that
        # also returns a copy of the initial state may compute it differently in the last bit
        run = trainer.init(hparams, key)
        return Captured(
            run,
            tuple(jax.tree.map(jnp.zeros_like, run) for _ in range(count)),
            jnp.zeros(count, bool),
            jnp.full(count, -1, jnp.int32),
            jnp.zeros((), jnp.int32),
        )

    def evaluate(c: Captured, hparams: dict) -> dict:
        return trainer.evaluate(c.run, hparams)

    def step(c: Captured, hparams: dict) -> Captured:
        return c._replace(run=trainer.step(c.run, hparams))

    def advance(c: Captured, hparams: dict, num_logs: int, every: int | None = None):
        length = one_interval(trainer.schedule, every)

        def one_step(s, _):
            return trainer.step(s, hparams), None

        def one_block(c, _):
            run, _ = jax.lax.scan(one_step, jax.lax.optimization_barrier(c.run), None, length=length)
            metrics = trainer.evaluate(run, hparams)
            return keep(c._replace(run=run, logs=c.logs + 1), metrics), metrics

        return jax.lax.scan(one_block, c, None, length=num_logs)

    def train(hparams: dict, key=None):
        c = init(hparams, key)
        first = evaluate(c, hparams)
        c, rest = advance_through(advance, trainer.schedule, keep(c, first), hparams, 0, trainer.num_logs)
        return c, jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, rest)

    return Trainer(
        init=init,
        evaluate=evaluate,
        advance=advance,
        train=train,
        step=step,
        num_logs=trainer.num_logs,
        schedule=trainer.schedule,
    )


def taken_at_start(states: Captured, first: dict, config) -> Captured:
    """The step-0 snapshots taken on the host: `states` the initial Captured states (host arrays, R rows, padding
    included), `first` the step-0 metrics {name: (runs ≤ R, 1)} (the padding repeats the last run)."""
    rows = len(np.asarray(states.logs))
    metrics = {k: np.concatenate([v[:, 0], np.repeat(v[-1:, 0], rows - len(v))]) for k, v in first.items()}
    hit = np.asarray(due_rule(config)(0, metrics)).reshape(-1, rows).T if kinds(config.execution) else None
    hit = np.broadcast_to(hit, (rows, len(states.held)))
    held = tuple(
        jax.tree.map(
            lambda h, r, k=k: np.where(hit[:, k].reshape(-1, *[1] * (r.ndim - 1)), r, h), states.held[k], states.run
        )
        for k in range(len(states.held))
    )
    return states._replace(
        held=held, taken=np.asarray(states.taken) | hit, at=np.where(hit, 0, np.asarray(states.at)).astype(np.int32)
    )


def leaf_paths(tree) -> list[str]:
    return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]


class Store:
    """Every run's snapshots on the host: per kind `taken` (runs,), `step` (runs,) and `leaves` (runs, …) per
    state leaf (allocated when the first run arrives), `paths` the leaves' names."""

    def __init__(self, kinds_: tuple[str, ...], num_runs: int):
        self.kinds, self.num_runs = tuple(kinds_), num_runs
        self.taken = {k: np.zeros(num_runs, bool) for k in self.kinds}
        self.step = {k: np.full(num_runs, -1, np.int64) for k in self.kinds}
        self.leaves: dict[str, list] = {}
        self.paths: list[str] = []

    def keep(self, runs: np.ndarray, captured: Captured, stopped: np.ndarray) -> None:
        """Take the snapshots of grid runs `runs` from `captured` (host arrays, one row per run in that order);
        `stopped` their stop steps (NaN: trained the budget): a snapshot after a run's stop is dropped."""
        runs = np.asarray(runs, int)
        if not self.paths:
            self.paths = leaf_paths(jax.tree.map(lambda x: x[0], captured.run))
        for k, kind in enumerate(self.kinds):
            taken = np.asarray(captured.taken)[:, k]
            held = [np.asarray(x) for x in jax.tree.leaves(captured.held[k])]
            if not self.leaves.get(kind):  # allocated with the first run, also when a resumed file held none yet
                self.leaves[kind] = [np.zeros((self.num_runs, *x.shape[1:]), x.dtype) for x in held]
            self.taken[kind][runs] = taken
            self.step[kind][runs] = np.where(taken, np.asarray(captured.at)[:, k], -1)
            for whole, x in zip(self.leaves[kind], held):
                whole[runs] = np.where(taken.reshape(-1, *[1] * (x.ndim - 1)), x, 0)
        self.drop_after(runs, stopped)

    def drop_after(self, runs: np.ndarray, stopped: np.ndarray) -> None:
        """Drop every snapshot of grid runs `runs` taken after its run's stop step (`stopped`, NaN: none): the
        steps after a stop are discarded, and a fork must not start from one."""
        runs = np.asarray(runs, int)
        limit = np.where(np.isnan(np.asarray(stopped, float)), np.inf, stopped)
        for kind in self.kinds:
            after = runs[self.taken[kind][runs] & (self.step[kind][runs] > limit)]
            self.taken[kind][after], self.step[kind][after] = False, -1
            for whole in self.leaves.get(kind, []):
                whole[after] = 0

    def arrays(self, digest: str) -> dict:
        out = {"digest": np.asarray(digest), "kinds": np.asarray(self.kinds), "paths": np.asarray(self.paths)}
        for kind in self.kinds:
            out[f"{kind}/taken"], out[f"{kind}/step"] = self.taken[kind], self.step[kind]
            out.update({f"{kind}/state/{i}": x for i, x in enumerate(self.leaves.get(kind, []))})
        return out

    def write(self, out: Path, digest: str) -> None:
        """Write snapshots.npz atomically; RuntimeError (a bug, nothing written) when the store is incomplete."""
        problem = incomplete(self.kinds, self.paths, self.taken, self.leaves, self.num_runs)
        if problem:
            raise RuntimeError(f"snapshots.npz not written: the snapshot store is incomplete ({problem})")
        atomic_write_bytes(Path(out) / SNAPSHOTS, npz_bytes(self.arrays(digest)))

    def describe(self) -> dict:
        """meta.json's "snapshots": per kind the runs that have it."""
        return {"file": SNAPSHOTS, "kinds": {k: int(self.taken[k].sum()) for k in self.kinds}, "runs": self.num_runs}

    @classmethod
    def resumed(cls, out: Path, digest: str, kinds_: tuple[str, ...], num_runs: int) -> "Store":
        """The store a killed sweep wrote with its last checkpoint (empty when none)."""
        store = cls(kinds_, num_runs)
        path = Path(out) / SNAPSHOTS
        if not path.exists():
            return store
        saved = read(path)
        if saved.digest != digest or saved.kinds != store.kinds or saved.num_runs != num_runs:
            return store  # another configuration's: this sweep's own snapshots replace it
        store.taken, store.step, store.leaves, store.paths = saved.taken, saved.step, saved.leaves, saved.paths
        return store


def incomplete(kinds_: tuple, paths: list, taken: dict, leaves: dict, num_runs: int) -> str:
    """What makes snapshots incomplete ("" if nothing): a kind with runs marked taken but not every state leaf of
    every run.

    Args:
        kinds_: the snapshot kinds.
        paths: the state's leaf paths.
        taken: {kind: (runs,) bool}, the runs that took it.
        leaves: {kind: the state's leaves}.
        num_runs: runs.

    Returns:
        The problem, or "".
    """
    for kind in kinds_:
        if not np.asarray(taken[kind]).any():
            continue
        held = leaves.get(kind, [])
        if not paths or len(held) != len(paths) or any(len(x) != num_runs for x in held):
            return (
                f"{int(np.sum(taken[kind]))} run(s) have snapshot {kind} without all of their state "
                f"({len(held)} state arrays for {len(paths)} state leaves)"
            )
    return ""


class Snapshots(NamedTuple):
    """snapshots.npz as read: digest, kinds, paths, and per kind taken/step (runs,) and the state leaves."""

    digest: str
    kinds: tuple
    paths: list
    taken: dict
    step: dict
    leaves: dict

    @property
    def num_runs(self) -> int:
        return len(next(iter(self.taken.values()))) if self.taken else 0

    def state_rows(self, kind: str, rows) -> list:
        """The state leaves of runs `rows` in snapshot `kind`, each (len(rows), …)."""
        return [x[np.asarray(rows, int)] for x in self.leaves[kind]]


def read(path: Path) -> Snapshots:
    """Read snapshots.npz; ConfigError naming the file when it cannot be read.

    Args:
        path: the snapshots.npz file.

    Returns:
        The Snapshots.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            kinds_ = tuple(str(k) for k in data["kinds"])
            paths = [str(p) for p in data["paths"]]
            taken = {k: data[f"{k}/taken"].astype(bool) for k in kinds_}
            step = {k: data[f"{k}/step"] for k in kinds_}
            leaves = {k: [data[f"{k}/state/{i}"] for i in range(len(paths))] for k in kinds_}
            problem = incomplete(kinds_, paths, taken, leaves, len(next(iter(taken.values()), [])))
            if problem:
                raise ValueError(problem)
            return Snapshots(str(data["digest"]), kinds_, paths, taken, step, leaves)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
        raise ConfigError(
            f"'{path}' is not a readable snapshots file ({type(e).__name__}: {e}); run the source "
            f"sweep again with --overwrite to write it anew"
        ) from None


__all__ = ["Snapshots", "incomplete", "kinds", "read"]
