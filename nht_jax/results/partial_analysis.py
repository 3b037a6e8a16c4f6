"""An analysis of an unfinished sweep (`nht analyze --partial`) never outlives the results it describes.

Its files are marked, each in a way its readers keep (analysis.md's header line, two last columns `partial_step`
and `partial_of` in every CSV (`mark_csv`), every figure's title), and the folder holds the sidecar
analysis_partial.json, written first. While it is there every analysis file (`analysis_files`) belongs to the
partial analysis: the resumed `nht run` removes them all at the sweep's end (`remove_partial`), and a finished
`nht analyze` removes those it did not replace (`finish_full`).

The marks, the sidecar and who removes what: docs/guides/run.md, "Unfinished folders"."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from nht_jax.base.atomic import atomic_write_text
from nht_jax.results.folder import FIGURE_FORMATS, FOLDER_FILES

SIDECAR = "analysis_partial.json"
COLUMNS = ("partial_step", "partial_of")


def mark_csv(text: str, step: int, total: int) -> str:
    """The CSV `text` with the columns `COLUMNS` appended, `step` and `total` on every row (a table without rows,
    "", stays "": there is nothing in it to mistake)."""
    if not text:
        return text
    rows = list(csv.reader(io.StringIO(text)))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*rows[0], *COLUMNS])
    writer.writerows([*row, step, total] for row in rows[1:])
    return buffer.getvalue()


def analysis_files() -> frozenset[str]:
    """The names of every file `nht analyze` may write (`FOLDER_FILES["analysis"]`, each figure in every one of
    `FIGURE_FORMATS`), the sidecar left out."""
    names = set(FOLDER_FILES["analysis"]) - {SIDECAR}
    stems = [name.removesuffix(".png") for name in names if name.endswith(".png")]
    return frozenset(names | {f"{stem}.{fmt}" for stem in stems for fmt in FIGURE_FORMATS})


def marked(folder: Path) -> dict | None:
    """The sidecar of `folder` ({"step", "of"}), or None when it holds no partial analysis (an unreadable sidecar
    counts as one: its files are still partial).

    Args:
        folder: the results folder.

    Returns:
        The sidecar's contents, {} when unreadable, or None.
    """
    path = Path(folder) / SIDECAR
    if not os.path.lexists(path):
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def begin_partial(folder: Path, step: int, total: int) -> None:
    """Write the sidecar, before any file of the partial analysis."""
    atomic_write_text(Path(folder) / SIDECAR, json.dumps({"step": int(step), "of": int(total)}))


def remove_files(folder: Path, names) -> list[str]:
    """Remove the files `names` present in `folder` (links as links); the names removed, sorted."""
    removed = []
    for name in sorted(names):
        path = Path(folder) / name
        if os.path.lexists(path) and not path.is_dir():
            path.unlink()
            removed.append(name)
    return removed


def remove_partial(folder: Path) -> list[str]:
    """At a sweep's end: every analysis file of the folder's partial analysis, then its sidecar (nothing when it
    holds none); the names removed."""
    if marked(folder) is None:
        return []
    removed = remove_files(folder, analysis_files())
    return removed + remove_files(folder, [SIDECAR])


def finish_full(folder: Path, written, had_partial: bool) -> list[str]:
    """After a finished analysis wrote `written` into `folder`: when the folder held a partial analysis
    (`had_partial`), its files this one did not replace, then the sidecar; the names removed."""
    if not had_partial:
        return []
    removed = remove_files(folder, analysis_files() - set(written))
    return removed + remove_files(folder, [SIDECAR])


def finish_partial(folder: Path, written, had_partial: bool) -> list[str]:
    """After a partial analysis wrote `written`: the files of an earlier partial analysis it did not replace; its own
    sidecar stays."""
    return remove_files(folder, analysis_files() - set(written)) if had_partial else []


def note(removed: list[str], folder: Path) -> str:
    """The line a sweep's end prints and logs when it removed a partial analysis ("" when none).

    Args:
        removed: the names of the files removed.
        folder: the results folder.

    Returns:
        The line.
    """
    if not removed:
        return ""
    files = [name for name in removed if name != SIDECAR]
    shown = ", ".join(files[:4]) + (f" and {len(files) - 4} more" if len(files) > 4 else "")
    return (
        f"removed the partial analysis of the unfinished sweep ({shown}): it described steps these results "
        f"supersede; `nht analyze {folder}` analyses the finished sweep"
    )


__all__ = ["marked", "note"]
