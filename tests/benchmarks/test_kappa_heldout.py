"""benchmarks/kappa_heldout.py on the planted folders of tests/analysis/test_tfit_forecast.py, every run contracting
by the first-passage law: seeds 0–2 at κ = 0.3 calibrate, seed 3 at κ = 0.2 is scored. So every scored run's own law
κ (`kappa_law`) is 0.2 under every κ rule, the calibration's (its median, per λ, and the model's e^a) is 0.3 with
slope b = 0, each forecast comes early (r < 0) by an error that differs with λ; --tables writes the score row per rule
(the mean and the median of those errors), the residuals by λ and seed, and the calibration's law κ per λ."""

import csv

import numpy as np
import pytest

from benchmarks import kappa_heldout

from ..analysis import test_tfit_forecast as planted_folders

LAMS = [0.3, 0.4, 0.6, 0.8]
CAL_KAPPA, EVAL_KAPPA = 0.3, 0.2


def test_every_scored_run_carries_its_own_law_kappa_and_the_tables_are_its_scores(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(planted_folders, "LAMS", LAMS)
    monkeypatch.setattr(planted_folders, "KAPPA", CAL_KAPPA)
    cal, _ = planted_folders.planted(tmp_path / "cal")
    monkeypatch.setattr(planted_folders, "KAPPA", EVAL_KAPPA)
    new, _ = planted_folders.planted(tmp_path / "new", seeds=(3,))
    out, tables = tmp_path / "runs.csv", tmp_path / "tables"
    argv = [str(cal), str(new), "--pools", "all,model", "--csv", str(out), "--tables", str(tables)]
    assert kappa_heldout.main(argv) == 0
    rows = read(out)
    assert rows == read(tables / "runs.csv")
    assert {r["pool"] for r in rows} == {"all", "model"} and {r["seed"] for r in rows} == {"3"}
    assert len({r["lambda"] for r in rows}) >= 3
    assert np.array([float(r["kappa_law"]) for r in rows]) == pytest.approx(EVAL_KAPPA, rel=1e-6)
    assert np.array([float(r["kappa"]) for r in rows]) == pytest.approx(CAL_KAPPA, rel=1e-6)
    assert all(float(r["r"]) < 0 for r in rows)
    text = capsys.readouterr().out
    assert "### kappa_pool = model" in text and "kappa_law_median" in text and "b 95 % seed-bootstrap" in text

    scores = {r["pool"]: r for r in read(tables / "scores.csv")}
    assert set(scores) == {"all", "model"}
    for pool, r in scores.items():
        errors = [float(row["ape"]) for row in rows if row["pool"] == pool]
        assert np.mean(errors) != pytest.approx(np.median(errors), rel=1e-4)  # the two scores are told apart
        assert int(r["n_forecast"]) == len(errors)
        assert float(r["mape"]) == pytest.approx(np.mean(errors), rel=1e-5)
        assert float(r["median_ape"]) == pytest.approx(np.median(errors), rel=1e-5)
        assert float(r["cal_kappa_median"]) == pytest.approx(CAL_KAPPA, rel=1e-6)
        delays = [float(row["T"]) - float(row["T_fit"]) for row in rows if row["pool"] == pool]
        assert (float(r["delay_min"]), float(r["delay_max"])) == (min(delays), max(delays))
    assert float(scores["model"]["model_e_a"]) == pytest.approx(CAL_KAPPA, rel=1e-6)
    assert float(scores["model"]["model_b"]) == pytest.approx(0.0, abs=1e-6)

    residuals = read(tables / "residuals.csv")
    for pool in ("all", "model"):
        mine = [r for r in rows if r["pool"] == pool]
        by_lambda = [r for r in residuals if r["pool"] == pool and r["by"] == "lambda"]
        assert [float(r["value"]) for r in by_lambda] == sorted({float(r["lambda"]) for r in mine})
        for r in by_lambda:
            assert float(r["mean_r"]) == pytest.approx(
                np.mean([float(m["r"]) for m in mine if float(m["lambda"]) == float(r["value"])]), rel=1e-5
            )
        by_seed = [r for r in residuals if r["pool"] == pool and r["by"] == "seed"]
        assert [r["value"] for r in by_seed] == ["3"] and float(by_seed[0]["late"]) == 0.0
    assert all(float(r["kappa_law_median"]) == pytest.approx(EVAL_KAPPA, rel=1e-6) for r in residuals)
    calibration = read(tables / "calibration.csv")
    assert [float(r["lambda"]) for r in calibration] == pytest.approx(LAMS)
    assert all(float(r["kappa_law_median"]) == pytest.approx(CAL_KAPPA, rel=1e-6) for r in calibration)


def read(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
