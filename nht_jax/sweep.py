"""Run a whole grid: one compiled program, called chunk by chunk.

Each chunk advances every run by `chunk_logs · log_every` steps in one compiled call;
between chunks Python updates the progress bar and, every `checkpoint_every_s` seconds,
writes a checkpoint atomically. Running the same command again resumes from it.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import jax
import numpy as np
from tqdm import tqdm

from nht_jax import analysis, results
from nht_jax.config import Config, ConfigError, to_toml
from nht_jax.executor import compile_grid, pad_runs, plan, unpad
from nht_jax.grid import expand, num_runs
from nht_jax.tasks import make_dataset
from nht_jax.train import make_trainer


def _host(tree):
    return jax.tree.map(np.asarray, tree)


def run_sweep(config: Config, out: Path, progress: bool = True, overwrite: bool = False) -> results.Results:
    """Train every run of config.grid and write the results directory `out`."""
    dataset = make_dataset(config.task)  # missing or broken data fails here, before anything is written
    out = results.prepare_out_dir(out)
    digest = results.config_digest(config)
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
        return finish(out)

    hparams = expand(config.grid)
    runs = num_runs(hparams)
    trainer = make_trainer(config, dataset)
    the_plan = plan(config.train, runs)
    program = compile_grid(trainer, the_plan)
    padded_hparams = pad_runs(hparams, the_plan.padded_runs)

    states = program.init(padded_hparams)
    checkpoint = results.load_checkpoint(out / "checkpoint.npz", digest)
    if checkpoint is None:
        logs_done = 0
        history = [jax.tree.map(lambda x: x[:, None], _host(program.evaluate(states, padded_hparams)))]
    else:
        logs_done, leaves, saved = checkpoint
        states = jax.tree.unflatten(jax.tree.structure(states), [jax.numpy.asarray(x) for x in leaves])
        history = [saved]
        print(f"resuming {out} at step {logs_done * config.train.log_every} of {config.train.steps}")

    total_logs = trainer.num_logs
    start = time.time()
    last_checkpoint = time.time()
    bar = tqdm(total=runs * config.train.steps, initial=runs * logs_done * config.train.log_every,
               unit="run·step", unit_scale=True, disable=not progress, dynamic_ncols=True,
               desc=f"{config.name}: {runs} runs, {the_plan.describe()}")
    while logs_done < total_logs:
        n = min(config.train.chunk_logs, total_logs - logs_done)
        states, metrics = program.advance(states, padded_hparams, n)
        history.append(_host(metrics))
        logs_done += n
        bar.update(runs * n * config.train.log_every)
        if time.time() - last_checkpoint > config.train.checkpoint_every_s and logs_done < total_logs:
            results.save_checkpoint(out / "checkpoint.npz", digest, logs_done, jax.tree.leaves(_host(states)),
                                    _concat(history))
            history = [_concat(history)]
            last_checkpoint = time.time()
    bar.close()
    wall = time.time() - start

    metrics = unpad(_concat(history), runs)
    steps = np.arange(0, config.train.steps + 1, config.train.log_every)
    results.atomic_write_text(out / "config.toml", to_toml(config))
    results.write_trajectories(out, steps, metrics, hparams, config)
    rows = analysis.summarize(steps, metrics, hparams, config.analysis)
    results.write_summary(out, rows)
    meta = {
        "config_digest": digest, "runs": runs, "steps": config.train.steps, "train_wall_s": round(wall, 2),
        "execution": the_plan.describe(), "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.local_devices()], "jax": jax.__version__,
        "python": platform.python_version(), "machine": platform.machine(),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    out_results = finish(out)
    results.atomic_write_text(out / "meta.json", json.dumps(meta, indent=2))
    (out / "checkpoint.npz").unlink(missing_ok=True)
    out_results.meta = meta
    return out_results


def _concat(history: list[dict]) -> dict:
    """Join metric chunks, each (runs, logs), along the log axis."""
    return {k: np.concatenate([h[k] for h in history], axis=1) for k in history[0]}


def finish(out: Path) -> results.Results:
    """Draw the figures of a results directory (also used by `nht report`)."""
    from nht_jax import plots

    loaded = results.load_results(out)
    plots.draw_all(loaded)
    return loaded


__all__ = ["run_sweep", "finish"]
