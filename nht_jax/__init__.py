"""nht_jax: vectorised JAX/Flax sweeps for norm-hierarchy transitions."""

from nht_jax.config import Config, ConfigError, load
from nht_jax.grid import HParams, expand
from nht_jax.optim import gamma_eff, gamma_theory, make_optimizer
from nht_jax.results import Results, load_results
from nht_jax.train import make_train, make_trainer

__all__ = ["Config", "ConfigError", "HParams", "Results", "expand", "gamma_eff", "gamma_theory", "load",
           "load_results", "make_optimizer", "make_train", "make_trainer"]
__version__ = "0.1.0"
