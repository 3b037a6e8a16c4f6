"""The loss options and the output temperature through the classification domains' trainers (modular, sparse
parity and digits-grokking): the chosen loss trains and is reported, τ = 1 listed is no τ bit for bit, τ divides
the effective logit scale exactly, τ is a traced axis, and the refusals."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nht_jax import experiment, make_train
from nht_jax.experiment import build_trainer
from nht_jax.base.errors import ConfigError
from nht_jax.engine import losses
from nht_jax.engine.executor import run_grid
from nht_jax.engine.grid import num_runs, take
from nht_jax.engine.metrics import VOCABULARY

DIGITS = ["train.steps=10", "train.log_every=5", "model.hidden=[32]"]


def trajectories(config, run: int = 0) -> dict:
    """One run of the grid trained alone: {metric: (logs,) array}."""
    return each_alone(config)[run]


def each_alone(config) -> list[dict]:
    """Every run of the grid trained alone, by one compiled program: [{metric: (logs,) array}]."""
    train, runs = jax.jit(make_train(config)), config.runs()
    return [{k: np.asarray(v) for k, v in train(take(runs, i))[1].items()} for i in range(num_runs(runs))]


def assert_same_bits(a: dict, b: dict) -> None:
    if jax.default_backend() == "cpu":
        for name in a:
            assert a[name].tobytes() == b[name].tobytes(), name
    else:  # GPU scatter-adds are atomic: bitwise repeatable only with --xla_gpu_deterministic_ops=true
        for name in a:
            np.testing.assert_allclose(a[name], b[name], rtol=1e-5, err_msg=name)


def tiny(tiny_config, grid=None, **train):
    return tiny_config(grid=grid, steps=train.pop("steps", 10), log_every=5, **train)


def digits(*overrides):
    return experiment.load("digits-grokking", DIGITS + list(overrides))


@pytest.mark.parametrize("domain", ["modular", "digits"])
def test_temperature_one_listed_is_no_temperature_bit_for_bit(tiny_config, domain):
    plain = tiny(tiny_config) if domain == "modular" else digits()
    listed = tiny(tiny_config, {"temperature": 1.0}) if domain == "modular" else digits("grid.temperature=1.0")
    assert "temperature" not in plain.runs() and "temperature" not in plain.grid
    assert "temperature" in listed.runs() and experiment.digest(listed) != experiment.digest(plain)
    a, b = trajectories(plain), trajectories(listed)
    assert set(b) == set(a) | {"effective_logit_scale"}
    assert_same_bits(a, {k: b[k] for k in a})
    if "logit_scale" in b:  # at τ = 1 the loss sees the model's logits
        np.testing.assert_array_equal(b["effective_logit_scale"], b["logit_scale"])


@pytest.mark.parametrize("domain", ["modular", "digits"])
def test_cross_entropy_named_is_the_default_bit_for_bit_and_each_loss_trains_differently(tiny_config, domain):
    def config(loss):
        return tiny(tiny_config, loss=loss) if domain == "modular" else digits(f"train.loss={loss}")

    default = trajectories(config("default"))
    assert_same_bits(default, trajectories(config("cross_entropy")))
    for name in ("mse", "stablemax"):
        other = trajectories(config(name))
        assert other["norm_sq"][0] == default["norm_sq"][0]  # the same initialisation
        assert not np.allclose(other["norm_sq"][1:], default["norm_sq"][1:])  # its own gradients


@pytest.mark.parametrize("name", ["cross_entropy", "mse", "stablemax"])
@pytest.mark.parametrize("domain", ["modular", "sparse_parity", "digits"])
def test_the_reported_losses_are_the_chosen_loss_of_the_tempered_logits(tiny_config, domain, name):
    """train_loss and test_loss at step 0 are `losses.LOSSES[name]` of z/τ on each split, from the trainer's own
    parameters and split."""
    tau = 2.0
    if domain == "digits":
        config = digits(f"train.loss={name}", f"grid.temperature={tau}")
    elif domain == "modular":
        config = tiny(tiny_config, {"temperature": tau}, loss=name)
    else:
        config = experiment.load(
            "sparse-parity",
            [
                "train.steps=5",
                "train.log_every=5",
                "task.parity_samples=64",
                f"train.loss={name}",
                f"grid.temperature={tau}",
            ],
        )
    data = config.domain.load_data(config)
    trainer = build_trainer(config)
    hparams = take(config.runs(), 0)
    state = jax.jit(trainer.init)(hparams)
    metrics = jax.jit(trainer.evaluate)(state, hparams)
    loss = losses.LOSSES[name]
    if domain == "digits":
        from nht_jax.domains.digits_grokking import DigitsMLP

        model = DigitsMLP(tuple(config.model.hidden), config.model.activation)
        splits = {"train": (data.train_x, data.train_y, None), "test": (data.test_x, data.test_y, None)}
    else:
        model = config.model.build(data.vocab_size, data.num_classes, data.inputs.shape[1])
        splits = {
            "train": (data.inputs, data.labels, 1.0 - state.test_weight),
            "test": (data.inputs, data.labels, state.test_weight),
        }

    @jax.jit
    def loss_of_tempered_logits(params, x, y, weight):  # one compiled program, not one per eager operation
        return loss(model.apply({"params": params}, x) / tau, y, weight)

    for split, (x, y, weight) in splits.items():
        weight = jnp.ones(len(y)) if weight is None else weight
        expected, accuracy = loss_of_tempered_logits(state.params, jnp.asarray(x), jnp.asarray(y), weight)
        assert float(metrics[f"{split}_loss"]) == pytest.approx(float(expected), rel=1e-5)
        assert float(metrics[f"{split}_acc"]) == pytest.approx(float(accuracy))


@pytest.mark.parametrize("domain", ["modular", "digits"])
def test_temperature_divides_the_effective_logit_scale_exactly_at_step_zero(tiny_config, domain):
    taus = [0.5, 1.0, 2.0, 4.0, 3.0]
    config = (
        tiny(tiny_config, {"temperature": taus, "weight_decay": 1.0, "seed": 0})
        if domain == "modular"
        else digits(f"grid.temperature={taus}", "grid.weight_decay=[1.0]", "grid.seed=[0]", "grid.init_scale=[10.0]")
    )
    runs = config.runs()
    grid = run_grid(build_trainer(config), runs, config.execution)
    first = [{name: np.asarray(values[i]) for name, values in grid.items()} for i in range(num_runs(runs))]
    tau_of = np.asarray(runs["temperature"])
    assert sorted(tau_of.tolist()) == sorted(taus)
    base = first[list(tau_of).index(1.0)]
    for tau, m in zip(tau_of, first):
        assert m["norm_sq"][0] == base["norm_sq"][0]  # τ is no parameter: the same θ, the same ‖θ‖²
        scale = base["effective_logit_scale"][0] / np.float32(tau)
        if np.log2(tau).is_integer():  # powers of two divide exactly
            assert m["effective_logit_scale"][0] == scale
        else:
            assert m["effective_logit_scale"][0] == pytest.approx(scale, rel=1e-6)
    assert not np.allclose(first[0]["norm_sq"][1:], first[1]["norm_sq"][1:])  # τ changes the training


def test_temperature_is_a_traced_axis(tiny_config):
    """One compiled grid over τ (and the seeds) equals its runs trained one by one."""
    config = tiny(tiny_config, {"temperature": [0.5, 1.0, 3.0], "weight_decay": 1.0})
    runs = config.runs()
    grid = run_grid(build_trainer(config), runs, config.execution)
    assert num_runs(runs) == 6
    for i, alone in enumerate(each_alone(config)):
        for name, values in alone.items():
            np.testing.assert_allclose(np.asarray(grid[name][i]), values, rtol=1e-5, atol=1e-6, err_msg=name)


def test_the_temperature_metric_is_recorded_summarised_and_declared(tiny_config):
    plain, listed = tiny(tiny_config), tiny(tiny_config, {"temperature": [1.0, 2.0]})
    for config in (plain, digits()):
        assert "effective_logit_scale" not in config.domain.recorded(config)
        assert "effective_logit_scale" not in config.domain.summary(config)
    for config in (listed, digits("grid.temperature=[1.0, 2.0]")):
        assert "effective_logit_scale" in config.domain.recorded(config)
        assert "effective_logit_scale" in config.domain.summary(config)
        assert "effective_logit_scale" in config.domain.metrics and "effective_logit_scale" not in VOCABULARY
        assert config.axes["temperature"].identity == 1.0
    assert experiment.digest(plain) == experiment.digest(tiny(tiny_config))


@pytest.mark.parametrize(
    "setting,message",
    [
        (
            ["train.loss=hinge"],
            r"train.loss = 'hinge' is not a loss of domain 'modular'; choose one of default, "
            r"cross_entropy, mse, stablemax",
        ),
        (["grid.temperature=0.0"], r"grid.temperature .*must be > 0"),
        (["grid.temperature=[1.0, -2.0]"], r"grid.temperature .*must be > 0"),
    ],
)
def test_bad_losses_and_temperatures_are_refused(setting, message):
    with pytest.raises(ConfigError, match=message):
        experiment.load("tiny", setting)


@pytest.mark.parametrize("preset", ["toy-linear", "toy-diagonal"])
def test_a_toy_domain_refuses_the_classification_losses_and_the_temperature(preset):
    with pytest.raises(
        ConfigError,
        match=r"train.loss = 'mse' is not a loss of domain 'toy_\w+'; choose one of "
        r"default \(\"default\" is the domain's own loss\)",
    ):
        experiment.load(preset, ["train.loss=mse"])
    with pytest.raises(ConfigError, match="temperature"):
        experiment.load(preset, ["grid.temperature=[1.0, 2.0]"])
    experiment.load(preset, ["train.loss=default"])


def test_a_loss_left_at_its_default_stays_out_of_the_config():
    default, named = experiment.load("tiny"), experiment.load("tiny", ["train.loss=stablemax"])
    assert "loss" not in experiment.to_dict(default)["train"]
    assert experiment.to_dict(named)["train"]["loss"] == "stablemax"
