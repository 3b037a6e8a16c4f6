"""`diagnose` on exactly constructed histories (a geometric contraction: the forecast is the closed form; a
monotone rise: weak; a divergence), the head signal, the floor, the CSV round trip from a loop written here, a
forecast on a real recorded run, and the docs page's example."""

import csv
import math
import re
from pathlib import Path

import flax.linen as nn
import jax
import numpy as np
import optax
import pytest

from nht_jax.analysis.monitor import diagnose, fit_floor, from_csv, from_results
from nht_jax.base.errors import ConfigError
from nht_jax.engine.norm_monitor import history, record_norms
from nht_jax.results.folder import load_results
from nht_jax.training.sweep import run_sweep

DOC = Path(__file__).resolve().parents[2] / "docs" / "guides" / "monitor.md"
STEPS = np.arange(0.0, 1001.0, 10.0)
T_FIT, T_PEAK, GAMMA = 200.0, 300.0, 2e-3


def peaked_history(noise=0.0):
    """V rises linearly to a peak at T_PEAK, then contracts geometrically: V_t = V_peak·e^{−γ(t − T_PEAK)}."""
    v = np.where(STEPS <= T_PEAK, 100.0 + STEPS, 400.0 * np.exp(-GAMMA * (STEPS - T_PEAK)))
    return v * np.exp(noise * np.random.default_rng(0).standard_normal(STEPS.size))


def test_a_geometric_contraction_gives_the_closed_form_forecast():
    v_post = 50.0
    d = diagnose(STEPS, peaked_history(), fitted_at=T_FIT, v_post=v_post)
    assert (d.fit, d.norm, d.signal, d.peak_step) == (
        "fitted",
        "peaked and contracting",
        "transition under way",
        T_PEAK,
    )
    closed = T_PEAK + math.log(400.0 / v_post) / GAMMA
    f = d.forecast
    assert f.reason == "" and f.v_post_source == "given"
    np.testing.assert_allclose([f.gamma_hat, f.T_hat, f.T_lo, f.T_hi], [GAMMA, closed, closed, closed], rtol=1e-6)
    after = diagnose(STEPS, peaked_history(), fitted_at=T_FIT, v_post=v_post, window="after_peak")
    np.testing.assert_allclose(after.forecast.T_hat, closed, rtol=1e-6)
    assert after.forecast.t_start == T_PEAK


def test_a_noisy_contraction_has_an_ordered_interval_around_the_forecast():
    f = diagnose(STEPS, peaked_history(noise=0.01), fitted_at=T_FIT, v_post=50.0).forecast
    assert f.T_lo < f.T_hat < f.T_hi < math.inf and f.gamma_se > 0
    wider = diagnose(STEPS, peaked_history(noise=0.01), fitted_at=T_FIT, v_post=50.0, confidence=0.99).forecast
    assert wider.T_lo < f.T_lo and wider.T_hi > f.T_hi


def test_the_floor_of_an_offset_exponential_is_its_asymptote():
    t = np.arange(0.0, 500.0, 10.0)
    floor, why = fit_floor(t, 30.0 + 70.0 * np.exp(-0.01 * t))
    assert why == "" and floor == pytest.approx(30.0, rel=1e-5)
    assert math.isnan(fit_floor(t, 70.0 * np.exp(-1e-5 * t))[0])  # no curvature: no floor
    v = np.where(STEPS <= T_PEAK, 100.0 + STEPS, 30.0 + 370.0 * np.exp(-0.01 * (STEPS - T_PEAK)))
    f = diagnose(STEPS[:45], v[:45], fitted_at=T_FIT).forecast
    assert f.v_post_source == "floor" and f.V_post == pytest.approx(30.0, rel=1e-4)
    assert T_PEAK < f.T_hat < math.inf


def test_a_monotone_rise_is_weak_with_no_forecast():
    d = diagnose(STEPS, 100.0 + STEPS, train_acc=(STEPS >= T_FIT).astype(float))
    assert (d.fit, d.T_fit, d.norm, d.signal) == ("fitted", T_FIT, "rising", "weak")
    assert math.isnan(d.forecast.T_hat) and "rising" in d.forecast.reason
    assert diagnose(STEPS, 100.0 + STEPS, train_acc=np.zeros(STEPS.size)).signal == "not fitted"
    assert diagnose(STEPS, 100.0 + STEPS).forecast.reason.startswith("T_fit unknown")


def test_a_diverged_history_says_where():
    v = 100.0 + STEPS
    v[50:] = np.inf
    d = diagnose(STEPS, v, fitted_at=T_FIT)
    assert (d.fit, d.signal, d.diverged_step) == ("diverged", "diverged", STEPS[50])
    assert math.isnan(d.forecast.T_hat)
    assert diagnose(STEPS, 100.0 + STEPS, divergence_norm=500.0).diverged_step == 400.0


def test_the_head_contracting_while_the_total_rises_is_the_early_warning():
    head = peaked_history()
    total = 1000.0 + 2.0 * STEPS
    d = diagnose(STEPS, total, {"head": head, "first": total - head}, fitted_at=T_FIT)
    assert d.norm == "rising" and d.head_norm == "contracting" and d.head_peak_step == T_PEAK and d.head_warning
    assert not diagnose(STEPS, total, {"head": 100.0 + STEPS}, fitted_at=T_FIT).head_warning
    assert diagnose(STEPS, total, {"hidden": head}, fitted_at=T_FIT).head_norm == ""


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"steps": [0, 10, 5], "norm_sq": [1, 2, 3]}, "increasing"),
        ({"steps": [0, 10, 20], "norm_sq": [1, 2]}, "norm_sq has shape"),
        ({"steps": [0, 10, 20], "norm_sq": [1, 2, 3], "window_size": 3}, "unknown option"),
        ({"steps": [0, 10, 20], "norm_sq": [1, 2, 3], "window": "all"}, "window"),
        ({"steps": [0, 10, 20], "norm_sq": [1, 2, 3], "v_post": -1.0}, "v_post"),
    ],
)
def test_bad_input_is_a_config_error(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        diagnose(**kwargs)


# ----------------------------------------------------------------------------- a loop written here, via CSV


def regression_loop(steps=600):
    """A plain optax loop (a one-hidden-layer tanh net, AdamW with strong decay) monitored by record_norms."""
    x = jax.random.normal(jax.random.PRNGKey(0), (64, 8))
    y = np.tanh(np.asarray(x[:, 0] * x[:, 1]))
    params = {"hidden": jax.random.normal(jax.random.PRNGKey(1), (8, 32)), "head": jax.numpy.zeros(32)}
    tx = optax.chain(record_norms(every=10, capacity=64), optax.adamw(1e-2, weight_decay=1.0))

    def step(carry, _):
        p, s = carry
        grads = jax.grad(lambda q: jax.numpy.mean((jax.numpy.tanh(x @ q["hidden"]) @ q["head"] - y) ** 2))(p)
        updates, s = tx.update(grads, s, p)
        return (optax.apply_updates(p, updates), s), None

    (_, state), _ = jax.jit(lambda p: jax.lax.scan(step, (p, tx.init(p)), None, length=steps))(params)
    return history(state)


def test_a_csv_written_from_the_loop_reads_back_into_the_same_diagnosis(tmp_path):
    h = regression_loop()
    path = tmp_path / "log.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["iteration", "weights_sq", "eval_loss", "layer.hidden", "layer.head"])
        for i, k in enumerate(h.steps):
            w.writerow(
                [k, repr(float(h.norm_sq[i])), "", repr(float(h.layers["hidden"][i])), repr(float(h.layers["head"][i]))]
            )
            w.writerow([k + 5, "", 0.5, "", ""])  # another metric's row, at other steps
    read = from_csv(path, step="iteration", norm="weights_sq", layer_prefix="layer.")
    np.testing.assert_array_equal(read["steps"], h.steps)
    np.testing.assert_array_equal(read["norm_sq"], h.norm_sq.astype(np.float64))
    assert set(read["layer_norms"]) == {"hidden", "head"} and read["train_acc"] is None
    direct = diagnose(h.steps, h.norm_sq, h.layers, fitted_at=100)
    assert diagnose(**{**read, "fitted_at": 100}) == direct
    with pytest.raises(ConfigError, match="no column 'norm_sq'"):
        from_csv(path, step="iteration")
    with pytest.raises(ConfigError, match="no column 'acc'"):
        from_csv(path, step="iteration", norm="weights_sq", train_acc="acc")


# ----------------------------------------------------------------------------- a real recorded run


class MLP(nn.Module):
    @nn.compact
    def __call__(self, a, b):
        embed = nn.Embed(31, 64, name="embed")
        return nn.Dense(31, name="head")(nn.Dense(64, name="hidden")(embed(a) + embed(b)) ** 2)


def grokking_loop(steps=300):
    """(a + b) mod 31, half the pairs for training, AdamW λ = 1 (fits by step ≈ 50, its norm then contracts):
    the record_norms history and the train accuracy at every step."""
    a, b = (x.ravel() for x in np.meshgrid(np.arange(31), np.arange(31)))
    train = np.random.default_rng(0).permutation(a.size)[: a.size // 2]
    a, b, y = a[train], b[train], (a[train] + b[train]) % 31
    model, tx = MLP(), optax.chain(record_norms(every=10, capacity=64), optax.adamw(1e-2, b2=0.98, weight_decay=1.0))

    def step(carry, _):
        p, s = carry
        grads = jax.grad(
            lambda q: optax.softmax_cross_entropy_with_integer_labels(model.apply({"params": q}, a, b), y).mean()
        )(p)
        updates, s = tx.update(grads, s, p)
        return (optax.apply_updates(p, updates), s), (model.apply({"params": p}, a, b).argmax(-1) == y).mean()

    params = model.init(jax.random.PRNGKey(0), a[:1], b[:1])["params"]
    (_, state), acc = jax.jit(lambda p: jax.lax.scan(step, (p, tx.init(p)), None, length=steps))(params)
    h = history(state)
    return h, np.asarray(acc)[h.steps]


def test_a_forecast_on_a_recorded_run_is_finite_with_an_ordered_interval():
    h, acc = grokking_loop()
    d = diagnose(h.steps, h.norm_sq, h.layers, train_acc=acc)
    assert d.fit == "fitted" and d.norm == "peaked and contracting", d.text()
    f = d.forecast
    assert f.v_post_source == "floor" and np.isfinite([f.T_hat, f.T_lo, f.T_hi]).all(), d.text()
    assert f.T_lo < f.T_hat < f.T_hi and f.V_post < h.norm_sq[-1]


def test_from_results_reads_one_run_of_a_results_folder(tmp_path, tiny_config):
    run_sweep(tiny_config(), tmp_path, progress=False)
    res = load_results(tmp_path)
    args = from_results(res, 2)
    np.testing.assert_array_equal(args["norm_sq"], res.metrics["norm_sq"][2])
    assert set(args["layer_norms"]) == {k.split("/")[1] for k in res.metrics if k.startswith("layer_norm_sq/")}
    assert diagnose(**args).step == res.steps[-1]
    with pytest.raises(ConfigError, match="not one of"):
        from_results(res, res.num_runs)


# ----------------------------------------------------------------------------- the docs page


def test_the_docs_example_runs_and_prints_a_diagnosis(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert len(blocks) == 1
    exec(compile(blocks[0], str(DOC), "exec"), {})
    assert re.match(r"step \d+: fitted at \d+; ‖θ‖² ", capsys.readouterr().out)
