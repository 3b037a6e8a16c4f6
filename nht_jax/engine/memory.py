"""How many runs fit in memory at once: a grid's run axis cut into run slices that fit a cap.

A *run slice* is a slice of the run axis trained on its own, one after another (`nht_jax.training.loop`); not to be
confused with a *chunk*, the steps between two compiled calls (`nht_jax.training.chunks`). The plan estimates the
bytes of a run slice of M runs (the shared data, each run's arguments, outputs and metrics history, XLA's
temporary buffers), first by the traced bound that needs no compile (`TRACED_MARGIN`), else from XLA's memory
analysis of a one-run (and a two-run) program; the run slice size is the largest that fits the cap
(`execution.memory_cap_gib`, else what the device reports, else half the host's RAM). A configuration one run of
which cannot fit is refused before training (`Need`, `refuse_if_too_large`; `nht_jax.experiment.check_fits`).

The memory model term by term, the traced bound and its measured margins, the cap and the refusals:
docs/guides/execution.md, "Grids larger than memory" and "The memory model"."""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import NamedTuple

import jax
import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.engine.executor import plan as execution_plan
from nht_jax.engine.loop import Trainer
from nht_jax.config.sections import ExecutionConfig

GIB = 2**30
DEVICE_FRACTION = 0.9  # of a device's reported limit: room for fragmentation and XLA's own workspace
HOST_FRACTION = 0.5  # of the host's RAM, when the device reports no limit (CPU)
TRACED_MARGIN = 2  # the traced bound must fit this many times over before it is trusted without a compile


@dataclass(frozen=True)
class MemoryEstimate:
    """The terms of the model in the module docstring, in bytes."""

    state: int  # one run's training state (jax.eval_shape of init)
    io: int  # one run's arguments + outputs of the advance program
    history: int  # one run's metrics over the whole sweep
    temp_1: int  # temporary buffers of the one-run program
    temp_step: int  # growth of the temporary buffers per extra vectorised run
    shared: int  # the data, once per device
    devices: int  # devices the run axis is sharded over
    vectorised: bool  # whether the plan vectorises runs (vmap, or runs_per_batch > 1)
    runs_per_batch: int
    source: str  # "compiled" (XLA's memory analysis), "traced" (the traced bound), or "none" (no analysis:
    # the backend gave none, temp terms are 0)

    @property
    def measured(self) -> bool:
        return self.source == "compiled"

    def bytes_for(self, runs: int) -> int:
        """Estimated peak bytes on one device for a run slice of `runs` runs."""
        per_device = -(-runs // self.devices)
        width = per_device if self.runs_per_batch == 0 else min(self.runs_per_batch, per_device)
        return int(self.shared + per_device * (self.io + self.history) + self.temp_1 + (width - 1) * self.temp_step)


@dataclass(frozen=True)
class RunSlicePlan:
    """The run axis cut into run slices: `bounds` (K + 1 run indices), each run slice ≤ runs_per_slice runs."""

    num_runs: int
    runs_per_slice: int
    cap: int
    cap_source: str
    estimate: MemoryEstimate

    @property
    def num_slices(self) -> int:
        return -(-self.num_runs // self.runs_per_slice)

    @property
    def bounds(self) -> list[int]:
        return split(0, self.num_runs, self.runs_per_slice)

    @property
    def slice_bytes(self) -> int:
        return self.estimate.bytes_for(self.runs_per_slice)

    def describe(self) -> str:
        k = self.num_slices
        at_most = "≤ " if self.estimate.source == "traced" else ""
        text = (
            f"{self.num_runs} runs in {k} run slice{'s' if k > 1 else ''} of ≤ {self.runs_per_slice} runs, "
            f"estimated {at_most}{gib(self.slice_bytes)} per run slice against a cap of {gib(self.cap)} "
            f"({self.cap_source})"
        )
        if self.estimate.source == "traced":
            text += "; traced bound: every intermediate value counted, nothing compiled"
        elif self.estimate.source == "none":
            text += "; no compiled memory analysis on this backend: temporary buffers not counted"
        return text


def gib(n: float) -> str:
    """Bytes as GiB (MiB below 0.01 GiB)."""
    return f"{n / GIB:.2f} GiB" if n >= 0.01 * GIB else f"{n / 2**20:.3g} MiB"


def split(start: int, stop: int, size: int) -> list[int]:
    """Boundaries of [start, stop) cut into pieces of at most `size`: [start, …, stop].

    Args:
        start: the first index.
        stop: one past the last.
        size: the largest piece.

    Returns:
        The boundaries.
    """
    return list(range(start, stop, size)) + [stop] if stop > start else [start]


def nbytes(tree, depth: int = 4) -> int:
    """Bytes of every array in a pytree, NamedTuple or dataclass (the domain's data)."""
    total = 0
    for leaf in jax.tree.leaves(tree):
        if hasattr(leaf, "nbytes") and hasattr(leaf, "shape"):
            total += int(leaf.nbytes)
        elif depth and dataclasses.is_dataclass(leaf) and not isinstance(leaf, type):
            total += nbytes([getattr(leaf, f.name) for f in dataclasses.fields(leaf)], depth - 1)
        elif depth and hasattr(leaf, "__dict__"):
            total += nbytes(list(vars(leaf).values()), depth - 1)
    return total


def _shapes(tree, runs: int | None):
    """ShapeDtypeStructs of a tree, with a leading run axis of `runs` (None: as is)."""
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape if runs is None else (runs, *x.shape), x.dtype), tree)


def intermediate_bytes(jaxpr) -> int:
    """Bytes of every value a jaxpr's equations produce, recursing into the jaxprs in their parameters (scan and
    while bodies, cond branches, nested calls), each counted once."""
    total = 0
    for eqn in jaxpr.eqns:
        total += sum(math.prod(v.aval.shape) * v.aval.dtype.itemsize for v in eqn.outvars if hasattr(v.aval, "shape"))
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)  # a ClosedJaxpr holds its Jaxpr as .jaxpr
                if hasattr(inner, "eqns"):
                    total += intermediate_bytes(inner)
    return total


class Basis(NamedTuple):
    """What both estimates start from: one run's state and grid values as shapes, and the terms they share."""

    state: object  # ShapeDtypeStructs of one run's training state
    one: object  # ShapeDtypeStructs of one run's grid values
    num_logs: int
    terms: dict  # state, history, shared, devices, vectorised, runs_per_batch (MemoryEstimate's fields)


def basis(
    trainer: Trainer,
    runs,
    data,
    execution: ExecutionConfig,
    num_logs: int,
    backend: str | None = None,
    num_devices: int | None = None,
) -> Basis:
    """runs: {axis: (R,) array}; num_logs: logged points per run over the whole sweep (the schedule's logs + 1,
    `nht_jax.config.schedule`)."""
    num_runs = int(jax.tree.leaves(runs)[0].shape[0])
    the_plan = execution_plan(execution, num_runs, backend, num_devices)
    one = jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x)[1:], np.asarray(x).dtype), runs)
    state = jax.eval_shape(trainer.init, one)
    metrics = jax.eval_shape(trainer.evaluate, state, one)
    terms = dict(
        state=sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(state)),
        history=num_logs * sum(x.dtype.itemsize for x in jax.tree.leaves(metrics)),
        shared=nbytes(data),
        devices=the_plan.devices,
        vectorised=the_plan.strategy == "vmap" or execution.runs_per_batch > 1,
        runs_per_batch=0 if the_plan.strategy == "vmap" else execution.runs_per_batch,
    )
    return Basis(state, one, num_logs, terms)


def first_every(trainer: Trainer) -> int:
    """The interval of the schedule's first segment: one log of any segment needs the same buffers (the inner
    scan's body is the step whatever its length)."""
    return trainer.schedule.segments[0].every


def traced_estimate(trainer: Trainer, b: Basis) -> MemoryEstimate:
    """The traced bound of the module docstring: traces `advance` for one log interval, compiles nothing."""
    temp = intermediate_bytes(
        jax.make_jaxpr(lambda s, h: trainer.advance(s, h, 1, first_every(trainer)))(b.state, b.one).jaxpr
    )
    grid_bytes = sum(x.dtype.itemsize for x in jax.tree.leaves(b.one))
    io = 2 * b.terms["state"] + grid_bytes + b.terms["history"] // max(b.num_logs, 1)
    return MemoryEstimate(
        io=io, temp_1=temp, temp_step=temp if b.terms["vectorised"] else 0, source="traced", **b.terms
    )


def compiled_estimate(trainer: Trainer, b: Basis) -> MemoryEstimate:
    """XLA's memory analysis of `advance` compiled for one log interval (twice when the plan vectorises); runs
    nothing."""

    def analysis(width: int | None):
        every = first_every(trainer)
        fn = (
            (lambda s, h: trainer.advance(s, h, 1, every))
            if width is None
            else jax.vmap(lambda s, h: trainer.advance(s, h, 1, every))
        )
        try:
            return jax.jit(fn).lower(_shapes(b.state, width), _shapes(b.one, width)).compile().memory_analysis()
        except (NotImplementedError, RuntimeError):
            return None

    single = analysis(None)
    if single is None:
        return MemoryEstimate(io=2 * b.terms["state"], temp_1=0, temp_step=0, source="none", **b.terms)
    io = single.argument_size_in_bytes + single.output_size_in_bytes - single.alias_size_in_bytes
    temp_step = 0
    if b.terms["vectorised"]:
        pair = analysis(2)
        temp_step = (
            max(0, pair.temp_size_in_bytes - single.temp_size_in_bytes)
            if pair is not None
            else single.temp_size_in_bytes
        )
    return MemoryEstimate(
        io=int(io), temp_1=int(single.temp_size_in_bytes), temp_step=int(temp_step), source="compiled", **b.terms
    )


def estimate(
    trainer: Trainer,
    runs,
    data,
    execution: ExecutionConfig,
    num_logs: int,
    backend: str | None = None,
    num_devices: int | None = None,
    traced: bool = False,
) -> MemoryEstimate:
    """The model's terms for this trainer: compiled (XLA's memory analysis), or with traced=True the traced bound.

    Args:
        trainer: the engine Trainer.
        runs: {axis: (R,) array}.
        data: the data every run shares.
        execution: the [execution] settings.
        num_logs: logged points per run over the whole sweep (the schedule's logs + 1).
        backend: "cpu", "gpu" or "tpu" (default: JAX's).
        num_devices: devices (default: JAX's count).
        traced: the traced bound instead of compiling.

    Returns:
        The MemoryEstimate.
    """
    b = basis(trainer, runs, data, execution, num_logs, backend, num_devices)
    return traced_estimate(trainer, b) if traced else compiled_estimate(trainer, b)


class Need(NamedTuple):
    """One term of what a run needs: what it is, its bytes, and the setting that shrinks it."""

    what: str
    bytes: int
    fix: str


HISTORY_FIX = "fewer logs: fewer train.steps or a larger train.log_every (or coarser train.log_schedule segments)"
DATA_FIX = "a smaller dataset (e.g. a smaller task.p, task.parity_samples, or task.n and task.d of a toy model)"
STATE_FIX = "a smaller model (model.hidden, model.embedding)"
BUFFERS_FIX = "a smaller model or dataset (every example is evaluated at once: task.p, model.hidden)"


def refuse_if_too_large(subject: str, needs: list[Need], cap: int, cap_source: str) -> None:
    """ConfigError when the needs add up to more than `cap` bytes: every term, largest first, and what to change."""
    total = sum(n.bytes for n in needs)
    if total <= cap:
        return
    ordered = sorted((n for n in needs if n.bytes > 0), key=lambda n: -n.bytes)
    terms = "; ".join(f"{n.what} {gib(n.bytes)}" for n in ordered)
    fixes = "; or ".join(dict.fromkeys(n.fix for n in ordered if n.bytes >= 0.1 * total))
    raise ConfigError(
        f"{subject} cannot fit: it needs about {gib(total)} ({terms}), more than the {gib(cap)} "
        f"available ({cap_source}). To fix it choose {fixes}; or raise execution.memory_cap_gib if this "
        f"machine has the memory."
    )


def one_run_needs(est: MemoryEstimate) -> list[Need]:
    """The terms of bytes_for(1) (module docstring) as Needs."""
    return [
        Need("the data", est.shared, DATA_FIX),
        Need("its state in and out", est.io, STATE_FIX),
        Need("its metrics history", est.history, HISTORY_FIX),
        Need("XLA's buffers (activations, evaluation)", est.temp_1, BUFFERS_FIX),
    ]


def host_ram() -> int:
    """The host's physical RAM in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def device_cap(execution: ExecutionConfig) -> tuple[int, str]:
    """(bytes per device, where the number comes from)."""
    if execution.memory_cap_gib > 0:
        return int(execution.memory_cap_gib * GIB), "execution.memory_cap_gib"
    device = jax.local_devices()[0]
    try:
        stats = device.memory_stats()
    except (RuntimeError, NotImplementedError):
        stats = None
    if stats and stats.get("bytes_limit"):
        limit = int(stats["bytes_limit"])
        return int(DEVICE_FRACTION * limit), (
            f"auto: {DEVICE_FRACTION:.0%} of the {gib(limit)} the {device.platform} device reports"
        )
    ram = host_ram()
    devices = jax.local_device_count()
    share = f" shared by {devices} devices" if devices > 1 else ""
    return int(HOST_FRACTION * ram / devices), (
        f"auto: half the host's {gib(ram)} of RAM{share}; {device.platform} devices report no memory limit"
    )


def runs_that_fit(est: MemoryEstimate, cap: int, num_runs: int) -> int:
    """The largest M ≤ num_runs with bytes_for(M) ≤ cap (1 when none fits), evened out over the run slices and
    rounded to whole devices."""
    lo, hi = 1, num_runs
    if est.bytes_for(1) > cap:
        return 1
    while lo < hi:  # bytes_for grows with M
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if est.bytes_for(mid) <= cap else (lo, mid - 1)
    k = math.ceil(num_runs / lo)
    even = math.ceil(num_runs / k)
    if est.devices > 1:
        even = min(lo, -(-even // est.devices) * est.devices)
    return max(1, even)


def plan_run_slices(
    trainer: Trainer,
    runs,
    data,
    execution: ExecutionConfig,
    num_logs: int,
    backend: str | None = None,
    num_devices: int | None = None,
) -> RunSlicePlan:
    """Estimate, take the cap, and cut the run axis into run slices (docs/guides/execution.md, "The memory model")."""
    cap, source = device_cap(execution)
    num_runs = int(jax.tree.leaves(runs)[0].shape[0])
    b = basis(trainer, runs, data, execution, num_logs, backend, num_devices)
    est = traced_estimate(trainer, b)
    if TRACED_MARGIN * est.bytes_for(num_runs) > cap:  # the cheap bound does not settle it: compile and measure
        est = compiled_estimate(trainer, b)
        refuse_if_too_large("One run of this configuration", one_run_needs(est), cap, source)
    return RunSlicePlan(num_runs, runs_that_fit(est, cap, num_runs), cap, source, est)


__all__ = ["estimate", "split", "TRACED_MARGIN"]
