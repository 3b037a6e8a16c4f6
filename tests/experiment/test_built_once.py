"""A configuration is built and checked once: its buckets are typed replacements of its sections (no rebuild from
dicts), equal to what loading the bucket's own file would give, and its domain is looked up once."""

import copy
import itertools
import pickle

import pytest

from nht_jax import domains, experiment
from nht_jax.base.errors import ConfigError

STATIC_GRIDS = {
    "width-sweep": ["grid.width=[16, 32]", "grid.seed=[0]"],
    "tiny": ["grid.width=[8, 16]", "grid.p=[31, 37.0]", "grid.batch_size=[32, 64]", "grid.seed=[0]"],
    "digits-grokking": ["grid.width=[20, 40]", "grid.seed=[0]", "grid.weight_decay=[0.3]"],
}


def rebuilt(config, values):
    """The bucket as a file would give it, by hand: the configuration's tables with each static setting replaced
    and the static axes removed from [grid], built from dicts."""
    data = experiment.to_dict(config)
    for name, value in values.items():
        spec = config.static[name]
        data["grid"].pop(name)
        new = spec.transform(value, getattr(getattr(config, spec.section), spec.key))
        data[spec.section][spec.key] = list(new) if isinstance(new, tuple) else new
    return experiment.from_dict(data)


@pytest.mark.parametrize("name", sorted(STATIC_GRIDS))
def test_each_bucket_is_the_configuration_its_own_file_gives(name):
    config = experiment.load(name, STATIC_GRIDS[name])
    buckets = config.buckets()
    assert len(buckets) == len(list(itertools.product(*(config.grid[a] for a in config.static))))
    for values, sub in buckets:
        expected = rebuilt(config, values)
        assert sub == expected, values
        assert experiment.digest(sub) == experiment.digest(expected)
        assert experiment.to_toml(sub) == experiment.to_toml(expected)
        assert not sub.static


def test_a_static_value_is_typed_as_its_section_declares(monkeypatch):
    """A transform that returns a list for model.hidden (a tuple field) gives the tuple a file would: the bucket
    equals its rebuild, as each value passes the section's own type check."""
    spec = domains.get("modular").static_axes["width"]
    listing = spec._replace(transform=lambda value, hidden: [int(value) for _ in hidden])
    monkeypatch.setitem(domains.get("modular").static_axes, "width", listing)
    config = experiment.load("tiny", ["grid.width=[8, 16]", "grid.seed=[0]"])
    for values, sub in config.buckets():
        assert sub.model.hidden == (values["width"],) and sub == rebuilt(config, values)


def test_a_bucket_is_checked_as_a_loaded_configuration():
    """task.op = '/' needs a prime p: the preset's p = 31 is, the bucket p = 4 is not, and loading says which."""
    with pytest.raises(ConfigError, match="bucket p = 4 of the static axes: task.op = '/' needs a prime modulus"):
        experiment.load("tiny", ['task.op="/"', "grid.p=[31, 4]", "grid.seed=[0]"])


def test_the_domain_is_looked_up_once_per_configuration(monkeypatch):
    config = experiment.load("tiny")
    calls = []
    real = domains.get
    monkeypatch.setattr(domains, "get", lambda name: calls.append(name) or real(name))
    fresh = experiment.load("tiny")
    assert calls == ["modular"]  # once, to build [task] and [model]; the configuration keeps it
    calls.clear()
    for _ in range(5):
        fresh.domain, fresh.static, fresh.axes, fresh.runs()
        experiment.validate(fresh)
    assert calls == []
    assert fresh == config  # the cached domain is no field: equality and the digest ignore it
    assert experiment.digest(fresh) == experiment.digest(config)


def test_a_configuration_pickles_and_copies_without_its_domain():
    config = experiment.load("tiny")
    assert config.domain.name == "modular"
    for other in (pickle.loads(pickle.dumps(config)), copy.deepcopy(config)):
        assert other == config and "domain" not in other.__dict__
        assert other.domain.name == "modular"
    assert "domain" not in pickle.loads(pickle.dumps(config)).__dict__
