"""Shared fixtures. `tiny_config(**train_overrides)` is a p = 31 addition, width-32 MLP, a handful of steps:
compiles and runs in seconds. Execution keys (strategy, runs_per_batch, shard, chunk_logs, chunk_seconds, checkpoint_every_s)
go to [execution], every other key to [train]."""

import os
import tempfile

# One persistent compilation cache per test session (fresh each time, so a cold CI run is what is measured):
# tests that build the same program again (a sweep and its resume, the CLI and the API) compile it once.
# Subprocesses started by the tests inherit it through the environment.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", tempfile.mkdtemp(prefix="nht-jax-test-cache-"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
# The tests' programs run a handful of steps: compiling them is most of their cost. XLA's backend optimisation
# level 0 halves compile time (same semantics, slower code); users' runs keep the default level.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

import pytest  # noqa: E402

from nht_jax import experiment  # noqa: E402

EXECUTION_KEYS = {"strategy", "runs_per_batch", "shard", "chunk_logs", "chunk_seconds", "checkpoint_every_s",
                  "memory_cap_gib", "stop_rule", "stop_margin_steps"}


def make_tiny_config(grid=None, task=None, model=None, **overrides) -> experiment.Config:
    train = dict(steps=40, log_every=10)
    execution = dict(chunk_logs=2)
    for key, value in overrides.items():
        (execution if key in EXECUTION_KEYS else train)[key] = value
    return experiment.from_dict({
        "name": "tiny-test",
        "task": {"name": "modular", "p": 31, **(task or {})},
        "model": model if model and model.get("name") != "mlp" else {"name": "mlp", "hidden": [32], **(model or {})},
        "train": train,
        "execution": execution,
        "grid": {"weight_decay": [0.01, 1.0], "learning_rate": 1e-2, "seed": [0, 1], "train_fraction": 0.5,
                 **(grid or {})},
    })


@pytest.fixture(scope="session")
def tiny_config():
    """The factory `make_tiny_config(grid=None, task=None, model=None, **train_or_execution_settings)`."""
    return make_tiny_config


@pytest.fixture
def tiny():
    return make_tiny_config()


@pytest.fixture(scope="session")
def tiny_results(tiny_config, tmp_path_factory):
    """The tiny sweep, trained once per session (and xdist worker) for the analyses' and the papers' tests:
    40 steps, so no run fits and every analysis must say why it has no value."""
    from nht_jax.run.sweep import run_sweep

    return run_sweep(tiny_config(), tmp_path_factory.mktemp("analyses-tiny"), progress=False)
