"""Domains behind one protocol: found by name, one metric vocabulary; the engine loads none."""

import subprocess
import sys

import jax
import pytest

from nht_jax import domains, experiment
from nht_jax.experiment import build_trainer
from nht_jax.base.errors import ConfigError
from nht_jax.engine.grid import COMMON_AXES, take
from nht_jax.engine.metrics import VOCABULARY

SMALL = {
    "tiny": ["train.steps=10", "train.log_every=10", "train.record_grad_noise=true", "train.batch_size=32"],
    "sparse-parity": ["train.steps=10", "train.log_every=10", "task.parity_samples=64"],
    "border-digits": [
        "train.steps=2",
        "train.log_every=2",
        "task.image_size=16",
        "task.eval_train_size=16",
        "task.eval_test_size=16",
        "train.batch_size=8",
    ],
    "digits-grokking": ["train.steps=10", "train.log_every=10"],
    "toy-linear": ["train.steps=10", "train.log_every=10"],
    "toy-diagonal": ["train.steps=10", "train.log_every=10"],
}


def declared(name: str, meanings: dict) -> bool:
    return name in meanings or any(
        k.endswith("/<layer>")
        and name.startswith(k[: -len("<layer>")])
        or k.endswith("/<g>")
        and name.startswith(k[: -len("<g>")])
        for k in meanings
    )


def test_every_domain_is_found_by_name_and_none_redeclares_a_shared_metric():
    assert domains.names() == [
        "arrays",
        "digits_grokking",
        "images",
        "imported",
        "modular",
        "sparse_parity",
        "toy_diagonal",
        "toy_linear",
    ]
    seen = {}
    for name in domains.names():
        domain = domains.get(name)
        assert domain.name == name and domain.settings().name == name
        assert not set(domain.axes) & set(COMMON_AXES)
        assert not set(domain.metrics) & set(VOCABULARY), f"{name} redefines a shared metric"
        for metric, meaning in domain.metrics.items():
            assert meaning and seen.setdefault(metric, meaning) == meaning, f"{metric} means two things"
    with pytest.raises(ConfigError, match="Did you mean 'modular'"):
        domains.get("modulr")
    with pytest.raises(ConfigError, match="not a domain"):
        domains.get("tokens")  # shared machinery, not a domain


@pytest.mark.parametrize("preset", list(SMALL))
def test_recorded_metrics_are_declared_and_as_announced(preset):
    """What a trainer records (shapes only, no training) is what the domain says, and each name has a meaning."""
    config = experiment.load(preset, SMALL[preset])
    domain = config.domain
    trainer = build_trainer(config)
    hparams = take(config.runs(), 0)
    metrics = jax.eval_shape(lambda hp: trainer.evaluate(trainer.init(hp), hp), hparams)
    meanings = {**VOCABULARY, **domain.metrics}
    assert all(declared(name, meanings) for name in metrics), [n for n in metrics if not declared(n, meanings)]
    assert domain.recorded(config) <= set(metrics)
    assert domain.headline_metric in metrics and set(domain.summary(config)) <= set(metrics)
    assert all(m.shape == () for m in metrics.values())


def test_the_engine_loads_no_domain():
    """Nothing above the engine's own layer: base and the configuration's sections (nht_jax.config)."""
    code = (
        "import sys, nht_jax.engine.loop, nht_jax.engine.executor, nht_jax.engine.step, nht_jax.engine.grid, "
        "nht_jax.engine.metrics, nht_jax.engine.noise; "
        "print(sorted(m for m in sys.modules if m.startswith('nht_jax') and not m.startswith(('nht_jax.engine', "
        "'nht_jax.base', 'nht_jax.config')) and m != 'nht_jax'))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stdout + result.stderr


def test_digits_grokking_scales_every_initial_parameter():
    config = experiment.load(
        "digits-grokking", ["grid.init_scale=[1.0, 10.0]", "grid.seed=[0]", "grid.weight_decay=[0.3]"]
    )
    assert list(config.grid) == list(COMMON_AXES)  # the domain adds no axis
    trainer = build_trainer(config)
    runs = config.runs()
    small, large = (jax.jit(trainer.init)(take(runs, i)) for i in range(2))
    chex_ratio = jax.tree.map(lambda a, b: float(abs(b).sum() / abs(a).sum()), small.params, large.params)
    assert all(abs(r - 10.0) < 1e-4 for r in jax.tree.leaves(chex_ratio))
    data = config.domain.load_data(config)
    assert data.train_x.shape == (300, 64) and data.test_x.shape == (1497, 64)
    assert sorted(set(data.train_y.tolist())) == list(range(10)) and data.train_x.max() <= 1.0
