"""The command line end to end on tiny presets: a complete results directory, the report, bad input (exit 2,
a message, nothing written), presets. Error cases run in-process; one subprocess checks "no traceback"."""

import os
import subprocess
import sys

import numpy as np
import pytest

from nht_jax.cli import main
from nht_jax.results.folder import load_results

TINY = ["--set", "train.steps=60", "--set", "train.log_every=20", "--set", "model.hidden=[16]"]


@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "res"
    assert main(["run", "tiny", *TINY, "--out", str(out), "--quiet"]) == 0
    return out


def test_no_figures_draws_nothing_and_writes_the_same_results(tiny_results, tmp_path, capsys):
    """`nht run --no-figures`: no PNG (neither live.png per chunk nor the folder's figures), the same trajectories
    and summary as the run that drew them, and a last line saying how to draw them."""
    out = tmp_path / "bare"
    capsys.readouterr()
    assert main(["run", "tiny", *TINY, "--out", str(out), "--quiet", "--no-figures"]) == 0
    assert not list(out.glob("*.png")) and (out / "live.csv").exists()
    assert f"figures: none drawn (--no-figures); `nht report {out}` draws them" in capsys.readouterr().out
    assert (out / "summary.csv").read_text() == (tiny_results / "summary.csv").read_text()
    drawn, bare = load_results(tiny_results), load_results(out)
    for name in drawn.metrics:
        assert bare.metrics[name].tobytes() == drawn.metrics[name].tobytes(), name
    assert main(["report", str(out)]) == 0 and (out / "trajectories.png").exists() and (out / "live.png").exists()


def test_run_writes_a_complete_results_directory(tiny_results):
    out = tiny_results
    for name in (
        "config.toml",
        "trajectories.npz",
        "summary.csv",
        "meta.json",
        "phase_diagram.png",
        "trajectories.png",
    ):
        assert (out / name).exists(), name
    assert not (out / "checkpoint.npz").exists()
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    res = load_results(out)
    assert res.num_runs == 4 and res.grid_shape == (2, 1, 2, 1, 1)
    assert list(res.axes) == ["weight_decay", "learning_rate", "seed", "init_scale", "train_fraction"]
    assert list(res.steps) == [0, 20, 40, 60]
    assert res.metrics["test_acc"].shape == (4, 4)
    assert res.config.train.steps == 60 and res.config.model.hidden == (16,)
    assert [row["run"] for row in res.summary] == [0, 1, 2, 3]
    assert {
        "weight_decay",
        "learning_rate",
        "seed",
        "init_scale",
        "train_fraction",
        "T_fit",
        "T_transition",
        "regime",
        "final_train_acc",
        "final_test_acc",
        "norm_init",
        "norm_peak",
        "norm_final",
        "norm_peak_step",
        "diverged",
    } <= set(res.summary[0])
    assert "rho" not in res.summary[0]  # a token grid has no border-correlation axis
    np.testing.assert_allclose(res.summary[2]["final_test_acc"], res.metrics["test_acc"][2, -1], rtol=1e-5)
    assert res.select(weight_decay=1.0, seed=1).tolist() == [3]
    assert res.as_grid("norm_sq").shape == (2, 1, 2, 1, 1, 4)
    np.testing.assert_array_equal(res.as_grid("norm_sq")[1, 0, 1, 0, 0], res.metrics["norm_sq"][3])


def test_report_redraws_figures(tiny_results, capsys):
    (tiny_results / "phase_diagram.png").unlink()
    assert main(["report", str(tiny_results)]) == 0
    assert (tiny_results / "phase_diagram.png").stat().st_size > 1000
    assert "regimes:" in capsys.readouterr().out


def test_default_out_is_runs_out_under_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "tiny", *TINY, "--set", "grid.seed=[0]", "--set", "grid.weight_decay=[1.0]", "--quiet"]) == 0
    assert (tmp_path / "runs" / "out" / "tiny" / "meta.json").exists()


@pytest.mark.parametrize(
    "args,needle",
    [
        (["run", "no-such-preset"], "unknown preset"),
        (["run", "defualt"], "Did you mean 'default'"),
        (["run", "tiny", "--set", "grid.weight_decay=-1"], "weight_decay must be ≥ 0"),
        (["run", "tiny", "--set", "grid.learning_rate=nan"], "finite number"),
        (["run", "tiny", "--set", "train.bogus=1"], "unknown key 'train.bogus'"),
        (["run", "tiny", "--set", "grid.train_fraction=1.5"], "strictly between 0 and 1"),
        (["run", "tiny", "--set", "task.op='/'", "--set", "task.p=30"], "not prime"),
        (["run", "tiny", "--set", "grid.rho=[0.5, 1.0]"], "not an axis of domain 'modular'"),
        (["run", "tiny", "--set", "task.name=imagez"], "Did you mean 'images'"),
        (["run", "border-digits", "--set", "grid.rho=[0.5, 1.5]"], "grid.rho (border correlation) must lie in [0, 1]"),
        (["run", "border-digits", "--set", "grid.rho=nan"], "finite number"),
        (["run", "border-digits", "--set", "task.border_width=12"], "covers at least half of the 24×24 image"),
        (
            ["run", "border-digits", "--set", "analysis.transition_metric=worst_group_acc"],
            "not recorded by this 'images'",
        ),
        (["run", "cifar10-border", "--set", "task.data_dir='EMPTY'"], "not prepared: no dataset_info.json in"),
        (["run", "celeba", "--set", "task.target_attribute=Smilng"], "Did you mean 'Smiling'"),
        (["run", "waterbirds", "--set", "task.data_dir='EMPTY'"], "no metadata.csv in"),
    ],
)
def test_bad_input_exits_2_with_a_message_and_nothing_written(args, needle, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    args = [a.replace("EMPTY", str(tmp_path / "empty")) for a in args]
    out = tmp_path / "out"
    assert main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.startswith("nht: error:")
    assert not out.exists()  # nothing half-written


def test_unwritable_out_exits_2(capsys):
    assert main(["run", "tiny", "--out", "/proc/nht-cannot-write-here"]) == 2
    assert "cannot write results to '/proc/nht-cannot-write-here'" in capsys.readouterr().err


def test_a_bad_command_line_prints_no_traceback(tmp_path):
    """The one subprocess: what a user sees in a terminal."""
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "nht_jax.cli", "run", "tiny", "--set", "grid.weight_decay=-1", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert result.returncode == 2
    assert "weight_decay must be ≥ 0" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def test_presets_lists_every_preset(capsys):
    assert main(["presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = {line.split()[0] for line in lines}
    assert {"default", "tiny", "border-digits", "sparse-parity", "companion-transformer"} <= names
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines)  # every preset has a description


def test_output_into_a_closed_pipe_ends_quietly():
    """`nht presets | head`: when the reader has gone, nht ends with 128 + SIGPIPE and no traceback. The pipe's
    read end is closed before nht starts, so its first line already meets the closed pipe (no race)."""
    import os
    import signal
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "nht_jax.cli", "presets"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write)
    assert result.returncode == 128 + signal.SIGPIPE and "Traceback" not in result.stderr, result.stderr
