"""Named presets: TOML files shipped inside the package (`nht_jax/presets/`), so a plain `pip install`
finds them from any directory."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

from nht_jax.base.errors import ConfigError
from nht_jax.base.schema import did_you_mean


def presets_dir() -> Path:
    """The folder of the shipped presets."""
    return Path(str(resources.files("nht_jax") / "presets"))


def list_presets() -> dict[str, str]:
    """Preset name → its one-line description."""
    out = {}
    for path in sorted(presets_dir().glob("*.toml")):
        with path.open("rb") as f:
            out[path.stem] = tomllib.load(f).get("description", "")
    return out


def preset_path(preset_or_file: str) -> Path:
    """A .toml path as given, or the shipped preset of that name; ConfigError naming the closest preset."""
    path = Path(preset_or_file)
    if path.suffix == ".toml" and path.exists():
        return path
    path = presets_dir() / f"{preset_or_file}.toml"
    if not path.exists():
        known = list(list_presets())
        raise ConfigError(f"unknown preset or file '{preset_or_file}'.{did_you_mean(preset_or_file, known)} "
                          f"Presets: {', '.join(known)} (see `nht presets`), or pass a path to a .toml file.")
    return path


def read_toml(path: Path) -> dict:
    try:
        with Path(path).open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path} is not valid TOML: {e}") from None
