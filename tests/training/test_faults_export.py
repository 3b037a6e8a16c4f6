"""`nht export` and `nht import` under faults (issue 29, items 4 and 7): an export killed half-way is refused by the
import (never a smaller sweep); a damaged event file is named as damaged (not as a metric never logged); `--out` at
a regular file and a non-UTF-8 preset are one line; a nearly full disk (a 400 KiB tmpfs) gives one line from
`nht export`, never tensorboardX's or W&B's tracebacks. The full-disk exports run as real children, so that what
their threads and exit handlers print is seen."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from nht_jax.cli import main
from nht_jax.results import export as ex
from nht_jax.results.folder import load_results

from ..conftest import unless_installed

pytestmark = unless_installed("tensorboardX", "tensorboard", extra="tensorboard")


def one_line(err: str) -> bool:
    return err.startswith("nht: error: ") and err.count("\n") == 1 and "Traceback" not in err


@pytest.fixture
def exported(finished, tmp_path):
    """`nht export --tensorboard` of the finished tiny sweep, in tmp_path/exp/tensorboard."""
    assert main(["export", str(finished), "--tensorboard", "--out", str(tmp_path / "exp")]) == 0
    return tmp_path / "exp" / "tensorboard"


def import_argv(logs, out):
    return ["import", str(logs), "--out", str(out), "--set", "optim.decay_on=weights"]


def test_a_whole_export_imports(exported, tmp_path):
    assert json.loads((exported / ex.MARKER).read_text()) | {"config_digest": ""} == {
        "written_by": "nht export",
        "config_digest": "",
        "finished": True,
        "runs": 2,
    }
    assert main(import_argv(exported, tmp_path / "back")) == 0
    assert load_results(tmp_path / "back").num_runs == 2


def test_an_export_killed_half_way_is_refused(exported, tmp_path, capsys):
    """What a kill leaves: the marker written first (finished: false), the runs written so far."""
    marker = json.loads((exported / ex.MARKER).read_text())
    (exported / ex.MARKER).write_text(json.dumps(marker | {"finished": False, "runs": 0}))
    shutil.rmtree(sorted(p for p in exported.iterdir() if p.is_dir())[-1])
    assert main(import_argv(exported, tmp_path / "back")) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "did not finish (killed or failed half-way)" in err, err
    assert not (tmp_path / "back").exists()


def test_an_export_missing_a_run_is_refused(exported, tmp_path, capsys):
    shutil.rmtree(sorted(p for p in exported.iterdir() if p.is_dir())[-1])
    assert main(import_argv(exported, tmp_path / "back")) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "of 2 runs, but 1 are there" in err, err


@pytest.mark.parametrize("how", ["garbled", "truncated"])
def test_a_damaged_event_file_is_named_as_damaged(exported, tmp_path, how, capsys):
    (event,) = sorted(exported.glob("*/events.out.tfevents.*"))[:1]
    data = event.read_bytes()
    middle = len(data) // 2
    event.write_bytes(
        data[:middle]
        if how == "truncated"
        else data[:middle] + bytes(b ^ 0xFF for b in data[middle : middle + 4]) + data[middle + 4 :]
    )
    assert main(import_argv(exported, tmp_path / "back")) == 2
    err = capsys.readouterr().err
    assert one_line(err) and f"'{event}' is damaged after" in err and "never logged" not in err, err
    assert ("cut short" if how == "truncated" else "a checksum fails") in err


@pytest.mark.parametrize("kind", ["--tensorboard", "--wandb"])
def test_export_out_at_a_regular_file_is_one_line(finished, tmp_path, kind, capsys):
    target = tmp_path / "a-file"
    target.write_bytes(b"mine")
    for out in (target, target / "below"):
        assert main(["export", str(finished), kind, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert one_line(err) and str(target) in err, err
    assert target.read_bytes() == b"mine"


def test_a_linked_export_folder_is_refused(finished, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ex.MARKER).write_text("{}")
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "tensorboard").symlink_to(elsewhere)
    assert main(["export", str(finished), "--tensorboard", "--out", str(tmp_path / "exp")]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "is a symbolic link" in err
    assert (elsewhere / ex.MARKER).read_text() == "{}"


def test_a_preset_file_that_is_not_utf8_is_one_line(tmp_path, capsys):
    preset = tmp_path / "mine.toml"
    preset.write_bytes(b'name = "mine"\n# caf\xe9 in Latin-1\n')
    assert main(["run", str(preset), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "is not UTF-8 text (byte 0xe9 on line 2)" in err, err


def fill(disk, free_bytes: int) -> None:
    """Fill the disk but `free_bytes` (whole pages)."""
    stats = os.statvfs(disk)
    with open(disk / "filler", "wb") as f:
        f.write(b"\0" * max(stats.f_bavail * stats.f_frsize - free_bytes, 0))


# Free space at which the export fails part of the way through each writer (found on the tiny sweep: the marker
# fits, some runs do not): 12 KiB for the event files, 16 KiB for W&B (inside its run files).
@pytest.mark.parametrize("kind, free", [("--tensorboard", 12 * 1024), ("--wandb", 16 * 1024)])
def test_export_to_a_nearly_full_disk_is_one_line(finished, small_disk, kind, free):
    if kind == "--wandb":
        pytest.importorskip("wandb")
    fill(small_disk, free)
    done = subprocess.run(
        [sys.executable, "-m", "nht_jax.cli", "export", str(finished), kind, "--out", str(small_disk / "exp")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert one_line(done.stderr) and "No space left on device" in done.stderr, done.stderr
    assert "Logging error" not in done.stderr and "Exception" not in done.stderr
    marker = next((small_disk / "exp").glob(f"*/{ex.MARKER}"), None)
    assert marker is None or not json.loads(marker.read_text())["finished"]  # never a finished-looking export
