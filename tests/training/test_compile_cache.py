"""The commands' persistent compilation cache (nht_jax.base.compile_cache): where it goes, `nht cache`, and four
`nht run`s in subprocesses: a cold cache is filled with every program (however small), a second run loads them all
and compiles nothing, NHT_COMPILE_CACHE=off writes nothing (not even into JAX's own folder), an unwritable folder is
one warning line; the four results bit-identical."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nht_jax import cli
from nht_jax.base import compile_cache
from nht_jax.base.compile_cache import setting

RUN = [
    "run",
    "tiny",
    "--set",
    "train.steps=100",
    "--set",
    "grid.seed=[0]",
    "--set",
    "execution.chunk_logs=1",
    "--quiet",
]  # a fixed chunk size: the same programs in every run, whatever the machine's load
WRITE, HIT, MISS = (
    "to persistent compilation cache with key",
    "Persistent compilation cache hit",
    "PERSISTENT COMPILATION CACHE MISS",
)
SKIPPED = "Not writing persistent cache entry"


# ---- where the cache goes -------------------------------------------------------------------------------------------


def test_the_environment_variable_moves_or_turns_off_the_cache(tmp_path):
    for word in ("off", "OFF", "0", "false", "no", "none"):
        assert setting({"NHT_COMPILE_CACHE": word}, jax_folder="/jax") == (None, f"NHT_COMPILE_CACHE={word}")
    assert setting({"NHT_COMPILE_CACHE": str(tmp_path)}, jax_folder="/jax") == (tmp_path, "NHT_COMPILE_CACHE")
    assert setting({"NHT_COMPILE_CACHE": "~/c"}).folder == Path.home() / "c"
    assert setting({"NHT_COMPILE_CACHE": str(tmp_path)}, jax_enabled=False).folder == tmp_path  # named: used


def test_jax_own_folder_and_switch_are_respected_without_the_variable():
    assert setting({}, jax_folder="/suite/cache") == (Path("/suite/cache"), "JAX_COMPILATION_CACHE_DIR")
    assert setting({}, jax_folder="/suite/cache", jax_enabled=False).folder is None
    assert setting({"NHT_COMPILE_CACHE": " "}, jax_folder="/j").folder == Path("/j")  # blank: as if unset


def test_the_default_is_a_per_user_folder():
    assert setting({"XDG_CACHE_HOME": "/xdg"}) == (Path("/xdg/nht_jax/jax"), "default")
    assert setting({}).folder == Path.home() / ".cache" / "nht_jax" / "jax"
    assert setting({"XDG_CACHE_HOME": "relative"}).folder == Path.home() / ".cache" / "nht_jax" / "jax"


def test_an_unwritable_folder_is_a_sentence(tmp_path):
    assert compile_cache.write_problem(tmp_path / "new" / "jax") is None and (tmp_path / "new" / "jax").is_dir()
    (tmp_path / "file").write_text("")
    problem = compile_cache.write_problem(tmp_path / "file" / "jax")
    assert "cannot be written" in problem and "NHT_COMPILE_CACHE" in problem and str(tmp_path / "file") in problem


# ---- nht cache --------------------------------------------------------------------------------------------------------


def test_nht_cache_shows_and_clears_only_the_cache_files(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "jax"
    folder.mkdir()
    for key in ("jit_a-1", "jit_b-2"):
        (folder / f"{key}-cache").write_bytes(b"x" * 2**19)
    (folder / "jit_a-1-atime").write_bytes(b"t" * 8)
    (folder / "notes.txt").write_text("mine")  # a folder the user named may hold other files: kept
    monkeypatch.setenv("NHT_COMPILE_CACHE", str(folder))
    assert cli.main(["tool", "cache"]) == 0
    assert capsys.readouterr().out == f"compile cache: {folder} (NHT_COMPILE_CACHE): 2 programs, 1.0 MiB\n"
    assert cli.main(["tool", "cache", "--clear"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"removed 2 programs (1.0 MiB) from {folder}",
        f"compile cache: {folder} (NHT_COMPILE_CACHE): 0 programs, 0.0 MiB",
    ]
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    monkeypatch.setenv("NHT_COMPILE_CACHE", "off")
    assert cli.main(["tool", "cache", "--clear"]) == 0
    assert capsys.readouterr().out == "compile cache: off (NHT_COMPILE_CACHE=off)\n"


# ---- nht run with and without the cache -------------------------------------------------------------------------------

# `nht run` as its console script runs it, the figures left out: drawing runs no JAX program (nht_jax/figures
# imports no JAX), so what the cache holds is the same; the four runs take ~10 % less CPU time (35.0 → 31.7 s).
NHT_WITHOUT_FIGURES = (
    "import sys\n"
    "from nht_jax.figures import folder, live\n"
    "folder.draw_all = live.draw = lambda *args, **kwargs: None\n"
    "from nht_jax.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def nht_run(cwd: Path, out: str, **env):
    """`nht run` (RUN) in a subprocess with `env` added, without figures; JAX's thresholds left to nht (the suite
    sets its own)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("JAX_PERSISTENT_CACHE_MIN_")}
    result = subprocess.run(
        [sys.executable, "-c", NHT_WITHOUT_FIGURES, *RUN, "--out", out],
        cwd=cwd,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def cached(folder: Path) -> list[str]:
    return sorted(p.name for p in compile_cache.entries(folder))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{name: (subprocess result, results folder)} of a cold run, a warm run, an "off" run, an unwritable folder."""
    root = tmp_path_factory.mktemp("compile-cache")
    cache, jax_own = root / "cache", root / "jax-own"
    (root / "file").write_text("")
    explain = {"JAX_EXPLAIN_CACHE_MISSES": "1", "NHT_COMPILE_CACHE": str(cache)}
    found = {"cold": nht_run(root, "run-cold", **explain)}
    found["cold_entries"] = cached(cache)
    found["warm"] = nht_run(root, "run-warm", JAX_LOG_COMPILES="1", **explain)
    found["off"] = nht_run(
        root,
        "run-off",
        JAX_LOG_COMPILES="1",
        **{**explain, "NHT_COMPILE_CACHE": "off"},
        JAX_COMPILATION_CACHE_DIR=str(jax_own),
    )
    found["unwritable"] = nht_run(
        root, "run-unwritable", NHT_COMPILE_CACHE=str(root / "file" / "jax"), JAX_LOG_COMPILES="1"
    )
    return root, cache, jax_own, found


def test_a_cold_run_caches_every_program_however_small(runs):
    _, cache, _, found = runs
    err = found["cold"].stderr
    assert found["cold_entries"], "nothing was cached"
    assert SKIPPED not in err, [line for line in err.splitlines() if SKIPPED in line]
    assert err.count(WRITE) == err.count(MISS) == len(found["cold_entries"])


def test_a_second_run_loads_every_program_and_compiles_none(runs):
    _, cache, _, found = runs
    err = found["warm"].stderr
    assert MISS not in err, [line for line in err.splitlines() if MISS in line]
    assert err.count(HIT) == len(found["cold_entries"])
    assert cached(cache) == found["cold_entries"]


def test_off_writes_nothing_even_into_jax_own_folder(runs):
    _, _, jax_own, found = runs
    assert not cached(jax_own)
    assert not [line for line in found["off"].stderr.splitlines() if HIT in line or MISS in line or WRITE in line]


def test_an_unwritable_folder_is_one_warning_and_the_run_goes_on(runs):
    root, _, _, found = runs
    lines = [line for line in found["unwritable"].stderr.splitlines() if "cache" in line.lower()]
    assert lines == [
        f"nht: warning: the compile cache folder '{root / 'file' / 'jax'}' cannot be written (Not a "
        f"directory); running without it (set NHT_COMPILE_CACHE to another folder, or to off)"
    ]
    assert (root / "run-unwritable" / "meta.json").exists()


def test_results_are_bit_identical_with_and_without_the_cache(runs):
    root = runs[0]
    arrays = {
        name: dict(np.load(root / f"run-{name}" / "trajectories.npz")) for name in ("cold", "warm", "off", "unwritable")
    }
    reference = arrays.pop("off")
    for name, got in arrays.items():
        assert got.keys() == reference.keys(), name
        for key, value in reference.items():
            assert np.array_equal(got[key], value, equal_nan=True) and got[key].dtype == value.dtype, (name, key)


# ---- entries cut short (issue 29 item 9) --------------------------------------------------------------------------


def jax_entry(size: int, seed: int = 0) -> bytes:
    """Bytes as JAX stores an entry: its own compression of `size` random bytes."""
    from jax._src.compilation_cache import compress_executable

    return compress_executable(np.random.default_rng(seed).bytes(size))


def test_entries_jax_cannot_read_are_removed_once_and_only_those(tmp_path):
    folder = tmp_path / "jax"
    folder.mkdir()
    whole, cut = jax_entry(5000), jax_entry(5000, seed=1)
    (folder / "jit_whole-1-cache").write_bytes(whole)
    (folder / "jit_cut-2-cache").write_bytes(cut[: len(cut) // 2])
    (folder / "jit_cut-2-atime").write_bytes(b"t" * 8)
    (folder / "jit_empty-3-cache").write_bytes(b"")
    (folder / "notes.txt").write_text("mine")
    assert not compile_cache.readable(folder / "jit_cut-2-cache")
    assert compile_cache.readable(folder / "jit_whole-1-cache")
    removed = compile_cache.remove_damaged(folder)
    assert sorted(p.name for p in removed) == ["jit_cut-2-cache", "jit_empty-3-cache"]
    assert sorted(p.name for p in folder.iterdir()) == [".nht-checked", "jit_whole-1-cache", "notes.txt"]
    # checked entries are not read again: one damaged before the stamp stays, one written after it goes
    old, new = folder / "jit_old-4-cache", folder / "jit_new-5-cache"
    old.write_bytes(b"cut")
    os.utime(old, ns=(compile_cache.stamp_time_ns(folder) - 10**10,) * 2)
    new.write_bytes(b"cut")
    assert [p.name for p in compile_cache.remove_damaged(folder)] == [new.name] and old.exists()


COMPILE_ONE = (
    "from nht_jax.cli import _enable_compile_cache; _enable_compile_cache(); import jax, jax.numpy as jnp; "
    "v = jnp.linspace(0.0, 1.0, 64); print(float(jax.jit(lambda v: jnp.tanh(jnp.outer(v, v) + "
    "jnp.sin(v)).sum())(v)))"
)


def compile_one(cache: Path) -> subprocess.CompletedProcess:
    """A process that enables the cache as every compiling command does, then compiles and runs one program."""
    result = subprocess.run(
        [sys.executable, "-c", COMPILE_ONE],
        env={**os.environ, "NHT_COMPILE_CACHE": str(cache)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_a_full_disk_leaves_no_entry_that_later_runs_cannot_read(small_disk):
    """JAX writes an entry in place: on a full disk the file is cut short, and JAX never rewrites a key. The next
    command removes it before compiling (one note), so the program is cached whole again and read from then on."""
    cache = small_disk / "cache"
    cache.mkdir()
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (shutil.disk_usage(small_disk).free - 4096))  # one page left: less than an entry
    full = compile_one(cache)
    assert "Error writing persistent compilation cache entry" in full.stderr, full.stderr[-2000:]
    damaged = [p.name for p in compile_cache.entries(cache) if not compile_cache.readable(p)]
    assert damaged, "the full disk left no cut entry"
    filler.unlink()
    again = compile_one(cache)
    assert f"nht: note: removed {len(damaged)} compile-cache entries that were cut short" in again.stderr
    assert "Error reading persistent compilation cache entry" not in again.stderr, again.stderr[-2000:]
    assert again.stdout == full.stdout
    assert all(compile_cache.readable(p) for p in compile_cache.entries(cache)) and compile_cache.entries(cache)
    third = compile_one(cache)
    assert "compile-cache" not in third.stderr and "persistent compilation cache" not in third.stderr, third.stderr
