"""Domains: *what* is trained. Each domain is one module of this package that defines `DOMAIN`, found by
its name (`task.name` in a preset) through `get(name)`; the engine, sweep, results, analysis and report code
ask the domain and never test a task's name.

A `Domain` is a small record of declarations and pure factories (in the spirit of optax's
`GradientTransformation`):

    settings          the dataclass of its [task] table (fields with defaults; a `name` field)
    models            model.name → settings dataclass of the models it can train (each has validate/build)
    default_model     the model used when [model] names none
    axes              grid axes it adds to the common ones ({name: engine.grid.Axis})
    metrics           its own metric names → one line of meaning each (shared names: engine.metrics.VOCABULARY)
    headline_metric   its generalisation metric: the default transition metric and the metric figures draw
    validate(config)  checks that need no data (task and model settings); raise ConfigError
    load_data(config) host data, built once; ConfigError naming what is missing and how to get it
    make_trainer(config, data) → engine.loop.Trainer (init / step / evaluate in the shared nested scan)
    recorded(config)  the scalar metrics a run of this configuration records
    summary(config)   metrics whose final value goes into each summary row (besides the shared ones)
    analysis_defaults its defaults for [analysis] keys (a preset's [analysis] table overrides them), e.g. a fit
                      criterion other than train accuracy ≥ 0.99 for a regression domain
    figures           extra figures: file name → (kind, axis), drawn when that axis varies
                      (kinds: "metric_phase", "metric_against_axis", "layer_norms"; see nht_jax.report)
    static_axes       static settings a grid may sweep: axis name → engine.grid.StaticAxis(section, key, label,
                      transform): `grid.width = [32, 64]` trains one compiled bucket per value, with
                      model.hidden replaced by transform(value, current), merged into one results directory
                      (`experiment.Config.buckets`). Default none: every static setting in [grid] is refused.
    losses            the values of `train.loss` it trains on besides "default" (its own loss); default none
    data_bytes(config) the bytes of the arrays `load_data` would build, from the settings alone (nothing built), so
                      that a dataset too large for the machine is refused before it is built
                      (`experiment.check_fits`); None: not known in advance (the data is small or fixed)
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Callable, Mapping, NamedTuple

from nht_jax.base.errors import ConfigError
from nht_jax.base.schema import did_you_mean
from nht_jax.engine.grid import Axis, StaticAxis


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


def names() -> list[str]:
    """Names of every domain module of this package (modules that define DOMAIN)."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_") and hasattr(importlib.import_module(f"{__name__}.{info.name}"), "DOMAIN"):
            found.append(info.name)
    return sorted(found)


def get(name: str) -> Domain:
    """The domain called `name` (module nht_jax.domains.<name>); ConfigError naming the closest one."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigError(f"task.name = {name!r} is not a domain name; domains: {', '.join(names())}")
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        module = None
    if module is None or not hasattr(module, "DOMAIN"):
        known = names()
        raise ConfigError(f"task.name = '{name}' is not a domain.{did_you_mean(name, known)} "
                          f"Domains: {', '.join(known)}")
    return module.DOMAIN


__all__ = ["Domain", "StaticAxis", "get", "names"]
