"""nht_jax: vectorised JAX/Flax sweeps for norm-hierarchy transitions.

Layers, imports pointing down (tests/test_layout.py): cli → papers (the papers' experiments) → analysis
(`nht analyze`) → figures (of a results folder) / theory (bounds, toy models) → run (sweep, results, summaries and
regimes) → experiment (a whole configuration) → domains (built from models/ and vision/) → engine (loop, step,
optim, grid, executor, metrics) → base (errors, schema, presets).

The names below are loaded on first use, so `import nht_jax.engine` loads no domain.
"""

import importlib

_EXPORTS = {
    "ConfigError": "nht_jax.base.errors", "gamma_eff": "nht_jax.engine.optim", "gamma_theory": "nht_jax.engine.optim",
    "make_optimizer": "nht_jax.engine.optim", "Config": "nht_jax.experiment", "load": "nht_jax.experiment",
    "Results": "nht_jax.results.folder", "load_results": "nht_jax.results.folder", "make_trainer": "nht_jax.experiment",
    "record_norms": "nht_jax.engine.norm_monitor", "diagnose": "nht_jax.analysis.monitor",
}


def make_train(config, data=None):
    """The pure single-run function `train(hparams, key=None)` (key defaults to PRNGKey(seed))."""
    return getattr(importlib.import_module("nht_jax.experiment"), "make_trainer")(config, data).train


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'nht_jax' has no attribute {name!r}")


__all__ = [*_EXPORTS, "make_train"]
__version__ = "0.1.0"
