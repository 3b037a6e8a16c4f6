"""`nht run --overwrite` and `nht import --overwrite` keep nothing of the experiment they replace (issue 29, item 3):
every file the project writes into a results folder (`results.FOLDER_FILES`, the domains' figures, the export
folders) goes; a file or folder it did not write stays, named in one line. Also: the list is the one the commands
actually write (a new output file must be added to it)."""

import pytest

from nht_jax.cli import main
from nht_jax.results import export as ex
from nht_jax.results import folder as results
from nht_jax.results.folder import load_results

from ..conftest import TINY

OTHER = [*TINY, "--set", "train.steps=60"]  # another configuration
STALE = b"written by the experiment that --overwrite replaces\n"


def plant_everything(folder):
    """Every file the project could have written there, with stale content; an export folder of each kind with its
    marker; and three things of the user's: a file, a folder, and a folder named like an export without a marker."""
    for name in results.known_files():
        (folder / name).write_bytes(STALE)
    for kind in results.EXPORT_FOLDERS:
        (folder / kind / "0_run").mkdir(parents=True)
        (folder / kind / ex.MARKER).write_bytes(b'{"finished": true}')
        (folder / kind / "0_run" / "events.out.tfevents.1.host").write_bytes(STALE)
    (folder / ".meta.json.abcdefgh.tmp").write_bytes(STALE)  # a killed writer's temporary
    (folder / "notes.txt").write_bytes(b"mine")
    (folder / "mine").mkdir()
    (folder / "mine" / "data.bin").write_bytes(b"mine")


def assert_nothing_stale(folder):
    stale = [p.relative_to(folder) for p in folder.rglob("*") if p.is_file() and p.read_bytes() == STALE]
    assert not stale, stale
    assert not any((folder / kind).exists() for kind in results.EXPORT_FOLDERS)
    assert (folder / "notes.txt").read_bytes() == b"mine" and (folder / "mine" / "data.bin").read_bytes() == b"mine"


def test_run_overwrite_removes_every_file_of_the_earlier_experiment(folder, capsys):
    plant_everything(folder)
    assert main(["run", *OTHER, "--out", str(folder), "--quiet", "--overwrite"]) == 0
    out = capsys.readouterr().out
    assert_nothing_stale(folder)
    assert results.check_folder(folder).complete and load_results(folder).config.train.steps == 60
    (note,) = [line for line in out.splitlines() if line.startswith("note: ")]
    assert "mine/, notes.txt, which nht did not write: left as they are" in note


def test_import_overwrite_removes_every_file_of_the_earlier_experiment(finished, folder, tmp_path, capsys):
    pytest.importorskip("tensorboardX")
    ex.write_tensorboard(load_results(finished), tmp_path / "tb")
    plant_everything(folder)
    assert main(["import", str(tmp_path / "tb"), "--out", str(folder), "--overwrite",
                 "--set", "optim.decay_on=weights"]) == 0
    out = capsys.readouterr().out
    assert_nothing_stale(folder)
    assert load_results(folder).config.task.name == "imported"
    assert "note: " in out and "notes.txt, which nht did not write" in out


def test_a_linked_file_is_removed_as_a_link(folder, tmp_path):
    target = tmp_path / "elsewhere.png"
    target.write_bytes(b"theirs")
    (folder / "bound.png").symlink_to(target)
    cleared = results.clear_folder(folder)
    assert "bound.png" in cleared.removed and not (folder / "bound.png").exists()
    assert target.read_bytes() == b"theirs"


def test_the_list_holds_what_the_commands_write(folder, tmp_path):
    """analyze, bound, export (inside the folder) and run: every entry they leave is in the list (or the lock)."""
    pytest.importorskip("tensorboardX")
    for argv in (["analyze", str(folder)], ["bound", str(folder)], ["export", str(folder), "--tensorboard"]):
        assert main(argv) == 0, argv
    known = results.known_files(load_results(folder).config) | {".lock"}
    written = {p.name + ("/" if p.is_dir() else "") for p in folder.iterdir()}
    unknown = {name for name in written if name.rstrip("/") not in known and name.rstrip("/") not in
               results.EXPORT_FOLDERS}
    assert not unknown, f"files the commands write but results.FOLDER_FILES does not list: {unknown}"
    assert set(ex.KINDS.values()) == set(results.EXPORT_FOLDERS) and ex.MARKER == results.EXPORT_MARKER
    cleared = results.clear_folder(folder)
    assert cleared.left == () and sorted(p.name for p in folder.iterdir()) == [".lock"]
