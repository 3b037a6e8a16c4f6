"""Run a whole grid: one compiled program (`engine.executor.GridRun`), called chunk by chunk.

Each chunk advances every run by some log intervals in one compiled call (or a few, below); between chunks
Python updates the progress bar, appends a line to DIR/progress.log and, every `execution.checkpoint_every_s`
seconds, writes a checkpoint atomically (run states without the execution plan's padding, so a resume may use
another plan). Running the same command again resumes from it.

Chunk sizes (`ChunkSizer`). `execution.chunk_logs` ≥ 1: every chunk is one compiled call of exactly that many
log intervals (the last takes what is left). 0 (the default): chunks are sized by the clock to about
`execution.chunk_seconds` each, whatever the preset: one log interval first (that call compiles), one more to
time it, then chunks of the power of two nearest below chunk_seconds / (seconds per log interval), resized only
when they drift outside [¼, 2] × chunk_seconds. The number of log intervals per call is static in the compiled
program (`GridRun.advance`), so every distinct call size compiles once. A chunk size is therefore compiled only
when at least two whole chunks of it remain; otherwise (a short sweep, the end of a sweep) the chunk runs as
several calls of sizes compiled already (the bar still moves after each), so nothing is compiled for a
remainder: usually two programs in all (1 and the chunk size), one more per resizing. A chunk is never shorter
than one log interval: if one takes minutes, so does a chunk (a smaller `train.log_every` gives finer
progress but changes results). Chunking never changes a result: the metrics are the same scans concatenated,
bit for bit.

Run-chunks (memory). Before launch the sweep estimates the memory of a run-chunk of M runs (state, compiled
buffers, metrics history, the shared data: `nht_jax.engine.memory`) and splits the run axis into run-chunks that
fit `execution.memory_cap_gib` (0: what the device allows; on CPU half the host's RAM). The plan ("R runs in K
run-chunks of ≤ M runs, estimated X GiB per run-chunk against a cap of Y GiB") is printed and written into the
"started" line of progress.log. Run-chunks run one after another, each through the chunks above, every one in
the same compiled program (a smaller last run-chunk is padded by repeating a run); after each but the last a
checkpoint records it done, so a sweep killed in run-chunk 3 resumes in run-chunk 3 (at its own last checkpoint,
or at its start). Runs are independent, so the results are the run-chunks' metrics concatenated in run order,
the same as one run-chunk's (bit for bit under strategy "map"). A checkpoint keeps the bounds it was written
under for the run-chunks it covers; a resume under another cap splits only the rest anew.

Stop rules (`execution.stop_rule`, `nht_jax.run.stopping`). After every chunk the runs still training are checked;
those that met the rule leave the batch, and when some did the others are re-packed into a program of the power of
two at or above their number (at most the run-chunk's size; padding repeats a run, as `pad_runs` does), so each
distinct size compiles once. A stopped run's metrics after its stopped_step hold their value at it; the runs that
continue give exactly an uninterrupted sweep's metrics (under "map"). progress.log gets one line per group of runs
stopped ("stop rule (transition) after step S: run 3 at step 2400, …; 5 run(s) still training"), and the "N runs"
of a chunk line counts those trained in it.

Buckets (static axes). A grid over a static setting the domain declares (`grid.width = [32, 64, 128]`,
`experiment.Config.buckets`) is trained bucket after bucket: each bucket is the configuration of its runs alone
(the setting replaced), with its own data, trainer, compiled programs, memory plan and run-chunks, exactly as if
it were run on its own, into the same folder, progress.log and checkpoint. The checkpoint records the bucket in
progress and the finished buckets' metrics, so a sweep killed in bucket 2 resumes in bucket 2 (at its own last
checkpoint, or at its start). The results are the buckets' metrics concatenated in run order (the static axes
vary slowest), with the union of their metric names (NaN for the runs of a bucket that does not record one;
meta.json names them), one trajectories.npz and one summary.csv. progress.log gets a "static axes" line, a
" in bucket k/K (width = 64)" suffix on the lines of each bucket, and "bucket k/K (width = 64) done" between them.

The results folder is locked for the whole command (`nht_jax.run.lock`): a second `nht run` or `nht report`
into it stops at once with a message naming the process that holds it; the lock dies with its process, so a
killed sweep resumes.

Several processes (`nht_jax.engine.distributed`, after `distributed.initialize`): every process runs this same
code on its share of the runs (the run axis spans every process's devices). Process 0 alone touches the results
folder: it takes the lock, reads a checkpoint (and sends it to the others), writes checkpoints, progress.log,
the results and the figures, and shows the progress bar; the others return None. Whatever is decided from a
clock or a file is process 0's decision, sent to all (chunk sizes from its timings, when a checkpoint is due, the
memory plan); metrics and states come back from each compiled call gathered in full to every process, so the
stop rule decides the same everywhere. A checkpoint holds every run's full state, so a sweep resumes with any
number of processes. Results equal one process's with as many devices bit for bit, and one device's to float
rounding (sharding compiles the per-device program differently, as with several local devices).

progress.log (appended and flushed line by line, so `tail -f DIR/progress.log` follows a sweep, also remotely):
a "started" line (configuration, runs, steps, plan, chunk sizing, pid and host), "resumed at step S of T" when
a checkpoint is used, then one line per chunk (several compiled calls of one chunk make one line):

    2026-11-29T12:00:03+0100  step 400/6000 (6.7%)  16 runs  chunk 8 logs in 5.02 s  2550 run·steps/s
      elapsed 0:00:41  peak RSS 1.23 GiB  device peak 0.45 GiB  checkpoint written

(one line in the file; " (run-chunk k/K)" after "16 runs" when there are several; "(compiling)" after the chunk
time when a call of it compiled a new size; "device peak n/a" where the backend reports no memory statistics, as on
CPU; "checkpoint written" only when one was), "run-chunk k/K done" between run-chunks, and at the end "finished: …"
or "stopped (KeyboardInterrupt) at step S of T; running again resumes from the checkpoint at step C" (with several
run-chunks "step S of T in run-chunk k/K"; or "no checkpoint yet: running again starts from step 0").
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import socket
import sys
import time
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np
from tqdm import tqdm

from nht_jax import experiment
from nht_jax.base.atomic import atomic_write_text
from nht_jax.base.errors import ConfigError
from nht_jax.engine import distributed
from nht_jax.engine import grid as grid_lib
from nht_jax.engine import memory
from nht_jax.engine.executor import GridRun, host, pad_runs
from nht_jax.engine.executor import plan as execution_plan
from nht_jax.engine.settings import ExecutionConfig
from nht_jax.experiment import Config
from nht_jax.run import summaries
from nht_jax.run import lock, results, stopping

PROGRESS_LOG = "progress.log"


def default_out(config: Config) -> Path:
    """Where `nht run` writes when --out is not given: runs/out/<name> under the current directory."""
    return Path.cwd() / "runs" / "out" / config.name


def run_sweep(config: Config, out: Path, progress: bool = True, overwrite: bool = False) -> results.Results | None:
    """Train every run of config.grid and write the results directory `out` (no figures: the figures of a results
    folder are `nht_jax.figures.folder.redraw`'s), holding the folder's lock throughout. With several processes, every one calls this; process 0 writes and
    returns the results, the others return None (module docstring)."""
    distributed.writer_does(lambda: lock.raise_if_held(out, "nht run"))  # another writer: fail before loading
    # missing or broken data fails here, before anything is written (on any process: every one stops)
    data = distributed.all_do(lambda: config.domain.load_data(config))
    with contextlib.ExitStack() as held:
        out = distributed.writer_does(lambda: results.prepare_out_dir(held.enter_context(lock.hold(out, "nht run"))))
        return _run_locked(config, data, out, progress, overwrite)


def _finished_already(out: Path, digest: str, overwrite: bool) -> bool:
    """Clear the way for --overwrite, or say whether `out` holds this configuration's finished results
    (ConfigError when it holds another's)."""
    if overwrite:
        for name in ("checkpoint.npz", "meta.json"):
            (out / name).unlink(missing_ok=True)
        return False
    if not (out / "meta.json").exists():
        return False
    previous = json.loads((out / "meta.json").read_text())
    if previous.get("config_digest") != digest:
        raise ConfigError(f"'{out}' already holds results of a different configuration. "
                          f"Use another --out folder, or pass --overwrite to replace them.")
    return True


def _run_locked(config: Config, data, out: Path, progress: bool, overwrite: bool) -> results.Results | None:
    digest = stopping.results_digest(config)
    if distributed.writer_does(lambda: _finished_already(out, digest, overwrite)):
        if not distributed.is_writer():
            return None
        print(f"{out} already holds finished results of this configuration (pass --overwrite to train again).")
        return results.load_results(out)

    runs = config.runs()
    if config.static:
        training, metrics, stopped_step, wall, bucket_meta = train_buckets(config, data, out, digest, progress,
                                                                           overwrite)
    else:
        training = Training(config, config.domain.make_trainer(config, data), runs, data, out, digest)
        metrics, stopped_step, wall = training.run(progress, overwrite)
        bucket_meta = None

    if not distributed.is_writer():
        return None
    steps = training.steps
    atomic_write_text(out / "config.toml", experiment.to_toml(config))
    results.write_trajectories(out, steps, metrics, runs, config, stopped_step if training.stop.active else None)
    rows = summaries.summarize(steps, metrics, runs, config)
    if training.stop.active:
        for row, step in zip(rows, stopped_step):
            row["stopped_step"] = float(step)
    results.write_summary(out, rows)
    num_runs = grid_lib.num_runs(runs)
    meta = {
        "config_digest": digest, "runs": num_runs, "steps": config.train.steps, "train_wall_s": round(wall, 2),
        "execution": training.plan_description, "run_chunks": training.num_chunks,
        "memory_plan": training.memory.describe(), "backend": jax.default_backend(),
        "processes": jax.process_count(), "devices": [str(d) for d in jax.devices()], "jax": jax.__version__,
        "python": platform.python_version(), "machine": platform.machine(),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if bucket_meta is not None:
        meta.update(bucket_meta)
        meta["run_chunks"] = sum(b.get("run_chunks", 0) for b in bucket_meta["buckets"]) or training.num_chunks
    if training.stop.active:
        meta["stop_rule"] = training.stop.describe()
        meta["runs_stopped"] = int(np.isfinite(stopped_step).sum())
    atomic_write_text(out / "meta.json", json.dumps(meta, indent=2))
    (out / "checkpoint.npz").unlink(missing_ok=True)
    stopped_text = (f"; {meta['runs_stopped']} run(s) stopped early ({config.execution.stop_rule})"
                    if training.stop.active else "")
    buckets_text = f" in {len(bucket_meta['buckets'])} buckets" if bucket_meta is not None else ""
    training.log.write(f"finished: {config.train.steps} steps × {num_runs} runs{buckets_text}, trained for "
                       f"{wall:.1f} s{stopped_text}; results written")
    out_results = results.load_results(out)
    out_results.meta = meta
    return out_results


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


def merge_metrics(parts: list[tuple[dict, int]]) -> dict:
    """Metrics of consecutive blocks of runs [(metrics {name: (runs, L)}, runs), …] concatenated in order, with
    the union of their names: a block without a name gets NaN there (float; float32 unless it needs more)."""
    names = list(dict.fromkeys(name for metrics, _ in parts for name in metrics))
    out = {}
    for name in names:
        present = [np.asarray(m[name]) for m, _ in parts if name in m]
        logs = present[0].shape[1:]
        blocks = []
        for metrics, count in parts:
            if name in metrics:
                blocks.append(np.asarray(metrics[name]))
            elif count:
                dtype = np.result_type(present[0].dtype, np.float32)
                blocks.append(np.full((count, *logs), np.nan, dtype))
        out[name] = np.concatenate(blocks) if len(blocks) > 1 else blocks[0]
    return out


def train_buckets(config: Config, first_data, out: Path, digest: str, progress: bool, overwrite: bool):
    """Train the buckets of a grid with static axes one after another (module docstring) → (the last bucket's
    Training, metrics {name: (runs, L)}, stopped_step (runs,), wall seconds, meta.json fields)."""
    buckets = config.buckets()
    count = len(buckets)
    sizes = [grid_lib.num_runs(sub.runs()) for _, sub in buckets]
    log = ProgressLog(out / PROGRESS_LOG)
    checkpoint = distributed.writer_does(lambda: results.read_checkpoint(out / "checkpoint.npz", digest))
    first = checkpoint.bucket if checkpoint is not None else 0
    done_metrics = dict(checkpoint.bucket_metrics) if checkpoint is not None else {}
    done_stopped = checkpoint.bucket_stopped if checkpoint is not None else np.zeros(0)
    if len(done_stopped) != sum(sizes[:first]):
        raise ConfigError(f"'{out / 'checkpoint.npz'}' does not match this configuration's buckets. Delete it to "
                          f"train from the start, or pass --overwrite.")
    axes = ", ".join(f"{name} = {list(config.grid[name])} ({spec.section}.{spec.key})"
                     for name, spec in config.static.items())
    log.write(f"static axes {axes}: {count} buckets ({', '.join(map(str, sizes))} runs), one compiled program "
              f"each, trained one after another" + (f"; buckets 1–{first} done (checkpoint)" if first else ""))
    wall, described, training = 0.0, [], None
    for k in range(first, count):
        values, sub = buckets[k]
        data = first_data if k == 0 else distributed.all_do(lambda: sub.domain.load_data(sub))
        bucket = Bucket(k, count, values, checkpoint if (checkpoint is not None and k == first) else None,
                        done_metrics, done_stopped)
        if distributed.is_writer():
            print(f"{bucket.label}: {sizes[k]} runs")
        training = Training(sub, sub.domain.make_trainer(sub, data), sub.runs(), data, out, digest, bucket)
        if k > first:
            training.checkpoint_at = (0, 0)  # the checkpoint written when the previous bucket finished
        metrics, stopped, seconds = training.run(progress, overwrite)
        wall += seconds
        done_metrics = merge_metrics([(done_metrics, len(done_stopped)), (metrics, len(stopped))])
        done_stopped = np.concatenate([done_stopped, stopped])
        described.append({"values": {n: (v.item() if hasattr(v, "item") else v) for n, v in values.items()},
                          "runs": sizes[k], "execution": training.plan_description, "run_chunks": training.num_chunks,
                          "memory_plan": training.memory.describe(), "train_wall_s": round(seconds, 2)})
        training.programs = {}  # this bucket's compiled programs are not needed again
        if k < count - 1:
            extra = {"bounds": np.asarray([0]), "chunk": 0, "in_progress": False, "active": np.zeros(0, int),
                     "stopped": np.zeros(0), "done_metrics": {}, "done_stopped": np.zeros(0), "bucket": k + 1,
                     "bucket_metrics": done_metrics, "bucket_stopped": done_stopped}
            if distributed.is_writer():
                results.save_checkpoint(out / "checkpoint.npz", digest, 0, [], {}, extra)
            log.write(f"{bucket.label} done (runs {sum(sizes[:k])}–{sum(sizes[:k + 1]) - 1}); checkpoint written")
    bounds = np.cumsum([0, *sizes])
    partial = sorted(name for name, v in done_metrics.items()
                     if any(np.isnan(v[a:b]).all() for a, b in zip(bounds, bounds[1:])) and not np.isnan(v).all())
    if partial:
        log.write(f"metrics not recorded by every bucket (NaN for the others' runs): {', '.join(partial)}")
    meta = {"static_axes": {name: list(config.grid[name]) for name in config.static}, "buckets": described,
            "buckets_done_before_resume": first, "metrics_not_in_every_bucket": partial}
    return training, done_metrics, done_stopped, wall, meta


def next_power_of_two(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


class Training:
    """The training of one sweep: run-chunk after run-chunk (memory), chunk after chunk (time), runs leaving when
    a stop rule says so, checkpoints; see the module docstring. `run()` → (metrics {name: (runs, logs + 1)},
    stopped_step (runs,), training wall seconds)."""

    def __init__(self, config: Config, trainer, runs: dict, data, out: Path, digest: str,
                 bucket: Bucket | None = None):
        self.config, self.trainer, self.out, self.digest, self.bucket = config, trainer, out, digest, bucket
        self.runs = {k: np.asarray(v) for k, v in runs.items()}
        self.num_runs = int(jax.tree.leaves(self.runs)[0].shape[0])
        self.total_logs, self.log_every = trainer.num_logs, config.train.log_every
        self.steps = np.arange(0, config.train.steps + 1, self.log_every)
        self.stop = stopping.StopRule(config.execution, config.analysis)
        self.checkpoint = (bucket.checkpoint if bucket is not None  # read by train_buckets
                           else distributed.writer_does(  # a broken one fails here; process 0's reaches all
                               lambda: results.read_checkpoint(out / "checkpoint.npz", digest)))
        self.memory = distributed.writer_does(  # one plan for every process (the cap comes from process 0's host)
            lambda: memory.plan_run_chunks(trainer, self.runs, data, config.execution, self.total_logs + 1))
        self.bounds = self._bounds()
        self.num_chunks = len(self.bounds) - 1
        self.size = max(b - a for a, b in zip(self.bounds, self.bounds[1:]))  # runs of the largest run-chunk
        self.plan_description = execution_plan(config.execution, self.size).describe()
        self.sizer = ChunkSizer(config.execution)
        self.log = ProgressLog(out / PROGRESS_LOG)
        self.programs: dict[int, GridRun] = {}
        self.done_metrics: list[dict] = []   # per finished run-chunk: {name: (its runs, logs + 1)}
        self.done_stopped: list[np.ndarray] = []
        self.checkpoint_at = None            # (run-chunk, logs) of the last checkpoint written or resumed from
        self.where = (0, 0)                  # (run-chunk, logs done) now

    def _bounds(self) -> list[int]:
        """The run-chunks' boundaries: the memory plan's, or a checkpoint's for what it covers (finished run-chunks
        and the one in progress), the memory plan's for the rest."""
        size, c = self.memory.runs_per_chunk, self.checkpoint
        if c is None:
            return memory.split(0, self.num_runs, size)
        keep = c.bounds[: c.chunk + (2 if c.in_progress else 1)]
        return keep + memory.split(keep[-1], self.num_runs, size)[1:]

    def label(self, chunk: int) -> str:
        text = f" (run-chunk {chunk + 1}/{self.num_chunks})" if self.num_chunks > 1 else ""
        return text + self.in_bucket()

    def in_bucket(self) -> str:
        return f" in {self.bucket.label}" if self.bucket is not None else ""

    def at(self, chunk: int, logs: int, of_total: bool = False) -> str:
        """"step S" (of_total: "step S of T"), then " in run-chunk k/K" when there are several, then
        " in bucket b/B (width = 64)" with static axes."""
        text = f"step {logs * self.log_every}" + (f" of {self.config.train.steps}" if of_total else "")
        text = text if self.num_chunks == 1 else f"{text} in run-chunk {chunk + 1}/{self.num_chunks}"
        return text + self.in_bucket()

    def program(self, runs: dict) -> GridRun:
        """A compiled program for these runs (one per size: the largest run-chunk's, or with a stop rule the power
        of two at or above the runs left, at most that), with its own compiled call sizes in the sizer."""
        count = int(jax.tree.leaves(runs)[0].shape[0])
        size = self.size if not self.stop.active else min(self.size, next_power_of_two(count))
        if size not in self.programs:
            self.programs[size] = GridRun(self.trainer, pad_runs(runs, size), self.config.execution)
        self.sizer.use(size)
        return self.programs[size].with_runs(runs)

    def run(self, progress: bool, overwrite: bool):
        config, c = self.config, self.checkpoint
        first_chunk = 0 if c is None else c.chunk
        if c is not None and c.chunk > 0:
            self.done_metrics.append(dict(c.done_metrics))
            self.done_stopped.append(np.asarray(c.done_stopped, float))
        self.log.write(
            f"started nht run {config.name}{self.in_bucket()}: {self.num_runs} runs × {config.train.steps} steps, log every "
            f"{self.log_every}, {self.plan_description}, {self.sizer.describe()}; memory: {self.memory.describe()}"
            f"{'; ' + self.stop.describe() if self.stop.active else ''}; pid {os.getpid()} on "
            f"{socket.gethostname()}{' (--overwrite)' if overwrite else ''}")
        writer = distributed.is_writer()
        if writer:
            print(f"memory: {self.memory.describe()}")
        if c is not None:
            self.checkpoint_at = (c.chunk, c.logs_done if c.in_progress else 0)
            where = self.at(*self.checkpoint_at, of_total=True)
            if writer:
                print(f"resuming {self.out} at {where}")
            self.log.write(f"resumed at {where} from checkpoint.npz")
        done_runs = self.bounds[first_chunk]
        initial = done_runs * config.train.steps
        if c is not None and c.in_progress:
            initial += (self.bounds[first_chunk + 1] - done_runs) * c.logs_done * self.log_every
        self.bar = tqdm(total=self.num_runs * config.train.steps, initial=initial, unit="run·step", unit_scale=True,
                        disable=not (progress and writer), dynamic_ncols=True,
                        desc=f"{config.name}{self.in_bucket()}: {self.num_runs} runs, {self.plan_description}")
        self.start = self.last_checkpoint = time.time()
        try:
            for chunk in range(first_chunk, self.num_chunks):
                resume = c if (c is not None and c.in_progress and c.chunk == chunk) else None
                self.train_chunk(chunk, resume)
                if chunk < self.num_chunks - 1:
                    self.save(chunk + 1, 0, None, None, None, None, in_progress=False)
                    self.log.write(f"run-chunk {chunk + 1}/{self.num_chunks} done (runs {self.bounds[chunk]}–"
                                   f"{self.bounds[chunk + 1] - 1}); checkpoint written")
        except BaseException as e:
            self.log.write(f"stopped ({type(e).__name__}) at {self.at(*self.where, of_total=True)}; " + (
                "no checkpoint yet: running again starts from step 0" if self.checkpoint_at is None else
                f"running again resumes from the checkpoint at {self.at(*self.checkpoint_at)}"))
            raise
        finally:
            self.bar.close()
        wall = time.time() - self.start
        metrics = {k: np.concatenate([m[k] for m in self.done_metrics]) for k in self.done_metrics[0]}
        return metrics, np.concatenate(self.done_stopped), wall

    def save(self, chunk: int, logs_done: int, leaves, metrics, active, stopped, in_progress: bool = True) -> None:
        """Write checkpoint.npz (`results.Checkpoint`): the finished run-chunks, and the one in progress."""
        done = ({k: np.concatenate([m[k] for m in self.done_metrics]) for k in self.done_metrics[0]}
                if self.done_metrics else {})
        extra = {"bounds": np.asarray(self.bounds), "chunk": chunk, "in_progress": in_progress,
                 "active": np.asarray(active if active is not None else [], int),
                 "stopped": np.asarray(stopped if stopped is not None else [], float),
                 "done_metrics": done,
                 "done_stopped": np.concatenate(self.done_stopped) if self.done_stopped else np.zeros(0)}
        if self.bucket is not None:
            extra.update(bucket=self.bucket.index, bucket_metrics=self.bucket.done_metrics,
                         bucket_stopped=self.bucket.done_stopped)
        if distributed.is_writer():
            results.save_checkpoint(self.out / "checkpoint.npz", self.digest, logs_done, leaves or [],
                                    metrics or {}, extra)
        self.last_checkpoint, self.checkpoint_at = time.time(), (chunk, logs_done)

    def train_chunk(self, chunk: int, resume) -> None:
        """Train run-chunk `chunk` to the end (or until every run of it stopped); append its metrics (padded) and
        stopped steps to the finished ones."""
        config, total, log_every = self.config, self.total_logs, self.log_every
        lo, hi = self.bounds[chunk], self.bounds[chunk + 1]
        chunk_runs = {k: v[lo:hi] for k, v in self.runs.items()}
        take = lambda rows: {k: v[rows] for k, v in chunk_runs.items()}
        if resume is None:
            logs_done, active, stopped = 0, np.arange(hi - lo), np.full(hi - lo, np.nan)
            slots = active
            grid_run = self.program(take(slots))
            states, first = grid_run.start()
            buffer = {k: np.full((hi - lo, total + 1), np.nan, np.asarray(v).dtype) for k, v in first.items()}
            for k, v in first.items():
                buffer[k][:, :1] = v
        else:
            logs_done, active, stopped = resume.logs_done, resume.active.copy(), resume.stopped.copy()
            buffer = {k: np.full((hi - lo, total + 1), np.nan, v.dtype) for k, v in resume.metrics.items()}
            for k, v in resume.metrics.items():
                buffer[k][:, : logs_done + 1] = v
            slots = active
            if active.size:
                grid_run = self.program(take(slots))
                structure = jax.tree.structure(jax.eval_shape(grid_run.init))  # the state's pytree, nothing computed
                states = grid_run.place(jax.tree.unflatten(structure, [pad_runs(x, grid_run.plan.padded_runs)
                                                                       for x in resume.state_leaves]))
        self.where = (chunk, logs_done)
        if resume is None:
            active, stop_note = self.stopping(chunk, lo, buffer, active, stopped, 0, 0)
            if stop_note:
                self.log.write(stop_note)
        while logs_done < total and active.size:
            live = np.isin(slots, active)
            calls = self.sizer.next(total - logs_done)
            seconds, compiled, before = 0.0, False, logs_done
            for n in calls:
                tick = time.perf_counter()
                states, metrics = grid_run.advance(states, n)  # returns host arrays: the call has finished
                took = distributed.from_writer(time.perf_counter() - tick)  # every process sizes by process 0's clock
                compiled |= self.sizer.record(n, took)
                seconds += took
                for k, v in metrics.items():
                    buffer[k][slots[live], logs_done + 1: logs_done + 1 + n] = v[live]
                logs_done += n
                self.where = (chunk, logs_done)
                self.bar.update(int(live.sum()) * n * log_every)
            trained = int(live.sum())
            n = logs_done - before
            previous = active
            active, stop_note = self.stopping(chunk, lo, buffer, active, stopped, before + 1, logs_done)
            if active.size < previous.size and active.size:  # re-pack the runs left (compiles only a new size)
                rows = np.flatnonzero(np.isin(slots, active))  # slots holds every active run, in order
                kept = [x[rows] for x in jax.tree.leaves(host(states))]
                grid_run = self.program(take(active))
                states = grid_run.place(jax.tree.unflatten(jax.tree.structure(states),
                                                           [pad_runs(x, grid_run.plan.padded_runs) for x in kept]))
                slots = active
            wrote_checkpoint = False
            due = distributed.from_writer(time.time() - self.last_checkpoint > config.execution.checkpoint_every_s)
            if due and logs_done < total and active.size:
                rows = np.flatnonzero(np.isin(slots, active))
                leaves = [x[rows] for x in jax.tree.leaves(host(states))]
                self.save(chunk, logs_done, leaves, {k: v[:, : logs_done + 1] for k, v in buffer.items()},
                          active, stopped)
                wrote_checkpoint = True
            self.log.chunk(logs_done * log_every, config.train.steps, trained, n, n * log_every, seconds, compiled,
                           time.time() - self.start, wrote_checkpoint, grid_run.plan.devices, self.label(chunk))
            if stop_note:
                self.log.write(stop_note)
        for r in np.flatnonzero(np.isfinite(stopped)):
            j = int(np.searchsorted(self.steps, stopped[r]))
            for v in buffer.values():
                stopping.hold_after(v[r], j)
        self.done_metrics.append(buffer)
        self.done_stopped.append(stopped)

    def stopping(self, chunk: int, lo: int, buffer: dict, active: np.ndarray, stopped: np.ndarray, first: int,
                 logs_done: int) -> tuple[np.ndarray, str]:
        """Apply the stop rule to the active runs on logs [first, logs_done]: mark the runs that stop (their
        metrics held after their stop); return the runs still training and a progress.log line ("" if none)."""
        if not self.stop.active or not active.size:
            return active, ""
        steps = self.steps[: logs_done + 1]
        leaving = []
        for r in active:
            j = self.stop.stop_log(steps, {k: v[r, : logs_done + 1] for k, v in buffer.items()}, first)
            if j is not None and j < self.total_logs:  # meeting it at the very last log is training the budget
                stopped[r] = self.steps[j]
                for v in buffer.values():
                    v[r, j + 1: logs_done + 1] = v[r, j]
                leaving.append(r)
        if not leaving:
            return active, ""
        left = active[~np.isin(active, leaving)]
        self.bar.update(len(leaving) * (self.total_logs - logs_done) * self.log_every)  # never trained
        names = ", ".join(f"run {lo + r} at step {int(stopped[r])}" for r in leaving)
        return left, (f"stop rule ({self.config.execution.stop_rule}) after {self.at(chunk, logs_done)}: "
                      f"{names}; {left.size} run(s) still training{self.label(chunk)}")


class ChunkSizer:
    """Which compiled calls make the next chunk (see the module docstring): `next(remaining)` → call sizes in log
    intervals, `record(n, seconds)` after each call."""

    MAX_LOGS = 1 << 20

    def __init__(self, execution: ExecutionConfig):
        self.fixed = execution.chunk_logs
        self.target_s = execution.chunk_seconds
        self.size = 1               # log intervals per chunk (a power of two) when sized by time
        self.timed = False          # whether a call has been timed yet (until then the size is 1)
        self.compiled: set[int] = set()
        self.by_program: dict = {None: self.compiled}

    def use(self, program) -> None:
        """Calls now go to another compiled program (a run-chunk's, or the smaller one a stop rule re-packed the
        runs into): it has its own set of call sizes compiled already."""
        self.compiled = self.by_program.setdefault(program, set())

    def describe(self) -> str:
        if self.fixed:
            return f"chunks of {self.fixed} log intervals (execution.chunk_logs)"
        return f"chunks sized to about {self.target_s:g} s (execution.chunk_seconds)"

    def next(self, remaining: int) -> list[int]:
        if self.fixed:
            return [min(self.fixed, remaining)]
        if self.size not in self.compiled and remaining >= 2 * self.size:
            return [self.size]  # worth compiling: it makes at least two whole chunks
        calls, left = [], min(self.size, remaining)
        for size in sorted(self.compiled | {1}, reverse=True):  # sizes compiled already, largest first
            calls += [size] * (left // size)
            left %= size
        return calls

    def record(self, n: int, seconds: float) -> bool:
        """Note that a call of n logs took `seconds`; True when that call compiled (first call of its size)."""
        compiled = n not in self.compiled
        self.compiled.add(n)
        if self.fixed or compiled:  # a compiling call says nothing about the speed
            return compiled
        per_log = max(seconds, 1e-9) / n
        if not self.timed or not self.target_s / 4 <= self.size * per_log <= 2 * self.target_s:
            self.size = power_of_two_at_most(min(self.target_s / per_log, self.MAX_LOGS))
            self.timed = True
        return compiled


def power_of_two_at_most(x: float) -> int:
    """The largest power of two ≤ x, and 1 for x < 2."""
    return 1 << (int(x).bit_length() - 1) if x >= 2 else 1


class ProgressLog:
    """DIR/progress.log: lines appended and flushed one at a time (see the module docstring); written by process 0
    only (`distributed.is_writer`), a no-op elsewhere."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.enabled = distributed.is_writer()

    def write(self, text: str) -> None:
        if not self.enabled:
            return
        stamp = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(f"{stamp}  {text}\n")
            f.flush()

    def chunk(self, step: int, steps: int, runs: int, logs: int, chunk_steps: int, seconds: float, compiled: bool,
              elapsed: float, checkpoint: bool, devices: int, label: str = "") -> None:
        rate = runs * chunk_steps / max(seconds, 1e-9)
        device = device_peak_bytes(devices)
        self.write(f"step {step}/{steps} ({100 * step / steps:.1f}%)  {runs} runs{label}  "
                   f"chunk {logs} logs in {seconds:.2f} s{' (compiling)' if compiled else ''}  "
                   f"{rate:.4g} run·steps/s  elapsed {datetime.timedelta(seconds=round(elapsed))}  "
                   f"peak RSS {gib(peak_rss_bytes())}  device peak {gib(device)}"
                   f"{'  checkpoint written' if checkpoint else ''}")


def gib(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**30:.2f} GiB"


def peak_rss_bytes() -> int | None:
    """Peak resident memory of this process (None where `resource` is missing, as on Windows)."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux


def device_peak_bytes(devices: int) -> int | None:
    """The largest peak memory in use on the devices the grid runs on (None where not reported, as on CPU)."""
    peaks = []
    for device in jax.local_devices()[:devices]:
        try:
            stats = device.memory_stats()
        except (RuntimeError, NotImplementedError):  # some backends raise instead of returning None
            stats = None
        if stats and "peak_bytes_in_use" in stats:
            peaks.append(stats["peak_bytes_in_use"])
    return max(peaks) if peaks else None


__all__ = ["default_out", "run_sweep"]
