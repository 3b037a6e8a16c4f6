"""Results directories: atomic writes, checkpoints, and `load_results(path)`.

A results directory holds
    config.toml        the fully resolved configuration
    trajectories.npz   step (L,), every metric as (runs, L), every hyperparameter as (runs,),
                       the grid axes as axis/<name>
    summary.csv        one row per run (see `nht_jax.analysis.summarize`)
    meta.json          how and where it ran; written last, so its presence marks completion
    phase_diagram.png, trajectories.png
    phase_lambda_rho.png, clean_vs_rho.png, layer_norms.png   when the grid varies ρ (nht_jax.plots_rho)
    checkpoint.npz     only while a sweep is unfinished (resume point)
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nht_jax import config as config_lib
from nht_jax.config import AXES, Config, ConfigError
from nht_jax.grid import HParams


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over `path`."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def npz_bytes(arrays: dict) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


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


def config_digest(config: Config) -> str:
    """Hash of everything that changes results (the execution settings of `train` excluded)."""
    data = config_lib.to_dict(config)
    for key in ("strategy", "runs_per_batch", "shard", "chunk_logs", "checkpoint_every_s"):
        data["train"].pop(key)
    data.pop("description")
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------- checkpoints

def save_checkpoint(path: Path, digest: str, logs_done: int, state_leaves: list, metrics: dict) -> None:
    arrays = {f"state/{i}": np.asarray(leaf) for i, leaf in enumerate(state_leaves)}
    arrays.update({f"metric/{k}": np.asarray(v) for k, v in metrics.items()})
    arrays["digest"] = np.asarray(digest)
    arrays["logs_done"] = np.asarray(logs_done)
    atomic_write_bytes(path, npz_bytes(arrays))


def load_checkpoint(path: Path, digest: str):
    """(logs_done, state_leaves, metrics) or None when absent; error when it belongs to another config."""
    if not Path(path).exists():
        return None
    with np.load(path) as data:
        if str(data["digest"]) != digest:
            raise ConfigError(f"'{path}' is a checkpoint of a different configuration. Use another --out "
                              f"folder, or pass --overwrite to discard it.")
        n_state = sum(1 for k in data.files if k.startswith("state/"))
        leaves = [data[f"state/{i}"] for i in range(n_state)]
        metrics = {k[len("metric/"):]: data[k] for k in data.files if k.startswith("metric/")}
        return int(data["logs_done"]), leaves, metrics


# ----------------------------------------------------------------------------- results

def write_trajectories(out: Path, steps: np.ndarray, metrics: dict, hparams: HParams, config: Config) -> None:
    arrays = {"step": np.asarray(steps)}
    arrays.update({f"metric/{k}": np.asarray(v) for k, v in metrics.items()})
    arrays.update({f"hparam/{k}": np.asarray(v) for k, v in hparams._asdict().items()})
    arrays.update({f"axis/{k}": np.asarray(getattr(config.grid, k)) for k in AXES})
    atomic_write_bytes(out / "trajectories.npz", npz_bytes(arrays))


def write_summary(out: Path, rows: list[dict]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _csv_value(v) for k, v in row.items()})
    atomic_write_text(out / "summary.csv", buffer.getvalue())


def _csv_value(v):
    if isinstance(v, float):
        return "" if np.isnan(v) else f"{v:.6g}"
    return v


def read_summary(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return [{k: _parse_cell(v) for k, v in row.items()} for row in csv.DictReader(f)]


def _parse_cell(text: str):
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
    """A loaded results directory; metrics[name] has shape (runs, logs), runs in grid order."""

    path: Path
    config: Config
    steps: np.ndarray
    metrics: dict[str, np.ndarray]
    hparams: HParams
    axes: dict[str, np.ndarray]
    summary: list[dict] = field(default_factory=list)
    meta: dict = field(default_factory=dict)

    @property
    def num_runs(self) -> int:
        return len(self.hparams.weight_decay)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(len(self.axes[k]) for k in AXES)

    def as_grid(self, name: str) -> np.ndarray:
        """metrics[name] reshaped to (len(axis) for axis in AXES) + (logs,)."""
        return self.metrics[name].reshape(*self.grid_shape, -1)

    def select(self, **values) -> np.ndarray:
        """Indices of runs whose hyperparameters equal the given values (floats compared to 1e-6 relative)."""
        keep = np.ones(self.num_runs, bool)
        for name, value in values.items():
            if name not in AXES:
                raise KeyError(f"unknown axis {name!r}; axes are {AXES}")
            keep &= np.isclose(getattr(self.hparams, name).astype(float), float(value), rtol=1e-6, atol=0)
        return np.flatnonzero(keep)


def load_results(path) -> Results:
    """Load a results directory written by `nht run`."""
    path = Path(path)
    if not (path / "trajectories.npz").exists():
        raise ConfigError(f"'{path}' holds no results (no trajectories.npz). Run `nht run --out {path}` first.")
    with open(path / "config.toml", "rb") as f:
        config = config_lib.from_dict(tomllib.load(f))
    with np.load(path / "trajectories.npz") as data:
        steps = data["step"]
        metrics = {k[len("metric/"):]: data[k] for k in data.files if k.startswith("metric/")}
        n_runs = len(data["hparam/weight_decay"])
        # directories written before an axis existed hold its default value
        defaults = config_lib.GridConfig()
        hparams = HParams(**{k: data[f"hparam/{k}"] if f"hparam/{k}" in data.files
                             else np.full(n_runs, getattr(defaults, k)[0]) for k in AXES})
        axes = {k: data[f"axis/{k}"] if f"axis/{k}" in data.files else np.asarray(getattr(defaults, k)) for k in AXES}
    summary = read_summary(path / "summary.csv") if (path / "summary.csv").exists() else []
    meta = json.loads((path / "meta.json").read_text()) if (path / "meta.json").exists() else {}
    return Results(path, config, steps, metrics, hparams, axes, summary, meta)
