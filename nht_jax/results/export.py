"""Results out: a loaded results folder (`nht_jax.results.folder.Results`) as labelled arrays, tables, TensorBoard
event files or offline W&B runs. Every function here is a pure function of a `Results` (the writers write only
under the folder they are given); the libraries are optional extras, imported inside the functions, and a missing
one ends in one ConfigError line naming the extra to install (`require`).

`to_xarray` (a Dataset), `to_pandas` (long table and summary), `write_tensorboard`, `write_wandb` (offline runs) and
`export` (what `nht export` writes) share the conventions: the configured axis values, metric families kept flat
in tables and trackers, non-finite values kept. The `Results` annotations name `nht_jax.results.folder.Results`,
not imported: its methods import this module.

The conventions, each format's layout, the trackers' names and wall times, and where an export goes:
docs/guides/export.md."""

from __future__ import annotations

import contextlib
import json
import logging
import re
import shutil
import socket
import struct
import time
from pathlib import Path

import numpy as np

from nht_jax.base import optional
from nht_jax.base.atomic import atomic_write_bytes, atomic_write_text
from nht_jax.base.errors import ConfigError, check
from nht_jax.engine import grid as grid_lib

EXTRAS = {"xarray": "xarray", "pandas": "xarray", "tensorboardX": "tensorboard", "wandb": "wandb"}
"""The optional module → the extra of pyproject.toml that installs it."""

FAMILY_DIMS = {"layer_norm_sq": "layer", "group_acc": "group"}
"""The dimension name of a metric family's members in `to_xarray` (any other family: `<family>_member`)."""

HPARAM_METRICS = ("final_test_acc", "final_train_acc", "T_fit", "delay")
"""The summary columns TensorBoard's hparams table shows next to each run's axis values (those present)."""

KINDS = {"tensorboard": "tensorboard", "wandb": "wandb"}
"""`export`'s kinds → the subfolder of the output folder it owns."""

MARKER = ".nht-export.json"
"""Written first into a folder `export` owns (and rewritten when done): an earlier export may be replaced."""


def require(module: str, purpose: str):
    """The module imported, or one ConfigError line saying which extra installs it (`nht_jax.base.optional`)."""
    return optional.require(module, purpose, EXTRAS[module])


# ----------------------------------------------------------------------------- labels


def configured_values(res: Results) -> dict[str, np.ndarray]:
    """{axis: (runs,)} each run's value as configured: the entry of `res.axes[axis]` (config.toml's values) nearest
    to the run's recorded (float32) value; exact, since the recorded values are those entries cast."""
    out = {}
    for axis, recorded in res.hparams.items():
        options = np.asarray(res.axes[axis])
        nearest = np.abs(options[None, :].astype(float) - np.asarray(recorded, float)[:, None]).argmin(axis=1)
        out[axis] = options[nearest]
    return out


def value_text(value) -> str:
    """An axis value in a run name: integers as such, floats in %g (0.01, 1e-05)."""
    return f"{value:g}" if isinstance(value, (float, np.floating)) else str(value)


def run_names(res: Results) -> list[str]:
    """One folder name per run: the zero-padded run index, then `axis=value` of every axis with more than one
    value, e.g. `03_weight_decay=1,seed=0` (the index keeps names unique and in run order)."""
    values = configured_values(res)
    varied = [axis for axis in res.axes if len(np.unique(values[axis])) > 1]
    width = len(str(max(res.num_runs - 1, 0)))
    names = []
    for i in range(res.num_runs):
        label = ",".join(f"{axis}={value_text(values[axis][i])}" for axis in varied)
        names.append(f"{i:0{width}d}" + (f"_{label}" if label else ""))
    return names


def metric_families(names) -> dict[str, dict[str, str]]:
    """{variable: {member: metric name}}: a plain metric is its own variable ({"": name}); `family/member`
    metrics are grouped under their family, members in recorded order."""
    out: dict[str, dict[str, str]] = {}
    for name in names:
        family, _, member = name.partition("/")
        out.setdefault(family if member else name, {})[member] = name
    return out


def summary_columns(res: Results) -> dict[str, np.ndarray]:
    """{column: (runs,)} of summary.csv, less `run` and the axes (already labels)."""
    skip = {"run", *res.axes}
    columns = [c for c in (res.summary[0] if res.summary else {}) if c not in skip]
    return {c: np.asarray([row[c] for row in res.summary]) for c in columns}


def plain(value):
    """A numpy scalar as the Python value the writers' libraries accept."""
    return value.item() if isinstance(value, np.generic) else value


# ----------------------------------------------------------------------------- names and times in the trackers

TRACKER_GROUPS = ("train", "test", "norm", "eval", "other", "status")
"""The sections TensorBoard and W&B show the metrics in (`tracker_name`); both dashboards sort them by name."""


def tracker_name(metric: str) -> str:
    """A metric's name in TensorBoard and W&B, under its section: `train_loss` → `train/loss`, `test_acc` →
    `test/acc`, any other name holding "train" or "test" under that word as it is (`relative_train_loss` →
    `train/relative_train_loss`); a norm (`norm_sq`, `weight_norm_sq`, `layer_norm_sq/<layer>`, `grad_norm`) →
    `norm/…`; `finite` → `status/finite` (last, not first); another accuracy, loss or reliance (the image domains'
    group metrics: `worst_group_acc`, `clean_loss`, `group_acc/<g>`) → `eval/…`; anything else → `other/…`
    (`logit_scale`). `metric_of_tracker_name` inverts it.

    Args:
        metric: the metric's name in the results.

    Returns:
        Its name in the trackers, "section/name".
    """
    family = metric.partition("/")[0]
    for group in ("train", "test"):
        if metric.startswith(f"{group}_") and "/" not in metric:
            return f"{group}/{metric[len(group) + 1 :]}"
    for group in ("train", "test"):
        if group in family:
            return f"{group}/{metric}"
    if "norm" in family:
        return f"norm/{metric}"
    if metric == "finite":
        return "status/finite"
    if family.endswith(("_acc", "_loss", "_reliance")) or family in ("group_acc", "group_loss"):
        return f"eval/{metric}"
    return f"other/{metric}"


def metric_of_tracker_name(tag: str) -> str | None:
    """The metric a `tracker_name` stands for (`train/acc` → `train_acc`, `norm/norm_sq` → `norm_sq`); None for a
    tag under no section of `TRACKER_GROUPS`."""
    group, slash, rest = tag.partition("/")
    if not slash or group not in TRACKER_GROUPS or not rest:
        return None
    if group in ("train", "test") and group not in rest.partition("/")[0]:
        return f"{group}_{rest}"
    return rest


def wall_times(res: Results) -> tuple[np.ndarray, str]:
    """(logs,) POSIX seconds of each logged step, and where they come from: "progress.log" — the training's own
    times (`nht_jax.results.wall_times`); steps no line covers take the nearest known step's time — or, for
    results without a progress.log (imported, in memory), "export": the time of the export, one for all.

    Args:
        res: the results.

    Returns:
        (times, source): the times, and "progress.log" or "export".
    """
    from nht_jax.results.wall_times import folder_wall_times

    times = folder_wall_times(res.path, res.steps)
    known = np.flatnonzero(~np.isnan(times))
    if not len(known):
        return np.full(len(res.steps), time.time()), "export"
    nearest = known[np.abs(np.arange(len(times))[:, None] - known[None, :]).argmin(axis=1)]
    return times[nearest], "progress.log"


# ----------------------------------------------------------------------------- arrays and tables


def to_xarray(res: Results, squeeze: bool = False):
    """The results as an `xarray.Dataset` (module docstring): product grids as (axis…, step), irregular grids as
    (run, step) with the axes as coordinates along `run`.

    Args:
        res: the results.
        squeeze: drop the run dimensions of length 1 (a grid axis with one value, or `run` for a one-run irregular
            grid), each kept as a scalar coordinate; the metric families' member dimensions and `step` are never
            dropped.

    Returns:
        The Dataset.
    """
    xr = require("xarray", "Results.to_xarray()")
    runs = run_indices(res)
    if res.grid_kind == grid_lib.PRODUCT and res.shard is None:
        dims = tuple(res.axes)
        shape = res.grid_shape
        coords = {axis: np.asarray(res.axes[axis]) for axis in dims}
        coords["run"] = (dims, runs.reshape(shape))
    else:
        dims, shape = ("run",), (res.num_runs,)
        coords = {"run": runs, **{axis: ("run", v) for axis, v in configured_values(res).items()}}
    coords["step"] = np.asarray(res.steps)
    data = {}
    for variable, members in metric_families(res.metrics).items():
        if list(members) == [""]:
            data[variable] = ((*dims, "step"), res.metrics[members[""]].reshape(*shape, -1))
            continue
        dim = FAMILY_DIMS.get(variable, f"{variable}_member")
        coords[dim] = np.asarray(list(members))
        stacked = np.stack([res.metrics[name] for name in members.values()], axis=1)  # (runs, members, logs)
        data[variable] = ((*dims, dim, "step"), stacked.reshape(*shape, len(members), -1))
    for column, values in summary_columns(res).items():
        data[column if column not in data else f"summary_{column}"] = (dims, values.reshape(shape))
    attrs = {
        "config_digest": str(res.meta.get("config_digest", "")),
        "preset": res.config.name,
        **({"shard": res.shard_text} if res.shard is not None else {}),
        "domain": res.config.task.name,
        "grid_kind": res.grid_kind,
        "source": source_text(res),
        "config_toml": config_toml(res),
    }
    ds = xr.Dataset(data, coords=coords, attrs=attrs)
    return ds.squeeze([dim for dim in dims if ds.sizes[dim] == 1]) if squeeze else ds


def run_indices(res: Results) -> np.ndarray:
    """(runs,) each run's index in the whole grid: 0 … runs − 1, or a shard's block [start, stop)."""
    return np.arange(*res.shard["runs"]) if res.shard is not None else np.arange(res.num_runs)


def source_text(res: Results) -> str:
    """Where the results came from: their folder, or "in memory" for a sweep run without one (`path` None)."""
    return "in memory" if res.path is None else str(res.path)


def config_toml(res: Results) -> str:
    """The results' config.toml as written in their folder; for results without a folder (or partial ones), the
    same text made from their configuration (`experiment.to_toml`, what the sweep writes)."""
    if res.path is None or res.partial is not None:  # no folder, or an unfinished one (no config.toml yet)
        from nht_jax import experiment

        return experiment.to_toml(res.config)
    return (Path(res.path) / "config.toml").read_text(encoding="utf-8")


def to_pandas(res: Results):
    """(long, summary) DataFrames (module docstring): long = one row per (run, metric, step) with columns run,
    <axes…>, step, metric, value; summary = summary.csv's rows.

    Args:
        res: the results.

    Returns:
        (long, summary), two pandas DataFrames.
    """
    pd = require("pandas", "Results.to_pandas()")
    names = list(res.metrics)
    num_runs, num_logs = res.num_runs, len(res.steps)
    repeat = len(names) * num_logs  # rows per run
    columns = {"run": np.repeat(run_indices(res), repeat)}
    columns.update({axis: np.repeat(v, repeat) for axis, v in configured_values(res).items()})
    columns["step"] = np.tile(np.asarray(res.steps), num_runs * len(names))
    columns["metric"] = np.tile(np.repeat(np.asarray(names, dtype=object), num_logs), num_runs)
    columns["value"] = np.stack([res.metrics[n] for n in names], axis=1).reshape(-1)  # (runs, metrics, logs)
    return pd.DataFrame(columns), pd.DataFrame(res.summary)


# ----------------------------------------------------------------------------- TensorBoard


@contextlib.contextmanager
def quiet_nan_warnings():
    """tensorboardX logs a warning for every NaN scalar; a diverged run's NaNs are expected (flagged by
    `finite`), so its logger is raised to ERROR for the block."""
    logger = logging.getLogger("tensorboardX.x2num")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def event_file_bytes(events) -> bytes:
    """Event protos (tensorboardX's `event_pb2.Event`) as the bytes of one event file: TFRecord framing, each
    record its length (uint64), the length's masked CRC-32C, the serialized event and its masked CRC-32C
    (tensorboardX's `RecordWriter.write`, with its checksum)."""
    from tensorboardX.record_writer import masked_crc32c

    out = bytearray()
    for event in events:
        data = event.SerializeToString()
        header = struct.pack("<Q", len(data))
        out += header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data))
    return bytes(out)


def write_tensorboard(res: Results, logdir, hparam_metrics=HPARAM_METRICS) -> list[Path]:
    """One event-file run per grid run under `logdir` (module docstring); returns the run folders. Each run's
    events are built with tensorboardX's summaries and written in this thread, atomically, as one file
    `events.out.tfevents.<time>.<host>` (`event_file_bytes`): tensorboardX's `SummaryWriter` writes from a thread
    of its own and again at exit, so a full disk printed its tracebacks and could leave a half-written file; here
    it is one `WriteError` line and no event file is ever partial."""
    require("tensorboardX", "nht export --tensorboard")
    from tensorboardX.proto.event_pb2 import Event
    from tensorboardX.summary import hparams, scalar, text

    logdir = Path(logdir)
    values = configured_values(res)
    summary = summary_columns(res)
    numeric = {c: v for c, v in summary.items() if v.dtype.kind in "biuf"}
    metrics = {f"summary/{c}": None for c in hparam_metrics if c in numeric}
    config_text = "```toml\n" + config_toml(res) + "```"
    last = int(res.steps[-1])
    times, source = wall_times(res)
    note_text = json.dumps(export_note(res, source))
    folders = []
    for i, name in enumerate(run_names(res)):
        folder = logdir / name
        events = [Event(wall_time=float(times[0]), file_version="brain.Event:2")]

        def add(part, step: int = 0, wall: float = float(times[0])):
            events.append(Event(summary=part, step=int(step), wall_time=wall))

        with quiet_nan_warnings():
            for metric, trajectory in res.metrics.items():
                tag = tracker_name(metric)
                for step, value, wall in zip(res.steps, trajectory[i], times):
                    add(scalar(tag, float(value)), step, float(wall))
            for column, column_values in numeric.items():
                add(scalar(f"summary/{column}", float(column_values[i])), last, float(times[-1]))
        if "regime" in summary:
            add(text("summary/regime", str(summary["regime"][i])), last, float(times[-1]))
        add(text("config", config_text), 0)
        add(text("export", note_text), 0)
        for part in hparams({axis: plain(v[i]) for axis, v in values.items()}, metrics):
            add(part)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(
            folder / f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}", event_file_bytes(events)
        )
        folders.append(folder)
    return folders


def export_note(res: Results, wall_time_source: str) -> dict:
    """What an export says about itself (TensorBoard: the text `export`; W&B: config `nht_export`): where its
    wall times come from (`wall_times`) and whether the results are partial (an unfinished sweep read with
    --partial: `Results.partial`, its step of the total)."""
    partial = res.partial
    return {
        "wall_time": wall_time_source,
        "partial": partial is not None,
        **({"partial_step": partial[0], "partial_of": partial[1]} if partial else {}),
    }


# ----------------------------------------------------------------------------- W&B


def wandb_settings(wandb):
    """Offline, quiet, and without what would describe this machine rather than the training: no console
    capture, system metrics, machine metadata, git, code or requirements."""
    return wandb.Settings(
        mode="offline",
        silent=True,
        console="off",
        x_disable_stats=True,
        x_disable_meta=True,
        disable_git=True,
        save_code=False,
        x_save_requirements=False,
        disable_job_creation=True,
    )


@contextlib.contextmanager
def quiet_logging_errors():
    """W&B logs to files under the export folder; when a write there fails (a full disk), Python's logging prints
    a traceback per record ("--- Logging error ---", hundreds of lines). `logging.raiseExceptions = False` (the
    standard switch) drops them for the block; the failure itself still ends the export, as one line."""
    before = logging.raiseExceptions
    logging.raiseExceptions = False
    try:
        yield
    finally:
        logging.raiseExceptions = before


def write_wandb(res: Results, out, project: str = "nht") -> list[Path]:
    """One offline W&B run per grid run under out/wandb (module docstring), complete on return (`wait_for_wandb`).
    Upload them later with `wandb sync out/wandb/offline-run-*`. Refused while the process has a W&B run of its own
    active: `wandb.init` would hand that run back (W&B's reinit default) and the wait would end it. A full disk is
    one line (`quiet_logging_errors`).

    Args:
        res: the results.
        out: the folder that gets the wandb folder.
        project: the W&B project.

    Returns:
        The run folders.
    """
    wandb = require("wandb", "nht export --wandb")
    from nht_jax import experiment

    if wandb.run is not None:
        raise ConfigError(
            f"a W&B run ('{wandb.run.name}') is active in this process; finish it (wandb.finish()) "
            f"before exporting to W&B."
        )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    digest = str(res.meta.get("config_digest", ""))
    values = configured_values(res)
    settings = experiment.to_dict(res.config)
    summary = summary_columns(res)
    times, source = wall_times(res)
    tags = {metric: tracker_name(metric) for metric in res.metrics}
    folders = []
    with quiet_logging_errors():
        for i, (name, index) in enumerate(zip(run_names(res), run_indices(res))):
            config = {
                **{axis: plain(v[i]) for axis, v in values.items()},
                "config_digest": digest,
                "run": int(index),
                "preset": res.config.name,
                "nht": settings,
                "nht_export": export_note(res, source),
            }
            with wandb.init(
                dir=str(out),
                mode="offline",
                project=project,
                group=f"{res.config.name}-{digest}",
                name=name,
                id=run_id(digest, index),
                config=config,
                settings=wandb_settings(wandb),
            ) as run:
                for log, step in enumerate(res.steps):
                    row = {tags[metric]: float(trajectory[i, log]) for metric, trajectory in res.metrics.items()}
                    row["_timestamp"] = float(times[log])  # W&B keeps a given _timestamp (its _runtime is its own)
                    run.log(row, step=int(step))
                run.summary.update({column: plain(v[i]) for column, v in summary.items()})
                folders.append(Path(run.settings.sync_dir))
        wait_for_wandb(wandb)
    return folders


def run_id(digest: str, index: int) -> str:
    """A W&B run's id: the configuration's digest and the run's index in the whole grid, in the letters, digits, -
    and _ W&B ids take (a shard's digest "…+shard-0-of-2" → "…-shard-0-of-2")."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", f"{digest}-{index}")


def wait_for_wandb(wandb) -> None:
    """Wait until W&B's service process has written every finished run's `.wandb` file. The service (wandb-core)
    keeps a run's records in memory (the transaction log's 32 KiB block) and writes them when it closes the run's
    stream, on the `inform_finish` message that `run.finish()` sends without waiting for an answer: when the `with`
    block ends, the last run's file may still hold only its 7-byte header. `wandb.teardown()` shuts the service
    down and waits for it to exit, after it has closed every stream; the next `wandb.init` starts a new one. (A
    service this process did not start, named by a parent's WANDB_SERVICE, is left running and not waited for.)"""
    wandb.teardown()


# ----------------------------------------------------------------------------- nht export


def claim_folder(folder: Path, digest: str) -> None:
    """Make `folder` an empty export folder: absent or empty, or an earlier export (`MARKER`), which is removed;
    anything else is refused. The marker is written first, so a killed export is replaced by the next one."""
    if folder.is_symlink():
        raise ConfigError(
            f"'{folder}' is a symbolic link: `nht export` never writes through a link (it would "
            f"replace what it points to); remove the link (rm '{folder}'), or choose another --out "
            f"folder."
        )
    if folder.parent.exists() and not folder.parent.is_dir():
        raise ConfigError(
            f"--out '{folder.parent}' is a file, not a folder; give nht export a folder (created "
            f"when missing) to write {folder.name}/ into."
        )
    if folder.exists():
        if not folder.is_dir() or (any(folder.iterdir()) and not (folder / MARKER).exists()):
            raise ConfigError(
                f"'{folder}' exists and holds files that `nht export` did not write; choose another "
                f"--out folder, or move it away and export again."
            )
        shutil.rmtree(folder)
    try:
        folder.mkdir(parents=True)
    except OSError as e:
        raise ConfigError(f"cannot create '{folder}': {e.strerror or e}; choose another --out folder.") from None
    write_marker(folder, digest, finished=False)


def write_marker(folder: Path, digest: str, finished: bool, runs: int = 0) -> None:
    atomic_write_text(
        folder / MARKER,
        json.dumps({"written_by": "nht export", "config_digest": digest, "finished": finished, "runs": runs}) + "\n",
    )


def inside(path: Path, folder: Path) -> bool:
    """Whether `path` is `folder` or lies inside it (both resolved).

    Args:
        path: a path.
        folder: a folder.

    Returns:
        True when it does.
    """
    path, folder = Path(path).resolve(), Path(folder).resolve()
    return path == folder or folder in path.parents


def export(res: Results, kind: str, base, project: str = "nht") -> tuple[Path, list[Path]]:
    """What `nht export` writes: `res` in base/<kind>, replacing an earlier export there (`claim_folder`). The command
    (`nht_jax.cli`) loads the results and holds the results folder's lock when base/<kind> is inside it (`inside`).

    Args:
        res: the results.
        kind: "tensorboard" or "wandb".
        base: the folder the export folder goes in.
        project: the W&B project.

    Returns:
        (the export folder, the run folders).
    """
    require(
        *(("tensorboardX", "nht export --tensorboard") if kind == "tensorboard" else ("wandb", "nht export --wandb"))
    )  # before anything is written
    if kind == "wandb":
        check_project(project)
    target = Path(base) / KINDS[kind]
    digest = str(res.meta.get("config_digest", ""))
    claim_folder(target, digest)
    runs = write_tensorboard(res, target) if kind == "tensorboard" else write_wandb(res, base, project)
    write_marker(target, digest, finished=True, runs=len(runs))
    return target, runs


WANDB_PROJECT_FORBIDDEN = "/\\#?%:"
"""Characters W&B refuses in a project name (`wandb.sdk.wandb_settings.Settings.validate_project`, with its limit of
`WANDB_PROJECT_MAX` characters): checked before anything is written."""
WANDB_PROJECT_MAX = 128


def check_project(project: str) -> str:
    """`project` as W&B takes it, else a one-line ConfigError naming what it refuses; "entity/project" is two
    names (the entity goes to `wandb sync --entity`)."""
    found = sorted(set(project) & set(WANDB_PROJECT_FORBIDDEN))
    entity = (
        (
            f" For a team's project (ENTITY/PROJECT), export with --project {project.partition('/')[2]!r} and "
            f"upload with wandb sync --entity {project.partition('/')[0]!r}."
        )
        if project.count("/") == 1
        else ""
    )
    check(project.strip() != "", "--project is empty: name the W&B project (e.g. --project nht)")
    check(
        not found,
        f"--project {project!r}: a W&B project name cannot hold {' '.join(WANDB_PROJECT_FORBIDDEN)} "
        f"(found {' '.join(found)}).{entity}",
    )
    check(
        len(project) <= WANDB_PROJECT_MAX,
        f"--project: a W&B project name has at most {WANDB_PROJECT_MAX} characters, this one {len(project)}",
    )
    return project


def next_step(kind: str, target: Path) -> str:
    """The command that shows or uploads an export."""
    if kind == "tensorboard":
        return f"view: tensorboard --logdir '{target}'"
    return f"upload (needs a W&B login): wandb sync '{target}'/offline-run-*"


__all__ = ["HPARAM_METRICS", "export", "inside", "to_pandas", "to_xarray", "tracker_name", "wall_times", "write_wandb"]
