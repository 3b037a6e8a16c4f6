"""Buckets: a sweep over static axes, trained bucket after bucket.

A grid over a static setting the domain declares (`grid.width = [32, 64, 128]`, `experiment.Config.buckets`) is
trained bucket after bucket: each bucket is the configuration of its runs alone (the setting replaced), with its own
data, trainer, compiled programs, memory plan and run slices, exactly as if it were run on its own, into the same
folder, progress.log and checkpoint (one `nht_jax.training.loop` with its own hooks, `nht_jax.training.hooks`, per bucket).
The checkpoint records the bucket in progress and the finished buckets' metrics, so a sweep killed in bucket 2
resumes in bucket 2 (at its own last checkpoint, or at its start). The results are the buckets' metrics
concatenated in run order (the static axes vary slowest), with the union of their metric names (NaN for the runs of
a bucket that does not record one; meta.json names them), one trajectories.npz and one summary.csv. progress.log gets a "static axes" line, a " in bucket k/K (width = 64)" suffix
on the lines of each bucket, and "bucket k/K (width = 64) done" between them. A stop signal (`nht_jax.training.signals`)
received in a bucket's last call stops the sweep after that bucket's checkpoint, before the next one loads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.engine import distributed
from nht_jax.engine import grid as grid_lib
from nht_jax.experiment import Config
from nht_jax.training import loop
from nht_jax.results import folder as results
from nht_jax.results.blocks import merge_metrics, metrics_not_in_every_bucket
from nht_jax.training import signals
from nht_jax.training.hooks import default_hooks
from nht_jax.training.loop import CHECKPOINT, Bucket
from nht_jax.training.progress import PROGRESS_LOG, ProgressLog


def save_bucket_done(out: Path, digest: str, next_bucket: int, done_metrics: dict, done_stopped: np.ndarray) -> None:
    """The checkpoint between buckets: the finished buckets' metrics, and `next_bucket` to start from its step 0."""
    extra = {
        "bounds": np.asarray([0]),
        "run_slice": 0,
        "in_progress": False,
        "active": np.zeros(0, int),
        "stopped": np.zeros(0),
        "done_metrics": {},
        "done_stopped": np.zeros(0),
        "bucket": next_bucket,
        "bucket_metrics": done_metrics,
        "bucket_stopped": done_stopped,
    }
    if distributed.is_writer():
        results.save_checkpoint(out / CHECKPOINT, digest, 0, [], {}, extra)


def stop_between_buckets(log: ProgressLog, done: int, count: int) -> None:
    """After bucket `done` (0-based) and its checkpoint: `signals.Stopped` when a stop signal came (process 0's
    decision, for every process), with its line in progress.log."""
    signum = distributed.from_writer(signals.requested())
    if signum:
        text = (
            f"stopped ({signals.signal_name(signum)}) after bucket {done + 1}/{count}, the last completed; run "
            f"the same command again to resume from the checkpoint at the start of bucket {done + 2}/{count}"
        )
        log.write(text)
        raise signals.Stopped(signum, text)


def describe_bucket(values: dict, runs: int, trained: loop.Trained) -> dict:
    """A bucket's entry in meta.json's "buckets": its values and runs, then its loop's description."""
    described = trained.sweep.describe()
    return {
        "values": {n: (v.item() if hasattr(v, "item") else v) for n, v in values.items()},
        "runs": runs,
        **{k: described[k] for k in ("execution", "run_slices", "memory_plan", "train_wall_s", "profile")},
    }


def whole_buckets(config: Config) -> list[tuple[dict, Config, dict]]:
    """Every bucket of the grid as (static values, the bucket's configuration, its runs): what `train_buckets`
    trains when it is given no parts."""
    return [(values, sub, sub.runs()) for values, sub in config.buckets()]


def train_buckets(
    config: Config,
    first_data,
    out: Path,
    digest: str,
    progress: bool,
    overwrite: bool,
    parts: list[tuple[dict, Config, dict]] | None = None,
):
    """Train the buckets of a grid with static axes one after another (module docstring) → (the whole sweep's
    `loop.Trained`: every bucket's metrics {name: (runs, L)} and stopped_step (runs,), the buckets' wall seconds
    summed, the last bucket's loop and hooks; the meta.json fields of the buckets). `parts`: the (values, bucket
    configuration, runs) to train, in order (default `whole_buckets`; a shard, `nht_jax.training.shards`, trains
    some buckets or a block of one bucket's runs); `first_data` is the first part's data."""
    buckets = parts if parts is not None else whole_buckets(config)
    count = len(buckets)
    sizes = [grid_lib.num_runs(runs) for _, _, runs in buckets]
    log = ProgressLog(out / PROGRESS_LOG)
    checkpoint = distributed.writer_does(lambda: results.read_checkpoint(out / CHECKPOINT, digest))
    first = checkpoint.bucket if checkpoint is not None else 0
    done_metrics = dict(checkpoint.bucket_metrics) if checkpoint is not None else {}
    done_stopped = checkpoint.bucket_stopped if checkpoint is not None else np.zeros(0)
    if len(done_stopped) != sum(sizes[:first]):
        raise ConfigError(
            f"'{out / CHECKPOINT}' does not match this configuration's buckets. Delete it to "
            f"train from the start, or pass --overwrite."
        )
    axes = ", ".join(
        f"{name} = {list(config.grid[name])} ({spec.section}.{spec.key})" for name, spec in config.static.items()
    )
    log.write(
        f"static axes {axes}: {count} buckets ({', '.join(map(str, sizes))} runs), one compiled program "
        f"each, trained one after another" + (f"; buckets 1–{first} done (checkpoint)" if first else "")
    )
    wall, described, trained = 0.0, [], None
    for k in range(first, count):
        values, sub, runs = buckets[k]
        data = first_data if k == 0 else distributed.all_do(lambda: sub.domain.load_data(sub))
        bucket = Bucket(
            k,
            count,
            values,
            checkpoint if (checkpoint is not None and k == first) else None,
            done_metrics,
            done_stopped,
        )
        if distributed.is_writer():
            print(f"{bucket.label}: {sizes[k]} runs")
        sweep = loop.Sweep(sub, sub.domain.make_trainer(sub, data), runs, data, out, digest, bucket)
        trained = loop.train(sweep, default_hooks(sub, progress, overwrite))
        wall += trained.wall
        done_metrics = merge_metrics([(done_metrics, len(done_stopped)), (trained.metrics, len(trained.stopped_step))])
        done_stopped = np.concatenate([done_stopped, trained.stopped_step])
        described.append(describe_bucket(values, sizes[k], trained))
        if k < count - 1:
            save_bucket_done(out, digest, k + 1, done_metrics, done_stopped)
            log.write(f"{bucket.label} done (runs {sum(sizes[:k])}–{sum(sizes[: k + 1]) - 1}); checkpoint written")
            stop_between_buckets(log, k, count)
    partial = metrics_not_in_every_bucket(done_metrics, sizes)
    if partial:
        log.write(f"metrics not recorded by every bucket (NaN for the others' runs): {', '.join(partial)}")
    meta = {
        "static_axes": {name: list(config.grid[name]) for name in config.static},
        "buckets": described,
        "buckets_done_before_resume": first,
        "metrics_not_in_every_bucket": partial,
    }
    return trained._replace(metrics=done_metrics, stopped_step=done_stopped, wall=wall), meta


__all__ = []
