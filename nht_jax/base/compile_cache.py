"""JAX's persistent compilation cache for the `nht` commands: a program compiled once is kept on disk, so a rerun,
a resume, `nht figs` after `nht run` and every part of `nht reproduce` load it instead of compiling it again.

Where it is, the first rule that applies:

    NHT_COMPILE_CACHE=off (or 0, false, no, none)   no persistent cache
    NHT_COMPILE_CACHE=PATH                          PATH
    JAX_ENABLE_COMPILATION_CACHE=false              no persistent cache (JAX's own switch)
    JAX_COMPILATION_CACHE_DIR=PATH                  PATH (JAX's own folder, also when set by jax.config.update;
                                                    the test suite's cache)
    otherwise                                       $XDG_CACHE_HOME/nht_jax/jax, else ~/.cache/nht_jax/jax

Every program is cached, however quickly it compiles and however small it is (JAX's thresholds set to 0 and "no
minimum", unless JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS or JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES is set).
An entry is XLA's serialised executable, keyed by the program, the compile options and XLA flags, the devices and
the jax/jaxlib version: a loaded program is the program a compile would give, so results are bit-identical with or
without the cache, and a changed program or version is simply compiled again. The cache is not a setting of an
experiment (no TOML key: it would enter config.toml and travel with a results folder to another machine).

The cache is trusted code: a folder others can write to lets them run code in your `nht` (JAX's warning). A
folder that cannot be written (permissions, a read-only disk) is not an error: `enable` says why, and the command
runs without the cache.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Mapping, NamedTuple

ENV = "NHT_COMPILE_CACHE"
OFF_WORDS = frozenset({"off", "0", "false", "no", "none"})
ENTRY_SUFFIXES = ("-cache", "-atime")
"""The files JAX's cache writes per program (`jax._src.lru_cache`): the only files `clear` removes."""


class Setting(NamedTuple):
    """Where the cache goes (`folder`, None: off) and which rule of the module docstring said so (`source`)."""

    folder: Path | None
    source: str


class Enabled(NamedTuple):
    """What `enable` did: the folder in use (None: no persistent cache), the rule that chose it, and `problem`, a
    sentence saying why a chosen folder is not used (None when nothing went wrong)."""

    folder: Path | None
    source: str
    problem: str | None = None


def default_folder(environ: Mapping[str, str]) -> Path:
    """$XDG_CACHE_HOME/nht_jax/jax when XDG_CACHE_HOME is set (and absolute, as the XDG spec asks), else
    ~/.cache/nht_jax/jax."""
    xdg = environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "nht_jax" / "jax"


def setting(environ: Mapping[str, str] | None = None, jax_folder: str | None = None,
            jax_enabled: bool = True) -> Setting:
    """The rule of the module docstring applied to `environ` (default os.environ), `jax_folder` (JAX's own
    configured folder; None: not configured) and `jax_enabled` (JAX's jax_enable_compilation_cache: False turns
    the cache off unless NHT_COMPILE_CACHE names a folder)."""
    environ = os.environ if environ is None else environ
    value = environ.get(ENV, "").strip()
    if value.lower() in OFF_WORDS:
        return Setting(None, f"{ENV}={value}")
    if value:
        return Setting(Path(value).expanduser(), ENV)
    if not jax_enabled:
        return Setting(None, "JAX_ENABLE_COMPILATION_CACHE=false")
    if jax_folder:
        return Setting(Path(jax_folder).expanduser(), "JAX_COMPILATION_CACHE_DIR")
    return Setting(default_folder(environ), "default")


def current(environ: Mapping[str, str] | None = None) -> Setting:
    """`setting` of `environ` (default os.environ) and of JAX's configuration in this process."""
    import jax

    return setting(environ, jax.config.jax_compilation_cache_dir, jax.config.jax_enable_compilation_cache)


def write_problem(folder: Path) -> str | None:
    """None when `folder` can be made and a file written in it; else a sentence saying why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        return (f"the compile cache folder '{folder}' cannot be written ({e.strerror or e}); running without it "
                f"(set {ENV} to another folder, or to off)")
    return None


def enable(environ: Mapping[str, str] | None = None) -> Enabled:
    """Turn JAX's persistent compilation cache on in the folder `setting` chooses (or off), before anything is
    compiled. Programs compiled earlier in this process are not written back; a folder JAX already opened in this
    process stays the one it uses."""
    import jax

    environ = os.environ if environ is None else environ
    chosen = current(environ)
    problem = write_problem(chosen.folder) if chosen.folder is not None else None
    if chosen.folder is None or problem:
        jax.config.update("jax_enable_compilation_cache", False)
        return Enabled(None, chosen.source, problem)
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(chosen.folder))
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    if "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES" not in environ:
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)  # -1: no minimum size
    return Enabled(chosen.folder, chosen.source)


def entries(folder: Path) -> list[Path]:
    """The programs cached in `folder` (JAX's `<key>-cache` files); none when it does not exist."""
    return sorted(folder.glob("*-cache")) if folder.is_dir() else []


def size_bytes(folder: Path) -> int:
    """Bytes of the cache's own files in `folder`."""
    return sum(p.stat().st_size for suffix in ENTRY_SUFFIXES for p in folder.glob(f"*{suffix}")) \
        if folder.is_dir() else 0


def clear(folder: Path) -> tuple[int, int]:
    """Remove the cache's own files from `folder` (nothing else: the folder may be one the user named);
    returns (programs removed, bytes freed)."""
    programs, freed = len(entries(folder)), size_bytes(folder)
    for suffix in ENTRY_SUFFIXES:
        for path in folder.glob(f"*{suffix}") if folder.is_dir() else ():
            path.unlink(missing_ok=True)
    return programs, freed


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def describe(chosen: Setting) -> str:
    """One line: where the cache is, which rule chose it, how many programs it holds and their size."""
    if chosen.folder is None:
        return f"compile cache: off ({chosen.source})"
    return (f"compile cache: {chosen.folder} ({chosen.source}): {len(entries(chosen.folder))} programs, "
            f"{mib(size_bytes(chosen.folder))}")
