"""The emergence analysis (nht_jax.analysis.emergence) on planted summary rows and trajectories with known ratios,
transition times and critical widths, and through `nht analyze` on a planted results directory."""

import csv

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.measure import summaries
from nht_jax.analysis import emergence
from nht_jax.analysis.analyze import options_from, write_analysis
from nht_jax.analysis.emergence import EmergenceOptions
from nht_jax.results import folder as results
from nht_jax.measure import stopping
from nht_jax.results.folder import load_results

STEPS = np.arange(0, 4001, 50, dtype=np.float64)
WIDTHS = (16, 32, 64, 128)
V0 = 10.0


def trajectory(t_fit, t_transition, v_sc, v_st, rise_through=False, tail=1.0):
    """V: from V0 up to v_sc at T_fit; with a transition, geometric decay to v_st at T_transition (rise_through:
    linear, the norm still rising at the jump when v_st > v_sc), then geometric decay by the factor `tail` to the
    last log; without one, flat at v_sc."""
    v = np.where(STEPS <= t_fit, V0 + (v_sc - V0) * STEPS / t_fit, v_sc)
    if np.isfinite(t_transition):
        frac = np.clip((STEPS - t_fit) / (t_transition - t_fit), 0, 1)
        between = v_sc + (v_st - v_sc) * frac if rise_through else v_sc * (v_st / v_sc) ** frac
        after = np.clip((STEPS - t_transition) / (STEPS[-1] - t_transition), 0, 1)
        v = np.where(STEPS > t_fit, between * tail**after, v)
    return v


def planted(plan, rise_through=False, tail=1.0):
    """Summary rows and (runs, logs) V for plan = [(λ, width, seed, T_fit, T_transition, V_sc, V_st)]."""
    rows, norms = [], []
    for i, (lam, width, seed, t_fit, t_tr, v_sc, v_st) in enumerate(plan):
        regime = "weak" if np.isnan(t_tr) else ("structured" if t_tr == t_fit else "intermediate")
        rows.append(
            {
                "run": i,
                "width": width,
                "weight_decay": lam,
                "seed": seed,
                "regime": regime,
                "T_fit": t_fit,
                "T_transition": t_tr,
                "diverged": False,
            }
        )
        norms.append(trajectory(t_fit, t_tr, v_sc, v_st, rise_through, tail))
    return rows, np.array(norms)


def emergence_plan(n_star, ratio_at_16=8.0, exponent=-0.5, seeds=(0, 1, 2), delay_at_16=3200.0):
    """λ ↦ its critical width: widths ≥ N* transition in every seed, the others never do. V_sc/V_st =
    ratio_at_16 · (N/16)^exponent, V_sc = 100 N, delay = delay_at_16 · 16/N (a multiple of 50 steps)."""
    plan = []
    for lam, critical in n_star.items():
        for width in WIDTHS:
            for seed in seeds:
                ratio = ratio_at_16 * (width / 16) ** exponent
                t_tr = 200 + delay_at_16 * 16 / width if width >= critical else np.nan
                plan.append((lam, width, seed, 200.0, t_tr, 100.0 * width, 100.0 * width / ratio))
    return plan


def analyse(plan, rise_through=False, tail=1.0, **options):
    options = EmergenceOptions(n_bootstrap=200, **options)
    rows, norms = planted(plan, rise_through, tail)
    return emergence.emergence_analysis(emergence.width_runs(rows, STEPS, norms, options), options)


def verdicts(report):
    return {v.id: v.verdict for v in report.verdicts}


def test_planted_ratios_critical_widths_and_delays_are_recovered():
    report = analyse(emergence_plan({0.1: 64, 1.0: 32}))
    runs = report.runs
    usable = runs.usable(("intermediate",))
    assert runs.ratio[usable] == pytest.approx(8.0 * (runs.width[usable] / 16) ** -0.5)
    assert report.pooled.slope == pytest.approx(-0.5) and report.pooled.ci == pytest.approx((-0.5, -0.5))
    for trend in report.ratio_trends:
        assert trend.slope == pytest.approx(-0.5) and trend.r2 == pytest.approx(1.0)
    for trend in report.delay_trends:
        assert trend.slope == pytest.approx(-1.0)
    small, large = report.critical  # slices in order of λ
    assert (small.value, small.interval, small.position, small.monotone) == (64, (32, 64), "inside", True)
    assert (large.value, large.interval) == (32, (16, 32))
    assert small.shares == (0, 0, 1, 1)
    assert verdicts(report) == {"E1": "✓", "E2": "✓", "E3": "✓"}
    rows = {(r["weight_decay"], r["width"]): r for r in report.rows()}
    assert rows[0.1, 64]["ratio"] == pytest.approx(4.0) and rows[0.1, 64]["delay"] == pytest.approx(800)
    assert rows[0.1, 64]["V_st"] == pytest.approx(6400 / 4)  # V_st = V at the last log ("final")


def test_runs_that_never_transition_get_no_v_st_and_are_listed():
    report = analyse(emergence_plan({0.1: 64}))
    runs = report.runs
    never = ~runs.transitioned
    assert never.sum() == 6 and np.isnan(runs.table.v_post[never]).all()
    rows = {r["width"]: r for r in report.rows()}
    assert rows[16]["n_transitioned"] == 0 and np.isnan(rows[16]["V_st"]) and np.isnan(rows[16]["ratio"])
    assert rows[16]["no_V_st_runs"] == "0 1 2" and rows[64]["no_V_st_runs"] == ""


def test_v_st_and_v_sc_follow_their_options():
    plan = emergence_plan({0.1: 16})
    v_sc, v_st = np.array([p[5] for p in plan]), np.array([p[6] for p in plan])
    assert analyse(plan, tail=0.5).runs.table.v_post == pytest.approx(v_st / 2)  # "final": the last log
    assert analyse(plan, tail=0.5, v_st="transition").runs.table.v_post == pytest.approx(v_st)
    assert analyse(plan, tail=0.5, v_st="min_after_transition").runs.table.v_post == pytest.approx(v_st / 2)
    rising = emergence_plan({0.1: 16}, ratio_at_16=0.5, exponent=0.0)  # V doubles from T_fit to T_transition
    assert analyse(rising, rise_through=True).runs.table.v_fit == pytest.approx(v_sc)
    assert analyse(rising, rise_through=True, v_sc="peak").runs.table.v_fit == pytest.approx(2 * v_sc)


def test_critical_width_interval_comes_from_the_seed_bootstrap_when_seeds_disagree():
    seeds = np.repeat([0, 1, 2], 4)
    width = np.tile(WIDTHS, 3)
    # width 32 transitions in seed 0 only, 64 in seeds 0 and 1, 128 in every seed
    hit = np.array([[False, True, True, True], [False, False, True, True], [False, False, False, True]]).ravel()
    crit = emergence.critical_width(width, hit, seeds, EmergenceOptions(n_bootstrap=500))
    assert crit.value == 64 and crit.bracket == (32, 64)
    assert crit.shares == pytest.approx((0, 1 / 3, 2 / 3, 1))
    assert crit.interval == (16, 128)  # resamples {0,0,0} → 32 … {2,2,2} → 128
    with_all = emergence.critical_width(width, hit, seeds, EmergenceOptions(n_bootstrap=500, min_share=1.0))
    assert with_all.value == 128 and with_all.position == "inside"
    one_seed = emergence.critical_width(WIDTHS, [False, True, True, True], [0] * 4)
    assert one_seed.interval == (16, 32) and one_seed.resampled.startswith("none")


def test_critical_width_outside_the_grid_and_not_monotone():
    none = emergence.critical_width(WIDTHS, [False] * 4, [0] * 4)
    assert none.value == np.inf and none.position == "above the grid" and none.interval == (128, np.inf)
    every = emergence.critical_width(WIDTHS, [True] * 4, [0] * 4)
    assert every.position == "below the grid" and every.interval == (0, 16) and every.text() == "≤ 16"
    gap = emergence.critical_width(WIDTHS, [False, True, False, True], [0] * 4)
    assert gap.value == 32 and not gap.monotone


def test_stronger_decay_raising_n_star_fails_and_censored_grids_cannot_tell():
    assert verdicts(analyse(emergence_plan({0.1: 32, 1.0: 128})))["E2"] == "✗"
    assert verdicts(analyse(emergence_plan({0.1: 64, 1.0: 64})))["E2"] == "✗"  # the same width inside the grid
    assert verdicts(analyse(emergence_plan({0.1: 16, 1.0: 16})))["E2"] == "n.a."  # every width transitions
    above = analyse(emergence_plan({0.1: 1024, 1.0: 64}))  # λ = 0.1: no width within the budget
    assert above.critical[0].position == "above the grid" and verdicts(above)["E2"] == "✓"


def test_a_lambda_that_never_fits_is_left_out_of_e2():
    plan = emergence_plan({0.1: 128, 1.0: 32})
    plan += [(10.0, w, s, np.nan, np.nan, 100.0, 100.0) for w in WIDTHS for s in (0, 1, 2)]
    report = analyse(plan)
    e2 = {v.id: v for v in report.verdicts}["E2"]
    assert e2.verdict == "✓" and "never fits at λ = 10" in e2.number


def test_ratio_rising_with_width_fails_e1_and_the_slope_is_within_lambda():
    assert verdicts(analyse(emergence_plan({0.1: 16}, exponent=0.3)))["E1"] == "✗"
    # λ = 0.1 transitions only at the large widths but with a far larger ratio: pooling across λ would give a
    # rising ratio; the within-λ slope is the planted −0.5
    plan = emergence_plan({0.1: 64}, ratio_at_16=400.0) + emergence_plan({1.0: 16}, ratio_at_16=2.0)
    report = analyse(plan)
    usable = report.runs.usable(("intermediate",))
    naive = np.polyfit(np.log(report.runs.width[usable]), np.log(report.runs.ratio[usable]), 1)[0]
    assert naive > 0 and report.pooled.slope == pytest.approx(-0.5) and verdicts(report)["E1"] == "✓"


def test_e1_needs_the_interval_below_zero_unless_told_otherwise():
    plan = emergence_plan({0.1: 16}, exponent=-0.05, seeds=(0, 1))
    rng = np.random.default_rng(1)  # seed-level noise of ±0.5 in log ratio swamps the slope
    plan = [(lam, w, s, tf, tt, vsc, vst * np.exp(rng.normal(0, 0.5))) for lam, w, s, tf, tt, vsc, vst in plan]
    report = analyse(plan)
    assert report.pooled.ci[0] < 0 < report.pooled.ci[1]
    expected = "✓" if report.pooled.slope < 0 else "✗"
    assert verdicts(report)["E1"] == "✗" and verdicts(analyse(plan, ratio_needs_interval=False))["E1"] == expected


def test_a_norm_rising_through_the_jump_fails_e3():
    report = analyse(emergence_plan({0.1: 16}, exponent=0.0, ratio_at_16=0.8), rise_through=True)
    assert verdicts(report)["E3"] == "✗"
    assert np.nanmax(report.runs.drop) <= 0


def test_peak_drops_need_a_rise_first():
    steps = np.arange(5) * 10.0
    norms = np.array([[1, 4, 3, 2, 2], [5, 4, 3, 2, 1], [1, 2, 3, 4, 5]], float)
    drop, rose = emergence.peak_drops(steps, norms, [30, 30, np.nan])
    assert drop[:2] == pytest.approx([0.5, 0.6]) and np.isnan(drop[2])
    assert rose.tolist() == [True, False, False]


def test_options_are_checked():
    assert options_from(["emergence.v_st=transition"]).emergence.v_st == "transition"
    with pytest.raises(ConfigError, match="v_st"):
        options_from(["emergence.v_st=after"])
    with pytest.raises(ConfigError, match="min_share"):
        EmergenceOptions(min_share=0)
    rows, norms = planted(emergence_plan({0.1: 16}))
    with pytest.raises(ConfigError, match="depth"):
        emergence.width_runs(rows, STEPS, norms, EmergenceOptions(width_axis="depth"))


def write_planted_results(out, config, n_star):
    """A results directory in the real format (the sweep's writers, summary by nht_jax.measure.summaries) whose
    metrics are planted: train accuracy 1 from T_fit = 200, test accuracy 1 from T_transition (widths ≥ N*(λ)
    only), V as in `emergence_plan`, every other recorded metric a constant."""
    runs = config.runs()
    metrics = {name: [] for name in ("norm_sq", "train_acc", "test_acc")}
    widths = runs["width"] if "width" in runs else np.full(len(runs["seed"]), config.model.hidden[0])
    for width, lam in zip(widths, runs["weight_decay"]):
        ratio = 8.0 * (width / 16) ** -0.5
        t_tr = 200 + 3200 * 16 / width if width >= n_star[round(float(lam), 6)] else np.nan
        metrics["norm_sq"].append(trajectory(200.0, t_tr, 100.0 * width, 100.0 * width / ratio))
        metrics["train_acc"].append((STEPS >= 200).astype(float))
        metrics["test_acc"].append((STEPS >= t_tr).astype(float))
    metrics = {k: np.array(v) for k, v in metrics.items()}
    ones = np.ones_like(metrics["norm_sq"])
    metrics.update(
        {
            "finite": ones,
            "weight_norm_sq": metrics["norm_sq"],
            "head_norm_sq": metrics["norm_sq"] / 2,
            "layer_norm_sq/embed": metrics["norm_sq"] / 2,
            "layer_norm_sq/head": metrics["norm_sq"] / 2,
            "train_loss": 1.01 - metrics["train_acc"],
            "test_loss": 1.01 - metrics["test_acc"],
            "grad_norm": ones,
            "logit_scale": ones,
        }
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.toml").write_text(experiment.to_toml(config))
    results.write_trajectories(out, STEPS, metrics, runs, config)
    results.write_summary(out, summaries.summarize(STEPS, metrics, runs, config))
    results.write_meta(out, {"config_digest": stopping.results_digest(config)})  # finished: meta.json last


def test_nht_analyze_writes_the_emergence_section_on_a_planted_width_sweep(tmp_path, tiny_config):
    # A real tiny width sweep costs 45 s here (two buckets compiled), so the directory is planted instead; the
    # real preset's run is in docs/findings/width-sweep.md.
    config = tiny_config(
        grid={"width": list(WIDTHS), "weight_decay": [0.1, 1.0], "seed": [0, 1, 2]}, steps=int(STEPS[-1]), log_every=50
    )
    write_planted_results(tmp_path, config, {0.1: 64, 1.0: 32})
    assert (
        main(
            [
                "analyze",
                str(tmp_path),
                "--set",
                "fits.n_bootstrap=20",
                "--set",
                "emergence.n_bootstrap=50",
                "--set",
                "separation.n_bootstrap=20",
            ]
        )
        == 0
    )
    with open(tmp_path / "emergence.csv") as f:
        rows = {(float(r["weight_decay"]), int(r["width"])): r for r in csv.DictReader(f)}
    assert len(rows) == 8 and all(int(r["n_runs"]) == 3 for r in rows.values())
    assert {lam: float(rows[lam, 16]["N*"]) for lam in (0.1, 1.0)} == {0.1: 64, 1.0: 32}
    assert (float(rows[0.1, 16]["N*_lo"]), float(rows[0.1, 16]["N*_hi"])) == (32, 64)
    assert float(rows[0.1, 64]["ratio"]) == pytest.approx(4.0, rel=1e-4)
    assert float(rows[1.0, 32]["delay"]) == 1600 and rows[0.1, 32]["V_st"] == ""
    assert rows[0.1, 16]["no_V_st_runs"] == "0 1 2"  # runs in grid order: width, then λ, then seed
    text = (tmp_path / "analysis.md").read_text()
    for line in (
        "| E1 | V_sc/V_st decreases with width | ✓ |",
        "| E2 | stronger decay lowers N* | ✓ |",
        "| E3 | a norm peak-then-decay precedes the jump | ✓ |",
    ):
        assert line in text
    assert (tmp_path / "emergence.png").exists()


@pytest.mark.parametrize("widths", [{}, {"width": [32]}], ids=["no width axis", "one width"])
def test_nht_analyze_skips_emergence_without_a_varied_width(tmp_path, tiny_config, widths):
    config = tiny_config(
        grid={"weight_decay": [0.1, 1.0], "seed": [0, 1, 2], **widths}, steps=int(STEPS[-1]), log_every=50
    )
    write_planted_results(tmp_path, config, {0.1: 64, 1.0: 32})
    out = write_analysis(load_results(tmp_path), options_from(["fits.n_bootstrap=10", "separation.n_bootstrap=10"]))
    assert out["emergence"] is None and "emergence conjecture" not in out["markdown"]
    assert (tmp_path / "analysis.md").exists() and not (tmp_path / "emergence.csv").exists()
