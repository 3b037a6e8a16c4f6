"""A section as config.toml and the results digest see it, and the old spellings read into their new places.

Keys added after results digests existed are left out of config.toml and the digest while at their default
(`DIGEST_OMITS_DEFAULT`), so a configuration that does not use them keeps the digest, and the finished results
folders, it had before they existed. Keys that moved (`MOVED_KEYS`) are read from their old place in a file or a
`--set` and written in their new one; a file or override that gives both, with different values, is refused.
"""

from __future__ import annotations

import copy
import sys
import warnings
from dataclasses import replace
from pathlib import Path

from nht_jax.base.errors import ConfigError, check
from nht_jax.base.presets import Scale, apply_scale
from nht_jax.base.schema import apply_overrides, parse_override, plain, unknown_key
from nht_jax.config.forecast import ForecastSettings

SECTIONS = ("task", "model", "optim", "train", "execution", "live", "stop", "analysis", "grid")
OPTIONAL_SECTIONS = ("fork",)
"""Sections a configuration has only when its file has them (absent: left out of config.toml and the digest)."""
TOP_KEYS = ("name", "description")

DIGEST_OMITS_DEFAULT = {
    "optim": {"before": [], "after": []},
    "train": {"loss": "default", "log_schedule": []},
    "execution": {"snapshot_steps": [], "snapshot_at_fit": False},
    "live": {"enabled": True, "every_s": 0.0, "forecast": plain(ForecastSettings()), "calibration": ""},
    "model": {"block_positions": "all"},
}
"""Keys added after results digests existed, by section, with their default: left out of config.toml and of the
digest while at that default."""

MOVED_KEYS = {
    ("execution", "live"): ("live", "enabled"),
    ("execution", "live_every_s"): ("live", "every_s"),
    ("execution", "live_forecast"): ("live", "forecast"),
    ("execution", "live_calibration"): ("live", "calibration"),
    ("execution", "live_v_post"): ("live", "forecast", "v_post"),
    ("execution", "live_trend_weight"): ("live", "forecast", "trend_weight"),
    ("execution", "stop_rule"): ("stop", "rule"),
    ("execution", "stop_margin_steps"): ("stop", "margin_steps"),
}
"""Old key path → where it lives now. [execution] was split on 2026-12-06 into [execution] (how the grid runs),
[live] (the live table) and [stop] (the stop rule); `live_v_post` and `live_trend_weight` were renamed on
2026-12-03. The old spellings are read until nht_jax 0.2."""


def digest_table(section: str, table: dict) -> dict:
    """A section's table as config.toml and the results digest see it: `DIGEST_OMITS_DEFAULT` keys dropped while
    at their default (an empty slot list, the domain's own loss).

    Args:
        section: the section's name.
        table: its plain table (`nht_jax.base.schema.plain`).

    Returns:
        The table without the keys at their omitted default."""
    omitted = DIGEST_OMITS_DEFAULT.get(section, {})

    def at_default(key, value) -> bool:
        default = omitted[key]
        return list(value) == default if isinstance(value, (list, tuple)) else value == default

    return {k: v for k, v in table.items() if not (k in omitted and at_default(k, v))}


def moved_path(path) -> tuple | None:
    """Where an old key path lives now: ("execution", "stop_rule") → ("stop", "rule"); a path below a moved key
    moves with it (("execution", "live_forecast", "v_post") → ("live", "forecast", "v_post")); None when the path
    did not move.

    Args:
        path: a key path, its section first.

    Returns:
        The new path, or None."""
    path = tuple(path)
    for old, new in MOVED_KEYS.items():
        if path[: len(old)] == old:
            return new + path[len(old) :]
    return None


def moved(data: dict) -> dict:
    """A configuration's tables with every old spelling (`MOVED_KEYS`) moved to its new place (a copy). Given in
    both places, a key must have one value: two different ones raise ConfigError naming both.

    Args:
        data: the configuration's tables, {section: table}.

    Returns:
        The tables as today's spelling has them."""
    out = copy.deepcopy(data)
    for (section, key), new in MOVED_KEYS.items():
        table = out.get(section)
        if not isinstance(table, dict) or key not in table:
            continue
        value = table.pop(key)
        place = out
        for part in new[:-1]:
            place = place.setdefault(part, {})
            if not isinstance(place, dict):
                raise ConfigError(f"[{'.'.join(new[:-1])}] must be a table, got {place!r}")
        if new[-1] in place and place[new[-1]] != value:
            raise ConfigError(
                f"{section}.{key} = {value!r} and {'.'.join(new)} = {place[new[-1]]!r} name the same setting "
                f"({section}.{key} is its old spelling): give it once, as {'.'.join(new)}"
            )
        place[new[-1]] = value
    return out


def settled(data: dict, scale: Scale | None = None, overrides=()) -> dict:
    """The tables a configuration is built from, in one pass: old spellings moved (`moved`), the scale's settings
    put in, then the `--set` overrides (`modern_pairs`), and every section a table.

    Args:
        data: the file's tables without [scale] ({section: table}, `name`, `description`).
        scale: the `[scale.NAME]` to apply, or None.
        overrides: 'section.key=value' texts or (path, value) pairs, applied last.

    Returns:
        {"name", "description", then each of SECTIONS (a table, {} when absent), and OPTIONAL_SECTIONS present}.
    """
    pairs = modern_pairs(overrides)
    tables = moved(data)
    if scale is not None:
        tables = apply_scale(tables, replace(scale, settings=moved(scale.settings)))
    tables = apply_overrides(tables, pairs, SECTIONS + OPTIONAL_SECTIONS)
    for key in tables:
        if key not in SECTIONS + OPTIONAL_SECTIONS + TOP_KEYS:
            raise unknown_key("", key, list(SECTIONS + OPTIONAL_SECTIONS + TOP_KEYS))
    for key in TOP_KEYS:
        check(isinstance(tables.get(key, ""), str), f"{key} must be a string, got {tables.get(key)!r}")
    out = {"name": tables.get("name", "default"), "description": tables.get("description", "")}
    for section in SECTIONS:
        out[section] = tables.get(section, {})
        check(isinstance(out[section], dict), f"[{section}] must be a table, got {out[section]!r}")
    out.update({section: tables[section] for section in OPTIONAL_SECTIONS if section in tables})
    return out


def modern_pairs(overrides) -> list:
    """The overrides as (path, value) pairs, an old spelling (`MOVED_KEYS`) at its new path with a FutureWarning
    naming both: `--set execution.stop_rule=transition` is `--set stop.rule=transition`."""
    pairs = []
    for item in overrides:
        path, value = parse_override(item, SECTIONS + OPTIONAL_SECTIONS) if isinstance(item, str) else item
        new = moved_path(path)
        if new is not None:
            warnings.warn(
                f"{'.'.join(path)} is now {'.'.join(new)} ([execution] was split into [execution], [live] and "
                f"[stop]); the old spelling is read until nht_jax 0.2",
                FutureWarning,
                stacklevel=callers_level(),
            )
            path = new
        pairs.append((list(path), value))
    return pairs


PACKAGE = str(Path(__file__).resolve().parents[1])


def callers_level() -> int:
    """`warnings.warn`'s stacklevel that names the first frame outside the package: the user's line."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(PACKAGE):
        frame, level = frame.f_back, level + 1
    return level
