"""The hooks of the sweep loop (`nht_jax.training.loop`): one per job, called at the loop's points, each describing its
part of meta.json (`describe`).

    SnapshotsHook   the snapshots of runs leaving training into the store (`nht_jax.training.snapshots`), written to
                    snapshots.npz before every checkpoint and at the end; meta.json's "snapshots"
    StopRuleHook    `execution.stop_rule` (`nht_jax.measure.stopping`): runs leave the batch, those left are re-packed;
                    one progress.log line per group; meta.json's "stop_rule" and "runs_stopped"
    CheckpointHook  checkpoint.npz (`results.save_checkpoint`): every `execution.checkpoint_every_s` (process 0's
                    clock), between run slices ("run slice k/K done … checkpoint written"), and on a stop
    ProgressHook    the "started" (and "resumed at") lines, the progress bar, one line per chunk
                    (`nht_jax.training.progress`), and the line of a failure ("stopped (OSError) at …")
    LiveTableHook   the live table after each chunk (`nht_jax.training.live`; nothing with `execution.live = false`)
    SignalsHook     stop signals (`nht_jax.training.signals`): the watcher's lines name where training stands; on a
                    stop, the line "stopped (SIGTERM) at step S of T, …" and `signals.Stopped` with it

`default_hooks` puts them in that order, which the loop's points rely on: the snapshots of step 0 are taken before
the stop rule first looks; runs leave (their snapshots kept) before the others are re-packed and before a
checkpoint; the chunk's line names the checkpoint written after it and comes before the stop rule's and the live
table's lines; on a stop the checkpoint is written before the stop line.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time

import numpy as np
from tqdm import tqdm

from nht_jax.base.errors import ConfigError
from nht_jax.engine import distributed
from nht_jax.engine.executor import host
from nht_jax.engine.optim import log_contraction
from nht_jax.training import live
from nht_jax import experiment
from nht_jax.results import folder as results
from nht_jax.training import signals
from nht_jax.training import snapshots
from nht_jax.measure import stopping
from nht_jax.training.loop import CHECKPOINT, Chunk, RunSlice, Sweep, joined


class Hook:
    """A hook of the sweep loop: every point does nothing; a hook overrides the points it needs (`nht_jax.training.loop`
    lists them and when they come). `part`: the name its time is counted under in meta.json's "profile"
    (`nht_jax.training.timings`)."""

    part = "hooks"

    def on_start(self, sweep: Sweep) -> None:
        """Once, before anything is compiled."""

    def on_slice_start(self, sweep: Sweep, s: RunSlice) -> None:
        """A run slice started (its step 0 evaluated) or resumed (`s.resumed`)."""

    def after_call(self, sweep: Sweep, s: RunSlice, runs: int, steps: int) -> None:
        """A compiled call returned: `runs` runs trained `steps` steps each."""

    def on_leave(self, sweep: Sweep, s: RunSlice, rows: np.ndarray) -> None:
        """Runs `rows` of the slice leave training; their states are still in the program."""

    def after_chunk(self, sweep: Sweep, s: RunSlice, chunk: Chunk) -> None:
        """A chunk's compiled calls returned."""

    def on_checkpoint(self, sweep: Sweep) -> None:
        """checkpoint.npz is about to be written (process 0)."""

    def on_slice_end(self, sweep: Sweep, s: RunSlice) -> None:
        """A run slice finished; its metrics are among the done ones."""

    def on_stop(self, sweep: Sweep, s: RunSlice | None, signum: int) -> None:
        """A stop signal is acted on, with the run slice in progress (None: before or between run slices)."""

    def on_error(self, sweep: Sweep, error: BaseException) -> None:
        """Anything but a stop signal was raised."""

    def on_end(self, sweep: Sweep, finished: bool) -> None:
        """Always, last; `finished`: every run trained to its end."""

    def describe(self) -> dict:
        """This hook's part of meta.json."""
        return {}


class SnapshotsHook(Hook):
    """The snapshots of runs that left training (`snapshots.Store`): those of step 0 taken on the host when a run
    slice starts, each run's moved into the store as it leaves (a snapshot after its stopped_step is dropped), the
    store written to snapshots.npz before every checkpoint and once more at the end."""

    part = "snapshots"

    def __init__(self):
        self.store: snapshots.Store | None = None

    def on_start(self, sweep: Sweep) -> None:
        kinds = snapshots.kinds(sweep.config.execution)
        self.store = (distributed.writer_does(lambda: snapshots.Store.resumed(sweep.out, sweep.digest, kinds,
                                                                              sweep.num_runs))
                      if sweep.checkpoint is not None else snapshots.Store(kinds, sweep.num_runs))

    def on_slice_start(self, sweep: Sweep, s: RunSlice) -> None:
        if not s.resumed:  # the snapshots of step 0, on the host (`snapshots.taken_at_start`)
            first = {k: v[:, :1] for k, v in s.buffer.items()}
            s.states = s.grid_run.place(snapshots.taken_at_start(host(s.states), first, sweep.config))

    def on_leave(self, sweep: Sweep, s: RunSlice, rows: np.ndarray) -> None:
        if s.states is not None:
            self.store.keep(s.lo + rows, sweep.states_of(s, rows), s.stopped[rows])

    def on_checkpoint(self, sweep: Sweep) -> None:
        self.store.write(sweep.out, sweep.digest)  # first: what the checkpoint counts as done has its snapshots

    def on_end(self, sweep: Sweep, finished: bool) -> None:
        if finished and distributed.is_writer():  # with the results, before meta.json lists it
            self.store.drop_after(np.arange(sweep.num_runs), np.concatenate(sweep.done_stopped))  # resumed ones too
            self.store.write(sweep.out, sweep.digest)

    def describe(self) -> dict:
        return {"snapshots": self.store.describe()}


class StopRuleHook(Hook):
    """`execution.stop_rule` (`stopping.StopRule`): after the start and after every chunk, the runs that met the
    rule leave (their stop step set, their metrics held after it); when some did, those still training are
    re-packed into a program of their size (`Sweep.repack`), unless a stop signal is pending."""

    part = "stop rule"

    def __init__(self, rule: stopping.StopRule, name: str):
        self.rule, self.name = rule, name
        self.runs_stopped = 0

    def on_slice_start(self, sweep: Sweep, s: RunSlice) -> None:
        if not s.resumed:
            line = self.apply(sweep, s, first=0)
            if line:
                sweep.log.write(line)

    def after_chunk(self, sweep: Sweep, s: RunSlice, chunk: Chunk) -> None:
        training_before = s.active.size
        line = self.apply(sweep, s, first=chunk.first + 1)
        if line:
            chunk.notes.append(line)  # after the chunk's own line
        if s.active.size < training_before and s.active.size and not sweep.stop_signal:
            sweep.repack(s)

    def apply(self, sweep: Sweep, s: RunSlice, first: int) -> str:
        """Apply the rule to the active runs on logs [first, logs_done]: the runs that stop get their stop step and
        their metrics held after it, and leave (`Sweep.leave`); a progress.log line ("" if none stopped)."""
        if not s.active.size:
            return ""
        steps = sweep.steps[: s.logs_done + 1]
        leaving = []
        for r in s.active:
            j = self.rule.stop_log(steps, {k: v[r, : s.logs_done + 1] for k, v in s.buffer.items()}, first)
            if j is not None and j < sweep.total_logs:  # meeting it at the very last log is training the budget
                s.stopped[r] = sweep.steps[j]
                for v in s.buffer.values():
                    v[r, j + 1: s.logs_done + 1] = v[r, j]
                leaving.append(r)
        if not leaving:
            return ""
        sweep.leave(s, leaving)
        names = ", ".join(f"run {s.lo + r} at step {int(s.stopped[r])}" for r in leaving)
        return (f"stop rule ({self.name}) after {sweep.at(s.index, s.logs_done)}: {names}; {s.active.size} run(s) "
                f"still training{sweep.label(s.index)}")

    def on_end(self, sweep: Sweep, finished: bool) -> None:
        if finished:
            earlier = [sweep.bucket.done_stopped] if sweep.bucket is not None else []  # the buckets before this one
            self.runs_stopped = int(np.isfinite(np.concatenate([*earlier, *sweep.done_stopped])).sum())

    def describe(self) -> dict:
        return {"stop_rule": self.rule.describe(), "runs_stopped": self.runs_stopped}


class CheckpointHook(Hook):
    """checkpoint.npz (`results.Checkpoint`): of the slice in progress when `execution.checkpoint_every_s` has
    passed since the last one (process 0's clock decides for all) and it has runs left to train; of the finished
    run slices between run slices; of the slice in progress on a stop, unless the last one holds it already or
    nothing of it was trained. The hooks' `on_checkpoint` (snapshots.npz) come first."""

    part = "checkpoint"

    def __init__(self):
        self.last = time.time()  # when the last checkpoint was written (or training started)

    def on_start(self, sweep: Sweep) -> None:
        self.last = time.time()

    def after_chunk(self, sweep: Sweep, s: RunSlice, chunk: Chunk) -> None:
        due = distributed.from_writer(time.time() - self.last > sweep.config.execution.checkpoint_every_s)
        if due and s.logs_done < sweep.total_logs and s.active.size:
            self.save_slice(sweep, s)
            chunk.checkpoint = True

    def on_slice_end(self, sweep: Sweep, s: RunSlice) -> None:
        if s.index < sweep.num_slices - 1:
            self.save(sweep, s.index + 1, 0, None, None, None, None, in_progress=False)
            sweep.log.write(f"run slice {s.index + 1}/{sweep.num_slices} done (runs {sweep.bounds[s.index]}–"
                            f"{sweep.bounds[s.index + 1] - 1}); checkpoint written")

    def on_stop(self, sweep: Sweep, s: RunSlice | None, signum: int) -> None:
        if s is not None and s.logs_done > 0 and sweep.checkpoint_at != (s.index, s.logs_done):
            self.save_slice(sweep, s)

    def save_slice(self, sweep: Sweep, s: RunSlice) -> None:
        self.save(sweep, s.index, s.logs_done, sweep.active_leaves(s),
                  {k: v[:, : s.logs_done + 1] for k, v in s.buffer.items()}, s.active, s.stopped)

    def save(self, sweep: Sweep, index: int, logs_done: int, leaves, metrics, active, stopped,
             in_progress: bool = True) -> None:
        """Write checkpoint.npz: the finished run slices, and run slice `index` (in progress, or next to start)."""
        extra = {"bounds": np.asarray(sweep.bounds), "run_slice": index, "in_progress": in_progress,
                 "active": np.asarray(active if active is not None else [], int),
                 "stopped": np.asarray(stopped if stopped is not None else [], float),
                 "done_metrics": joined(sweep.done_metrics) if sweep.done_metrics else {},
                 "done_stopped": np.concatenate(sweep.done_stopped) if sweep.done_stopped else np.zeros(0)}
        if sweep.bucket is not None:
            extra.update(bucket=sweep.bucket.index, bucket_metrics=sweep.bucket.done_metrics,
                         bucket_stopped=sweep.bucket.done_stopped)
        else:  # the configuration, so that the unfinished folder can be read and resumed (`results.read_unfinished`)
            extra[results.CONFIG_KEY] = experiment.to_toml(sweep.config)
        if distributed.is_writer():
            sweep.call_hooks("on_checkpoint")
            results.save_checkpoint(sweep.out / CHECKPOINT, sweep.digest, logs_done, leaves or [], metrics or {},
                                    extra)
        self.last, sweep.checkpoint_at = time.time(), (index, logs_done)


class ProgressHook(Hook):
    """The "started" line (and "resumed at …" from a checkpoint) in progress.log and the memory plan on stdout; the
    progress bar (process 0, with `progress`); one progress.log line per chunk, then the lines the other hooks
    added to it; the line of a failure."""

    part = "progress"

    def __init__(self, progress: bool, overwrite: bool):
        self.progress, self.overwrite = progress, overwrite
        self.bar = None

    def on_start(self, sweep: Sweep) -> None:
        config, c = sweep.config, sweep.checkpoint
        rule = stopping.StopRule(config.execution, config.analysis)
        sweep.log.write(
            f"started nht run {config.name}{sweep.in_bucket()}: {sweep.num_runs} runs × {config.train.steps} steps, "
            f"log {sweep.schedule.short()}, {sweep.plan_description}, {sweep.sizer.describe()}; memory: "
            f"{sweep.memory.describe()}{'; ' + rule.describe() if rule.active else ''}; pid {os.getpid()} "
            f"on {socket.gethostname()}{' (--overwrite)' if self.overwrite else ''}")
        writer = distributed.is_writer()
        if writer:
            print(f"memory: {sweep.memory.describe()}", flush=True)  # the last line before the first compile
        if c is not None:
            where = sweep.at(*sweep.checkpoint_at, of_total=True)
            if writer:
                print(f"resuming {sweep.out} at {where}")
            sweep.log.write(f"resumed at {where} from {CHECKPOINT}")
        self.bar = self.open_bar(sweep)

    def open_bar(self, sweep: Sweep) -> tqdm:
        """The progress bar, started at the run·steps a checkpoint holds."""
        c, steps = sweep.checkpoint, sweep.config.train.steps
        first = 0 if c is None else c.run_slice
        done_runs = sweep.bounds[first]
        initial = done_runs * steps
        if c is not None and c.in_progress:
            initial += (sweep.bounds[first + 1] - done_runs) * int(sweep.steps[c.logs_done])
        return tqdm(total=sweep.num_runs * steps, initial=initial, unit="run·step", unit_scale=True,
                    disable=not (self.progress and distributed.is_writer()), dynamic_ncols=True,
                    desc=f"{sweep.config.name}{sweep.in_bucket()}: {sweep.num_runs} runs, {sweep.plan_description}")

    def after_call(self, sweep: Sweep, s: RunSlice, runs: int, steps: int) -> None:
        self.bar.update(runs * steps)

    def on_leave(self, sweep: Sweep, s: RunSlice, rows: np.ndarray) -> None:
        self.bar.update(len(rows) * int(sweep.steps[-1] - sweep.steps[s.logs_done]))  # never trained

    def after_chunk(self, sweep: Sweep, s: RunSlice, chunk: Chunk) -> None:
        steps = sweep.steps
        sweep.log.chunk(int(steps[s.logs_done]), sweep.config.train.steps, chunk.runs, s.logs_done - chunk.first,
                        int(steps[s.logs_done] - steps[chunk.first]), chunk.seconds, chunk.compiled,
                        time.time() - sweep.start, chunk.checkpoint, s.grid_run.plan.devices, sweep.label(s.index))
        for line in chunk.notes:
            sweep.log.write(line)

    def on_error(self, sweep: Sweep, error: BaseException) -> None:
        sweep.log.write(f"stopped ({type(error).__name__}) at {sweep.at(*sweep.where, of_total=True)}; " + (
            "no checkpoint yet: running again starts from step 0" if sweep.checkpoint_at is None else
            f"running again resumes from the checkpoint at {sweep.at(*sweep.checkpoint_at)}"))

    def on_end(self, sweep: Sweep, finished: bool) -> None:
        self.bar.close()


class LiveTableHook(Hook):
    """The live table after a chunk (`live.LiveTable`: live.csv, live_history.csv, live.png, a progress.log line),
    process 0 only, with `execution.live`: after the first chunk, then after a chunk when `execution.live_every_s`
    seconds have passed since the last update (0: after every chunk), and after the last chunk; `table` is None
    before the first chunk. Its drawing of live.png is counted as "live.png" in meta.json's "profile"."""

    part = "live table"

    def __init__(self):
        self.table: live.LiveTable | None = None
        self.prior = None  # the pilot sweep's calibration (`execution.live_calibration`), read at the start
        self.last = -float("inf")  # when the table was last updated (time.perf_counter)

    def on_start(self, sweep: Sweep) -> None:
        """Read `execution.live_calibration` before anything is compiled: a folder that is not a finished results
        folder ends the sweep here, in one line."""
        e = sweep.config.execution
        if e.live and e.live_calibration and distributed.is_writer():
            try:
                self.prior = live.pilot_calibration(e.live_calibration, live.LiveOptions.of(e.live_forecast),
                                                    sweep.config)
            except ConfigError as error:
                raise ConfigError(f"execution.live_calibration = {e.live_calibration!r}: {error}") from None

    def after_chunk(self, sweep: Sweep, s: RunSlice, chunk: Chunk) -> None:
        config = sweep.config
        if not config.execution.live or not distributed.is_writer():
            return
        final = s.index == sweep.num_slices - 1 and (s.logs_done >= sweep.total_logs or not s.active.size)
        if not (final or time.perf_counter() - self.last >= config.execution.live_every_s):
            return
        if self.table is None:
            options = live.LiveOptions.of(config.execution.live_forecast)
            g = log_contraction(config.optim, sweep.runs, len(sweep.runs["weight_decay"]))
            self.table = live.LiveTable(sweep.out, fresh=sweep.checkpoint is None, options=options, g=g,
                                        prior=self.prior)
        drawn = self.table.draw_seconds
        self.table.update(float(sweep.steps[s.logs_done]), *live.slice_histories(sweep, s), sweep.runs,
                          config.analysis, live.decayed_norm(config.optim.decay_on, s.buffer), sweep.log, final)
        sweep.timings.move(self.part, "live.png", self.table.draw_seconds - drawn)
        self.last = time.perf_counter()


class SignalsHook(Hook):
    """Stop signals (`nht_jax.training.signals`): while training, the watcher's lines say where it stands and what a rerun
    does; on a stop, the stop line in progress.log and `signals.Stopped` carrying it."""

    part = "signals"

    def __init__(self):
        self.held = contextlib.ExitStack()

    def on_start(self, sweep: Sweep) -> None:
        self.held.enter_context(signals.reporting(signals.Report(sweep.log.write, sweep.last_completed,
                                                                 sweep.rerun_text)))

    def on_stop(self, sweep: Sweep, s: RunSlice | None, signum: int) -> None:
        text = (f"stopped ({signals.signal_name(signum)}) at {sweep.last_completed()}, the last completed step; "
                + sweep.rerun_text())
        sweep.log.write(text)
        raise signals.Stopped(signum, text)

    def on_end(self, sweep: Sweep, finished: bool) -> None:
        self.held.close()


def default_hooks(config, progress: bool = True, overwrite: bool = False) -> list[Hook]:
    """The hooks of `nht run`, in the order of the module docstring: snapshots and the stop rule when configured."""
    rule = stopping.StopRule(config.execution, config.analysis)
    return [*([SnapshotsHook()] if snapshots.requested(config) else []),
            *([StopRuleHook(rule, config.execution.stop_rule)] if rule.active else []),
            CheckpointHook(), ProgressHook(progress, overwrite), LiveTableHook(), SignalsHook()]


__all__ = ["CheckpointHook", "Hook", "LiveTableHook", "ProgressHook", "SignalsHook", "SnapshotsHook",
           "StopRuleHook", "default_hooks"]
