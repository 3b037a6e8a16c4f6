"""The forecast scores (`nht_jax.analysis.forecast`) on planted results whose T_transition is known exactly: V
contracts exponentially to the pilot's V at its transition, so Algorithm 1 hits T at every lead; a weak run that
never transitions is separated (AUROC 1); the cut at each lead hides the later logs; the recorded live_history.csv
is read at each lead; the scores' pieces on hand-made forecasts; bad options."""

import math

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.analysis import forecast, registry
from nht_jax.analysis.bootstrap import MIN_DISTINCT_RESAMPLES, distinct_resamples
from nht_jax.analysis.forecast import ForecastOptions, forecast_report, lead_steps, score_lead
from nht_jax.base.errors import ConfigError
from nht_jax.training import live
from nht_jax.measure import summaries
from nht_jax.results.folder import Results

STEPS = np.arange(0.0, 3001.0, 10.0)
LAMS = [0.05, 0.1, 0.2, 0.4, 0.8]  # weak, three positives, the pilot
DELAYS = {0.1: 800.0, 0.2: 400.0, 0.4: 200.0}  # T − T_fit of the positives, T_fit = 1000
V_POST = 50.0


def exponential(lam, peak=1000.0, target=V_POST):
    """V = 400·e^{−γ(t − peak)}, reaching `target` at T = 1000 + delay (and above 400 before the peak when
    peak > 1000: rising to it linearly)."""
    t_tr = 1000.0 + DELAYS[lam]
    gamma = math.log(400.0 / target) / (t_tr - peak)
    v = 400.0 * np.exp(-gamma * (STEPS - peak))
    return (
        np.where(STEPS < peak, np.minimum(v, 300.0 + 100.0 * (STEPS - 1000.0) / max(peak - 1000.0, 1.0)), v)
        if peak > 1000
        else v
    )


def planted(peaks=None, v_post=lambda lam: V_POST):
    """The five runs of LAMS (seed 0): the weak run's V rises, fits at 1000 and never transitions; the positives
    fit at 1000 and transition at 1000 + DELAYS at V = v_post(λ); the pilot fits and transitions at step 100 at
    V = v_post(0.8)."""
    peaks = peaks or {}
    config = experiment.load(
        "tiny",
        [
            "grid.weight_decay=[" + ", ".join(map(str, LAMS)) + "]",
            "grid.seed=[0]",
            "train.steps=3000",
            "train.log_every=10",
        ],
    )
    hp = {k: np.asarray(v) for k, v in config.runs().items()}
    v, fit, tr = [], [], []
    for lam in LAMS:
        if lam == 0.05:
            v.append(100.0 + STEPS), fit.append(1000.0), tr.append(math.inf)
        elif lam == 0.8:
            v.append(np.full(STEPS.size, v_post(lam))), fit.append(100.0), tr.append(100.0)
        else:
            v.append(exponential(lam, peaks.get(lam, 1000.0), v_post(lam))), fit.append(1000.0)
            tr.append(1000.0 + DELAYS[lam])
    v = np.array(v)
    metrics = {
        "norm_sq": v,
        "weight_norm_sq": v,
        "finite": np.ones_like(v),
        "train_acc": (STEPS[None, :] >= np.array(fit)[:, None]).astype(float),
        "test_acc": (STEPS[None, :] >= np.array(tr)[:, None]).astype(float),
    }
    metrics |= {k: np.zeros_like(v) for k in config.domain.summary(config) if k not in metrics}
    summary = summaries.summarize(STEPS, metrics, hp, config)
    return Results(None, config, STEPS, metrics, hp, {k: np.unique(a) for k, a in hp.items()}, summary)


def replayed(report, lead):
    return [e for e in report.entries if e.source == "replay" and e.lead == lead]


def test_planted_exponential_contractions_are_forecast_exactly_at_every_lead():
    res = planted()
    assert [r["regime"] for r in res.summary] == ["weak", "intermediate", "intermediate", "intermediate", "structured"]
    report = forecast_report(res, ForecastOptions(n_bootstrap=20))
    for lead in report.options.leads:
        s = report.score("replay", lead)
        assert (s.n_positive, s.n_late, s.n_forecast, s.n_negative) == (3, 0, 3, 1)
        assert s.mape == pytest.approx(0, abs=1e-9) and s.median_ape == pytest.approx(0, abs=1e-9)
        assert {e.v_post_source for e in replayed(report, lead) if e.role == "positive"} == {"pilot"}
    assert report.left_out == "structured 1" and report.score("recorded", 0.0) is None


def test_the_law_forecasts_from_the_runs_transitioned_by_the_cut():
    """The planted delays are ∝ 1/λ, so every positive contracts at one κ of its g = −2·log(1 − ηλ): at half its
    delay the λ = 0.1 run (T = 1,800) is forecast by the law from the λ = 0.4 and 0.2 runs (T = 1,200, 1,400),
    exactly as computed here by hand; a run cut before any transition has no V★."""
    res = planted()
    report = forecast_report(res, ForecastOptions(n_bootstrap=20))
    law = {(e.run, e.lead): e for e in report.entries if e.source == "law"}
    eta = float(res.hparams["learning_rate"][0])
    g = {lam: -2 * math.log1p(-eta * lam) for lam in LAMS}
    kappa = np.median([math.log(400.0 / V_POST) / (g[lam] * DELAYS[lam]) for lam in (0.2, 0.4)])
    v_cut = 400.0 * math.exp(-math.log(400.0 / V_POST) / DELAYS[0.1] * 400.0)  # V at step 1,400
    e = law[(1, 0.5)]
    assert e.t_forecast == 1400.0 and e.V_post == pytest.approx(V_POST, rel=1e-12)
    assert e.T_hat == pytest.approx(1400.0 + math.log(v_cut / V_POST) / (kappa * g[0.1]), rel=1e-9)
    assert e.T_hat == pytest.approx(1800.0, rel=0.01)  # the law holds to the log1p's curvature
    assert math.isnan(law[(3, 0.0)].T_hat) and law[(3, 0.0)].reason.startswith("no V★")
    assert report.score("law", 0.5).n_forecast >= 1 and "by the law" in report.summary_line()


def test_a_weak_run_that_never_transitions_is_separated_at_every_lead():
    for score in ("forecast", "state"):
        report = forecast_report(planted(), ForecastOptions(n_bootstrap=20, score=score))
        assert [report.score("replay", f).auroc for f in report.options.leads] == [1.0] * 4
        weak = [e for e in report.entries if e.role == "negative" and e.source == "replay"]
        assert [e.t_forecast for e in weak] == [1020.0, 1200.0, 1500.0, 2000.0]  # T_fit + f·(budget − T_fit)
        assert {e.state for e in weak} == {"rising"} and all(math.isnan(e.T_hat) for e in weak)


def test_the_forecast_sees_only_the_logs_up_to_its_lead():
    """V of the slowest positive rises to a peak at 1300 and contracts from there to T = 1800: before the peak
    the cut history gives no forecast (a full history would), after it the exact one."""
    report = forecast_report(planted({0.1: 1300.0}), ForecastOptions(n_bootstrap=20))
    slow = {e.lead: e for e in report.entries if e.run == 1 and e.source == "replay"}
    assert [slow[f].t_forecast for f in (0.0, 0.1, 0.25, 0.5)] == [1020.0, 1080.0, 1200.0, 1400.0]
    assert all(math.isnan(slow[f].T_hat) and "rising" in slow[f].reason for f in (0.0, 0.1, 0.25))
    assert slow[0.5].T_hat == pytest.approx(1800.0, rel=1e-9)


def power(lam):
    """V at T_transition as an exact power law in λ: V_POST at the pilot's λ = 0.8, ∝ λ^{−1/2}."""
    return V_POST * (lam / 0.8) ** -0.5


def test_the_trend_rule_recovers_an_exact_power_law_once_two_lambda_have_transitioned():
    """The slowest positive (λ 0.1, T 1800): at leads 0 and 0.1 only the pilot (λ 0.8) has transitioned, one level,
    so every pilot rule aims at V(0.8) and misses; from lead 0.25 (t 1200: λ 0.4 transitioned) the full trend
    (trend_weight 1) is the power law and hits T exactly, where the old rule (largest λ) still misses; the damped
    trend misses by less, its interval (the bracket) holding T; without the bracket (se = 0) it holds nothing."""
    res = planted(v_post=power)
    by = {}
    for name, options in {
        "full": dict(v_post="pilot-trend", trend_weight=1.0),
        "old": dict(v_post="pilot"),
        "damped": dict(v_post="pilot-trend"),
        "fixed": dict(v_post="pilot-trend", v_post_interval=False),
    }.items():
        report = forecast_report(res, ForecastOptions(n_bootstrap=0, **options))
        by[name] = {e.lead: e for e in report.entries if e.run == 1 and e.source == "replay"}
    for lead in (0.0, 0.1):
        assert by["full"][lead].V_post == pytest.approx(power(0.8)) and by["full"][lead].ape > 0.05
    for lead in (0.25, 0.5):
        full, old, damped, fixed = (by[k][lead] for k in ("full", "old", "damped", "fixed"))
        assert full.V_post == pytest.approx(power(0.1), rel=1e-9) and full.v_post_error == pytest.approx(0, abs=1e-9)
        assert full.ape == pytest.approx(0, abs=1e-9) and old.ape > 0.05 and old.v_post_error < 0
        assert 0 < damped.ape < old.ape and damped.T_lo <= damped.T_transition <= damped.T_hi
        assert fixed.T_hat == damped.T_hat and not fixed.T_lo <= fixed.T_transition <= fixed.T_hi


def test_lead_steps_start_fit_lead_logs_after_the_fit_and_fall_on_logs():
    np.testing.assert_array_equal(lead_steps(STEPS, 1000.0, 1800.0, (0, 0.1, 0.25, 0.5), 2), [1020, 1080, 1200, 1400])
    np.testing.assert_array_equal(lead_steps(STEPS, 1000.0, 1033.0, (0, 0.5, 0.9), 0), [1000, 1010, 1020])


def test_the_recorded_live_history_is_read_at_each_lead(tmp_path):
    """A live_history.csv with rows at chunk ends 1100 and 1300: at a lead step its last row at or before it."""
    res = planted()
    rows = [
        {
            "step": s,
            "run": i,
            "state": "contracting",
            "T_fit": 1000.0,
            "T_transition": math.nan,
            "T_hat": 1000.0 + DELAYS.get(LAMS[i], 0.0) * k,
            "T_lo": 900.0,
            "T_hi": 5000.0,
            "v_post_source": "pilot",
            "T_law": 2000.0 + s,
            "T_law_lo": 1500.0,
            "T_law_hi": 1600.0,
        }
        for k, s in ((1.0, 1100.0), (1.5, 1300.0))
        for i in range(len(LAMS))
    ]
    (tmp_path / live.LIVE_HISTORY).write_text(live.csv_text(rows, live.HISTORY_COLUMNS))
    report = forecast_report(Results(tmp_path, *list(vars(res).values())[1:]), ForecastOptions(n_bootstrap=20))
    rec = {(e.run, e.lead): e for e in report.entries if e.source == "recorded"}
    assert math.isnan(rec[(3, 0.0)].T_hat) and "no row recorded" in rec[(3, 0.0)].reason  # 1020 < 1100
    assert rec[(3, 0.5)].T_hat == 1200.0  # 1100 ≤ 1100 < 1300: the first row, exact
    assert rec[(1, 0.5)].T_hat == 1000.0 + 800 * 1.5  # 1400 ≥ 1300: the second row
    assert rec[(1, 0.5)].ape == pytest.approx(400 / 1800) and report.score("recorded", 0.5).coverage == 1.0
    law = {(e.run, e.lead): e for e in report.entries if e.source == "recorded law"}  # the law's columns, the same rows
    assert math.isnan(law[(3, 0.0)].T_hat) and law[(3, 0.5)].T_hat == 3100.0 and law[(1, 0.5)].T_hat == 3300.0
    assert report.score("recorded law", 0.5).coverage == 0.0 and "the law as recorded" in report.summary_line()


def make(role, t_hat, t_tr=2000.0, t=1500.0, lo=-math.inf, hi=math.inf, state="contracting"):
    return forecast.entry("replay", 0, role, 0.1, t, 1000.0, t_tr, state, t_hat, lo, hi, "pilot", "")


def test_the_scores_of_hand_made_forecasts():
    entries = [
        make("positive", 2200.0, lo=2100.0, hi=2300.0),  # ape 0.1, T below the interval
        make("positive", 1000.0, lo=900.0, hi=2100.0),  # ape 0.5, covered
        make("positive", math.nan, state="rising"),  # no forecast: score 0
        make("positive", 1600.0, t_tr=1400.0),  # late: its lead step is after T
        make("negative", 2000.0),
        make("negative", math.nan, state="rising"),
    ]
    s = score_lead(entries, "replay", 0.1, 3000.0, ForecastOptions(n_bootstrap=50))
    assert (s.n_positive, s.n_late, s.n_forecast, s.n_negative) == (4, 1, 2, 2)
    assert s.mape == pytest.approx(0.3) and s.median_ape == pytest.approx(0.3) and s.coverage == 0.5
    assert math.isnan(s.mape_lo) and math.isnan(s.mape_hi)  # two forecasts: 3 distinct resamples, no interval
    assert math.isnan(s.auroc_lo) and math.isnan(s.auroc_hi)  # 3 scored positives, 2 negatives: 10·3 = 30 < 40
    # positives' scores 3000/2200, 3000/1000, 0 against negatives' 3000/2000, 0: pairs won 0+1, 1+1, 0+½ of 6
    assert s.auroc == pytest.approx(3.5 / 6)
    assert math.isnan(forecast.auroc([1.0], []))  # no negatives: no AUROC


APES = [0.1, 0.5, 0.2, 0.9, 0.05, 0.3]  # unequal, so a resample's mean depends on which it drew


@pytest.mark.parametrize("n, distinct", [(2, 3), (4, 35), (5, 126)])
def test_the_mape_interval_is_shown_only_with_forty_distinct_resamples_of_the_forecasts(n, distinct):
    """The MAPE's bootstrap resamples the n forecasts: C(2n − 1, n) distinct resamples (`nht_jax.analysis.bootstrap`),
    3 for 2 and 35 for 4, too few for a 95 % interval (issue 43: the tables printed [68.5 %, 68.5 %] over one
    forecast): NaN bounds in the row and n.a. with the count in the headline; with 5 (126) the bootstrap's own
    interval, computed here from the same resamples."""
    options = ForecastOptions(leads=(0.0,), n_bootstrap=200)
    entries = [make("positive", 2000.0 * (1 + a)) for a in APES[:n]]
    s = score_lead(entries, "replay", 0.0, 3000.0, options)
    report = forecast.ForecastReport((s,), tuple(entries), 3000.0, "norm_sq", "none", options)
    assert distinct_resamples(n) == distinct and s.n_forecast == n
    if distinct < MIN_DISTINCT_RESAMPLES:
        assert math.isnan(s.mape_lo) and math.isnan(s.mape_hi)
        assert f"[n.a.: {distinct} distinct resamples over {n} forecasts, < 40]" in report.headline()
    else:
        lo, hi = forecast.bootstrap_interval(np.mean, (np.array(APES[:n]),), options)
        assert (s.mape_lo, s.mape_hi) == pytest.approx((lo, hi), rel=1e-12) and lo < s.mape < hi
        assert f"[{lo:.1%}, {hi:.1%}] (126 distinct resamples over 5 forecasts)" in report.headline()


@pytest.mark.parametrize("positives, negatives, shown", [(2, 3, False), (2, 4, True), (1, 5, True), (1, 4, False)])
def test_the_auroc_interval_needs_forty_distinct_joint_resamples(positives, negatives, shown):
    """Positives and negatives are resampled apart, so the distinct resamples are the product of their counts:
    2 × 3 runs give 3·10 = 30 (< 40: NaN bounds), 2 × 4 give 3·35 = 105, 1 × 5 give 1·126, 1 × 4 give 35; a rule on
    either count alone, or on their sum, answers otherwise for one of these."""
    entries = [make("positive", 1000.0 + 300.0 * k) for k in range(positives)] + [
        make("negative", 1500.0 + 400.0 * k) for k in range(negatives)
    ]
    s = score_lead(entries, "replay", 0.1, 3000.0, ForecastOptions(n_bootstrap=200))
    assert np.isfinite(s.auroc)
    if shown:
        assert s.auroc_lo <= s.auroc <= s.auroc_hi and np.isfinite(s.auroc_lo)
    else:
        assert math.isnan(s.auroc_lo) and math.isnan(s.auroc_hi)


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("leads", (0.0, 1.0), "fractions in [0, 1)"),
        ("weak_lead", "steps", "budget or delay"),
        ("score", "norm", "forecast or state"),
        ("v_post", "given", "pilot, pilot-trend, floor, oracle"),
        ("trend_weight", 1.5, "trend_weight"),
        ("pilot_free_axes", ("seed",), "weight_decay"),
        ("peak_drop", 1.5, "peak_drop"),
        ("fit_lead_logs", -1, "≥ 0"),
    ],
)
def test_bad_options_say_what_is_wrong(key, value, words):
    with pytest.raises(ConfigError, match=words.replace("[", r"\[").replace(")", r"\)").replace("(", r"\(")):
        ForecastOptions(**{key: value})


def test_registered_with_its_table_and_figure(tmp_path):
    assert "forecast" in registry.ANALYSES
    record = registry.ANALYSES["forecast"]
    report = record.run(planted(), ForecastOptions(n_bootstrap=20), {})
    tables = record.tables(report)
    assert set(tables) == {"forecast_scores.csv", "forecast_runs.csv"}
    assert tables["forecast_scores.csv"].splitlines()[0].startswith("source,lead,n_positive,n_late,n_forecast,mape")
    assert record.figures(planted(), report, tmp_path) == ("forecast.png",) and (tmp_path / "forecast.png").exists()
    assert record.summary(report).startswith("Forecast scored (pilot, score forecast): MAPE at T_fit")
    assert record.run(planted(), ForecastOptions(regimes=("strong",)), {}) is None  # no positive: nothing


@pytest.mark.parametrize("weak_lead, cut", [("budget", 1100.0), ("delay", 650.0)])
def test_weak_lead_places_the_negatives_cut(tmp_path, weak_lead, cut):
    """A negative has no T: at lead f = 0.5 it is cut at T_fit + f·(B − T_fit) ("budget": 200 + 0.5·1800 = 1100)
    or at T_fit + f·D̃ ("delay", D̃ the positives' median delay: median(800, 1300, 600, 1000) = 900, so 650) on the
    early-warning test's planted folder (T_fit = 200, B = 2000, log every 50); the positives' cuts do not move."""
    from nht_jax.results.folder import load_results

    from .test_early_warning import write_planted

    res = load_results(write_planted(tmp_path / "planted"))
    report = forecast_report(res, ForecastOptions(leads=(0.5,), weak_lead=weak_lead, n_bootstrap=0))
    negatives = {e.run: e.t_forecast for e in report.entries if e.role == "negative" and e.source == "replay"}
    positives = {e.run: e.t_forecast for e in report.entries if e.role == "positive" and e.source == "replay"}
    assert negatives == {4: cut, 5: cut}
    assert positives == {0: 600.0, 1: 850.0, 2: 500.0, 3: 700.0}  # T_fit + 0.5·(T − T_fit)
