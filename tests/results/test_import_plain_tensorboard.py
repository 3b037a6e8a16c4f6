"""A plain PyTorch TensorBoard log (issue 46 item 6): `SummaryWriter()`'s own folder names (`Dec06_03-00-00_host`,
no axis=value), no hparams plugin, no ‖θ‖² scalar. One such run imports what it has (its η and λ from --set,
‖θ‖² kept as not logged, each note saying so); `nht analyze` runs what needs no norm and says, one line each, which
analyses need one; `nht report` draws; `nht bound` refuses in one line. Several runs that name no hyperparameters
are refused in one line (nht does not guess which λ each ran)."""

import math

import numpy as np
import pytest

from nht_jax.cli import main
from nht_jax.results.folder import load_results

NORM_ANALYSES = ("separation", "predictor", "early_warning", "forecast", "forecast_tfit")


def write_pytorch_log(root, runs=1):
    """What a loop with `torch.utils.tensorboard.SummaryWriter()` logs (tensorboardX: the same writer): loss and
    accuracies under PyTorch's tutorial tags, a run folder per start named by date and host."""
    tbx = pytest.importorskip("tensorboardX")
    for k in range(runs):
        with tbx.SummaryWriter(str(root / f"Dec06_03-0{k}-00_host")) as writer:
            for step in range(0, 201, 10):
                writer.add_scalar("Loss/train", math.exp(-step / 30) + 0.01, step)
                writer.add_scalar("Accuracy/train", min(1.0, step / 40), step)
                writer.add_scalar("Accuracy/test", min(1.0, max(0.0, (step - 40) / 100)), step)
    return root


def test_one_run_without_hyperparameters_or_a_norm_imports_what_it_has(tmp_path, capsys):
    logs = write_pytorch_log(tmp_path / "runs")
    out = tmp_path / "res"
    assert main(["import", str(logs), "--out", str(out)]) == 2  # η and λ: never assumed
    assert "--set grid.learning_rate=VALUE" in capsys.readouterr().err
    assert (
        main(
            [
                "import",
                str(logs),
                "--out",
                str(out),
                "--set",
                "grid.learning_rate=0.001",
                "--set",
                "grid.weight_decay=0.1",
            ]
        )
        == 0
    )
    said = capsys.readouterr().out
    assert "note: no ‖θ‖² (norm_sq) in the logs: imported as not logged (NaN)" in said
    assert "note: run Dec06_03-00-00_host names no hyperparameters" in said
    res = load_results(out)
    assert res.not_logged == ("norm_sq",) and np.isnan(res.metrics["norm_sq"]).all()
    assert res.metrics["finite"].all() and res.summary[0]["regime"] == "intermediate"
    assert res.summary[0]["T_fit"] == 40 and res.summary[0]["T_transition"] == 140

    assert main(["analyze", str(out)]) == 0
    printed = capsys.readouterr().out
    for name in NORM_ANALYSES:
        line = f"- {name}: not run: it needs ‖θ‖² (norm_sq), which these results do not hold (not logged)."
        assert printed.count(line) == 1 and line in (out / "analysis.md").read_text()
    assert not (out / "separation.csv").exists() and (out / "delay_fits.csv").exists()
    verdicts = {row.split(",")[0]: row for row in (out / "predictions.csv").read_text().splitlines()[1:]}
    for p in ("P1", "P5"):
        assert "needs ‖θ‖² (norm_sq), which these results do not hold" in verdicts[p]

    assert main(["report", str(out)]) == 0 and (out / "trajectories.png").is_file()
    assert main(["paper", "bound", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds no ‖θ‖² (norm_sq" in err and not (out / "bound_table.csv").exists()


def test_several_runs_without_hyperparameters_are_refused_in_one_line(tmp_path, capsys):
    logs = write_pytorch_log(tmp_path / "runs", runs=2)
    assert (
        main(
            [
                "import",
                str(logs),
                "--out",
                str(tmp_path / "res"),
                "--set",
                "grid.learning_rate=0.001",
                "--set",
                "grid.weight_decay=0.1",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "nht: error: 2 of the 2 runs name no hyperparameters (Dec06_03-00-00_host, Dec06_03-01-00_host"
    )
    assert f"nht import '{logs / 'Dec06_03-00-00_host'}' --out DIR --set grid.weight_decay=…" in err
    assert not (tmp_path / "res").exists()


def test_a_norm_logged_under_another_name_is_still_asked_for(tmp_path, capsys):
    """A log with a name that reads as a norm is not imported as norm-less: the rename that squares it is named."""
    tbx = pytest.importorskip("tensorboardX")
    with tbx.SummaryWriter(str(tmp_path / "runs" / "lambda=0.1,lr=0.001")) as writer:
        for step in range(0, 50, 10):
            for tag, value in (("Accuracy/train", 1.0), ("Accuracy/test", 1.0), ("weights/l2_norm", 3.0)):
                writer.add_scalar(tag, value, step)
    assert main(["import", str(tmp_path / "runs"), "--out", str(tmp_path / "res")]) == 2
    assert "--rename weights/l2_norm=param_norm" in capsys.readouterr().err
