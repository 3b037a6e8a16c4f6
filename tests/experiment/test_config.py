"""Bad input fails early with a message that says what is wrong and how to fix it."""

import math
import re

import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.base.presets import list_presets
from nht_jax.base.schema import logspace
from nht_jax.experiment import load


@pytest.mark.parametrize(
    "override,needle",
    [
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
        ("grid.weight_decay={logspace=[1, 10]}", "needs [lo, hi, n]"),
        ("grid.weight_decay={geomspace=[1, 10, 3]}", "must be {logspace"),
        ("grid.weight_decay=[]", "is empty"),
        ("grid.init_scale=0", "init_scale must be > 0"),
        ("grid.init_scale=-2", "init_scale must be > 0"),
        ("grid.seed=[0, 0]", "repeated values"),
        ("grid.seed=-1", "integers in \\[0, 2\\^31\\)"),
        ("grid.seed=1.5", "integers in"),
        ("grid.rho=[0.5, 1.0]", "not an axis of domain 'modular'"),
        ("grid.widthh=[1, 2]", "not an axis of domain 'modular'"),
        ("train.batch_size=-1", "batch_size must be ≥ 0"),
        ("train.log_every=0", "must be positive"),
        ("train.eval_batch_size=0", "eval_batch_size must be ≥ 1"),
        ("train.strategy=vmap", "unknown key 'train.strategy'"),
        ("execution.runs_per_batch=0", "runs_per_batch must be ≥ 1"),
        ("execution.chunk_logs=-1", "chunk_logs must be ≥ 1"),
        ("execution.chunk_seconds=0", "chunk_seconds must be > 0"),
        ("execution.strategy=pmap", "choose one of"),
        ("analysis.fit_threshold=0", "fit_threshold must lie in \\(0, 1\\]"),
        ("analysis.transition_threshold=1.5", "transition_threshold must lie in"),
        ("analysis.norm_decay_fraction=0", "norm_decay_fraction must lie in"),
        ("analysis.transition_metric=clean_acc", "not recorded by this 'modular'"),
        ("optim.b1=1.0", "must lie in \\[0, 1\\)"),
        ("optim.b2=-0.1", "must lie in \\[0, 1\\)"),
        ("optim.momentum=1", "must lie in \\[0, 1\\)"),
        ("optim.eps=0", "eps must be > 0"),
        ("model.hidden=[0]", "widths must be positive"),
        ("model.name=simple_cnn", "cannot be trained on task 'modular'"),
        ("model.n_heads=3", "unknown key 'model.n_heads'"),
        ("task.name=modulr", "Did you mean 'modular'"),
        ("task.parity_k=3", "unknown key 'task.parity_k'"),
        ("task.p=1", "task.p must be ≥ 2"),
    ],
)
def test_bad_override_is_rejected_with_a_clear_message(override, needle):
    pattern = needle if "\\" in needle else re.escape(needle)
    with pytest.raises(ConfigError, match=pattern):
        load("tiny", [override])


@pytest.mark.parametrize(
    "preset,override,needle",
    [
        ("companion-transformer", "model.n_heads=3", "divisible by model.n_heads"),
        ("sparse-parity", "task.parity_k=50", "parity_k must be in"),
        ("sparse-parity", "task.parity_samples=2", "parity_samples must be ≥ 4"),
        ("border-digits", "task.image_size=20", "8·scale \\+ 8"),
        ("border-digits", "task.border_width=12", "covers at least half"),
        ("border-digits", "task.border_width=-1", "border_width must be ≥ 0"),
        ("border-digits", "task.eval_test_size=-1", "must be ≥ 0"),
        ("border-digits", "grid.rho=[0.5, 1.5]", "must lie in \\[0, 1\\]"),
        ("border-digits", "grid.train_fraction=[0.3, 0.6]", "not an axis of domain 'images'"),
        ("border-digits", "train.record_grad_noise=true", "not available for image tasks"),
        ("border-digits", "analysis.transition_metric=test_acc", "not recorded by this 'images'"),
        ("border-digits", "model.name=transformer", "cannot be trained on task 'images'"),
        ("fashion-border", "task.train_size=-1", "task.train_size must be ≥ 0"),
        ("fashion-border", "task.image_size=31", "28×28 padded"),
        ("cifar10-resnet18", "model.resnet_stages=[]", "non-empty list"),
        ("celeba", "grid.rho=[0.5, 1.0]", "paints no border"),
    ],
)
def test_domain_and_model_checks(preset, override, needle):
    with pytest.raises(ConfigError, match=needle):
        load(preset, [override])


def test_division_needs_a_prime_modulus():
    with pytest.raises(ConfigError, match="not prime"):
        load("tiny", ["task.op='/'", "task.p=32"])
    assert load("tiny", ["task.op='/'", "task.p=31"]).task.op == "/"


def test_unknown_preset_suggests_the_closest():
    with pytest.raises(ConfigError, match="Did you mean 'default'"):
        load("defualt")


def test_overrides_parse_toml_values_and_axes():
    config = load(
        "tiny",
        ["grid.weight_decay={logspace=[0.001, 10, 5]}", "grid.seed=[3,4]", "optim.name=sgd", "model.hidden=[16, 8]"],
    )
    assert len(config.grid["weight_decay"]) == 5
    assert math.isclose(config.grid["weight_decay"][0], 1e-3) and math.isclose(config.grid["weight_decay"][-1], 10)
    assert config.grid["seed"] == (3, 4) and config.optim.name == "sgd" and config.model.hidden == (16, 8)


def test_a_quoted_name_or_description_loses_its_quotes():
    """Issue 29 item 9: --set 'name="~"' names the configuration ~ (a TOML string), not "~" with its quotes; bare
    text stays as typed."""
    quoted = load("tiny", ['name="~"', "description='a \"quoted\" run'"])
    assert quoted.name == "~" and quoted.description == 'a "quoted" run'
    assert load("tiny", ["name=my-run"]).name == "my-run" and load("tiny", ["name=2024"]).name == "2024"
    assert load("tiny", ['name="two words"']).name == "two words"
    assert experiment.from_dict(experiment.to_dict(quoted)).name == "~"


def test_logspace_helper():
    values = logspace(1e-3, 10, 5)
    assert [round(math.log10(v), 9) for v in values] == [-3, -2, -1, 0, 1]


def test_every_preset_loads_and_round_trips():
    presets = list_presets()
    assert {"default", "tiny", "companion-transformer", "clamp-mlp", "community-p113", "sparse-parity"} <= set(presets)
    for name, description in presets.items():
        assert description, f"preset {name} needs a one-line description"
        config = load(name)
        assert experiment.from_dict(experiment.to_dict(config)) == config


def test_default_preset_meets_the_brief():
    config = load("default")
    assert config.task.name == "modular" and config.task.op == "+"
    assert len(config.grid["weight_decay"]) >= 8 and len(config.grid["seed"]) >= 2


def test_each_domain_declares_its_own_axes():
    assert list(load("default").grid) == ["weight_decay", "learning_rate", "seed", "init_scale", "train_fraction"]
    assert list(load("border-digits").grid) == ["weight_decay", "learning_rate", "seed", "init_scale", "rho"]


def test_execution_settings_do_not_change_the_digest():
    base = load("tiny")
    assert experiment.digest(base) == experiment.digest(
        load(
            "tiny", ["execution.strategy=vmap", "execution.runs_per_batch=4", "execution.chunk_logs=1", "description=x"]
        )
    )
    assert experiment.digest(base) != experiment.digest(load("tiny", ["train.steps=600"]))
    assert experiment.digest(base) != experiment.digest(load("tiny", ["grid.seed=[0, 2]"]))


def test_transition_metric_defaults_to_the_domain_headline():
    assert load("tiny").analysis.transition_metric == "test_acc"
    assert load("border-digits", ["analysis.transition_metric=''"]).analysis.transition_metric == "clean_acc"


def test_a_toml_file_by_path(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('[task]\nname = "sparse_parity"\nparity_n = 6\n[grid]\nweight_decay = [0.1, 1.0]\n')
    config = load(str(path))
    assert config.name == "mine" and config.task.parity_n == 6 and config.grid["weight_decay"] == (0.1, 1.0)
    path.write_text("[task\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(str(path))
    path.write_text("[grid]\nweight_decay = { logspace = [1e-3, 1, 3], linspace = [0, 1, 2] }\n")
    with pytest.raises(ConfigError, match="must be {logspace"):
        load(str(path))
    path.write_text("task = 3\n")
    with pytest.raises(ConfigError, match="must be a table"):
        load(str(path))


def test_a_revised_configuration_is_the_rebuilt_one_and_is_checked_as_loaded():
    """`experiment.revised` (a section replaced, then `checked`) gives what the rebuild from dicts gave before
    (issue 47: no round trip through dicts to re-check), digest included, and refuses what loading refuses."""
    import dataclasses

    from nht_jax.engine.interventions import NormClamp
    from nht_jax.experiment import ForkConfig

    config = experiment.load("default", ["grid.seed=[0]", "grid.weight_decay=[0.1, 1.0]"])
    clamp = NormClamp(critical_norm=12.5, rho=1.1)
    optim = dataclasses.replace(config.optim, after=(clamp,))
    fork = ForkConfig("runs/out/source", {"weight_decay": 1.0}, "fit", "abc123", ({"run": 1, "seed": 0, "step": 40},))
    for changes in ({"optim": optim}, {"fork": fork}, {"optim": optim, "fork": fork}):
        revised = experiment.revised(config, **changes)
        rebuilt = experiment.from_dict(
            {
                **experiment.to_dict(config),
                **{k: (experiment.to_dict(dataclasses.replace(config, **changes))[k]) for k in changes},
            }
        )
        assert revised == rebuilt and experiment.digest(revised) == experiment.digest(rebuilt)
    with pytest.raises(ConfigError, match="train.steps"):
        experiment.revised(config, train=dataclasses.replace(config.train, steps=-5))
