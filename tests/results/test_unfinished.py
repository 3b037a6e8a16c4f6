"""Unfinished folders (`nht_jax.results.folder`'s unfinished folders): a sweep stopped at step 40 of 80 (checkpoint.npz, no results
yet) is one line naming where it stopped and `nht run --resume DIR` for every reading command and for
`load_results`; with --partial each reads what has been logged, marked as partial in analysis.md, the figures'
titles and the export's note; `nht run --resume DIR` finishes it, and the finished values at the partial steps are
those the partial read gave."""

import json
import shutil

import matplotlib
import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.results.folder import load_results

from ..conftest import stop_tiny_at_step_40


@pytest.fixture(scope="module")
def stopped(tmp_path_factory, advance_spy):
    out = tmp_path_factory.mktemp("unfinished") / "stopped"
    stop_tiny_at_step_40(out, advance_spy)
    assert (out / "checkpoint.npz").exists() and not (out / "summary.csv").exists()
    return out


@pytest.fixture
def unfinished(stopped, tmp_path):
    """A copy of `stopped` for this test alone."""
    return shutil.copytree(stopped, tmp_path / "stopped")


LINE = (
    "is unfinished at step 40/80 (unfinished results: a checkpoint, no summary yet); resume with `nht run --resume {}`"
)


@pytest.mark.parametrize(
    "command",
    [
        ["report", "DIR"],
        ["analyze", "DIR"],
        ["export", "DIR", "--tensorboard"],
        ["export", "DIR", "--wandb"],
        ["paper", "bound", "DIR"],
    ],
)
def test_every_reading_command_says_where_it_stopped_and_how_to_resume(command, unfinished, capsys):
    assert main([str(unfinished) if word == "DIR" else word for word in command]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and LINE.format(unfinished) in err, err
    with pytest.raises(ConfigError, match="unfinished at step 40/80"):
        load_results(unfinished)


def test_partial_results_are_the_logged_steps(unfinished):
    res = load_results(unfinished, partial=True)
    assert res.partial == (40, 80) and list(res.steps) == [0, 10, 20, 30, 40]
    assert res.metrics["test_acc"].shape == (2, 5) and len(res.summary) == 2
    assert {row["weight_decay"] for row in res.summary} == {0.01, 1.0}


def test_the_public_load_results_reads_a_partial_folder_as_the_guide_says(unfinished):
    """Issue 46 item 4: docs/guides/run.md gives `nht_jax.load_results(DIR, partial=True)`; it was a TypeError."""
    import nht_jax

    res = nht_jax.load_results(unfinished, partial=True)
    assert isinstance(res, nht_jax.Results) and res.partial == (40, 80) and list(res.steps) == [0, 10, 20, 30, 40]
    with pytest.raises(ConfigError, match="unfinished at step 40/80"):
        nht_jax.load_results(unfinished)


def test_report_and_analyze_mark_what_they_write(unfinished, capsys):
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text as text, so the title can be read
        assert main(["report", str(unfinished), "--partial", "--format", "png,svg"]) == 0
        assert main(["analyze", str(unfinished), "--partial", "--format", "svg"]) == 0
    capsys.readouterr()
    for name in ("phase_diagram.svg", "trajectories.svg"):
        assert "partial: step 40 of 80" in (unfinished / name).read_text(), name
    assert (unfinished / "phase_diagram.png").exists()
    assert "**partial: step 40 of 80**" in (unfinished / "analysis.md").read_text()
    assert not (unfinished / "summary.csv").exists()  # reading writes no results: the folder stays resumable


def test_a_partial_export_says_so(unfinished, tmp_path, capsys):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    assert main(["export", str(unfinished), "--tensorboard", "--partial", "--out", str(tmp_path / "x")]) == 0
    assert "(partial: step 40 of 80)" in capsys.readouterr().out
    run = sorted(p for p in (tmp_path / "x" / "tensorboard").iterdir() if p.is_dir())[0]
    (file,) = run.glob("events.out.tfevents.*")
    notes = [
        v.tensor.string_val[0]
        for event in EventFileLoader(str(file)).Load()
        for v in event.summary.value
        if v.tag == "export/text_summary"
    ]
    assert [json.loads(n) for n in notes] == [
        {"wall_time": "progress.log", "partial": True, "partial_step": 40, "partial_of": 80}
    ]
    events = EventAccumulator(str(run), size_guidance={"scalars": 0})
    events.Reload()
    assert [e.step for e in events.Scalars("test/acc")] == [0, 10, 20, 30, 40]


def test_resume_finishes_it_and_the_partial_values_were_the_final_ones(unfinished, capsys):
    partial = load_results(unfinished, partial=True)
    assert main(["run", "--resume", str(unfinished), "--set", "train.steps=5"]) == 2
    assert "leave out --set" in capsys.readouterr().err
    assert main(["run", "--resume", str(unfinished), "--quiet"]) == 0
    assert f"resuming {unfinished} at step 40 of 80" in capsys.readouterr().out
    done = load_results(unfinished)
    assert done.partial is None and len(done.steps) == 9
    for name, values in partial.metrics.items():
        np.testing.assert_array_equal(done.metrics[name][:, :5], values, err_msg=name)


def test_resume_refuses_a_folder_that_is_not_unfinished(finished, capsys):
    assert main(["run", "--resume", str(finished)]) == 2
    assert "holds no unfinished sweep" in capsys.readouterr().err
