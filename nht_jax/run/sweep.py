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

The results folder is locked for the whole command (`nht_jax.run.lock`): a second `nht run` or `nht report`
into it stops at once with a message naming the process that holds it; the lock dies with its process, so a
killed sweep resumes.

progress.log (appended and flushed line by line, so `tail -f DIR/progress.log` follows a sweep, also remotely):
a "started" line (configuration, runs, steps, plan, chunk sizing, pid and host), "resumed at step S of T" when
a checkpoint is used, then one line per chunk (several compiled calls of one chunk make one line):

    2026-11-29T12:00:03+0100  step 400/6000 (6.7%)  16 runs  chunk 8 logs in 5.02 s  2550 run·steps/s
      elapsed 0:00:41  peak RSS 1.23 GiB  device peak 0.45 GiB  checkpoint written

(one line in the file; "(compiling)" after the chunk time when a call of it compiled a new size; "device
peak n/a" where the backend reports no memory statistics, as on CPU; "checkpoint written" only when one was),
and at the end "finished: …" or "stopped (KeyboardInterrupt) at step S of T; running again resumes from the
checkpoint at step C" (or "no checkpoint yet: running again starts from step 0").
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import socket
import sys
import time
from pathlib import Path

import jax
import numpy as np
from tqdm import tqdm

from nht_jax import experiment
from nht_jax.base.atomic import atomic_write_text
from nht_jax.base.errors import ConfigError
from nht_jax.engine.executor import GridRun, join_logs, pad_runs, unpad
from nht_jax.engine.settings import ExecutionConfig
from nht_jax.experiment import Config
from nht_jax.report import analysis
from nht_jax.run import lock, results

PROGRESS_LOG = "progress.log"


def default_out(config: Config) -> Path:
    """Where `nht run` writes when --out is not given: runs/out/<name> under the current directory."""
    return Path.cwd() / "runs" / "out" / config.name


def run_sweep(config: Config, out: Path, progress: bool = True, overwrite: bool = False,
              draw: bool = True) -> results.Results:
    """Train every run of config.grid and write the results directory `out` (figures unless draw=False),
    holding the folder's lock throughout."""
    lock.raise_if_held(out, "nht run")  # another writer: fail before loading anything
    data = config.domain.load_data(config)  # missing or broken data fails here, before anything is written
    with lock.hold(out, "nht run"):
        return _run_locked(config, data, results.prepare_out_dir(out), progress, overwrite, draw)


def _run_locked(config: Config, data, out: Path, progress: bool, overwrite: bool, draw: bool) -> results.Results:
    digest = experiment.digest(config)
    if overwrite:
        for name in ("checkpoint.npz", "meta.json"):
            (out / name).unlink(missing_ok=True)
    elif (out / "meta.json").exists():
        previous = json.loads((out / "meta.json").read_text())
        if previous.get("config_digest") != digest:
            raise ConfigError(f"'{out}' already holds results of a different configuration. "
                              f"Use another --out folder, or pass --overwrite to replace them.")
        print(f"{out} already holds finished results of this configuration; redrawing its report "
              f"(pass --overwrite to train again).")
        return finish(out, draw)

    runs = config.runs()
    grid_run = GridRun(config.domain.make_trainer(config, data), runs, config.execution)
    num_runs, total_logs, log_every = grid_run.num_runs, grid_run.trainer.num_logs, config.train.log_every
    checkpoint = results.load_checkpoint(out / "checkpoint.npz", digest)
    log = ProgressLog(out / PROGRESS_LOG)
    sizer = ChunkSizer(config.execution)
    log.write(f"started nht run {config.name}: {num_runs} runs × {config.train.steps} steps, log every {log_every}, "
              f"{grid_run.plan.describe()}, {sizer.describe()}; pid {os.getpid()} on {socket.gethostname()}"
              f"{' (--overwrite)' if overwrite else ''}")
    if checkpoint is None:
        logs_done = 0
        states, first = grid_run.start()
        history = [first]
    else:
        logs_done, leaves, saved = checkpoint
        structure = jax.tree.structure(jax.eval_shape(grid_run.init))  # the state's pytree, nothing computed
        states = jax.tree.unflatten(structure, [pad_runs(x, grid_run.plan.padded_runs) for x in leaves])
        history = [saved]
        print(f"resuming {out} at step {logs_done * log_every} of {config.train.steps}")
        log.write(f"resumed at step {logs_done * log_every} of {config.train.steps} from checkpoint.npz")

    start = last_checkpoint = time.time()
    checkpoint_logs = logs_done if checkpoint is not None else None
    bar = tqdm(total=num_runs * config.train.steps, initial=num_runs * logs_done * log_every,
               unit="run·step", unit_scale=True, disable=not progress, dynamic_ncols=True,
               desc=f"{config.name}: {num_runs} runs, {grid_run.plan.describe()}")
    try:
        while logs_done < total_logs:
            calls = sizer.next(total_logs - logs_done)
            seconds, compiled = 0.0, False
            for n in calls:
                tick = time.perf_counter()
                states, metrics = grid_run.advance(states, n)  # returns host arrays: the call has finished
                took = time.perf_counter() - tick
                compiled |= sizer.record(n, took)
                seconds += took
                history.append(metrics)
                logs_done += n
                bar.update(num_runs * n * log_every)
            n = sum(calls)
            wrote_checkpoint = False
            if time.time() - last_checkpoint > config.execution.checkpoint_every_s and logs_done < total_logs:
                history = [join_logs(history)]
                leaves = [np.asarray(x) for x in jax.tree.leaves(unpad(states, num_runs))]
                results.save_checkpoint(out / "checkpoint.npz", digest, logs_done, leaves, history[0])
                last_checkpoint, checkpoint_logs, wrote_checkpoint = time.time(), logs_done, True
            log.chunk(logs_done * log_every, config.train.steps, num_runs, n, n * log_every, seconds, compiled,
                      time.time() - start, wrote_checkpoint, grid_run.plan.devices)
    except BaseException as e:
        log.write(f"stopped ({type(e).__name__}) at step {logs_done * log_every} of {config.train.steps}; " + (
            "no checkpoint yet: running again starts from step 0" if checkpoint_logs is None else
            f"running again resumes from the checkpoint at step {checkpoint_logs * log_every}"))
        raise
    finally:
        bar.close()
    wall = time.time() - start

    metrics = join_logs(history)
    steps = np.arange(0, config.train.steps + 1, log_every)
    atomic_write_text(out / "config.toml", experiment.to_toml(config))
    results.write_trajectories(out, steps, metrics, runs, config)
    rows = analysis.summarize(steps, metrics, runs, config)
    results.write_summary(out, rows)
    meta = {
        "config_digest": digest, "runs": num_runs, "steps": config.train.steps, "train_wall_s": round(wall, 2),
        "execution": grid_run.plan.describe(), "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.local_devices()], "jax": jax.__version__,
        "python": platform.python_version(), "machine": platform.machine(),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    out_results = finish(out, draw)
    atomic_write_text(out / "meta.json", json.dumps(meta, indent=2))
    (out / "checkpoint.npz").unlink(missing_ok=True)
    log.write(f"finished: {config.train.steps} steps × {num_runs} runs, trained for {wall:.1f} s; results written")
    out_results.meta = meta
    return out_results


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
    """DIR/progress.log: lines appended and flushed one at a time (see the module docstring)."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def write(self, text: str) -> None:
        stamp = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(f"{stamp}  {text}\n")
            f.flush()

    def chunk(self, step: int, steps: int, runs: int, logs: int, chunk_steps: int, seconds: float, compiled: bool,
              elapsed: float, checkpoint: bool, devices: int) -> None:
        rate = runs * chunk_steps / max(seconds, 1e-9)
        device = device_peak_bytes(devices)
        self.write(f"step {step}/{steps} ({100 * step / steps:.1f}%)  {runs} runs  "
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


def finish(out: Path, draw: bool = True) -> results.Results:
    """Load a results directory and draw its figures (also used by `nht report`). Drawing holds the folder's lock,
    so a redraw never races a sweep writing the same folder (within `nht run`, which holds it already, it nests)."""
    from nht_jax.report import figures

    if not draw or not Path(out).is_dir():
        return results.load_results(out)  # (a missing folder: "holds no results")
    with lock.hold(out, "nht report"):
        loaded = results.load_results(out)
        figures.draw_all(loaded)
    return loaded


__all__ = ["default_out", "finish", "run_sweep"]
