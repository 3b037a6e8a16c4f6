"""The follow-up papers' parts of `nht reproduce` (critical-norm, interventions, norm-clamp, logit-temperature,
critical-norm-mse, logit-temperature-mse): sources before the parts that read them, every reference pointed at the source part's
folder under the output folder, and each new measure on a constructed results folder with a known answer."""

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.analysis.tables import csv_text
from nht_jax.base.errors import ConfigError
from nht_jax.papers import claims as claims_lib
from nht_jax.papers import measures as m
from nht_jax.papers import reproduce as repro
from nht_jax.results import folder as results

FOLLOW_UP = (
    "critical-norm",
    "interventions",
    "norm-clamp",
    "logit-temperature",
    "critical-norm-mse",
    "logit-temperature-mse",
    "critical-norm-ce",
    "logit-temperature-ce",
)
SOURCE_OF = {
    "interventions": "critical-norm",
    "norm-clamp": "critical-norm",
    "logit-temperature": "critical-norm",
    "logit-temperature-mse": "critical-norm-mse",
    "logit-temperature-ce": "critical-norm-ce",
}


# ----------------------------------------------------------------------------- parts, order and references


def test_sources_run_before_the_parts_that_read_them_and_come_along_with_only():
    keys = list(repro.PARTS)
    for part in repro.PARTS.values():
        for source in part.sources:
            assert keys.index(source) < keys.index(part.key), (source, part.key)
    assert [p.key for p in repro.select(["norm-clamp"])] == ["critical-norm", "norm-clamp"]
    assert [p.key for p in repro.select(["interventions", "default"])] == ["default", "critical-norm", "interventions"]


@pytest.mark.parametrize("scale", list(repro.PRESET_SCALE))
def test_every_reference_reads_the_source_part_under_the_output_folder(scale, tmp_path):
    out = tmp_path / "out"
    plans = {p.part.key: p for p in repro.plan(out, scale, repro.select(list(FOLLOW_UP)))}
    assert list(plans) == list(FOLLOW_UP)
    assert repro.references(plans["critical-norm"].config) == repro.references(plans["critical-norm-mse"].config) == ()
    for key, source_key in SOURCE_OF.items():
        source = str(repro.folder_of(out, source_key, scale))
        config = plans[key].config
        assert set(repro.references(config)) == {source}, key
        assert all(new == source and Path(old).name == source_key for old, new in plans[key].moved), key
        assert f"reads `{source}`" in repro.scale_text(plans[key])
    source = str(repro.folder_of(out, "critical-norm", scale))
    fork = plans["interventions"].config.fork
    assert fork.from_ == source and fork.select == {"learning_rate": 1e-2} and fork.step == "fit"
    # everything else is the preset at that scale
    shipped = experiment.load("norm-clamp", scale=plans["norm-clamp"].scale)
    assert repro.redirect(shipped, {shipped.optim.after[0].critical_from: source}) == plans["norm-clamp"].config


def test_a_reference_to_a_folder_that_is_no_declared_source_is_refused():
    part = repro.PARTS["norm-clamp"]
    assert repro.source_of(part, "runs/out/critical-norm-quick") == "critical-norm"
    assert repro.source_of(part, "elsewhere/critical-norm") == "critical-norm"
    for reference in ("runs/out/default", "runs/out/critical-norm-tiny", "runs/out/critical-normal"):
        with pytest.raises(ConfigError, match="none of the parts it names as sources"):
            repro.source_of(part, reference)
    with pytest.raises(ConfigError, match=r"sources \(none\)"):
        repro.source_of(repro.PARTS["default"], "runs/out/critical-norm")


def test_a_finished_dependent_part_whose_source_is_gone_stops_before_training(tmp_path):
    """The norm-clamp folder claims to be finished but critical-norm is not there: it was made from other runs."""
    out = tmp_path / "out"
    folder = repro.folder_of(out, "norm-clamp", "quick")
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text('{"config_digest": "0000000000000000"}')
    (folder / "trajectories.npz").write_bytes(b"")
    with pytest.raises(ConfigError, match="do not match its sources.*critical-norm are not finished"):
        repro.plan(out, "quick", repro.select(["norm-clamp"]))


def test_the_follow_up_claims_are_in_the_table_with_their_parts():
    claims_lib.check_table(claims_lib.CLAIMS, repro.PARTS)
    by_id = {c.id: c for c in claims_lib.CLAIMS}
    expected = {
        "clamp.W_c_cv": ("critical-norm",),
        "clamp.alpha": ("norm-clamp",),
        "clamp.r2": ("norm-clamp",),
        "clamp.ranges": ("norm-clamp",),
        "temperature.slide": ("logit-temperature",),
        "temperature.collapse": ("logit-temperature",),
        "temperature.mse": ("logit-temperature-mse",),
        "temperature.mse_control": ("logit-temperature-ce",),
        "injection.shift": ("interventions",),
        "grokfast.speedup": ("interventions",),
        "ortho_grad.speedup": ("interventions",),
        "row_clip.speedup": ("interventions",),
    }
    assert {k: by_id[k].parts for k in expected} == expected
    # the tolerances, as fixed in claims.py
    assert by_id["clamp.W_c_cv"].rule.accepts(0.03) and not by_id["clamp.W_c_cv"].rule.accepts(0.031)
    assert by_id["clamp.alpha"].rule.accepts((3.75, 15.0)) and not by_id["clamp.alpha"].rule.accepts((7.5, 3.7))
    assert by_id["clamp.r2"].rule.accepts((0.95,)) and not by_id["clamp.r2"].rule.accepts((0.99, 0.94))
    assert by_id["clamp.ranges"].rule.accepts((6.0, 2.0)) and not by_id["clamp.ranges"].rule.accepts((5.9, 2.0))
    slide = by_id["temperature.slide"].rule
    assert slide.accepts((True, 2.0, 6.0)) and not slide.accepts((True, 1.9, 6.0))
    assert not slide.accepts((False, 6.0, 6.0))
    assert by_id["temperature.collapse"].rule.accepts(0.9) and not by_id["temperature.collapse"].rule.accepts(0.89)
    assert by_id["temperature.mse"].rule.accepts(0.5) and not by_id["temperature.mse"].rule.accepts(0.51)
    assert by_id["injection.shift"].rule.accepts((0.5, 2.0)) and not by_id["injection.shift"].rule.accepts((0.49,))
    assert by_id["grokfast.speedup"].rule.accepts(18.0) and not by_id["grokfast.speedup"].rule.accepts(17.9)


# ----------------------------------------------------------------------------- the measures, on constructed folders


def write_csv(folder: Path, name: str, rows: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(csv_text(rows))
    return folder


def run_row(i, regime="intermediate", t_fit=100.0, t_transition=math.nan, norm_sq=math.nan, **axes):
    return {
        "run": i,
        **axes,
        "regime": regime,
        "T_fit": t_fit,
        "T_transition": t_transition,
        "norm_at_transition": norm_sq,
    }


def test_critical_norm_spread_is_the_cv_of_the_norm_at_transition(tmp_path):
    norms = [70.0, 72.0, 74.0]  # mean 72, population std √(8/3)
    table = [
        run_row(i, t_transition=500.0, norm_sq=n**2, learning_rate=lr, seed=i)
        for i, (n, lr) in enumerate(zip(norms, (5e-3, 1e-2, 2e-2)))
    ]
    table += [run_row(3, regime="weak", norm_sq=10.0**2, learning_rate=5e-3, seed=3)]  # never transitions
    got = m.critical_norm_spread()(write_csv(tmp_path, "summary.csv", table))
    assert got.value == pytest.approx(math.sqrt(8 / 3) / 72)
    assert "W_c = 72 over 3 runs" in got.text and "0.005, 0.01, 0.02" in got.text
    with pytest.raises(m.NotMeasured, match="1 run"):
        m.critical_norm_spread()(write_csv(tmp_path / "one", "summary.csv", table[:1]))


def fit_row(axis, slope, r2, status="ok", predicted=math.nan, context="learning_rate = 0.01"):
    return {
        "context": context,
        "axis": axis,
        "parameter": "α",
        "status": status,
        "slope": slope,
        "slope_lo": slope - 1,
        "slope_hi": slope + 1,
        "r2": r2,
        "n_runs": 4,
        "predicted_slope": predicted,
    }


def test_dose_parameters_and_the_injection_slope_read_intervention_fits(tmp_path):
    folder = write_csv(
        tmp_path,
        "intervention_fits.csv",
        [
            fit_row("clamp_rho", 6.0, 0.98),
            fit_row("clamp_rho", 7.0, 0.9, context="learning_rate = 0.02"),
            fit_row("temperature", -2.0, 0.5),
            fit_row("clamp_norm", 1.0, 0.1, status="not enough data"),
            fit_row("injection_scale", 600.0, 0.97, predicted=400.0),
        ],
    )
    assert m.dose_parameter("clamp_rho", "slope")(folder).value == (6.0, 7.0)
    assert m.dose_parameter("clamp_rho", "r2")(folder).value == (0.98, 0.9)
    # 4 runs of one seed: 35 distinct resamples, too few for an interval; 5 seeds: 126, shown
    assert (
        "α = 6 [n.a.: 35 distinct resamples over 4 runs, < 40], R² 0.98 (4 runs, learning_rate = 0.01)"
        in m.dose_parameter("clamp_rho", "r2")(folder).text
    )
    write_csv(folder, "summary.csv", [run_row(i, seed=i % 5) for i in range(10)])
    assert (
        "α = 6 [5, 7] (126 distinct resamples over 5 seeds), R² 0.98 (4 runs, learning_rate = 0.01)"
        in m.dose_parameter("clamp_rho", "r2")(folder).text
    )
    assert m.injection_slope()(folder).value == (1.5,)
    with pytest.raises(m.NotMeasured, match="clamp_norm: not enough data"):
        m.dose_parameter("clamp_norm", "slope")(folder)
    unknown = write_csv(tmp_path / "u", "intervention_fits.csv", [fit_row("injection_scale", 600.0, 0.9)])
    with pytest.raises(m.NotMeasured, match="γ_eff unknown"):
        m.injection_slope()(unknown)


def test_delay_ranges_along_the_norm_and_the_learning_rate(tmp_path):
    """T_grok = 100·e^(5ρ)·(1 + [η = 0.02]): along ρ ∈ {0.8, 1, 1.2} the range is e² at each η, along η it is 2."""
    table, i = [], 0
    for rho in (0.0, 0.8, 1.0, 1.2):
        for lr in (0.01, 0.02):
            for seed in (0, 1):
                t = 100 * math.exp(5 * rho) * (2 if lr == 0.02 else 1) * (1.1 if seed else 1 / 1.1)
                table.append(run_row(i, t_transition=t, clamp_rho=rho, learning_rate=lr, seed=seed))
                i += 1
    table[0]["T_transition"] = math.nan  # a free run that never transitions: ρ = 0 is left out anyway
    folder = write_csv(tmp_path, "summary.csv", table)
    r_norm, r_lr = m.delay_ranges("clamp_rho", "learning_rate", "start")(folder).value
    assert r_norm == pytest.approx(math.exp(2), rel=1e-4) and r_lr == pytest.approx(2.0, rel=1e-4)
    # (ρ 1.2, η 0.01) does not transition: the ρ range at η = 0.01 is unknown (not e^1 from the cells left), and so
    # is the η range at ρ = 1.2
    table[12]["T_transition"] = math.nan
    partial = m.delay_ranges("clamp_rho", "learning_rate", "start")(write_csv(tmp_path / "a", "summary.csv", table))
    assert partial.value == pytest.approx((math.exp(2), 2.0), rel=1e-4) and "5/6 cells" in partial.text
    table[14]["T_transition"] = math.nan  # (ρ 1.2, η 0.02) as well: no complete ρ slice
    with pytest.raises(m.NotMeasured, match="4 of 6 cells .*no complete slice along clamp_rho"):
        m.delay_ranges("clamp_rho", "learning_rate", "start")(write_csv(tmp_path / "b", "summary.csv", table))


def temperature_table(delay):
    table, i = [], 0
    for rho in (0.9, 1.1):
        for tau in (0.75, 1.0, 1.5):
            table.append(
                run_row(i, t_fit=100.0, t_transition=100.0 + delay(rho, tau), clamp_rho=rho, temperature=tau, seed=0)
            )
            i += 1
    return table


def test_the_temperature_slide_falls_with_tau_and_is_compared_with_the_norms_range(tmp_path):
    folder = write_csv(tmp_path, "summary.csv", temperature_table(lambda rho, tau: 300 * rho**9 / tau**3))
    falling, r_tau, r_norm = m.temperature_slide()(folder).value
    assert falling and r_tau == pytest.approx(2**3, rel=1e-4) and r_norm == pytest.approx((1.1 / 0.9) ** 9, rel=1e-4)
    rising = write_csv(tmp_path / "r", "summary.csv", temperature_table(lambda rho, tau: 300 * rho * tau))
    assert m.temperature_slide()(rising).value[0] is False
    censored = temperature_table(lambda rho, tau: 300.0 / tau)
    censored[0]["T_transition"] = math.nan
    with pytest.raises(m.NotMeasured, match="1 of 6 cells"):
        m.temperature_slide()(write_csv(tmp_path / "c", "summary.csv", censored))


def test_the_logit_scale_collapse_reads_the_scale_at_each_runs_fit(tmp_path, monkeypatch):
    """delay = 50·s² with s the effective logit scale at T_fit: R² 1; the value at any other step is noise."""
    rng = np.random.default_rng(0)
    steps = np.arange(0, 1000, 20.0)
    t_fit = np.array([100.0, 120.0, 140.0, 160.0, 100.0])
    scale_at_fit = np.array([2.0, 3.0, 4.0, 5.0, 6.0])
    trajectories = rng.uniform(1, 10, (5, steps.size))
    trajectories[np.arange(5), np.searchsorted(steps, t_fit)] = scale_at_fit
    table = [run_row(i, t_fit=t_fit[i], t_transition=t_fit[i] + 50 * scale_at_fit[i] ** 2) for i in range(5)]
    table.append(run_row(5, regime="weak"))
    folder = write_csv(tmp_path, "summary.csv", table)
    monkeypatch.setattr(
        results,
        "load_results",
        lambda path: SimpleNamespace(
            steps=steps, metrics={"effective_logit_scale": np.vstack([trajectories, trajectories[:1]])}
        ),
    )
    got = m.logit_scale_collapse()(folder)
    assert got.value == pytest.approx(1.0) and "slope 2 over 5/6 runs" in got.text
    monkeypatch.setattr(results, "load_results", lambda path: SimpleNamespace(steps=steps, metrics={}))
    with pytest.raises(m.NotMeasured, match="no effective_logit_scale"):
        m.logit_scale_collapse()(folder)


def arm(axis, strength, ratio, lo=math.nan, hi=math.nan, lower=math.nan):
    return {
        "context": "all runs",
        "axis": axis,
        "strength": strength,
        "ratio": ratio,
        "ratio_lo": lo,
        "ratio_hi": hi,
        "ratio_lower": lower,
    }


def test_the_best_speedup_is_the_smallest_ratio_of_an_axis(tmp_path):
    folder = write_csv(
        tmp_path,
        "interventions.csv",
        [
            arm("baseline", 0.0, 1.0),
            arm("grokfast_amplification", 2.0, 0.5, 0.4, 0.6),
            arm("grokfast_amplification", 5.0, 0.25, 0.2, 0.3),
            arm("row_clip_norm", 6.0, math.nan, lower=1.5),
        ],
    )
    got = m.best_speedup("grokfast_amplification")(folder)
    assert got.value == pytest.approx(4.0) and got.text.startswith("best 4× at 5 (2: 2× [1.67, 2.5]; 5: 4× [3.33, 5])")
    with pytest.raises(m.NotMeasured, match="no row_clip_norm arm has a ratio"):
        m.best_speedup("row_clip_norm")(folder)
    with pytest.raises(m.NotMeasured, match="no ortho_grad_weight arm"):
        m.best_speedup("ortho_grad_weight")(folder)


# ----------------------------------------------------------------------------- end to end, at a test-only size

SOURCE = """[scale.quick]
train.steps = 700
grid.learning_rate = [2e-2]
grid.seed = [2]
"""
# seed 2 at η = 2e-2: T_fit 70, T_transition 670 (the preset's comments); the arms fork there for 200 steps,
# too few to transition: the part's plumbing is what this checks, and every claim it feeds stays unjudged
ARMS = """[scale.quick]
train.steps = 200
train.log_every = 20
grid.learning_rate = [2e-2]
grid.seed = [2]
grid.clamp_rho              = [0.0, 0.0, 0.0]
grid.temperature            = [1.0, 1.0, 1.0]
grid.injection_scale        = [1.0, 1.1, 1.25]
grid.grokfast_amplification = [0.0, 0.0, 0.0]
grid.ortho_grad_weight      = [0.0, 0.0, 0.0]
grid.row_clip_norm          = [0.0, 0.0, 0.0]
analyze.interventions.n_bootstrap = 20
"""


# The child that trains both parts: the same `repro.reproduce` call, run under XLA's default flags instead of the
# suite's quick-compile ones, since its two programs run 700 and 200 full-batch steps (2026-12-03, load 5: the
# whole test 54 s in-process → 25–33 s so, the interpreter's start included).
REPRODUCE_CHILD = """import pickle, sys
from pathlib import Path
from nht_jax.base import presets
presets.presets_dir = lambda: Path(sys.argv[1])
from nht_jax.papers import reproduce as repro
made = repro.reproduce(Path(sys.argv[2]), quick=True, only=["interventions"], progress=False)
Path(sys.argv[3]).write_bytes(pickle.dumps(made))
"""


def reproduce_in_a_subprocess(shipped: Path, out: Path, made: Path):
    """`repro.reproduce(out, quick=True, only=["interventions"])` with the presets read from `shipped`, in a child
    process: its (rows, outcomes)."""
    import pickle
    import subprocess
    import sys

    from ..conftest import users_xla_env

    done = subprocess.run(
        [sys.executable, "-c", REPRODUCE_CHILD, str(shipped), str(out), str(made)],
        env={**users_xla_env(), "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return pickle.loads(made.read_bytes())


def test_the_interventions_part_forks_from_its_own_critical_norm_part(tmp_path, monkeypatch):
    import json

    from nht_jax.base import presets

    from .conftest import copy_presets

    select = ("select = {learning_rate = 1e-2}", "select = {learning_rate = 2e-2}")
    shipped = copy_presets(
        tmp_path / "presets", {"critical-norm": SOURCE, "interventions": ARMS}, {"interventions": select}
    )
    monkeypatch.setattr(presets, "presets_dir", lambda: shipped)
    out = tmp_path / "out"
    rows, outcomes = reproduce_in_a_subprocess(shipped, out, tmp_path / "made.pickle")
    assert [(o.key, o.status) for o in outcomes] == [("critical-norm", "made"), ("interventions", "made")]
    source, arms = repro.folder_of(out, "critical-norm", "quick"), repro.folder_of(out, "interventions", "quick")
    meta = json.loads((arms / "meta.json").read_text())
    assert meta["fork"]["from"] == meta["critical_norm"][0]["from"] == str(source.resolve())
    card = {r.id: r for r in rows}
    assert card["clamp.W_c_cv"].note == "1 run(s) transition: a spread needs two"
    assert "part norm-clamp not run" in card["clamp.alpha"].note
    assert card["injection.shift"].verdict == "[--]" and "injection_scale" in card["injection.shift"].note
    # a rerun reuses both; a source made again (here: removed) makes the finished fork stale, before training
    _, again = repro.reproduce(out, quick=True, only=["interventions"], progress=False)
    assert [o.status for o in again] == ["reused", "reused"]
    (source / "meta.json").unlink()
    with pytest.raises(ConfigError, match="interventions-quick' holds results of part interventions that do not"):
        repro.reproduce(out, quick=True, only=["interventions"], progress=False)


def test_the_reproduce_help_names_every_part():
    from nht_jax import cli
    from nht_jax.cli.registry import parsers

    reproduce = dict(parsers(cli.parser()))[("paper", "reproduce")]
    only = next(o for o in reproduce._actions if o.dest == "only")
    assert all(key in only.help for key in repro.PARTS), only.help
