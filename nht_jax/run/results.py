"""Results directories: checkpoints, the files of a finished sweep, and `load_results(path)`.

A results directory holds
    config.toml        the fully resolved configuration
    trajectories.npz   step (L,), every metric as metric/<name> (runs, L), every run's grid values as
                       hparam/<axis> (runs,), the grid's axes as axis/<name> (for a zipped or random axis, the
                       values of its group's points in order; config.toml's grid.zip names the groups)
                       With an execution.stop_rule also stopped_step (runs,): the step at which each run left
                       the batch (NaN: it trained the whole budget); its metrics after that step hold their value
                       at it (`nht_jax.run.stopping`)
    summary.csv        one row per run (see `nht_jax.run.summaries.summarize`), plus a stopped_step column with
                       an execution.stop_rule
    meta.json          how and where it ran; written last, so its presence marks completion
    phase_diagram.png, trajectories.png, and the domain's extra figures (e.g. phase_lambda_rho.png)
    checkpoint.npz     only while a sweep is unfinished (resume point): the run-chunks' bounds and which are done
                       (with their metrics), and for the run-chunk in progress its step, the states of its runs
                       still training, its metrics so far and its stopped runs (`Checkpoint`); with static axes
                       also the bucket in progress and the finished buckets' metrics. A grid larger than
                       memory is trained in run-chunks one after another (`nht_jax.engine.memory`); the results are
                       their concatenation in run order, the same as one run-chunk's
    progress.log       the memory plan (runs per run-chunk) in its "started" line, one line per chunk (time,
                       steps, rate, memory, checkpoints), one per group of runs a stop rule removed, appended while
                       training: follow it with `tail -f`
    .lock              held by the nht process writing this folder (nht_jax.run.lock); empty when none is
    analysis.md, predictions.csv, … written by `nht analyze` (nht_jax.analysis.analyze)
A grid with static axes (`grid.width = [32, 64]`: one compiled bucket per value, `experiment.Config.buckets`) is
one results directory like any other: its runs are the buckets' runs in order, the static axis a column of
hparam/, axis/ and summary.csv; a metric that some bucket does not record is NaN for that bucket's runs.
Every file is written atomically (`nht_jax.base.atomic`).
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from nht_jax import experiment
from nht_jax.base.atomic import atomic_write_bytes, atomic_write_text, npz_bytes
from nht_jax.base.errors import ConfigError
from nht_jax.base.presets import read_toml
from nht_jax.engine import grid as grid_lib
from nht_jax.experiment import Config


def prepare_out_dir(path: Path) -> Path:
    """Create the directory and prove it is writable, before any training."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write_probe"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise ConfigError(f"cannot write results to '{path}': {e.strerror or e}. "
                          f"Choose a writable folder with --out DIR.") from None
    return path


# ----------------------------------------------------------------------------- checkpoints

class Checkpoint(NamedTuple):
    """A checkpoint's content. The run axis is cut into run-chunks at `bounds` (K + 1 run indices); run-chunks
    before `chunk` are done (`done_metrics` (bounds[chunk], L) and `done_stopped` for their runs); when
    `in_progress`, run-chunk `chunk` stopped after `logs_done` log intervals: `metrics` (its runs, logs_done + 1),
    `stopped` (its runs; NaN = still training), `active` (indices within the run-chunk of the runs still
    training) and `state_leaves` (the flattened states of those runs, unpadded)."""

    logs_done: int
    state_leaves: list
    metrics: dict
    bounds: list
    chunk: int
    in_progress: bool
    active: np.ndarray
    stopped: np.ndarray
    done_metrics: dict
    done_stopped: np.ndarray
    bucket: int = 0
    """With static axes (`experiment.Config.buckets`): the bucket these run-chunk fields belong to; the buckets
    before it are done, their runs' metrics in `bucket_metrics` (runs, L) and stopped steps in `bucket_stopped`."""
    bucket_metrics: dict = {}
    bucket_stopped: np.ndarray = np.zeros(0)


def save_checkpoint(path: Path, digest: str, logs_done: int, state_leaves: list, metrics: dict,
                    extra: dict | None = None) -> None:
    """Atomically write the run states (unpadded) and the metrics so far; `extra`: the run-chunk fields of
    `Checkpoint` (bounds, chunk, in_progress, active, stopped, done_metrics, done_stopped), and with static axes
    its bucket fields (bucket, bucket_metrics, bucket_stopped)."""
    arrays = {f"state/{i}": np.asarray(leaf) for i, leaf in enumerate(state_leaves)}
    arrays.update({f"metric/{k}": np.asarray(v) for k, v in metrics.items()})
    arrays["digest"] = np.asarray(digest)
    arrays["logs_done"] = np.asarray(logs_done)
    for key, value in (extra or {}).items():
        if key in ("done_metrics", "bucket_metrics"):
            arrays.update({f"{key[:-1]}/{k}": np.asarray(v) for k, v in value.items()})
        else:
            arrays[key] = np.asarray(value)
    atomic_write_bytes(path, npz_bytes(arrays))


def read_checkpoint(path: Path, digest: str) -> Checkpoint | None:
    """The whole checkpoint, or None when absent; ConfigError when it belongs to another configuration or cannot
    be read. One without run-chunk fields (written before run-chunks existed) is one run-chunk of every run, in
    progress, every run training."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        with np.load(path) as data:
            saved_digest = str(data["digest"])
            n_state = sum(1 for k in data.files if k.startswith("state/"))
            leaves = [data[f"state/{i}"] for i in range(n_state)]
            metrics = {k[len("metric/"):]: data[k] for k in data.files if k.startswith("metric/")}
            done = {k[len("done_metric/"):]: data[k] for k in data.files if k.startswith("done_metric/")}
            logs_done = int(data["logs_done"])
            if "bounds" in data.files:
                bounds = [int(b) for b in data["bounds"]]
                chunk, in_progress = int(data["chunk"]), bool(data["in_progress"])
                active, stopped, done_stopped = data["active"], data["stopped"], data["done_stopped"]
            else:
                runs = len(next(iter(metrics.values())))
                bounds, chunk, in_progress = [0, runs], 0, True
                active, stopped, done_stopped = np.arange(runs), np.full(runs, np.nan), np.zeros(0)
            bucket = int(data["bucket"]) if "bucket" in data.files else 0
            bucket_metrics = {k[len("bucket_metric/"):]: data[k] for k in data.files if k.startswith("bucket_metric/")}
            bucket_stopped = data["bucket_stopped"] if "bucket_stopped" in data.files else np.zeros(0)
    except (OSError, ValueError, KeyError, EOFError, StopIteration, zipfile.BadZipFile) as e:
        raise ConfigError(f"'{path}' is not a readable checkpoint ({type(e).__name__}: {e}). Delete it to train "
                          f"from the start, or pass --overwrite.") from None
    if saved_digest != digest:
        raise ConfigError(f"'{path}' is a checkpoint of a different configuration. Use another --out "
                          f"folder, or pass --overwrite to discard it.")
    return Checkpoint(logs_done, leaves, metrics, bounds, chunk, in_progress, np.asarray(active, int),
                      np.asarray(stopped, float), done, np.asarray(done_stopped, float), bucket, bucket_metrics,
                      np.asarray(bucket_stopped, float))


def load_checkpoint(path: Path, digest: str):
    """(logs_done, state_leaves, metrics) of the run-chunk in progress, or None when absent (`read_checkpoint`
    gives the rest)."""
    checkpoint = read_checkpoint(path, digest)
    return None if checkpoint is None else (checkpoint.logs_done, checkpoint.state_leaves, checkpoint.metrics)


# ----------------------------------------------------------------------------- results

def write_trajectories(out: Path, steps: np.ndarray, metrics: dict, runs: dict, config: Config,
                       stopped_step: np.ndarray | None = None) -> None:
    arrays = {"step": np.asarray(steps)}
    if stopped_step is not None:
        arrays["stopped_step"] = np.asarray(stopped_step, float)
    arrays.update({f"metric/{k}": np.asarray(v) for k, v in metrics.items()})
    arrays.update({f"hparam/{k}": np.asarray(v) for k, v in runs.items()})
    arrays.update({f"axis/{k}": np.asarray(v) for k, v in config.grid.items()})
    atomic_write_bytes(out / "trajectories.npz", npz_bytes(arrays))


def write_summary(out: Path, rows: list[dict]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_value(v) for k, v in row.items()})
    atomic_write_text(out / "summary.csv", buffer.getvalue())


def csv_value(v):
    """A summary cell as text: NaN as an empty cell, floats to 6 significant digits."""
    if isinstance(v, (float, np.floating)):
        return "" if np.isnan(v) else f"{v:.6g}"
    return v


def read_summary(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return [{k: parse_cell(v) for k, v in row.items()} for row in csv.DictReader(f)]


def parse_cell(text: str):
    """Inverse of `csv_value`: empty → NaN, True/False → bool, then int, float, else the text."""
    if text == "":
        return float("nan")
    if text in ("True", "False"):
        return text == "True"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


@dataclass
class Results:
    """A loaded results directory; metrics[name] has shape (runs, logs), runs in grid order;
    hparams[axis] has shape (runs,); axes[axis] holds the axis values."""

    path: Path
    config: Config
    steps: np.ndarray
    metrics: dict[str, np.ndarray]
    hparams: dict[str, np.ndarray]
    axes: dict[str, np.ndarray]
    summary: list[dict] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    stopped_step: np.ndarray | None = None  # (runs,) with an execution.stop_rule (NaN: trained the whole budget)

    @property
    def domain(self):
        return self.config.domain

    @property
    def num_runs(self) -> int:
        return len(self.hparams["weight_decay"])

    @property
    def grid_kind(self) -> str:
        """"product" or "irregular" (zipped or random axes: no one-dimension-per-axis shape)."""
        return self.config.grid_kind

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """(len(axis) for each axis, in grid order); only a product grid has one."""
        if self.grid_kind != grid_lib.PRODUCT:
            groups = "; ".join(" with ".join(g) for g in self.config.zipped)
            raise ConfigError(f"'{self.path}' holds an irregular grid (paired, not crossed: {groups}), which has no "
                              f"shape per axis; use metrics[name] (runs, logs) with hparams[axis] (runs,) or "
                              f"select(axis=value) instead")
        return grid_lib.shape(self.axes)

    def as_grid(self, name: str) -> np.ndarray:
        """metrics[name] reshaped to (len(axis) for each axis, in grid order) + (logs,); a product grid only
        (an irregular grid raises ConfigError: use metrics[name] with hparams)."""
        return self.metrics[name].reshape(*self.grid_shape, -1)

    def select(self, **values) -> np.ndarray:
        """Indices of runs whose grid values equal the given ones (floats compared to 1e-6 relative)."""
        keep = np.ones(self.num_runs, bool)
        for name, value in values.items():
            if name not in self.hparams:
                raise ConfigError(f"unknown axis {name!r}; this results directory's axes are {list(self.hparams)}")
            keep &= np.isclose(self.hparams[name].astype(float), float(value), rtol=1e-6, atol=0)
        return np.flatnonzero(keep)


def load_results(path) -> Results:
    """Load a results directory written by `nht run`."""
    path = Path(path)
    if not (path / "trajectories.npz").exists():
        raise ConfigError(f"'{path}' holds no results (no trajectories.npz). Run `nht run --out {path}` first.")
    config = experiment.from_dict(read_toml(path / "config.toml"))
    with np.load(path / "trajectories.npz") as data:
        steps = data["step"]
        metrics = {k[len("metric/"):]: data[k] for k in data.files if k.startswith("metric/")}
        hparams = {k: data[f"hparam/{k}"] for k in config.grid}
        axes = {k: data[f"axis/{k}"] for k in config.grid}
        stopped_step = data["stopped_step"] if "stopped_step" in data.files else None
    summary = read_summary(path / "summary.csv") if (path / "summary.csv").exists() else []
    meta = json.loads((path / "meta.json").read_text()) if (path / "meta.json").exists() else {}
    return Results(path, config, steps, metrics, hparams, axes, summary, meta, stopped_step)


__all__ = ["Checkpoint", "Results", "load_checkpoint", "load_results", "prepare_out_dir", "read_checkpoint",
           "read_summary", "save_checkpoint", "write_summary", "write_trajectories"]
