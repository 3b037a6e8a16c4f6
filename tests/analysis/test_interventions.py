"""The interventions analysis (nht_jax.analysis.interventions): arms against the baseline with known delay ratios,
read back from a results folder written by the sweep's own writers; exact dose responses; the paired bootstrap;
censored arms counted and bounded; forks; product grids; and a real tiny sweep through `nht analyze`.

The intervention axes come from a test-only `optim.after` entry, "probe", registered for each test: its axes carry
the names the analysis gives laws to (clamp_rho, temperature, injection_scale) and one without a law
(probe_gain). It multiplies θ by injection_scale once, after the first update (identity 1: nothing changes)."""

import csv
import dataclasses
import io
import math
from types import SimpleNamespace
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.analysis import interventions as iv
from nht_jax.analysis.analyze import options_from
from nht_jax.analysis.interventions import InterventionOptions
from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.engine import slots
from nht_jax.engine.grid import Axis, number_check
from nht_jax.engine.optim import gamma_eff
from nht_jax.measure import summaries
from nht_jax.results.folder import load_results

from .conftest import write_results_folder

STEPS = np.arange(0, 6001, 50, dtype=np.float64)
T_FIT = 200.0
ETA, LAM = 1e-3, 0.1
GAMMA = float(gamma_eff("adamw", ETA, LAM))
GAMMA_RUN = float(gamma_eff("adamw", float(np.float32(ETA)), float(np.float32(LAM))))  # at the runs' float32 η, λ
BASE = {0: 100.0, 1: 200.0, 2: 400.0}  # the baseline delay of each seed


def axis(name, identity, log=False):
    return Axis(
        name,
        (),
        name,
        log=log,
        check=number_check(name, lambda v: v >= 0, "must be ≥ 0"),
        optional=True,
        identity=identity,
    )


PROBE_AXES = {
    "clamp_rho": axis("clamp_rho", 0.0),
    "temperature": axis("temperature", 1.0, log=True),
    "injection_scale": axis("injection_scale", 1.0, log=True),
    "probe_gain": axis("probe_gain", 1.0),
}


@dataclasses.dataclass(frozen=True)
class Probe:
    name: Literal["probe"] = "probe"
    clamp_rho: float = 0.0
    temperature: float = 1.0
    injection_scale: float = 1.0
    probe_gain: float = 1.0


def probe_constrain(settings, params, hparams, step):
    scale = jnp.where(step == 1, slots.option(settings, hparams, "injection_scale"), 1.0)
    return jax.tree.map(lambda p: p * scale.astype(p.dtype), params)


@pytest.fixture
def probe(monkeypatch):
    """The test entry "probe" in the optim.after slot, for one test."""
    entry = slots.ConstraintEntry(
        settings=Probe,
        constrain=probe_constrain,
        contraction=lambda s, c: c,
        axes={field: PROBE_AXES[field] for field in PROBE_AXES},
        uses_step=True,
    )
    monkeypatch.setitem(slots.SLOTS["after"], "probe", entry)
    return entry


def config_of(grid, name="interventions", steps=int(STEPS[-1]), log_every=50, probe_entry=True):
    return experiment.from_dict(
        {
            "name": name,
            "task": {"name": "modular", "p": 31},
            "model": {"name": "mlp", "hidden": [32]},
            "optim": {"name": "adamw", **({"after": ["probe"]} if probe_entry else {})},
            "train": {"steps": steps, "log_every": log_every},
            "grid": {"weight_decay": LAM, "learning_rate": ETA, "train_fraction": 0.5, **grid},
        }
    )


def injection_for(shift):
    """The scale s whose predicted shift γ_eff⁻¹·log s² is `shift` steps."""
    return math.exp(shift * GAMMA / 2)


S1, S2 = injection_for(500), injection_for(1000)
ZIPPED = {
    "clamp_rho": [0, 1, 2, 3, 5, 0, 0, 0, 0, 0],
    "temperature": [1, 1, 1, 1, 1, 2, 4, 1, 1, 1],
    "injection_scale": [1, 1, 1, 1, 1, 1, 1, S1, S2, 1],
    "probe_gain": [1, 1, 1, 1, 1, 1, 1, 1, 1, 3],
    "zip": [["clamp_rho", "temperature", "injection_scale", "probe_gain"]],
    "seed": [0, 1, 2],
}


def planted_delay(rho, tau, s, gain, seed):
    """The plan: clamp ρ multiplies the delay by 2^ρ (ρ = 5 never transitions), τ by τ, the injection adds
    γ_eff⁻¹·log s² (to the log step), gain 3 multiplies by 3 except at seed 1 (never transitions)."""
    if rho == 5 or (gain == 3 and seed == 1):
        return np.nan
    shift = 50 * round(math.log(s**2) / GAMMA / 50)
    return BASE[seed] * 2.0**rho * tau * (3 if gain == 3 else 1) + shift


def write_planted(out, config, delay_of):
    """A results folder in the sweep's format (its writers; summary by nht_jax.measure.summaries): train accuracy 1
    from T_fit, test accuracy 1 from T_fit + delay_of(run values) (never for NaN), every other metric constant."""
    runs = config.runs()
    n = len(runs["seed"])
    delays = [delay_of({k: float(v[i]) for k, v in runs.items()}) for i in range(n)]
    train = np.tile((STEPS >= T_FIT).astype(float), (n, 1))
    test = np.array([(STEPS >= T_FIT + d).astype(float) if np.isfinite(d) else np.zeros_like(STEPS) for d in delays])
    ones = np.ones_like(train)
    norm = 100.0 * ones
    metrics = {
        "norm_sq": norm,
        "weight_norm_sq": norm,
        "head_norm_sq": norm / 2,
        "layer_norm_sq/embed": norm / 2,
        "layer_norm_sq/head": norm / 2,
        "train_acc": train,
        "test_acc": test,
        "train_loss": 1.01 - train,
        "test_loss": 1.01 - test,
        "grad_norm": ones,
        "logit_scale": ones,
        "finite": ones,
    }
    metrics.update({name: ones for name in config.domain.summary(config) if name not in metrics})
    write_results_folder(out, STEPS, metrics, runs, config)
    return runs


@pytest.fixture
def zipped_folder(probe, tmp_path):
    config = config_of(ZIPPED)
    runs = write_planted(
        tmp_path,
        config,
        lambda v: planted_delay(v["clamp_rho"], v["temperature"], v["injection_scale"], v["probe_gain"], v["seed"]),
    )
    return tmp_path, runs


def arm(report, axis_name, strength=None):
    return next(
        a
        for a in report.arms
        if a.axis == axis_name and (strength is None or a.strength == pytest.approx(strength, rel=1e-6))
    )


def fit(report, axis_name):
    return next(f for f in report.fits if f.axis == axis_name)


# ----------------------------------------------------------------------------- arms read back from a folder


def test_arms_of_a_zipped_grid_have_their_planted_ratios_paired_by_seed(zipped_folder):
    folder, _ = zipped_folder
    report = iv.intervention_report(load_results(folder), InterventionOptions(n_bootstrap=200))
    assert report.identities == {"clamp_rho": 0.0, "temperature": 1.0, "injection_scale": 1.0, "probe_gain": 1.0}
    assert len(report.arms) == 10 and report.n_mixed == 0 and report.origin == "fit"
    baseline = arm(report, "baseline")
    assert baseline.n_runs == 3 and baseline.delay.value == pytest.approx(200.0)  # geometric mean of 100, 200, 400
    for rho in (1, 2, 3):
        a = arm(report, "clamp_rho", rho)
        assert a.pairing == "paired (3 seeds)" and a.n_censored == 0
        assert (a.ratio.value, a.ratio.lo, a.ratio.hi) == pytest.approx((2.0**rho,) * 3)  # every seed the same
    for tau in (2, 4):
        assert arm(report, "temperature", tau).ratio.value == pytest.approx(tau)
    for s, shift in ((S1, 500), (S2, 1000)):
        a = arm(report, "injection_scale", s)
        assert (a.shift.value, a.shift.lo, a.shift.hi) == pytest.approx((shift,) * 3)
        assert a.shift_predicted == pytest.approx(math.log(float(np.float32(s)) ** 2) / GAMMA_RUN, rel=1e-12)
        assert a.shift_predicted == pytest.approx(shift, abs=0.01)


def test_unpaired_ratios_resample_both_sides(zipped_folder):
    """Without pairing the same point (geometric means factor), but the seeds' spread widens the interval."""
    folder, _ = zipped_folder
    report = iv.intervention_report(load_results(folder), InterventionOptions(n_bootstrap=400, paired=False))
    a = arm(report, "clamp_rho", 1)
    assert a.pairing == "unpaired (interventions.paired = false)"
    assert a.ratio.value == pytest.approx(2.0) and a.ratio.lo < 1.5 and a.ratio.hi > 2.5


def test_censored_runs_are_counted_listed_and_bound_the_ratio_from_below(zipped_folder):
    folder, runs = zipped_folder
    report = iv.intervention_report(load_results(folder), InterventionOptions(n_bootstrap=100))
    bound = STEPS[-1] - T_FIT  # 5800: the delay of a run that never transitions exceeds it
    gain = arm(report, "probe_gain", 3)
    censored = [i for i in range(len(runs["seed"])) if runs["probe_gain"][i] == 3 and runs["seed"][i] == 1]
    assert gain.n_runs == 3 and gain.n_censored == 1 and list(gain.censored_runs) == censored
    assert gain.counts["weak"] == 1 and gain.counts["intermediate"] == 2 and gain.censored_above == bound
    assert gain.pairing == "paired (2 seeds)" and gain.ratio.value == pytest.approx(3.0)
    assert gain.ratio_lower == pytest.approx((3 * (bound / 200) * 3) ** (1 / 3))  # seed 1 at its bound
    never = arm(report, "clamp_rho", 5)
    assert never.n_censored == 3 and never.delay.n == 0 and np.isnan(never.ratio.value)
    assert never.ratio_lower == pytest.approx(bound / 200) and never.delay_lower == pytest.approx(bound)
    row = next(r for r in report.rows() if r["axis"] == "clamp_rho" and r["strength"] == 5)
    assert row["n_weak"] == 3 and row["n_censored"] == 3 and row["censored_runs"].count(" ") == 2


def test_dose_responses_recover_the_planted_laws(zipped_folder):
    folder, _ = zipped_folder
    report = iv.intervention_report(load_results(folder), InterventionOptions(n_bootstrap=200))
    clamp = fit(report, "clamp_rho")  # log T = log d0(seed) + ρ·log 2; balanced over seeds, so exact
    assert (
        clamp.ok and clamp.slope == pytest.approx(math.log(2)) and clamp.slope_ci == pytest.approx((math.log(2),) * 2)
    )
    assert clamp.n_strengths == 3 and clamp.n_runs == 9 and clamp.left_out == "5" and clamp.n_censored == 3
    temperature = fit(report, "temperature")  # the baseline enters at τ = 1
    assert temperature.slope == pytest.approx(1.0) and temperature.n_strengths == 3
    injection = fit(report, "injection_scale")
    assert injection.slope == pytest.approx(1 / GAMMA, rel=1e-4) and injection.predicted_slope == pytest.approx(
        1 / GAMMA_RUN, rel=1e-12
    )
    assert "γ_eff = " in injection.gamma_note and "declared contraction of 'adamw'" in injection.gamma_note
    assert not any(f.axis == "probe_gain" for f in report.fits)  # no law for it


def test_delay_from_start_counts_the_transition_step(zipped_folder):
    folder, _ = zipped_folder
    report = iv.intervention_report(load_results(folder), InterventionOptions(n_bootstrap=0, delay_from="start"))
    assert report.origin == "start"
    assert arm(report, "baseline").delay.value == pytest.approx((300 * 400 * 600) ** (1 / 3))
    assert np.isnan(arm(report, "baseline").delay.lo)  # n_bootstrap = 0: no interval
    assert arm(report, "clamp_rho", 5).censored_above == STEPS[-1]


def test_nht_analyze_writes_the_tables_the_figure_and_the_section(zipped_folder):
    folder, _ = zipped_folder
    assert (
        main(
            [
                "analyze",
                str(folder),
                "--set",
                "interventions.n_bootstrap=50",
                "--set",
                "fits.n_bootstrap=20",
                "--set",
                "separation.n_bootstrap=20",
                "--set",
                "layers.n_bootstrap=20",
                "--set",
                "predictor.n_bootstrap=20",
            ]
        )
        == 0
    )
    with open(folder / "interventions.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["axis"] == "baseline" and len(rows) == 10
    assert {r["axis"] for r in rows} == {"baseline", "clamp_rho", "temperature", "injection_scale", "probe_gain"}
    clamp3 = next(r for r in rows if r["axis"] == "clamp_rho" and float(r["strength"]) == 3)
    assert float(clamp3["ratio"]) == pytest.approx(8.0, rel=1e-5)
    with open(folder / "intervention_fits.csv") as f:
        fits_rows = {r["axis"]: r for r in csv.DictReader(f)}
    assert set(fits_rows) == {"clamp_rho", "temperature", "injection_scale"}
    assert float(fits_rows["clamp_rho"]["slope"]) == pytest.approx(math.log(2), rel=1e-5)
    text = (folder / "analysis.md").read_text()
    assert "## Interventions (docs/science.md §9)" in text and "log T = a + α·ρ" in text
    assert (folder / "interventions.png").stat().st_size > 0


# ----------------------------------------------------------------------------- plain arrays


def rows_of(plan, t_fit=T_FIT):
    """Summary rows of plan = [(values {axis: v}, delay or NaN)] (regime from the delay)."""
    rows = []
    for i, (values, delay) in enumerate(plan):
        regime = "weak" if np.isnan(delay) else "intermediate"
        rows.append(
            {"run": i, **values, "regime": regime, "T_fit": t_fit, "T_transition": t_fit + delay, "diverged": False}
        )
    return rows


def analyse(plan, identities, options=None, origin="fit", t_fit=T_FIT):
    options = options or InterventionOptions(n_bootstrap=100)
    rows = rows_of(plan, t_fit)
    axes = {k: np.array([r[k] for r in rows], np.float64) for k in plan[0][0]}
    runs, labels = iv.intervention_runs(rows, axes, identities, STEPS[-1], origin, options)
    return iv.intervention_analysis(runs, labels, identities, origin, options)


def test_an_exact_exponential_dose_response_has_r2_one():
    alpha = 7.5
    plan = [
        ({"clamp_rho": rho, "seed": seed}, 50 * math.exp(alpha * rho))
        for seed in range(3)
        for rho in (0.0, 0.2, 0.4, 0.6, 0.8)
    ]
    clamp = fit(analyse(plan, {"clamp_rho": 0.0}), "clamp_rho")
    assert clamp.ok and clamp.slope == pytest.approx(alpha) and clamp.r2 == pytest.approx(1.0)
    assert clamp.n_strengths == 4  # ρ = 0 is the clamp off, not a point of the law
    assert clamp.slope_ci == pytest.approx((alpha, alpha))


def test_the_paired_bootstrap_resamples_seed_ratios():
    """Ratios 2, 4, 8 at three seeds: the point is their geometric mean 4; the interval holds the resamples'
    geometric means, inside [2, 8]; the unpaired interval is wider here (the baseline spreads 1:100)."""
    base = {0: 10.0, 1: 100.0, 2: 1000.0}
    ratio = {0: 2.0, 1: 4.0, 2: 8.0}
    plan = [({"probe_gain": g, "seed": s}, base[s] * (ratio[s] if g == 2 else 1)) for s in range(3) for g in (1, 2)]
    options = InterventionOptions(n_bootstrap=2000, seed=3)
    paired_arm = arm(analyse(plan, {"probe_gain": 1.0}, options), "probe_gain", 2)
    assert paired_arm.ratio.value == pytest.approx(4.0) and paired_arm.pairing == "paired (3 seeds)"
    rng = np.random.default_rng(3)
    logs = np.log([2.0, 4.0, 8.0])
    expected = np.exp(np.quantile(logs[rng.integers(0, 3, size=(2000, 3))].mean(1), [0.025, 0.975]))
    assert (paired_arm.ratio.lo, paired_arm.ratio.hi) == pytest.approx(tuple(expected))
    assert 2.0 <= paired_arm.ratio.lo < 4.0 < paired_arm.ratio.hi <= 8.0
    unpaired = arm(analyse(plan, {"probe_gain": 1.0}, dataclasses.replace(options, paired=False)), "probe_gain", 2)
    assert unpaired.ratio.value == pytest.approx(4.0) and unpaired.ratio.hi - unpaired.ratio.lo > 10


def test_median_centre():
    plan = [
        ({"probe_gain": g, "seed": s}, 100.0 * (r if g == 2 else 1))
        for s, r in enumerate((2.0, 3.0, 50.0))
        for g in (1, 2)
    ]
    report = analyse(plan, {"probe_gain": 1.0}, InterventionOptions(n_bootstrap=0, center="median"))
    assert arm(report, "probe_gain", 2).ratio.value == pytest.approx(3.0)
    assert arm(report, "probe_gain", 2).shift.value == pytest.approx(200.0)


def test_a_product_grid_uses_only_rows_that_move_one_axis():
    plan = [
        ({"clamp_rho": rho, "temperature": tau, "seed": s}, 100.0 * (1 + rho) * tau)
        for s in range(2)
        for rho in (0.0, 1.0)
        for tau in (1.0, 2.0)
    ]
    report = analyse(plan, {"clamp_rho": 0.0, "temperature": 1.0})
    assert report.n_mixed == 2 and any("more than one intervention axis" in n for n in report.notes)
    assert [(a.axis, a.strength, a.n_runs) for a in report.arms] == [
        ("baseline", pytest.approx(np.nan, nan_ok=True), 2),
        ("clamp_rho", 1.0, 2),
        ("temperature", 2.0, 2),
    ]
    assert arm(report, "clamp_rho", 1.0).ratio.value == pytest.approx(2.0)


def test_other_varied_axes_make_one_baseline_each():
    plan = [
        ({"weight_decay": lam, "temperature": tau, "seed": s}, 100.0 / lam * tau**2)
        for lam in (0.1, 1.0)
        for s in range(2)
        for tau in (1.0, 2.0)
    ]
    report = analyse(plan, {"temperature": 1.0})
    assert [a.context for a in report.arms if a.axis == "baseline"] == [
        (("weight_decay", 0.1),),
        (("weight_decay", 1.0),),
    ]
    assert [a.delay.value for a in report.arms if a.axis == "baseline"] == pytest.approx([1000.0, 100.0])
    assert [f.slope for f in report.fits] == pytest.approx([2.0, 2.0])


def test_without_a_baseline_the_arms_say_so():
    plan = [({"temperature": tau, "seed": s}, 100.0 * tau) for s in range(2) for tau in (2.0, 4.0)]
    report = analyse(plan, {"temperature": 1.0})
    assert all(a.pairing == "no baseline runs" and np.isnan(a.ratio.value) for a in report.arms)
    assert any("no baseline runs" in n for n in report.notes)
    assert fit(report, "temperature").slope == pytest.approx(1.0)  # the law needs no baseline


def test_a_fork_counts_the_delay_from_its_first_step():
    """In a fork (logged steps from 0 at the source's T_fit), T_fit is 0 or after an intervention broke the fit;
    the delay is T_transition either way."""
    plan = [({"temperature": tau, "seed": 0}, d) for tau, d in ((1.0, 300.0), (2.0, 600.0))]
    report = analyse(plan, {"temperature": 1.0}, origin="start", t_fit=100.0)
    assert arm(report, "baseline").delay.value == pytest.approx(400.0)
    assert arm(report, "temperature", 2.0).ratio.value == pytest.approx(700.0 / 400.0)


@dataclasses.dataclass(frozen=True)
class Fork:
    from_: str
    step: str = "fit"


@dataclasses.dataclass(frozen=True)
class Unset:
    from_: str = ""


@pytest.mark.parametrize(
    "fork,expected",
    [
        (None, False),
        ({}, False),
        ({"from": "runs/out/tiny"}, True),
        (Fork("runs/out/tiny"), True),
        (Unset(), False),
        (Unset("x"), True),
    ],
)
def test_a_fork_section_is_read_defensively(fork, expected):
    config = SimpleNamespace(fork=fork)
    assert iv.forked(config) is expected
    assert iv.delay_origin(config, InterventionOptions()) == ("start" if expected else "fit")
    assert iv.delay_origin(config, InterventionOptions(delay_from="fit")) == "fit"
    assert not iv.forked(SimpleNamespace())  # a configuration from before [fork] existed


def test_the_real_fork_config_is_a_fork():
    fork_config = getattr(experiment, "ForkConfig", None)
    if fork_config is None:
        pytest.skip("experiment.ForkConfig not in this tree")
    assert iv.forked(SimpleNamespace(fork=fork_config("runs/out/tiny")))


# ----------------------------------------------------------------------------- applies, options


def test_a_grid_without_intervention_axes_is_skipped(probe, tmp_path):
    config = config_of({"seed": [0, 1]})
    write_planted(tmp_path, config, lambda v: BASE[int(v["seed"])])
    assert iv.intervention_axes(load_results(tmp_path).config) == {}
    assert iv.intervention_report(load_results(tmp_path)) is None
    assert (
        main(
            [
                "analyze",
                str(tmp_path),
                "--set",
                "fits.n_bootstrap=10",
                "--set",
                "separation.n_bootstrap=10",
                "--set",
                "layers.n_bootstrap=10",
                "--set",
                "predictor.n_bootstrap=10",
            ]
        )
        == 0
    )
    assert not (tmp_path / "interventions.csv").exists() and not (tmp_path / "interventions.png").exists()
    assert "Interventions" not in (tmp_path / "analysis.md").read_text()


@pytest.mark.parametrize(
    "override,message",
    [
        ('interventions.center="mean"', "center"),
        ('interventions.delay_from="transition"', "delay_from"),
        ("interventions.w_c=-1.0", "w_c must be ≥ 0"),
        ("interventions.n_boot=10", "renamed 'interventions.n_bootstrap'"),
    ],
)
def test_bad_options_are_config_errors(override, message):
    with pytest.raises(ConfigError, match=message):
        options_from([override])


def test_a_known_w_c_fits_the_clamp_norm_in_rho():
    plan = [({"clamp_norm": c, "seed": 0}, 50 * math.exp(7.5 * c / 20.0)) for c in (0.0, 10.0, 20.0, 30.0)]
    free = fit(analyse(plan, {"clamp_norm": 0.0}), "clamp_norm")
    assert free.slope == pytest.approx(7.5 / 20.0) and free.x_label == "clamp_norm"
    known = fit(analyse(plan, {"clamp_norm": 0.0}, InterventionOptions(n_bootstrap=10, w_c=20.0)), "clamp_norm")
    assert known.slope == pytest.approx(7.5) and known.x_label == "ρ = clamp_norm / 20"


# ----------------------------------------------------------------------------- a real sweep


def test_a_real_tiny_sweep_through_nht_analyze(probe, tmp_path):
    """The tiny preset's runs with the probe's injection scale 1 (baseline) and 3 after the first update: every
    count and the baseline's delay as summary.csv says, per λ; γ_eff from the declared contraction."""
    from nht_jax.training.sweep import run_sweep

    config = experiment.load("tiny", ['optim.after=["probe"]', "grid.injection_scale=[1.0, 3.0]"])
    run_sweep(config, tmp_path, progress=False)
    loaded = load_results(tmp_path)
    summary = loaded.summary
    report = iv.intervention_report(loaded, InterventionOptions(n_bootstrap=20))
    rows = list(csv.DictReader(io.StringIO(report.csv())))
    assert [(r["context"], r["axis"]) for r in rows] == [
        ("λ=0.01", "baseline"),
        ("λ=0.01", "injection_scale"),
        ("λ=1", "baseline"),
        ("λ=1", "injection_scale"),
    ]
    last = float(loaded.steps[-1])
    for r in rows:
        lam = 0.01 if r["context"] == "λ=0.01" else 1.0
        scale = 1.0 if r["axis"] == "baseline" else 3.0
        mine = [s for s in summary if s["weight_decay"] == pytest.approx(lam) and s["injection_scale"] == scale]
        assert int(r["n_runs"]) == len(mine) == 2
        for regime in summaries.REGIMES:
            assert int(r[f"n_{regime}"]) == sum(s["regime"] == regime for s in mine)
        delays = [s["delay"] for s in mine if s["regime"] == "intermediate" and s["delay"] > 0]
        assert int(r["n_usable"]) == len(delays)
        if delays:
            assert float(r["delay"]) == pytest.approx(float(np.exp(np.mean(np.log(delays)))), rel=1e-5)
        censored = [s for s in mine if np.isfinite(s["T_fit"]) and np.isnan(s["T_transition"]) and not s["diverged"]]
        assert int(r["n_censored"]) == len(censored)
        if censored:
            assert float(r["censored_above"]) == min(last - s["T_fit"] for s in censored)
    notes = " ".join(report.notes)
    assert "declared contraction of 'adamw'" in notes
    assert f"{float(gamma_eff('adamw', 1e-2, 1.0)):.4g}" in notes


def test_w_c_comes_from_the_option_else_from_the_configured_clamp(monkeypatch):
    @dataclasses.dataclass(frozen=True)
    class ProbeClamp:
        name: Literal["probe_clamp"] = "probe_clamp"
        norm: float = 0.0
        critical_norm: float = 0.0

    entry = slots.ConstraintEntry(
        settings=ProbeClamp,
        constrain=lambda s, params, hp, step: params,
        contraction=lambda s, c: c,
        axes={"norm": axis("clamp_norm", 0.0)},
    )
    monkeypatch.setitem(slots.SLOTS["after"], "probe_clamp", entry)
    config = experiment.from_dict(
        {
            "name": "clamp",
            "task": {"name": "modular", "p": 31},
            "model": {"name": "mlp", "hidden": [32]},
            "optim": {"name": "adamw", "after": [{"name": "probe_clamp", "critical_norm": 20.0}]},
            "train": {"steps": 100, "log_every": 50},
            "grid": {"clamp_norm": [0.0, 10.0], "seed": [0, 1]},
        }
    )
    assert iv.intervention_axes(config) == {"clamp_norm": 0.0}
    assert iv.critical_norm(config, InterventionOptions()) == 20.0
    assert iv.critical_norm(config, InterventionOptions(w_c=5.0)) == 5.0


def test_intervals_are_reproducible_from_the_seed_option():
    ratios = np.exp(np.random.default_rng(0).normal(1.0, 0.5, 8))
    plan = [({"probe_gain": g, "seed": s}, 100.0 * (ratios[s] if g == 2 else 1)) for s in range(8) for g in (1, 2)]

    def interval(seed):
        a = arm(analyse(plan, {"probe_gain": 1.0}, InterventionOptions(n_bootstrap=200, seed=seed)), "probe_gain", 2)
        return a.ratio.lo, a.ratio.hi

    assert interval(0) == interval(0) and interval(0) != interval(1)


def test_a_run_a_stop_rule_removed_is_censored_at_its_stopped_step():
    plan = [
        ({"temperature": tau, "seed": s}, np.nan if (tau, s) == (2.0, 1) else 100.0 * tau)
        for s in range(2)
        for tau in (1.0, 2.0)
    ]
    rows = rows_of(plan)
    axes = {k: np.array([r[k] for r in rows], np.float64) for k in ("temperature", "seed")}
    stopped = np.array([np.nan, np.nan, np.nan, 3000.0])  # the censored run left the batch at step 3000
    runs, _ = iv.intervention_runs(rows, axes, {"temperature": 1.0}, STEPS[-1], "fit", InterventionOptions(), stopped)
    assert runs.censored.tolist() == [False, False, False, True] and runs.bound[3] == 3000.0 - T_FIT
