"""Sweeps into results folders: resume after a kill really uses the checkpoint, time-based checkpoints,
resuming under other execution settings, --overwrite, another configuration's results or checkpoint,
the finished-results branch, a corrupted checkpoint, Ctrl-C."""

import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.experiment import load
from nht_jax.results import folder as results
from nht_jax.training import sweep

SETTINGS = [
    "train.steps=80",
    "train.log_every=10",
    "execution.chunk_logs=2",
    "execution.checkpoint_every_s=0",
    "model.hidden=[16]",
    "grid.weight_decay=[0.01, 1.0]",
    "grid.seed=[0]",
]


def config(*extra):
    return load("tiny", [*SETTINGS, *extra])


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return sweep.run_sweep(config(), tmp_path_factory.mktemp("ref") / "ref", progress=False)


def kill_on_third_chunk(out, monkeypatch, advances, *extra):
    killer = advances(die_on=3)
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(config(*extra), out, progress=False)
    monkeypatch.undo()
    return killer


def test_killed_sweep_resumes_from_its_checkpoint(tmp_path, monkeypatch, capsys, reference, advances):
    out = tmp_path / "killed"
    kill_on_third_chunk(out, monkeypatch, advances)
    assert (out / "checkpoint.npz").exists() and not (out / "meta.json").exists()
    logs_done, _, saved = results.load_checkpoint(out / "checkpoint.npz", reference.meta["config_digest"])
    assert logs_done == 4 and saved["norm_sq"].shape == (2, 5)  # two chunks of 2 logs, plus step 0
    counter = advances()
    resumed = sweep.run_sweep(config(), out, progress=False)
    assert counter.logs == 4  # only the 4 logs after the checkpoint are trained again
    assert f"resuming {out} at step 40 of 80" in capsys.readouterr().out
    np.testing.assert_allclose(resumed.metrics["norm_sq"], reference.metrics["norm_sq"], rtol=1e-6)
    assert set(resumed.metrics) == set(reference.metrics)
    for name in reference.metrics:
        np.testing.assert_allclose(resumed.metrics[name], reference.metrics[name], rtol=1e-5, atol=1e-7, err_msg=name)
    assert not (out / "checkpoint.npz").exists()


def test_resume_under_other_execution_settings(tmp_path, monkeypatch, capsys, reference, advances):
    out = tmp_path / "killed"
    kill_on_third_chunk(out, monkeypatch, advances)
    counter = advances()
    resumed = sweep.run_sweep(config("execution.strategy=vmap", "execution.chunk_logs=4"), out, progress=False)
    assert counter.logs == 4 and "resuming" in capsys.readouterr().out
    for name in reference.metrics:
        np.testing.assert_allclose(resumed.metrics[name], reference.metrics[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_checkpoints_follow_the_clock(tmp_path, monkeypatch, advances):
    saves = []
    real_save = results.save_checkpoint
    monkeypatch.setattr(results, "save_checkpoint", lambda *a: (saves.append(a[2]), real_save(*a)))
    sweep.run_sweep(config(), tmp_path / "often", progress=False)
    assert saves == [2, 4, 6]  # after every chunk but the last (checkpoint_every_s = 0)
    assert not (tmp_path / "often" / "checkpoint.npz").exists()  # removed once the results are complete
    saves.clear()
    out = tmp_path / "rarely"
    kill_on_third_chunk(out, monkeypatch, advances, "execution.checkpoint_every_s=3600")
    assert saves == [] and not (out / "checkpoint.npz").exists()


def test_a_checkpoint_of_another_configuration_is_refused(tmp_path, monkeypatch, advances):
    out = tmp_path / "killed"
    kill_on_third_chunk(out, monkeypatch, advances)
    with pytest.raises(ConfigError, match="checkpoint of a different configuration"):
        sweep.run_sweep(config("train.steps=100"), out, progress=False)
    counter = advances()
    res = sweep.run_sweep(config("train.steps=100"), out, progress=False, overwrite=True)
    assert counter.logs == 10 and res.config.train.steps == 100  # --overwrite trains from step 0


def test_a_corrupted_checkpoint_says_what_to_do(tmp_path):
    out = tmp_path / "broken"
    out.mkdir()
    (out / "checkpoint.npz").write_bytes(b"not a zip file")
    with pytest.raises(ConfigError, match="not a readable checkpoint.*Delete it.*--overwrite"):
        sweep.run_sweep(config(), out, progress=False)


def test_finished_results_are_redrawn_not_retrained(tmp_path, monkeypatch, capsys, reference, advances):
    out = tmp_path / "done"
    sweep.run_sweep(config(), out, progress=False)
    assert not (out / "phase_diagram.png").exists()  # the run layer draws nothing
    counter = advances()
    args = [
        "run",
        "tiny",
        *sum((["--set", s] for s in [*SETTINGS, "execution.strategy=vmap"]), []),
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(args) == 0  # nht run on finished results: drawn (here for the first time), not retrained
    assert counter.calls == [] and (out / "phase_diagram.png").exists()
    assert "already holds finished results" in capsys.readouterr().out
    again = results.load_results(out)
    np.testing.assert_array_equal(again.metrics["norm_sq"], reference.metrics["norm_sq"])
    with pytest.raises(ConfigError, match="different configuration"):
        sweep.run_sweep(config("grid.seed=[3]"), out, progress=False)
    retrained = sweep.run_sweep(config("grid.seed=[3]"), out, progress=False, overwrite=True)
    assert counter.logs == 8 and retrained.hparams["seed"].tolist() == [3, 3]


def test_ctrl_c_exits_130_and_keeps_the_checkpoint(tmp_path, monkeypatch, capsys, advances):
    advances(die_on=3)
    out = tmp_path / "interrupted"
    args = ["run", "tiny", *sum((["--set", s] for s in SETTINGS), []), "--out", str(out), "--quiet"]
    assert main(args) == 130
    assert "interrupted; the last checkpoint is kept" in capsys.readouterr().err
    assert (out / "checkpoint.npz").exists()
