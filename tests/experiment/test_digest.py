"""The configuration digest (`experiment.digest`, and `nht_jax.measure.stopping.results_digest`, which folds in the
stop rule) guards results folders and checkpoints: every setting that changes results must change it, and the
execution-only settings must not (a resumed sweep with another strategy is the same experiment). Checked field by
field over every settings class a Config can hold (the engine's, every domain's task and every model of it), so a
new field, or a field dropped from the digest, shows up here."""

import dataclasses
from typing import Literal, get_args, get_origin, get_type_hints

import pytest

from nht_jax import domains, experiment
from nht_jax.measure.stopping import results_digest

RESULT_SECTIONS = ("optim", "train", "analysis")
"""Engine sections that change results (with [task], [model] and [grid]); [execution] does not, except its stop
rule, which results_digest folds in (the runs stop early: their logs change)."""


SINGLE = object()
"""A Literal with one allowed value (a model's or domain's own `name`: the class says it already)."""


def changed(value, hint, where: str):
    """A value of type `hint` other than `value`."""
    origin = get_origin(hint)
    if origin is Literal:
        others = [v for v in get_args(hint) if v != value]
        return others[0] if others else SINGLE
    if origin is tuple:
        (elem, _) = get_args(hint)
        if value:
            return value[:-1]
        return (changed(None, elem, where),) if elem in (int, float, str, bool) else ("changed",)
    if hint is bool:
        return not value
    if hint is int:
        return (value or 0) + 1
    if hint is float:
        return (value or 0.0) * 2 + 1.0
    if hint is str:
        return (value or "") + "-changed"
    if dataclasses.is_dataclass(hint):  # a nested table (live.forecast): its first field changed
        first = dataclasses.fields(hint)[0]
        return dataclasses.replace(
            value, **{first.name: changed(getattr(value, first.name), get_type_hints(hint)[first.name], where)}
        )
    raise AssertionError(f"{where}: no changed value for type {hint}; add one to changed()")


def fields_changed(section):
    """(field name, the section with that field changed), for every field of a settings dataclass."""
    hints = get_type_hints(type(section))
    for f in dataclasses.fields(section):
        new = changed(getattr(section, f.name), hints[f.name], f"{type(section).__name__}.{f.name}")
        if new is SINGLE:
            assert f.name == "name", f"{type(section).__name__}.{f.name} allows a single value"
            continue
        yield f.name, dataclasses.replace(section, **{f.name: new})


def base_configs():
    """One Config per domain (its default task settings), with each model the domain can train."""
    for name in domains.names():
        config = experiment.from_dict({"task": {"name": name}})
        for model_name, model_cls in config.domain.models.items():
            yield f"{name}/{model_name}", dataclasses.replace(config, model=model_cls())


BASES = dict(base_configs())


@pytest.mark.parametrize("key", sorted(BASES))
def test_every_result_changing_setting_changes_the_digest(key):
    config = BASES[key]
    before = experiment.digest(config), results_digest(config)
    for section in ("task", "model", *RESULT_SECTIONS):
        for name, new in fields_changed(getattr(config, section)):
            other = dataclasses.replace(config, **{section: new})
            assert experiment.digest(other) != before[0], f"{section}.{name} does not change the digest"
            assert results_digest(other) != before[1], f"{section}.{name} does not change results_digest"
    for axis, values in config.grid.items():
        other = dataclasses.replace(config, grid={**config.grid, axis: tuple(values) + (values[0],)})
        assert experiment.digest(other) != before[0], f"grid.{axis} does not change the digest"
    zipped = dataclasses.replace(config, zipped=(tuple(config.grid)[:2],))
    assert experiment.digest(zipped) != before[0], "pairing grid axes (zip) does not change the digest"
    assert experiment.digest(dataclasses.replace(config, name="other")) != before[0], "the name is not digested"


@pytest.mark.parametrize("key", sorted(BASES))
def test_execution_and_live_settings_change_neither_digest_and_the_stop_rule_only_the_results_digest(key):
    config = BASES[key]
    before = experiment.digest(config), results_digest(config)
    assert experiment.digest(dataclasses.replace(config, description="other")) == before[0]
    for section in ("execution", "live", "stop"):
        for name, value in fields_changed(getattr(config, section)):
            other = dataclasses.replace(config, **{section: value})
            assert experiment.digest(other) == before[0], f"{section}.{name} changes experiment.digest"
            if section != "stop" or config.stop.rule == "none" and name == "margin_steps":
                assert results_digest(other) == before[1], f"{section}.{name} changes results_digest"
            else:
                assert results_digest(other) != before[1], f"{section}.{name} does not change results_digest"
    stopping = dataclasses.replace(config, stop=dataclasses.replace(config.stop, rule="transition"))
    for section in ("execution", "live", "stop"):  # with a stop rule set, its margin counts too
        for name, value in fields_changed(getattr(stopping, section)):
            other = dataclasses.replace(stopping, **{section: value})
            assert (results_digest(other) != results_digest(stopping)) == (section == "stop"), f"{section}.{name}"


def test_every_settings_class_is_covered():
    """Every task settings class and model class of every domain is among the configurations checked."""
    covered = {type(c.task) for c in BASES.values()} | {type(c.model) for c in BASES.values()}
    for name in domains.names():
        domain = domains.get(name)
        assert domain.settings in covered and set(domain.models.values()) <= covered, name
