"""Run a whole grid: one compiled program (`engine.executor.GridRun`), called chunk by chunk.

Each chunk advances every run by `execution.chunk_logs · log_every` steps in one compiled call; between chunks
Python updates the progress bar and, every `execution.checkpoint_every_s` seconds, writes a checkpoint
atomically (run states without the execution plan's padding, so a resume may use another plan). Running the
same command again resumes from it.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import jax
import numpy as np
from tqdm import tqdm

from nht_jax import experiment
from nht_jax.base.atomic import atomic_write_text
from nht_jax.base.errors import ConfigError
from nht_jax.engine.executor import GridRun, join_logs, pad_runs, unpad
from nht_jax.experiment import Config
from nht_jax.report import analysis
from nht_jax.run import results


def default_out(config: Config) -> Path:
    """Where `nht run` writes when --out is not given: runs/out/<name> under the current directory."""
    return Path.cwd() / "runs" / "out" / config.name


def run_sweep(config: Config, out: Path, progress: bool = True, overwrite: bool = False,
              draw: bool = True) -> results.Results:
    """Train every run of config.grid and write the results directory `out` (figures unless draw=False)."""
    data = config.domain.load_data(config)  # missing or broken data fails here, before anything is written
    out = results.prepare_out_dir(out)
    digest = experiment.digest(config)
    if overwrite:
        for name in ("checkpoint.npz", "meta.json"):
            (out / name).unlink(missing_ok=True)
    elif (out / "meta.json").exists():
        previous = json.loads((out / "meta.json").read_text())
        if previous.get("config_digest") != digest:
            raise ConfigError(f"'{out}' already holds results of a different configuration. "
                              f"Use another --out folder, or pass --overwrite to replace them.")
        print(f"{out} already holds finished results of this configuration; redrawing its report "
              f"(pass --overwrite to train again).")
        return finish(out, draw)

    runs = config.runs()
    grid_run = GridRun(config.domain.make_trainer(config, data), runs, config.execution)
    num_runs, total_logs, log_every = grid_run.num_runs, grid_run.trainer.num_logs, config.train.log_every
    checkpoint = results.load_checkpoint(out / "checkpoint.npz", digest)
    if checkpoint is None:
        logs_done = 0
        states, first = grid_run.start()
        history = [first]
    else:
        logs_done, leaves, saved = checkpoint
        structure = jax.tree.structure(jax.eval_shape(grid_run.init))  # the state's pytree, nothing computed
        states = jax.tree.unflatten(structure, [pad_runs(x, grid_run.plan.padded_runs) for x in leaves])
        history = [saved]
        print(f"resuming {out} at step {logs_done * log_every} of {config.train.steps}")

    start = last_checkpoint = time.time()
    bar = tqdm(total=num_runs * config.train.steps, initial=num_runs * logs_done * log_every,
               unit="run·step", unit_scale=True, disable=not progress, dynamic_ncols=True,
               desc=f"{config.name}: {num_runs} runs, {grid_run.plan.describe()}")
    while logs_done < total_logs:
        n = min(config.execution.chunk_logs, total_logs - logs_done)
        states, metrics = grid_run.advance(states, n)
        history.append(metrics)
        logs_done += n
        bar.update(num_runs * n * log_every)
        if time.time() - last_checkpoint > config.execution.checkpoint_every_s and logs_done < total_logs:
            history = [join_logs(history)]
            leaves = [np.asarray(x) for x in jax.tree.leaves(unpad(states, num_runs))]
            results.save_checkpoint(out / "checkpoint.npz", digest, logs_done, leaves, history[0])
            last_checkpoint = time.time()
    bar.close()
    wall = time.time() - start

    metrics = join_logs(history)
    steps = np.arange(0, config.train.steps + 1, log_every)
    atomic_write_text(out / "config.toml", experiment.to_toml(config))
    results.write_trajectories(out, steps, metrics, runs, config)
    rows = analysis.summarize(steps, metrics, runs, config)
    results.write_summary(out, rows)
    meta = {
        "config_digest": digest, "runs": num_runs, "steps": config.train.steps, "train_wall_s": round(wall, 2),
        "execution": grid_run.plan.describe(), "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.local_devices()], "jax": jax.__version__,
        "python": platform.python_version(), "machine": platform.machine(),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    out_results = finish(out, draw)
    atomic_write_text(out / "meta.json", json.dumps(meta, indent=2))
    (out / "checkpoint.npz").unlink(missing_ok=True)
    out_results.meta = meta
    return out_results


def finish(out: Path, draw: bool = True) -> results.Results:
    """Load a results directory and draw its figures (also used by `nht report`)."""
    from nht_jax.report import figures

    loaded = results.load_results(out)
    if draw:
        figures.draw_all(loaded)
    return loaded


__all__ = ["default_out", "finish", "run_sweep"]
