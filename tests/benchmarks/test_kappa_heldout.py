"""benchmarks/kappa_heldout.py on the planted folders of tests/analysis/test_tfit_forecast.py: seeds 0–2 calibrate,
seed 3 is scored; V contracts there by the first-passage law at κ = 0.3 exactly, so every scored run's own law κ
(`kappa_law`) is 0.3 under every κ rule, the model's κ at each λ too, and the tables name the rules and the law κ."""

import csv

import numpy as np
import pytest

from benchmarks import kappa_heldout

from ..analysis.test_tfit_forecast import KAPPA, planted


def test_every_scored_run_carries_its_own_law_kappa(tmp_path, capsys):
    cal, _ = planted(tmp_path / "cal")
    new, _ = planted(tmp_path / "new", seeds=(3,))
    out = tmp_path / "runs.csv"
    assert kappa_heldout.main([str(cal), str(new), "--pools", "all,model", "--csv", str(out)]) == 0
    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["pool"] for r in rows} == {"all", "model"} and {r["seed"] for r in rows} == {"3"}
    law = np.array([float(r["kappa_law"]) for r in rows])
    assert law == pytest.approx(KAPPA, rel=1e-6)
    model = np.array([float(r["kappa"]) for r in rows if r["pool"] == "model"])
    assert model == pytest.approx(KAPPA, rel=1e-6)
    text = capsys.readouterr().out
    assert "### kappa_pool = model" in text and "law κ (median)" in text and "b 95 % seed-bootstrap" in text
