"""One writer per results folder: an OS advisory lock on DIR/.lock, held while a command writes into the folder
(`nht run`, `nht report`, `nht analyze`, `nht paper bound`, `nht paper reproduce`, `nht paper figs`).

`hold(folder, command)` takes the lock and writes the holder (pid, host, command, start time) into DIR/.lock; a
second process (or another thread of this one) that tries while it is held gets a ConfigError naming the folder
and the holder, at once. The kernel drops the lock when its process dies, so a killed sweep never leaves a stale
lock. Within one thread the lock is re-entrant. A `.lock` that is a symbolic link is never opened
(`nht_jax.base.atomic.open_no_follow`).

How it works and its limits (advisory, network filesystems, Windows, forked children): docs/guides/faults.md,
"One writer per folder: the lock"."""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

from nht_jax.base.atomic import open_no_follow
from nht_jax.base.errors import ConfigError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

LOCK_NAME = ".lock"
_held: dict[str, list] = {}  # resolved folder → [open lock file, depth, thread] for the locks this process holds
_held_guard = threading.Lock()  # one thread at a time decides whether a folder of `_held` is taken


def _key(folder: Path) -> str:
    return os.path.realpath(folder)


def _holder_text(path: Path) -> str:
    """Who holds the lock file at `path`, as written by the holder (best effort)."""
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        info = {}
    if not info:
        return "another process (it has not yet written who it is)"
    return (
        f"`{info.get('command', 'nht')}` (pid {info.get('pid', '?')} on host {info.get('host', '?')}, "
        f"since {info.get('since', '?')})"
    )


def _busy(folder: Path, command: str, path: Path) -> ConfigError:
    advice = (
        f"wait for it to finish and run `{command}` again"
        if command != "nht run"
        else "wait for it to finish (running the same command again then resumes or redraws), "
        "or choose another folder with --out DIR"
    )
    return ConfigError(
        f"results folder '{folder}' is in use by {_holder_text(path)}; two processes writing one "
        f"results folder would overwrite each other's files. To go on, {advice}."
    )


WITH_OUT = (
    "nht run",
    "nht paper reproduce",
    "nht paper figs",
    "nht export",
)  # the commands whose folder is an --out option


def _unwritable(folder: Path, command: str, error: OSError) -> ConfigError:
    """The one line for a folder this command cannot write into, with a way out that exists for the command:
    another --out folder, or, for the commands that write into the results folder they read (report, analyze,
    bound), a writable copy of it."""
    advice = (
        "Choose a writable folder with --out DIR."
        if command in WITH_OUT
        else f"Copy it somewhere writable and run the command on the copy: cp -r '{folder}' COPY && {command} COPY"
    )
    return ConfigError(f"cannot write results to '{folder}': {error.strerror or error}. {advice}")


def holds(folder) -> bool:
    """Whether this thread holds the lock of `folder` now.

    Args:
        folder: the results folder.

    Returns:
        True when it does.
    """
    found = _held.get(_key(Path(folder)))
    return found is not None and found[2] == threading.get_ident()


def _other_thread(folder: Path, command: str) -> ConfigError:
    return ConfigError(
        f"results folder '{folder}' is in use by another thread of this process; two threads writing "
        f"one results folder would overwrite each other's files. Give each thread its own folder "
        f"(out=…), or start the second after the first has returned."
    )


def _try_flock(f) -> bool:
    """True when the exclusive lock was taken, False when another open file holds it."""
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def raise_if_held(folder, command: str = "nht run") -> None:
    """Fail at once when another process holds the folder's lock; creates nothing (used before loading data)."""
    folder = Path(folder)
    path = folder / LOCK_NAME
    if _key(folder) in _held and not holds(folder):
        raise _other_thread(folder, command)
    if fcntl is None or _key(folder) in _held or not path.exists():
        return
    try:
        with open(path, "rb") as f:
            free = _try_flock(f)  # released again when f is closed
    except OSError:
        return  # unreadable or unlockable: `hold` decides
    if not free:
        raise _busy(folder, command, path)


@contextmanager
def hold(folder, command: str = "nht run"):
    """Hold the results folder `folder` (created if needed) exclusively for the `with` block.

    Args:
        folder: the results folder.
        command: the command holding it, named to whoever else tries.

    Yields:
        The folder, as a Path.
    """
    folder = Path(folder)
    key = _key(folder)
    with _held_guard:
        nested = key in _held
        if nested and not holds(folder):
            raise _other_thread(folder, command)
        if nested:  # this thread already holds it: nest
            _held[key][1] += 1
        else:
            _held[key] = [None, 1, threading.get_ident()]  # claimed for this thread before the file is opened
    if nested:
        try:
            yield folder
        finally:
            _held[key][1] -= 1
        return
    try:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            # the umask decides who may read it; never through a symbolic link (`atomic.LinkError`, one line)
            fd = open_no_follow(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as e:
            raise _unwritable(folder, command, e) from None
        with os.fdopen(fd, "r+") as f:  # closing it releases the flock
            locked = _acquire(f, folder, command)
            _held[key][0] = f
            try:
                yield folder
            finally:
                if locked:
                    f.seek(0)
                    f.truncate()  # still holding the lock: nobody reads a half-cleared file as a holder
                    f.flush()
    finally:
        with _held_guard:
            del _held[key]


def _acquire(f, folder: Path, command: str) -> bool:
    """Take the lock on the open file f and write the holder into it; False when locking is not available."""
    if fcntl is None:
        warnings.warn(
            f"no file locking on {sys.platform}: nothing stops a second `nht run` from writing into "
            f"'{folder}' at the same time",
            RuntimeWarning,
            stacklevel=3,
        )
        return False
    try:
        if not _try_flock(f):
            raise _busy(folder, command, folder / LOCK_NAME)
    except OSError as e:
        if e.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
            raise
        warnings.warn(
            f"the filesystem of '{folder}' refuses file locks ({e.strerror}): nothing stops a second "
            f"`nht run` from writing into it at the same time",
            RuntimeWarning,
            stacklevel=3,
        )
        return False
    f.seek(0)
    f.truncate()
    f.write(
        json.dumps(
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "command": command,
                "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
        )
        + "\n"
    )
    f.flush()
    return True


__all__ = ["hold", "holds"]
