"""The live table (`nht_jax.training.live`): its rows on exactly constructed histories (the pilot's V̂_post gives the
closed-form forecast, the run's own floor while no pilot has transitioned, diverged, not fitted, waiting), the
histories of a slice with a run that left the batch, the figure's time budget, and a real sweep: the files and
progress.log lines each chunk, and the same trajectories with `live.enabled = false`."""

import math
import re
import types

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.experiment import AnalysisConfig
from nht_jax.measure.forecast import heldout
from nht_jax.training import live
from nht_jax.results.folder import load_results
from nht_jax.training.sweep import run_sweep

RULE = AnalysisConfig(transition_metric="test_acc")
STEPS = np.arange(0.0, 1001.0, 10.0)
T_FIT, T_PEAK, GAMMA = 200.0, 300.0, 2e-3


def history(v, fit_at=T_FIT, transition_at=math.inf, n=STEPS.size, finite=None):
    """A run's history over the first n logs: V, train accuracy 1 from fit_at, test accuracy 1 from transition_at."""
    return {
        "steps": STEPS[:n],
        "norm_sq": np.asarray(v, float)[:n],
        "train_acc": (STEPS >= fit_at).astype(float)[:n],
        "test_acc": (STEPS >= transition_at).astype(float)[:n],
        "finite": (np.ones(STEPS.size) if finite is None else finite)[:n],
    }


def contracting():
    """V rises to a peak at T_PEAK, then contracts geometrically: V_t = 400·e^{−γ(t − T_PEAK)}."""
    return np.where(STEPS <= T_PEAK, 100.0 + STEPS, 400.0 * np.exp(-GAMMA * (STEPS - T_PEAK)))


def hparams(lams):
    return {"weight_decay": np.asarray(lams, float), "seed": np.zeros(len(lams), int)}


def test_a_transitioned_stronger_run_is_the_pilot_and_gives_the_closed_form_forecast():
    pilot_v = np.where(STEPS < 400.0, 300.0, 50.0)  # transitions at step 400, V = 50 there
    rows = live.live_rows(
        [history(contracting(), n=60), history(pilot_v, transition_at=400.0, n=60)],
        hparams([0.1, 1.0]),
        RULE,
        "norm_sq",
        live.LiveOptions(),
    )
    run, pilot = rows
    assert pilot["state"] == "transitioned" and pilot["T_transition"] == 400.0
    assert (run["state"], run["v_post_source"], run["pilots"], run["V_post"]) == (
        "peaked and contracting",
        "pilot",
        "1",
        50.0,
    )
    closed = T_PEAK + math.log(400.0 / 50.0) / GAMMA
    np.testing.assert_allclose([run["T_hat"], run["T_lo"], run["T_hi"]], closed, rtol=1e-6)
    assert live.counts(rows) | {"median_forecast": 0} == {
        "runs": 2,
        "fitted": 2,
        "contracting": 1,
        "transitioned": 1,
        "diverged": 0,
        "waiting": 0,
        "forecasts": 1,
        "median_forecast": 0,
        "law_forecasts": 0,
        "median_law": live.counts(rows)["median_law"],
    }
    assert run["law_reason"] == "no decay-only contraction g (γ_eff not given to the table)"


def test_without_a_transitioned_pilot_the_forecast_uses_the_runs_own_floor():
    v = np.where(STEPS <= T_PEAK, 100.0 + STEPS, 30.0 + 370.0 * np.exp(-0.01 * (STEPS - T_PEAK)))
    weak_stronger = history(100.0 + STEPS, n=45)  # a stronger run that has not transitioned: no pilot
    run, _ = live.live_rows([history(v, n=45), weak_stronger], hparams([0.1, 1.0]), RULE, "norm_sq", live.LiveOptions())
    assert run["v_post_source"] == "floor" and run["pilots"] == "" and run["V_post"] == pytest.approx(30.0, rel=1e-4)
    assert T_PEAK < run["T_hat"] < math.inf


LAW_G, KAPPA, V_MEM, V_STAR = 0.02, 0.25, 400.0, 50.0


def law_run(fit_at: float, transition_at: float = math.inf) -> dict:
    """A run that fits at fit_at with V = V_MEM, then contracts at κ·g exactly, V_t = V_MEM·e^{−κg(t − fit_at)}
    (flat at V_MEM before): by the law it reaches V_STAR at fit_at + log(V_MEM/V_STAR)/(κ·g)."""
    v = V_MEM * np.exp(-KAPPA * LAW_G * np.clip(STEPS - fit_at, 0.0, None))
    return history(v, fit_at=fit_at, transition_at=transition_at)


def test_the_law_forecasts_a_fitted_run_from_a_transitioned_one_exactly():
    """A run of another seed at the same λ transitioned where its V reached V_STAR: its κ and V★ are the law's,
    and the fitted run's forecast is made from its latest log (its V has stayed at V_MEM since it fit at 240: the
    law from step 250, not from its T_fit), before its norm has peaked or fallen."""
    delay = math.log(V_MEM / V_STAR) / (KAPPA * LAW_G)  # 415.9 steps
    t_done = 100.0 + math.ceil(delay / 10) * 10  # its first log at or past V_STAR
    done = law_run(100.0, transition_at=t_done)
    fresh = {k: v[:26] for k, v in history(np.full(STEPS.size, V_MEM), fit_at=240.0).items()}  # now: step 250
    lams = {"weight_decay": np.array([0.1, 0.1]), "seed": np.array([0, 1])}
    rows = live.live_rows([fresh, done], lams, RULE, "norm_sq", live.LiveOptions(), g=np.full(2, LAW_G))
    run, pilot = rows
    assert pilot["state"] == "transitioned" and math.isnan(pilot["T_law"])
    v_t = V_MEM * math.exp(-KAPPA * LAW_G * (t_done - 100.0))  # the calibration run's V at its T
    kappa = math.log(V_MEM / v_t) / (LAW_G * (t_done - 100.0))
    assert run["kappa"] == pytest.approx(KAPPA, rel=1e-9) and kappa == pytest.approx(KAPPA, rel=1e-9)
    assert run["V_star"] == pytest.approx(v_t, rel=1e-12)
    assert run["T_law"] == pytest.approx(250.0 + math.log(V_MEM / v_t) / (KAPPA * LAW_G), rel=1e-9)
    assert math.isnan(run["T_law_lo"]) and run["law_reason"].startswith("no interval")  # one residual only
    assert math.isnan(run["T_hat"])  # Algorithm 1 has no contraction yet
    assert live.progress_line(250, rows).endswith(f"by the law {run['T_law']:.0f} (1 runs)")


def test_a_pilot_sweep_calibrates_the_law_before_the_grid_has_transitioned():
    """No run of the grid has transitioned, so alone it has no V★; a pilot sweep's run (seed 5, transitioned where
    its V reached V_STAR) gives κ and V★, and the forecast from step 250 is the law's, exactly."""
    t_done = 100.0 + math.ceil(math.log(V_MEM / V_STAR) / (KAPPA * LAW_G) / 10) * 10
    pilot = law_run(100.0, transition_at=t_done)
    s = live.summary_of(pilot, RULE)
    runs = heldout.Runs(
        STEPS,
        pilot["norm_sq"][None, :],
        np.array([5.0]),
        np.array([0.1]),
        np.array([LAW_G]),
        heldout.cells({"weight_decay": np.array([0.1]), "seed": np.array([5])}, ("weight_decay", "seed")),
        np.array([s["T_fit"]]),
        np.array([s["T_transition"]]),
        np.zeros(1, bool),
        np.zeros(1, bool),
    )
    prior = heldout.calibrate(runs, (5.0,), live.LiveOptions())
    fresh = {k: v[:26] for k, v in history(np.full(STEPS.size, V_MEM), fit_at=240.0).items()}
    lams = {"weight_decay": np.array([0.1]), "seed": np.array([0])}
    (alone,) = live.live_rows([fresh], lams, RULE, "norm_sq", live.LiveOptions(), g=np.full(1, LAW_G))
    assert math.isnan(alone["T_law"]) and alone["law_reason"].startswith("no V★")
    (row,) = live.live_rows([fresh], lams, RULE, "norm_sq", live.LiveOptions(), g=np.full(1, LAW_G), prior=prior)
    v_t = V_MEM * math.exp(-KAPPA * LAW_G * (t_done - 100.0))
    assert row["kappa"] == pytest.approx(KAPPA, rel=1e-9) and row["V_star"] == pytest.approx(v_t, rel=1e-12)
    assert row["T_law"] == pytest.approx(250.0 + math.log(V_MEM / v_t) / (KAPPA * LAW_G), rel=1e-9)


def test_the_pilot_folder_is_read_before_training(finished, tmp_path):
    """`live.calibration`: a finished folder gives its calibration (the tiny sweep: 40 steps, nothing
    transitions, so κ is NaN), a folder that is not one stops the sweep before anything is trained, in one line."""
    cal = live.pilot_calibration(finished, live.LiveOptions())
    assert cal.seeds == (0.0,) and math.isnan(cal.kappa["all"]) and cal.lam.size == 0
    res = load_results(finished)
    del res.metrics["finite"]  # an imported folder may not record it: every run counts as finite
    runs = live.folder_runs(res, "norm_sq", ("weight_decay", "seed"))
    np.testing.assert_array_equal(runs.v, np.asarray(res.metrics["norm_sq"], np.float64))
    config = experiment.load(
        "tiny",
        [
            "train.steps=20",
            "train.log_every=10",
            "model.hidden=[8]",
            "grid.seed=[0]",
            f"live.calibration={tmp_path / 'nowhere'}",
        ],
    )
    with pytest.raises(ConfigError, match="^live.calibration = .*nowhere"):
        run_sweep(config, tmp_path / "out", progress=False)
    assert not (tmp_path / "out" / "trajectories.npz").exists() and not (tmp_path / "out" / "checkpoint.npz").exists()


def test_the_law_says_why_it_has_no_forecast():
    fresh = law_run(240.0)
    alone = live.live_rows(
        [fresh],
        {"weight_decay": np.array([0.1]), "seed": np.array([0])},
        RULE,
        "norm_sq",
        live.LiveOptions(),
        g=np.full(1, LAW_G),
    )
    assert math.isnan(alone[0]["T_law"]) and alone[0]["law_reason"].startswith("no V★")
    fixed = live.live_rows(
        [fresh, law_run(100.0, transition_at=700.0)],
        {"weight_decay": np.array([0.1, 0.1]), "seed": np.array([0, 1])},
        RULE,
        "norm_sq",
        live.LiveOptions(kappa="fixed", kappa_fixed=0.5),
        g=np.full(2, LAW_G),
    )
    assert fixed[0]["kappa"] == 0.5 and np.isfinite(fixed[0]["T_law"])


def test_diverged_not_fitted_and_waiting_runs():
    finite = (STEPS < 500).astype(float)
    rows = live.live_rows(
        [history(100.0 + STEPS, finite=finite), history(100.0 + STEPS, fit_at=math.inf), None],
        hparams([0.1, 1.0, 3.0]),
        RULE,
        "norm_sq",
        live.LiveOptions(),
    )
    assert [r["state"] for r in rows] == ["diverged", "not fitted", "waiting"]
    assert rows[0]["reason"] == "diverged at step 500" and math.isnan(rows[2]["step"])
    line = live.progress_line(1000, rows)
    assert line.startswith(
        "live at step 1000: 3 runs: 0 fitted, 0 contracting, 0 transitioned, 1 diverged, 1 waiting; no forecast yet"
    )


def test_a_run_that_left_the_batch_is_diagnosed_up_to_its_stopped_step_and_later_slices_wait():
    buffer = {k: np.stack([v, v]) for k, v in history(contracting()).items() if k != "steps"}
    s = types.SimpleNamespace(buffer=buffer, stopped=np.array([np.nan, 300.0]), logs_done=60)
    training = types.SimpleNamespace(
        steps=STEPS, done_metrics=[], done_stopped=[], total_logs=STEPS.size - 1, num_runs=3
    )
    histories, stopped = live.slice_histories(training, s)
    assert [h["steps"][-1] for h in histories[:2]] == [600.0, 300.0] and histories[2] is None
    np.testing.assert_array_equal(stopped, [np.nan, 300.0, np.nan])
    rows = live.live_rows(histories, hparams([0.1, 0.1, 1.0]), RULE, "norm_sq", live.LiveOptions(), stopped)
    assert rows[1]["stopped_step"] == 300.0 and rows[1]["step"] == 300.0 and rows[2]["state"] == "waiting"


def test_the_figure_is_drawn_within_its_time_budget_and_at_the_end(tmp_path):
    calls = []
    table = live.LiveTable(tmp_path, fresh=True, options=live.LiveOptions(figure_budget=1e-9))
    with live.drawing(calls.append):
        table.draw(final=False)  # first: drawn
        table.draw(final=False)  # too soon after it for a budget of 1e-9
        table.draw(final=True)  # the end: always
    assert calls == [tmp_path, tmp_path]
    table.draw(final=True)  # no drawer registered outside the block
    assert len(calls) == 2


def tiny(**live):
    sets = [
        "train.steps=60",
        "train.log_every=10",
        "model.hidden=[8]",
        "grid.seed=[0]",
        "execution.chunk_logs=2",
        *(f"live.{k}={str(v).lower()}" for k, v in live.items()),
    ]
    return experiment.load("tiny", sets)


@pytest.fixture(scope="module")
def live_on(tmp_path_factory):
    """`tiny()` trained once with the live table on (3 chunks of 20 steps), for the tests of this module that read
    what it wrote."""
    return run_sweep(tiny(), tmp_path_factory.mktemp("live") / "on", progress=False)


def test_a_sweep_writes_the_live_files_each_chunk_and_off_changes_no_result(live_on, tmp_path):
    on = live_on
    lines = [x for x in (on.path / "progress.log").read_text().splitlines() if "  live at step " in x]
    assert [x.split("live at step ")[1].split(":")[0] for x in lines] == ["20", "40", "60"]
    table = live.read_csv(on.path / live.LIVE_CSV)
    assert [r["run"] for r in table] == ["0", "1"] and {r["step"] for r in table} == {"60"}
    history = live.read_csv(on.path / live.LIVE_HISTORY)
    assert [(r["step"], r["run"]) for r in history] == [(s, r) for s in ("20", "40", "60") for r in ("0", "1")]
    off = run_sweep(tiny(enabled=False), tmp_path / "off", progress=False)
    assert not (tmp_path / "off" / live.LIVE_CSV).exists() and not (tmp_path / "off" / live.LIVE_HISTORY).exists()
    assert "live at step" not in (tmp_path / "off" / "progress.log").read_text()
    a, b = load_results(on.path), load_results(off.path)
    assert a.metrics.keys() == b.metrics.keys()
    for k in a.metrics:
        np.testing.assert_array_equal(a.metrics[k], b.metrics[k])
    assert experiment.digest(tiny()) == experiment.digest(tiny(enabled=False))
    assert "live" not in experiment.to_toml(tiny())  # [live] left out of config.toml at its defaults
    from nht_jax.figures import folder  # `nht report` redraws live.png where live.csv is

    for path, drawn in ((on.path, True), (off.path, False)):
        (path / live.LIVE_PNG).unlink(missing_ok=True)
        folder.redraw(path)
        assert (path / live.LIVE_PNG).exists() == drawn == (live.LIVE_PNG in folder.figure_names(load_results(path)))


# ----------------------------------------------------------------------------- the diagnosis' cost, same results


def old_fit_floor(steps, v, grid=200):
    """fit_floor before 2026-12-02: every grid point by its own lstsq."""
    from scipy import optimize

    t = np.asarray(steps, np.float64) - float(steps[0])
    v = np.asarray(v, np.float64)
    span = float(t[-1])

    def solve(log_k):
        basis = np.stack([np.ones_like(t), np.exp(-np.exp(log_k) * t)], axis=1)
        coef, *_ = np.linalg.lstsq(basis, v, rcond=None)
        return coef, float(np.sum((basis @ coef - v) ** 2))

    logs = np.linspace(math.log(0.01 / span), math.log(100.0 / span), grid)
    i = int(np.argmin([solve(k)[1] for k in logs]))
    if i in (0, grid - 1):
        return math.nan
    best = optimize.minimize_scalar(
        lambda k: solve(k)[1], bounds=(logs[i - 1], logs[i + 1]), method="bounded", options={"xatol": 1e-10}
    )
    (c, a), _ = solve(best.x)
    return float(c) if c > 0 and a > 0 and c < v[-1] else math.nan


def old_first_peak(values, fraction):
    """first_peak before 2026-12-02: a loop over the running-maximum records."""
    v = np.asarray(values, np.float64)
    for p in np.flatnonzero(v >= np.maximum.accumulate(v)):
        later = np.flatnonzero(v[p + 1 :] > v[p])
        end = p + 1 + later[0] if later.size else v.size
        fell = np.flatnonzero(v[p + 1 : end] <= (1.0 - fraction) * v[p])
        if fell.size:
            return int(p), int(p + 1 + fell[0])
    return int(np.argmax(v)), -1


def old_select_pilots(hparams, t_fit, free_axes=("weight_decay", "seed")):
    """select_pilots before 2026-12-02: one isclose per run and axis."""
    lam = np.asarray(hparams["weight_decay"], np.float64)
    fits = np.isfinite(np.asarray(t_fit, np.float64))
    fixed = [np.asarray(v) for k, v in hparams.items() if k not in free_axes]
    out = []
    for i in range(lam.size):
        same = np.ones(lam.size, bool)
        for values in fixed:
            same &= np.isclose(values.astype(np.float64), float(values[i]), rtol=1e-6, atol=0)
        cand = np.flatnonzero(same & fits & (lam > lam[i] * (1 + 1e-6)))
        top = lam[cand].max() if cand.size else None
        out.append(tuple(int(j) for j in cand if np.isclose(lam[j], top, rtol=1e-6, atol=0)) if cand.size else ())
    return out


def test_the_batched_floor_grid_gives_the_old_floor_bit_for_bit():
    """Noisy floors, pure exponentials (no floor), rising and flat stretches: the same ĉ (or none) as before."""
    from nht_jax.measure.forecast.window import fit_floor

    rng = np.random.default_rng(0)
    found = 0
    for k in range(60):
        t = np.arange(0.0, 10.0 * rng.integers(4, 40), 10.0) + 300.0
        kind = k % 4
        c, a, kappa = rng.uniform(1, 50), rng.uniform(1, 500), 10 ** rng.uniform(-4, -1)
        v = {
            0: c + a * np.exp(-kappa * (t - t[0])) * (1 + 0.01 * rng.standard_normal(t.size)),
            1: a * np.exp(-kappa * (t - t[0])),
            2: c + t,
            3: np.full(t.size, c) + rng.standard_normal(t.size),
        }[kind]
        new, old = fit_floor(t, v)[0], old_fit_floor(t, v)
        assert new == old or (math.isnan(new) and math.isnan(old)), (k, new, old)
        found += np.isfinite(new)
    assert found > 10


def test_first_peak_and_select_pilots_are_unchanged():
    from nht_jax.measure.forecast.v_post import select_pilots
    from nht_jax.measure.forecast.window import first_peak

    rng = np.random.default_rng(1)
    for k in range(3000):
        n = int(rng.integers(1, 30))
        v = rng.integers(-3, 8, n).astype(float) if k % 2 else np.cumsum(rng.standard_normal(n)) + 5.0
        fraction = float(rng.choice([0.1, 0.3, 0.9]))
        assert first_peak(v, fraction) == old_first_peak(v, fraction), (v, fraction)
    for k in range(200):
        n = int(rng.integers(1, 12))
        hp = {
            "weight_decay": rng.choice([0.01, 0.1, 0.1 * (1 + 1e-7), 1.0], n),
            "seed": rng.integers(0, 2, n),
            "learning_rate": rng.choice([1e-3, 1e-2], n),
            "train_fraction": rng.choice([0.5, 0.5 * (1 + 3e-6)], n),
        }
        t_fit = np.where(rng.random(n) < 0.7, 100.0, np.nan)
        assert select_pilots(hp, t_fit) == old_select_pilots(hp, t_fit)
        assert select_pilots(hp, t_fit, ("weight_decay", "seed", "learning_rate")) == old_select_pilots(
            hp, t_fit, ("weight_decay", "seed", "learning_rate")
        )


def test_a_resumed_sweep_keeps_the_complete_lines_of_its_history_and_mends_a_damaged_one(tmp_path):
    from nht_jax.training.live import HISTORY_COLUMNS, kept_history

    header = ",".join(HISTORY_COLUMNS) + "\n"
    path = tmp_path / "live_history.csv"
    assert kept_history(path, fresh=False) == header  # missing (its first write hit a full disk)
    path.write_text(header + "0,a\n1,b")  # the last append cut short
    assert kept_history(path, fresh=False) == header + "0,a\n"
    assert kept_history(path, fresh=True) == header
    path.write_text("0,a\n")  # no header of ours
    assert kept_history(path, fresh=False) == header


def test_live_png_is_rendered_once_per_drawing(tmp_path, monkeypatch):
    """Drawn while a sweep trains, live.png has fixed margins: one rendering per drawing (a tight layout and a
    cropped save rendered it three times)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from nht_jax.figures import live as live_figure

    rows = [
        {
            "step": s,
            "run": r,
            "state": "peaked and contracting" if s > 20 else "rising",
            "T_fit": 10.0,
            "T_transition": math.nan,
            "T_hat": 100.0 + r,
            "T_lo": 90.0,
            "T_hi": math.inf,
            "v_post_source": "floor",
        }
        for s in (10.0, 20.0, 30.0)
        for r in range(3)
    ]
    (tmp_path / live.LIVE_HISTORY).write_text(live.csv_text(rows, live.HISTORY_COLUMNS))
    renders = []
    real = FigureCanvasAgg.draw
    monkeypatch.setattr(FigureCanvasAgg, "draw", lambda canvas: renders.append(1) or real(canvas))
    assert live_figure.draw(tmp_path).read_bytes().startswith(b"\x89PNG")
    assert len(renders) == 1


def test_the_live_forecast_is_set_from_execution_and_changes_no_digest(tmp_path, monkeypatch):
    seen = []
    init = live.LiveTable.__init__
    monkeypatch.setattr(
        live.LiveTable,
        "__init__",
        lambda self, out, fresh, options=live.LiveOptions(), g=None, prior=None: (
            seen.append((options, g)),
            init(self, out, fresh, options, g, prior),
        )[1],
    )
    sets = ["train.steps=20", "train.log_every=10", "model.hidden=[8]", "grid.seed=[0]"]
    config = experiment.load(
        "tiny",
        [
            *sets,
            'live.forecast.v_post="pilot-trend"',
            "live.forecast.trend_weight=0.25",
            "live.forecast.kappa=run",
        ],
    )
    run_sweep(config, tmp_path / "trend", progress=False)
    [(options, g)] = seen
    assert (options.v_post, options.trend_weight, options.kappa) == ("pilot-trend", 0.25, "run")
    lr, lam = config.runs()["learning_rate"], config.runs()["weight_decay"]  # AdamW: V shrinks by (1 − ηλ)² a step
    np.testing.assert_allclose(g, -2 * np.log1p(-lr.astype(float) * lam.astype(float)), rtol=1e-6)
    assert experiment.digest(config) == experiment.digest(experiment.load("tiny", sets))
    assert "forecast" not in experiment.to_toml(tiny())
    assert 'v_post = "pilot-trend"' in experiment.to_toml(config)
    # the spellings before 2026-12-03 are read as the table's keys
    with pytest.warns(FutureWarning) as warned:
        old = experiment.load(
            "tiny", [*sets, 'execution.live_v_post="pilot-trend"', "execution.live_trend_weight=0.25"]
        )
    assert [str(w.message).split(" (")[0] for w in warned] == [
        "execution.live_v_post is now live.forecast.v_post",
        "execution.live_trend_weight is now live.forecast.trend_weight",
    ]
    assert (old.live.forecast.v_post, old.live.forecast.trend_weight) == ("pilot-trend", 0.25)
    with pytest.raises(ConfigError, match="live.forecast.v_post = 'median' must be one of"):
        experiment.load("tiny", ['live.forecast.v_post="median"'])
    with pytest.raises(ConfigError, match="live.forecast.trend_weight = 2.0 must lie in"):
        experiment.load("tiny", ["live.forecast.trend_weight=2"])
    with pytest.raises(ConfigError, match="unknown key 'live.forecast.kapa'. Did you mean 'kappa'"):
        experiment.load("tiny", ["live.forecast.kapa=1"])


def test_each_chunk_s_line_comes_before_its_live_line(live_on):
    """progress.log tells what happened in order: after each chunk of 2 log intervals (20 steps) its own line
    ("step 20/60 …", the progress hook), then the live table's line for that step (the live hook, which
    `default_hooks` places after it)."""
    events = []
    for line in (live_on.path / "progress.log").read_text().splitlines():
        if chunk := re.search(r"  step (\d+)/60 ", line):
            events.append(("chunk", int(chunk[1])))
        elif table := re.search(r"  live at step (\d+):", line):
            events.append(("live", int(table[1])))
    assert events == [(kind, step) for step in (20, 40, 60) for kind in ("chunk", "live")]


# ----------------------------------------------------------------------------- the cadence, nothing recomputed


def test_the_live_table_follows_its_cadence_and_the_loop_records_where_the_time_went(tmp_path):
    # live_every_s = 1 h: the first chunk and the last update the table, the chunk between (step 40) does not
    res = run_sweep(tiny(every_s=3600), tmp_path / "sparse", progress=False)
    lines = [x for x in (tmp_path / "sparse" / "progress.log").read_text().splitlines() if "  live at step " in x]
    assert [x.split("live at step ")[1].split(":")[0] for x in lines] == ["20", "60"]
    history = live.read_csv(tmp_path / "sparse" / live.LIVE_HISTORY)
    assert sorted({r["step"] for r in history}) == ["20", "60"]
    assert "\nevery_s" not in experiment.to_toml(tiny())  # left out of config.toml at its default
    # meta.json's "profile": the loop's parts and each hook's, summing to the training wall time
    profile = res.meta["profile"]
    assert {"start", "compile", "train", "checkpoint", "progress", "live table", "signals", "loop"} <= set(profile)
    assert all(seconds >= 0 for seconds in profile.values())
    assert abs(sum(profile.values()) - res.meta["train_wall_s"]) < 0.02  # rounding of train_wall_s (10 ms)


def test_unchanged_histories_are_not_summarized_again(monkeypatch):
    summarized = []
    monkeypatch.setattr(
        live, "summary_of", lambda h, rule: summarized.append(len(h["steps"])) or {"n": len(h["steps"])}
    )
    grown = [{"steps": np.arange(3.0)}, {"steps": np.arange(5.0)}, None]
    cache = {}
    first = live.cached_summaries(grown, None, cache)
    assert summarized == [3, 5] and first == [{"n": 3}, {"n": 5}, None]
    assert live.cached_summaries(grown, None, cache) == first and summarized == [3, 5]  # nothing grew: none again
    grown[0] = {"steps": np.arange(4.0)}
    assert live.cached_summaries(grown, None, cache) == [{"n": 4}, {"n": 5}, None]
    assert summarized == [3, 5, 4]  # only the run whose history grew
    assert live.cached_summaries(grown, None, None) == [{"n": 4}, {"n": 5}, None] and summarized == [3, 5, 4, 4, 5]
