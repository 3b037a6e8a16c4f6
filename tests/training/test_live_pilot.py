"""`live.calibration` given a pilot that cannot calibrate the sweep (issue 46 item 4): a finished sweep of
another preset (another task, or the same task with another model), an unfinished one, a damaged one. Each stops the
sweep before anything trains, in one line naming the setting and what to do; a pilot of the same task and model with
another grid and budget is taken."""

import shutil

import pytest

from nht_jax.cli import main

from ..conftest import TINY


def run_with_pilot(pilot, out, capsys, *extra) -> tuple[int, str]:
    code = main(["run", *TINY, "--set", f"live.calibration={pilot}", *extra, "--out", str(out), "--quiet"])
    return code, capsys.readouterr().err


def assert_refused_before_training(code, err, out, *said):
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("nht: error: live.calibration = "), err
    for text in said:
        assert text in err, err
    assert not (out / "checkpoint.npz").exists() and not (out / "trajectories.npz").exists()


def test_a_pilot_of_another_task_is_refused(tmp_path, capsys):
    pilot = tmp_path / "toy"
    assert (
        main(
            [
                "run",
                "toy-linear",
                "--set",
                "train.steps=200",
                "--set",
                "grid.learning_rate=[0.3]",
                "--set",
                "grid.weight_decay=[0.01, 0.02]",
                "--out",
                str(pilot),
                "--quiet",
                "--no-figures",
            ]
        )
        == 0
    )
    capsys.readouterr()
    code, err = run_with_pilot(pilot, tmp_path / "out", capsys)
    assert_refused_before_training(
        code,
        err,
        tmp_path / "out",
        "its runs (toy-linear) train another task than this sweep (tiny): name 'toy_linear' there, 'modular' here",
    )


def test_a_pilot_of_another_model_is_refused_and_one_of_another_grid_is_taken(finished, tmp_path, capsys):
    code, err = run_with_pilot(finished, tmp_path / "wider", capsys, "--set", "model.hidden=[16]")
    assert_refused_before_training(
        code, err, tmp_path / "wider", "train another model than this sweep", "hidden [8] there, [16] here"
    )
    code, err = run_with_pilot(
        finished, tmp_path / "other-grid", capsys, "--set", "grid.weight_decay=[0.5]", "--set", "train.steps=20"
    )
    assert code == 0, err


def test_an_unfinished_or_damaged_pilot_is_refused(finished, tmp_path, capsys):
    unfinished = shutil.copytree(finished, tmp_path / "unfinished")
    (unfinished / "meta.json").unlink()  # what a sweep stopped before its results leaves (no meta.json)
    code, err = run_with_pilot(unfinished, tmp_path / "a", capsys)
    assert_refused_before_training(code, err, tmp_path / "a", "holds unfinished results: meta.json is missing")
    damaged = shutil.copytree(finished, tmp_path / "damaged")
    (damaged / "summary.csv").write_text("run,regime\n0,weak\n")
    code, err = run_with_pilot(damaged, tmp_path / "b", capsys)
    assert_refused_before_training(code, err, tmp_path / "b", "holds damaged results: summary.csv is damaged")
    code, err = run_with_pilot(tmp_path / "nowhere", tmp_path / "c", capsys)
    assert_refused_before_training(code, err, tmp_path / "c", "holds no results")


@pytest.mark.parametrize("field", ["task", "model"])
def test_the_mismatch_names_the_section(field, finished):
    from nht_jax import experiment
    from nht_jax.results.folder import load_results
    from nht_jax.training.live import pilot_mismatch

    pilot = load_results(finished).config
    same = experiment.with_overrides(pilot, ["grid.weight_decay=[3.0]", "train.steps=80"])
    assert pilot_mismatch(pilot, same) == ""
    other = experiment.with_overrides(pilot, ["task.p=29"] if field == "task" else ["model.hidden=[4]"])
    assert f"train another {field} than this sweep" in pilot_mismatch(pilot, other)
