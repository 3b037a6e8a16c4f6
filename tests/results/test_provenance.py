"""meta.json's "code" (`nht_jax.results.provenance`): the version, and in a git checkout the commit, the dirty flag
and a hash of the uncommitted changes of the package's own files; null outside a checkout or without git. Known
answers from a throwaway repository built here (git init, one commit), so nothing depends on this checkout's
state."""

import json
import shutil
import subprocess

import pytest

import nht_jax
from nht_jax.results import provenance

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(repo, *args) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, timeout=60
    ).stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    """A git repository holding a package `pkg` (one committed file) and a `docs` file → (repo, package)."""
    repo, package = tmp_path / "repo", tmp_path / "repo" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("X = 1\n")
    (repo / "notes.md").write_text("notes\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    return repo, package


@needs_git
def test_a_clean_checkout_records_its_commit(checkout):
    repo, package = checkout
    assert provenance.checkout_state(package) == {
        "commit": git(repo, "rev-parse", "HEAD"),
        "dirty": False,
        "diff_sha256": None,
    }


@needs_git
def test_uncommitted_changes_make_it_dirty_and_their_hash_tells_two_apart(checkout):
    repo, package = checkout
    (repo / "notes.md").write_text("edited outside the package\n")  # not the package: changes no run
    assert provenance.checkout_state(package)["dirty"] is False
    (package / "__init__.py").write_text("X = 2\n")
    two = provenance.checkout_state(package)
    assert two["dirty"] is True and len(two["diff_sha256"]) == 64
    assert provenance.checkout_state(package) == two  # the same changes: the same hash
    (package / "__init__.py").write_text("X = 3\n")
    three = provenance.checkout_state(package)
    assert three["commit"] == two["commit"] and three["diff_sha256"] != two["diff_sha256"]
    (package / "__init__.py").write_text("X = 1\n")
    (package / "patch.py").write_text("Y = 1\n")  # an untracked module of the package
    untracked = provenance.checkout_state(package)
    assert untracked["dirty"] is True and untracked["diff_sha256"] not in (two["diff_sha256"], three["diff_sha256"])


@needs_git
def test_outside_a_checkout_or_without_git_it_is_null(tmp_path, monkeypatch, checkout):
    plain = tmp_path / "installed" / "pkg"
    plain.mkdir(parents=True)
    (plain / "__init__.py").write_text("")
    unknown = {"commit": None, "dirty": None, "diff_sha256": None}
    assert provenance.checkout_state(plain) == unknown
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # git is not found
    assert provenance.checkout_state(checkout[1]) == unknown
    assert provenance.code_provenance() == {"version": nht_jax.__version__, **unknown}


@needs_git
def test_a_package_inside_another_repositorys_ignored_folder_is_not_a_checkout(checkout):
    """`pip install` into a virtual environment inside some repository (its .venv ignored): that repository's commit
    is not the installed package's."""
    repo, _ = checkout
    (repo / ".gitignore").write_text(".venv/\n")
    installed = repo / ".venv" / "site-packages" / "pkg"
    installed.mkdir(parents=True)
    (installed / "__init__.py").write_text("")
    assert provenance.checkout_state(installed)["commit"] is None


def test_the_rule_of_same_code():
    a = {"version": "0.1.0", "commit": "c1", "dirty": False, "diff_sha256": None}
    assert provenance.same_code([a, dict(a)]) and provenance.same_code([None, None])
    assert not provenance.same_code([a, {**a, "commit": "c2"}])
    assert not provenance.same_code([a, {**a, "version": "0.2.0"}])
    dirty = {**a, "dirty": True, "diff_sha256": "h1"}
    assert not provenance.same_code([a, dirty]) and not provenance.same_code([dirty, {**dirty, "diff_sha256": "h2"}])
    assert not provenance.same_code([a, None])  # known beside unknown
    installed = {"version": "0.1.0", "commit": None, "dirty": None, "diff_sha256": None}
    assert provenance.same_code([installed, dict(installed)])
    assert provenance.describe(dirty) == "0.1.0 at c1 + uncommitted changes h1"


def test_a_sweep_records_its_code_in_meta_json(finished):
    code = json.loads((finished / "meta.json").read_text())["code"]
    assert code == {**provenance.code_provenance(), "dirty": code["dirty"], "diff_sha256": code["diff_sha256"]}
    assert code["version"] == nht_jax.__version__


def test_a_sweep_records_the_versions_that_can_change_its_numbers(finished):
    """jax, and jaxlib, flax, optax and numpy as installed: the pins allow ranges, and two versions can train the
    same configuration to numbers apart in their last bits (docs/findings/scorecard.md, 2026-12-06)."""
    import importlib.metadata

    import jax

    meta = json.loads((finished / "meta.json").read_text())
    assert meta["jax"] == jax.__version__
    assert meta["packages"] == {name: importlib.metadata.version(name) for name in ("jaxlib", "flax", "optax", "numpy")}


def test_a_commit_made_while_a_sweep_trains_does_not_change_the_code_it_records(tmp_path, monkeypatch, tiny_config):
    """meta.json's "code" is the code the process started training with (`code_at_start`): here the checkout moves
    to another commit once training has begun (as a commit made while a long sweep runs), and the folder still
    records the first. Read at the end, it recorded the second (seen on 2026-12-06)."""
    from nht_jax.training import loop
    from nht_jax.training.sweep import run_sweep

    state = {"commit": "a" * 40, "dirty": False, "diff_sha256": None}
    monkeypatch.setattr(provenance, "checkout_state", lambda package: dict(state))
    train = loop.train

    def commit_during_training(*args, **kwargs):
        state["commit"] = "b" * 40
        return train(*args, **kwargs)

    monkeypatch.setattr(loop, "train", commit_during_training)
    provenance.code_at_start.cache_clear()
    try:
        res = run_sweep(tiny_config(steps=20), tmp_path / "out", progress=False)
    finally:
        provenance.code_at_start.cache_clear()
    assert res.meta["code"]["commit"] == "a" * 40
    assert json.loads((tmp_path / "out" / "meta.json").read_text())["code"]["commit"] == "a" * 40
    assert provenance.code_provenance()["commit"] == "b" * 40  # what a reading at the end would have said
