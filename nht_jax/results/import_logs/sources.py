"""Which reader LOGS needs (TensorBoard, Lightning, or a table), and the runs it reads."""

from __future__ import annotations

from pathlib import Path

from nht_jax.base.errors import check
from nht_jax.results.import_logs.lightning import (
    is_lightning_file,
    lightning_files,
    lightning_offset,
    lightning_source,
    read_lightning,
)
from nht_jax.results.import_logs.runs import Names, Run, shifted
from nht_jax.results.import_logs.tables import read_rows, runs_of_rows
from nht_jax.results.import_logs.tensorboard_events import event_folders, read_tensorboard


def source_kind(path: Path) -> str:
    """ "tensorboard", "lightning" or "table": what LOGS is (package docstring, Sources)."""
    if path.is_dir():
        return "lightning" if not event_folders(path) and lightning_files(path) else "tensorboard"
    return "lightning" if is_lightning_file(path) else "table"


def read_logs(path, names: Names = Names(), step_offset: int | None = None) -> dict[str, Run]:
    """The runs of LOGS: a folder of TensorBoard event files, a folder of Lightning CSVLogger runs (or one run's
    metrics.csv beside its hparams.yaml), else a CSV or JSON-lines table. `step_offset` is added to every step of a
    table (None: + 1 for Lightning's logs unless already on their grid, `lightning_offset`; else 0)."""
    return read_logs_and_offset(path, names, step_offset)[0]


def read_logs_and_offset(path, names: Names = Names(), step_offset: int | None = None) -> tuple[dict[str, Run], int]:
    """(`read_logs`, the offset it added to every step). Each file is read once: Lightning's runs are read as
    logged, their offset chosen from those steps, then added."""
    path = Path(path)
    check(
        path.exists(),
        f"'{path}' does not exist; give nht import a CSV or JSON-lines file of logs, or a folder "
        f"of TensorBoard event files",
    )
    kind = source_kind(path)
    check(
        kind != "tensorboard" or not step_offset,
        "--step-offset applies to CSV and JSON-lines logs; TensorBoard event files carry their own steps",
    )
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


__all__ = []
