"""A bare Flax module class from outside the package as a model's settings (`model.name = "mypkg.models:MyNet"`).

The settings dataclass of module class M for a domain whose trainer builds models with the arguments
a_1, …, a_k (`nht_jax.domains.ModelContract.arguments`, e.g. vocab_size, num_classes, n_ctx) has

    name        the import path or entry-point name that found M (written to config.toml as model.name)
    one field per field of M other than a_1 … a_k and Flax's own `parent` and `name`, with M's type and default,
    so the [model] table sets them like any model's (int, float, bool, str, Literal, tuple[X, ...]);

`build(v_1, …, v_k)` returns M(a_1=v_1, …, a_k=v_k, **fields), and `validate(*_)` has nothing more to check (M's
fields are checked as they are read). A field of another type (a callable, a module) keeps M's default and cannot
be set from TOML; one without a default cannot be built here (write a settings class instead).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from typing import Literal, get_args, get_origin, get_type_hints

import flax.linen as nn

from nht_jax.base.errors import ConfigError

FLAX_FIELDS = ("parent", "name")


def settable(hint) -> bool:
    """Whether a TOML value can be read into type `hint` (the types `nht_jax.base.schema.coerce` reads)."""
    if get_origin(hint) is Literal:
        return True
    if get_origin(hint) is tuple:
        args = get_args(hint)
        return len(args) == 2 and args[1] is Ellipsis and settable(args[0])
    return hint in (bool, int, float, str)


def module_fields(module: type, arguments: tuple[str, ...], where: str) -> tuple[tuple[str, object, object], ...]:
    """(name, type, default) of every settable field of `module` besides the contract's arguments; ConfigError
    when an argument is not a field, or a field without default cannot be set."""
    fields = {f.name: f for f in dataclasses.fields(module) if f.name not in FLAX_FIELDS}
    missing = [a for a in arguments if a not in fields]
    if missing:
        call = ", ".join(f"{a}=…" for a in arguments)
        raise ConfigError(
            f"{where}: {module.__name__} has no field {', '.join(missing)}; this task builds its model "
            f"as {module.__name__}({call}, **[model] settings): declare them as module attributes "
            f"(docs/guides/plugins.md)"
        )
    try:
        hints = get_type_hints(module)
    except Exception as e:  # annotations naming what its module does not define
        raise ConfigError(f"{where}: the field types of {module.__name__} cannot be resolved ({e})") from None
    out = []
    for name, f in fields.items():
        if name in arguments:
            continue
        default = (
            f.default
            if f.default is not dataclasses.MISSING
            else f.default_factory()
            if f.default_factory is not dataclasses.MISSING
            else dataclasses.MISSING
        )
        if settable(hints.get(name)):
            if default is dataclasses.MISSING:
                raise ConfigError(
                    f"{where}: field '{name}' of {module.__name__} has no default; give it one (the "
                    f"[model] table may then set it)"
                )
            out.append((name, hints[name], default))
        elif default is dataclasses.MISSING:
            raise ConfigError(
                f"{where}: field '{name}' of {module.__name__} ({hints.get(name)}) has no default and "
                f"cannot be set from TOML; give it a default or write a settings class "
                f"(docs/guides/plugins.md)"
            )
    return tuple(out)


def module_settings(module: type, name: str, arguments: tuple[str, ...], where: str = "model.name") -> type:
    """The settings dataclass of the Flax module class `module` (module docstring), the same class for the same
    (module, name, arguments), so that configurations built twice compare equal; ConfigError if it is none."""
    if not (isinstance(module, type) and issubclass(module, nn.Module)):
        raise ConfigError(f"{where}: {module!r} is not a Flax nn.Module class")
    return settings_class(module, name, tuple(arguments), module_fields(module, tuple(arguments), where))


@functools.lru_cache(maxsize=None)
def settings_class(module: type, name: str, arguments: tuple[str, ...], fields: tuple) -> type:

    def build(self, *values) -> nn.Module:
        settings = {f: getattr(self, f) for f, _, _ in fields}
        return module(**dict(zip(arguments, values)), **settings)

    def validate(self, *_) -> None:
        """The fields were checked as they were read; the module checks the rest when it is built."""

    def reduce(self):  # picklable (broadcast between processes): rebuilt from the module's import path
        return rebuild, (
            module.__module__,
            module.__qualname__,
            name,
            arguments,
            {f: getattr(self, f) for f, _, _ in fields},
        )

    return dataclasses.make_dataclass(
        f"{module.__name__}Settings",
        [("name", str, dataclasses.field(default=name))]
        + [(f, hint, dataclasses.field(default=d)) for f, hint, d in fields],
        frozen=True,
        namespace={
            "build": build,
            "validate": validate,
            "__reduce__": reduce,
            "module": module,
            "__doc__": f"[model] of the Flax module {module.__module__}.{module.__qualname__}",
        },
    )


def rebuild(module_name: str, qualname: str, name: str, arguments: tuple, values: dict):
    """The settings `module_settings(...)` made, in another process (unpickling)."""
    module = importlib.import_module(module_name)
    for part in qualname.split("."):
        module = getattr(module, part)
    return module_settings(module, name, arguments)(name=name, **values)


__all__ = []
