"""A non-editable install (what `pip install .` gives users) finds its presets and writes results under the
current directory, from any directory."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The package built from a copy of the sources and installed (not editable) into a folder of its own."""
    base = tmp_path_factory.mktemp("install")
    source = base / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "nht_jax", source / "nht_jax", ignore=shutil.ignore_patterns("__pycache__"))
    target = base / "site"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return target


def nht(target: Path, cwd: Path, *args):
    env = dict(os.environ, PYTHONPATH=str(target))
    return subprocess.run(
        [sys.executable, "-m", "nht_jax.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


def test_installed_package_is_the_one_imported(installed, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(installed))
    result = subprocess.run(
        [sys.executable, "-c", "import nht_jax.base.presets as p; print(p.presets_dir())"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0 and result.stdout.strip().startswith(str(installed)), result.stdout + result.stderr


def test_presets_and_a_tiny_run_from_another_directory(installed, tmp_path):
    listing = nht(installed, tmp_path, "presets")
    assert listing.returncode == 0, listing.stderr
    assert {"default", "tiny", "border-digits"} <= {line.split()[0] for line in listing.stdout.splitlines()}
    run = nht(
        installed,
        tmp_path,
        "run",
        "tiny",
        "--set",
        "train.steps=20",
        "--set",
        "train.log_every=10",
        "--set",
        "grid.seed=[0]",
        "--quiet",
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = tmp_path / "runs" / "out" / "tiny"
    assert (out / "meta.json").exists() and (out / "summary.csv").exists()
    assert not (installed / "runs").exists()  # nothing written inside the installed package


def test_the_cuda_extra_is_the_cuda_wheels_of_the_pinned_jax():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pin = next(d for d in project["dependencies"] if d.startswith("jax>=") or d.startswith("jax "))
    assert project["optional-dependencies"]["cuda"] == [pin.replace("jax", "jax[cuda12]", 1)]
