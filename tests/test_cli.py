"""The command line end to end on tiny presets, results round-trip, resume after a kill."""

import os
import subprocess
import sys

import numpy as np
import pytest

from nht_jax import sweep
from nht_jax.cli import main
from nht_jax.config import load
from nht_jax.results import load_results

TINY = ["--set", "train.steps=60", "--set", "train.log_every=20", "--set", "model.hidden=[16]"]


def test_run_writes_a_complete_results_directory(tmp_path):
    out = tmp_path / "res"
    assert main(["run", "tiny", *TINY, "--out", str(out), "--quiet"]) == 0
    for name in ("config.toml", "trajectories.npz", "summary.csv", "meta.json", "phase_diagram.png", "trajectories.png"):
        assert (out / name).exists(), name
    assert not (out / "checkpoint.npz").exists()
    res = load_results(out)
    assert res.num_runs == 4 and res.grid_shape == (2, 1, 2, 1, 1, 1)
    assert list(res.steps) == [0, 20, 40, 60]
    assert res.metrics["test_acc"].shape == (4, 4)
    assert res.config.train.steps == 60 and res.config.model.hidden == (16,)
    assert [row["run"] for row in res.summary] == [0, 1, 2, 3]
    assert {"weight_decay", "learning_rate", "seed", "init_scale", "train_fraction", "T_fit", "T_transition", "regime",
            "final_train_acc", "final_test_acc", "norm_init", "norm_peak", "norm_final", "norm_peak_step",
            "diverged"} <= set(res.summary[0])
    np.testing.assert_allclose(res.summary[2]["final_test_acc"], res.metrics["test_acc"][2, -1], rtol=1e-5)
    assert res.select(weight_decay=1.0, seed=1).tolist() == [3]
    assert res.as_grid("norm_sq").shape == (2, 1, 2, 1, 1, 1, 4)


def test_report_redraws_figures(tmp_path):
    out = tmp_path / "res"
    main(["run", "tiny", *TINY, "--out", str(out), "--quiet"])
    (out / "phase_diagram.png").unlink()
    assert main(["report", str(out)]) == 0
    assert (out / "phase_diagram.png").stat().st_size > 1000


def test_killed_sweep_resumes_to_the_same_result(tmp_path, monkeypatch):
    config = load("tiny", ["train.steps=80", "train.log_every=10", "train.chunk_logs=2", "train.checkpoint_every_s=0",
                           "model.hidden=[16]"])
    reference = sweep.run_sweep(config, tmp_path / "ref", progress=False)

    real_compile = sweep.compile_grid
    calls = {"n": 0}

    def compile_then_die_on_third_chunk(trainer, the_plan):
        program = real_compile(trainer, the_plan)

        def advance(states, hparams, n):
            calls["n"] += 1
            if calls["n"] == 3:
                raise KeyboardInterrupt
            return program.advance(states, hparams, n)

        return program.__class__(program.init, program.evaluate, advance, program.plan)

    monkeypatch.setattr(sweep, "compile_grid", compile_then_die_on_third_chunk)
    out = tmp_path / "killed"
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(config, out, progress=False)
    assert (out / "checkpoint.npz").exists() and not (out / "meta.json").exists()
    monkeypatch.setattr(sweep, "compile_grid", real_compile)
    resumed = sweep.run_sweep(config, out, progress=False)
    for name in ("norm_sq", "test_acc", "train_loss"):
        np.testing.assert_allclose(resumed.metrics[name], reference.metrics[name], rtol=1e-6)
    assert not (out / "checkpoint.npz").exists()


def test_a_different_config_does_not_overwrite_results(tmp_path):
    out = tmp_path / "res"
    main(["run", "tiny", *TINY, "--out", str(out), "--quiet"])
    assert main(["run", "tiny", *TINY, "--set", "grid.seed=[5]", "--out", str(out), "--quiet"]) == 2
    assert load_results(out).num_runs == 4


def run_cli(*args, cwd=None):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", "nht_jax.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


@pytest.mark.parametrize("args,needle", [
    (["run", "no-such-preset"], "unknown preset"),
    (["run", "tiny", "--set", "grid.weight_decay=-1"], "weight_decay must be ≥ 0"),
    (["run", "tiny", "--set", "grid.learning_rate=nan"], "finite number"),
    (["run", "tiny", "--set", "train.bogus=1"], "unknown key 'train.bogus'"),
    (["run", "tiny", "--set", "grid.train_fraction=1.5"], "strictly between 0 and 1"),
    (["run", "tiny", "--set", "task.op='/'", "--set", "task.p=30"], "not prime"),
    (["run", "tiny", "--out", "/proc/nht-cannot-write-here"], "cannot write results"),
])
def test_bad_input_exits_nonzero_with_a_message_and_no_traceback(args, needle, tmp_path):
    out = tmp_path / "out"
    result = run_cli(*args, *([] if "--out" in args else ["--out", str(out)]), cwd=tmp_path)
    assert result.returncode == 2
    assert needle in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()  # nothing half-written


def test_presets_lists_every_preset():
    result = run_cli("presets")
    assert result.returncode == 0 and "default" in result.stdout and "tiny" in result.stdout


TINY_IMAGES = ["--set", "train.steps=4", "--set", "train.log_every=2", "--set", "train.batch_size=16",
               "--set", "task.eval_train_size=32", "--set", "task.eval_test_size=32", "--set", "train.eval_batch_size=32",
               "--set", "grid.weight_decay=[0.01, 1.0]", "--set", "grid.rho=[0.5, 1.0]", "--set", "grid.seed=[0]",
               "--set", "task.augment=true", "--set", "train.lr_schedule=cosine"]


def test_tiny_rho_grid_end_to_end_through_the_cli(tmp_path):
    out = tmp_path / "border"
    assert main(["run", "border-digits", *TINY_IMAGES, "--out", str(out), "--quiet"]) == 0
    for name in ("phase_lambda_rho.png", "clean_vs_rho.png", "layer_norms.png", "phase_diagram.png"):
        assert (out / name).stat().st_size > 1000, name
    res = load_results(out)
    assert res.num_runs == 4 and res.grid_shape == (2, 1, 1, 1, 1, 2)
    assert res.select(weight_decay=1.0, rho=0.5).tolist() == [2]
    assert {"rho", "final_shortcut_reliance", "final_coloured_acc", "final_conflicting_acc"} <= set(res.summary[0])
    assert [row["rho"] for row in res.summary] == [0.5, 1.0, 0.5, 1.0]
    assert {"shortcut_reliance", "clean_acc", "layer_norm_sq/conv1", "head_to_first_ratio"} <= set(res.metrics)


@pytest.mark.parametrize("args,needle", [
    (["run", "border-digits", "--set", "grid.rho=[0.5, 1.5]"], "grid.rho (border correlation) must lie in [0, 1]"),
    (["run", "border-digits", "--set", "grid.rho=nan"], "finite number"),
    (["run", "border-digits", "--set", "task.border_width=12"], "covers at least half of the 24×24 image"),
    (["run", "border-digits", "--set", "analysis.transition_metric=worst_group_acc"], "not recorded for this image task"),
    (["run", "cifar10-border", "--set", "task.data_dir='EMPTY'"], "not prepared: no dataset_info.json in"),
    (["run", "celeba", "--set", "task.target_attribute=Smilng"], "Did you mean 'Smiling'"),
    (["run", "waterbirds", "--set", "task.data_dir='EMPTY'"], "no metadata.csv in"),
    (["run", "tiny", "--set", "grid.rho=[0.5, 1.0]"], "has no spurious border"),
])
def test_bad_image_input_exits_nonzero_with_a_message_and_nothing_written(args, needle, tmp_path):
    (tmp_path / "empty").mkdir()
    args = [a.replace("EMPTY", str(tmp_path / "empty")) for a in args]
    out = tmp_path / "out"
    result = run_cli(*args, "--out", str(out), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert needle in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()
