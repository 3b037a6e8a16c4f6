"""Atomic writes: a failure keeps the old file and leaves no temporary behind."""

import os

import numpy as np
import pytest

from nht_jax.base.atomic import atomic_write_bytes, atomic_write_text, npz_bytes


def test_atomic_write_replaces_the_file(tmp_path):
    path = tmp_path / "f.txt"
    atomic_write_text(path, "old")
    atomic_write_text(path, "new")
    assert path.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_a_failed_write_keeps_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "summary.csv"
    atomic_write_text(path, "old contents")

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space"):
        atomic_write_bytes(path, b"new contents")
    assert path.read_text() == "old contents"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.csv"]


def test_npz_bytes_round_trip(tmp_path):
    (tmp_path / "a.npz").write_bytes(npz_bytes({"x": np.arange(3), "name": np.asarray("abc")}))
    with np.load(tmp_path / "a.npz") as data:
        assert data["x"].tolist() == [0, 1, 2] and str(data["name"]) == "abc"
