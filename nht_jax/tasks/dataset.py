"""A labelled token dataset and its per-run train/test split."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class Dataset(NamedTuple):
    """Every example of a task. inputs: (N, n_ctx) int32 tokens; labels: (N,) int32."""

    inputs: np.ndarray
    labels: np.ndarray
    vocab_size: int
    num_classes: int


def num_train(n_total: int, train_fraction):
    """Train-set size: round(fraction · N), at least 1 and at most N − 1."""
    return jnp.clip(jnp.round(train_fraction * n_total).astype(jnp.int32), 1, n_total - 1)


def train_capacity(n_total: int, fractions) -> int:
    """Static upper bound on the train-set size over a grid of fractions (rows computed per step)."""
    return int(min(max(round(f * n_total) for f in fractions), n_total - 1)) or 1


def split_permutation(split_key, n_total: int):
    """The run's ordering of all examples: train = the first num_train of it, test = the rest."""
    return jax.random.permutation(split_key, n_total)


def split_masks(split_key, n_total: int, train_fraction):
    """Boolean (train_mask, test_mask) over all N examples: disjoint and covering."""
    order = split_permutation(split_key, n_total)
    rank = jnp.zeros(n_total, jnp.int32).at[order].set(jnp.arange(n_total, dtype=jnp.int32))
    is_train = rank < num_train(n_total, train_fraction)
    return is_train, ~is_train


def numpy_split(seed_key, n_total: int, train_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Host-side train and test indices (sorted), identical to the in-trace split."""
    train, test = split_masks(seed_key, n_total, train_fraction)
    return np.flatnonzero(np.asarray(train)), np.flatnonzero(np.asarray(test))
