"""The hooks of the sweep loop (`nht_jax.training.loop`): one per job, called at the loop's points, each describing its
part of meta.json (`describe`). Hooks observe: they see each run slice as a read-only view (`loop.SliceView`), write
files and lines, and never change a result; what changes results (the stop rule, re-packing, when a checkpoint is
due) is the loop's. No hook calls another.

`default_hooks` gives, in this order, which the loop's points rely on: `SnapshotsHook` (snapshots.npz, written before
each checkpoint), `CheckpointHook` (checkpoint.npz), `ProgressHook` (the "started" lines, the bar, one line per
chunk, the line of a failure), `LiveTableHook` (the live table) and `SignalsHook` (the stop signals' lines).

The points, each hook's job and why the order: docs/guides/execution.md, "Chunks, progress and checkpoints"."""

from __future__ import annotations

import contextlib
import os
import socket
import time

import numpy as np
from tqdm import tqdm

from nht_jax.base.errors import ConfigError
from nht_jax.engine import distributed
from nht_jax.engine.optim import log_contraction
from nht_jax.training import live
from nht_jax import experiment
from nht_jax.results import folder as results
from nht_jax.training import signals
from nht_jax.training import snapshots
from nht_jax.training.loop import CHECKPOINT, CheckpointAt, Chunk, SliceView, Sweep, joined


class Hook:
    """A hook of the sweep loop: every point does nothing; a hook overrides the points it needs (`nht_jax.training.loop`
    lists them and when they come). `part`: the name its time is counted under in meta.json's "profile"
    (`nht_jax.training.timings`)."""

    part = "hooks"

    def on_start(self, sweep: Sweep) -> None:
        """Once, before anything is compiled."""

    def on_slice_start(self, sweep: Sweep, s: SliceView) -> None:
        """A run slice started (its step 0 evaluated) or resumed (`s.resumed`)."""

    def after_call(self, sweep: Sweep, s: SliceView, runs: int, steps: int) -> None:
        """A compiled call returned: `runs` runs trained `steps` steps each."""

    def on_leave(self, sweep: Sweep, s: SliceView, rows: np.ndarray) -> None:
        """Runs `rows` of the slice leave training; their states are still in the program."""

    def after_chunk(self, sweep: Sweep, s: SliceView, chunk: Chunk) -> None:
        """A chunk's compiled calls returned."""

    def on_checkpoint(self, sweep: Sweep, at: CheckpointAt) -> None:
        """The loop decided checkpoint `at` (every process; after a chunk, before its `after_chunk`)."""

    def on_slice_end(self, sweep: Sweep, s: SliceView) -> None:
        """A run slice finished; its metrics are among the done ones."""

    def on_stop(self, sweep: Sweep, s: SliceView | None, signum: int) -> None:
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
        self.store = (
            distributed.writer_does(lambda: snapshots.Store.resumed(sweep.out, sweep.digest, kinds, sweep.num_runs))
            if sweep.checkpoint is not None
            else snapshots.Store(kinds, sweep.num_runs)
        )

    def on_leave(self, sweep: Sweep, s: SliceView, rows: np.ndarray) -> None:
        if s.states is not None:
            self.store.keep(s.lo + rows, sweep.states_of(s, rows), s.stopped[rows])

    def on_checkpoint(self, sweep: Sweep, at: CheckpointAt) -> None:
        if distributed.is_writer():  # before checkpoint.npz: what it counts as done has its snapshots
            self.store.write(sweep.out, sweep.digest)

    def on_end(self, sweep: Sweep, finished: bool) -> None:
        if finished and distributed.is_writer():  # with the results, before meta.json lists it
            self.store.drop_after(np.arange(sweep.num_runs), np.concatenate(sweep.done_stopped))  # resumed ones too
            self.store.write(sweep.out, sweep.digest)

    def describe(self) -> dict:
        return {"snapshots": self.store.describe()}


class CheckpointHook(Hook):
    """checkpoint.npz (`results.Checkpoint`) where the loop decides one (`loop.CheckpointAt`: when
    `execution.checkpoint_every_s` has passed, between run slices, on a stop): the finished run slices and the one
    in progress (or next to start), with "run slice k/K done … checkpoint written" between run slices. Written by
    process 0; the states are gathered on every process."""

    part = "checkpoint"

    def on_checkpoint(self, sweep: Sweep, at: CheckpointAt) -> None:
        s = at.slice
        leaves = sweep.active_leaves(s) if s is not None else []
        metrics = {k: v[:, : s.logs_done + 1] for k, v in s.buffer.items()} if s is not None else {}
        extra = {
            "bounds": np.asarray(sweep.bounds),
            "run_slice": at.index,
            "in_progress": at.in_progress,
            "active": np.asarray(s.active if s is not None else [], int),
            "stopped": np.asarray(s.stopped if s is not None else [], float),
            "done_metrics": joined(sweep.done_metrics) if sweep.done_metrics else {},
            "done_stopped": np.concatenate(sweep.done_stopped) if sweep.done_stopped else np.zeros(0),
        }
        if sweep.bucket is not None:
            extra.update(
                bucket=sweep.bucket.index,
                bucket_metrics=sweep.bucket.done_metrics,
                bucket_stopped=sweep.bucket.done_stopped,
            )
        else:  # the configuration, so that the unfinished folder can be read and resumed (`results.read_unfinished`)
            extra[results.CONFIG_KEY] = experiment.to_toml(sweep.config)
        if distributed.is_writer():
            results.save_checkpoint(sweep.out / CHECKPOINT, sweep.digest, at.logs_done, leaves, metrics, extra)
        if not at.in_progress:
            done = at.index - 1
            sweep.log.write(
                f"run slice {done + 1}/{sweep.num_slices} done (runs {sweep.bounds[done]}–"
                f"{sweep.bounds[done + 1] - 1}); checkpoint written"
            )


class ProgressHook(Hook):
    """The "started" line (and "resumed at …" from a checkpoint) in progress.log and the memory plan on stdout; the
    progress bar (process 0, with `progress`); one progress.log line per chunk, then the lines the other hooks
    added to it; the line of a failure."""

    part = "progress"

    def __init__(self, progress: bool, overwrite: bool):
        self.progress, self.overwrite = progress, overwrite
        self.bar = None

    def on_start(self, sweep: Sweep) -> None:
        config, c, rule = sweep.config, sweep.checkpoint, sweep.rule
        sweep.log.write(
            f"started nht run {config.name}{sweep.in_bucket()}: {sweep.num_runs} runs × {config.train.steps} steps, "
            f"log {sweep.schedule.short()}, {sweep.plan_description}, {sweep.sizer.describe()}; memory: "
            f"{sweep.memory.describe()}{'; ' + rule.describe() if rule.active else ''}; pid {os.getpid()} "
            f"on {socket.gethostname()}{' (--overwrite)' if self.overwrite else ''}"
        )
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
        return tqdm(
            total=sweep.num_runs * steps,
            initial=initial,
            unit="run·step",
            unit_scale=True,
            disable=not (self.progress and distributed.is_writer()),
            dynamic_ncols=True,
            desc=f"{sweep.config.name}{sweep.in_bucket()}: {sweep.num_runs} runs, {sweep.plan_description}",
        )

    def after_call(self, sweep: Sweep, s: SliceView, runs: int, steps: int) -> None:
        self.bar.update(runs * steps)

    def on_leave(self, sweep: Sweep, s: SliceView, rows: np.ndarray) -> None:
        self.bar.update(len(rows) * int(sweep.steps[-1] - sweep.steps[s.logs_done]))  # never trained

    def after_chunk(self, sweep: Sweep, s: SliceView, chunk: Chunk) -> None:
        steps = sweep.steps
        sweep.log.chunk(
            int(steps[s.logs_done]),
            sweep.config.train.steps,
            chunk.runs,
            s.logs_done - chunk.first,
            int(steps[s.logs_done] - steps[chunk.first]),
            chunk.seconds,
            chunk.compiled,
            time.time() - sweep.start,
            chunk.checkpoint,
            s.grid_run.plan.devices,
            sweep.label(s.index),
        )
        for line in chunk.notes:
            sweep.log.write(line)

    def on_error(self, sweep: Sweep, error: BaseException) -> None:
        sweep.log.write(
            f"stopped ({type(error).__name__}) at {sweep.at(*sweep.where, of_total=True)}; "
            + (
                "no checkpoint yet: running again starts from step 0"
                if sweep.checkpoint_at is None
                else f"running again resumes from the checkpoint at {sweep.at(*sweep.checkpoint_at)}"
            )
        )

    def on_end(self, sweep: Sweep, finished: bool) -> None:
        self.bar.close()


class LiveTableHook(Hook):
    """The live table after a chunk (`live.LiveTable`: live.csv, live_history.csv, live.png, a progress.log line),
    process 0 only, with `live.enabled`: after the first chunk, then after a chunk when `live.every_s`
    seconds have passed since the last update (0: after every chunk), and after the last chunk; `table` is None
    before the first chunk. Its drawing of live.png is counted as "live.png" in meta.json's "profile"."""

    part = "live table"

    def __init__(self):
        self.table: live.LiveTable | None = None
        self.prior = None  # the pilot sweep's calibration (`live.calibration`), read at the start
        self.last = -float("inf")  # when the table was last updated (time.perf_counter)

    def on_start(self, sweep: Sweep) -> None:
        """Read `live.calibration` before anything is compiled: a folder that is not a finished results
        folder ends the sweep here, in one line."""
        settings = sweep.config.live
        if settings.enabled and settings.calibration and distributed.is_writer():
            try:
                self.prior = live.pilot_calibration(
                    settings.calibration, live.LiveOptions.of(settings.forecast), sweep.config
                )
            except ConfigError as error:
                raise ConfigError(f"live.calibration = {settings.calibration!r}: {error}") from None

    def after_chunk(self, sweep: Sweep, s: SliceView, chunk: Chunk) -> None:
        config = sweep.config
        if not config.live.enabled or not distributed.is_writer():
            return
        final = s.index == sweep.num_slices - 1 and (s.logs_done >= sweep.total_logs or not s.active.size)
        if not (final or time.perf_counter() - self.last >= config.live.every_s):
            return
        if self.table is None:
            options = live.LiveOptions.of(config.live.forecast)
            g = log_contraction(config.optim, sweep.runs, len(sweep.runs["weight_decay"]))
            self.table = live.LiveTable(
                sweep.out, fresh=sweep.checkpoint is None, options=options, g=g, prior=self.prior
            )
        drawn = self.table.draw_seconds
        self.table.update(
            float(sweep.steps[s.logs_done]),
            *live.slice_histories(sweep, s),
            sweep.runs,
            config.analysis,
            live.decayed_norm(config.optim.decay_on, s.buffer),
            sweep.log,
            final,
        )
        sweep.timings.move(self.part, "live.png", self.table.draw_seconds - drawn)
        self.last = time.perf_counter()


class SignalsHook(Hook):
    """Stop signals (`nht_jax.training.signals`): while training, the watcher's lines say where it stands and what a rerun
    does; on a stop, the stop line in progress.log and `signals.Stopped` carrying it."""

    part = "signals"

    def __init__(self):
        self.held = contextlib.ExitStack()

    def on_start(self, sweep: Sweep) -> None:
        self.held.enter_context(
            signals.reporting(signals.Report(sweep.log.write, sweep.last_completed, sweep.rerun_text))
        )

    def on_stop(self, sweep: Sweep, s: SliceView | None, signum: int) -> None:
        sweep.log.write(sweep.stop_text(signum))

    def on_end(self, sweep: Sweep, finished: bool) -> None:
        self.held.close()


def default_hooks(config, progress: bool = True, overwrite: bool = False) -> list[Hook]:
    """The hooks of `nht run`, in the order of the module docstring: snapshots and the stop rule when configured."""
    return [
        *([SnapshotsHook()] if snapshots.requested(config) else []),
        CheckpointHook(),
        ProgressHook(progress, overwrite),
        LiveTableHook(),
        SignalsHook(),
    ]


__all__ = ["LiveTableHook"]
