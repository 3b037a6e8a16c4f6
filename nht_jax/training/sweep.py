"""Run a whole grid into a results folder: `run_sweep`, holding the folder's lock (`nht_jax.results.lock`) throughout.

The work is split by job over the training layer: `loop` (run slices, then chunks, calling hooks), `hooks`,
`chunks`, `buckets` (static axes), `progress`, `snapshots`, `fork`, `critical`, `shards` (with `merge` and
`submit`). A *chunk* cuts time, a *run slice* cuts the run axis. Running the same command again resumes from the
last checkpoint; a second writer into the folder stops at its lock. With several processes
(`nht_jax.engine.distributed`) every process runs this same code on its share of the runs; process 0 alone
touches the results folder, and the others return None.

The modules and their jobs: docs/guides/execution.md ("Chunks, progress and checkpoints"); several processes and
their results against one: "Many processes (jax.distributed)"; the lock: docs/guides/faults.md."""

from __future__ import annotations

import contextlib
import importlib.metadata
import platform
import time
from pathlib import Path

import jax

from nht_jax import experiment
from nht_jax.base.atomic import atomic_write_text
from nht_jax.base.errors import ConfigError
from nht_jax.engine import distributed
from nht_jax.engine import grid as grid_lib
from nht_jax.experiment import Config
from nht_jax.training import critical
from nht_jax.training import fork
from nht_jax.results import lock
from nht_jax.training import loop
from nht_jax.results import folder as results
from nht_jax.results import partial_analysis, provenance
from nht_jax.training import snapshots
from nht_jax.measure import stopping
from nht_jax.measure import summaries
from nht_jax.training.buckets import train_buckets
from nht_jax.training.hooks import default_hooks
from nht_jax.training.progress import PROGRESS_LOG, ProgressLog


def default_out(config: Config) -> Path:
    """Where `nht run` writes when --out is not given: runs/out/<name> under the current directory."""
    return Path.cwd() / "runs" / "out" / config.name


def run_sweep(config: Config, out: Path, progress: bool = True, overwrite: bool = False) -> results.Results | None:
    """Train every run of config.grid and write the results directory `out` (no figures: the figures of a results
    folder are `nht_jax.figures.folder.redraw`'s), holding the folder's lock throughout.

    Args:
        config: the configuration.
        out: the results folder.
        progress: print the progress.
        overwrite: clear the folder first (--overwrite: every file the project wrote there goes).

    Returns:
        The results; with several processes every one calls this, process 0 writes and returns the results, the
        others return None (module docstring).
    """
    provenance.code_at_start()  # the code this process trains with, before anything trains (meta.json's "code")
    distributed.writer_does(lambda: lock.raise_if_held(out, "nht run"))  # another writer: fail before loading
    # references to other folders resolved (and refused) before anything is built; their values enter the digest
    config, start, measured = distributed.writer_does(lambda: resolve_references(config))
    distributed.all_do(lambda: experiment.check_fits(config))  # too large for this machine: before building data
    # missing or broken data fails here, before anything is written (on any process: every one stops)
    data = distributed.all_do(lambda: config.domain.load_data(config))
    with contextlib.ExitStack() as held:
        out = distributed.writer_does(lambda: results.prepare_out_dir(held.enter_context(lock.hold(out, "nht run"))))
        return _run_locked(config, data, out, progress, overwrite, start, measured)


def resolve_references(config: Config) -> tuple[Config, fork.ForkStart | None, list]:
    """Resolve what `config` takes from other results folders: norm clamps' W_c (`nht_jax.training.critical`), then
    [fork] (`nht_jax.training.fork`) → (config, what the forked runs start from, the W_c measurements)."""
    config, measured = critical.resolve(config)
    config, start = fork.prepare(config)
    return config, start, measured


def _finished_already(out: Path, digest: str, overwrite: bool, config: Config | None = None) -> bool:
    """Clear the way for --overwrite (`results.clear_folder`: every file the project wrote there goes), or say whether `out` holds this configuration's finished results
    (`results.check_folder`). Which configuration a folder holds: meta.json's digest, else (meta.json missing or
    damaged) its config.toml's, written after trajectories.npz and summary.csv so that results beside it are its
    own. Another configuration's, or a finished folder with a damaged file: ConfigError. This configuration's
    complete results without a valid meta.json get it again (then only the figures are redrawn); unfinished ones
    train (from the checkpoint when there is one)."""
    if overwrite:  # the completion mark and the identity first: from here a failure leaves nothing complete-looking
        note = results.clear_folder(out, config).note(out)  # and every other file of the earlier experiment
        if note:
            print(note)
        return False
    folder = results.check_folder(out)
    if folder.digest is None:
        return False  # nothing here names a configuration (a checkpoint of another one is refused when read)
    if folder.digest != digest:
        raise ConfigError(
            f"'{out}' already holds results of a different configuration. "
            f"Use another --out folder, or pass --overwrite to replace them."
        )
    if folder.complete:
        return True
    if not folder.meta_problem:
        raise ConfigError(
            f"'{out}' holds damaged results of this configuration: {folder.files_problem}. "
            f"Pass --overwrite to train them again, or delete the folder."
        )
    if folder.files_problem:
        print(
            f"{out} holds unfinished results of this configuration ({folder.meta_problem}; "
            f"{folder.files_problem}): training them."
        )
        return False
    config = folder.config
    results.write_meta(
        out,
        {
            "config_digest": digest,
            "runs": grid_lib.num_runs(config.runs()),
            "steps": config.train.steps,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "recovered": f"{folder.meta_problem}; written again by nht run from the folder's complete results "
            f"(how and where it trained is not known)",
        },
    )
    print(f"{out}: {folder.meta_problem}, but its results are complete: meta.json written again.")
    return True


def make_trainer(config: Config, data, start: fork.ForkStart | None):
    """The domain's trainer, starting from the fork's source states with a [fork], keeping snapshots when asked."""
    trainer = config.domain.make_trainer(config, data)
    if start is not None:
        trainer = fork.forked_trainer(trainer, config, start)
    return snapshots.capturing(trainer, config) if snapshots.requested(config) else trainer


def _run_locked(
    config: Config,
    data,
    out: Path,
    progress: bool,
    overwrite: bool,
    start: fork.ForkStart | None = None,
    measured: list = (),
) -> results.Results | None:
    digest = stopping.results_digest(config)
    if distributed.writer_does(lambda: _finished_already(out, digest, overwrite, config)):
        if not distributed.is_writer():
            return None
        print(f"{out} already holds finished results of this configuration (pass --overwrite to train again).")
        return results.load_results(out)

    runs = config.runs()
    if config.static:
        trained, bucket_meta = train_buckets(config, data, out, digest, progress, overwrite)
    else:
        sweep = loop.Sweep(config, make_trainer(config, data, start), runs, data, out, digest)
        trained, bucket_meta = loop.train(sweep, default_hooks(config, progress, overwrite)), None

    if not distributed.is_writer():
        return None
    return write_results(out, config, digest, runs, trained, bucket_meta, start, measured)


def write_results(
    out: Path,
    config: Config,
    digest: str,
    runs: dict,
    trained: loop.Trained,
    bucket_meta: dict | None,
    start: fork.ForkStart | None = None,
    measured: list = (),
    run_index=None,
    extra_meta: dict | None = None,
) -> results.Results:
    """Write a finished sweep's files into `out` (trajectories.npz, summary.csv, config.toml, then meta.json last),
    remove the checkpoint, log the end, and return the results. First, a partial analysis of the unfinished sweep
    (`nht analyze --partial`) is removed (`nht_jax.results.partial_analysis`). `runs` the runs trained;
    `run_index` their indices in the grid for summary.csv's "run" column (default 0, 1, …: the whole grid);
    `extra_meta` more meta.json fields (a shard's, `nht_jax.training.shards`)."""
    steps, metrics, stopped_step, wall = trained.steps, trained.metrics, trained.stopped_step, trained.wall
    removed = partial_analysis.note(partial_analysis.remove_partial(out), out)  # before the results it would outlive
    if removed:
        print(removed)
        ProgressLog(out / PROGRESS_LOG).write(removed)
    stops = stopping.StopRule(config.stop, config.analysis).active
    results.write_trajectories(out, steps, metrics, runs, config, stopped_step if stops else None)
    rows = summaries.summarize(steps, metrics, runs, config)
    for i, row in enumerate(rows):
        if run_index is not None:
            row["run"] = int(run_index[i])
        if stops:
            row["stopped_step"] = float(stopped_step[i])
    results.write_summary(out, rows)
    atomic_write_text(out / "config.toml", experiment.to_toml(config))  # after the results it names, before meta.json
    num_runs = grid_lib.num_runs(runs)
    meta = {
        "config_digest": digest,
        "runs": num_runs,
        "steps": config.train.steps,
        **trained.sweep.describe(),
        "train_wall_s": round(wall, 2),
        **environment(),
    }
    if bucket_meta is not None:
        meta.update(bucket_meta)
        meta["run_slices"] = sum(b.get("run_slices", 0) for b in bucket_meta["buckets"]) or meta["run_slices"]
    if start is not None:
        meta["fork"] = start.describe()
    if measured:
        meta["critical_norm"] = [m.describe() for m in measured]
    meta.update(trained.described())  # the hooks' parts: "snapshots", "stop_rule" and "runs_stopped"
    meta.update(extra_meta or {})
    meta = results.write_meta(out, meta)  # last: with its manifest of the files above, the folder is complete
    (out / "checkpoint.npz").unlink(missing_ok=True)
    stopped_text = f"; {meta['runs_stopped']} run(s) stopped early ({config.stop.rule})" if stops else ""
    buckets_text = f" in {len(bucket_meta['buckets'])} buckets" if bucket_meta is not None else ""
    ProgressLog(out / PROGRESS_LOG).write(
        f"finished: {config.train.steps} steps × {num_runs} runs{buckets_text}, "
        f"trained for {wall:.1f} s{stopped_text}; results written"
    )
    out_results = results.load_results(out)
    out_results.meta = meta
    return out_results


PACKAGES = ("jaxlib", "flax", "optax", "numpy")
"""Packages whose version can change a trained number in its last bits, recorded in meta.json beside jax's."""


def environment() -> dict:
    """meta.json's description of where the sweep ran: backend, processes, devices, versions (jax, python, and the
    installed versions of `PACKAGES`, which the dependency pins allow to vary), machine, time, and the code that
    trained it ("code": `nht_jax.results.provenance.code_at_start`, read as the sweep started).

    Returns:
        The description, a dict.
    """
    return {
        "backend": jax.default_backend(),
        "processes": jax.process_count(),
        "devices": [str(d) for d in jax.devices()],
        "jax": jax.__version__,
        "python": platform.python_version(),
        "packages": {name: importlib.metadata.version(name) for name in PACKAGES},
        "machine": platform.machine(),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "code": provenance.code_at_start(),
    }


__all__ = ["environment", "run_sweep"]
