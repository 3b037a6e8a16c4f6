"""Generic configuration plumbing: typed dataclass sections built from TOML tables, `--set` overrides,
grid-axis specifications and "did you mean" messages. No schema lives here: each owner (engine, domain,
model, analysis) declares its own frozen dataclass and this module coerces values into it."""

from __future__ import annotations

import dataclasses
import difflib
import math
import tomllib
from typing import Any, Literal, get_args, get_origin, get_type_hints

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
    """A dataclass section as a TOML-serialisable dict (tuples as lists, dataclasses in them as tables)."""
    return {f.name: ([plain(x) if dataclasses.is_dataclass(x) else x for x in v]
                     if isinstance(v := getattr(section, f.name), tuple) else v)
            for f in dataclasses.fields(section)}


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
        raise ConfigError(f"grid.{key}.loguniform needs positive bounds (it is uniform in log), got "
                          f"[{spec[0]}, {spec[1]}]; use {{uniform = [lo, hi]}} for a range that includes 0")
    return kind, lo, hi


def axis_values(key: str, raw: Any) -> tuple:
    """A grid axis from a scalar, a list, or {logspace = [lo, hi, n]} / {linspace = [lo, hi, n]}.
    (The random forms {loguniform = [lo, hi]} / {uniform = [lo, hi]} are drawn by `nht_jax.engine.grid.resolve`,
    which knows grid.samples and grid.sample_seed.)"""
    if isinstance(raw, dict):
        if len(raw) != 1 or next(iter(raw)) not in ("logspace", "linspace"):
            raise ConfigError(f"grid.{key}: a table must be {{logspace = [lo, hi, n]}}, "
                              f"{{linspace = [lo, hi, n]}}, {{loguniform = [lo, hi]}} or {{uniform = [lo, hi]}}, "
                              f"got {raw!r}")
        kind, spec = next(iter(raw.items()))
        if not (isinstance(spec, list) and len(spec) == 3 and isinstance(spec[2], int)
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in spec[:2]) and spec[2] >= 1):
            raise ConfigError(f"grid.{key}.{kind} needs [lo, hi, n] with numbers lo, hi and an integer n ≥ 1, got {spec!r}")
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

def text_value(raw: str) -> str:
    """A text setting (name, description) from --set: a TOML string loses its quotes (`name="~"` is ~), anything
    else is the text as typed (`name=my run` is "my run", `name=2024` is "2024")."""
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw
    return value if isinstance(value, str) else raw


def parse_override(text: str, sections) -> tuple[list[str], Any]:
    """'section.key=value' → (['section', 'key'], value), the value parsed as TOML (bare words as strings)."""
    if "=" not in text:
        raise ConfigError(f"--set expects key=value (e.g. train.steps=2000), got {text!r}")
    key, raw = text.split("=", 1)
    path = key.strip().split(".")
    if len(path) == 1 and path[0] in ("name", "description"):
        return path, text_value(raw)
    if len(path) != 2 or not all(path):
        raise ConfigError(f"--set key must look like section.key (sections: {', '.join(sections)}), got {key!r}")
    if path[0] not in sections:
        raise unknown_key("", path[0], sections)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return path, value


def apply_overrides(data: dict, overrides, sections) -> dict:
    """A copy of the nested TOML dict with each 'section.key=value' applied (keys are checked when sections are built)."""
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    for text in overrides:
        path, value = parse_override(text, sections)
        if len(path) == 1:
            data[path[0]] = value
            continue
        section, key = path
        if not isinstance(data.setdefault(section, {}), dict):
            raise ConfigError(f"[{section}] must be a table, got {data[section]!r}")
        data[section][key] = value
    return data
