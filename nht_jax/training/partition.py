"""Which runs each shard of a grid trains, and where: the partition of `nht_jax.training.shards` (the rule in
docs/guides/execution.md), the shard folders' names (OUT/shards/I-of-K) and identity (`shard_digest`). Pure: no
JAX, no training, so `nht merge` and `nht submit` read it without building anything."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.engine import grid as grid_lib
from nht_jax.experiment import Config

SHARDS_FOLDER = "shards"
NAME = re.compile(r"^(\d+)-of-(\d+)$")


class Shard(NamedTuple):
    """Shard `index` (0 … count − 1) of `count`."""

    index: int
    count: int

    @property
    def name(self) -> str:
        """Its folder's name: "I-of-K"."""
        return f"{self.index}-of-{self.count}"

    @property
    def label(self) -> str:
        return f"shard {self.index} of {self.count}"


def parse(count: int | None, index: int | None) -> Shard | None:
    """--shards K and --shard I as a `Shard` (None when neither is given); a one-line ConfigError otherwise."""
    if count is None and index is None:
        return None
    if count is None or index is None:
        raise ConfigError("--shards K and --shard I go together: --shards 4 --shard 0 trains the first of 4 shards")
    if count < 1:
        raise ConfigError(f"--shards must be ≥ 1, got {count}")
    if not 0 <= index < count:
        raise ConfigError(f"--shard must be 0 … {count - 1} with --shards {count}, got {index}")
    return Shard(index, count)


def of_name(name: str) -> Shard | None:
    """The shard a folder named "I-of-K" holds, or None for another name."""
    found = NAME.match(name)
    return Shard(int(found[1]), int(found[2])) if found and int(found[1]) < int(found[2]) else None


def folder(out: Path, shard: Shard) -> Path:
    """Where a shard of the results folder `out` trains: OUT/shards/I-of-K.

    Args:
        out: the results folder.
        shard: the shard (I of K).

    Returns:
        The shard's folder.
    """
    return Path(out) / SHARDS_FOLDER / shard.name


def shard_digest(digest: str, shard: Shard) -> str:
    """A shard folder's identity: the configuration's results digest plus the shard."""
    return f"{digest}+shard-{shard.name}"


def partition(sizes: list[int], count: int) -> list[list[tuple[int, int, int]]]:
    """The parts of each of `count` shards of a grid (module docstring). ConfigError when a shard would be empty.

    Args:
        sizes: the runs of each of the grid's buckets.
        count: K, the shards.

    Returns:
        Per shard a list of (bucket, lo, hi), runs lo … hi − 1 of that bucket.
    """
    buckets, total = len(sizes), sum(sizes)
    if count > total:
        raise ConfigError(f"--shards {count} is more shards than the grid has runs ({total}): use at most {total}")
    if count <= buckets:
        return [
            [(b, 0, sizes[b]) for b in range(i * buckets // count, (i + 1) * buckets // count)] for i in range(count)
        ]
    shards = []
    for b, size in enumerate(sizes):
        here = (b + 1) * count // buckets - b * count // buckets
        if here > size:
            raise ConfigError(
                f"--shards {count} gives bucket {b + 1} of {buckets} {here} shards but it has only "
                f"{size} runs: use at most {buckets * min(sizes)} shards, or a multiple of {buckets} "
                f"up to {total}"
            )
        cuts = [j * size // here for j in range(here + 1)]
        shards.extend([[(b, cuts[j], cuts[j + 1])] for j in range(here)])
    return shards


def bucket_sizes(config: Config) -> list[int]:
    """The number of runs of each bucket (one bucket without static axes), in run order."""
    if not config.static:
        return [grid_lib.num_runs(config.runs())]
    return [grid_lib.num_runs(sub.runs()) for _, sub in config.buckets()]


def run_range(sizes: list[int], parts: list[tuple[int, int, int]]) -> tuple[int, int]:
    """The grid's runs [start, stop) a shard's parts cover (contiguous by construction)."""
    offsets = np.cumsum([0, *sizes])
    return int(offsets[parts[0][0]] + parts[0][1]), int(offsets[parts[-1][0]] + parts[-1][2])


def runs_of(config: Config, shard: Shard) -> tuple[int, int]:
    """The grid's runs [start, stop) that shard `shard` trains."""
    sizes = bucket_sizes(config)
    return run_range(sizes, partition(sizes, shard.count)[shard.index])


def refuse_unsupported(config: Config) -> None:
    """What shards cannot do yet, in one line (module docstring)."""
    if config.fork is not None:
        raise ConfigError(
            "--shards cannot train a [fork] (each run starts from another folder's snapshot): train it in one `nht run`"
        )
    if config.execution.snapshot_steps or config.execution.snapshot_at_fit:
        raise ConfigError(
            "--shards cannot keep snapshots (execution.snapshot_steps, snapshot_at_fit): a merge does "
            "not join snapshots.npz; train it in one `nht run`"
        )


__all__ = ["NAME", "folder", "partition"]
