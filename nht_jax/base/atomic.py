"""Atomic file writes: a reader sees the old file or the new one, never a half-written one.

`atomic_write_bytes(path, data)` writes a temporary in the same folder, fsyncs it and renames it over `path`; the
umask decides who may read it; any OSError is a `WriteError` naming the file, the folder and the free space, with
the previous file untouched; `remove_stale_temporaries` deletes what a killed process left. No write here follows a
symbolic link out of a results folder: a link at `path` is replaced, and `append_text` and the lock open with
O_NOFOLLOW and refuse a link in one line (`LinkError`).

A full disk, permissions, who can read the files and symbolic links: docs/guides/faults.md."""

from __future__ import annotations

import errno
import io
import os
import re
import secrets
import shutil
import time
from pathlib import Path

import numpy as np

from nht_jax.base.errors import ConfigError

TMP_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789_"  # tempfile's, so older writers' leftovers match too
TMP_PATTERN = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")
PROCESS_START = time.time()  # no temporary this process writes is older than this


class WriteError(ConfigError):
    """A file could not be written (disk full, quota, permissions): reported as one line, exit code 2."""


class LinkError(ConfigError):
    """A file nht writes in place (appends to, locks) is a symbolic link: refused, one line, exit code 2."""


NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)  # POSIX; where missing (Windows) `open_no_follow` checks islink first


def link_error(path: Path) -> LinkError:
    """The one line for a symbolic link where nht writes a file in place."""
    path = Path(path)
    try:
        target = f" (to '{os.readlink(path)}')"
    except OSError:
        target = ""
    return LinkError(
        f"'{path}' is a symbolic link{target}: nht never writes through a link in a results folder (it "
        f"would write the file it points to). Remove the link (rm '{path}') and run the command again."
    )


def open_no_follow(path: Path, flags: int, mode: int = 0o666) -> int:
    """os.open(path, flags | O_NOFOLLOW): a file descriptor, or `LinkError` when `path` is a symbolic link (other
    OSErrors propagate)."""
    path = Path(path)
    if not NO_FOLLOW and path.is_symlink():
        raise link_error(path)
    try:
        return os.open(path, flags | NO_FOLLOW, mode)
    except OSError as e:
        if e.errno == errno.ELOOP and path.is_symlink():
            raise link_error(path) from None
        raise


def append_text(path: Path, text: str) -> None:
    """Append `text` (UTF-8) to `path`, created if missing (mode 0o666 less the umask), and flush it; never through
    a symbolic link (`LinkError`). An OSError propagates with the file's name (a failed write names none)."""
    fd = open_no_follow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(text)
            f.flush()
    except OSError as e:
        if e.filename is not None:
            raise
        raise OSError(e.errno, e.strerror, str(path)) from None


def size_text(n: float) -> str:
    """Bytes as B, KiB, MiB, GiB or TiB with three significant digits."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} TiB"


def free_space_text(folder: Path) -> str:
    """'N free there' for the filesystem of `folder`, or 'free space unknown'."""
    try:
        return f"{size_text(shutil.disk_usage(folder).free)} free there"
    except OSError:
        return "free space unknown"


def write_error(path: Path, error: OSError, size: int | None = None) -> WriteError:
    """The one-line WriteError for `error` while writing `path` (`size` bytes when known)."""
    path = Path(path)
    needs = f"; the file needs {size_text(size)}" if size is not None else ""
    kept = f"the previous {path.name} is unchanged" if path.exists() else f"no {path.name} was written"
    return WriteError(
        f"cannot write '{path.name}' in '{path.parent}': {error.strerror or error} "
        f"({free_space_text(path.parent)}{needs}); {kept}. Free some space or make the folder "
        f"writable (or write elsewhere), then run the same command again."
    )


def _create_temporary(path: Path) -> tuple[int, Path]:
    """Create `.NAME.XXXXXXXX.tmp` beside `path` exclusively, mode 0o666 less the umask; (fd, its path)."""
    while True:
        token = "".join(secrets.choice(TMP_ALPHABET) for _ in range(8))
        tmp = path.parent / f".{path.name}.{token}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:
            continue


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over `path` (no temporary is left on failure;
    an OSError becomes a WriteError)."""
    path = Path(path)
    tmp = None
    try:
        fd, tmp = _create_temporary(path)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise write_error(path, e, len(data)) from None
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def remove_stale_temporaries(folder: Path, before: float = PROCESS_START) -> list[Path]:
    """Delete the atomic writer's temporaries in `folder` last modified before `before` (default: this process's
    start), i.e. left by a process killed inside a write; the paths removed. Call it only while holding the
    folder's lock (`nht_jax.results.lock`), so that no other process is writing one of them now."""
    removed = []
    for entry in os.scandir(folder):
        if TMP_PATTERN.match(entry.name) and entry.is_file(follow_symlinks=False):
            try:
                if entry.stat(follow_symlinks=False).st_mtime < before:
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
            except FileNotFoundError:
                pass
    return removed


def npz_bytes(arrays: dict) -> bytes:
    """The bytes of an uncompressed .npz holding `arrays`."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()
