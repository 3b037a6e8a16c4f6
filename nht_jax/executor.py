"""How a grid of runs executes as one compiled program: sequential map, vmap, sharding.

`lax.map(f, xs, batch_size=b)` runs b runs at a time vectorised and loops over the
rest inside the compiled program: b = 1 is a sequential loop (plain GEMMs, best on CPU
per DESIGN.md), b = R is a full vmap (batched GEMMs, best on accelerators). With several
local devices the run axis is sharded with `shard_map`, each device mapping its share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from nht_jax.config import TrainConfig
from nht_jax.grid import HParams
from nht_jax.train import Trainer


@dataclass(frozen=True)
class Plan:
    """The resolved execution plan of a grid."""

    strategy: str        # "map" or "vmap"
    runs_per_batch: int  # runs vectorised together (vmap: all runs of a device)
    devices: int         # devices the run axis is sharded over (1 = no sharding)
    padded_runs: int     # runs after padding to a multiple of `devices`

    def describe(self) -> str:
        how = "vmap" if self.strategy == "vmap" else f"lax.map, {self.runs_per_batch} run(s) at a time"
        return f"{how} on {self.devices} {jax.default_backend()} device(s)"


def plan(train: TrainConfig, num_runs: int, backend: str | None = None, num_devices: int | None = None) -> Plan:
    backend = backend or jax.default_backend()
    num_devices = num_devices or jax.local_device_count()
    strategy = train.strategy if train.strategy != "auto" else ("map" if backend == "cpu" else "vmap")
    devices = num_devices if (train.shard == "on" or (train.shard == "auto" and num_devices > 1)) else 1
    devices = max(1, min(devices, num_runs))
    padded = -(-num_runs // devices) * devices
    per_device = padded // devices
    runs_per_batch = per_device if strategy == "vmap" else min(train.runs_per_batch, per_device)
    return Plan(strategy, runs_per_batch, devices, padded)


def pad_runs(tree, padded: int):
    """Repeat the last run so the run axis has `padded` entries (padding is dropped after)."""
    def pad(x):
        x = jnp.asarray(x)
        extra = padded - x.shape[0]
        return x if extra == 0 else jnp.concatenate([x, jnp.repeat(x[-1:], extra, axis=0)])
    return jax.tree.map(pad, tree)


def over_runs(fn: Callable, the_plan: Plan) -> Callable:
    """Lift fn(state, hparams) → out to stacked runs according to the plan."""
    def mapped(states, hparams):
        return jax.lax.map(lambda args: fn(*args), (states, hparams), batch_size=the_plan.runs_per_batch)

    if the_plan.devices == 1:
        return mapped
    mesh = Mesh(np.array(jax.local_devices()[: the_plan.devices]), ("runs",))
    spec = PartitionSpec("runs")
    return jax.shard_map(mapped, mesh=mesh, in_specs=(spec, spec), out_specs=spec)


@dataclass(frozen=True)
class GridProgram:
    """Jitted grid functions: init(hparams) → states; advance(states, hparams, num_logs) → (states, metrics)."""

    init: Callable
    evaluate: Callable
    advance: Callable
    plan: Plan


def compile_grid(trainer: Trainer, the_plan: Plan) -> GridProgram:
    init = jax.jit(over_runs(lambda _, hp: trainer.init(hp), the_plan))
    evaluate = jax.jit(over_runs(trainer.evaluate, the_plan))

    def advance(states, hparams, num_logs: int):
        return over_runs(lambda s, hp: trainer.advance(s, hp, num_logs), the_plan)(states, hparams)

    return GridProgram(
        init=lambda hp: init(jnp.zeros(the_plan.padded_runs), hp),
        evaluate=evaluate,
        advance=jax.jit(advance, static_argnums=2),
        plan=the_plan,
    )


def unpad(tree, num_runs: int):
    return jax.tree.map(lambda x: x[:num_runs], tree)


def run_grid(trainer: Trainer, hparams, train: TrainConfig | None = None) -> dict:
    """Every run of a grid in one go (no chunks, no checkpoints): metrics as host arrays (runs, logs + 1).

    `hparams` is any pytree with a leading run axis that the trainer's functions accept; `train`
    supplies the execution settings (strategy, runs_per_batch, shard), TrainConfig() by default."""
    num_runs = int(jax.tree.leaves(hparams)[0].shape[0])
    the_plan = plan(train or TrainConfig(), num_runs)
    program = compile_grid(trainer, the_plan)
    padded = pad_runs(hparams, the_plan.padded_runs)
    states = program.init(padded)
    first = program.evaluate(states, padded)
    _, rest = program.advance(states, padded, trainer.num_logs)
    metrics = jax.tree.map(lambda a, b: np.concatenate([np.asarray(a)[:, None], np.asarray(b)], axis=1), first, rest)
    return unpad(metrics, num_runs)


__all__ = ["GridProgram", "HParams", "Plan", "compile_grid", "pad_runs", "plan", "run_grid", "unpad"]
