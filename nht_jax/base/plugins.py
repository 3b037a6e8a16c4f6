"""Code from outside the package: import paths (`package.module:ATTR`) and installed entry points.

Three entry-point groups (`GROUPS`: nht_jax.domains, nht_jax.models, nht_jax.presets) let an installed package
register what `task.name`, `model.name` and a preset name may name; task.name and model.name also accept an import
path `package.module:ATTR`. Every failure is a `PluginError` (a ConfigError) saying what was tried.

Security rule: opening a results folder must not run code by being opened, so while a folder's config.toml is read
(`reading`) an import path is imported only when an installed entry point names it, the user allowed it
(`--allow-import`, `allowing`, `module_allowed`), or this process already loaded it outside a folder read.

The groups, import paths and the security rule in full: docs/guides/plugins.md ("Security: opening a results
folder runs no code")."""

from __future__ import annotations

import contextlib
import importlib
import re
from contextvars import ContextVar
from importlib import metadata
from typing import Iterable, NamedTuple

from nht_jax.base.errors import ConfigError

DOMAINS, MODELS, PRESETS = "nht_jax.domains", "nht_jax.models", "nht_jax.presets"
GROUPS = {DOMAINS: "domains (task.name)", MODELS: "models (model.name)", PRESETS: "presets (nht run NAME)"}

IMPORT_PATH = re.compile(r"(?P<module>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):(?P<attr>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
"""`package.module:ATTR`: a dotted module, a colon, a (dotted) attribute."""


class PluginError(ConfigError):
    """Code outside the package could not be used: not found, failing on import, missing, of the wrong type, or
    refused while a results folder is read. Readers of a folder let it through (it is not damage)."""


class Registered(NamedTuple):
    """One entry point of a group: its name, its value (`module:attr`) and the distribution that installs it."""

    name: str
    value: str
    distribution: str
    entry_point: metadata.EntryPoint


def is_import_path(name) -> bool:
    return isinstance(name, str) and IMPORT_PATH.fullmatch(name) is not None


def registered(group: str) -> list[Registered]:
    """Every entry point of `group` in the installed distributions, sorted by (name, distribution).

    Args:
        group: the entry-point group, e.g. "nht_jax.domains".

    Returns:
        The entry points found, each with its name, value and distribution.
    """
    found = []
    for ep in metadata.entry_points(group=group):
        dist = ep.dist.name if getattr(ep, "dist", None) is not None else "?"
        found.append(Registered(ep.name, ep.value, dist, ep))
    return sorted(found, key=lambda r: (r.name, r.distribution))


def find(group: str, name: str) -> Registered | None:
    """The entry point called `name` in `group` (the first distribution by name when several register it).

    Args:
        group: the entry-point group, e.g. "nht_jax.domains".
        name: the entry point's name.

    Returns:
        The registered entry point, or None when no distribution registers `name`.
    """
    return next((r for r in registered(group) if r.name == name), None)


# ----------------------------------------------------------------------------- the reading rule

_reading: ContextVar[str | None] = ContextVar("nht_jax_reading", default=None)
_allowed: ContextVar[frozenset] = ContextVar("nht_jax_allowed_imports", default=frozenset())
_loaded_by_user: set[str] = set()
"""Import paths this process loaded outside `reading` (the user's own configurations, and what they allowed)."""


@contextlib.contextmanager
def reading(where: str):
    """While the results folder `where` is read: import paths obey the security rule (module docstring).

    Args:
        where: the results folder being read.
    """
    token = _reading.set(str(where))
    try:
        yield
    finally:
        _reading.reset(token)


@contextlib.contextmanager
def allowing(paths: Iterable[str] = ()):
    """Within: the modules or import paths `paths` may be imported while a folder is read (`--allow-import`)."""
    token = _allowed.set(_allowed.get() | checked_allowances(paths))
    try:
        yield
    finally:
        _allowed.reset(token)


def allow(paths: Iterable[str]) -> None:
    """`allowing(paths)` for the rest of the current context (the `nht` command runs each command in its own).

    Args:
        paths: the modules or import paths that may be imported while a folder is read (`--allow-import`).
    """
    _allowed.set(_allowed.get() | checked_allowances(paths))


def checked_allowances(paths: Iterable[str]) -> frozenset:
    """`paths` as a set, each a module (`mypkg.tasks`) or an import path (`mypkg.tasks:DOMAIN`)."""
    paths = [paths] if isinstance(paths, str) else list(paths or ())
    for path in paths:
        if not (is_import_path(path) or (isinstance(path, str) and IMPORT_PATH.fullmatch(path + ":x"))):
            raise ConfigError(
                f"--allow-import {path!r} is neither a module (mypkg.tasks) nor an import path (mypkg.tasks:DOMAIN)"
            )
    return frozenset(paths)


def permitted(path: str) -> bool:
    """Whether the import path may be imported now (always, outside `reading`)."""
    if _reading.get() is None or path in _loaded_by_user:
        return True
    if path in _allowed.get() or module_allowed(path.partition(":")[0], _allowed.get()):
        return True
    return any(r.value.replace(" ", "") == path for group in (DOMAINS, MODELS) for r in registered(group))


def module_allowed(module: str, allowed: Iterable[str]) -> bool:
    """Whether `--allow-import` admits `module`: an allowed module admits itself and its submodules (`mypkg`
    admits `mypkg` and `mypkg.tasks`, never `mypkg_evil`: the match is whole dotted names, not a prefix of text)."""
    return any(module == name or module.startswith(name + ".") for name in allowed if ":" not in name)


def refusal(path: str, setting: str) -> PluginError:
    module = path.partition(":")[0]
    return PluginError(
        f"{_reading.get()}: its config.toml names {setting} = '{path}', code outside nht_jax, and reading a results "
        f"folder never imports code the folder names. If you trust it, allow it: `--allow-import {module}` on the "
        f"command line (Python: load_results(folder, allow_imports=['{module}'])), or install the package that "
        f"registers it as an entry point (docs/guides/plugins.md)"
    )


# ----------------------------------------------------------------------------- loading


def load_path(path: str, setting: str):
    """The object `package.module:ATTR` names, under the security rule; PluginError saying what was tried."""
    match = IMPORT_PATH.fullmatch(path) if isinstance(path, str) else None
    if match is None:
        raise PluginError(f"{setting} = {path!r} is not an import path: write package.module:ATTR")
    if not permitted(path):
        raise refusal(path, setting)
    obj = attribute(import_module(match["module"], f"{setting} = '{path}'"), match["attr"], f"{setting} = '{path}'")
    if _reading.get() is None:
        _loaded_by_user.add(path)
    return obj


def load_registered(entry: Registered, group: str):
    """The object an entry point names (installed, so always permitted); PluginError saying what was tried."""
    what = f"entry point '{entry.name}' = '{entry.value}' of group {group} (installed by {entry.distribution})"
    match = IMPORT_PATH.fullmatch(entry.value.replace(" ", ""))
    if match is None:
        raise PluginError(f"{what} is not an import path package.module:ATTR; fix the distribution's entry points")
    return attribute(import_module(match["module"], what), match["attr"], what)


def import_module(module: str, what: str):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is not None and (module == e.name or module.startswith(e.name + ".")):
            raise PluginError(
                f"{what}: module '{e.name}' not found (is its package installed, or its folder on PYTHONPATH?)"
            ) from None
        raise PluginError(f"{what}: importing module '{module}' failed: {e}") from None
    except Exception as e:  # the plugin's own code raised: say what, never a traceback
        raise PluginError(f"{what}: importing module '{module}' failed: {type(e).__name__}: {e}") from None


def attribute(module, attr: str, what: str):
    obj = module
    for i, part in enumerate(attr.split(".")):
        if not hasattr(obj, part):
            owner = module.__name__ + "".join(f".{p}" for p in attr.split(".")[:i])
            raise PluginError(f"{what}: '{owner}' has no attribute '{part}'")
        obj = getattr(obj, part)
    return obj


__all__ = ["allow", "find", "reading", "registered"]
