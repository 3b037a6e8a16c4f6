"""Atomic writes: a failure keeps the old file, leaves no temporary behind and is one line naming the file, the
folder and the free space; files follow the umask; a killed writer's temporaries are removed when stale."""

import errno
import os
import time

import numpy as np
import pytest

from nht_jax.base import atomic
from nht_jax.base.atomic import (
    WriteError,
    atomic_write_bytes,
    atomic_write_text,
    npz_bytes,
)
from nht_jax.base.errors import ConfigError


def test_atomic_write_replaces_the_file(tmp_path):
    path = tmp_path / "f.txt"
    atomic_write_text(path, "old")
    atomic_write_text(path, "new")
    assert path.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def disk_full(fd):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_write_keeps_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "summary.csv"
    atomic_write_text(path, "old contents")
    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(WriteError) as failure:
        atomic_write_bytes(path, b"new contents")
    assert path.read_text() == "old contents"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.csv"]
    message = str(failure.value)
    assert isinstance(failure.value, ConfigError) and "\n" not in message  # one line, exit code 2 in the CLI
    assert message.startswith(f"cannot write 'summary.csv' in '{tmp_path}': No space left on device (")
    assert " free there; the file needs 12 B); the previous summary.csv is unchanged." in message


def test_a_failed_first_write_says_nothing_was_written(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(WriteError, match="no meta.json was written"):
        atomic_write_text(tmp_path / "meta.json", "{}")
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_write_leaves_no_temporary(tmp_path, monkeypatch):
    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(tmp_path / "checkpoint.npz", b"state")
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_folder_is_a_write_error(tmp_path):
    with pytest.raises(WriteError, match="cannot write 'x.csv' in '/proc'"):
        atomic_write_text(atomic.Path("/proc/x.csv"), "x")


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600), (0o027, 0o640)])
def test_written_files_follow_the_umask(tmp_path, umask, mode):
    """A colleague in the group reads a shared results folder when the umask says so (mkstemp would give 0600)."""
    previous = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "new.csv", "x")
        atomic_write_text(tmp_path / "new.csv", "replaced")
    finally:
        os.umask(previous)
    assert (tmp_path / "new.csv").stat().st_mode & 0o777 == mode


def test_only_stale_temporaries_of_the_atomic_writer_are_removed(tmp_path):
    old, fresh = time.time() - 3600, time.time() + 60
    files = {
        ".checkpoint.npz.k3j_x9q2.tmp": old,  # a writer killed an hour ago
        ".summary.csv.a1b2c3d4.tmp": old,
        ".checkpoint.npz.zz99yy88.tmp": fresh,  # newer than this process: someone else's, being written
        ".notes.tmp": old,
        "checkpoint.npz": old,
        "results.tmp": old,
    }  # not the writer's pattern
    for name, mtime in files.items():
        (tmp_path / name).write_text("x")
        os.utime(tmp_path / name, (mtime, mtime))
    removed = atomic.remove_stale_temporaries(tmp_path)
    assert sorted(p.name for p in removed) == [".checkpoint.npz.k3j_x9q2.tmp", ".summary.csv.a1b2c3d4.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(set(files) - {p.name for p in removed})


def test_the_temporaries_match_the_stale_pattern(tmp_path, monkeypatch):
    seen = []
    real = atomic._create_temporary

    def spy(path):
        fd, tmp = real(path)
        seen.append(tmp.name)
        return fd, tmp

    monkeypatch.setattr(atomic, "_create_temporary", spy)
    atomic_write_text(tmp_path / "checkpoint.npz", "x")
    assert len(seen) == 1 and atomic.TMP_PATTERN.match(seen[0]) and seen[0].startswith(".checkpoint.npz.")


def test_sizes_are_readable():
    assert [atomic.size_text(n) for n in (12, 4096, 1.5 * 2**20, 3 * 2**30, 2**41)] == [
        "12 B",
        "4 KiB",
        "1.5 MiB",
        "3 GiB",
        "2 TiB",
    ]


def test_npz_bytes_round_trip(tmp_path):
    (tmp_path / "a.npz").write_bytes(npz_bytes({"x": np.arange(3), "name": np.asarray("abc")}))
    with np.load(tmp_path / "a.npz") as data:
        assert data["x"].tolist() == [0, 1, 2] and str(data["name"]) == "abc"
