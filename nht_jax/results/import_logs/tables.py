"""Long and wide CSV / JSON-lines logs: their rows read, and the runs they hold (the package docstring's
Sources)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from nht_jax.base.errors import ConfigError, check
from nht_jax.results.import_logs.runs import (
    HPARAM_NAMES,
    HPARAM_PREFIX,
    Names,
    Run,
    add_hparams,
    add_value,
    hparam_value,
    number,
    step_of,
)

RUN_COLUMNS = ("run", "run_id", "run_name", "name")
STEP_COLUMNS = ("step", "global_step", "iteration", "iter", "steps")
METRIC_COLUMNS = ("metric", "tag", "key")
VALUE_COLUMNS = ("value",)


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
                check(
                    len(cells) == len(header),
                    f"{where}: {len(cells)} cells for the header's {len(header)} "
                    f"columns; give every row one cell per column",
                )
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
            raise ConfigError(
                f"{where} is not a JSON object; a JSON-lines file holds one object per line, e.g. "
                f'{{"run": "a", "step": 0, "train_acc": 0.1}}'
            ) from None
        check(isinstance(record, dict), f"{where} is not a JSON object (got {type(record).__name__})")
        header.update(dict.fromkeys(record))
        rows.append((where, record))
    check(rows, f"'{path}' holds no records")
    return list(header), rows


def find_column(header, choices, path: Path, what: str, required: bool = True) -> str | None:
    found = [h for h in header if h.lower() in choices]
    check(len(found) <= 1, f"'{path}' has several {what} columns {found}; keep one (or --ignore the others)")
    if not found and required:
        raise ConfigError(
            f"'{path}' has no {what} column (one of {', '.join(choices)}); its columns: {', '.join(header)}"
        )
    return found[0] if found else None


def read_table(path: Path, names: Names) -> dict[str, Run]:
    """The runs of a long or wide CSV / JSON-lines file (package docstring)."""
    return runs_of_rows(path, *read_rows(path), names)


def runs_of_rows(
    path: Path, header: list[str], rows: list[tuple[str, dict]], names: Names, step_offset: int = 0
) -> dict[str, Run]:
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
    check(
        long or metric_cols,
        f"'{path}' has no metric columns: a long file has the columns metric and value, a "
        f"wide one a column per metric (its columns: {', '.join(columns)})",
    )
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


__all__ = []
