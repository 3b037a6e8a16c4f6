"""The training of one sweep (or of one bucket of a sweep over static axes, `nht_jax.training.buckets`): run slice after
run slice, chunk after chunk, runs leaving when a stop rule says so, checkpoints.

Run slices (memory). Before launch the memory of a run slice of M runs is estimated (state, compiled buffers,
metrics history, the shared data: `nht_jax.engine.memory`) and the run axis is cut into run slices that fit
`execution.memory_cap_gib`. The plan ("R runs in K run slices of ≤ M runs, estimated X GiB per run slice against a
cap of Y GiB") is printed and written into the "started" line of progress.log. Run slices run one after another,
each chunk by chunk (`nht_jax.training.chunks`), every one in the same compiled program (a smaller last run slice is
padded by repeating a run); after each but the last a checkpoint records it done, so a sweep killed in run slice 3
resumes in run slice 3 (at its own last checkpoint, or at its start). Runs are independent, so the results are the
run slices' metrics concatenated in run order, the same as one run slice's (bit for bit under strategy "map"). A
checkpoint keeps the bounds it was written under for the run slices it covers; a resume under another cap cuts only
the rest anew.

Chunks (time). Each chunk advances every run of the slice by some log intervals of one segment of the logging schedule
(`nht_jax.engine.schedule`; the logged steps are `trainer.schedule.steps`) in one compiled call (or a few);
between chunks Python updates the progress bar, appends a line to progress.log (`nht_jax.training.progress`) and, every
`execution.checkpoint_every_s` seconds, writes a checkpoint atomically (run states without the execution plan's
padding, so a resume may use another plan; `nht_jax.results.folder.Checkpoint`).

Stop rules (`execution.stop_rule`, `nht_jax.measure.stopping`). After every chunk the runs still training are checked;
those that met the rule leave the batch, and when some did the others are re-packed into a program of the power of
two at or above their number (at most the run slice's size; padding repeats a run, as `pad_runs` does), so each
distinct size compiles once. A stopped run's metrics after its stopped_step hold their value at it; the runs that
continue give exactly an uninterrupted sweep's metrics (under "map"). progress.log gets one line per group of runs
stopped ("stop rule (transition) after step S: run 3 at step 2400, …; 5 run(s) still training"), and the "N runs"
of a chunk line counts those trained in it.

Signals (`nht_jax.training.signals`). Under `signals.stop_on_signals` (as `nht run` trains), a SIGINT, SIGTERM or SIGHUP
is acted on at the next boundary between compiled calls: before the first compile, after the start's compile,
after any call of a chunk (the chunk's line is written for the calls it made), and between run slices. There the
slice in progress gets a checkpoint unless the last one holds it already (always, not only when one is due: the
states are on the host after each call, and a stop asked for is when the work trained should be kept), progress.log
gets "stopped (SIGTERM) at step S of T, the last completed step; run the same command again to resume from the
checkpoint at step S", and `signals.Stopped` is raised (exit code 128 + the signal). A signal during the last call
of the sweep lets it finish: its results are written. A second signal ends the process at once
(`signals.StopSignals.last_words`: the line names the last completed step and the last checkpoint).

Snapshots (`nht_jax.training.snapshots`, with `execution.snapshot_steps` or `snapshot_at_fit`): the trainer carries them
in its states (taken inside the compiled scan); when runs leave training (a stop rule, the end of their run slice)
their snapshots move into `Training.snapshots`, which is written to snapshots.npz before every checkpoint, so a
resumed sweep has every snapshot taken before the kill (those of runs still training are in the checkpoint's states).

Several processes: whatever is decided from a clock or a file is process 0's decision, sent to all (chunk sizes
from its timings, when a checkpoint is due, the memory plan); metrics and states come back from each compiled call
gathered in full to every process, so the stop rule decides the same everywhere. Whether to stop for a signal is
process 0's decision too (sent with its clock after each call).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np
from tqdm import tqdm

from nht_jax.engine import distributed, memory
from nht_jax.engine.executor import GridRun, host, pad_runs
from nht_jax.engine.executor import plan as execution_plan
from nht_jax.experiment import Config
from nht_jax.results import folder as results
from nht_jax.training import signals
from nht_jax.training import snapshots
from nht_jax.measure import stopping
from nht_jax.training.chunks import ChunkSizer
from nht_jax.training.live import after_chunk as update_live_table
from nht_jax.training.progress import PROGRESS_LOG, ProgressLog

CHECKPOINT = "checkpoint.npz"


class Bucket(NamedTuple):
    """One bucket of a sweep over static axes, as its Training sees it: which (index of count, the static values),
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
    """Metrics of consecutive blocks of runs, each {name: (runs, L)}, concatenated along the run axis."""
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

    def take(self, rows) -> dict:
        return {k: v[rows] for k, v in self.runs.items()}


class Training:
    """The training of one sweep (module docstring). `run()` → (metrics {name: (runs, logs + 1)}, stopped_step
    (runs,), training wall seconds)."""

    def __init__(self, config: Config, trainer, runs: dict, data, out: Path, digest: str,
                 bucket: Bucket | None = None):
        self.config, self.trainer, self.out, self.digest, self.bucket = config, trainer, out, digest, bucket
        self.runs = {k: np.asarray(v) for k, v in runs.items()}
        self.num_runs = int(jax.tree.leaves(self.runs)[0].shape[0])
        self.schedule = trainer.schedule  # the logged steps (`nht_jax.engine.schedule`)
        self.total_logs, self.steps = trainer.num_logs, trainer.schedule.steps
        self.program_size = 0                # the runs of the compiled program in use (`program`)
        self.stop = stopping.StopRule(config.execution, config.analysis)
        self.checkpoint = (bucket.checkpoint if bucket is not None  # read by train_buckets
                           else distributed.writer_does(  # a broken one fails here; process 0's reaches all
                               lambda: results.read_checkpoint(out / CHECKPOINT, digest)))
        self.memory = distributed.writer_does(  # one plan for every process (the cap comes from process 0's host)
            lambda: memory.plan_run_slices(trainer, self.runs, data, config.execution, self.total_logs + 1))
        self.bounds = self._bounds()
        self.num_slices = len(self.bounds) - 1
        self.slice_size = max(b - a for a, b in zip(self.bounds, self.bounds[1:]))  # runs of the largest run slice
        self.plan_description = execution_plan(config.execution, self.slice_size).describe()
        self.sizer = ChunkSizer(config.execution)
        self.log = ProgressLog(out / PROGRESS_LOG)
        self.programs: dict[int, GridRun] = {}
        self.done_metrics: list[dict] = []   # per finished run slice: {name: (its runs, logs + 1)}
        self.done_stopped: list[np.ndarray] = []
        self.checkpoint_at = None            # (run slice, logs) of the last checkpoint written or resumed from
        self.where = (0, 0)                  # (run slice, logs done) now
        self.stop_signal = None              # the stop signal process 0 received (`nht_jax.training.signals`), or None
        kinds = snapshots.kinds(config.execution)
        self.snapshots = None if not kinds else (  # the snapshots of runs done training (`nht_jax.training.snapshots`)
            distributed.writer_does(lambda: snapshots.Store.resumed(out, digest, kinds, self.num_runs))
            if self.checkpoint is not None else snapshots.Store(kinds, self.num_runs))

    def _bounds(self) -> list[int]:
        """The run slices' boundaries: the memory plan's, or a checkpoint's for what it covers (finished run slices
        and the one in progress), the memory plan's for the rest."""
        size, c = self.memory.runs_per_slice, self.checkpoint
        if c is None:
            return memory.split(0, self.num_runs, size)
        keep = c.bounds[: c.run_slice + (2 if c.in_progress else 1)]
        return keep + memory.split(keep[-1], self.num_runs, size)[1:]

    # ------------------------------------------------------------------ words

    def label(self, index: int) -> str:
        """" (run slice k/K)" when there are several, then " in bucket b/B (width = 64)" with static axes."""
        text = f" (run slice {index + 1}/{self.num_slices})" if self.num_slices > 1 else ""
        return text + self.in_bucket()

    def last_completed(self) -> str:
        """"step S of T" (with run slice and bucket) where training stands now: the last completed call's step."""
        return self.at(*self.where, of_total=True)

    def rerun_text(self) -> str:
        """What running the same command again does: resume from the last checkpoint, or start at step 0."""
        if self.checkpoint_at is None:
            return "run the same command again to start from step 0 (no checkpoint yet)"
        return f"run the same command again to resume from the checkpoint at {self.at(*self.checkpoint_at)}"

    def in_bucket(self) -> str:
        return f" in {self.bucket.label}" if self.bucket is not None else ""

    def at(self, index: int, logs: int, of_total: bool = False) -> str:
        """"step S" (of_total: "step S of T"), then " in run slice k/K" when there are several, then
        " in bucket b/B (width = 64)" with static axes."""
        text = f"step {self.steps[logs]}" + (f" of {self.config.train.steps}" if of_total else "")
        text = text if self.num_slices == 1 else f"{text} in run slice {index + 1}/{self.num_slices}"
        return text + self.in_bucket()

    # ------------------------------------------------------------------ the sweep

    def run(self, progress: bool, overwrite: bool):
        c = self.checkpoint
        first = 0 if c is None else c.run_slice
        if c is not None and c.run_slice > 0:
            self.done_metrics.append(dict(c.done_metrics))
            self.done_stopped.append(np.asarray(c.done_stopped, float))
        self.announce(overwrite)
        self.open_bar(progress, first)
        self.start = self.last_checkpoint = time.time()
        report = signals.Report(self.log.write, self.last_completed, self.rerun_text)
        try:
            with signals.reporting(report):
                self.stop_if_asked()  # a signal during start-up (data, memory plan): stop before the first compile
                for index in range(first, self.num_slices):
                    resume = c if (c is not None and c.in_progress and c.run_slice == index) else None
                    self.train_slice(index, resume)
                    if index < self.num_slices - 1:
                        self.save(index + 1, 0, None, None, None, None, in_progress=False)
                        self.log.write(f"run slice {index + 1}/{self.num_slices} done (runs {self.bounds[index]}–"
                                       f"{self.bounds[index + 1] - 1}); checkpoint written")
                        self.stop_if_asked()
        except signals.Stopped as e:
            text = f"stopped ({signals.signal_name(e.signum)}) at {self.last_completed()}, the last completed step; "
            self.log.write(text + self.rerun_text())
            raise signals.Stopped(e.signum, text + self.rerun_text()) from None
        except BaseException as e:
            self.log.write(f"stopped ({type(e).__name__}) at {self.at(*self.where, of_total=True)}; " + (
                "no checkpoint yet: running again starts from step 0" if self.checkpoint_at is None else
                f"running again resumes from the checkpoint at {self.at(*self.checkpoint_at)}"))
            raise
        finally:
            self.bar.close()
        wall = time.time() - self.start
        return joined(self.done_metrics), np.concatenate(self.done_stopped), wall

    def announce(self, overwrite: bool) -> None:
        """The "started" line (and "resumed at …" from a checkpoint) in progress.log; the memory plan on stdout."""
        config, c = self.config, self.checkpoint
        self.log.write(
            f"started nht run {config.name}{self.in_bucket()}: {self.num_runs} runs × {config.train.steps} steps, "
            f"{self.log_text()}, {self.plan_description}, {self.sizer.describe()}; memory: "
            f"{self.memory.describe()}{'; ' + self.stop.describe() if self.stop.active else ''}; pid {os.getpid()} "
            f"on {socket.gethostname()}{' (--overwrite)' if overwrite else ''}")
        writer = distributed.is_writer()
        if writer:
            print(f"memory: {self.memory.describe()}", flush=True)  # the last line before the first compile
        if c is not None:
            self.checkpoint_at = (c.run_slice, c.logs_done if c.in_progress else 0)
            where = self.at(*self.checkpoint_at, of_total=True)
            if writer:
                print(f"resuming {self.out} at {where}")
            self.log.write(f"resumed at {where} from {CHECKPOINT}")

    def log_text(self) -> str:
        """"log every 50" (one interval), or "log every 5 steps to step 500, then every 50 to step 5000"."""
        return f"log {self.schedule.short()}"

    def open_bar(self, progress: bool, first: int) -> None:
        """The progress bar (process 0 only), started at the run·steps a checkpoint holds."""
        c, steps = self.checkpoint, self.config.train.steps
        done_runs = self.bounds[first]
        initial = done_runs * steps
        if c is not None and c.in_progress:
            initial += (self.bounds[first + 1] - done_runs) * int(self.steps[c.logs_done])
        self.bar = tqdm(total=self.num_runs * steps, initial=initial, unit="run·step", unit_scale=True,
                        disable=not (progress and distributed.is_writer()), dynamic_ncols=True,
                        desc=f"{self.config.name}{self.in_bucket()}: {self.num_runs} runs, {self.plan_description}")

    def save(self, index: int, logs_done: int, leaves, metrics, active, stopped, in_progress: bool = True) -> None:
        """Write checkpoint.npz (`results.Checkpoint`): the finished run slices, and run slice `index` (in progress,
        or next to start)."""
        extra = {"bounds": np.asarray(self.bounds), "run_slice": index, "in_progress": in_progress,
                 "active": np.asarray(active if active is not None else [], int),
                 "stopped": np.asarray(stopped if stopped is not None else [], float),
                 "done_metrics": joined(self.done_metrics) if self.done_metrics else {},
                 "done_stopped": np.concatenate(self.done_stopped) if self.done_stopped else np.zeros(0)}
        if self.bucket is not None:
            extra.update(bucket=self.bucket.index, bucket_metrics=self.bucket.done_metrics,
                         bucket_stopped=self.bucket.done_stopped)
        if distributed.is_writer():
            if self.snapshots is not None:  # first: whatever the checkpoint counts as done has its snapshots on disk
                self.snapshots.write(self.out, self.digest)
            results.save_checkpoint(self.out / CHECKPOINT, self.digest, logs_done, leaves or [], metrics or {}, extra)
        self.last_checkpoint, self.checkpoint_at = time.time(), (index, logs_done)

    def program(self, runs: dict) -> GridRun:
        """A compiled program for these runs (one per size: the largest run slice's, or with a stop rule the power
        of two at or above the runs left, at most that), with its own compiled call sizes in the sizer."""
        count = int(jax.tree.leaves(runs)[0].shape[0])
        size = self.slice_size if not self.stop.active else min(self.slice_size, next_power_of_two(count))
        if size not in self.programs:
            self.programs[size] = GridRun(self.trainer, pad_runs(runs, size), self.config.execution)
        self.program_size = size
        self.sizer.use(size, self.sizer.every)
        return self.programs[size].with_runs(runs)

    # ------------------------------------------------------------------ one run slice

    def train_slice(self, index: int, resume: results.Checkpoint | None) -> None:
        """Train run slice `index` to the end (or until every run of it stopped), from its start or from the
        checkpoint `resume`; append its metrics and stopped steps to the finished ones."""
        s = self.start_slice(index) if resume is None else self.resume_slice(index, resume)
        self.where = (index, s.logs_done)
        if resume is None:
            training = s.active
            self.note(self.apply_stop_rule(s, first=0))
            self.keep_snapshots(s, training[~np.isin(training, s.active)])
        self.decide_stop()  # after the start's compile
        while s.logs_done < self.total_logs and s.active.size:
            if self.stop_signal:
                self.stop_here(s)
            self.train_chunk(s)
        self.keep_snapshots(s, s.active)
        for r in np.flatnonzero(np.isfinite(s.stopped)):  # a stopped run's metrics hold their value after its stop
            j = int(np.searchsorted(self.steps, s.stopped[r]))
            for v in s.buffer.values():
                stopping.hold_after(v[r], j)
        self.done_metrics.append(s.buffer)
        self.done_stopped.append(s.stopped)

    def empty_slice(self, index: int, logs_done: int, active: np.ndarray, stopped: np.ndarray) -> RunSlice:
        lo, hi = self.bounds[index], self.bounds[index + 1]
        return RunSlice(index, lo, {k: v[lo:hi] for k, v in self.runs.items()}, {}, logs_done, active, stopped,
                        slots=active)

    def start_slice(self, index: int) -> RunSlice:
        """Run slice `index` at step 0: every run training, the metrics of step 0 recorded."""
        size = self.bounds[index + 1] - self.bounds[index]
        s = self.empty_slice(index, 0, np.arange(size), np.full(size, np.nan))
        s.grid_run = self.program(s.take(s.slots))
        s.states, first = s.grid_run.start()
        if self.snapshots is not None:  # the snapshots of step 0, on the host (`snapshots.taken_at_start`)
            s.states = s.grid_run.place(snapshots.taken_at_start(host(s.states), first, self.config))
        s.buffer = {k: np.full((size, self.total_logs + 1), np.nan, np.asarray(v).dtype) for k, v in first.items()}
        for k, v in first.items():
            s.buffer[k][:, :1] = v
        return s

    def resume_slice(self, index: int, c: results.Checkpoint) -> RunSlice:
        """Run slice `index` where checkpoint `c` left it: its metrics, stopped runs, and the states of those
        still training placed in a program of their size."""
        size = self.bounds[index + 1] - self.bounds[index]
        s = self.empty_slice(index, c.logs_done, c.active.copy(), c.stopped.copy())
        s.buffer = {k: np.full((size, self.total_logs + 1), np.nan, v.dtype) for k, v in c.metrics.items()}
        for k, v in c.metrics.items():
            s.buffer[k][:, : c.logs_done + 1] = v
        if s.active.size:
            s.grid_run = self.program(s.take(s.slots))
            structure = jax.tree.structure(jax.eval_shape(s.grid_run.init))  # the state's pytree, nothing computed
            s.states = s.grid_run.place(jax.tree.unflatten(structure, [pad_runs(x, s.grid_run.plan.padded_runs)
                                                                       for x in c.state_leaves]))
        return s

    def train_chunk(self, s: RunSlice) -> None:
        """One chunk: its compiled calls, then the stop rule, re-packing, a checkpoint when due, the log line. A chunk
        stays within one segment of the logging schedule (its calls share the segment's static interval)."""
        live = np.isin(s.slots, s.active)  # the program's runs that still train (the others are padding now)
        seconds, compiled, before = 0.0, False, s.logs_done
        left, every = self.schedule.segment_at(s.logs_done)
        self.sizer.use(self.program_size, every)
        for n in self.sizer.next(left):
            if self.stop_signal:  # a signal: the chunk ends after the calls it made (train_slice stops there)
                break
            took, new_size = self.call(s, live, n)
            seconds += took
            compiled |= new_size
        training_before, training = s.active.size, s.active
        stop_note = self.apply_stop_rule(s, first=before + 1)
        self.keep_snapshots(s, training[~np.isin(training, s.active)])  # before re-packing drops their states
        if s.active.size < training_before and s.active.size and not self.stop_signal:
            self.repack(s)
        wrote_checkpoint = self.checkpoint_if_due(s)
        n = s.logs_done - before
        self.log.chunk(int(self.steps[s.logs_done]), self.config.train.steps, int(live.sum()), n,
                       int(self.steps[s.logs_done] - self.steps[before]),
                       seconds, compiled, time.time() - self.start, wrote_checkpoint, s.grid_run.plan.devices,
                       self.label(s.index))
        self.note(stop_note)
        update_live_table(self, s)  # live.csv, live.png, a progress.log line (`nht_jax.training.live`)

    def call(self, s: RunSlice, live: np.ndarray, n: int) -> tuple[float, bool]:
        """One compiled call of the next n log intervals (all in one segment of the schedule, whose interval it
        takes); its metrics go into the buffer rows of the live runs → (seconds, whether it compiled)."""
        left, every = self.schedule.segment_at(s.logs_done)
        assert n <= left, f"a call of {n} logs crosses the end of a schedule segment ({left} logs left in it)"
        tick = time.perf_counter()
        s.states, metrics = s.grid_run.advance(s.states, n, every)  # returns host arrays: the call has finished
        # every process sizes by process 0's clock, and stops for process 0's signal
        took, self.stop_signal = distributed.from_writer((time.perf_counter() - tick, signals.requested()))
        compiled = self.sizer.record(n, took)
        for k, v in metrics.items():
            s.buffer[k][s.slots[live], s.logs_done + 1: s.logs_done + 1 + n] = v[live]
        s.logs_done += n
        self.where = (s.index, s.logs_done)
        self.bar.update(int(live.sum()) * n * every)
        return took, compiled

    def keep_snapshots(self, s: RunSlice, rows: np.ndarray) -> None:
        """Move the snapshots of the slice's runs `rows` (indices within the slice, leaving training) into the
        store."""
        if self.snapshots is None or not len(rows) or s.states is None:
            return
        positions = np.searchsorted(s.slots, rows)  # slots holds every run still in the program, in order
        captured = jax.tree.map(lambda x: np.asarray(x)[positions], host(s.states))
        self.snapshots.keep(s.lo + np.asarray(rows), captured, s.stopped[rows])

    def active_leaves(self, s: RunSlice) -> list:
        """The flattened states (on the host) of the runs still training, in order, without the padding."""
        rows = np.flatnonzero(np.isin(s.slots, s.active))  # slots holds every active run, in order
        return [x[rows] for x in jax.tree.leaves(host(s.states))]

    def repack(self, s: RunSlice) -> None:
        """Move the runs still training into the program of their size (compiles only a new size)."""
        kept = self.active_leaves(s)
        structure = jax.tree.structure(s.states)
        s.grid_run = self.program(s.take(s.active))
        s.states = s.grid_run.place(jax.tree.unflatten(structure, [pad_runs(x, s.grid_run.plan.padded_runs)
                                                                   for x in kept]))
        s.slots = s.active

    def decide_stop(self) -> int | None:
        """Whether to stop for a signal (process 0's, for every process): its number, or None."""
        self.stop_signal = distributed.from_writer(signals.requested())
        return self.stop_signal

    def stop_if_asked(self) -> None:
        if self.decide_stop():
            raise signals.Stopped(self.stop_signal)

    def stop_here(self, s: RunSlice) -> None:
        """Stop between compiled calls for the signal received: a checkpoint of the slice in progress unless the
        last one holds it already or nothing of it was trained, then `signals.Stopped` (`run` says where)."""
        if s.logs_done > 0 and self.checkpoint_at != (s.index, s.logs_done):
            self.save(s.index, s.logs_done, self.active_leaves(s),
                      {k: v[:, : s.logs_done + 1] for k, v in s.buffer.items()}, s.active, s.stopped)
        raise signals.Stopped(self.stop_signal)

    def checkpoint_if_due(self, s: RunSlice) -> bool:
        """Write a checkpoint of the slice in progress when `execution.checkpoint_every_s` has passed (process 0's
        clock decides for all) and it has runs left to train; whether one was written."""
        due = distributed.from_writer(time.time() - self.last_checkpoint > self.config.execution.checkpoint_every_s)
        if not (due and s.logs_done < self.total_logs and s.active.size):
            return False
        self.save(s.index, s.logs_done, self.active_leaves(s),
                  {k: v[:, : s.logs_done + 1] for k, v in s.buffer.items()}, s.active, s.stopped)
        return True

    def apply_stop_rule(self, s: RunSlice, first: int) -> str:
        """Apply the stop rule to the active runs on logs [first, logs_done]: mark the runs that stop (their stop step,
        their metrics held after it) and remove them from `s.active`; a progress.log line ("" if none stopped)."""
        if not self.stop.active or not s.active.size:
            return ""
        steps = self.steps[: s.logs_done + 1]
        leaving = []
        for r in s.active:
            j = self.stop.stop_log(steps, {k: v[r, : s.logs_done + 1] for k, v in s.buffer.items()}, first)
            if j is not None and j < self.total_logs:  # meeting it at the very last log is training the budget
                s.stopped[r] = self.steps[j]
                for v in s.buffer.values():
                    v[r, j + 1: s.logs_done + 1] = v[r, j]
                leaving.append(r)
        if not leaving:
            return ""
        s.active = s.active[~np.isin(s.active, leaving)]
        self.bar.update(len(leaving) * int(self.steps[-1] - self.steps[s.logs_done]))  # never trained
        names = ", ".join(f"run {s.lo + r} at step {int(s.stopped[r])}" for r in leaving)
        return (f"stop rule ({self.config.execution.stop_rule}) after {self.at(s.index, s.logs_done)}: "
                f"{names}; {s.active.size} run(s) still training{self.label(s.index)}")

    def note(self, line: str) -> None:
        if line:
            self.log.write(line)


__all__ = ["Bucket", "RunSlice", "Training", "describe_values", "joined", "next_power_of_two"]
