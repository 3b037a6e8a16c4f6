"""`copy_presets(folder, scales)`: the shipped presets copied into `folder` with the [scale.*] tables of some
replaced, for `nht_jax.base.presets.presets_dir` to point at: the papers' commands then read those sizes.
`write_table(folder, name, rows, steps)`: a hand-made table as the writers write it, for the rules' tests."""

import json
import shutil
from pathlib import Path

from nht_jax.analysis.tables import csv_text
from nht_jax.base.presets import presets_dir


def write_table(folder: Path, name: str, rows: list[dict], steps: int | None = None) -> Path:
    """FOLDER/NAME as the writers write it (csv_text), and meta.json with the step budget when given."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(csv_text(rows))
    if steps is not None:
        (folder / "meta.json").write_text(json.dumps({"steps": steps}))
    return folder


def copy_presets(folder: Path, scales: dict[str, str], replace: dict[str, tuple[str, str]] | None = None) -> Path:
    """Every shipped preset in `folder`; the preset `name` of each `scales` entry keeps its tables up to its first
    [scale.*] table and gets the given TOML text (its new scale tables) instead; `replace` {name: (old, new)}
    edits a line of a preset."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in presets_dir().glob("*.toml"):
        shutil.copy(path, folder / path.name)
    for name, text in scales.items():
        path = folder / f"{name}.toml"
        path.write_text(path.read_text().split("\n[scale.")[0] + "\n" + text)
    for name, (old, new) in (replace or {}).items():
        path = folder / f"{name}.toml"
        assert old in path.read_text(), (name, old)
        path.write_text(path.read_text().replace(old, new))
    return folder
