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

from __future__ import annotations

import tomllib
import zipfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

from nht_jax import experiment
from nht_jax.base import plugins
from nht_jax.base.errors import ConfigError
from nht_jax.engine import grid as grid_lib
from nht_jax.engine.schedule import LogSchedule
from nht_jax.measure.stopping import results_digest

CHECKPOINT = "checkpoint.npz"
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
            return (f"'{self.path}' holds an unfinished sweep (checkpoint.npz, no results yet) whose checkpoint does "
                    f"not name its configuration (older code, or static axes): run the command that started it again "
                    f"to resume it, with --out {self.path}.")
        return (f"'{self.path}' is unfinished at step {self.step}/{self.total}; resume with `nht run --resume "
                f"{self.path}`, or read what has been logged so far with --partial.")


def checkpoint_config(path: Path) -> experiment.Config | None:
    """The configuration checkpoint.npz names (`CONFIG_KEY`), or None when it names none."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if CONFIG_KEY not in data.files:
                return None
            text = str(data[CONFIG_KEY])
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ConfigError(f"'{path}' is not a readable checkpoint ({type(e).__name__}: {e}). Delete it to train "
                          f"from the start, or pass --overwrite.") from None
    with plugins.reading(f"'{path.parent}'"):
        return experiment.from_dict(tomllib.loads(text))


def read_unfinished(path) -> Unfinished | None:
    """The folder as an unfinished sweep: checkpoint.npz present and meta.json absent; else None."""
    from nht_jax.results.folder import read_checkpoint

    path = Path(path)
    if not (path / CHECKPOINT).is_file() or (path / "meta.json").exists():
        return None
    config = checkpoint_config(path / CHECKPOINT)
    if config is None:
        return Unfinished(path, None, None, None, None)
    checkpoint = read_checkpoint(path / CHECKPOINT, results_digest(config))
    steps = LogSchedule.of(config.train).steps
    return Unfinished(path, config, checkpoint, int(steps[checkpoint.logs_done]), int(config.train.steps))


def partial_results(found: Unfinished):
    """What `found` has logged so far as `folder.Results`, with `partial` = (step, total) (module docstring)."""
    from nht_jax.measure import summaries
    from nht_jax.results.folder import Results, csv_value, parse_cell

    c, config = found.checkpoint, found.config
    runs = config.runs()
    num_runs = grid_lib.num_runs(runs)
    if list(c.bounds) != [0, num_runs] or not c.metrics:
        raise ConfigError(f"'{found.path}' trained its {num_runs} runs in {len(c.bounds) - 1} run slices, which have "
                          f"logged different steps: --partial reads a sweep of one run slice; resume it with `nht run "
                          f"--resume {found.path}` and read it when it has finished.")
    steps = LogSchedule.of(config.train).steps[: c.logs_done + 1]
    metrics = {name: np.asarray(values)[:, : len(steps)] for name, values in c.metrics.items()}
    summary = [{k: parse_cell(str(csv_value(v))) for k, v in row.items()}  # as summary.csv would read back
               for row in summaries.summarize(steps, metrics, runs, config)]
    meta = {"config_digest": results_digest(config), "runs": num_runs, "steps": config.train.steps,
            "partial": {"step": found.step, "of": found.total}}
    res = Results(found.path, config, steps, metrics, {k: np.asarray(v) for k, v in runs.items()},
                  {k: np.asarray(v) for k, v in config.grid.items()}, summary, meta)
    res.partial = (found.step, found.total)
    return res


def partial_note(res) -> str:
    """The mark of partial results in a title or a report ("" for finished ones): "partial: step 40 of 80"."""
    partial = getattr(res, "partial", None)
    return f"partial: step {partial[0]} of {partial[1]}" if partial else ""


__all__ = ["CHECKPOINT", "CONFIG_KEY", "Unfinished", "checkpoint_config", "partial_note", "partial_results",
           "read_unfinished"]
