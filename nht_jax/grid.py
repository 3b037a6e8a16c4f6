"""The grid of dynamic hyperparameters: a Cartesian product of per-axis value lists."""

from __future__ import annotations

import itertools
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from nht_jax.config import AXES, GridConfig


class HParams(NamedTuple):
    """Dynamic hyperparameters of one run (scalars) or of a grid (leading run axis)."""

    weight_decay: jnp.ndarray
    learning_rate: jnp.ndarray
    seed: jnp.ndarray
    init_scale: jnp.ndarray
    train_fraction: jnp.ndarray
    rho: jnp.ndarray  # border correlation of image tasks (token tasks ignore it)


def axis_values(grid: GridConfig) -> dict[str, tuple]:
    return {name: tuple(getattr(grid, name)) for name in AXES}


def grid_shape(grid: GridConfig) -> tuple[int, ...]:
    return tuple(len(getattr(grid, name)) for name in AXES)


def varied_axes(grid: GridConfig) -> list[str]:
    """Axes with more than one value, in grid order."""
    return [name for name in AXES if len(getattr(grid, name)) > 1]


def expand(grid: GridConfig) -> HParams:
    """All runs of the grid as HParams with a leading run axis (row-major over AXES)."""
    rows = list(itertools.product(*(getattr(grid, name) for name in AXES)))
    cols = list(zip(*rows))
    return HParams(
        weight_decay=np.asarray(cols[0], np.float32),
        learning_rate=np.asarray(cols[1], np.float32),
        seed=np.asarray(cols[2], np.uint32),
        init_scale=np.asarray(cols[3], np.float32),
        train_fraction=np.asarray(cols[4], np.float32),
        rho=np.asarray(cols[5], np.float32),
    )


def single(**values) -> HParams:
    """One run's HParams from keyword values (missing ones from GridConfig defaults)."""
    default = GridConfig()
    return HParams(**{name: np.asarray(values.get(name, getattr(default, name)[0]),
                                       np.uint32 if name == "seed" else np.float32) for name in AXES})


def num_runs(hparams: HParams) -> int:
    return int(np.shape(hparams.weight_decay)[0])


def take(hparams: HParams, index) -> HParams:
    return HParams(*(np.asarray(v)[index] for v in hparams))
