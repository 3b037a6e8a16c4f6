"""nht_jax: vectorised JAX/Flax sweeps for norm-hierarchy transitions.

    import nht_jax
    res = nht_jax.sweep("default", grid={"weight_decay": [0.05, 0.72], "seed": 0}, train={"steps": 500})
    res.to_xarray()      # the metrics as an xarray Dataset
    res.analyze()        # what `nht analyze` computes

Layers, imports pointing down (tests/test_layout.py): cli → papers (the papers' experiments) → api (`nht_jax.api`:
the names below) → analysis (`nht analyze`) → figures (of a results folder) / theory (bounds, toy models) →
training (the sweep loop, its hooks, shards) → results (folders, import, export) → measure (summaries, regimes,
fits on a run's history) → experiment (a whole configuration) → domains (built from models/ and vision/) → engine
(loop, step, optim, grid, executor, metrics) / forecast (the live delay forecast) → base (errors, schema, presets).

The names below are loaded on first use, so `import nht_jax` (and `import nht_jax.engine`) loads no domain, no
JAX and no matplotlib.
"""

import importlib

_EXPORTS = {
    "sweep": "nht_jax.api",
    "load": "nht_jax.api",
    "load_results": "nht_jax.api",
    "Results": "nht_jax.api",
    "make_train": "nht_jax.api",
    "Config": "nht_jax.experiment",
    "ConfigError": "nht_jax.base.errors",
    "diagnose": "nht_jax.analysis.monitor",
    "record_norms": "nht_jax.engine.norm_monitor",
    "gamma_eff": "nht_jax.engine.optim",
    "gamma_theory": "nht_jax.engine.optim",
    "make_optimiser": "nht_jax.engine.optim",
}
DEPRECATED = {"make_optimizer": "make_optimiser"}
"""Old names kept for one release (0.1.x), each with a DeprecationWarning naming the new one; gone in 0.2."""


def __getattr__(name):
    if name in DEPRECATED:
        import warnings

        warnings.warn(
            f"nht_jax.{name} is the old spelling of nht_jax.{DEPRECATED[name]}, kept until nht_jax 0.2: "
            f"use nht_jax.{DEPRECATED[name]}",
            DeprecationWarning,
            stacklevel=2,
        )
        name = DEPRECATED[name]
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'nht_jax' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_EXPORTS])


__all__ = list(_EXPORTS)
__version__ = "0.1.0"
