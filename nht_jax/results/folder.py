"""Results directories: checkpoints, the files of a finished sweep, and `load_results(path)`.

A results directory holds config.toml, trajectories.npz, summary.csv, meta.json (written last, with the manifest
of the files before it), the figures, and while it trains progress.log, checkpoint.npz, .lock, the live table's
files and snapshots.npz; `nht analyze` adds its own. `Checkpoint` is the resume point of an unfinished sweep. A
folder is complete or it is not (`check_folder`, run by `load_results` and so by `nht report`, `nht analyze`,
`nht paper bound`, and by `nht run` before it trusts finished results); anything else ends in a one-line
ConfigError naming the file and what to do (`require_complete`). Every file is written atomically
(`nht_jax.base.atomic`).

What each file holds: docs/guides/run.md ("Running a sweep"); the completeness check and damaged folders:
docs/guides/faults.md."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from nht_jax import experiment
from nht_jax.base.atomic import TMP_PATTERN, atomic_write_bytes, atomic_write_text, npz_bytes, remove_stale_temporaries
from nht_jax.base import plugins
from nht_jax.base.errors import ConfigError
from nht_jax.base.presets import read_toml
from nht_jax.engine import grid as grid_lib
from nht_jax.config.schedule import LogSchedule
from nht_jax.experiment import Config
from nht_jax.results import lock
from nht_jax.measure.stopping import results_digest


def prepare_out_dir(path: Path) -> Path:
    """Create the directory and prove it is writable, before any training: a probe file is written atomically
    and removed (on every path, so a full disk leaves no empty probe behind). Held under the folder's lock
    (`nht_jax.results.lock`), it also removes the temporaries of atomic writes that a killed process left
    (`nht_jax.base.atomic.remove_stale_temporaries`)."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(
            f"cannot write results to '{path}': {e.strerror or e}. Choose a writable folder with --out DIR."
        ) from None
    probe = path / ".write_probe"
    try:
        atomic_write_bytes(probe, b"ok")
    finally:
        probe.unlink(missing_ok=True)
    if lock.holds(path):
        remove_stale_temporaries(path)
    return path


# ----------------------------------------------------------------------------- checkpoints


class Checkpoint(NamedTuple):
    """A checkpoint's content. The run axis is cut into run slices at `bounds` (K + 1 run indices); run slices
    before `run_slice` are done (`done_metrics` (bounds[run_slice], L) and `done_stopped` for their runs); when
    `in_progress`, run slice `run_slice` stopped after `logs_done` log intervals: `metrics` (its runs,
    logs_done + 1), `stopped` (its runs; NaN = still training), `active` (indices within the run slice of the runs
    still training) and `state_leaves` (the flattened states of those runs, unpadded). Stored as the key
    "run_slice"; checkpoints of older code name it "chunk" and are read the same."""

    logs_done: int
    state_leaves: list
    metrics: dict
    bounds: list
    run_slice: int
    in_progress: bool
    active: np.ndarray
    stopped: np.ndarray
    done_metrics: dict
    done_stopped: np.ndarray
    bucket: int = 0
    """With static axes (`experiment.Config.buckets`): the bucket these run slice fields belong to; the buckets
    before it are done, their runs' metrics in `bucket_metrics` (runs, L) and stopped steps in `bucket_stopped`."""
    bucket_metrics: dict = {}
    bucket_stopped: np.ndarray = np.zeros(0)


def save_checkpoint(
    path: Path, digest: str, logs_done: int, state_leaves: list, metrics: dict, extra: dict | None = None
) -> None:
    """Atomically write the run states (unpadded) and the metrics so far; `extra`: the run slice fields of
    `Checkpoint` (bounds, run_slice, in_progress, active, stopped, done_metrics, done_stopped), and with static axes
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
    be read. One without run slice fields (written before run slices existed) is one run slice of every run, in
    progress, every run training."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            saved_digest = str(data["digest"])
            n_state = sum(1 for k in data.files if k.startswith("state/"))
            leaves = [data[f"state/{i}"] for i in range(n_state)]
            metrics = {k[len("metric/") :]: data[k] for k in data.files if k.startswith("metric/")}
            done = {k[len("done_metric/") :]: data[k] for k in data.files if k.startswith("done_metric/")}
            logs_done = int(data["logs_done"])
            if "bounds" in data.files:
                bounds = [int(b) for b in data["bounds"]]
                run_slice = int(data["run_slice" if "run_slice" in data.files else "chunk"])  # "chunk": older code
                in_progress = bool(data["in_progress"])
                active, stopped, done_stopped = data["active"], data["stopped"], data["done_stopped"]
            else:
                runs = len(next(iter(metrics.values())))
                bounds, run_slice, in_progress = [0, runs], 0, True
                active, stopped, done_stopped = np.arange(runs), np.full(runs, np.nan), np.zeros(0)
            bucket = int(data["bucket"]) if "bucket" in data.files else 0
            bucket_metrics = {k[len("bucket_metric/") :]: data[k] for k in data.files if k.startswith("bucket_metric/")}
            bucket_stopped = data["bucket_stopped"] if "bucket_stopped" in data.files else np.zeros(0)
    except (OSError, ValueError, KeyError, EOFError, StopIteration, zipfile.BadZipFile) as e:
        raise ConfigError(
            f"'{path}' is not a readable checkpoint ({type(e).__name__}: {e}). Delete it to train "
            f"from the start, or pass --overwrite."
        ) from None
    if saved_digest != digest:
        raise ConfigError(
            f"'{path}' is a checkpoint of a different configuration. Use another --out "
            f"folder, or pass --overwrite to discard it."
        )
    return Checkpoint(
        logs_done,
        leaves,
        metrics,
        bounds,
        run_slice,
        in_progress,
        np.asarray(active, int),
        np.asarray(stopped, float),
        done,
        np.asarray(done_stopped, float),
        bucket,
        bucket_metrics,
        np.asarray(bucket_stopped, float),
    )


def load_checkpoint(path: Path, digest: str):
    """(logs_done, state_leaves, metrics) of the run slice in progress, or None when absent (`read_checkpoint`
    gives the rest)."""
    checkpoint = read_checkpoint(path, digest)
    return None if checkpoint is None else (checkpoint.logs_done, checkpoint.state_leaves, checkpoint.metrics)


# ----------------------------------------------------------------------------- results


def write_trajectories(
    out: Path, steps: np.ndarray, metrics: dict, runs: dict, config: Config, stopped_step: np.ndarray | None = None
) -> None:
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
    with open(path, newline="", encoding="utf-8") as f:
        return [{k: parse_cell(v) for k, v in row.items()} for row in csv.DictReader(f)]


def parse_cell(text: str):
    """Inverse of `csv_value`: empty → NaN, True/False → bool, then int, float, else the text."""
    if text == "":
        return float("nan")
    if text in ("True", "False"):
        return text == "True"
    return number_or_text(text)


def number_or_text(text: str):
    """The text as an int when it reads as one, else as a float when it reads as one, else the text itself."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


@dataclass
class Results:
    """The results of a sweep: every run's logged metrics, grid values and summary row.

    What `nht_jax.load_results(folder)` reads from a results folder and `nht_jax.sweep(...)` returns. Runs are in
    grid order (row-major over the grid's axes); `summary[i]`, `metrics[name][i]` and `hparams[axis][i]` are run i.

    Attributes:
        path: the results folder, or None for a sweep run in memory (`nht_jax.sweep(..., out=None)`).
        config: the fully resolved configuration (`nht_jax.Config`, the folder's config.toml).
        steps: (logs,) the logged steps.
        metrics: {name: (runs, logs) array} every recorded metric; a family's members are `family/member`
            (`layer_norm_sq/head`).
        hparams: {axis: (runs,) array} each run's grid value (float32 axes as trained).
        axes: {axis: values} the grid's axes as configured.
        summary: one dict per run (summary.csv): the axes, `regime`, `T_fit`, `T_transition`, `delay`, …
        meta: how and where the sweep ran (meta.json).
        stopped_step: (runs,) the step at which each run stopped with an `stop.rule` (NaN: it trained
            the whole budget); None without a stop rule.
        partial: (step, total) for the results of an unfinished sweep read so far (`load_results(...,
            partial=True)`, the section "unfinished folders" below); None for finished results.
        live_history: the rows of the sweep's live_history.csv (`nht_jax.training.live`: every forecast made while
            training), kept for results without a folder; None: read from the folder when needed.

    Examples:
        >>> res = nht_jax.load_results("runs/out/default")
        >>> res.summary[0]["regime"], res.metrics["test_acc"].shape
        ('weak', (24, 101))
    """

    path: Path | None
    config: Config
    steps: np.ndarray
    metrics: dict[str, np.ndarray]
    hparams: dict[str, np.ndarray]
    axes: dict[str, np.ndarray]
    summary: list[dict] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    stopped_step: np.ndarray | None = None  # (runs,) with an stop.rule (NaN: trained the whole budget)
    live_history: list[dict] | None = None  # live_history.csv's rows, for results without a folder
    partial: tuple[int, int] | None = None  # (step, total) of an unfinished sweep read with --partial

    @property
    def domain(self):
        """The configuration's domain (`nht_jax.domains.Domain`)."""
        return self.config.domain

    @property
    def num_runs(self) -> int:
        """How many runs the grid has."""
        return len(self.hparams["weight_decay"])

    @property
    def grid_kind(self) -> str:
        """ "product" or "irregular" (zipped or random axes: no one-dimension-per-axis shape)."""
        return self.config.grid_kind

    @property
    def not_logged(self) -> tuple[str, ...]:
        """The recorded metrics these results hold as not logged (NaN throughout): an import whose logs lacked them
        (`nht import` without a ‖θ‖²: ("norm_sq",)); () for every sweep nht trained."""
        imported = self.meta.get("imported") if isinstance(self.meta, dict) else None
        found = imported.get("not_logged", ()) if isinstance(imported, dict) else ()
        return tuple(found) if isinstance(found, (list, tuple)) else ()

    @property
    def shard(self) -> dict | None:
        """meta.json's "shard" entry of one shard's folder (`nht run … --shards K --shard I`: index, count, runs
        [start, stop) of the whole grid's); None for a whole grid."""
        found = self.meta.get("shard") if isinstance(self.meta, dict) else None
        return found if isinstance(found, dict) else None

    @property
    def shard_text(self) -> str:
        """What a shard's folder holds, "shard 0 of 2, runs 0–7 of 16" (`shard_note`); "" for a whole grid."""
        return shard_note(self)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """(len(axis) for each axis, in grid order); only a whole product grid has one (not a shard of it)."""
        if self.shard is not None:
            raise ConfigError(
                f"'{self.path}' is {shard_note(self)}: a block of the grid, with no shape per axis; "
                f"use metrics[name] (runs, logs) with hparams[axis] (runs,), or merge the shards (nht "
                f"merge) for the whole grid"
            )
        if self.grid_kind != grid_lib.PRODUCT:
            groups = "; ".join(" with ".join(g) for g in self.config.zipped)
            where = "this sweep in memory" if self.path is None else f"'{self.path}'"
            raise ConfigError(
                f"{where} holds an irregular grid (paired, not crossed: {groups}), which has no "
                f"shape per axis; use metrics[name] (runs, logs) with hparams[axis] (runs,) or "
                f"select(axis=value) instead"
            )
        return grid_lib.shape(self.axes)

    def as_grid(self, name: str) -> np.ndarray:
        """One metric with one dimension per grid axis.

        Args:
            name: a metric of `metrics`.

        Returns:
            metrics[name] reshaped to (len(axis) for each axis, in grid order) + (logs,). A product grid only: an
            irregular grid raises ConfigError (use metrics[name] with hparams).

        Examples:
            >>> res.as_grid("test_acc").shape  # (weight_decay, seed, …, logs)
        """
        return self.metrics[name].reshape(*self.grid_shape, -1)

    def select(self, **values) -> np.ndarray:
        """The runs with the given grid values.

        Args:
            **values: axis = value; floats are compared to 1e-6 relative.

        Returns:
            The indices of the matching runs, in grid order.

        Examples:
            >>> res.select(weight_decay=0.72, seed=0)
            array([3])
        """
        keep = np.ones(self.num_runs, bool)
        for name, value in values.items():
            if name not in self.hparams:
                raise ConfigError(f"unknown axis {name!r}; this results directory's axes are {list(self.hparams)}")
            keep &= np.isclose(self.hparams[name].astype(float), float(value), rtol=1e-6, atol=0)
        return np.flatnonzero(keep)

    def to_xarray(self, squeeze: bool = True):
        """The results as an `xarray.Dataset` (needs the `xarray` extra; `nht_jax.results.export.to_xarray`).

        One dimension per grid axis (an irregular grid: one dimension `run`) and `step`; every metric is a variable
        over them (a metric family gets one more dimension, e.g. `layer`), every summary column a variable over
        the run dimensions.

        Args:
            squeeze: drop the grid axes with a single value (the seed of a one-seed sweep, a fixed learning rate),
                each kept as a scalar coordinate, so `ds.test_acc` is (weight_decay, step) for a sweep over λ
                alone. False keeps every axis a dimension, so `ds.test_acc.shape` equals `as_grid("test_acc").shape`.

        Returns:
            xarray.Dataset.

        Examples:
            >>> ds = res.to_xarray()
            >>> ds.test_acc.plot.line(x="step", hue="weight_decay")
        """
        from nht_jax.results.export import to_xarray

        return to_xarray(self, squeeze=squeeze)

    def to_pandas(self):
        """The results as two pandas DataFrames (needs the `xarray` extra; `nht_jax.results.export.to_pandas`).

        Returns:
            (long, summary): long has one row per (run, metric, step) with columns run, the axes, step, metric,
            value; summary is summary.csv, one row per run.

        Examples:
            >>> long, summary = res.to_pandas()
            >>> summary[["weight_decay", "regime", "T_transition"]]
        """
        from nht_jax.results.export import to_pandas

        return to_pandas(self)


# ----------------------------------------------------------------------------- complete or not

RESULT_FILES = ("trajectories.npz", "summary.csv", "config.toml")
"""The files of a finished sweep, in the order the sweep writes them; meta.json, written after them, lists them."""


FOLDER_FILES = {
    "results": (*RESULT_FILES, "meta.json", "snapshots.npz"),
    "sweep": ("checkpoint.npz", "progress.log", "live.csv", "live_history.csv", "live.png", ".write_probe"),
    "figures": ("phase_diagram.png", "trajectories.png"),
    "analysis": (
        "analysis.md",
        "predictions.csv",
        "delay_fits.csv",
        "boundaries.csv",
        "phase_boundaries.png",
        "delay_fits.png",
        "separation.csv",
        "layer_order.csv",
        "delay_predictor.csv",
        "structure.csv",
        "emergence.csv",
        "emergence.png",
        "interventions.csv",
        "intervention_fits.csv",
        "interventions.png",
        "early_warning.csv",
        "early_warning_runs.csv",
        "early_warning.png",
        "forecast_scores.csv",
        "forecast_runs.csv",
        "forecast.png",
        "forecast_tfit_scores.csv",
        "forecast_tfit_runs.csv",
        "analysis_partial.json",
    ),
    "bound": ("bound_table.csv", "bound_report.md", "bound.png"),
}
"""Every file the project itself writes into a results folder, by who writes it: `nht run` (results, sweep,
figures; the domain's extra figures are added by `known_files`), `nht analyze` (the registered analyses' tables and
figures), `nht paper bound`. `clear_folder` (`nht run --overwrite`, `nht import --overwrite`) removes exactly these, the
export folders `EXPORT_FOLDERS` and the atomic writer's temporaries; the lock `.lock` stays (it is held)."""

FIGURE_FORMATS = ("png", "pdf", "svg")
"""The formats a figure of the list may also be written in (`nht_jax.figures.style.FORMATS`, `--format`): `x.png`
stands for `x.pdf` and `x.svg` too (`known_files`)."""

EXPORT_FOLDERS = ("tensorboard", "wandb")
"""The folders `nht export` writes into a results folder (`nht_jax.results.export.KINDS`), each marked by its
`.nht-export.json`; one without that marker is not the project's."""

EXPORT_MARKER = ".nht-export.json"


def known_files(config: Config | None = None, folder: Path | None = None) -> frozenset[str]:
    """The names of `FOLDER_FILES`, with the extra figures of `config`'s domain and of the domain that `folder`'s
    config.toml names (a built-in one: nothing outside the package is imported to read a folder), each figure in
    every one of `FIGURE_FORMATS`.

    Args:
        config: a configuration (None: none).
        folder: a results folder whose config.toml names a domain (None: none).

    Returns:
        The file names.
    """
    from nht_jax import domains

    names = {name for group in FOLDER_FILES.values() for name in group}
    if config is not None:
        names.update(config.domain.figures)
    try:
        task = read_toml(Path(folder) / "config.toml").get("task", {}).get("name") if folder is not None else None
    except (ConfigError, OSError):
        task = None
    module = domains.builtin_module(task)
    if module is not None:
        names.update(module.DOMAIN.figures)
    figures = [name.removesuffix(".png") for name in names if name.endswith(".png")]
    return frozenset(names | {f"{stem}.{fmt}" for stem in figures for fmt in FIGURE_FORMATS})


class Cleared(NamedTuple):
    """What `clear_folder` did: the project's files and export folders it removed, and the entries it left (not
    written by the project)."""

    removed: tuple[str, ...]
    left: tuple[str, ...]

    def note(self, folder: Path) -> str:
        """One line naming the entries left ("" when none)."""
        if not self.left:
            return ""
        shown = ", ".join(self.left[:5]) + (f" and {len(self.left) - 5} more" if len(self.left) > 5 else "")
        return (
            f"note: '{folder}' also holds {shown}, which nht did not write: left as they are (move them away "
            f"if they belong to the results replaced)"
        )


def clear_folder(path: Path, config: Config | None = None) -> Cleared:
    """Remove what the project wrote into the results folder `path` (`known_files`, the export folders holding
    their marker, the atomic writer's temporaries), meta.json first and config.toml second, so that from the first
    removal the folder no longer passes as complete nor names a configuration. Symbolic links are removed as links
    (never followed); `.lock` stays; anything else is left and named in `Cleared.left`. Call it holding the lock.

    Args:
        path: the results folder.
        config: its configuration, for the domain's extra figures (None: the folder's own config.toml).

    Returns:
        The Cleared: the names removed, and those left.
    """
    path = Path(path)
    known = known_files(config, path)
    removed, left = [], []
    for name in ("meta.json", "config.toml"):
        if os.path.lexists(path / name):
            (path / name).unlink()
            removed.append(name)
    for entry in sorted(os.scandir(path), key=lambda e: e.name):
        name = entry.name
        if name == lock.LOCK_NAME:
            continue
        if (
            name in EXPORT_FOLDERS
            and entry.is_dir(follow_symlinks=False)
            and os.path.lexists(Path(entry.path) / EXPORT_MARKER)
        ):
            shutil.rmtree(entry.path)
            removed.append(name + "/")
        elif (name in known or TMP_PATTERN.match(name)) and not entry.is_dir(follow_symlinks=False):
            os.unlink(entry.path)
            removed.append(name)
        else:
            left.append(name + ("/" if entry.is_dir(follow_symlinks=False) else ""))
    return Cleared(tuple(removed), tuple(left))


def file_record(path: Path) -> dict:
    """{"bytes": size, "sha256": hex digest} of one file."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"bytes": Path(path).stat().st_size, "sha256": digest.hexdigest()}


def write_meta(out: Path, meta: dict) -> dict:
    """Write meta.json (atomically, last): `meta` plus "files", the manifest of `RESULT_FILES` as they are now on
    disk; returns what it wrote. From this moment the folder is complete (`check_folder`)."""
    out = Path(out)
    names = RESULT_FILES + (("snapshots.npz",) if meta.get("snapshots") else ())  # `nht_jax.training.snapshots`
    sealed = {**meta, "files": {name: file_record(out / name) for name in names}}
    atomic_write_text(out / "meta.json", json.dumps(sealed, indent=2))
    return sealed


class FolderCheck(NamedTuple):
    """What `check_folder` found. meta_problem: why meta.json does not mark the folder finished ("" when it
    does); files_problem: the first result file missing, damaged or unreadable ("" when none); digest: the
    configuration the folder holds (meta.json's config_digest, else its config.toml's; None when neither says);
    manifest: whether meta.json lists the files' sizes and checksums (folders of older code do not)."""

    path: Path
    meta: dict | None
    meta_problem: str
    files_problem: str
    digest: str | None
    config: Config | None
    manifest: bool

    @property
    def complete(self) -> bool:
        return not self.meta_problem and not self.files_problem

    @property
    def empty(self) -> bool:
        """No result file and no meta.json: nothing to trust or to protect."""
        return self.meta is None and not any((self.path / name).exists() for name in (*RESULT_FILES, "meta.json"))


def read_meta(path: Path) -> tuple[dict | None, str]:
    """(meta.json's content, "") or (None, why it does not mark the folder finished)."""
    meta_path = Path(path) / "meta.json"
    if not meta_path.exists():
        return None, "meta.json is missing (the sweep did not finish)"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:  # ValueError: JSONDecodeError and UnicodeDecodeError
        return None, f"meta.json is damaged ({type(e).__name__})"
    if not isinstance(meta, dict) or not isinstance(meta.get("config_digest"), str):
        return None, "meta.json is damaged (no config_digest)"
    return meta, ""


def manifest_problem(path: Path, files: dict) -> str:
    """The first file of the manifest `files` that is missing or differs in size or checksum ("" if none)."""
    for name, expected in files.items():
        file = Path(path) / name
        if not file.exists():
            return f"{name} is missing"
        found = file_record(file)
        if found["bytes"] != expected.get("bytes"):
            return f"{name} is damaged ({found['bytes']} bytes; meta.json's manifest says {expected.get('bytes')})"
        if found["sha256"] != expected.get("sha256"):
            return f"{name} is damaged (its checksum differs from meta.json's manifest)"
    return ""


def read_config(path: Path) -> tuple[Config | None, str]:
    """(the folder's config.toml as a Config, "") or (None, what is wrong with it). Code the config names outside
    the package is imported only as `plugins.reading` allows (an entry point, `--allow-import`, or what this process
    already loaded for the user); otherwise, or when it does not load, PluginError (not damage: it is raised)."""
    file = Path(path) / "config.toml"
    if not file.exists():
        return None, "config.toml is missing"
    try:
        with plugins.reading(f"'{path}'"):
            return experiment.from_dict(read_toml(file)), ""
    except plugins.PluginError:
        raise
    except (ConfigError, OSError, ValueError, TypeError) as e:  # ValueError: UnicodeDecodeError
        return None, f"config.toml cannot be read ({type(e).__name__})"


def trajectories_problem(path: Path, config: Config) -> str:
    """Why trajectories.npz is not this config's complete trajectories ("" if it is): every array read (which
    checks the zip's CRCs), step the logged steps, hparam/<axis> the config's runs, metric/<name> (runs, steps)."""
    file = Path(path) / "trajectories.npz"
    if not file.exists():
        return "trajectories.npz is missing"
    runs = config.runs()
    expected_steps = LogSchedule.of(config.train).steps
    try:
        with np.load(file, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
        return f"trajectories.npz cannot be read ({type(e).__name__})"
    num_runs = grid_lib.num_runs(runs)
    if "step" not in arrays or not np.array_equal(arrays["step"], expected_steps):
        return f"trajectories.npz does not hold the steps config.toml logs (0 to {config.train.steps})"
    for axis, values in runs.items():
        if not np.array_equal(arrays.get(f"hparam/{axis}", np.zeros(0)), np.asarray(values)):
            return f"trajectories.npz does not hold config.toml's runs (hparam/{axis})"
    metrics = [k for k in arrays if k.startswith("metric/")]
    bad = [k for k in metrics if arrays[k].shape != (num_runs, len(expected_steps))]
    if not metrics or bad:
        return f"trajectories.npz does not hold {num_runs} runs × {len(expected_steps)} logs of every metric"
    return ""


def summary_problem(path: Path, num_runs: int) -> str:
    """Why summary.csv is not a complete summary of `num_runs` runs ("" if it is)."""
    file = Path(path) / "summary.csv"
    if not file.exists():
        return "summary.csv is missing"
    try:
        with open(file, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except (OSError, ValueError, csv.Error) as e:  # ValueError: UnicodeDecodeError
        return f"summary.csv cannot be read ({type(e).__name__})"
    broken = [i for i, row in enumerate(rows) if None in row or None in row.values()]
    if broken or len(rows) != num_runs or (rows and "regime" not in rows[0]):
        return f"summary.csv does not hold one complete row per run ({len(rows)} rows for {num_runs} runs)"
    return ""


def check_folder(path) -> FolderCheck:
    """Whether the results folder `path` is complete, and if not which file is missing or damaged; reads, never
    raises. With a manifest in meta.json: every listed file present with its size and sha256. Without one (a
    folder of older code, or one whose meta.json is missing or damaged): every result file present and parseable
    and consistent with config.toml (`trajectories_problem`, `summary_problem`). Raises only PluginError: code its
    config.toml names that may not be imported (`read_config`).

    Args:
        path: the results folder.

    Returns:
        The FolderCheck: complete or not, and the problem.
    """
    path = Path(path)
    meta, meta_problem = read_meta(path)
    manifest = meta is not None and isinstance(meta.get("files"), dict)
    config, files_problem = read_config(path)
    if manifest:
        files_problem = manifest_problem(path, meta["files"]) or files_problem
    elif config is not None:
        files_problem = trajectories_problem(path, config) or summary_problem(path, grid_lib.num_runs(config.runs()))
        if meta is not None and not files_problem and results_digest(config) != meta["config_digest"]:
            files_problem = "config.toml is not the configuration meta.json names"
    digest = meta["config_digest"] if meta is not None else (results_digest(config) if config is not None else None)
    return FolderCheck(path, meta, meta_problem, files_problem, digest, config, manifest)


def unreadable_file(path: Path) -> str:
    """The first result file of the folder that is there but may not be read (permissions: an unreadable file, a
    folder without read access), as a one-line message; "" when every file present can be read."""
    for name in ("meta.json", *RESULT_FILES):
        file = Path(path) / name
        try:
            with open(file, "rb"):
                pass
        except FileNotFoundError:
            continue
        except PermissionError as e:
            return (
                f"cannot read '{file}': {e.strerror}; the folder's results are untouched. Give yourself read "
                f"access (chmod u+r, or ask the folder's owner), then run the same command again"
            )
        except OSError:
            continue  # (not a file, …: check_folder says what is wrong with it)
    return ""


def require_complete(path) -> FolderCheck:
    """`check_folder`, or a one-line ConfigError saying which file is missing, damaged or unreadable and what to
    do (a file that may not be read is never called damaged: deleting the folder is no advice for it)."""
    path = Path(path)
    unreadable = unreadable_file(path)
    if unreadable:
        raise ConfigError(unreadable)
    found = check_folder(path)
    if found.complete:
        return found
    if found.meta is None and (path / "checkpoint.npz").is_file():  # a stopped sweep: where, and how to resume it
        raise ConfigError(read_unfinished(path).text())
    if found.empty:
        raise ConfigError(
            f"'{path}' holds no results (no trajectories.npz, summary.csv, config.toml or meta.json). "
            f"Run `nht run --out {path}` first."
        )
    if found.meta_problem:
        detail = found.meta_problem + (f"; {found.files_problem}" if found.files_problem else "")
        raise ConfigError(
            f"'{path}' holds unfinished results: {detail}. Run `nht run` again with the same settings "
            f"and --out {path} to finish them, or delete the folder."
        )
    older = (
        "" if found.manifest else " (a folder without a manifest in meta.json: its files were checked by reading them)"
    )
    raise ConfigError(
        f"'{path}' holds damaged results: {found.files_problem}{older}. Run `nht run` with the same "
        f"settings, --out {path} and --overwrite to train them again, or delete the folder."
    )


def check_source_folder(path: Path, where: str, if_missing: str, if_incomplete: str) -> FolderCheck:
    """`check_folder` of the results folder a setting names as a source (`where`, e.g. "fork.from = '…'"); a
    one-line ConfigError, ending in the caller's advice, when it is no folder or not a complete one."""
    if not path.is_dir():
        raise ConfigError(f"{where}: no such results folder; {if_missing}")
    found = check_folder(path)
    if not found.complete:
        raise ConfigError(
            f"{where} is not a complete results folder ({found.meta_problem or found.files_problem}); {if_incomplete}"
        )
    return found


def load_results(path, allow_imports=(), partial: bool = False) -> Results:
    """Load a results directory written by `nht run`; a ConfigError unless it is complete (`require_complete`).

    Args:
        path: the results folder.
        allow_imports: modules (or import paths) outside the package its config.toml may name and that may be
            imported to read it (`nht_jax.base.plugins`; installed entry points need none).
        partial: an unfinished folder (a sweep stopped before its end: checkpoint.npz, no results yet) gives what it
            has logged so far, `Results.partial` set (section "unfinished folders"); without it such a folder is one
            line naming where it stopped and how to resume.

    Returns:
        The Results.
    """
    path = Path(path)
    with plugins.allowing(allow_imports):
        if partial:
            found_unfinished = read_unfinished(path)
            if found_unfinished is not None:
                if found_unfinished.config is None:
                    raise ConfigError(found_unfinished.text())
                return partial_results(found_unfinished)
        found = require_complete(path)
    config = found.config
    try:
        with np.load(path / "trajectories.npz", allow_pickle=False) as data:
            steps = data["step"]
            metrics = {k[len("metric/") :]: data[k] for k in data.files if k.startswith("metric/")}
            hparams = {k: data[f"hparam/{k}"] for k in config.grid}
            axes = {k: data[f"axis/{k}"] for k in config.grid}
            stopped_step = data["stopped_step"] if "stopped_step" in data.files else None
        summary = read_summary(path / "summary.csv")
    except (OSError, ValueError, KeyError, EOFError, TypeError, zipfile.BadZipFile) as e:
        raise ConfigError(
            f"'{path}' cannot be read ({type(e).__name__}: {e}). Run `nht run` with the same settings, "
            f"--out {path} and --overwrite to train it again, or delete the folder."
        ) from None
    return Results(path, config, steps, metrics, hparams, axes, summary, found.meta, stopped_step)


# ----------------------------------------------------------------------------- unfinished folders

"""Unfinished results folders: a sweep stopped before its end (a kill, Ctrl-C, a full disk) leaves its folder with
checkpoint.npz and progress.log but no summary.csv, trajectories.npz, config.toml or meta.json. The reading commands
(`nht report`, `nht analyze`, `nht export`, `nht_jax.load_results`) recognise it and say, in one line, where it
stopped and the command that resumes it; with `--partial` (`load_results(..., partial=True)`) they read what has
been logged so far, from the checkpoint, marked as partial in every output (`Results.partial`); reading writes no
result file, so the folder stays resumable.

The checkpoint names its configuration: since this module, checkpoint.npz carries the resolved configuration
(`CONFIG_KEY`, the text config.toml will hold; written by the training's checkpoint hook, read by nothing that
trains, so no result changes). `nht run --resume DIR` trains that configuration into DIR. A checkpoint of older
code, or of a sweep with static axes (whose checkpoints are written per bucket), names none: its folder keeps the
older message (run the command that started it again).

What `--partial` reads: the logged steps 0 … S of every run (S: the checkpoint's last logged step), their summary
computed as for finished results (`nht_jax.measure.summaries.summarize`, its cells as summary.csv reads them back)
over those steps. A sweep whose memory
plan cut the runs into several run slices has logged different steps for different runs: refused, saying so."""

CHECKPOINT_FILE = "checkpoint.npz"
CONFIG_KEY = "config_toml"
"""The checkpoint's array holding the resolved configuration as TOML text."""


class Unfinished(NamedTuple):
    """An unfinished folder: its configuration, its checkpoint (`folder.Checkpoint`), the last logged step of the
    run slice in progress and the steps it trains."""

    path: Path
    config: experiment.Config | None
    checkpoint: object
    step: int | None
    total: int | None

    def text(self) -> str:
        """The one line the reading commands say."""
        if self.config is None:
            return (
                f"'{self.path}' holds an unfinished sweep (checkpoint.npz, no results yet) whose checkpoint does "
                f"not name its configuration (older code, or static axes): run the command that started it again "
                f"to resume it, with --out {self.path}."
            )
        return (
            f"'{self.path}' is unfinished at step {self.step}/{self.total} (unfinished results: a checkpoint, no "
            f"summary yet); resume with `nht run --resume {self.path}`, or read what has been logged so far "
            f"with --partial."
        )


def checkpoint_config(path: Path) -> experiment.Config | None:
    """The configuration checkpoint.npz names (`CONFIG_KEY`), or None when it names none."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if CONFIG_KEY not in data.files:
                return None
            text = str(data[CONFIG_KEY])
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ConfigError(
            f"'{path}' is not a readable checkpoint ({type(e).__name__}: {e}). Delete it to train "
            f"from the start, or pass --overwrite."
        ) from None
    with plugins.reading(f"'{path.parent}'"):
        return experiment.from_dict(tomllib.loads(text))


def read_unfinished(path) -> Unfinished | None:
    """The folder as an unfinished sweep: checkpoint.npz present and meta.json absent; else None."""
    path = Path(path)
    if not (path / CHECKPOINT_FILE).is_file() or (path / "meta.json").exists():
        return None
    config = checkpoint_config(path / CHECKPOINT_FILE)
    if config is None:
        return Unfinished(path, None, None, None, None)
    checkpoint = read_checkpoint(path / CHECKPOINT_FILE, results_digest(config))
    steps = LogSchedule.of(config.train).steps
    return Unfinished(path, config, checkpoint, int(steps[checkpoint.logs_done]), int(config.train.steps))


def partial_results(found: Unfinished):
    """What `found` has logged so far as `folder.Results`, with `partial` = (step, total) (module docstring)."""
    from nht_jax.measure import summaries

    c, config = found.checkpoint, found.config
    runs = config.runs()
    num_runs = grid_lib.num_runs(runs)
    if list(c.bounds) != [0, num_runs] or not c.metrics:
        raise ConfigError(
            f"'{found.path}' trained its {num_runs} runs in {len(c.bounds) - 1} run slices, which have "
            f"logged different steps: --partial reads a sweep of one run slice; resume it with `nht run "
            f"--resume {found.path}` and read it when it has finished."
        )
    steps = LogSchedule.of(config.train).steps[: c.logs_done + 1]
    metrics = {name: np.asarray(values)[:, : len(steps)] for name, values in c.metrics.items()}
    summary = [
        {k: parse_cell(str(csv_value(v))) for k, v in row.items()}  # as summary.csv would read back
        for row in summaries.summarize(steps, metrics, runs, config)
    ]
    meta = {
        "config_digest": results_digest(config),
        "runs": num_runs,
        "steps": config.train.steps,
        "partial": {"step": found.step, "of": found.total},
    }
    res = Results(
        found.path,
        config,
        steps,
        metrics,
        {k: np.asarray(v) for k, v in runs.items()},
        {k: np.asarray(v) for k, v in config.grid.items()},
        summary,
        meta,
    )
    res.partial = (found.step, found.total)
    return res


def shard_note(res) -> str:
    """What a shard's folder holds, for a title or a report ("" for a whole grid): "shard 0 of 2, runs 0–7 of 16"."""
    shard = getattr(res, "shard", None)
    if not shard:
        return ""
    start, stop = shard["runs"]
    total = grid_lib.num_runs(res.config.runs())
    return f"shard {shard['index']} of {shard['count']}, runs {start}–{stop - 1} of {total}"


def partial_note(res) -> str:
    """The mark of partial results in a title or a report ("" for finished ones): "partial: step 40 of 80"."""
    partial = getattr(res, "partial", None)
    return f"partial: step {partial[0]} of {partial[1]}" if partial else ""


__all__ = ["Unfinished", "FOLDER_FILES", "clear_folder", "known_files", "Results", "check_folder", "load_results"]
