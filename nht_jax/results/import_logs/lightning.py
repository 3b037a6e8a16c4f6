"""Lightning's CSVLogger: one run per `metrics.csv`, its split rows merged by step, its hyperparameters from the
`hparams.yaml` beside it, its steps + 1 (the package docstring's Sources)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nht_jax.base.errors import ConfigError, check
from nht_jax.results.import_logs.runs import Names, Run, add_hparams, hparam_value
from nht_jax.results.import_logs.tables import STEP_COLUMNS, find_column, read_rows, runs_of_rows

LIGHTNING_METRICS, LIGHTNING_HPARAMS = "metrics.csv", "hparams.yaml"
LIGHTNING_STEP_OFFSET = 1
"""Lightning logs `step` = the 0-based index of the last training batch (`_batches_that_stepped` before its
increment: 3, 7, 11 … at log_every_n_steps = 4), so after step s, s + 1 updates are done (the validation at an
epoch's end sees the parameters after them). nht's step counts updates done: the import adds 1 (--step-offset)."""


def lightning_offset(runs: dict[str, Run]) -> int:
    """The offset a Lightning import adds when none is given: `LIGHTNING_STEP_OFFSET` (its step is the last batch's
    index: 49, 99, 149 → 50, 100, 150 updates done), except where the steps as logged already lie on multiples of
    their spacing and + 1 would push them off (0, 50, 100: logged by hand, or at update counts): 0 there, said in a
    note. The spacing is the greatest common divisor of the gaps between all logged steps of all runs."""
    steps = sorted({s for run in runs.values() for series in run.series.values() for s in series})
    spacing = int(np.gcd.reduce(np.diff(steps))) if len(steps) > 1 else 0
    on_grid = spacing > 0 and steps[0] % spacing == 0
    return 0 if on_grid and (steps[0] + LIGHTNING_STEP_OFFSET) % spacing else LIGHTNING_STEP_OFFSET


def lightning_files(root: Path) -> list[Path]:
    """The CSVLogger runs under `root`: every `metrics.csv` (one per `<name>/version_N` folder), sorted."""
    return sorted(p for p in root.rglob(LIGHTNING_METRICS) if p.is_file())


def is_lightning_file(path: Path) -> bool:
    """A `metrics.csv` beside an `hparams.yaml`: one run of Lightning's CSVLogger given by its file."""
    return path.name == LIGHTNING_METRICS and (path.parent / LIGHTNING_HPARAMS).is_file()


def merged_by_step(path: Path, header: list[str], rows: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """One row per step: Lightning writes the training and the validation metrics of one step on separate rows
    (each leaving the other's cells empty, both with the step and the epoch); a cell given twice with different
    values is refused."""
    step_col = find_column(header, STEP_COLUMNS, path, "step")
    merged: dict[str, tuple[str, dict]] = {}
    for where, row in rows:
        key = str(row.get(step_col, "")).strip()
        first, cells = merged.setdefault(key, (where, {}))
        for column, cell in row.items():
            if cell is None or str(cell).strip() == "":
                continue
            before = cells.setdefault(column, cell)
            check(
                before == cell,
                f"{where}, column '{column}': {cell!r}, but {first} gave step {key} {before!r}: "
                f"one value per step and metric",
            )
    return list(merged.values())


def flat_hparams(table, prefix: str = "") -> dict:
    """hparams.yaml's mapping flattened: nested tables as `outer.inner`; lists as text; None left out."""
    out = {}
    for name, value in table.items():
        if isinstance(value, dict):
            out.update(flat_hparams(value, f"{prefix}{name}."))
        elif value is not None:
            out[f"{prefix}{name}"] = value if isinstance(value, (int, float, str, bool)) else str(value)
    return out


def lightning_hparams(folder: Path) -> dict:
    """The hyperparameters Lightning saved beside a run's metrics.csv (`hparams.yaml`; none when absent)."""
    path = folder / LIGHTNING_HPARAMS
    if not path.is_file():
        return {}
    try:
        import yaml
    except ImportError:
        raise ConfigError(
            f"'{path}' holds the run's hyperparameters and reading it needs PyYAML, which is not "
            f"installed: pip install pyyaml (Lightning itself depends on it)"
        ) from None
    try:
        table = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ConfigError(
            f"'{path}' cannot be read as YAML ({type(e).__name__}: {str(e).splitlines()[0]}); "
            f"hyperparameters that are Python objects are not read (no code runs): save them as "
            f"numbers or text"
        ) from None
    check(isinstance(table, dict), f"'{path}' is not a mapping of hyperparameters (got {type(table).__name__})")
    return flat_hparams(table)


def read_lightning(files: list[Path], root: Path, names: Names, step_offset: int) -> dict[str, Run]:
    """One run per Lightning `metrics.csv` (its folder, `<name>/version_N`, is the run id): rows merged by step
    (`merged_by_step`), hyperparameters from the `hparams.yaml` beside it, steps shifted by `step_offset`."""
    runs: dict[str, Run] = {}
    for path in files:
        header, rows = read_rows(path)
        found = runs_of_rows(path, header, merged_by_step(path, header, rows), names, step_offset)
        check(len(found) == 1, f"'{path}' holds {len(found)} runs; a Lightning metrics.csv holds one")
        (run,) = found.values()
        label = str(path.parent.relative_to(root)) if path.parent != root else path.parent.name
        run.hparams["__id__"] = label
        values = {}
        for name, value in lightning_hparams(path.parent).items():
            name = names.raw(name)
            if name is not None:
                values[names.hparam(name)] = hparam_value(value, f"'{path.parent / LIGHTNING_HPARAMS}'", name)
        add_hparams(run, values, f"'{path.parent / LIGHTNING_HPARAMS}'")
        runs[label] = run
    return runs


def lightning_source(path: Path) -> tuple[list[Path], Path]:
    """(the metrics.csv files, the folder their run ids are relative to) of a Lightning LOGS."""
    return ([path], path.parent) if path.is_file() else (lightning_files(path), path)


__all__ = []
