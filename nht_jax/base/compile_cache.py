"""JAX's persistent compilation cache for the `nht` commands: a program compiled once is kept on disk, so a rerun,
a resume, `nht paper figs` after `nht run` and every part of `nht paper reproduce` load it instead of compiling it again.

`enable` finds the folder (NHT_COMPILE_CACHE, JAX's own variables, else the user's cache folder), caches every
program whatever its size or compile time, and removes the entries a full disk or a kill cut short before anything
compiles (`remove_damaged`, checked once per entry thanks to `CHECK_STAMP`). A folder that cannot be written is not
an error: the command runs without the cache. Results are bit-identical with or without it; it is no setting of an
experiment (no TOML key).

Where it is (the rules in order), what an entry is, trust, entries cut short, and `nht tool cache`:
docs/guides/execution.md, "Compile cache"."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Mapping, NamedTuple

ENV = "NHT_COMPILE_CACHE"
OFF_WORDS = frozenset({"off", "0", "false", "no", "none"})
ENTRY_SUFFIXES = ("-cache", "-atime")
"""The files JAX's cache writes per program (`jax._src.lru_cache`): the only files `clear` removes."""
CHECK_STAMP = ".nht-checked"
"""The stamp whose modification time is the start of the last `remove_damaged` (module docstring)."""
STAMP_SLACK_NS = 2 * 10**9
"""Entries modified up to 2 s before the stamp are read again (filesystems with coarse timestamps)."""


class Setting(NamedTuple):
    """Where the cache goes (`folder`, None: off) and which rule of the module docstring said so (`source`)."""

    folder: Path | None
    source: str


class Enabled(NamedTuple):
    """What `enable` did: the folder in use (None: no persistent cache), the rule that chose it, `problem`, a
    sentence saying why a chosen folder is not used (None when nothing went wrong), and `removed`, the names of
    the damaged entries it removed (`remove_damaged`)."""

    folder: Path | None
    source: str
    problem: str | None = None
    removed: tuple[str, ...] = ()


def default_folder(environ: Mapping[str, str]) -> Path:
    """$XDG_CACHE_HOME/nht_jax/jax when XDG_CACHE_HOME is set (and absolute, as the XDG spec asks), else
    ~/.cache/nht_jax/jax."""
    xdg = environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "nht_jax" / "jax"


def setting(
    environ: Mapping[str, str] | None = None, jax_folder: str | None = None, jax_enabled: bool = True
) -> Setting:
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
        return (
            f"the compile cache folder '{folder}' cannot be written ({e.strerror or e}); running without it "
            f"(set {ENV} to another folder, or to off)"
        )
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
    return Enabled(chosen.folder, chosen.source, removed=tuple(p.name for p in remove_damaged(chosen.folder)))


def readable(entry: Path) -> bool:
    """Whether JAX's reader can decompress the entry's bytes (False: cut short or otherwise damaged). An entry that
    cannot be opened (gone meanwhile, permissions) counts as readable: it is not ours to judge."""
    from jax._src.compilation_cache import decompress_executable  # the reader JAX loads every entry with

    try:
        data = entry.read_bytes()
    except OSError:
        return True
    try:
        decompress_executable(data)
    except Exception:  # zstd's ZstdError, zlib.error: a stream that ends early or is corrupt
        return False
    return True


def stamp_time_ns(folder: Path) -> int:
    """When `remove_damaged` last started in `folder` (0: never)."""
    try:
        return (folder / CHECK_STAMP).stat().st_mtime_ns
    except OSError:
        return 0


def remove_damaged(folder: Path) -> list[Path]:
    """Remove the entries of `folder` that JAX cannot read (and their `-atime` files), reading only those modified
    since the last check (module docstring); the entries removed. Then stamp the folder with this check's start:
    a full disk may refuse the stamp, and then every entry is read again next time (nothing else is lost)."""
    start_ns = time.time_ns()
    since = stamp_time_ns(folder) - STAMP_SLACK_NS
    removed = []
    for entry in entries(folder):
        try:
            if entry.stat().st_mtime_ns < since:
                continue
        except OSError:
            continue
        if not readable(entry):
            entry.unlink(missing_ok=True)
            entry.with_name(entry.name.removesuffix("-cache") + "-atime").unlink(missing_ok=True)
            removed.append(entry)
    stamp = folder / CHECK_STAMP
    try:
        stamp.touch()
        os.utime(stamp, ns=(start_ns, start_ns))
    except OSError:
        pass
    return removed


def entries(folder: Path) -> list[Path]:
    """The programs cached in `folder` (JAX's `<key>-cache` files); none when it does not exist."""
    return sorted(folder.glob("*-cache")) if folder.is_dir() else []


def size_bytes(folder: Path) -> int:
    """Bytes of the cache's own files in `folder`."""
    return (
        sum(p.stat().st_size for suffix in ENTRY_SUFFIXES for p in folder.glob(f"*{suffix}")) if folder.is_dir() else 0
    )


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
    return (
        f"compile cache: {chosen.folder} ({chosen.source}): {len(entries(chosen.folder))} programs, "
        f"{mib(size_bytes(chosen.folder))}"
    )
