"""How a grid of runs executes as one compiled program: sequential map, vmap, sharding.

`lax.map(f, xs, batch_size=b)` runs b runs at a time vectorised and loops over the rest inside the compiled
program: b = 1 is a sequential loop (plain GEMMs, best on CPU per DESIGN.md), b = R is a full vmap (batched
GEMMs, best on accelerators). With several devices the run axis is sharded with `shard_map` over a mesh "runs"
of `jax.devices()`, each device mapping its share. With several processes (`nht_jax.engine.distributed`) that
mesh holds every process's devices, always all of them (every process takes part in every call; the runs are
padded to a multiple of the device count), the inputs are placed on it as global arrays (`GridRun.place`) and
the outputs come back gathered in full to every process (`distributed.gather`).

`GridRun` is the one orchestration of a grid (plan → compile → pad → init → evaluate → advance →
concatenate → unpad), used by `nht run` (chunk by chunk, with checkpoints; run slice by run slice when the grid
does not fit in memory, `nht_jax.engine.memory`; re-packed when a stop rule removes runs, `GridRun.with_runs`),
`nht tool bench`, `run_grid` and the tests.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from nht_jax.base.errors import check
from nht_jax.engine import distributed
from nht_jax.engine.loop import Trainer, one_interval
from nht_jax.config.sections import ExecutionConfig


@dataclass(frozen=True)
class Plan:
    """The resolved execution plan of a grid."""

    strategy: str  # "map" or "vmap"
    runs_per_batch: int  # runs vectorised together (vmap: all runs of a device)
    devices: int  # devices the run axis is sharded over (1 = no sharding)
    padded_runs: int  # runs after padding to a multiple of `devices`
    backend: str = "cpu"
    processes: int = 1  # processes whose devices the run axis spans (`nht_jax.engine.distributed`)

    def describe(self) -> str:
        how = "vmap" if self.strategy == "vmap" else f"lax.map, {self.runs_per_batch} run(s) at a time"
        where = f" of {self.processes} processes" if self.processes > 1 else ""
        return f"{how} on {self.devices} {self.backend} device(s){where}"


def plan(
    execution: ExecutionConfig,
    num_runs: int,
    backend: str | None = None,
    num_devices: int | None = None,
    num_processes: int | None = None,
) -> Plan:
    """The resolved execution plan of a grid: with several processes, the run axis always spans every device, padded
    when runs are fewer.

    Args:
        execution: the [execution] settings.
        num_runs: runs in the grid.
        backend: "cpu", "gpu" or "tpu" (default `jax.default_backend()`).
        num_devices: devices of every process (default `jax.device_count()`).
        num_processes: processes (default `jax.process_count()`).

    Returns:
        The Plan: strategy, runs per batch, devices and padded run count.
    """
    backend = backend or jax.default_backend()
    num_devices = num_devices or jax.device_count()
    num_processes = num_processes or jax.process_count()
    strategy = execution.strategy if execution.strategy != "auto" else ("map" if backend == "cpu" else "vmap")
    if num_processes > 1:
        check(
            execution.shard != "off",
            f'execution.shard = "off" cannot run on {num_processes} processes: their '
            f'devices share the runs only by sharding (use "auto" or "on", or one process)',
        )
        devices = num_devices
    else:
        devices = num_devices if (execution.shard == "on" or (execution.shard == "auto" and num_devices > 1)) else 1
        devices = max(1, min(devices, num_runs))
    padded = -(-num_runs // devices) * devices
    per_device = padded // devices
    runs_per_batch = per_device if strategy == "vmap" else min(execution.runs_per_batch, per_device)
    return Plan(strategy, runs_per_batch, devices, padded, backend, num_processes)


def pad_runs(tree, padded: int):
    """Repeat the last run so the run axis has `padded` entries (padding is dropped after), as device arrays.
    The rows are copied on the host (numpy) and put on the device once: copying them there eagerly would compile
    a concatenate and a repeat for every new leaf shape (tens of compiles per re-pack of a stopped grid)."""

    def pad(x):
        extra = padded - np.shape(x)[0]
        if extra == 0:
            return jnp.asarray(x)
        x = np.asarray(x)
        return jnp.asarray(np.concatenate([x, np.repeat(x[-1:], extra, axis=0)]))

    return jax.tree.map(pad, tree)


def unpad(tree, num_runs: int):
    """The runs without the padding that spread them evenly over the devices.

    Args:
        tree: a pytree of padded runs, the run axis first.
        num_runs: the real runs.

    Returns:
        The pytree without its padding rows.
    """
    return jax.tree.map(lambda x: x[:num_runs], tree)


def run_mesh(the_plan: Plan) -> Mesh | None:
    """The mesh "runs" the plan shards over (the first `devices` of every process's devices), or None."""
    return None if the_plan.devices == 1 else Mesh(np.array(jax.devices()[: the_plan.devices]), ("runs",))


def over_runs(fn: Callable, the_plan: Plan) -> Callable:
    """Lift fn(state, hparams) → out to stacked runs according to the plan."""

    def mapped(states, hparams):
        return jax.lax.map(lambda args: fn(*args), (states, hparams), batch_size=the_plan.runs_per_batch)

    if the_plan.devices == 1:
        return mapped
    spec = PartitionSpec("runs")
    return jax.shard_map(mapped, mesh=run_mesh(the_plan), in_specs=(spec, spec), out_specs=spec)


def place(tree, mesh: Mesh | None):
    """Stacked runs (host or device arrays, the same full values on every process) as arrays sharded over the
    mesh's run axis, each process putting only the rows of its own devices; unchanged without a mesh.

    Args:
        tree: a pytree of stacked runs.
        mesh: the device mesh with a "runs" axis, or None.

    Returns:
        The pytree, sharded over the mesh (or as given).
    """
    if mesh is None:
        return tree
    sharding = NamedSharding(mesh, PartitionSpec("runs"))

    def put(x):
        full = np.asarray(x)
        return jax.make_array_from_callback(full.shape, sharding, lambda index: full[index])

    return jax.tree.map(put, tree)


def host(tree):
    """Host arrays of every run (gathered from every process when the runs span several).

    Args:
        tree: a pytree of the runs' arrays.

    Returns:
        The same pytree of NumPy arrays.
    """
    return distributed.gather(tree)


def join_logs(chunks: list[dict]) -> dict:
    """Metric chunks, each {name: (runs, logs)}, joined along the log axis."""
    return {k: np.concatenate([c[k] for c in chunks], axis=1) for k in chunks[0]}


class GridRun:
    """A grid of runs of one trainer, compiled once for its execution plan.

    runs: {axis: (R,) array} (or any pytree with a leading run axis the trainer accepts).
    start() → (states, metrics at step 0); advance(states, n, every) → (states, metrics of the next n logs, each
    after `every` steps: one segment of the logging schedule, `nht_jax.config.schedule`), metrics as
    host arrays (runs, logs) with the padding dropped; run() trains everything at once.
    """

    def __init__(
        self,
        trainer: Trainer,
        runs,
        execution: ExecutionConfig | None = None,
        backend: str | None = None,
        num_devices: int | None = None,
    ):
        leaves = jax.tree.leaves(runs)
        chex.assert_equal_shape_prefix(leaves, 1)
        self.trainer = trainer
        self.num_runs = int(leaves[0].shape[0])
        self.plan = plan(execution or ExecutionConfig(), self.num_runs, backend, num_devices)
        self.mesh = run_mesh(self.plan)
        self.runs = self.place(pad_runs(runs, self.plan.padded_runs))
        self._init = jax.jit(over_runs(lambda _, hp: trainer.init(hp), self.plan))
        self._evaluate = jax.jit(over_runs(trainer.evaluate, self.plan))
        self.advance_program = jax.jit(
            lambda states, hparams, n, every: over_runs(lambda s, hp: trainer.advance(s, hp, n, every), self.plan)(
                states, hparams
            ),
            static_argnums=(2, 3),
        )

    def with_runs(self, runs) -> GridRun:
        """The same compiled programs over other runs, at most `plan.padded_runs` of them (padded to that many by
        repeating the last): a smaller last run slice, or the runs a stop rule left, without compiling again."""
        count = int(jax.tree.leaves(runs)[0].shape[0])
        if not 1 <= count <= self.plan.padded_runs:
            raise ValueError(f"with_runs needs 1 to {self.plan.padded_runs} runs, got {count}")
        other = copy.copy(self)
        other.num_runs, other.runs = count, self.place(pad_runs(runs, self.plan.padded_runs))
        return other

    def place(self, tree):
        """Stacked (padded) runs, e.g. states read from a checkpoint, placed where this program takes them."""
        return place(tree, self.mesh)

    def init(self):
        """Initial states of every (padded) run."""
        return self._init(self.place(np.zeros(self.plan.padded_runs, np.float32)), self.runs)

    def evaluate(self, states) -> dict:
        """Metrics of the current states as host arrays (runs, 1)."""
        return unpad(jax.tree.map(lambda x: x[:, None], host(self._evaluate(states, self.runs))), self.num_runs)

    def start(self):
        states = self.init()
        return states, self.evaluate(states)

    def advance(self, states, num_logs: int, every: int | None = None):
        """The next `num_logs` logs, all of one schedule segment: `every` steps before each (None: the schedule's
        interval, when it has only one). One compiled program per (num_logs, every)."""
        every = one_interval(self.trainer.schedule, every)
        states, metrics = self.advance_program(states, self.runs, num_logs, every)
        return states, unpad(host(metrics), self.num_runs)

    def run(self) -> dict:
        """Every run from init to the end: metrics {name: (runs, logs + 1)}, one compiled call per segment."""
        states, chunks = self.start()
        chunks = [chunks]
        for n, every in self.trainer.schedule.pieces(0, self.trainer.num_logs):
            states, rest = self.advance(states, n, every)
            chunks.append(rest)
        return join_logs(chunks)


def run_grid(trainer: Trainer, runs, execution: ExecutionConfig | None = None) -> dict:
    """Every run of a grid in one go (no chunks, no checkpoints): metrics as host arrays (runs, logs + 1).

    Args:
        trainer: the engine Trainer.
        runs: the grid's runs, {axis: (R,) array}.
        execution: the [execution] settings (None: the defaults).

    Returns:
        {metric: host array of shape (runs, logs + 1)}.
    """
    return GridRun(trainer, runs, execution).run()


__all__ = ["GridRun", "host", "place", "plan", "run_grid", "unpad"]
