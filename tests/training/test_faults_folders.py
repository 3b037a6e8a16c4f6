"""A results folder is complete or it is not (`nht_jax.results.folder.check_folder`): each of its four files
truncated, garbled or deleted, under `nht report`, `nht analyze`, `nht bound` and `nht run`: one line, exit 2,
nothing written over what was there; `nht run` of the same configuration finishes a folder whose only loss is
meta.json (a redraw). Also: another configuration over a folder without meta.json, folders of older code (no
manifest), a failed --overwrite, and the empty cells of runs diverged from step 0."""

import csv
import json
import shutil

import numpy as np
import pytest

from nht_jax.cli import main
from nht_jax.results import folder as results

from ..conftest import TINY

OTHER = [*TINY, "--set", "train.steps=60"]  # another configuration
FILES = ("summary.csv", "trajectories.npz", "config.toml", "meta.json")
COMMANDS = ("report", "analyze", "paper bound", "run")


def damage(path, how: str) -> None:
    data = path.read_bytes()
    if how == "deleted":
        path.unlink()
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:  # garbled: a few bytes in the middle replaced, the size kept
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes(b ^ 0xA5 for b in data[middle : middle + 8]) + data[middle + 8 :])


def contents(out) -> dict:
    """Every file of the folder but the lock (held, then released, by the commands): name → bytes."""
    return {p.name: p.read_bytes() for p in out.iterdir() if p.name != ".lock"}


def command(name: str, out) -> list[str]:
    return ["run", *TINY, "--out", str(out), "--quiet"] if name == "run" else [*name.split(), str(out)]


@pytest.mark.parametrize("how", ["truncated", "garbled", "deleted"])
@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("verb", COMMANDS)
def test_a_damaged_file_ends_in_one_line_and_exit_2_with_nothing_written(folder, name, how, verb, capsys):
    damage(folder / name, how)
    before = contents(folder)
    code = main(command(verb, folder))
    out, err = capsys.readouterr()
    after = contents(folder)
    if verb == "run" and name == "meta.json":  # same configuration, intact results: meta.json again, a redraw
        assert code == 0, err
        assert results.check_folder(folder).complete
        assert "meta.json written again" in out and "already holds finished results" in out
        assert {k: v for k, v in after.items() if k != "meta.json"} == {
            k: v for k, v in before.items() if k != "meta.json"
        }
        assert "recovered" in json.loads(after["meta.json"])
        return
    assert code == 2
    assert err.startswith("nht: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{name} is" in err
    hint = "--overwrite" if verb == "run" or name != "meta.json" else "to finish them"
    assert hint in err
    if verb == "run":
        assert "`nht run`" not in err  # never "run the command that just failed"
    assert after == before  # the phase diagram (and everything else) untouched


def test_the_phase_diagram_is_never_replaced_without_summary_csv(folder, capsys):
    drawn = (folder / "phase_diagram.png").read_bytes()
    (folder / "summary.csv").unlink()
    for verb in ("report", "analyze", "paper bound", "run"):
        assert main(command(verb, folder)) == 2
        assert "summary.csv is missing" in capsys.readouterr().err
        assert (folder / "phase_diagram.png").read_bytes() == drawn
    assert not (folder / "analysis.md").exists() and not (folder / "bound_table.csv").exists()


def test_another_configuration_never_trains_over_results_without_meta_json(folder, capsys):
    (folder / "meta.json").unlink()
    before = contents(folder)
    assert main(["run", *OTHER, "--out", str(folder), "--quiet"]) == 2
    assert "different configuration" in capsys.readouterr().err
    assert contents(folder) == before


def test_the_same_configuration_finishes_an_unfinished_folder_by_training(folder, capsys):
    (folder / "meta.json").unlink()
    (folder / "trajectories.npz").unlink()
    assert main(["run", *TINY, "--out", str(folder), "--quiet"]) == 0
    assert "unfinished results of this configuration" in capsys.readouterr().out
    found = results.check_folder(folder)
    assert found.complete and found.manifest and "recovered" not in found.meta


def test_a_folder_of_older_code_without_a_manifest_loads_and_is_checked_by_reading(folder, capsys):
    meta = json.loads((folder / "meta.json").read_text())
    del meta["files"]
    (folder / "meta.json").write_text(json.dumps(meta))
    assert main(["report", str(folder)]) == 0
    assert not results.check_folder(folder).manifest
    lines = (folder / "summary.csv").read_text().splitlines(keepends=True)
    (folder / "summary.csv").write_text("".join(lines[:-1]))  # the last run's row lost
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "summary.csv does not hold one complete row per run" in err and "checked by reading them" in err


@pytest.mark.parametrize("change", ["config.toml", "trajectories.npz"])
def test_without_a_manifest_a_mix_of_two_configurations_is_refused(folder, tmp_path, change, capsys):
    other = tmp_path / "other"
    assert main(["run", *OTHER, "--out", str(other), "--quiet"]) == 0
    for out in (folder, other):
        meta = json.loads((out / "meta.json").read_text())
        del meta["files"]
        (out / "meta.json").write_text(json.dumps(meta))
    shutil.copy(other / change, folder / change)
    assert main(["report", str(folder)]) == 2
    assert "damaged results" in capsys.readouterr().err


def test_a_failed_overwrite_leaves_nothing_that_passes_as_complete(folder, monkeypatch, capsys):
    def disk_full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results, "write_summary", disk_full)
    assert main(["run", *OTHER, "--out", str(folder), "--quiet", "--overwrite"]) == 2
    assert "No space left on device" in capsys.readouterr().err
    monkeypatch.undo()
    assert not (folder / "meta.json").exists() and not (folder / "config.toml").exists()
    assert main(["report", str(folder)]) == 2
    assert "unfinished results" in capsys.readouterr().err
    assert main(["run", *OTHER, "--out", str(folder), "--quiet"]) == 0  # the same command finishes it
    res = results.load_results(folder)
    assert res.config.train.steps == 60 and len(res.summary) == res.num_runs
    assert "recovered" not in res.meta  # trained again: the old summary was never taken for the new one


def test_runs_diverged_from_step_0_leave_empty_cells_that_every_command_reads(tmp_path, capsys):
    out = tmp_path / "diverged"  # an init scale of 1e30: ‖θ‖² overflows float32 before the first step
    assert main(["run", *TINY, "--set", "grid.init_scale=[1e30]", "--out", str(out), "--quiet"]) == 0
    with open(out / "summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["regime"], r["norm_peak"], r["norm_peak_step"]) for r in rows] == [("diverged", "", "")] * len(rows)
    assert all(np.isnan(row["norm_peak"]) for row in results.read_summary(out / "summary.csv"))
    for verb in ("report", "analyze", "paper bound"):
        assert main([*verb.split(), str(out)]) == 0, capsys.readouterr().err
    assert "Traceback" not in capsys.readouterr().err
