"""Generic configuration plumbing: typed dataclass sections built from TOML tables, `--set` overrides,
grid-axis specifications and "did you mean" messages. No schema lives here: each owner (engine, domain,
model, analysis) declares its own frozen dataclass and this module coerces values into it."""

from __future__ import annotations

import dataclasses
import difflib
import math
import tomllib
from typing import Any, Literal, get_args, get_origin, get_type_hints

from nht_jax.base.aliases import HPARAM_ALIASES, grid_key
from nht_jax.base.errors import ConfigError


def did_you_mean(word: str, known) -> str:
    close = difflib.get_close_matches(word, list(known), n=1)
    return f" Did you mean '{close[0]}'?" if close else ""


def unknown_key(where: str, key: str, known) -> ConfigError:
    return ConfigError(f"unknown key '{where}{key}'.{did_you_mean(key, known)} Known keys: {', '.join(sorted(known))}")


def coerce(where: str, hint: Any, value: Any) -> Any:
    """`value` checked and converted to the type `hint` (Literal, tuple[X, ...], bool, int, float, str, or a type
    that reads itself with a classmethod `from_toml(where, value)`)."""
    if hasattr(hint, "from_toml"):
        return hint.from_toml(where, value)
    if dataclasses.is_dataclass(hint):  # a nested table of settings, e.g. [live.forecast]
        return build(hint, value, where)
    origin = get_origin(hint)
    if origin is Literal:
        if value not in get_args(hint):
            raise ConfigError(f"{where} = {value!r} is not allowed; choose one of {list(get_args(hint))}")
        return value
    if origin is tuple:
        (elem, _ellipsis) = get_args(hint)
        if not isinstance(value, (list, tuple)):
            value = [value]
        return tuple(coerce(where, elem, v) for v in value)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, float) and value.is_integer())):
            raise ConfigError(f"{where} must be an integer, got {value!r}")
        return int(value)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where} must be a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string, got {value!r}")
        return value
    raise ConfigError(f"{where}: unsupported type {hint}")  # pragma: no cover - schema bug


def field_names(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def build(cls, table: dict, section: str):
    """An instance of the frozen dataclass `cls` from a TOML table; unknown keys and bad values raise ConfigError."""
    if not isinstance(table, dict):
        raise ConfigError(f"[{section}] must be a table, got {table!r}")
    hints = get_type_hints(cls)
    kwargs = {}
    for key, value in table.items():
        if key not in hints:
            raise unknown_key(f"{section}.", key, hints)
        kwargs[key] = coerce(f"{section}.{key}", hints[key], value)
    return cls(**kwargs)


def plain(section) -> dict:
    """A dataclass section as a TOML-serialisable dict (tuples as lists, dataclasses in them or nested as tables)."""

    def value(v):
        if isinstance(v, tuple):
            return [plain(x) if dataclasses.is_dataclass(x) else x for x in v]
        return plain(v) if dataclasses.is_dataclass(v) else v

    return {f.name: value(getattr(section, f.name)) for f in dataclasses.fields(section)}


# ----------------------------------------------------------------------------- grid axes


def logspace(lo: float, hi: float, n: int) -> list[float]:
    """n values from lo to hi, evenly spaced in log10 (both ends included)."""
    if n == 1:
        return [float(lo)]
    a, b = math.log10(lo), math.log10(hi)
    return [10 ** (a + (b - a) * i / (n - 1)) for i in range(n)]


RANDOM_KINDS = ("loguniform", "uniform")
"""Tables of a random grid axis: {loguniform = [lo, hi]} (uniform in log, 0 < lo < hi) or {uniform = [lo, hi]}."""


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def random_spec(key: str, raw: Any) -> tuple[str, float, float] | None:
    """(kind, lo, hi) when `raw` is {loguniform = [lo, hi]} or {uniform = [lo, hi]}, else None; bad bounds raise."""
    if not (isinstance(raw, dict) and len(raw) == 1 and next(iter(raw)) in RANDOM_KINDS):
        return None
    kind, spec = next(iter(raw.items()))
    if not (isinstance(spec, list) and len(spec) == 2 and all(_is_number(v) and math.isfinite(v) for v in spec)):
        raise ConfigError(f"grid.{key}.{kind} needs [lo, hi] with two finite numbers, got {spec!r}")
    lo, hi = float(spec[0]), float(spec[1])
    if not lo < hi:
        raise ConfigError(f"grid.{key}.{kind} needs lo < hi, got [{spec[0]}, {spec[1]}]")
    if kind == "loguniform" and not lo > 0:
        raise ConfigError(
            f"grid.{key}.loguniform needs positive bounds (it is uniform in log), got "
            f"[{spec[0]}, {spec[1]}]; use {{uniform = [lo, hi]}} for a range that includes 0"
        )
    return kind, lo, hi


def axis_values(key: str, raw: Any) -> tuple:
    """A grid axis from a scalar, a list, or {logspace = [lo, hi, n]} / {linspace = [lo, hi, n]}.
    (The random forms {loguniform = [lo, hi]} / {uniform = [lo, hi]} are drawn by `nht_jax.engine.grid.resolve`,
    which knows grid.samples and grid.sample_seed.)"""
    if isinstance(raw, dict):
        if len(raw) != 1 or next(iter(raw)) not in ("logspace", "linspace"):
            raise ConfigError(
                f"grid.{key}: a table must be {{logspace = [lo, hi, n]}}, "
                f"{{linspace = [lo, hi, n]}}, {{loguniform = [lo, hi]}} or {{uniform = [lo, hi]}}, "
                f"got {raw!r}"
            )
        kind, spec = next(iter(raw.items()))
        if not (
            isinstance(spec, list)
            and len(spec) == 3
            and isinstance(spec[2], int)
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in spec[:2])
            and spec[2] >= 1
        ):
            raise ConfigError(
                f"grid.{key}.{kind} needs [lo, hi, n] with numbers lo, hi and an integer n ≥ 1, got {spec!r}"
            )
        lo, hi, n = spec
        if kind == "logspace":
            if not (lo > 0 and hi > 0):
                raise ConfigError(f"grid.{key}.logspace needs positive ends, got [{lo}, {hi}]")
            return tuple(float(v) for v in logspace(lo, hi, n))
        return tuple(float(lo + (hi - lo) * i / max(n - 1, 1)) for i in range(n))
    values = raw if isinstance(raw, (list, tuple)) else [raw]
    if not values:
        raise ConfigError(f"grid.{key} is empty: give at least one value")
    return tuple(values)


# ----------------------------------------------------------------------------- --set overrides

TOP_LEVEL_KEYS = ("name", "description")
"""Keys of a configuration outside its sections: `--set name=…`, `name="…"` in Python."""


def text_value(raw: str) -> str:
    """A text setting (name, description) from --set: a TOML string loses its quotes (`name="~"` is ~), anything
    else is the text as typed (`name=my run` is "my run", `name=2024` is "2024")."""
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw
    return value if isinstance(value, str) else raw


def parse_override(text: str, sections) -> tuple[list[str], Any]:
    """'section.key=value' → (['section', 'key'], value), the value parsed as TOML (bare words as strings).
    A grid key may be an other name of its axis (`grid.lambda`, `grid.wd` → grid.weight_decay, `grid.lr` →
    grid.learning_rate: `nht_jax.base.aliases`, the table `nht import` reads logs with). Two common slips are
    refused with the right form: a bare axis name (`lambda=0.1`: write grid.weight_decay=…) and a list without
    brackets (`grid.seed=0,1`: write [0, 1])."""
    if "=" not in text:
        raise ConfigError(f"--set expects key=value (e.g. train.steps=2000), got {text!r}")
    key, raw = text.split("=", 1)
    path = key.strip().split(".")
    if len(path) == 1 and path[0] in TOP_LEVEL_KEYS:
        return path, text_value(raw)
    if len(path) not in (2, 3) or not all(path):
        axis = grid_key(path[0]) if len(path) == 1 and "grid" in sections else None
        if axis in HPARAM_ALIASES:
            raise ConfigError(
                f"--set {key.strip()}: the grid's axes are set in section grid; write "
                f"--set 'grid.{axis}={list_text(raw)}'"
            )
        raise ConfigError(
            f"--set key must look like section.key (sections: {', '.join(sections)}), or "
            f"section.table.key for a nested table, got {key!r}"
        )
    check_section(path[0], sections)
    if path[0] == "grid":
        path[1] = grid_key(path[1])
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        if unbracketed_list(raw):
            raise ConfigError(
                f"--set {key.strip()}={raw}: a list is written in brackets: --set '{'.'.join(path)}={list_text(raw)}'"
            ) from None
        value = raw.strip()
    return path, value


def check_section(section: str, sections) -> None:
    """An override's section must be one of `sections` (else the unknown-key line with the closest one)."""
    if section not in sections:
        raise unknown_key("", section, sections)


def keyword_overrides(tables, sections) -> list[tuple[list[str], Any]]:
    """Overrides given as Python keywords, `{section: {key: value}}` (and `name`/`description` as text), as the
    (path, value) pairs `parse_override` makes of 'section.key=value': `train={"steps": 1000}` is
    `--set train.steps=1000`. Values become what TOML would have given (`toml_value`); the sections are checked
    here, the keys and values where the sections are built, so a mistake reads as the same ConfigError line."""
    items = []
    for section, table in tables.items():
        if section in TOP_LEVEL_KEYS:
            items.append(([section], table))
            continue
        check_section(section, sections)
        if not isinstance(table, dict):
            raise ConfigError(
                f'{section}= expects a dict of {section} settings, e.g. {section}={{"key": value}} '
                f"(as --set {section}.key=value), got {table!r}"
            )
        items += [
            ([section, grid_key(str(key)) if section == "grid" else str(key)], toml_value(value))
            for key, value in table.items()
        ]
    return items


def toml_value(value: Any) -> Any:
    """A Python value as the value TOML would read: numpy scalars and arrays as Python numbers and lists, tuples
    as lists, inside dicts and lists too."""
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy scalars and arrays
        value = value.tolist()
    if isinstance(value, dict):
        return {str(k): toml_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [toml_value(v) for v in value]
    return value


def override_text(item) -> str:
    """An override as the `--set` text it stands for: 'section.key=value' as given, a keyword pair as key=repr."""
    if isinstance(item, str):
        return item
    path, value = item
    return f"{'.'.join(path)}={value!r}"


def unbracketed_list(raw: str) -> bool:
    """'0,1' or '0.1, 1.0': numbers (or booleans, or quoted strings) separated by commas, without the brackets a
    TOML list needs."""
    parts = raw.split(",")
    if len(parts) < 2:
        return False
    try:
        return all(not isinstance(tomllib.loads(f"v = {part.strip()}")["v"], (list, dict)) for part in parts)
    except tomllib.TOMLDecodeError:
        return False


def list_text(raw: str) -> str:
    """A value as the TOML list an axis takes: '0,1' → '[0, 1]', '0.1' → '[0.1]', '[0.1]' kept."""
    raw = raw.strip()
    if raw.startswith(("[", "{")):
        return raw
    return "[" + ", ".join(part.strip() for part in raw.split(",")) + "]"


def apply_overrides(data: dict, overrides, sections) -> dict:
    """A copy of the nested TOML dict with each override applied (keys are checked when sections are built). An
    override is 'section.key=value' text (`parse_override`) or a (path, value) pair (`keyword_overrides`)."""
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    for text in overrides:
        path, value = parse_override(text, sections) if isinstance(text, str) else text
        if len(path) == 1:
            data[path[0]] = value
            continue
        section, key, *inner = path
        if not isinstance(data.setdefault(section, {}), dict):
            raise ConfigError(f"[{section}] must be a table, got {data[section]!r}")
        if not inner:
            data[section][key] = value
            continue
        table = data[section].get(key, {})
        if not isinstance(table, dict):
            raise ConfigError(
                f"--set {section}.{key}.{inner[0]}: {section}.{key} is not a table of settings "
                f"(it is {table!r}); write --set {section}.{key}=VALUE"
            )
        data[section] = {**data[section], key: {**table, inner[0]: value}}
    return data
