"""Other codebases' logs in: `nht import LOGS --out DIR` writes a results folder (`nht_jax.results.folder`) of domain
"imported" (`nht_jax.domains.imported`) that `nht analyze`, `nht report` and `nht bound` read like one `nht run`
wrote. docs/guides/import.md is the user's page; the contract in short:

Sources (`read_logs`, chosen by what LOGS is):
    long CSV / JSON lines   one row per (run, step, metric): columns run (optional), step, metric, value, and every
                            other column a hyperparameter (constant within a run)
    wide CSV / JSON lines   one row per (run, step): run (optional), step, then a column per metric; the columns
                            named like an axis (`HPARAM_ALIASES`) or `hparam/<name>` are hyperparameters
    TensorBoard folder      one run per folder holding event files; every scalar tag a metric (but summary/…, the
                            summary columns `nht export` adds, recomputed here); hyperparameters from the hparams
                            plugin when the run has it, else from the folder name `[<index>_]axis=value,axis=value`
                            (what `nht export` names its runs: `nht_jax.results.export.run_names`); the subfolder that
                            `SummaryWriter.add_hparams` writes in a run gives that run's hyperparameters
                            (`is_hparams_session`), and is no run
    Lightning folder        one run per CSVLogger `metrics.csv` (`<name>/version_N/`): its split rows (training
                            and validation metrics of one step on separate rows) merged by step, its steps + 1
                            (`LIGHTNING_STEP_OFFSET`), its hyperparameters from `hparams.yaml` beside it
    Without a run column, each distinct combination of hyperparameters is one run.
Names: hyperparameters and metrics are matched case-insensitively against `HPARAM_ALIASES`
(`nht_jax.base.aliases`, the table `--set grid.lambda=…` reads too) and `METRIC_ALIASES`
(the logs' `lambda`, `lr`, `val_acc`, `param_norm_sq` … become the axes and metrics nht knows); `SQUARED_ALIASES`
(‖θ‖, not squared) become norm_sq by squaring, with a note; `renames` and `ignored` come first (--rename OLD=NEW,
--ignore NAME). A name that reads as a norm is never taken as ‖θ‖²: renaming it to norm_sq is refused
(`named_like_a_norm`), and a missing norm_sq names the logged norms and the rename that squares one.
Other metric names are kept as logged. A hyperparameter that is no axis is dropped when it is the same in every run
(kept in meta.json as "constant_hparams") and refused when it varies.
Steps (`shared_steps`): the results hold one step vector for every run and metric. "exact" (default) refuses logs
whose runs or metrics were logged at different steps; "common" keeps the steps at which every run logged every
metric (dropping a metric some run never logged); an integer K keeps, of those, the multiples of K. The kept steps
must be evenly spaced multiples of their spacing k (train.log_every = k, train.steps = the last). Nothing is
interpolated: an imported value is one the other codebase logged.
Values: numbers (nan / inf allowed: a diverged run); an empty cell (or JSON null) is "not logged". Stored as
float64. `finite` is computed when the logs lack it: ‖θ‖² (and train_loss when logged) finite and below
train.divergence_norm (`engine.metrics.VOCABULARY`).
Grid (`grid_of`): the runs' values on each axis, sorted; a product grid when the runs are every combination,
else one zipped group of the varied axes (an irregular grid). Runs are stored in the grid's order. η and λ
(`REQUIRED_AXES`) come from the logs or `--set grid.AXIS=VALUE`, never from a default; other axes the logs do not
name take their defaults or `--set`. An alias, `grid.lambda`, names its axis.
Bad input (missing file, no step column, a non-number, a (run, step, metric) twice, …) is a ConfigError naming the
file, the line or tag and the column, and the fix.
"""

from __future__ import annotations

import csv
import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nht_jax import experiment
from nht_jax.base.aliases import HPARAM_ALIASES, lookup
from nht_jax.base.atomic import TMP_PATTERN, atomic_write_text
from nht_jax.base.errors import ConfigError, check
from nht_jax.base.schema import apply_overrides
from nht_jax.domains import imported
from nht_jax.engine import grid as grid_lib
from nht_jax.results import lock
from nht_jax.results import folder as results
from nht_jax.measure import summaries
from nht_jax.measure.stopping import results_digest
from nht_jax.results.export import MARKER, metric_of_tracker_name

RUN_COLUMNS = ("run", "run_id", "run_name", "name")
STEP_COLUMNS = ("step", "global_step", "iteration", "iter", "steps")
METRIC_COLUMNS = ("metric", "tag", "key")
VALUE_COLUMNS = ("value",)
HPARAM_PREFIX = "hparam/"
EXPORT_SUMMARY_PREFIX = "summary/"
"""TensorBoard tags under this prefix are the summary columns `nht export` writes; the import recomputes them."""

METRIC_ALIASES = {
    "train_acc": ("train_acc", "train_accuracy", "train/acc", "train/accuracy", "acc/train", "accuracy/train"),
    "test_acc": ("test_acc", "test_accuracy", "val_acc", "val_accuracy", "valid_acc", "eval_acc", "test/acc",
                 "test/accuracy", "val/acc", "val/accuracy", "acc/test", "acc/val", "accuracy/test", "accuracy/val"),
    "train_loss": ("train_loss", "train/loss", "loss/train", "loss"),
    "test_loss": ("test_loss", "val_loss", "valid_loss", "eval_loss", "test/loss", "val/loss", "loss/test",
                  "loss/val"),
    "norm_sq": ("norm_sq", "param_norm_sq", "params_norm_sq", "parameter_norm_sq", "weight_norm_squared",
                "l2_norm_sq", "theta_norm_sq", "norm_squared"),
}
"""Metric → the logged names (lower case) that mean it; any other metric name is kept as logged."""

SQUARED_ALIASES = ("param_norm", "params_norm", "parameter_norm", "l2_norm", "theta_norm")
"""Logged names of ‖θ‖ (not squared): imported as norm_sq = value²."""

REQUIRED_AXES = ("learning_rate", "weight_decay")
"""Axes an import needs from the logs or --set grid.AXIS=VALUE: `nht bound` and the analyses read η and λ, so no
default (η = 1e-3, λ = 1) stands in for them. Other axes the logs lack take their defaults (seed 0, init scale 1)."""

STEP_POLICIES = ("exact", "common")

IMPORT_OPTIM = {"name": "adamw", "decay_on": "all"}
"""[optim] of an imported folder unless --set says otherwise: optax.adamw's and torch.optim.AdamW's defaults (decay
on every parameter). `nht bound` reads the update rule from it; describe the other codebase's with --set optim.…"""


HPARAM_NAMES, METRIC_NAMES = lookup(HPARAM_ALIASES), lookup(METRIC_ALIASES)


@dataclass
class Run:
    """One run as read: its hyperparameters {name: value} and its series {metric: {step: value}}; `where` says where
    it was first seen (for messages)."""

    where: str
    hparams: dict = field(default_factory=dict)
    series: dict = field(default_factory=dict)
    squared: set = field(default_factory=set)
    """The logged names of ‖θ‖ this run's norm_sq was squared from (said in a note)."""
    sessions: dict = field(default_factory=dict)
    """The add_hparams subfolders that gave this run's hyperparameters: {folder: the metric_dict tags left out}."""


@dataclass(frozen=True)
class Names:
    """How logged names become nht's: `renames` {logged: new} first, `ignored` names dropped, then the aliases."""

    renames: dict = field(default_factory=dict)
    ignored: frozenset = frozenset()

    def raw(self, name: str) -> str | None:
        name = self.renames.get(name, name).strip()
        return None if name in self.ignored or name.lower() in self.ignored else name

    def hparam(self, name: str) -> str:
        """The axis a hyperparameter name means, else the name itself (an unknown hyperparameter)."""
        bare = name[len(HPARAM_PREFIX):] if name.lower().startswith(HPARAM_PREFIX) else name
        return HPARAM_NAMES.get(bare.lower(), bare)

    def metric(self, name: str) -> tuple[str, bool]:
        """(nht's metric name, whether the logged value is ‖θ‖ and must be squared). A name under a section of
        `nht export` (`train/…`, `norm/…`, `status/finite`, …) that is no alias is the metric it stands for
        (`export.metric_of_tracker_name`), so an export imports back as it was."""
        low = name.lower()
        if low in SQUARED_ALIASES:
            return "norm_sq", True
        return METRIC_NAMES.get(low) or metric_of_tracker_name(name) or name, False


def named_like_a_norm(name: str) -> bool:
    """Whether a logged name reads as a norm ‖·‖ rather than its square: its last part (after / or .) ends in
    "norm" (`weights/l2_norm`, `param_norm`, `grad_norm`; not `norm_sq`, `param_norm_squared`)."""
    return re.split(r"[/.]", name.strip().lower())[-1].endswith("norm")


def parse_names(renames=(), ignored=()) -> Names:
    """`Names` from --rename OLD=NEW and --ignore NAME arguments. A name that reads as a norm renamed to norm_sq
    (‖θ‖²) is refused: it would be taken as the square it is not (rename it to param_norm to square it)."""
    table = {}
    for text in renames:
        old, sep, new = text.partition("=")
        check(sep and old.strip() and new.strip(), f"--rename expects OLD=NEW (e.g. --rename val_top1=test_acc), "
                                                   f"got {text!r}")
        old, new = old.strip(), new.strip()
        check(not (new.lower() == "norm_sq" and named_like_a_norm(old)),
              f"--rename {old}=norm_sq: '{old}' is named like a norm ‖θ‖, but norm_sq is ‖θ‖², the squared norm. "
              f"Pass --rename {old}=param_norm to import its square (norm_sq = value²), or --rename "
              f"{old}=param_norm_sq if it already holds ‖θ‖²")
        table[old] = new
    return Names(table, frozenset(ignored) | frozenset(n.lower() for n in ignored))


# ----------------------------------------------------------------------------- values

def number(text, where: str, column: str) -> float | None:
    """A logged value: None when not logged (empty cell, JSON null), else a float (nan / inf allowed)."""
    if text is None or (isinstance(text, str) and text.strip() == ""):
        return None
    if isinstance(text, bool):
        return float(text)
    try:
        return float(text)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}, column '{column}': {text!r} is not a number. Log numbers (nan for a diverged "
                          f"value; an empty cell for one not logged), or drop the column with --ignore "
                          f"{column}") from None


def step_of(text, where: str, column: str) -> int:
    value = number(text, where, column)
    check(value is not None and math.isfinite(value) and value >= 0 and float(value).is_integer(),
          f"{where}, column '{column}': step {text!r} is not a whole number ≥ 0; every row needs its step")
    return int(value)


def hparam_value(text, where: str, column: str):
    """A hyperparameter cell: a number when it reads as one (an int when integral text), else the text."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return text
    return results.number_or_text("" if text is None else str(text).strip())


def add_hparams(run: Run, values: dict, where: str) -> None:
    """Record a row's hyperparameters in its run; a value that changes within the run is refused."""
    for name, value in values.items():
        before = run.hparams.setdefault(name, value)
        if before != value and not (isinstance(before, float) and isinstance(value, float)
                                    and math.isnan(before) and math.isnan(value)):
            raise ConfigError(f"{where}, column '{name}': {value!r}, but {run.where} gave this run {before!r}: a "
                              f"hyperparameter is constant within a run. Give each run its own run id, or drop the "
                              f"column with --ignore {name}")


def add_value(run: Run, metric: str, step: int, value: float, where: str, squared_from: str | None = None) -> None:
    """Record one logged value; `squared_from`: the logged name of ‖θ‖ whose square this norm_sq value is."""
    series = run.series.setdefault(metric, {})
    if step in series:
        raise ConfigError(f"{where}: run {run_label(run)} logged {metric} at step {step} twice (first {series[step][1]}). "
                          f"Keep one value per (run, step, metric): remove the repeat, or give the runs distinct "
                          f"run ids")
    series[step] = (value * value if squared_from else value, where)
    if squared_from:
        run.squared.add(squared_from)


def run_label(run: Run) -> str:
    return run.hparams.get("__id__", run.where)


# ----------------------------------------------------------------------------- tables (CSV, JSON lines)

def read_rows(path: Path) -> tuple[list[str], list[tuple[str, dict]]]:
    """(column names, [(where, {column: cell})]) of a CSV or JSON-lines file."""
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        return read_json_rows(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            check(header is not None, f"'{path}' is empty; a CSV of logs starts with a header row (run, step, …)")
            header = [h.strip() for h in header]
            rows = []
            for cells in reader:
                if not any(c.strip() for c in cells):
                    continue
                where = f"'{path}', line {reader.line_num}"
                check(len(cells) == len(header), f"{where}: {len(cells)} cells for the header's {len(header)} "
                                                 f"columns; give every row one cell per column")
                rows.append((where, dict(zip(header, cells))))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise ConfigError(f"'{path}' cannot be read as a CSV of logs ({type(e).__name__}: {e})") from None
    return header, rows


def read_json_rows(path: Path) -> tuple[list[str], list[tuple[str, dict]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"'{path}' cannot be read ({type(e).__name__}: {e})") from None
    rows, header = [], {}
    for number_, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"'{path}', line {number_}"
        try:
            record = json.loads(line)
        except ValueError:
            raise ConfigError(f"{where} is not a JSON object; a JSON-lines file holds one object per line, e.g. "
                              f'{{"run": "a", "step": 0, "train_acc": 0.1}}') from None
        check(isinstance(record, dict), f"{where} is not a JSON object (got {type(record).__name__})")
        header.update(dict.fromkeys(record))
        rows.append((where, record))
    check(rows, f"'{path}' holds no records")
    return list(header), rows


def find_column(header, choices, path: Path, what: str, required: bool = True) -> str | None:
    found = [h for h in header if h.lower() in choices]
    check(len(found) <= 1, f"'{path}' has several {what} columns {found}; keep one (or --ignore the others)")
    if not found and required:
        raise ConfigError(f"'{path}' has no {what} column (one of {', '.join(choices)}); its columns: "
                          f"{', '.join(header)}")
    return found[0] if found else None


def read_table(path: Path, names: Names) -> dict[str, Run]:
    """The runs of a long or wide CSV / JSON-lines file (module docstring)."""
    return runs_of_rows(path, *read_rows(path), names)


def runs_of_rows(path: Path, header: list[str], rows: list[tuple[str, dict]], names: Names,
                 step_offset: int = 0) -> dict[str, Run]:
    """The runs of a table's rows (`read_rows`); `step_offset` is added to every logged step."""
    header = [h for h in header if names.raw(h) is not None]
    renamed = {h: names.raw(h) for h in header}
    columns = list(renamed.values())
    step_col = find_column(columns, STEP_COLUMNS, path, "step")
    run_col = find_column(columns, RUN_COLUMNS, path, "run", required=False)
    metric_col = find_column(columns, METRIC_COLUMNS, path, "metric", required=False)
    value_col = find_column(columns, VALUE_COLUMNS, path, "value", required=False)
    long = metric_col is not None and value_col is not None
    special = {step_col, run_col, metric_col, value_col} if long else {step_col, run_col}
    others = [c for c in columns if c not in special]
    if long:
        hparam_cols = others
    else:
        hparam_cols = [c for c in others if c.lower().startswith(HPARAM_PREFIX) or c.lower() in HPARAM_NAMES]
    metric_cols = [] if long else [c for c in others if c not in hparam_cols]
    check(long or metric_cols, f"'{path}' has no metric columns: a long file has the columns metric and value, a "
                               f"wide one a column per metric (its columns: {', '.join(columns)})")
    runs: dict[str, Run] = {}
    for where, raw in rows:
        row = {renamed[h]: raw.get(h) for h in header}
        hparams = {names.hparam(c): hparam_value(row[c], where, c) for c in hparam_cols}
        key = str(row[run_col]).strip() if run_col else json.dumps(hparams, sort_keys=True, default=str)
        run = runs.setdefault(key, Run(where))
        run.hparams.setdefault("__id__", key if run_col else f"({', '.join(f'{k}={v}' for k, v in hparams.items())})")
        add_hparams(run, hparams, where)
        step = step_of(row[step_col], where, step_col) + step_offset
        check(step >= 0, f"{where}: step {step - step_offset} with --step-offset {step_offset} is negative")
        if long:
            name = names.raw(str(row[metric_col]).strip())
            if name is None:
                continue
            metric, squared = names.metric(name)
            value = number(row[value_col], where, value_col)
            if value is not None:
                add_value(run, metric, step, value, f"{where} ({name})", name if squared else None)
            continue
        for column in metric_cols:
            metric, squared = names.metric(column)
            value = number(row[column], where, column)
            if value is not None:
                add_value(run, metric, step, value, f"{where} ({column})", column if squared else None)
    return runs


# ----------------------------------------------------------------------------- Lightning's CSVLogger

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
            check(before == cell, f"{where}, column '{column}': {cell!r}, but {first} gave step {key} {before!r}: "
                                  f"one value per step and metric")
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
        raise ConfigError(f"'{path}' holds the run's hyperparameters and reading it needs PyYAML, which is not "
                          f"installed: pip install pyyaml (Lightning itself depends on it)") from None
    try:
        table = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ConfigError(f"'{path}' cannot be read as YAML ({type(e).__name__}: {str(e).splitlines()[0]}); "
                          f"hyperparameters that are Python objects are not read (no code runs): save them as "
                          f"numbers or text") from None
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


# ----------------------------------------------------------------------------- TensorBoard

def event_folders(root: Path) -> list[Path]:
    """The folders under `root` (itself included) that hold event files, sorted."""
    return sorted({p.parent for p in root.rglob("events.out.tfevents.*") if p.is_file()})


def damaged_event_file(folder: Path) -> str:
    """The first event file of `folder` with a record that fails its CRC-32C check or is cut short, with why
    ("" when none). TensorBoard's reader stops at such a record without a word (its later records, often whole
    metrics, are silently missing); this reads every record with TensorBoard's own record reader."""
    from tensorboard.compat.tensorflow_stub import errors
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import PyRecordReader_New

    for file in sorted(p for p in folder.glob("events.out.tfevents.*") if p.is_file()):
        reader = PyRecordReader_New(str(file).encode())
        try:
            records = 0
            while True:
                reader.GetNext()
                records += 1
        except errors.OutOfRangeError:
            continue
        except errors.DataLossError as e:
            what = "cut short" if "truncated" in str(e).lower() else "a checksum fails"
            return f"'{file}' is damaged after {records} readable records ({what})"
        finally:
            reader.file_handle.close()
    return ""


def accumulator(folder: Path):
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        raise ConfigError("nht import of TensorBoard event files needs the optional package tensorboard, which is "
                          "not installed: pip install 'nht_jax[tensorboard]' (in a checkout: pip install -e "
                          "'.[tensorboard]')") from None
    damage = damaged_event_file(folder)
    check(not damage, f"{damage}: TensorBoard would read only the records before it, and the import would miss "
                      f"what comes after. Restore the file (or write the logs again), or move it out of the folder "
                      f"to import the rest")
    events = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    try:
        events.Reload()
    except Exception as e:  # the reader raises its own types (DataLossError, …) for a damaged file
        raise ConfigError(f"'{folder}': its event files cannot be read ({type(e).__name__}: {e})") from None
    return events


def plugin_hparams(events) -> dict | None:
    """The run's hyperparameters from TensorBoard's hparams plugin, or None when it has none."""
    try:
        content = events.PluginTagToContent("hparams")
    except KeyError:
        return None
    start = content.get("_hparams_/session_start_info")
    if start is None:
        return None
    from tensorboard.plugins.hparams import plugin_data_pb2

    info = plugin_data_pb2.HParamsPluginData.FromString(start).session_start_info
    out = {}
    for name, value in info.hparams.items():
        kind = value.WhichOneof("kind")
        out[name] = getattr(value, kind) if kind else None
    return out


NAME_PAIR = re.compile(r"^\s*([^=,]+?)\s*=\s*([^=,]*?)\s*$")


def folder_hparams(folder: Path, root: Path) -> dict | None:
    """The hyperparameters written in a run folder's name: `[<index>_]axis=value,axis=value` (`nht export`'s
    names; `lambda=0.1,seed=0` works too); None for a name that is not (PyTorch's `Dec06_03-00-00_host`)."""
    name = folder.name if folder != root else root.name
    label = re.sub(r"^\d+_", "", name)
    parts = [NAME_PAIR.match(part) for part in label.split(",")] if "=" in label else []
    if not parts or not all(parts):
        return None
    return {m.group(1): hparam_value(m.group(2), f"'{folder}'", m.group(1)) for m in parts}


def refuse_unnamed(runs: dict[str, Run], unnamed: list[str]) -> None:
    """Several runs of which some name no hyperparameters (no hparams plugin, no axis=value folder name): nht
    cannot tell which λ, η or seed each one ran, so it does not guess. One run alone imports, its η and λ from
    --set."""
    if not unnamed or len(runs) == 1:
        return
    raise ConfigError(f"{len(unnamed)} of the {len(runs)} runs name no hyperparameters ({', '.join(unnamed[:3])}"
                      f"{', …' if len(unnamed) > 3 else ''}: no hparams plugin data, and a folder name that is not "
                      f"axis=value,axis=value), so which λ, η or seed each ran is unknown. Rename the folders (e.g. "
                      f"'lambda=0.1,seed=0'), record the hyperparameters with the hparams plugin, or import one "
                      f"run at a time with its values: nht import '{runs[unnamed[0]].where.strip(chr(39))}' --out "
                      f"DIR --set grid.weight_decay=… --set grid.learning_rate=…")


def scalar_series(events) -> dict[str, list[tuple[int, float]]]:
    """{tag: [(step, value)]}: simple-value scalars (tensorboardX, tf.compat.v1) and scalar tensors of the scalars
    plugin (tf.summary, `tensorboard.summary.Writer`)."""
    tags = events.Tags()
    out = {tag: [(int(e.step), float(e.value)) for e in events.Scalars(tag)] for tag in tags.get("scalars", [])}
    if tags.get("tensors"):
        from tensorboard.util import tensor_util

        try:
            scalar_tags = set(events.PluginTagToContent("scalars"))
        except KeyError:  # no tensor of the scalars plugin
            scalar_tags = set()
        for tag in tags["tensors"]:
            if tag not in scalar_tags:
                continue
            values = [(int(e.step), tensor_util.make_ndarray(e.tensor_proto)) for e in events.Tensors(tag)]
            out.setdefault(tag, [(s, float(v)) for s, v in values if np.ndim(v) == 0])
    return out


def unfinished_export(root: Path, folders: list[Path]) -> str:
    """Why an `nht export --tensorboard` folder under `root` (itself included; marked by `export.MARKER`) is not a
    whole export ("" when none is): its marker says unfinished (killed or failed half-way) or is unreadable, or it
    holds another number of runs than the marker says."""
    for marker in sorted({*root.glob(MARKER), *root.rglob(MARKER)}):
        try:
            info = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            info = {}
        where = marker.parent
        if not isinstance(info, dict) or not info.get("finished"):
            return f"'{where}' is an `nht export` that did not finish (killed or failed half-way)"
        runs = sum(1 for f in folders if f == where or where in f.parents)
        if runs != info.get("runs"):
            return f"'{where}' is an `nht export` of {info.get('runs')} runs, but {runs} are there"
    return ""


def is_hparams_session(folder: Path, events, loaded: dict) -> bool:
    """Whether `folder` is the subfolder `SummaryWriter.add_hparams` (PyTorch's and tensorboardX's) writes beside a
    run: its parent holds event files too, it carries the hparams plugin's session, and each of its scalars (the
    call's metric_dict) is logged at most once."""
    return (folder.parent in loaded and plugin_hparams(events) is not None
            and all(len(points) <= 1 for points in scalar_series(events).values()))


def session_hparams(parent: Path, sessions: list[Path], loaded: dict) -> dict:
    """The hyperparameters the add_hparams subfolders of one run give; several calls must agree."""
    found = {}
    for session in sessions:
        for name, value in plugin_hparams(loaded[session]).items():
            check(found.setdefault(name, value) == value,
                  f"'{parent}': its add_hparams subfolders give the hyperparameter {name} two values "
                  f"({found[name]!r} and {value!r} in '{session.name}'); keep the subfolder of the run's own call, "
                  f"or import the runs separately")
    return found


def read_tensorboard(root: Path, names: Names) -> dict[str, Run]:
    """One run per folder of event files under `root` (module docstring); the subfolder that
    `SummaryWriter.add_hparams` writes (a timestamp for its name) gives its parent run's hyperparameters and is no
    run of its own (its metric_dict values, summaries of the run, are not imported: the run's notes say so). An
    unfinished `nht export` is refused (`unfinished_export`), as is a damaged event file (`damaged_event_file`)."""
    folders = event_folders(root)
    partial = unfinished_export(root, folders)
    check(not partial, f"{partial}: it holds only some of the sweep's runs, and importing it would make a smaller "
                       f"sweep. Export again (nht export RESULTS --tensorboard) and import that")
    check(folders, f"'{root}' holds no TensorBoard event files (events.out.tfevents.*); point nht import at the "
                   f"folder of the runs, or at a CSV / JSON-lines file")
    loaded = {folder: accumulator(folder) for folder in folders}
    sessions: dict[Path, list[Path]] = {}
    for folder in folders:
        if folder != root and is_hparams_session(folder, loaded[folder], loaded):
            sessions.setdefault(folder.parent, []).append(folder)
    runs: dict[str, Run] = {}
    unnamed: list[str] = []  # the runs without hyperparameters (`refuse_unnamed`)
    for folder in folders:
        if folder.parent in sessions and folder in sessions[folder.parent]:
            continue
        label = str(folder.relative_to(root)) if folder != root else folder.name
        events = loaded[folder]
        found = plugin_hparams(events)
        if found is None and folder in sessions:
            found = session_hparams(folder, sessions[folder], loaded)
        raw = found if found is not None else folder_hparams(folder, root)
        run = Run(f"'{folder}'", {"__id__": label})
        if raw is None:
            unnamed.append(label)
            raw = {}
        if folder in sessions:
            run.sessions = {str(s.relative_to(root)): sorted(scalar_series(loaded[s])) for s in sessions[folder]}
        for name, value in raw.items():
            name = names.raw(name)
            if name is not None:
                run.hparams[names.hparam(name)] = hparam_value(value, f"'{folder}'", name)
        for tag, points in scalar_series(events).items():
            if tag.startswith(EXPORT_SUMMARY_PREFIX) or tag.startswith("_hparams_"):
                continue
            name = names.raw(tag)
            if name is None:
                continue
            metric, squared = names.metric(name)
            for step, value in points:
                add_value(run, metric, step, value, f"'{folder}', tag {tag}", name if squared else None)
        runs[label] = run
    refuse_unnamed(runs, unnamed)
    return runs


def source_kind(path: Path) -> str:
    """"tensorboard", "lightning" or "table": what LOGS is (module docstring, Sources)."""
    if path.is_dir():
        return "lightning" if not event_folders(path) and lightning_files(path) else "tensorboard"
    return "lightning" if is_lightning_file(path) else "table"


def lightning_source(path: Path) -> tuple[list[Path], Path]:
    """(the metrics.csv files, the folder their run ids are relative to) of a Lightning LOGS."""
    return ([path], path.parent) if path.is_file() else (lightning_files(path), path)


def shifted(runs: dict[str, Run], offset: int) -> dict[str, Run]:
    """The runs with `offset` added to every logged step (a step made negative is refused)."""
    for run in runs.values():
        for metric, series in run.series.items():
            moved = {}
            for step, (value, where) in series.items():
                check(step + offset >= 0, f"{where}: step {step} with --step-offset {offset} is negative")
                moved[step + offset] = (value, where)
            run.series[metric] = moved
    return runs


def read_logs(path, names: Names = Names(), step_offset: int | None = None) -> dict[str, Run]:
    """The runs of LOGS: a folder of TensorBoard event files, a folder of Lightning CSVLogger runs (or one run's
    metrics.csv beside its hparams.yaml), else a CSV or JSON-lines table. `step_offset` is added to every step of a
    table (None: + 1 for Lightning's logs unless already on their grid, `lightning_offset`; else 0)."""
    return read_logs_and_offset(path, names, step_offset)[0]


def read_logs_and_offset(path, names: Names = Names(), step_offset: int | None = None) -> tuple[dict[str, Run], int]:
    """(`read_logs`, the offset it added to every step). Each file is read once: Lightning's runs are read as
    logged, their offset chosen from those steps, then added."""
    path = Path(path)
    check(path.exists(), f"'{path}' does not exist; give nht import a CSV or JSON-lines file of logs, or a folder "
                         f"of TensorBoard event files")
    kind = source_kind(path)
    check(kind != "tensorboard" or not step_offset, "--step-offset applies to CSV and JSON-lines logs; TensorBoard "
                                                    "event files carry their own steps")
    offset = step_offset or 0
    if kind == "lightning":
        runs = read_lightning(*lightning_source(path), names, 0)
        offset = lightning_offset(runs) if step_offset is None else step_offset
        runs = shifted(runs, offset)
    elif kind == "tensorboard":
        runs = read_tensorboard(path, names)
    else:
        header, rows = read_rows(path)
        runs = runs_of_rows(path, header, rows, names, offset)
    check(runs, f"'{path}' holds no runs")
    return runs, offset


# ----------------------------------------------------------------------------- steps

def step_sets(runs: dict[str, Run]) -> dict[tuple[str, str], frozenset]:
    return {(key, metric): frozenset(series) for key, run in runs.items() for metric, series in run.series.items()}


def shared_steps(runs: dict[str, Run], policy="exact") -> tuple[np.ndarray, list[str], list[str]]:
    """(the step vector, the metrics kept, notes) under `policy` (module docstring: "exact", "common", or an
    integer K)."""
    metrics = list(dict.fromkeys(m for run in runs.values() for m in run.series))
    notes = []
    lacking = {m: [k for k, run in runs.items() if m not in run.series] for m in metrics}
    if policy == "exact":
        for metric, keys in lacking.items():
            if keys:
                raise ConfigError(f"run {runs[keys[0]].hparams['__id__']} ({runs[keys[0]].where}) never logged "
                                  f"{metric}, which other runs logged; pass --steps common to drop such metrics, or "
                                  f"--ignore {metric}")
        sets = step_sets(runs)
        (first_key, first), *_ = sets.items()
        for key, steps in sets.items():
            if steps != first:
                extra = sorted(steps ^ first)[:3]
                raise ConfigError(
                    f"run {runs[key[0]].hparams['__id__']} logged {key[1]} at {len(steps)} steps, run "
                    f"{runs[first_key[0]].hparams['__id__']} logged {first_key[1]} at {len(first)} (they differ at "
                    f"steps {extra}): an nht results folder holds every run and metric at one set of steps. Pass "
                    f"--steps common to keep the steps at which every run logged every metric, or --steps K to keep "
                    f"those that are multiples of K")
        kept = sorted(first)
    else:
        dropped = [m for m, keys in lacking.items() if keys]
        if dropped:
            notes.append(f"dropped {', '.join(dropped)}: not logged by every run")
        metrics = [m for m in metrics if m not in dropped]
        check(metrics, "no metric was logged by every run; nothing to import")
        common = frozenset.intersection(*(frozenset(runs[k].series[m]) for k in runs for m in metrics))
        if policy != "common":
            common = frozenset(s for s in common if s % policy == 0)
        every = frozenset.union(*(frozenset(runs[k].series[m]) for k in runs for m in metrics))
        if len(every) > len(common):
            notes.append(f"kept {len(common)} of the {len(every)} logged steps (--steps {policy})")
        kept = sorted(common)
    check(len(kept) >= 2, f"only {len(kept)} step(s) are shared by every run and metric "
                          f"{'(--steps ' + str(policy) + ')' if policy != 'exact' else ''}; an import needs at least "
                          f"two logged steps")
    steps = np.asarray(kept, np.int64)
    gaps = np.unique(np.diff(steps))
    check(len(gaps) == 1, f"the shared steps are not evenly spaced (gaps {gaps[:4].tolist()}…, steps "
                          f"{steps[:6].tolist()}…): an nht results folder logs every log_every steps. Pass --steps K "
                          f"to keep the steps that are multiples of K")
    check(steps[0] % gaps[0] == 0, f"the shared steps {steps[:3].tolist()}… are evenly spaced by {gaps[0]} but not "
                                   f"multiples of it; shift them (log step 0, {gaps[0]}, {2 * gaps[0]}, …)")
    return steps, metrics, notes


def parse_steps_policy(text: str):
    """--steps: "exact", "common" or an integer K ≥ 1."""
    if text in STEP_POLICIES:
        return text
    check(text.isdigit() and int(text) >= 1, f"--steps {text!r}: choose exact, common, or an integer K ≥ 1 (keep "
                                             f"the shared steps that are multiples of K)")
    return int(text)


# ----------------------------------------------------------------------------- grid

def split_hparams(runs: dict[str, Run], axes: dict) -> tuple[dict, dict]:
    """({axis: [value per run]}, constant unknown hyperparameters {name: value}); a varying unknown one refused."""
    names = list(dict.fromkeys(n for run in runs.values() for n in run.hparams if n != "__id__"))
    values, constants = {}, {}
    for name in names:
        missing = [run for run in runs.values() if name not in run.hparams]
        if missing:
            raise ConfigError(f"run {missing[0].hparams['__id__']} ({missing[0].where}) has no value for the "
                              f"hyperparameter {name}, which other runs have; give every run one")
        column = [run.hparams[name] for run in runs.values()]
        if name in axes:
            bad = [run for run in runs.values() if not isinstance(run.hparams[name], (int, float))
                   or isinstance(run.hparams[name], bool)]
            if bad:
                raise ConfigError(f"run {bad[0].hparams['__id__']} ({bad[0].where}): the hyperparameter {name} is "
                                  f"{bad[0].hparams[name]!r}; the axis {name} takes numbers")
            values[name] = column
        elif len(set(map(str, column))) == 1:
            constants[name] = column[0]
        else:
            known = ", ".join(f"{a} ({', '.join(HPARAM_ALIASES.get(a, (a,)))})" for a in axes)
            raise ConfigError(f"the hyperparameter {name!r} varies across runs ({sorted(set(map(str, column)))[:4]}) "
                              f"but is no axis nht knows; rename it to one with --rename {name}=AXIS, or drop it "
                              f"with --ignore {name}. Axes (aliases): {known}")
    return values, constants


def axis_cast(axis: grid_lib.Axis, name: str, values: list):
    if np.issubdtype(np.dtype(axis.dtype), np.integer):
        bad = [v for v in values if not float(v).is_integer()]
        if bad:
            raise ConfigError(f"hyperparameter {name} takes whole numbers, got {bad[0]!r}")
        return [int(v) for v in values]
    return [float(v) for v in values]


def grid_of(values: dict[str, list], axes: dict[str, grid_lib.Axis], keys: list[str]) -> tuple[dict, list[int]]:
    """([grid] table, the run order: indices into `keys`) for the runs' axis values (module docstring)."""
    order = [name for name in axes if name in values]
    values = {name: axis_cast(axes[name], name, values[name]) for name in order}
    levels = {name: sorted(set(values[name])) for name in order}
    points = [tuple(values[name][i] for name in order) for i in range(len(keys))]
    seen = {}
    for i, point in enumerate(points):
        if point in seen:
            raise ConfigError(f"runs {keys[seen[point]]} and {keys[i]} have the same hyperparameters "
                              f"{dict(zip(order, point))}: add the column that tells them apart (a seed), or drop "
                              f"one run")
        seen[point] = i
    index = [tuple(levels[name].index(p) for name, p in zip(order, point)) for point in points]
    run_order = sorted(range(len(keys)), key=lambda i: index[i])
    varied = [name for name in order if len(levels[name]) > 1]
    if len(keys) == math.prod(len(levels[name]) for name in order):
        return {name: levels[name] for name in order}, run_order
    table = {name: (levels[name] if name not in varied else [values[name][i] for i in run_order]) for name in order}
    table["zip"] = [varied]
    return table, run_order


# ----------------------------------------------------------------------------- the folder

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
    data = {"name": "imported", "description": f"runs imported from {source} by nht import",
            "task": {"name": "imported", "source": source, "metrics": metrics}, "optim": dict(IMPORT_OPTIM),
            "grid": dict(table)}
    data = apply_overrides(data, list(overrides), experiment.SECTIONS)
    for axis in REQUIRED_AXES:
        check(axis in data["grid"], f"the logs give no {axis} (no column, tag or hyperparameter named "
                                    f"{', '.join(HPARAM_ALIASES[axis])}), and nht never assumes one: give the value "
                                    f"the runs used with --set grid.{axis}=VALUE, or log it")
    for key in ("task", "model"):
        check(data.get(key, {}) == ({"name": "imported", "source": source, "metrics": metrics} if key == "task" else {}),
              f"--set {key}.… is not allowed in nht import: the [{key}] table describes the import itself")
    for name in table:
        if name != "zip" and data["grid"].get(name) != table[name]:
            raise ConfigError(f"--set grid.{name}: the logs give {name} itself; leave it to them")
    config = experiment.from_dict(data)
    check(config.optim.decay_on == "all" or "weight_norm_sq" in metrics,
          "optim.decay_on = weights says weight decay acts on the kernels only, but the logs hold no weight_norm_sq "
          "(their squared norm), which `nht bound` then follows; log it, or leave optim.decay_on = all")
    return config


def norm_hint(runs: dict[str, Run]) -> str:
    """For a missing norm_sq: the logged metrics named like a norm, and the rename that squares one."""
    normlike = sorted({m for run in runs.values() for m in run.series if named_like_a_norm(m)})
    if not normlike:
        return ""
    return (f"the logs hold {', '.join(normlike)}, named like ‖θ‖: --rename {normlike[0]}=param_norm imports its "
            f"square, --rename {normlike[0]}=param_norm_sq takes it as ‖θ‖² already; otherwise ")


def import_logs(logs, out, policy="exact", overrides=(), names: Names = Names(), overwrite: bool = False,
                step_offset: int | None = None) -> dict:
    """Read LOGS and write the results folder `out`; returns {"results": the loaded Results, "notes": [...]}.
    `step_offset`: added to every logged step of a table (None: Lightning's +1, else 0; `read_logs`)."""
    logs, out = Path(logs), Path(out)
    runs, offset = read_logs_and_offset(logs, names, step_offset)
    steps, metrics, notes = shared_steps(runs, policy)
    for required, what in (("norm_sq", "‖θ‖², the squared norm of every parameter"),
                           ("test_acc", "held-out accuracy, the headline metric")):
        # ‖θ‖² may be missing (imported as not logged) unless the logs hold a name that reads as a norm
        check(required in metrics or (required == "norm_sq" and not norm_hint(runs)),
              f"'{logs}' logs no {required} ({what}; logged names that mean it: {', '.join(METRIC_ALIASES[required])}"
              f"{', or ‖θ‖ as ' + ', '.join(SQUARED_ALIASES) if required == 'norm_sq' else ''}); "
              f"{norm_hint(runs) if required == 'norm_sq' else ''}log it, or --rename YOURS={required}")
    not_logged = [] if "norm_sq" in metrics else ["norm_sq"]
    if not_logged:
        notes.append(f"no ‖θ‖² (norm_sq) in the logs: imported as not logged (NaN); the analyses that need it say so "
                     f"in one line each, and `nht bound` needs it (names that mean it: "
                     f"{', '.join(METRIC_ALIASES['norm_sq'][:3])}, …)")
    unnamed = [run.hparams["__id__"] for run in runs.values() if len(run.hparams) == 1]
    if unnamed and source_kind(logs) == "tensorboard":
        notes.append(f"run {unnamed[0]} names no hyperparameters (no hparams plugin, its folder name is not "
                     f"axis=value): its values are those of --set")
    squared = sorted({name for run in runs.values() for name in run.squared})
    if squared:
        notes.append(f"norm_sq is the square of {', '.join(squared)} (logged as ‖θ‖, not squared)")
    sessions = {folder: tags for run in runs.values() for folder, tags in run.sessions.items()}
    if sessions:
        left = sorted({tag for tags in sessions.values() for tag in tags})
        unread = f"; its metric_dict values ({', '.join(left)}) are summaries, not imported" if left else ""
        notes.append(f"the hyperparameters of {len(sessions)} run(s) come from the subfolder SummaryWriter.add_hparams "
                     f"wrote beside each (e.g. {next(iter(sessions))}), not a run of its own{unread}")
    kind = {"tensorboard": "TensorBoard event files", "lightning": "Lightning CSVLogger"}.get(
        source_kind(logs), f"{logs.suffix.lstrip('.').upper() or 'table'} file")
    if source_kind(logs) == "lightning" and step_offset is None:
        notes.append(f"Lightning's steps + {LIGHTNING_STEP_OFFSET}: its step is the index of the last batch, nht's "
                     f"the updates done (--step-offset 0 keeps them as logged)"
                     if offset else
                     f"Lightning's steps kept as logged ({', '.join(map(str, steps[:3]))}, …): they lie on multiples "
                     f"of {steps[1] - steps[0]} already, and + {LIGHTNING_STEP_OFFSET} (its step is the index of the "
                     f"last batch) would push them off (--step-offset {LIGHTNING_STEP_OFFSET} adds it anyway)")
    source = f"{logs.name} ({kind})"
    keys = list(runs)
    axis_values, constants = split_hparams(runs, experiment.candidate_axes(imported.DOMAIN, experiment.OptimConfig()))
    table, run_order = grid_of(axis_values, experiment.candidate_axes(imported.DOMAIN, experiment.OptimConfig()), keys)
    ordered = [runs[keys[i]] for i in run_order]
    recorded = [*metrics, *not_logged, *([] if "finite" in metrics else ["finite"])]
    step_text = {"train.steps": int(steps[-1]), "train.log_every": int(np.diff(steps)[0])}
    config = config_of(source, recorded, table,
                       [*(f"{k}={v}" for k, v in step_text.items()), *overrides])
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
        results.write_meta(out, {
            "config_digest": results_digest(config), "runs": len(ordered), "steps": int(steps[-1]),
            "imported": {"source": str(logs.resolve()), "format": kind, "run_ids": [r.hparams["__id__"] for r in ordered],
                         "steps_policy": str(policy), "constant_hparams": constants, "notes": notes,
                         **({"not_logged": not_logged} if not_logged else {})}})
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
    held = [p.name for p in out.iterdir() if p.name != lock.LOCK_NAME and not TMP_PATTERN.match(p.name)] \
        if out.is_dir() else []
    check(not held or overwrite or unfinished_import(out, held),
          f"'{out}' is not empty ({', '.join(sorted(held)[:3])}…); choose another --out folder, or pass --overwrite "
          f"to replace its results")


__all__ = ["HPARAM_ALIASES", "METRIC_ALIASES", "Names", "SQUARED_ALIASES", "grid_of", "import_logs", "parse_names",
           "parse_steps_policy", "read_logs", "shared_steps"]
