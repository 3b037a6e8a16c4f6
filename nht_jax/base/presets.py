"""Named presets: TOML files shipped inside the package (`nht_jax/presets/`), so a plain `pip install`
finds them from any directory.

A preset owns its reduced sizes (big_vision's `runlocal`): each `[scale.NAME]` table holds dotted settings, as
`--set` takes them, and optionally `analyze.SECTION.KEY = VALUE`; applying a scale replaces each value before any
`--set`, and the [scale] tables never enter a Config, its config.toml or its digest. The names the commands look
for are `SCALES` ("quick", "reproduce", "reduced"). Presets from installed packages (`plugin_presets`, entry-point
group "nht_jax.presets") never shadow a shipped one.

Writing a scale and the names: docs/configuration/scales.md; plugin presets: docs/guides/plugins.md."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from nht_jax.base import plugins
from nht_jax.base.errors import ConfigError
from nht_jax.base.schema import did_you_mean, unknown_key

QUICK, REPRODUCE, REDUCED = "quick", "reproduce", "reduced"
SCALES = {
    QUICK: "a few minutes on 2 CPU cores: what `nht paper reproduce --quick` and `nht paper figs --quick` train",
    REPRODUCE: "what `nht paper reproduce` trains without --quick (every part together in about half an hour on 2 idle "
    "CPU cores)",
    REDUCED: "a GPU-sized preset cut to fit a CPU (tens of minutes): what `nht paper figs` trains without --quick",
}
"""The scale names the commands use, each meaning one size everywhere. A preset of your own may add others."""

SCALE_TABLE = "scale"
ANALYZE = "analyze"
SCALE_NAME = re.compile(r"[a-z][a-z0-9_-]*")


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
    """A .toml path as given, the shipped preset of that name, else an installed package's (`plugin_presets`);
    ConfigError naming the closest preset."""
    path = Path(preset_or_file)
    if path.suffix == ".toml" and path.exists():
        return path
    path = presets_dir() / f"{preset_or_file}.toml"
    if path.exists():
        return path
    found = plugin_presets()
    plugin = next((p for p in found if p.name == preset_or_file and not p.ignored), None)
    if plugin is not None and plugin.problem:
        raise ConfigError(f"preset '{preset_or_file}' of {plugin.distribution}: {plugin.problem}")
    if plugin is None:
        known = list(list_presets()) + [p.name for p in found if not p.ignored]
        raise ConfigError(
            f"unknown preset or file '{preset_or_file}'.{did_you_mean(preset_or_file, known)} "
            f"Presets: {', '.join(known)} (see `nht presets`), or pass a path to a .toml file."
        )
    return plugin.path


@dataclass(frozen=True)
class PluginPreset:
    """A preset an installed distribution registers (group "nht_jax.presets"). path: its TOML file (None when it
    cannot be found); problem: why it cannot be used ("" if it can); ignored: why another preset of its name
    is used instead ("" if it is not)."""

    name: str
    distribution: str
    path: Path | None
    description: str = ""
    problem: str = ""
    ignored: str = ""


def plugin_presets() -> list[PluginPreset]:
    """Every preset of the installed distributions, by name; one that cannot be read says why (never raises)."""
    shipped, taken, out = set(list_presets()), {}, []
    for entry in plugins.registered(plugins.PRESETS):
        path, description, problem = None, "", ""
        try:
            path = Path(str(plugins.load_registered(entry, plugins.PRESETS)))
            if not (path.suffix == ".toml" and path.is_file()):
                problem = f"entry point '{entry.name}' = '{entry.value}' names {str(path)!r}, not a .toml file"
                path = None
            else:
                description = str(read_toml(path).get("description", ""))
        except ConfigError as e:
            problem = str(e)
        ignored = (
            "a shipped preset has this name (the shipped one is used; rename it)"
            if entry.name in shipped
            else f"{taken[entry.name]} registers this name too (its preset is used)"
            if entry.name in taken
            else ""
        )
        taken.setdefault(entry.name, entry.distribution)
        out.append(PluginPreset(entry.name, entry.distribution, path, description, problem, ignored))
    return out


def read_toml(path: Path) -> dict:
    try:
        with Path(path).open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path} is not valid TOML: {e}") from None
    except UnicodeDecodeError as e:  # TOML is UTF-8; tomllib decodes the bytes itself
        line = Path(path).read_bytes()[: e.start].count(b"\n") + 1
        raise ConfigError(
            f"{path} is not UTF-8 text (byte 0x{e.object[e.start]:02x} on line {line}), which TOML "
            f"must be: save it as UTF-8"
        ) from None


# ----------------------------------------------------------------------------- scales


def toml_value(value) -> str:
    """`value` as one line of TOML, which `--set KEY=VALUE` parses back to the same value."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(toml_value, value)) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # 0.001, 1e-05, inf, nan: TOML floats
    if isinstance(value, (int, str)):
        return json.dumps(value)  # a JSON string is a TOML basic string
    raise ConfigError(
        f"{value!r} ({type(value).__name__}) cannot be a setting of a scale: use a number, a "
        f"string, a boolean, a list or an inline table"
    )


def dotted(tables: dict) -> tuple[str, ...]:
    """{section: {key: value}} as `section.key=value` lines (`--set` syntax)."""
    return tuple(
        f"{section}.{key}={toml_value(value)}" for section, table in tables.items() for key, value in table.items()
    )


@dataclass(frozen=True)
class Scale:
    """One named size of a preset. settings: {section: {key: value}}, each replacing the preset's value of
    `section.key` (as `--set section.key=value` does); analyze: {section: {key: value}}, the `nht analyze`
    options at this size."""

    name: str
    settings: dict = field(default_factory=dict)
    analyze: dict = field(default_factory=dict)

    @property
    def overrides(self) -> tuple[str, ...]:
        """The settings as `--set` lines, in the file's order."""
        return dotted(self.settings)

    @property
    def analyze_overrides(self) -> tuple[str, ...]:
        """The analysis options as `nht analyze --set` lines."""
        return dotted(self.analyze)


def tables_of(raw, where: str) -> dict:
    """A table of tables ({section: {key: value}}), or a ConfigError saying what `where` should look like."""
    if not isinstance(raw, dict) or not all(isinstance(t, dict) for t in raw.values()):
        raise ConfigError(
            f"[{where}] must hold dotted settings `section.key = value` (e.g. train.steps = 3000), got {raw!r}"
        )
    return {section: dict(table) for section, table in raw.items()}


def split_scales(data: dict, sections, where: str) -> tuple[dict, dict[str, Scale]]:
    """(the preset's tables without [scale], its scales by name); a malformed [scale.NAME] table (an unknown
    section, a setting that is not `section.key = value`, a bad name) raises ConfigError naming it."""
    data = dict(data)
    raw = data.pop(SCALE_TABLE, {})
    if not isinstance(raw, dict) or not all(isinstance(t, dict) for t in raw.values()):
        raise ConfigError(
            f"{where}: [scale] must hold one table per scale, [scale.NAME] (e.g. [scale.quick]), got {raw!r}"
        )
    scales = {}
    for name, table in raw.items():
        if not SCALE_NAME.fullmatch(name):
            raise ConfigError(
                f"{where}: scale name '{name}' must be lower-case letters, digits, '-' or '_', "
                f"starting with a letter (it names results folders: runs/out/<preset>-<scale>)"
            )
        table = dict(table)
        analyze = tables_of(table.pop(ANALYZE, {}), f"scale.{name}.{ANALYZE}")
        settings = tables_of(table, f"scale.{name}")
        for section in settings:
            if section not in sections:
                raise unknown_key(f"{where}: scale.{name}.", section, list(sections) + [ANALYZE])
        scales[name] = Scale(name, settings, analyze)
    return data, scales


def unknown_scale(preset: str, name: str, scales) -> ConfigError:
    """The error for a scale the preset does not have, listing those it has."""
    if not scales:
        return ConfigError(
            f"preset '{preset}' has no scales, so --scale {name} cannot apply; run it as shipped, "
            f"or add a [scale.{name}] table to a copy of it (docs/configuration/scales.md)"
        )
    return ConfigError(
        f"preset '{preset}' has no scale '{name}'.{did_you_mean(name, scales)} Its scales: "
        f"{', '.join(scales)} (see `nht presets`)"
    )


def apply_scale(data: dict, scale: Scale) -> dict:
    """A copy of the nested TOML dict with every setting of the scale in place (whole values replaced)."""
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    for section, table in scale.settings.items():
        if not isinstance(data.setdefault(section, {}), dict):
            raise ConfigError(f"[{section}] must be a table, got {data[section]!r}")
        data[section].update(table)
    return data


def preset_scales(preset_or_file: str, sections) -> dict[str, Scale]:
    """The scales of a shipped preset (or a TOML file), by name, in the file's order."""
    path = preset_path(preset_or_file)
    return split_scales(read_toml(path), sections, str(path))[1]
