"""A partial analysis never outlives the results it describes (issue 46 item 3, `nht_jax.results.partial_analysis`):
`nht analyze --partial` of a sweep stopped at step 40 of 80 marks every table it writes in two columns that csv and
pandas read (and the sidecar analysis_partial.json marks the folder); the resumed sweep's end removes that analysis
before writing its results; a finished `nht analyze` replaces a partial one and removes what it does not replace."""

import csv
import io
import json
import shutil

import pytest

from nht_jax.cli import main
from nht_jax.results import partial_analysis
from nht_jax.results.folder import read_summary

from ..conftest import stop_tiny_at_step_40


@pytest.fixture(scope="module")
def analysed(tmp_path_factory, advance_spy):
    """A sweep stopped at step 40 of 80, then `nht analyze --partial` → (folder, the files the analysis wrote)."""
    out = tmp_path_factory.mktemp("partial-analysis") / "stopped"
    stop_tiny_at_step_40(out, advance_spy)
    before = set(p.name for p in out.iterdir())
    assert main(["analyze", str(out), "--partial"]) == 0
    return out, sorted(set(p.name for p in out.iterdir()) - before)


@pytest.fixture
def unfinished(analysed, tmp_path):
    """A copy of `analysed`'s folder for this test alone."""
    return shutil.copytree(analysed[0], tmp_path / "stopped")


def tables(names) -> list[str]:
    return [n for n in names if n.endswith(".csv")]


def test_every_table_of_a_partial_analysis_is_marked_in_columns_readers_keep(analysed):
    out, written = analysed
    assert len(tables(written)) >= 8, written  # the tiny sweep: eight of the tables apply
    assert json.loads((out / partial_analysis.SIDECAR).read_text()) == {"step": 40, "of": 80}
    assert "**partial: step 40 of 80**" in (out / "analysis.md").read_text()
    pandas = pytest.importorskip("pandas")
    for name in tables(written):
        text = (out / name).read_text()
        if not text:
            continue  # a table without rows: nothing in it to mistake
        rows = list(csv.DictReader(io.StringIO(text)))
        assert rows and all((r["partial_step"], r["partial_of"]) == ("40", "80") for r in rows), name
        assert list(csv.reader(io.StringIO(text)))[0][-2:] == ["partial_step", "partial_of"], name
        frame = pandas.read_csv(out / name)
        assert (frame["partial_step"] == 40).all() and (frame["partial_of"] == 80).all(), name
        assert all(r["partial_step"] == 40 for r in read_summary(out / name)), name


def test_the_resumed_sweep_removes_the_partial_analysis_and_analyze_writes_unmarked_tables(
    analysed, unfinished, capsys
):
    written = analysed[1]
    assert main(["run", "--resume", str(unfinished), "--quiet"]) == 0
    said = capsys.readouterr().out
    assert "removed the partial analysis of the unfinished sweep (" in said and "nht analyze" in said
    assert "removed the partial analysis" in (unfinished / "progress.log").read_text()
    left = [name for name in written if (unfinished / name).exists()]
    assert left == [], f"the step-40 analysis outlived the finished results: {left}"
    assert main(["analyze", str(unfinished)]) == 0
    capsys.readouterr()
    assert not (unfinished / partial_analysis.SIDECAR).exists()
    assert "partial: step" not in (unfinished / "analysis.md").read_text()
    for name in tables(written):
        header = (unfinished / name).read_text().split("\n", 1)[0]
        assert "partial_step" not in header, name


def test_a_finished_analysis_replaces_a_partial_one_and_removes_what_it_does_not_replace(folder, capsys):
    """A finished folder still holding a partial analysis (as a sweep of older code or a killed `nht analyze`
    leaves it): its sidecar, a marked predictions.csv, and an emergence table and figure (an analysis that applied
    at the partial step only) → `nht analyze` rewrites predictions.csv unmarked, removes emergence.*, then the
    sidecar."""
    partial_analysis.begin_partial(folder, 20, 40)
    (folder / "predictions.csv").write_text("id,verdict,partial_step,partial_of\nP1,ok,20,40\n")
    (folder / "emergence.csv").write_text("lambda,ratio,partial_step,partial_of\n1,2,20,40\n")
    (folder / "emergence.svg").write_text("<svg/>")
    assert main(["analyze", str(folder)]) == 0
    capsys.readouterr()
    assert "partial_step" not in (folder / "predictions.csv").read_text()
    for name in ("emergence.csv", "emergence.svg", partial_analysis.SIDECAR):
        assert not (folder / name).exists(), name


def test_without_a_partial_analysis_nothing_is_removed(folder, capsys):
    """No sidecar: a file under an analysis's name that this analysis does not write is left as it is."""
    (folder / "emergence.csv").write_text("kept\n")
    assert main(["analyze", str(folder)]) == 0
    capsys.readouterr()
    assert (folder / "emergence.csv").read_text() == "kept\n"
    assert partial_analysis.remove_partial(folder) == [] and (folder / "analysis.md").exists()


def test_mark_csv_keeps_every_cell_and_quoting():
    text = 'a,b\n1,"x, y"\n,"say ""hi"""\n'
    marked = partial_analysis.mark_csv(text, 40, 80)
    assert list(csv.reader(io.StringIO(marked))) == [
        ["a", "b", "partial_step", "partial_of"],
        ["1", "x, y", "40", "80"],
        ["", 'say "hi"', "40", "80"],
    ]
    assert partial_analysis.mark_csv("", 40, 80) == ""
