"""The follow-up papers' per-seed files in: one `.npz` per configuration cell, as the authors' public repositories
store them (ClevixLab/critical-norm-grokking: data/<experiment>/metrics/*.npz; ClevixLab/grokking-logit-scale:
metrics/<experiment>/*.npz; docs/papers/follow-up-data.md).

Not `nht import` (nht_jax.results.import_logs): their trajectories are logged on a geometric step grid that a
results folder cannot hold without interpolating, and their claims rest on a per-seed scalar, the grokking step.
So this reads the scalars (T_grok per seed, the cell's hyperparameters, ‖θ‖ at T_grok: `norm_at_grok`), nothing
else. Numbers only: no JAX, no writes; a file that is not such a cell is a ConfigError naming the file and the key.

The fields read, a cell's key and why a reader of its own: docs/papers/follow-up-data.md, "Provenance of the
reference table"."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nht_jax.base.errors import ConfigError

REQUIRED = ("T_grok_per_seed", "p", "arm")
WEIGHTS_SUFFIX = "_weights.npz"


@dataclass(frozen=True)
class SeedCell:
    """One configuration cell of their data: where it came from (`path`, relative to the repository root when read
    with `read_tree`) and its per-seed grokking steps (`t_grok`, ≤ 0 = did not grok)."""

    experiment: str
    path: str
    p: int
    arm: str
    rho: float
    lr: float
    wd: float
    tau: float
    t_fork: int
    wc: float
    t_grok: tuple[int, ...]
    norm_at_grok: tuple[float, ...] = ()
    """‖θ‖ at each seed's T_grok (NaN for a seed that did not grok); empty when the file logs no weight norm."""

    @property
    def key(self) -> tuple:
        return (self.experiment, self.p, self.arm, round(self.rho, 4), self.lr, self.wd, round(self.tau, 4))

    @property
    def grokked(self) -> np.ndarray:
        """The grokking steps of the seeds that grokked."""
        t = np.asarray(self.t_grok, np.float64)
        return t[t > 0]

    @property
    def critical_norm(self) -> float:
        """The mean ‖θ‖ at T_grok over the seeds that grokked: the cell's W_c (NaN when none grokked or no norm
        was logged)."""
        norms = np.asarray(self.norm_at_grok, np.float64)
        norms = norms[np.isfinite(norms)]
        return float(norms.mean()) if norms.size else float("nan")

    @property
    def delays(self) -> np.ndarray:
        """T_grok − t_fork of the seeds that grokked (the fork's delay; T_grok itself when there is no fork)."""
        return self.grokked - self.t_fork


def scalar(data, name: str, default=None, path: Path | None = None):
    if name in data.files:
        return data[name].item()
    if default is None:
        raise ConfigError(f"{path}: no '{name}' in this file; a follow-up cell has {', '.join(REQUIRED)}")
    return default


def experiment_of(path: Path) -> str:
    """The experiment a cell file belongs to: its folder, or the one above when that is `metrics`."""
    return path.parent.parent.name if path.parent.name == "metrics" else path.parent.name


def read_cell(path, experiment: str | None = None, relative_to=None) -> SeedCell:
    """One of their per-cell files. `experiment` defaults to the folder the file is in (its parent, or the
    grandparent when the parent is `metrics`)."""
    path = Path(path)
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise ConfigError(f"{path}: not a readable .npz ({error})") from None
    with data:
        missing = [name for name in REQUIRED if name not in data.files]
        if missing:
            raise ConfigError(
                f"{path}: no {', '.join(repr(m) for m in missing)} in this file; a follow-up cell "
                f"has {', '.join(REQUIRED)}"
            )
        t_grok = np.asarray(data["T_grok_per_seed"])
        if t_grok.ndim != 1 or not t_grok.size or not np.issubdtype(t_grok.dtype, np.number):
            raise ConfigError(
                f"{path}: T_grok_per_seed must be a non-empty 1-D array of steps, got shape "
                f"{t_grok.shape} of {t_grok.dtype}"
            )
        wc = scalar(data, "wc", scalar(data, "wc_used", float("nan")))
        norms = norms_at(data, t_grok)
        experiment = experiment or experiment_of(path)
        shown = path.relative_to(relative_to).as_posix() if relative_to is not None else path.as_posix()
        return SeedCell(
            experiment,
            shown,
            int(scalar(data, "p", path=path)),
            str(scalar(data, "arm", path=path)),
            float(scalar(data, "rho", 0.0)),
            float(scalar(data, "lr", float("nan"))),
            float(scalar(data, "lam", float("nan"))),
            float(scalar(data, "tau", 1.0)),
            int(scalar(data, "t_fork", 0)),
            float(wc),
            tuple(int(x) for x in t_grok),
            norms,
        )


def norms_at(data, t_grok: np.ndarray) -> tuple[float, ...]:
    """‖θ‖ at each seed's T_grok, linear between the logged steps (NaN where the seed did not grok); () when the
    file has no `weight_norm` of shape (seeds, len(steps))."""
    if "weight_norm" not in data.files or "steps" not in data.files:
        return ()
    steps, norm = np.asarray(data["steps"], np.float64), np.asarray(data["weight_norm"], np.float64)
    if norm.shape != (t_grok.size, steps.size):
        return ()
    return tuple(float(np.interp(t, steps, row)) if t > 0 else float("nan") for t, row in zip(t_grok, norm))


def read_tree(root, experiments=None) -> list[SeedCell]:
    """Every cell file under `root` (a clone of their repository), in path order; `experiments`: only these
    folders. ConfigError when `root` is no folder or holds no cell."""
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(
            f"{root}: no such folder (a clone of ClevixLab/critical-norm-grokking or ClevixLab/grokking-logit-scale)"
        )
    files = sorted(f for f in root.rglob("*.npz") if not f.name.endswith(WEIGHTS_SUFFIX))
    if experiments is not None:
        files = [f for f in files if experiment_of(f) in set(experiments)]
    cells = [read_cell(f, relative_to=root) for f in files]
    if not cells:
        raise ConfigError(
            f"{root}: no per-seed cell file (*.npz with T_grok_per_seed)"
            + (f" in {', '.join(experiments)}" if experiments else "")
        )
    return cells


__all__ = []
