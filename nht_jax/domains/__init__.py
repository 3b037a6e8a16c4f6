"""Domains: *what* is trained. Each domain is one module of this package that defines `DOMAIN`, found by
its name (`task.name` in a preset) through `get(name)`; the engine, sweep, results, analysis and report code
ask the domain and never test a task's name.

A `Domain` is a small record of declarations and pure factories (in the spirit of optax's
`GradientTransformation`): its settings, models, axes, metrics, headline metric, checks, data, trainer, summary,
analysis defaults, figures, static axes, losses, data size and model contract. Domains and models from outside the
package: `task.name` may also name an installed entry point of group "nht_jax.domains" or an import path
`package.module:DOMAIN`, and `model.name` one of group "nht_jax.models" or `package.module:ATTR` (`model_settings`);
the package's own names come first (loading and the rule for results folders: `nht_jax.base.plugins`).

Every field of `Domain`: docs/extending/domain.md; plugins: docs/guides/plugins.md."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from typing import Any, Callable, Mapping, NamedTuple

from nht_jax.base import plugins
from nht_jax.base.errors import ConfigError
from nht_jax.base.schema import build, did_you_mean
from nht_jax.engine.grid import Axis, StaticAxis


class ModelContract(NamedTuple):
    """What a domain's trainer asks of a model from outside the package.

    arguments   what the trainer passes to the settings' `build(*arguments)`, in order (a bare Flax module class
                receives them as keyword fields: `nht_jax.models.module_settings`)
    inputs      what the built module is called on
    outputs     what the call must return
    settings    what else the trainer asks of a settings class (the validate call, attributes it reads)
    """

    arguments: tuple[str, ...]
    inputs: str
    outputs: str
    settings: str = "validate() (raise ConfigError on a bad setting) and build(*arguments) → an nn.Module"


class Domain(NamedTuple):
    name: str
    settings: type
    models: Mapping[str, type]
    default_model: str
    axes: Mapping[str, Axis]
    metrics: Mapping[str, str]
    headline_metric: str
    validate: Callable[[Any], None]
    load_data: Callable[[Any], Any]
    make_trainer: Callable[[Any, Any], Any]
    recorded: Callable[[Any], frozenset]
    summary: Callable[[Any], tuple]
    figures: Mapping[str, tuple[str, str]] = {}
    analysis_defaults: Mapping[str, Any] = {}
    static_axes: Mapping[str, StaticAxis] = {}
    data_bytes: Callable[[Any], int] | None = None
    losses: tuple[str, ...] = ()
    model_contract: ModelContract | None = None


def names() -> list[str]:
    """Names of every domain module of this package (modules that define DOMAIN).

    Returns:
        The names, sorted.
    """
    found = []
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_") and hasattr(importlib.import_module(f"{__name__}.{info.name}"), "DOMAIN"):
            found.append(info.name)
    return sorted(found)


def get(name: str) -> Domain:
    """The domain called `name`: module nht_jax.domains.<name>, else an installed entry point of group
    "nht_jax.domains", else an import path package.module:DOMAIN; ConfigError naming the closest one.

    Args:
        name: a domain name, or an import path package.module:DOMAIN.

    Returns:
        The Domain.
    """
    module = builtin_module(name)
    if module is not None:
        return module.DOMAIN
    entry = plugins.find(plugins.DOMAINS, name) if isinstance(name, str) else None
    if entry is not None:
        return checked_domain(plugins.load_registered(entry, plugins.DOMAINS), f"task.name = '{name}'")
    if plugins.is_import_path(name):
        return checked_domain(plugins.load_path(name, "task.name"), f"task.name = '{name}'")
    known = names() + [r.name for r in plugins.registered(plugins.DOMAINS)]
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigError(
            f"task.name = {name!r} is not a domain name; domains: {', '.join(known)}, or an import "
            f"path package.module:DOMAIN (docs/guides/plugins.md)"
        )
    raise ConfigError(
        f"task.name = '{name}' is not a domain.{did_you_mean(name, known)} "
        f"Domains: {', '.join(known)}, or an import path package.module:DOMAIN"
    )


def builtin_module(name):
    """The package's domain module called `name` (None when there is none)."""
    if not isinstance(name, str) or not name.isidentifier():
        return None
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        return None
    return module if hasattr(module, "DOMAIN") else None


def checked_domain(obj, where: str) -> Domain:
    """`obj` when it is a Domain whose settings dataclass has a `name` field; else ConfigError saying so."""
    if not isinstance(obj, Domain):
        raise plugins.PluginError(f"{where} names {described(obj)}, not a nht_jax.domains.Domain")
    if not (dataclasses.is_dataclass(obj.settings) and "name" in {f.name for f in dataclasses.fields(obj.settings)}):
        raise plugins.PluginError(
            f"{where}: the domain's settings must be a dataclass with a `name` field (it is "
            f"written to config.toml as task.name), got {obj.settings!r}"
        )
    return obj


def model_settings(domain: Domain, name: str) -> type:
    """The settings class of model `name` on `domain`: one of its own `models`, else (when the domain states a
    `model_contract`) an installed entry point of group "nht_jax.models" or an import path package.module:ATTR
    naming a settings dataclass (a `name` field, validate and build, like the package's) or a Flax nn.Module
    class (`nht_jax.models.module_settings`)."""
    if isinstance(name, str) and name in domain.models:
        return domain.models[name]
    entry = plugins.find(plugins.MODELS, name) if isinstance(name, str) else None
    if entry is None and not plugins.is_import_path(name):
        raise ConfigError(
            f"model.name = {name!r} cannot be trained on task '{domain.name}'; "
            f"choose one of {list(domain.models)}"
            + (
                ", or an import path package.module:ATTR (docs/guides/plugins.md)"
                if domain.model_contract is not None
                else ""
            )
        )
    if domain.model_contract is None:
        raise ConfigError(
            f"model.name = '{name}': task '{domain.name}' trains only its own models "
            f"({', '.join(domain.models)}); it states no contract for models from outside the package"
        )
    obj = plugins.load_registered(entry, plugins.MODELS) if entry is not None else plugins.load_path(name, "model.name")
    where = f"model.name = '{name}'"
    if isinstance(obj, type) and is_flax_module(obj):
        from nht_jax.models.module_settings import module_settings  # flax, only for a module class

        return module_settings(obj, name, domain.model_contract.arguments, where)
    if isinstance(obj, type) and dataclasses.is_dataclass(obj):
        missing = [m for m in ("validate", "build") if not callable(getattr(obj, m, None))]
        missing += [] if "name" in {f.name for f in dataclasses.fields(obj)} else ["a `name` field"]
        if missing:
            raise plugins.PluginError(
                f"{where}: the settings dataclass {obj.__name__} lacks {', '.join(missing)}: a settings class needs a "
                f"`name` field, and this task calls {domain.model_contract.settings} (docs/guides/plugins.md)"
            )
        return obj
    raise plugins.PluginError(
        f"{where} names {described(obj)}: neither a Flax nn.Module class nor a settings "
        f"dataclass (docs/guides/plugins.md)"
    )


def described(obj) -> str:
    """What `obj` is, in a few words: "the class X", "a module", "a Domain"."""
    return f"the class {obj.__name__}" if isinstance(obj, type) else f"a {type(obj).__name__}"


def is_flax_module(cls: type) -> bool:
    import flax.linen as nn  # here: flax only when a model comes from outside the package

    return issubclass(cls, nn.Module)


def settings(cls: type, table: dict, section: str):
    """The settings dataclass from its TOML table, its `name` field set to the table's name as written: a
    registered name or an import path may differ from the name the class itself declares.

    Args:
        cls: the settings dataclass.
        table: its TOML table.
        section: the table's name in the TOML, for error messages.

    Returns:
        An instance of `cls`.
    """
    name = table.get("name") if isinstance(table, dict) else None
    if name is None or builtin_module(name) is not None or name == getattr(cls, "name", None):
        return build(cls, table, section)
    built = build(cls, {k: v for k, v in table.items() if k != "name"}, section)
    return dataclasses.replace(built, name=name)


def resolve(tables: dict) -> tuple[Domain, Any, Any]:
    """The domain that [task] names, its [task] settings and the [model] settings, from the settled tables
    (`nht_jax.config.tables.settled`): every lookup a configuration needs from the domains, made once.

    Args:
        tables: {section: table}, with "task" and "model".

    Returns:
        (the Domain, its settings dataclass instance, the model's settings instance).
    """
    domain = get(tables["task"].get("name", "modular"))
    task = settings(domain.settings, tables["task"], "task")
    model_name = tables["model"].get("name", domain.default_model)
    model = settings(model_settings(domain, model_name), tables["model"], "model")
    return domain, task, model


__all__ = ["Domain", "ModelContract", "StaticAxis", "get", "names", "settings"]
