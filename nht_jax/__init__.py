"""nht_jax: vectorised JAX/Flax sweeps for norm-hierarchy transitions.

Layers, imports pointing down: cli → run (sweep, results, benchmark) / report (analysis, figures) →
experiment (a whole configuration) → domains (modular, sparse_parity, images, digits_grokking; built from
models/ and vision/) → engine (loop, step, optim, grid, executor, metrics) → base (errors, schema, presets).
"""

from nht_jax.base.errors import ConfigError
from nht_jax.engine.optim import gamma_eff, gamma_theory, make_optimizer
from nht_jax.experiment import Config, load
from nht_jax.run.results import Results, load_results


def make_trainer(config: Config, data=None):
    """The engine Trainer of the configuration's domain (data loaded when not given)."""
    domain = config.domain
    return domain.make_trainer(config, data if data is not None else domain.load_data(config))


def make_train(config: Config, data=None):
    """The pure single-run function `train(hparams, key=None)` (key defaults to PRNGKey(seed))."""
    return make_trainer(config, data).train


__all__ = ["Config", "ConfigError", "Results", "gamma_eff", "gamma_theory", "load", "load_results", "make_optimizer",
           "make_train", "make_trainer"]
__version__ = "0.1.0"
