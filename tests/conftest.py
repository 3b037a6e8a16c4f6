"""Shared fixtures. `tiny_config(**train_overrides)` is a p = 31 addition, width-32 MLP, a handful of steps:
compiles and runs in seconds. Execution keys (strategy, runs_per_batch, shard, chunk_logs, chunk_seconds, checkpoint_every_s)
go to [execution], every other key to [train]."""

import os
import tempfile
from typing import NamedTuple

# One persistent compilation cache per test session (fresh each time, so a cold CI run is what is measured):
# tests that build the same program again (a sweep and its resume, the CLI and the API) compile it once.
# Subprocesses started by the tests inherit it through the environment.
# The process that makes the folder (pytest itself, or its xdist controller: the workers inherit the variable) removes
# it when it exits.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    import atexit
    import shutil

    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="nht-jax-test-cache-")
    atexit.register(shutil.rmtree, os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
# The commands' own cache setting (nht_jax.base.compile_cache) is the user's: without it they use the suite's folder.
os.environ.pop("NHT_COMPILE_CACHE", None)
# The tests' programs run a handful of steps: compiling them is most of their cost. Three XLA CPU settings, each the
# same semantics and slower code, cut compile time (users' runs keep XLA's defaults): backend optimisation level 0
# halves it; XLA's classic loop emitter instead of the MLIR fusion emitters and no XNNPACK rewrites halve it again
# (2026-12-03, the tiny MLP's train program 2.7 → 0.9 CPU s, a one-block transformer's 7.4 → 3.2 CPU s). Their code
# runs ~5× slower than XLA's default (2,000 steps of `tiny`: 2.1 against 0.4 CPU s) and may round differently in
# the last bits: the tests compare programs compiled under the same flags, and train few steps.
TEST_XLA_FLAGS = {
    "xla_backend_optimization_level": "0",
    "xla_cpu_use_fusion_emitters": "false",
    "xla_cpu_use_xnnpack": "false",
}
for _flag, _value in TEST_XLA_FLAGS.items():
    if _flag not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --{_flag}={_value}").strip()


def users_xla_env() -> dict[str, str]:
    """This process's environment with the suite's XLA_FLAGS above taken out again: for a subprocess that compiles a
    few programs and runs them for hundreds of steps (the README example, the forked interventions part), where
    XLA's default code, what users run, is faster in all (2026-12-03: the README example's 2 × 500 steps, 23 → 15 s
    wall at load 5)."""
    ours = {f"--{flag}={value}" for flag, value in TEST_XLA_FLAGS.items()}
    flags = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split() if f not in ours)
    env = {key: value for key, value in os.environ.items() if key != "XLA_FLAGS"}
    return {**env, "XLA_FLAGS": flags} if flags else env


import signal  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

# benchmarks/ (the harness and the PyTorch baseline) sits beside the package, outside what pip installs.
sys.path.append(str(Path(__file__).resolve().parents[1]))

# The signal tests assume what a terminal gives: SIGINT and SIGHUP at their default. A suite started under nohup or
# in the background (`pytest &`) inherits them ignored, and `nht run` rightly keeps ignored signals ignored; so the
# test processes (and the children they start) take the defaults, whatever started them.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)

import importlib.util  # noqa: E402
import shutil  # noqa: E402

import pytest  # noqa: E402

from nht_jax import experiment  # noqa: E402
from nht_jax.cli import main  # noqa: E402


def unless_installed(*modules: str, extra: str):
    """A skip mark for a test module that needs optional packages, the reason naming the extra that installs them.
    The packages are looked up, not imported: every xdist worker collects every module, and importing torch,
    tensorboardX (with the torch it loads), tensorflow_datasets or xarray there cost each worker 1–2.5 s of start-up;
    the tests import what they use."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(
        bool(missing), reason=f"{', '.join(missing)} not installed: pip install 'nht_jax[{extra}]'"
    )


EXECUTION_KEYS = {
    "strategy",
    "runs_per_batch",
    "shard",
    "chunk_logs",
    "chunk_seconds",
    "checkpoint_every_s",
    "memory_cap_gib",
}
SECTION_OF = {"stop_rule": ("stop", "rule"), "stop_margin_steps": ("stop", "margin_steps")}
SECTION_OF |= {f"live_{key}": ("live", key) for key in ("every_s", "forecast", "calibration")}
SECTION_OF["live"] = ("live", "enabled")
"""make_tiny_config's keywords for the keys of [stop] and [live] (the spellings of [execution] before its split)."""


def make_tiny_config(grid=None, task=None, model=None, **overrides) -> experiment.Config:
    train = dict(steps=40, log_every=10)
    execution = dict(chunk_logs=2)
    sections = {"stop": {}, "live": {}}
    for key, value in overrides.items():
        if key in SECTION_OF:
            section, name = SECTION_OF[key]
            sections[section][name] = value
        else:
            (execution if key in EXECUTION_KEYS else train)[key] = value
    return experiment.from_dict(
        {
            "name": "tiny-test",
            "task": {"name": "modular", "p": 31, **(task or {})},
            "model": model
            if model and model.get("name") != "mlp"
            else {"name": "mlp", "hidden": [32], **(model or {})},
            "train": train,
            "execution": execution,
            **sections,
            "grid": {
                "weight_decay": [0.01, 1.0],
                "learning_rate": 1e-2,
                "seed": [0, 1],
                "train_fraction": 0.5,
                **(grid or {}),
            },
        }
    )


class Call(NamedTuple):
    """One compiled call of GridRun.advance: the runs it trained, the runs of its program (with padding), its logs."""

    runs: int
    padded: int
    logs: int


class Advances:
    """Wraps GridRun.advance: records every compiled call (`calls`, `Call`s), and raises KeyboardInterrupt on call
    number `die_on` (that call trains nothing and is not recorded)."""

    def __init__(self, monkeypatch, die_on=None):
        from nht_jax.engine.executor import GridRun

        self.calls: list[Call] = []
        real = GridRun.advance

        def advance(grid_run, states, n, every=None):
            if len(self.calls) + 1 == die_on:
                raise KeyboardInterrupt
            self.calls.append(Call(grid_run.num_runs, grid_run.plan.padded_runs, n))
            return real(grid_run, states, n, every)

        monkeypatch.setattr(GridRun, "advance", advance)

    @property
    def logs(self) -> int:
        """Log intervals trained, all calls together."""
        return sum(c.logs for c in self.calls)

    @property
    def sizes(self) -> list[int]:
        """The log intervals of each call."""
        return [c.logs for c in self.calls]

    @property
    def shapes(self) -> list[tuple[int, int]]:
        """(runs, logs) of each call."""
        return [(c.runs, c.logs) for c in self.calls]

    @property
    def run_logs(self) -> int:
        """Run·log intervals computed, padding included."""
        return sum(c.padded * c.logs for c in self.calls)


@pytest.fixture
def advances(monkeypatch):
    """`advances(die_on=None)` → an `Advances` recorder (and killer) of GridRun.advance for this test."""
    return lambda die_on=None: Advances(monkeypatch, die_on)


@pytest.fixture(scope="session")
def advance_spy():
    """The `Advances` class, for fixtures wider than a test: `advance_spy(pytest.MonkeyPatch(), die_on)`."""
    return Advances


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
    from nht_jax.training.sweep import run_sweep

    return run_sweep(tiny_config(), tmp_path_factory.mktemp("analyses-tiny"), progress=False)


# Shared by the fault and export tests: `TINY`, the `nht run` arguments of a sweep that trains in seconds (2 runs ×
# 40 steps, width 8), and the fixtures `finished` (that sweep trained once per session, never written to again) and
# `folder` (a copy of it for one test to damage).

TINY = [
    "tiny",
    "--set",
    "train.steps=40",
    "--set",
    "train.log_every=20",
    "--set",
    "model.hidden=[8]",
    "--set",
    "grid.seed=[0]",
]


def stop_tiny_at_step_40(out, advance_spy):
    """`nht run TINY` at 80 steps with a checkpoint after every compiled call of 2 logs, into `out`, killed in its
    third call (`advance_spy`): it exits 130, stopped at step 40. Returns `out`."""
    stopped = [
        "--set",
        "train.steps=80",
        "--set",
        "train.log_every=10",
        "--set",
        "execution.chunk_logs=2",
        "--set",
        "execution.checkpoint_every_s=0",
    ]
    patch = pytest.MonkeyPatch()
    advance_spy(patch, die_on=3)
    try:
        assert main(["run", *TINY, *stopped, "--out", str(out), "--quiet"]) == 130
    finally:
        patch.undo()
    return out


@pytest.fixture(scope="session")
def finished(tmp_path_factory):
    """A finished results folder of `nht run TINY`, shared by every test of the session: copy it (`folder`) before
    changing anything in it."""
    out = tmp_path_factory.mktemp("faults") / "finished"
    assert main(["run", *TINY, "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture
def folder(finished, tmp_path):
    """A copy of `finished` for this test alone."""
    out = tmp_path / "res"
    shutil.copytree(finished, out)
    return out


@pytest.fixture
def small_disk(tmp_path):
    """A 400 KiB tmpfs mounted at tmp_path/disk, unmounted afterwards: a disk that fills (`mount` needs root; the
    test is skipped, saying so, where it is not permitted)."""
    import subprocess

    disk = tmp_path / "disk"
    disk.mkdir()
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(disk)], capture_output=True, text=True, timeout=30
        )
    except (FileNotFoundError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"cannot mount a tmpfs here: no working mount command ({e})")
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True, timeout=30)


# ---- the order in which xdist hands out the modules ------------------------------------------------------------------
# pyproject.toml runs `--dist loadscope --no-loadscope-reorder`: each module goes whole to one worker, in the order
# collected here. This hook sorts the modules longest first by tests/module_seconds.txt (the tests of a module keep
# their order), so that the last modules handed out are short ones and neither worker idles long at the end. xdist's
# own reorder (modules with more tests first) sent single long modules (the notebook, SLURM) last.

MODULE_SECONDS = Path(__file__).with_name("module_seconds.txt")
UNLISTED_SECONDS = 5.0  # a module that is not in the list yet: a new one, placed among the short ones


def module_seconds() -> dict[str, float]:
    """tests/module_seconds.txt as {module path relative to the repository root: seconds}."""
    rows = (line.split() for line in MODULE_SECONDS.read_text().splitlines() if line and not line.startswith("#"))
    return {path: float(seconds) for seconds, path in rows}


def pytest_collection_modifyitems(config, items):
    seconds = module_seconds()
    root = Path(config.rootpath)

    def module_of(item) -> str:
        return item.path.resolve().relative_to(root).as_posix() if item.path.is_relative_to(root) else str(item.path)

    items.sort(key=lambda item: -seconds.get(module_of(item), UNLISTED_SECONDS))  # stable: a module's own order kept
