"""A full disk: for real (a 400 KiB tmpfs; skipped where mounting is not permitted) and through a writer that
raises ENOSPC (everywhere). Either ends in one line naming the file, the folder and the free space, exit 2, the
previous file intact, no temporary and no .write_probe left; the temporaries of a writer killed mid-write are
removed the next time a command prepares the folder under its lock, and by `nht reproduce` in every folder it
writes (its own, figures/, the parts')."""

import errno
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
import time

import numpy as np
import pytest

from nht_jax.base import atomic
from nht_jax.base.atomic import WriteError, atomic_write_bytes, atomic_write_text
from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.results import folder as results
from nht_jax.training import sweep

from ..conftest import TINY as SWEEP

TINY = [*SWEEP, "--set", "execution.checkpoint_every_s=0"]


def temporaries(folder) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith(".tmp") or p.name == ".write_probe")


def fill(disk, leave: int = 0) -> None:
    """Fill the disk until `leave` bytes are free (as the filesystem counts them)."""
    free = shutil.disk_usage(disk).free
    with open(disk / "filler", "wb") as f:
        try:
            f.write(b"\0" * max(free - leave, 0))
            f.flush()
        except OSError:
            pass


def test_a_full_disk_for_real_keeps_the_previous_file(small_disk):
    path = small_disk / "summary.csv"
    atomic_write_text(path, "old contents")
    fill(small_disk)
    with pytest.raises(WriteError) as failure:
        atomic_write_bytes(path, b"x" * 100_000)
    assert path.read_text() == "old contents" and temporaries(small_disk) == []
    message = str(failure.value)
    assert message.startswith(
        f"cannot write 'summary.csv' in '{small_disk}': No space left on device (0 B free "
        f"there; the file needs 97.7 KiB); the previous summary.csv is unchanged."
    )


def test_preparing_a_folder_on_a_full_disk_leaves_no_probe(small_disk):
    fill(small_disk)
    with pytest.raises(WriteError, match="cannot write '.write_probe' .* No space left on device"):
        results.prepare_out_dir(small_disk)
    assert temporaries(small_disk) == []


def test_nht_run_on_a_full_disk_ends_in_one_line_and_finishes_once_there_is_room(small_disk, capsys):
    out = small_disk / "out"
    out.mkdir()
    stale = out / ".checkpoint.npz.k3j_x9q2.tmp"  # left by a writer killed an hour ago
    stale.write_bytes(b"half a checkpoint")
    os.utime(stale, (time.time() - 3600,) * 2)
    fill(small_disk, leave=48 * 1024)  # room for the probe and the first files, not for all
    assert main(["run", *TINY, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nht: error: cannot write '") and "Traceback" not in err
    assert f"' in '{out}': No space left on device (" in err and " free there; the file needs " in err
    assert temporaries(small_disk) == []  # neither the stale one nor the failed write's
    (small_disk / "filler").unlink()
    assert main(["run", *TINY, "--out", str(out), "--quiet"]) == 0  # room again: the same command finishes
    assert (out / "meta.json").exists() and (out / "trajectories.png").exists() and temporaries(small_disk) == []


def test_nht_run_when_every_write_fails_ends_in_one_line(tmp_path, monkeypatch, capsys):
    """The ENOSPC stand-in that runs everywhere: the first write (the probe) fails."""

    def disk_full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    out = tmp_path / "out"
    assert main(["run", *TINY, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"nht: error: cannot write '.write_probe' in '{out}': No space left on device (")
    assert " free there; the file needs 2 B); no .write_probe was written." in err
    assert temporaries(tmp_path) == [] and not (out / "checkpoint.npz").exists()


def test_a_failed_checkpoint_keeps_the_previous_one(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.npz"
    results.save_checkpoint(path, "digest", 2, [np.arange(3.0)], {"test_acc": np.zeros((1, 3))})
    before = path.read_bytes()
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.EDQUOT, "Disk quota exceeded")))
    with pytest.raises(
        WriteError,
        match="cannot write 'checkpoint.npz' .* Disk quota exceeded .* the previous checkpoint.npz is unchanged",
    ):
        results.save_checkpoint(path, "digest", 4, [np.arange(3.0)], {"test_acc": np.zeros((1, 5))})
    assert path.read_bytes() == before and temporaries(tmp_path) == []
    assert results.load_checkpoint(path, "digest")[0] == 2


@pytest.mark.parametrize("filename", [None, "progress.log"])
def test_any_disk_full_error_is_one_line_naming_where(filename, tmp_path, monkeypatch, capsys):
    """An OSError outside the atomic writer (progress.log appended, a folder made) gets the CLI's one line too."""
    out = tmp_path / "out"
    out.mkdir()

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", *([str(out / filename)] if filename else []))

    monkeypatch.setattr(sweep, "run_sweep", disk_full)
    assert main(["run", *TINY, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    where = f"'{out / filename}'" if filename else f"into '{out}'"
    assert err.startswith(f"nht: error: cannot write {where}: No space left on device (") and err.count("\n") == 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full (Linux's always-full device) here")
def test_a_full_disk_under_progress_log_is_one_line_naming_it(tmp_path, capsys, monkeypatch):
    """Appending to progress.log fails in write(2) (its open succeeds), where Python's OSError names no file. The
    append opens /dev/full in its place (every write: ENOSPC); a symbolic link there would be refused as a link."""
    from nht_jax.base import atomic

    opened = atomic.open_no_follow

    def full_disk(path, flags, mode=0o666):
        return (
            opened(Path("/dev/full"), flags & ~os.O_CREAT, mode)
            if Path(path).name == "progress.log"
            else opened(path, flags, mode)
        )

    monkeypatch.setattr(atomic, "open_no_follow", full_disk)
    out = tmp_path / "out"
    out.mkdir()
    assert main(["run", *TINY, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"nht: error: cannot write '{out / 'progress.log'}': No space left on device (")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_other_os_errors_keep_their_traceback(tmp_path, monkeypatch):
    """Only the machine's errors (disk, quota, permissions) become one line; anything else is a bug to see."""

    def bug(*args, **kwargs):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "/nowhere")

    monkeypatch.setattr(sweep, "run_sweep", bug)
    with pytest.raises(FileNotFoundError):
        main(["run", *TINY, "--out", str(tmp_path / "out")])


# A process killed (SIGKILL) inside a checkpoint write, between writing its temporary and renaming it.
KILLED_MID_WRITE = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from nht_jax.results import folder as results
    os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
    results.save_checkpoint(sys.argv[1], "digest", 2, [np.arange(3.0)], {"test_acc": np.zeros((1, 3))})
""")


# The next command, a process of its own (the killed writer's temporaries are older than it): prepares the folder,
# holding its lock or not.
PREPARE = textwrap.dedent("""
    import sys
    from nht_jax.results import lock
    from nht_jax.results import folder as results
    if sys.argv[2] == "locked":
        with lock.hold(sys.argv[1]):
            results.prepare_out_dir(sys.argv[1])
    else:
        results.prepare_out_dir(sys.argv[1])
""")


# Another process holding a folder's lock.
HOLD = textwrap.dedent("""
    import sys, time
    from nht_jax.results import lock
    with lock.hold(sys.argv[1], "nht run"):
        print("held", flush=True)
        time.sleep(120)
""")


def test_temporaries_of_a_killed_writer_are_removed_when_the_folder_is_next_prepared(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_MID_WRITE, str(out / "checkpoint.npz")],
        timeout=120,
        check=False,
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -9, killed.stderr
    left = temporaries(out)
    assert len(left) == 1 and left[0].startswith(".checkpoint.npz.") and atomic.TMP_PATTERN.match(left[0])
    for how, remaining in (("unlocked", left), ("locked", [])):  # unlocked, another process might be writing it
        subprocess.run([sys.executable, "-c", PREPARE, str(out), how], timeout=120, check=True)
        assert temporaries(out) == remaining, how
    assert not (out / "checkpoint.npz").exists()


def plant_stale(*paths) -> None:
    """Temporaries as a writer killed an hour ago leaves them."""
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half a file")
        os.utime(path, (time.time() - 3600,) * 2)


def test_nht_reproduce_removes_stale_temporaries_in_the_folders_only_it_writes(tmp_path):
    out = tmp_path / "reproduce"
    bounds = out / "verify-bounds-quick"
    plant_stale(
        out / ".scorecard.csv.k3j_x9q2.tmp",
        out / ".reproduce.md.0a1b2c3d.tmp",
        out / "figures" / ".fig1_three_regimes.png.zz99yy88.tmp",
        bounds / ".bounds.csv.q1w2e3r4.tmp",
    )
    assert main(["paper", "reproduce", "--quick", "--only", "verify-bounds", "--out", str(out)]) == 0
    assert temporaries(out) == []
    assert (out / "scorecard.csv").exists() and (out / "reproduce.md").exists() and (bounds / "bounds.csv").exists()


def test_nht_reproduce_removes_stale_temporaries_of_a_sweep_part_under_its_lock(tmp_path):
    from nht_jax.papers import reproduce

    out = tmp_path / "reproduce"
    plans = reproduce.plan(out, "quick", reproduce.select(["toy-linear"]))
    part = plans[0].folder
    stale = part / ".reproduce_part.json.k3j_x9q2.tmp"  # a finished part is reused: no `nht run` prepares it
    plant_stale(stale)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(part)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError, match=f"results folder '{part}' is in use by `nht run`"):
            reproduce.remove_stale_temporaries_of_parts(out, plans)
        assert stale.exists()  # the holder might be writing it
    finally:
        holder.kill()
        holder.communicate()
    assert reproduce.remove_stale_temporaries_of_parts(out, plans) == [stale] and temporaries(out) == []


@pytest.mark.parametrize("command", ["report", "analyze", "bound"])
def test_report_analyze_and_bound_remove_stale_temporaries_of_the_folder_they_write(folder, command):
    stale = folder / ".summary.csv.k3j_x9q2.tmp"
    plant_stale(stale)
    fresh = folder / ".phase_diagram.png.a1b2c3d4.tmp"  # a writer of this moment: never touched
    fresh.write_bytes(b"being written")
    os.utime(fresh, (time.time() + 3600,) * 2)
    assert main([command, str(folder)]) == 0
    assert not stale.exists() and fresh.exists()
