"""Shards: one grid trained as K independent parts (`nht run PRESET --shards K --shard I`), merged afterwards into one
results folder (`nht_jax.training.merge`, `nht merge`). A shard is what a job of a job array trains
(`nht_jax.training.submit`, `nht submit`): shards start, fail and resume independently.

The partition (`partition`) is deterministic, from the grid alone: whole static buckets per shard when K ≤ B, else
each bucket's runs cut into contiguous blocks; every shard is one contiguous block of the grid's runs. A shard
writes into its own results folder OUT/shards/I-of-K, whose digest names the shard (`shard_digest`) so another
shard's checkpoint or results are refused. Forks, snapshots and several processes per shard are refused.

The partition, a shard's folder and what is refused: docs/guides/execution.md, "Shards and job arrays"."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.experiment import Config
from nht_jax.measure import stopping
from nht_jax.results import folder as results
from nht_jax.results import lock, provenance
from nht_jax.training import loop

# re-exported: callers read these from shards
from nht_jax.training.partition import NAME, SHARDS_FOLDER, of_name, parse  # noqa: F401
from nht_jax.training.partition import (
    Shard,
    bucket_sizes,
    folder,
    partition,
    refuse_unsupported,
    run_range,
    runs_of,
    shard_digest,
)
from nht_jax.training.buckets import train_buckets
from nht_jax.training.hooks import default_hooks
from nht_jax.training.sweep import make_trainer, resolve_references, write_results


def describe(config: Config, shard: Shard, digest: str) -> dict:
    """A shard folder's "shard" entry of meta.json.

    Args:
        config: the configuration.
        shard: the shard.
        digest: the configuration's digest.

    Returns:
        {"index", "count", "config_digest", "runs": [start, stop]}.
    """
    start, stop = runs_of(config, shard)
    return {"index": shard.index, "count": shard.count, "config_digest": digest, "runs": [start, stop]}


def finished_already(where: Path, digest: str, overwrite: bool, config: Config) -> bool:
    """Clear the shard folder for --overwrite, or whether it holds this shard's finished results. Another shard's
    or configuration's: ConfigError; a meta.json of this shard with damaged files: ConfigError; no meta.json:
    unfinished (a checkpoint of something else is refused when read)."""
    if overwrite:
        note = results.clear_folder(where, config).note(where)
        if note:
            print(note)
        return False
    found = results.check_folder(where)
    if found.meta is None:
        return False
    if found.meta.get("config_digest") != digest:
        raise ConfigError(
            f"'{where}' already holds results of another shard or configuration. Use another --out "
            f"folder, or pass --overwrite to replace them."
        )
    if not found.complete:
        raise ConfigError(
            f"'{where}' holds damaged results of this shard: {found.files_problem}. Pass --overwrite to train it again."
        )
    return True


def run_shard(config: Config, out: Path, shard: Shard, progress: bool = True, overwrite: bool = False) -> Path:
    """Train a shard of the configuration's grid into OUT/shards/I-of-K (module docstring), holding that folder's lock,
    resuming from its checkpoint.

    Args:
        config: the configuration.
        out: the results folder the shards merge into.
        shard: the shard (I of K).
        progress: print the progress.
        overwrite: clear the shard folder first (--overwrite).

    Returns:
        The shard folder.
    """
    provenance.code_at_start()  # the code this process trains with, before anything trains (meta.json's "code")
    refuse_unsupported(config)
    where = folder(out, shard)
    lock.raise_if_held(where, "nht run")
    config, _, measured = resolve_references(config)
    sizes = bucket_sizes(config)
    parts = partition(sizes, shard.count)[shard.index]
    start, stop = run_range(sizes, parts)
    experiment.check_fits(config)
    buckets = config.buckets()
    first_bucket, first_config = parts[0][0], buckets[parts[0][0]][1]
    # the data the whole grid's sweep would give this part: its first bucket's is the whole configuration's
    data = config.domain.load_data(config) if first_bucket == 0 else first_config.domain.load_data(first_config)
    digest = shard_digest(stopping.results_digest(config), shard)
    with contextlib.ExitStack() as held:
        where = results.prepare_out_dir(held.enter_context(lock.hold(where, "nht run")))
        if finished_already(where, digest, overwrite, config):
            print(f"{where} already holds {shard.label} of this configuration (pass --overwrite to train it again).")
            return where
        print(f"{shard.label}: runs {start}–{stop - 1} of {sum(sizes)} into {where}")
        if config.static:
            chosen = [(buckets[b][0], buckets[b][1], sliced(buckets[b][1].runs(), lo, hi)) for b, lo, hi in parts]
            trained, bucket_meta = train_buckets(config, data, where, digest, progress, overwrite, chosen)
        else:
            runs = sliced(config.runs(), start, stop)
            sweep = loop.Sweep(config, make_trainer(config, data, None), runs, data, where, digest)
            trained, bucket_meta = loop.train(sweep, default_hooks(config, progress, overwrite)), None
        write_results(
            where,
            config,
            digest,
            sliced(config.runs(), start, stop),
            trained,
            bucket_meta,
            None,
            measured,
            run_index=np.arange(start, stop),
            extra_meta={"shard": describe(config, shard, stopping.results_digest(config))},
        )
    return where


def sliced(runs: dict, lo: int, hi: int) -> dict:
    """Runs lo … hi − 1 of {axis: (runs,) array}."""
    return {k: np.asarray(v)[lo:hi] for k, v in runs.items()}


__all__ = ["describe", "run_shard"]
