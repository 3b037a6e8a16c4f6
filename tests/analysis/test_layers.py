"""Layer order: a planted order (head peaks at 300, first layer at 700) and its reverse, mixed and tied orders,
layers that never contract, the layer names, and the entry point on a synthetic and on a real tiny sweep."""

import dataclasses

import numpy as np
import pytest

from nht_jax.analysis.layers import (
    LayerOptions,
    head_first_ratio,
    layer_curves,
    layer_order,
    layer_report,
    layer_times,
    normalised_to_peak,
    resolve_layers,
)
from nht_jax.results.folder import Results
from nht_jax.vision.models import ResNetSettings, SimpleCNNSettings

STEPS = np.arange(0, 3001, 20.0)


def bump(peak, height=10.0, fall=0.0005):
    """Linear rise from 1 to `height` at `peak`, then a linear fall of `fall`·height per step (10 % after 200 steps
    with the default), floored at 1."""
    up = 1 + (height - 1) * STEPS / peak
    down = np.maximum(height * (1 - fall * (STEPS - peak)), 1.0)
    return np.where(STEPS <= peak, up, down)


def test_planted_head_first_order():
    r = layer_order(STEPS, bump(300), bump(700))
    assert r.verdict == "head first"
    assert (r.head_peak_step, r.first_peak_step, r.peak_margin) == (300, 700, 400)
    assert (r.head_contract_step, r.first_contract_step, r.contract_margin) == (500, 900, 400)
    assert r.ratio_init == pytest.approx(1.0) and r.ratio_peak > 1.0


def test_planted_reversed_order():
    r = layer_order(STEPS, bump(700), bump(300))
    assert r.verdict == "first layer first" and r.peak_margin == -400 and r.contract_margin == -400
    assert "later" in r.reason


def test_mixed_order_depends_on_the_criterion():
    head, first = bump(300, fall=0.0001), bump(700)  # head peaks first but contracts slowly: 10 % at step 1300
    r = layer_order(STEPS, head, first)
    assert r.verdict == "not head first" and r.peak_margin == 400 and r.contract_margin == 900 - 1300
    assert layer_order(STEPS, head, first, LayerOptions(verdict_on="peak")).verdict == "head first"
    assert layer_order(STEPS, head, first, LayerOptions(verdict_on="contraction")).verdict == "first layer first"


def test_ties_and_censoring():
    tie = layer_order(STEPS, bump(500), 2 * bump(500))
    assert tie.verdict == "tied at log resolution" and tie.peak_margin == 0 and tie.tied == "peak, contraction"
    assert "not evidence" in tie.reason and tie.resolution == 20
    neither = layer_order(STEPS, 1 + STEPS, 2 + STEPS)
    assert neither.verdict == "undetermined" and "neither" in neither.reason
    rising_first = layer_order(STEPS, bump(300), 1 + STEPS)
    assert rising_first.verdict == "head first" and np.isnan(rising_first.contract_margin)
    assert "lower bound" in rising_first.reason
    assert layer_order(STEPS, 1 + STEPS, bump(300)).verdict == "first layer first"
    broken = bump(300)
    broken[5] = np.inf
    assert layer_order(STEPS, broken, bump(700)).verdict == "undetermined"


def test_a_tie_at_coarse_logs_is_no_order_and_finer_logs_resolve_it():
    """Head peaks at step 300, the first layer at 310: every 50 steps both peak at the logged step 300 (a tie, not
    "first layer first" or "head first"); a schedule logging every 10 steps around them orders them."""
    fine = np.concatenate([np.arange(0, 500, 10.0), np.arange(500, 3001, 50.0)])

    def peaked(steps, peak):  # a tent: rises to 10 at `peak`, falls 10 % of it every 100 steps
        return np.maximum(np.where(steps <= peak, 1 + 9 * steps / peak, 10 * (1 - 0.001 * (steps - peak))), 1.0)

    coarse = np.arange(0, 3001, 50.0)
    tie = layer_order(coarse, peaked(coarse, 300), peaked(coarse, 310), LayerOptions(verdict_on="peak"))
    assert tie.verdict == "tied at log resolution" and tie.resolution == 50 and tie.tied == "peak"
    ordered = layer_order(fine, peaked(fine, 300), peaked(fine, 310), LayerOptions(verdict_on="peak"))
    assert ordered.verdict == "head first" and ordered.peak_margin == 10 and ordered.resolution == 10
    res_tie = layer_order(coarse, peaked(coarse, 300), peaked(coarse, 300))
    assert res_tie.verdict == "tied at log resolution"


def test_tied_runs_are_counted_apart_from_the_determined(tiny_config):
    res = synthetic(
        tiny_config(), [bump(300), bump(500), bump(700)], [bump(700), 2 * bump(500), bump(300)], ["intermediate"] * 3
    )
    report = layer_report(res)
    assert [r.verdict for r in report.runs] == ["head first", "tied at log resolution", "first layer first"]
    p = report.pooled
    assert (p.n, p.n_determined, p.n_head_first, p.n_first_layer_first, p.n_tied) == (3, 2, 1, 1, 1)
    assert "1 more tied at log resolution" in report.markdown() and "tied" in report.csv().splitlines()[0]


def test_layer_times_and_curves():
    t = layer_times(STEPS, bump(700), 0.5)
    assert (t.peak_step, t.peak, t.still_rising) == (700, 10.0, False) and t.contract_step == 700 + 1000
    assert layer_times(STEPS, 1 + STEPS).still_rising
    regrown = np.where(STEPS < 2000, bump(300), 1 + 0.02 * STEPS)  # above its first peak by the end
    assert layer_times(STEPS, regrown)[::2] == (300, 500) and layer_order(STEPS, regrown, bump(700)).peak_margin == 400
    assert np.nanmax(normalised_to_peak(bump(700))) == 1.0
    np.testing.assert_allclose(head_first_ratio([2.0, 4.0], [1.0, 8.0]), [2.0, 0.5])


def synthetic(config, heads, firsts, regimes, first_name="embed"):
    runs = len(heads)
    hp = {"weight_decay": np.linspace(0.1, 1.0, runs).astype(np.float32), "seed": np.arange(runs, dtype=np.uint32)}
    metrics = {
        "layer_norm_sq/head": np.stack(heads),
        f"layer_norm_sq/{first_name}": np.stack(firsts),
        "finite": np.ones((runs, STEPS.size)),
    }
    return Results(None, config, STEPS, metrics, hp, dict(hp), [{"regime": r} for r in regimes])


def test_layer_names(tiny_config):
    config = tiny_config()
    res = synthetic(config, [bump(300)], [bump(700)], ["intermediate"])
    assert resolve_layers(res)[:2] == ("head", "embed")
    assert resolve_layers(res, LayerOptions(first_layer="hidden_0"))[:2] == ("head", "hidden_0")
    cnn = synthetic(dataclasses.replace(config, model=SimpleCNNSettings()), [bump(300)], [bump(700)], ["weak"], "conv1")
    assert resolve_layers(cnn)[1:] == ("conv1", "model simple_cnn's first_layer")
    resnet = synthetic(
        dataclasses.replace(config, model=ResNetSettings()), [bump(300)], [bump(700)], ["weak"], "stem_conv"
    )
    assert resolve_layers(resnet)[1] == "stem_conv"
    digits = synthetic(config, [bump(300)], [bump(700)], ["weak"], "hidden_0")
    assert resolve_layers(digits)[1] == "hidden_0"
    curves = layer_curves(res, 0)
    assert set(curves) == {"steps", "head", "embed", "ratio"} and curves["head"].max() == 1.0


def test_report_pools_intermediate_runs(tiny_config):
    res = synthetic(
        tiny_config(),
        [bump(300), bump(300), bump(300), bump(700), bump(700)],
        [bump(700), bump(700), bump(700), bump(300), bump(300)],
        ["intermediate", "intermediate", "intermediate", "intermediate", "weak"],
    )
    report = layer_report(res)
    assert [r.verdict for r in report.runs] == ["head first"] * 3 + ["first layer first"] * 2
    p = report.pooled
    assert (p.n, p.n_determined, p.n_head_first, p.n_first_layer_first, p.n_tied) == (4, 4, 3, 1, 0)
    assert p.fraction_head_first == 0.75
    assert p.peak_margin.median == 400 and p.peak_margin.lo <= 400 <= p.peak_margin.hi
    assert "Head first in 3 of 4" in report.markdown() and report.csv().count("\n") == 6
    missing = layer_report(res, LayerOptions(first_layer="conv_0"))
    assert all(r.verdict == "undetermined" and "not recorded" in r.reason for r in missing.runs)


def test_on_a_real_tiny_sweep(tiny_results):
    report = layer_report(tiny_results)
    assert (report.head_layer, report.first_layer) == ("head", "embed")
    assert len(report.runs) == tiny_results.num_runs
    for run in report.runs:  # 40 steps: every layer norm still rises
        assert run.verdict == "undetermined" and run.reason
        assert np.isfinite(run.ratio_init) and run.head_peak_step == tiny_results.steps[-1]
    assert report.pooled.n == 0 and np.isnan(report.pooled.fraction_head_first)
    assert "Layer order" in report.markdown()
