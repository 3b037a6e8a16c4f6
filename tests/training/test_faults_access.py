"""Who may write a results folder: every command that writes into one takes its lock (`nht bound` too, so it never
writes from results a running `nht run --overwrite` is replacing; `nht figs` on its --out folder, where it also
removes a killed writer's temporaries); a read-only folder ends in one line with a way out the command really has
(--out for `nht run` and `nht figs`, a writable copy for report, analyze and bound), for real (a tmpfs remounted
read-only; skipped where mounting is not permitted) and through an open that raises EROFS (everywhere); a
configuration `name` is one folder name, never a path out of runs/out."""

import errno
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from nht_jax.cli import main
from nht_jax.results import lock

from ..conftest import TINY

READERS = ("report", "analyze", "paper bound")  # the commands that write into the results folder they read

HOLDER = textwrap.dedent("""
    import sys, time
    from nht_jax.results import lock
    with lock.hold(sys.argv[1], "nht run"):
        print("held", flush=True)
        time.sleep(120)
""")


def listing(folder) -> dict:
    return {p.name: p.stat().st_mtime_ns for p in sorted(folder.iterdir())}


def test_nht_bound_takes_the_lock(folder, capsys):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        before = listing(folder)
        assert main(["paper", "bound", str(folder)]) == 2
        err = capsys.readouterr().err
        assert f"results folder '{folder}' is in use by `nht run` (pid {holder.pid}" in err
        assert "wait for it to finish and run `nht paper bound` again" in err and err.count("\n") == 1
        assert listing(folder) == before  # no bound_table.csv, bound_report.md or bound.png from old results
    finally:
        holder.kill()
        holder.communicate()
    assert main(["paper", "bound", str(folder)]) == 0 and (folder / "bound_table.csv").exists()


FIG1 = "fig1_three_regimes.png"


def figs(out, root) -> list[str]:
    """`nht figs` drawing fig1 into `out` from the results under `root`, never training."""
    return ["paper", "figs", "--out", str(out), "--results", str(root), "--only", "fig1", "--no-run"]


@pytest.fixture
def figs_root(finished, tmp_path):
    """A results root whose default/ (fig1's preset) is the finished tiny sweep."""
    root = tmp_path / "root"
    shutil.copytree(finished, root / "default")
    return root


def test_nht_figs_takes_the_lock_of_its_folder_and_removes_stale_temporaries(figs_root, tmp_path, capsys):
    out = tmp_path / "figs"
    out.mkdir()
    stale = out / f".{FIG1}.k3j_x9q2.tmp"  # left by a `nht figs` killed inside a write an hour ago
    stale.write_bytes(b"half a PNG")
    os.utime(stale, (time.time() - 3600,) * 2)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        before = listing(out)
        assert main(figs(out, figs_root)) == 2
        err = capsys.readouterr().err
        assert f"results folder '{out}' is in use by `nht run` (pid {holder.pid}" in err
        assert "wait for it to finish and run `nht paper figs` again" in err and err.count("\n") == 1
        assert listing(out) == before  # no figure, and the temporary kept: the holder might be writing it
    finally:
        holder.kill()
        holder.communicate()
    assert main(figs(out, figs_root)) == 0
    assert (out / FIG1).exists() and not stale.exists()


def test_nht_figs_refuses_an_unknown_figure_before_it_makes_its_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the default --out: runs/out/paper_figs under the current folder
    assert main(["paper", "figs", "--only", "fig9", "--no-run"]) == 2
    assert capsys.readouterr().err.startswith("nht: error: unknown figure(s) fig9; choose among fig1")
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def read_only_lock(monkeypatch):
    """Opening a folder's .lock for writing fails as on a read-only filesystem."""
    real = os.open

    def open_(path, flags, *args, **kwargs):
        if str(path).endswith(lock.LOCK_NAME) and flags & (os.O_RDWR | os.O_WRONLY):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)


def assert_one_line_with_a_real_way_out(err: str, command: str, folder) -> None:
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"nht: error: cannot write results to '{folder}': Read-only file system. ")
    if command in ("run", "figs"):
        assert err.endswith("Choose a writable folder with --out DIR.\n")
    else:  # report, analyze and bound have no --out: they work on a copy
        assert "--out" not in err
        assert err.endswith(f"run the command on the copy: cp -r '{folder}' COPY && nht {command} COPY\n")


@pytest.mark.parametrize("command", READERS)
def test_a_read_only_folder_is_one_line_with_a_way_out(command, folder, read_only_lock, capsys):
    before = listing(folder)
    assert main([*command.split(), str(folder)]) == 2
    assert_one_line_with_a_real_way_out(capsys.readouterr().err, command, folder)
    assert listing(folder) == before


@pytest.mark.parametrize("command", ["run", "figs"])
def test_a_read_only_out_folder_advises_another_out(command, tmp_path, read_only_lock, capsys):
    out = tmp_path / "ro"
    assert main(["run", *TINY, "--out", str(out)] if command == "run" else figs(out, tmp_path)) == 2
    assert_one_line_with_a_real_way_out(capsys.readouterr().err, command, out)


@pytest.fixture
def read_only_copy(finished, tmp_path):
    """A copy of the finished folder on a tmpfs remounted read-only (root only)."""
    disk = tmp_path / "ro"
    disk.mkdir()
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (FileNotFoundError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"no mount command here ({e}); the EROFS tests above cover the same paths")
    if mounted.returncode != 0:
        pytest.skip(
            f"mounting a tmpfs is not permitted here ({mounted.stderr.strip()}); the EROFS tests above "
            f"cover the same paths"
        )
    try:
        shutil.copytree(finished, disk / "res")
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True, timeout=30)
        yield disk / "res"
    finally:
        subprocess.run(["umount", str(disk)], check=True, timeout=30)


def test_a_read_only_filesystem_for_real(read_only_copy, tmp_path, capsys):
    for command in READERS:
        assert main([*command.split(), str(read_only_copy)]) == 2, command
        assert_one_line_with_a_real_way_out(capsys.readouterr().err, command, read_only_copy)
    assert main(["run", *TINY, "--out", str(read_only_copy)]) == 2
    assert_one_line_with_a_real_way_out(capsys.readouterr().err, "run", read_only_copy)
    copy = tmp_path / "copy"  # the way out, followed
    shutil.copytree(read_only_copy, copy)
    assert main(["paper", "bound", str(copy)]) == 0 and (copy / "bound_report.md").exists()


@pytest.mark.parametrize("name", ["../..", "../../escaped", "/tmp/absolute", "", ".", "sub/dir", "back\\slash"])
def test_a_name_that_is_a_path_is_refused(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", *TINY, "--set", f"name={name}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"nht: error: name = {name!r} is not a plain name") and err.count("\n") == 1
    assert "--out DIR" in err
    assert list(tmp_path.iterdir()) == []  # nothing written, inside runs/out or outside it


def test_a_preset_file_whose_name_is_a_path_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.toml").write_text('name = "../outside"\n[task]\nname = "modular"\np = 31\n')
    assert main(["run", str(tmp_path / "mine.toml")]) == 2
    assert "name = '../outside' is not a plain name" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.toml"]


def test_plain_names_are_accepted(tmp_path, monkeypatch):
    from nht_jax import experiment

    for name in ("tiny", "my sweep", "λ-scan_2", "..hidden-ish"):
        assert experiment.load("tiny", [f"name={name}"]).name == name
