"""TensorBoard event files: one run per folder of them, hyperparameters from the hparams plugin, an add_hparams
subfolder or the folder's name (the package docstring's Sources)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from nht_jax.base.errors import ConfigError, check
from nht_jax.results.export import MARKER
from nht_jax.results.import_logs.runs import Names, Run, add_value, hparam_value

EXPORT_SUMMARY_PREFIX = "summary/"
"""TensorBoard tags under this prefix are the summary columns `nht export` writes; the import recomputes them."""


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
        raise ConfigError(
            "nht import of TensorBoard event files needs the optional package tensorboard, which is "
            "not installed: pip install 'nht_jax[tensorboard]' (in a checkout: pip install -e "
            "'.[tensorboard]')"
        ) from None
    damage = damaged_event_file(folder)
    check(
        not damage,
        f"{damage}: TensorBoard would read only the records before it, and the import would miss "
        f"what comes after. Restore the file (or write the logs again), or move it out of the folder "
        f"to import the rest",
    )
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
    raise ConfigError(
        f"{len(unnamed)} of the {len(runs)} runs name no hyperparameters ({', '.join(unnamed[:3])}"
        f"{', …' if len(unnamed) > 3 else ''}: no hparams plugin data, and a folder name that is not "
        f"axis=value,axis=value), so which λ, η or seed each ran is unknown. Rename the folders (e.g. "
        f"'lambda=0.1,seed=0'), record the hyperparameters with the hparams plugin, or import one "
        f"run at a time with its values: nht import '{runs[unnamed[0]].where.strip(chr(39))}' --out "
        f"DIR --set grid.weight_decay=… --set grid.learning_rate=…"
    )


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
    return (
        folder.parent in loaded
        and plugin_hparams(events) is not None
        and all(len(points) <= 1 for points in scalar_series(events).values())
    )


def session_hparams(parent: Path, sessions: list[Path], loaded: dict) -> dict:
    """The hyperparameters the add_hparams subfolders of one run give; several calls must agree."""
    found = {}
    for session in sessions:
        for name, value in plugin_hparams(loaded[session]).items():
            check(
                found.setdefault(name, value) == value,
                f"'{parent}': its add_hparams subfolders give the hyperparameter {name} two values "
                f"({found[name]!r} and {value!r} in '{session.name}'); keep the subfolder of the run's own call, "
                f"or import the runs separately",
            )
    return found


def read_tensorboard(root: Path, names: Names) -> dict[str, Run]:
    """One run per folder of event files under `root` (package docstring); the subfolder that
    `SummaryWriter.add_hparams` writes (a timestamp for its name) gives its parent run's hyperparameters and is no
    run of its own (its metric_dict values, summaries of the run, are not imported: the run's notes say so). An
    unfinished `nht export` is refused (`unfinished_export`), as is a damaged event file (`damaged_event_file`)."""
    folders = event_folders(root)
    partial = unfinished_export(root, folders)
    check(
        not partial,
        f"{partial}: it holds only some of the sweep's runs, and importing it would make a smaller "
        f"sweep. Export again (nht export RESULTS --tensorboard) and import that",
    )
    check(
        folders,
        f"'{root}' holds no TensorBoard event files (events.out.tfevents.*); point nht import at the "
        f"folder of the runs, or at a CSV / JSON-lines file",
    )
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


__all__ = []
