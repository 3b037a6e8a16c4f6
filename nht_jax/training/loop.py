"""The training of one sweep (or of one bucket of a sweep over static axes, `nht_jax.training.buckets`): a short loop
over run slices, then chunks, around the compiled program, with hooks (`nht_jax.training.hooks`) called at fixed points.

The loop (`train`) owns what the compiled program needs and everything that changes a result: the run slices
(memory, `nht_jax.engine.memory`), the chunks (time, `nht_jax.training.chunks`), the programs of each size, the stop
rule (`nht_jax.measure.stopping`: runs leaving, re-packing those left) and when a checkpoint is due. Everything else
is a hook's job, one hook per job (`hooks.default_hooks`): snapshots, checkpoints, progress, the live table, signals.
Hooks only observe (a read-only `SliceView`); a sweep trained with no hooks gives the same metrics and stop steps.
`nht run`, `nht tool bench` and `nht_jax.sweep` train through it.

The hook points, run slices, chunks, stop rules, signals, snapshots and several processes are explained in
docs/guides/execution.md (sections "Chunks, progress and checkpoints" to "Stopping finished runs") and
docs/guides/faults.md ("Signals")."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np

from nht_jax.engine import distributed, memory
from nht_jax.engine.executor import GridRun, host, pad_runs
from nht_jax.engine.executor import plan as execution_plan
from nht_jax.experiment import Config
from nht_jax.results import folder as results
from nht_jax.training import signals, snapshots
from nht_jax.measure import stopping
from nht_jax.training.chunks import ChunkSizer
from nht_jax.training.progress import PROGRESS_LOG, ProgressLog
from nht_jax.training.timings import Timings

CHECKPOINT = "checkpoint.npz"
OUTSIDE_WALL = ("on_start", "on_end")
"""The hooks' points outside the training wall time (`Sweep.wall`), left out of its record (`Sweep.timings`)."""


class Bucket(NamedTuple):
    """One bucket of a sweep over static axes, as its loop sees it: which (index of count, the static values),
    the checkpoint to resume it from (None: from its start), and the finished buckets' merged metrics and stopped
    steps (written into every checkpoint it saves)."""

    index: int
    count: int
    values: dict
    checkpoint: results.Checkpoint | None
    done_metrics: dict
    done_stopped: np.ndarray

    @property
    def label(self) -> str:
        return f"bucket {self.index + 1}/{self.count} ({describe_values(self.values)})"


def describe_values(values: dict) -> str:
    return ", ".join(f"{name} = {value}" for name, value in values.items())


def next_power_of_two(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def joined(blocks: list[dict]) -> dict:
    """Metrics of consecutive blocks of runs concatenated along the run axis.

    Args:
        blocks: the blocks' metrics, each {name: (runs, L)}.

    Returns:
        {name: (all runs, L)}.
    """
    return {k: np.concatenate([m[k] for m in blocks]) for k in blocks[0]}


@dataclass
class RunSlice:
    """The run slice in training: its position (`index`, first run `lo`) and runs' grid values; the metrics so far
    (`buffer` {name: (its runs, logs + 1)}, NaN where not trained yet) after `logs_done` log intervals; the runs still
    training (`active`, indices within the slice) and every run's stop step (`stopped`, NaN: not stopped); the
    compiled program, the runs it holds (`slots` ⊇ active, in order) and their `states`."""

    index: int
    lo: int
    runs: dict
    buffer: dict
    logs_done: int
    active: np.ndarray
    stopped: np.ndarray
    slots: np.ndarray
    grid_run: GridRun | None = None
    states: object = None
    resumed: bool = False  # resumed from the checkpoint (else started at step 0 in this process)

    def take(self, rows) -> dict:
        return {k: v[rows] for k, v in self.runs.items()}

    def view(self) -> SliceView:
        """What the hooks see of this slice (`SliceView`)."""
        return SliceView(self)


class SliceView:
    """A run slice as the hooks see it (`RunSlice.view`): every field of the slice, its arrays as read-only views,
    and no field can be set, so a hook observes training and cannot change a result (the states are JAX arrays,
    immutable)."""

    __slots__ = ("_slice",)

    def __init__(self, s: RunSlice):
        object.__setattr__(self, "_slice", s)

    def __getattr__(self, name: str):
        value = getattr(object.__getattribute__(self, "_slice"), name)
        return read_only(value) if isinstance(value, (dict, np.ndarray)) else value

    def __setattr__(self, name: str, value) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}: hooks only observe a run slice")


def read_only(values):
    """A read-only view of an array, or a dict of them (a new dict: the hook cannot add or replace entries)."""
    if isinstance(values, dict):
        return {k: read_only(v) for k, v in values.items()}
    view = np.asarray(values).view()
    view.flags.writeable = False
    return view


class CheckpointAt(NamedTuple):
    """A checkpoint the loop decided to write (`on_checkpoint`): of run slice `index` after `logs_done` log
    intervals, in progress (`slice`: what it holds) or, between run slices, next to start (`in_progress` False,
    `slice` None, `logs_done` 0)."""

    index: int
    logs_done: int
    slice: SliceView | None
    in_progress: bool = True


@dataclass
class Chunk:
    """What one chunk did, for the hooks after it: from log `first` to the slice's logs_done now, `runs` runs
    trained (the program's live ones), in `seconds` of compiled calls (`compiled`: one of them compiled);
    `checkpoint` whether a checkpoint was written after it; `notes`, progress.log lines written after its own."""

    first: int
    runs: int
    seconds: float
    compiled: bool
    checkpoint: bool = False
    notes: list = field(default_factory=list)


class Sweep:
    """One sweep's training as the hooks see it (module docstring): the configuration and runs, the logged steps,
    the memory plan and the run slices' bounds, the programs compiled, the finished run slices' metrics, where
    training stands (`where`), the checkpoint a rerun would resume from (`checkpoint_at`) and the stop signal
    process 0 received (`stop_signal`)."""

    def __init__(self, config: Config, trainer, runs: dict, data, out: Path, digest: str, bucket: Bucket | None = None):
        self.config, self.trainer, self.out, self.digest, self.bucket = config, trainer, out, digest, bucket
        self.runs = {k: np.asarray(v) for k, v in runs.items()}
        self.num_runs = int(jax.tree.leaves(self.runs)[0].shape[0])
        self.schedule = trainer.schedule  # the logged steps (`nht_jax.config.schedule`)
        self.total_logs, self.steps = trainer.num_logs, trainer.schedule.steps
        self.checkpoint = (
            bucket.checkpoint
            if bucket is not None  # read by train_buckets
            else distributed.writer_does(  # a broken one fails here; process 0's reaches all
                lambda: results.read_checkpoint(out / CHECKPOINT, digest)
            )
        )
        self.memory = distributed.writer_does(  # one plan for every process (the cap comes from process 0's host)
            lambda: memory.plan_run_slices(trainer, self.runs, data, config.execution, self.total_logs + 1)
        )
        self.bounds = self._bounds()
        self.num_slices = len(self.bounds) - 1
        self.slice_size = max(b - a for a, b in zip(self.bounds, self.bounds[1:]))  # runs of the largest run slice
        self.plan_description = execution_plan(config.execution, self.slice_size).describe()
        self.sizer = ChunkSizer(config.execution)
        self.log = ProgressLog(out / PROGRESS_LOG)
        self.rule = stopping.StopRule(config.stop, config.analysis)  # `stop.rule`
        self.runs_stopped = 0  # by the stop rule, counted when the sweep finished (earlier buckets too)
        self.last_checkpoint = time.time()  # when the last checkpoint was written (or training started)
        self.programs: dict[int, GridRun] = {}
        self.program_size = 0  # the runs of the compiled program in use (`program`)
        self.done_metrics: list[dict] = []  # per finished run slice: {name: (its runs, logs + 1)}
        self.done_stopped: list[np.ndarray] = []
        c = self.checkpoint  # (run slice, logs) of the last checkpoint written or resumed from; a
        self.checkpoint_at = (
            (c.run_slice, c.logs_done if c.in_progress else 0)
            if c is not None  # later bucket
            else (0, 0)
            if bucket is not None and bucket.index > 0
            else None
        )  # starts at one
        self.where = (0, 0)  # (run slice, logs done) now
        self.stop_signal = None  # the stop signal process 0 received (`nht_jax.training.signals`), or None
        self.start = time.time()
        self.wall = 0.0
        self.hooks: list = []  # the hooks of this training (`train`)
        self.timings = Timings()  # where the training wall time went: meta.json's "profile"

    def _bounds(self) -> list[int]:
        """The run slices' boundaries: the memory plan's, or a checkpoint's for what it covers (finished run slices
        and the one in progress), the memory plan's for the rest."""
        size, c = self.memory.runs_per_slice, self.checkpoint
        if c is None:
            return memory.split(0, self.num_runs, size)
        keep = c.bounds[: c.run_slice + (2 if c.in_progress else 1)]
        return keep + memory.split(keep[-1], self.num_runs, size)[1:]

    def describe(self) -> dict:
        """The loop's part of meta.json: training wall time, the execution plan, the run slices, the memory plan,
        and where the training wall time went ("profile", `nht_jax.training.timings`)."""
        return {
            "train_wall_s": round(self.wall, 2),
            "execution": self.plan_description,
            "run_slices": self.num_slices,
            "memory_plan": self.memory.describe(),
            "profile": self.timings.describe(self.wall),
        }

    def stop_rule_part(self) -> dict:
        """meta.json's "stop_rule" and "runs_stopped" with a stop rule ({} without)."""
        return {"stop_rule": self.rule.describe(), "runs_stopped": self.runs_stopped} if self.rule.active else {}

    # ------------------------------------------------------------------ words

    def label(self, index: int) -> str:
        """ " (run slice k/K)" when there are several, then " in bucket b/B (width = 64)" with static axes."""
        text = f" (run slice {index + 1}/{self.num_slices})" if self.num_slices > 1 else ""
        return text + self.in_bucket()

    def last_completed(self) -> str:
        """ "step S of T" (with run slice and bucket) where training stands now: the last completed call's step."""
        return self.at(*self.where, of_total=True)

    def stop_text(self, signum: int) -> str:
        """The stop line: where training stands and what running the same command again does."""
        return (
            f"stopped ({signals.signal_name(signum)}) at {self.last_completed()}, the last completed step; "
            + self.rerun_text()
        )

    def rerun_text(self) -> str:
        """What running the same command again does: resume from the last checkpoint, or start at step 0."""
        if self.checkpoint_at is None:
            return "run the same command again to start from step 0 (no checkpoint yet)"
        return f"run the same command again to resume from the checkpoint at {self.at(*self.checkpoint_at)}"

    def in_bucket(self) -> str:
        return f" in {self.bucket.label}" if self.bucket is not None else ""

    def at(self, index: int, logs: int, of_total: bool = False) -> str:
        """ "step S" (of_total: "step S of T"), then " in run slice k/K" when there are several, then
        " in bucket b/B (width = 64)" with static axes."""
        text = f"step {self.steps[logs]}" + (f" of {self.config.train.steps}" if of_total else "")
        text = text if self.num_slices == 1 else f"{text} in run slice {index + 1}/{self.num_slices}"
        return text + self.in_bucket()

    # ------------------------------------------------------------------ programs and states

    def program(self, runs: dict) -> GridRun:
        """A compiled program for these runs (one per size: the largest run slice's, or with a stop rule the power
        of two at or above the runs left, at most that), with its own compiled call sizes in the sizer."""
        count = int(jax.tree.leaves(runs)[0].shape[0])
        size = min(self.slice_size, next_power_of_two(count)) if self.rule.active else self.slice_size
        if size not in self.programs:
            self.programs[size] = GridRun(self.trainer, pad_runs(runs, size), self.config.execution)
        self.program_size = size
        self.sizer.use(size, self.sizer.every)
        return self.programs[size].with_runs(runs)

    def active_leaves(self, s: RunSlice | SliceView) -> list:
        """The flattened states (on the host) of the runs still training, in order, without the padding."""
        rows = np.flatnonzero(np.isin(s.slots, s.active))  # slots holds every active run, in order
        return [x[rows] for x in jax.tree.leaves(host(s.states))]

    def states_of(self, s: RunSlice | SliceView, rows: np.ndarray):
        """The states (host arrays) of the slice's runs `rows` (indices within the slice, all in the program)."""
        positions = np.searchsorted(s.slots, rows)  # slots holds every run still in the program, in order
        return jax.tree.map(lambda x: np.asarray(x)[positions], host(s.states))

    def repack(self, s: RunSlice) -> None:
        """Move the runs still training into the program of their size (compiles only a new size)."""
        kept = self.active_leaves(s)
        structure = jax.tree.structure(s.states)
        s.grid_run = self.program(s.take(s.active))
        s.states = s.grid_run.place(
            jax.tree.unflatten(structure, [pad_runs(x, s.grid_run.plan.padded_runs) for x in kept])
        )
        s.slots = s.active

    def call_hooks(self, point: str, *args) -> None:
        """Every hook's method `point` (module docstring), in order, each timed under its part (`hooks.Hook.part`)
        but at "on_start" and "on_end", which lie outside the training wall time the record divides. A run slice
        among `args` reaches the hooks as its read-only view (`RunSlice.view`)."""
        args = tuple(a.view() if isinstance(a, RunSlice) else a for a in args)
        for hook in self.hooks:
            part = None if point in OUTSIDE_WALL else getattr(hook, "part", "hooks")
            with self.timings.timed(part) if part else contextlib.nullcontext():
                getattr(hook, point)(self, *args)

    def leave(self, s: RunSlice, rows) -> None:
        """Runs `rows` (indices within the slice) leave training: the hooks' `on_leave` while their states are
        still in the program, then they are no longer active."""
        rows = np.asarray(rows, int)
        if rows.size:
            self.call_hooks("on_leave", s, rows)
        s.active = s.active[~np.isin(s.active, rows)]

    def decide_stop(self) -> int | None:
        """Whether to stop for a signal (process 0's, for every process): its number, or None."""
        self.stop_signal = distributed.from_writer(signals.requested())
        return self.stop_signal


# ---------------------------------------------------------------------- the loop


class Trained(NamedTuple):
    """What `train` returns: metrics {name: (runs, logs + 1)}, stopped_step (runs,), training wall seconds, the
    logged steps, and the loop (`sweep`) with its hooks: each `describe()`s its part of meta.json."""

    metrics: dict
    stopped_step: np.ndarray
    wall: float
    steps: np.ndarray
    sweep: Sweep

    def described(self) -> dict:
        """The hooks' parts of meta.json, in the hooks' order, then the stop rule's (`Sweep.stop_rule_part`)."""
        meta = {}
        for hook in self.sweep.hooks:
            meta.update(hook.describe())
        return meta | self.sweep.stop_rule_part()


def train(sweep: Sweep, hooks: list) -> Trained:
    """Train every run slice of `sweep` to its end, calling `hooks` at the points of the module docstring.

    Args:
        sweep: the sweep, perhaps resumed from its checkpoint.
        hooks: the hooks, called in order.

    Returns:
        The Trained: every run's metrics and stop steps.
    """
    sweep.hooks = list(hooks)
    c = sweep.checkpoint
    first = 0 if c is None else c.run_slice
    if c is not None and c.run_slice > 0:
        sweep.done_metrics.append(dict(c.done_metrics))
        sweep.done_stopped.append(np.asarray(c.done_stopped, float))
    sweep.call_hooks("on_start")
    sweep.start, finished = time.time(), False
    sweep.last_checkpoint = sweep.start
    try:
        stop_if_asked(sweep, None)  # a signal during start-up (data, memory plan): stop before the first compile
        for index in range(first, sweep.num_slices):
            resume = c if (c is not None and c.in_progress and c.run_slice == index) else None
            train_slice(sweep, index, resume)
            if index < sweep.num_slices - 1:
                stop_if_asked(sweep, None)
        finished = True
        earlier = [sweep.bucket.done_stopped] if sweep.bucket is not None else []  # the buckets before this one
        sweep.runs_stopped = int(np.isfinite(np.concatenate([*earlier, *sweep.done_stopped])).sum())
    except signals.Stopped:
        raise
    except BaseException as e:
        sweep.call_hooks("on_error", e)
        raise
    finally:
        sweep.wall = time.time() - sweep.start
        sweep.call_hooks("on_end", finished)
    sweep.programs = {}  # the compiled programs are not needed again
    return Trained(joined(sweep.done_metrics), np.concatenate(sweep.done_stopped), sweep.wall, sweep.steps, sweep)


def stop_if_asked(sweep: Sweep, s: RunSlice | None) -> None:
    """At a boundary between compiled calls: stop (`stop`) when process 0 received a stop signal."""
    if sweep.decide_stop():
        stop(sweep, s)


def stop(sweep: Sweep, s: RunSlice | None) -> None:
    """Stop for the signal received: a checkpoint of the slice in progress `s` (None between slices) unless the
    last one holds it already or nothing of it was trained, the hooks' `on_stop` (the stop line), then
    `signals.Stopped` carrying the stop line (`Sweep.stop_text`)."""
    if s is not None and s.logs_done > 0 and sweep.checkpoint_at != (s.index, s.logs_done):
        write_checkpoint(sweep, CheckpointAt(s.index, s.logs_done, s))
    sweep.call_hooks("on_stop", s, sweep.stop_signal)
    raise signals.Stopped(sweep.stop_signal, sweep.stop_text(sweep.stop_signal))


def write_checkpoint(sweep: Sweep, at: CheckpointAt) -> None:
    """Have checkpoint `at` written: the hooks' `on_checkpoint` (snapshots.npz, then checkpoint.npz), and record it
    as the one a rerun resumes from."""
    sweep.call_hooks("on_checkpoint", at._replace(slice=at.slice.view() if at.slice is not None else None))
    sweep.last_checkpoint, sweep.checkpoint_at = time.time(), (at.index, at.logs_done)


def checkpoint_if_due(sweep: Sweep, s: RunSlice, chunk: Chunk) -> None:
    """After a chunk: a checkpoint of the slice when `execution.checkpoint_every_s` has passed since the last one
    (process 0's clock decides for all) and it has runs left to train."""
    due = distributed.from_writer(time.time() - sweep.last_checkpoint > sweep.config.execution.checkpoint_every_s)
    if due and s.logs_done < sweep.total_logs and s.active.size:
        write_checkpoint(sweep, CheckpointAt(s.index, s.logs_done, s))
        chunk.checkpoint = True


def apply_stop_rule(sweep: Sweep, s: RunSlice, first: int) -> str:
    """The stop rule on the active runs' logs [first, logs_done]: the runs that met it get their stop step and
    their metrics held after it, and leave (`Sweep.leave`); a progress.log line ("" if none stopped). Meeting it
    at the very last log is training the budget: no stop."""
    if not (sweep.rule.active and s.active.size):
        return ""
    steps = sweep.steps[: s.logs_done + 1]
    leaving = []
    for r in s.active:
        j = sweep.rule.stop_log(steps, {k: v[r, : s.logs_done + 1] for k, v in s.buffer.items()}, first)
        if j is not None and j < sweep.total_logs:
            s.stopped[r] = sweep.steps[j]
            for v in s.buffer.values():
                v[r, j + 1 : s.logs_done + 1] = v[r, j]
            leaving.append(r)
    if not leaving:
        return ""
    sweep.leave(s, leaving)
    names = ", ".join(f"run {s.lo + r} at step {int(s.stopped[r])}" for r in leaving)
    return (
        f"stop rule ({sweep.config.stop.rule}) after {sweep.at(s.index, s.logs_done)}: {names}; "
        f"{s.active.size} run(s) still training{sweep.label(s.index)}"
    )


def after_chunk(sweep: Sweep, s: RunSlice, chunk: Chunk) -> None:
    """What the loop does after a chunk, before the hooks see it: the stop rule (its line among the chunk's notes;
    the runs left re-packed into a program of their size unless a stop signal is pending), then a checkpoint when
    one is due."""
    if sweep.rule.active:
        with sweep.timings.timed("stop rule"):
            training_before = s.active.size
            line = apply_stop_rule(sweep, s, first=chunk.first + 1)
            if line:
                chunk.notes.append(line)  # after the chunk's own line
            if s.active.size < training_before and s.active.size and not sweep.stop_signal:
                sweep.repack(s)
    with sweep.timings.timed("checkpoint"):
        checkpoint_if_due(sweep, s, chunk)


def train_slice(sweep: Sweep, index: int, resume: results.Checkpoint | None) -> None:
    """Train run slice `index` to the end (or until every run of it stopped), from its start or from the
    checkpoint `resume`; append its metrics and stopped steps to the finished ones."""
    with sweep.timings.timed("start"):
        s = start_slice(sweep, index) if resume is None else resume_slice(sweep, index, resume)
    sweep.where = (index, s.logs_done)
    sweep.call_hooks("on_slice_start", s)
    if not s.resumed and sweep.rule.active:
        with sweep.timings.timed("stop rule"):
            line = apply_stop_rule(sweep, s, first=0)
        if line:
            sweep.log.write(line)
    sweep.decide_stop()  # after the start's compile
    while s.logs_done < sweep.total_logs and s.active.size:
        if sweep.stop_signal:
            stop(sweep, s)
        chunk = train_chunk(sweep, s)
        after_chunk(sweep, s, chunk)
        sweep.call_hooks("after_chunk", s, chunk)
    sweep.leave(s, s.active)
    for r in np.flatnonzero(np.isfinite(s.stopped)):  # a stopped run's metrics hold their value after its stop
        j = int(np.searchsorted(sweep.steps, s.stopped[r]))
        for v in s.buffer.values():
            stopping.hold_after(v[r], j)
    sweep.done_metrics.append(s.buffer)
    sweep.done_stopped.append(s.stopped)
    sweep.call_hooks("on_slice_end", s)
    if index < sweep.num_slices - 1:
        with sweep.timings.timed("checkpoint"):
            write_checkpoint(sweep, CheckpointAt(index + 1, 0, None, in_progress=False))


def empty_slice(sweep: Sweep, index: int, logs_done: int, active: np.ndarray, stopped: np.ndarray) -> RunSlice:
    lo, hi = sweep.bounds[index], sweep.bounds[index + 1]
    return RunSlice(
        index, lo, {k: v[lo:hi] for k, v in sweep.runs.items()}, {}, logs_done, active, stopped, slots=active
    )


def start_slice(sweep: Sweep, index: int) -> RunSlice:
    """Run slice `index` at step 0: every run training, the metrics of step 0 recorded."""
    size = sweep.bounds[index + 1] - sweep.bounds[index]
    s = empty_slice(sweep, index, 0, np.arange(size), np.full(size, np.nan))
    s.grid_run = sweep.program(s.take(s.slots))
    s.states, first = s.grid_run.start()
    s.buffer = {k: np.full((size, sweep.total_logs + 1), np.nan, np.asarray(v).dtype) for k, v in first.items()}
    for k, v in first.items():
        s.buffer[k][:, :1] = v
    if snapshots.requested(sweep.config):  # the snapshots of step 0, on the host (`snapshots.taken_at_start`)
        s.states = s.grid_run.place(snapshots.taken_at_start(host(s.states), first_logs(s.buffer), sweep.config))
    return s


def first_logs(buffer: dict) -> dict:
    """The metrics of step 0 of every run of a slice."""
    return {k: v[:, :1] for k, v in buffer.items()}


def resume_slice(sweep: Sweep, index: int, c: results.Checkpoint) -> RunSlice:
    """Run slice `index` where checkpoint `c` left it: its metrics, stopped runs, and the states of those still
    training placed in a program of their size."""
    size = sweep.bounds[index + 1] - sweep.bounds[index]
    s = empty_slice(sweep, index, c.logs_done, c.active.copy(), c.stopped.copy())
    s.resumed = True
    s.buffer = {k: np.full((size, sweep.total_logs + 1), np.nan, v.dtype) for k, v in c.metrics.items()}
    for k, v in c.metrics.items():
        s.buffer[k][:, : c.logs_done + 1] = v
    if s.active.size:
        s.grid_run = sweep.program(s.take(s.slots))
        structure = jax.tree.structure(jax.eval_shape(s.grid_run.init))  # the state's pytree, nothing computed
        s.states = s.grid_run.place(
            jax.tree.unflatten(structure, [pad_runs(x, s.grid_run.plan.padded_runs) for x in c.state_leaves])
        )
    return s


def train_chunk(sweep: Sweep, s: RunSlice) -> Chunk:
    """One chunk's compiled calls (`ChunkSizer`). A chunk stays within one segment of the logging schedule (its
    calls share the segment's static interval); a stop signal ends it after the calls it made."""
    live = np.isin(s.slots, s.active)  # the program's runs that still train (the others are padding now)
    chunk = Chunk(first=s.logs_done, runs=int(live.sum()), seconds=0.0, compiled=False)
    left, every = sweep.schedule.segment_at(s.logs_done)
    sweep.sizer.use(sweep.program_size, every)
    for n in sweep.sizer.next(left):
        if sweep.stop_signal:
            break
        took, compiled = call(sweep, s, live, n)
        chunk.seconds += took
        chunk.compiled |= compiled
        sweep.call_hooks("after_call", s, chunk.runs, n * every)
    return chunk


def call(sweep: Sweep, s: RunSlice, live: np.ndarray, n: int) -> tuple[float, bool]:
    """One compiled call of the next n log intervals (all in one segment of the schedule, whose interval it takes);
    its metrics go into the buffer rows of the live runs → (seconds, whether it compiled)."""
    left, every = sweep.schedule.segment_at(s.logs_done)
    assert n <= left, f"a call of {n} logs crosses the end of a schedule segment ({left} logs left in it)"
    tick = time.perf_counter()
    s.states, metrics = s.grid_run.advance(s.states, n, every)  # returns host arrays: the call has finished
    # every process sizes by process 0's clock, and stops for process 0's signal
    took, sweep.stop_signal = distributed.from_writer((time.perf_counter() - tick, signals.requested()))
    compiled = sweep.sizer.record(n, took)
    sweep.timings.add("compile" if compiled else "train", took)
    for k, v in metrics.items():
        s.buffer[k][s.slots[live], s.logs_done + 1 : s.logs_done + 1 + n] = v[live]
    s.logs_done += n
    sweep.where = (s.index, s.logs_done)
    return took, compiled


__all__ = ["Sweep", "joined", "train"]
