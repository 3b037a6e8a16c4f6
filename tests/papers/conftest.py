"""`copy_presets(folder, scales)`: the shipped presets copied into `folder` with the [scale.*] tables of some
replaced, for `nht_jax.base.presets.presets_dir` to point at: the papers' commands then read those sizes."""

import shutil
from pathlib import Path

from nht_jax.base.presets import presets_dir


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
