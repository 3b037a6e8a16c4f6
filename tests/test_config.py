"""Bad input fails early with a message that says what is wrong and how to fix it."""

import math

import pytest

from nht_jax import config as config_lib
from nht_jax.config import ConfigError, load, logspace


@pytest.mark.parametrize("override,needle", [
    ("grid.weight_decay=[-0.1, 1.0]", "weight_decay must be ≥ 0"),
    ("grid.weight_decay=nan", "finite number"),
    ("grid.learning_rate=0", "learning_rate must be > 0"),
    ("grid.learning_rate=-1e-3", "learning_rate must be > 0"),
    ("grid.learning_rate=nan", "finite number"),
    ("grid.train_fraction=1.0", "strictly between 0 and 1"),
    ("grid.train_fraction=0", "strictly between 0 and 1"),
    ("train.steps=1001", "multiple of train.log_every"),
    ("train.steps=abc", "must be an integer"),
    ("model.activation=swish", "choose one of"),
    ("optim.name=lion", "choose one of"),
    ("train.stepz=100", "Did you mean 'steps'"),
    ("trian.steps=100", "Did you mean 'train'"),
    ("steps=100", "section.key"),
    ("grid.weight_decay={logspace=[0, 1, 3]}", "positive ends"),
])
def test_bad_override_is_rejected_with_a_clear_message(override, needle):
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        load("tiny", [override])


def test_division_needs_a_prime_modulus():
    with pytest.raises(ConfigError, match="not prime"):
        load("tiny", ["task.op='/'", "task.p=32"])
    assert load("tiny", ["task.op='/'", "task.p=31"]).task.op == "/"


def test_unknown_preset_suggests_the_closest():
    with pytest.raises(ConfigError, match="Did you mean 'default'"):
        load("defualt")


def test_overrides_parse_toml_values_and_axes():
    config = load("tiny", ["grid.weight_decay={logspace=[0.001, 10, 5]}", "grid.seed=[3,4]", "optim.name=sgd",
                           "model.hidden=[16, 8]"])
    assert len(config.grid.weight_decay) == 5
    assert math.isclose(config.grid.weight_decay[0], 1e-3) and math.isclose(config.grid.weight_decay[-1], 10)
    assert config.grid.seed == (3, 4) and config.optim.name == "sgd" and config.model.hidden == (16, 8)


def test_logspace_helper():
    values = logspace(1e-3, 10, 5)
    assert [round(math.log10(v), 9) for v in values] == [-3, -2, -1, 0, 1]


def test_every_preset_loads_and_round_trips():
    presets = config_lib.list_presets()
    assert {"default", "tiny", "companion-transformer", "clamp-mlp", "community-p113", "sparse-parity"} <= set(presets)
    for name, description in presets.items():
        assert description, f"preset {name} needs a one-line description"
        config = load(name)
        assert config_lib.from_dict(config_lib.to_dict(config)) == config


def test_default_preset_meets_the_brief():
    config = load("default")
    assert config.task.name == "modular" and config.task.op == "+"
    assert len(config.grid.weight_decay) >= 8 and len(config.grid.seed) >= 2
