"""The imported results folder: its Config, its arrays and files, and the --out folder it may replace."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np

from nht_jax import experiment
from nht_jax.base.aliases import HPARAM_ALIASES
from nht_jax.base.atomic import TMP_PATTERN, atomic_write_text
from nht_jax.base.errors import ConfigError, check
from nht_jax.base.schema import apply_overrides
from nht_jax.domains import imported
from nht_jax.measure import summaries
from nht_jax.measure.stopping import results_digest
from nht_jax.results import folder as results
from nht_jax.results import lock
from nht_jax.results.import_logs.grid import grid_of, split_hparams
from nht_jax.results.import_logs.lightning import LIGHTNING_STEP_OFFSET
from nht_jax.results.import_logs.runs import METRIC_ALIASES, SQUARED_ALIASES, Names, Run, named_like_a_norm
from nht_jax.results.import_logs.sources import read_logs_and_offset, source_kind
from nht_jax.results.import_logs.steps import shared_steps

REQUIRED_AXES = ("learning_rate", "weight_decay")
"""Axes an import needs from the logs or --set grid.AXIS=VALUE: `nht paper bound` and the analyses read η and λ, so no
default (η = 1e-3, λ = 1) stands in for them. Other axes the logs lack take their defaults (seed 0, init scale 1)."""

IMPORT_OPTIM = {"name": "adamw", "decay_on": "all"}
"""[optim] of an imported folder unless --set says otherwise: optax.adamw's and torch.optim.AdamW's defaults (decay
on every parameter). `nht paper bound` reads the update rule from it; describe the other codebase's with --set optim.…"""


def finite_flag(metrics: dict[str, np.ndarray], divergence_norm: float, norm_logged: bool = True) -> np.ndarray:
    """`finite` as nht records it: 1 while ‖θ‖² (and train_loss when logged) is finite and ‖θ‖² < divergence_norm;
    without a logged ‖θ‖², from train_loss alone (1 everywhere without either)."""
    norm = metrics["norm_sq"]
    ok = np.isfinite(norm) & (norm < divergence_norm) if norm_logged else np.ones(norm.shape, bool)
    if "train_loss" in metrics:
        ok &= np.isfinite(metrics["train_loss"])
    return ok.astype(np.float64)


def config_of(source: str, metrics: list[str], table: dict, overrides=()) -> experiment.Config:
    """The imported folder's Config: domain "imported", the metrics found, the grid of the logs and `overrides`
    (--set KEY=VALUE: name, [analysis], [optim], [train] batch_size, grid.AXIS for axes the logs lack)."""
    data = {
        "name": "imported",
        "description": f"runs imported from {source} by nht import",
        "task": {"name": "imported", "source": source, "metrics": metrics},
        "optim": dict(IMPORT_OPTIM),
        "grid": dict(table),
    }
    data = apply_overrides(data, list(overrides), experiment.SECTIONS)
    for axis in REQUIRED_AXES:
        check(
            axis in data["grid"],
            f"the logs give no {axis} (no column, tag or hyperparameter named "
            f"{', '.join(HPARAM_ALIASES[axis])}), and nht never assumes one: give the value "
            f"the runs used with --set grid.{axis}=VALUE, or log it",
        )
    for key in ("task", "model"):
        check(
            data.get(key, {}) == ({"name": "imported", "source": source, "metrics": metrics} if key == "task" else {}),
            f"--set {key}.… is not allowed in nht import: the [{key}] table describes the import itself",
        )
    for name in table:
        if name != "zip" and data["grid"].get(name) != table[name]:
            raise ConfigError(f"--set grid.{name}: the logs give {name} itself; leave it to them")
    config = experiment.from_dict(data)
    check(
        config.optim.decay_on == "all" or "weight_norm_sq" in metrics,
        "optim.decay_on = weights says weight decay acts on the kernels only, but the logs hold no weight_norm_sq "
        "(their squared norm), which `nht paper bound` then follows; log it, or leave optim.decay_on = all",
    )
    return config


def norm_hint(runs: dict[str, Run]) -> str:
    """For a missing norm_sq: the logged metrics named like a norm, and the rename that squares one."""
    normlike = sorted({m for run in runs.values() for m in run.series if named_like_a_norm(m)})
    if not normlike:
        return ""
    return (
        f"the logs hold {', '.join(normlike)}, named like ‖θ‖: --rename {normlike[0]}=param_norm imports its "
        f"square, --rename {normlike[0]}=param_norm_sq takes it as ‖θ‖² already; otherwise "
    )


def import_logs(
    logs,
    out,
    policy="exact",
    overrides=(),
    names: Names = Names(),
    overwrite: bool = False,
    step_offset: int | None = None,
) -> dict:
    """Read LOGS and write the results folder `out`; returns {"results": the loaded Results, "notes": [...]}.
    `step_offset`: added to every logged step of a table (None: Lightning's +1, else 0; `read_logs`)."""
    logs, out = Path(logs), Path(out)
    runs, offset = read_logs_and_offset(logs, names, step_offset)
    steps, metrics, notes = shared_steps(runs, policy)
    for required, what in (
        ("norm_sq", "‖θ‖², the squared norm of every parameter"),
        ("test_acc", "held-out accuracy, the headline metric"),
    ):
        # ‖θ‖² may be missing (imported as not logged) unless the logs hold a name that reads as a norm
        check(
            required in metrics or (required == "norm_sq" and not norm_hint(runs)),
            f"'{logs}' logs no {required} ({what}; logged names that mean it: {', '.join(METRIC_ALIASES[required])}"
            f"{', or ‖θ‖ as ' + ', '.join(SQUARED_ALIASES) if required == 'norm_sq' else ''}); "
            f"{norm_hint(runs) if required == 'norm_sq' else ''}log it, or --rename YOURS={required}",
        )
    not_logged = [] if "norm_sq" in metrics else ["norm_sq"]
    if not_logged:
        notes.append(
            f"no ‖θ‖² (norm_sq) in the logs: imported as not logged (NaN); the analyses that need it say so "
            f"in one line each, and `nht paper bound` needs it (names that mean it: "
            f"{', '.join(METRIC_ALIASES['norm_sq'][:3])}, …)"
        )
    unnamed = [run.hparams["__id__"] for run in runs.values() if len(run.hparams) == 1]
    if unnamed and source_kind(logs) == "tensorboard":
        notes.append(
            f"run {unnamed[0]} names no hyperparameters (no hparams plugin, its folder name is not "
            f"axis=value): its values are those of --set"
        )
    squared = sorted({name for run in runs.values() for name in run.squared})
    if squared:
        notes.append(f"norm_sq is the square of {', '.join(squared)} (logged as ‖θ‖, not squared)")
    sessions = {folder: tags for run in runs.values() for folder, tags in run.sessions.items()}
    if sessions:
        left = sorted({tag for tags in sessions.values() for tag in tags})
        unread = f"; its metric_dict values ({', '.join(left)}) are summaries, not imported" if left else ""
        notes.append(
            f"the hyperparameters of {len(sessions)} run(s) come from the subfolder SummaryWriter.add_hparams "
            f"wrote beside each (e.g. {next(iter(sessions))}), not a run of its own{unread}"
        )
    kind = {"tensorboard": "TensorBoard event files", "lightning": "Lightning CSVLogger"}.get(
        source_kind(logs), f"{logs.suffix.lstrip('.').upper() or 'table'} file"
    )
    if source_kind(logs) == "lightning" and step_offset is None:
        notes.append(
            f"Lightning's steps + {LIGHTNING_STEP_OFFSET}: its step is the index of the last batch, nht's "
            f"the updates done (--step-offset 0 keeps them as logged)"
            if offset
            else f"Lightning's steps kept as logged ({', '.join(map(str, steps[:3]))}, …): they lie on multiples "
            f"of {steps[1] - steps[0]} already, and + {LIGHTNING_STEP_OFFSET} (its step is the index of the "
            f"last batch) would push them off (--step-offset {LIGHTNING_STEP_OFFSET} adds it anyway)"
        )
    source = f"{logs.name} ({kind})"
    keys = list(runs)
    axis_values, constants = split_hparams(runs, experiment.candidate_axes(imported.DOMAIN, experiment.OptimConfig()))
    table, run_order = grid_of(axis_values, experiment.candidate_axes(imported.DOMAIN, experiment.OptimConfig()), keys)
    ordered = [runs[keys[i]] for i in run_order]
    recorded = [*metrics, *not_logged, *([] if "finite" in metrics else ["finite"])]
    step_text = {"train.steps": int(steps[-1]), "train.log_every": int(np.diff(steps)[0])}
    config = config_of(source, recorded, table, [*(f"{k}={v}" for k, v in step_text.items()), *overrides])
    arrays = {m: np.asarray([[run.series[m][s][0] for s in steps] for run in ordered], np.float64) for m in metrics}
    arrays |= {m: np.full((len(ordered), len(steps)), np.nan) for m in not_logged}
    if "finite" not in arrays:
        arrays["finite"] = finite_flag(arrays, config.train.divergence_norm, norm_logged=not not_logged)
    runs_grid = config.runs()
    for axis, column in axis_values.items():  # the config's runs are the logs' runs, in the same order
        expected = np.asarray([column[i] for i in run_order], runs_grid[axis].dtype)
        assert np.array_equal(runs_grid[axis], expected), axis
    with lock.hold(out, "nht import"):
        refuse_occupied(out, overwrite)
        results.prepare_out_dir(out)
        # an overwritten folder is incomplete until its new meta.json, and keeps nothing of the earlier results
        cleared = results.clear_folder(out, config)
        atomic_write_text(out / "config.toml", experiment.to_toml(config))  # first: it marks an unfinished import
        results.write_trajectories(out, steps, arrays, runs_grid, config)
        results.write_summary(out, summaries.summarize(steps, arrays, runs_grid, config))
        results.write_meta(
            out,
            {
                "config_digest": results_digest(config),
                "runs": len(ordered),
                "steps": int(steps[-1]),
                "imported": {
                    "source": str(logs.resolve()),
                    "format": kind,
                    "run_ids": [r.hparams["__id__"] for r in ordered],
                    "steps_policy": str(policy),
                    "constant_hparams": constants,
                    "notes": notes,
                    **({"not_logged": not_logged} if not_logged else {}),
                },
            },
        )
    left = cleared.note(out)
    return {"results": results.load_results(out), "notes": notes + ([left.removeprefix("note: ")] if left else [])}


IMPORT_FILES = frozenset({"config.toml", "trajectories.npz", "summary.csv"})
"""What `import_logs` writes before meta.json, config.toml first."""


def unfinished_import(out: Path, held: list[str]) -> bool:
    """Whether the files `held` in `out` are an import that stopped before its meta.json (a full disk, a signal):
    config.toml of domain "imported" and nothing but the import's own files. The same command may then write the
    folder again without --overwrite, as the full disk's message advises ("run the same command again")."""
    if not held or "meta.json" in held or not set(held) <= IMPORT_FILES or "config.toml" not in held:
        return False
    try:
        table = tomllib.loads((out / "config.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return isinstance(table.get("task"), dict) and table["task"].get("name") == imported.DOMAIN.name


def refuse_occupied(out: Path, overwrite: bool) -> None:
    """An --out folder holding anything but its lock (and the temporaries of atomic writes) is replaced only with
    --overwrite, or when it holds an unfinished import (`unfinished_import`)."""
    held = (
        [p.name for p in out.iterdir() if p.name != lock.LOCK_NAME and not TMP_PATTERN.match(p.name)]
        if out.is_dir()
        else []
    )
    check(
        not held or overwrite or unfinished_import(out, held),
        f"'{out}' is not empty ({', '.join(sorted(held)[:3])}…); choose another --out folder, or pass --overwrite "
        f"to replace its results",
    )


__all__ = []
