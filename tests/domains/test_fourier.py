"""The Fourier structure metric of the modular task on planted answers: a few cosines of (a∘b − c) score 1 and
give back their frequencies, random logits score chance, a lookup table scores K/⌊N/2⌋; the group views of −, ×
and ÷; the optional in-engine metric end to end; nothing changes with it off; both transition times."""

import jax
import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.experiment import build_trainer
from nht_jax.base.errors import ConfigError
from nht_jax.domains.fourier import (
    chance_concentration,
    fourier_metrics,
    key_frequencies,
    num_frequencies,
    primitive_root,
    structure_transition_times,
    sum_view,
    view_table,
)
from nht_jax.domains.modular import modular_dataset
from nht_jax.domains.tokens import BASE_RECORDED
from nht_jax.engine.grid import take
from nht_jax.results.folder import load_results
from nht_jax.training.sweep import run_sweep

NAMES = {"fourier_concentration", "fourier_sum_energy"}


def planted(s: np.ndarray, n: int, frequencies, rng, phases: bool = True) -> np.ndarray:
    """Σ_k α_k cos(2πk s/n + φ_k) with random amplitudes in [1, 3] and random phases (or none)."""
    return sum(
        rng.uniform(1, 3) * np.cos(2 * np.pi * k * s / n + phases * rng.uniform(0, 2 * np.pi)) for k in frequencies
    )


def metrics_of(table, sign=1, top_k=5) -> dict:
    return {k: float(v) for k, v in fourier_metrics(table, sign, top_k).items()}


@pytest.mark.parametrize("sign", [1, -1])
def test_planted_cosines_of_the_sum_score_one_and_give_back_their_frequencies(sign):
    rng = np.random.default_rng(0)
    n = 31
    i, j, l = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")
    # plus any function of (a, b) alone: a constant over classes, which softmax and the centring ignore
    table = planted((i + sign * j - l) % n, n, (3, 7, 12), rng) + rng.normal(size=(n, n, 1)) * 5
    m = metrics_of(table, sign, top_k=3)
    assert m["fourier_concentration"] == pytest.approx(1, abs=1e-5)
    assert m["fourier_sum_energy"] == pytest.approx(1, abs=1e-5)
    assert set(key_frequencies(table, sign, 3).tolist()) == {3, 7, 12}
    # four planted frequencies, K = 3: the share of the three strongest, at most 1 and well above chance
    four = planted((i + sign * j - l) % n, n, (1, 2, 5, 15), rng)
    assert 0.6 < metrics_of(four, sign, top_k=3)["fourier_concentration"] < 1 - 1e-3
    # the same cosines of the wrong combination (a − b − c for a + b task) are not a function of s at all
    wrong = planted((i - sign * j - l) % n, n, (3, 7, 12), rng)
    assert metrics_of(wrong, sign)["fourier_sum_energy"] < 0.01


def test_random_logits_score_chance_and_a_lookup_table_scores_k_over_the_number_of_frequencies():
    n, k = 31, 5
    tables = np.random.default_rng(1).normal(size=(40, n, n, n)).astype(np.float32)
    scores = jax.vmap(lambda t: fourier_metrics(t, 1, k))(tables)
    concentration = np.asarray(scores["fourier_concentration"])
    assert chance_concentration(15, k) == pytest.approx(0.678, abs=1e-3) and 5 / 15 < chance_concentration(15, k)
    assert concentration.mean() == pytest.approx(chance_concentration(n // 2, k), abs=0.04)
    assert np.asarray(scores["fourier_sum_energy"]).mean() == pytest.approx(1 / n**2, rel=0.3)
    # one-hot logits of the right answer on every pair: a spike at s = 0, flat in frequency
    i, j, l = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")
    lookup = 10.0 * ((i + j - l) % n == 0)
    m = metrics_of(lookup, 1, k)
    assert m["fourier_concentration"] == pytest.approx(k / (n // 2), abs=1e-5) and m[
        "fourier_sum_energy"
    ] == pytest.approx(1, abs=1e-5)


def test_a_memorised_training_set_scores_low_and_the_structured_solution_high():
    """p = 97, the default preset's task: a table that is right on 40 % of the pairs (random logits elsewhere, as
    a memoriser's) stays near the lookup value; cosines of a + b − c at 5 frequencies score 1."""
    p, k = 97, 5
    rng = np.random.default_rng(2)
    data = modular_dataset(p, "+")
    view = sum_view(data.inputs[:, 0], data.inputs[:, 1], p, "+")
    train = rng.random(len(data.labels)) < 0.4
    memorised = rng.normal(size=(len(data.labels), p)).astype(np.float32)
    memorised[np.flatnonzero(train), data.labels[train]] += 12.0
    m = metrics_of(view_table(memorised, view), view.sign, k)
    assert m["fourier_concentration"] < chance_concentration(num_frequencies(p, "+"), k) < 0.5
    a, b, c = data.inputs[:, 0, None], data.inputs[:, 1, None], np.arange(p)[None, :]
    structured = planted((a + b - c) % p, p, (4, 17, 23, 31, 40), rng)
    m = metrics_of(view_table(structured, view), view.sign, k)
    assert m["fourier_concentration"] > 0.999 and m["fourier_sum_energy"] > 0.999


def discrete_log(p: int) -> np.ndarray:
    g = primitive_root(p)
    log = np.full(p, -1)
    log[[pow(g, e, p) for e in range(p - 1)]] = np.arange(p - 1)
    return log


@pytest.mark.parametrize("op,tokens", [("-", "ab"), ("*", "ab"), ("/", "ab"), ("+", "ab=")])
def test_group_views_of_every_operation(op, tokens):
    """On the task's own dataset (÷ without b = 0, [a, b, =] inputs): cosines of the structured variable
    (a − b − c; log a ± log b − log c mod p − 1) score 1, and those of a + b − c score low under × and ÷."""
    p = 23
    rng = np.random.default_rng(3)
    data = modular_dataset(p, op, tokens)
    a, b = data.inputs[:, 0, None], data.inputs[:, 1, None]
    c = np.arange(p)[None, :]
    view = sum_view(data.inputs[:, 0], data.inputs[:, 1], p, op)
    logits = rng.normal(size=(len(data.labels), p))
    # the view's table is the logit of example (x_i, x_j) at class x_l
    table = np.asarray(view_table(logits, view))
    i, j, l = 3, 5, 7
    x = view.classes
    row = np.flatnonzero((data.inputs[:, 0] == x[i]) & (data.inputs[:, 1] == x[j]))
    assert table[i, j, l] == pytest.approx(logits[row[0], x[l]])
    if op in ("+", "-"):
        assert view.sign == (1 if op == "+" else -1) and table.shape == (p, p, p)
        s, n, defined = (a + view.sign * b - c) % p, p, np.ones((len(a), p), bool)
    else:
        assert table.shape == (p - 1,) * 3 and sorted(x.tolist()) == list(range(1, p))
        log = discrete_log(p)
        s, n, defined = (log[a] + view.sign * log[b] - log[c]) % (p - 1), p - 1, (a > 0) & (b > 0) & (c > 0)
        additive = planted((a + b - c) % p, p, (2, 5), rng)
        assert metrics_of(view_table(additive, view), view.sign)["fourier_sum_energy"] < 0.05
    # the right answer is s = 0: in phase, the cosines of s rank it first wherever they are defined
    # (pairs with a = 0 or b = 0 and the class 0 get noise under × and ÷: the view leaves them out)
    structured = np.where(defined, planted(s, n, (2, 5, 9), rng, phases=False), 30 * rng.normal(size=s.shape))
    rows, first = ((data.labels >= 0), 0) if op in "+-" else ((a[:, 0] > 0) & (b[:, 0] > 0), 1)
    assert (np.argmax(structured[rows, first:], axis=1) + first == data.labels[rows]).all() and rows.sum() >= (
        p - 1
    ) ** 2
    m = metrics_of(view_table(structured, view), view.sign, top_k=3)
    assert m["fourier_concentration"] == pytest.approx(1, abs=1e-5) and m["fourier_sum_energy"] == pytest.approx(
        1, abs=1e-5
    )
    assert set(key_frequencies(view_table(structured, view), view.sign, 3).tolist()) == {2, 5, 9}


@pytest.mark.parametrize(
    "task,match",
    [
        ({"op": "*", "p": 21}, "discrete logarithm"),
        ({"op": "+", "p": 31, "fourier_top_k": 15}, "fourier_top_k"),
        ({"op": "+", "p": 31, "fourier_top_k": 0}, "fourier_top_k"),
        ({"op": "*", "p": 3}, "fewer than 2 frequencies"),
    ],
)
def test_unsupported_combinations_are_refused(task, match):
    with pytest.raises(ConfigError, match=match):
        experiment.from_dict({"task": {"name": "modular", "fourier_metrics": True, **task}})
    experiment.from_dict({"task": {"name": "modular", **task}})  # without the metric the task itself is fine


def test_the_metric_end_to_end_recorded_bounded_and_summarised(tiny_config, tmp_path):
    config = tiny_config(task={"fourier_metrics": True}, steps=60, log_every=20)
    assert config.domain.recorded(config) == BASE_RECORDED | NAMES
    run_sweep(config, tmp_path / "on", progress=False)
    res = load_results(tmp_path / "on")
    for name in NAMES:
        values = res.metrics[name]
        assert values.shape == (4, 4) and np.isfinite(values).all() and ((0 <= values) & (values <= 1)).all()
        assert all(np.isclose(row[f"final_{name}"], values[row["run"], -1], rtol=1e-5) for row in res.summary)
    # the metric is a view of the logits: the run and every other metric are what they are with it off
    run_sweep(tiny_config(steps=60, log_every=20), tmp_path / "off", progress=False)
    off = load_results(tmp_path / "off")
    assert set(res.metrics) == set(off.metrics) | NAMES
    for name, values in off.metrics.items():
        np.testing.assert_allclose(res.metrics[name], values, rtol=1e-5, atol=1e-7, err_msg=name)
    times = structure_transition_times(res.steps, res.metrics)
    assert set(times) == {"T_structure", "T_accuracy", "lag"} and times["T_structure"].shape == (4,)


@pytest.mark.parametrize(
    "preset,settings",
    [
        ("tiny", ["train.steps=10", "train.log_every=10"]),
        ("sparse-parity", ["train.steps=10", "train.log_every=10", "task.parity_samples=64"]),
    ],
)
def test_with_the_setting_off_nothing_is_recorded_or_summarised(preset, settings):
    config = experiment.load(preset, settings)
    trainer = build_trainer(config)
    hparams = take(config.runs(), 0)
    recorded = jax.eval_shape(lambda hp: trainer.evaluate(trainer.init(hp), hp), hparams)
    assert not NAMES & set(recorded) and config.domain.recorded(config) == BASE_RECORDED
    assert config.domain.summary(config) == ("test_acc", "test_loss")
    assert NAMES <= set(experiment.load("tiny").domain.metrics)
    assert not NAMES & set(config.domain.metrics) if preset == "sparse-parity" else True


def test_transition_times_on_planted_trajectories():
    steps = np.arange(0, 1000, 100)
    concentration = np.array(
        [
            [0.3, 0.3, 0.4, 0.6, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9],  # structure at 300
            [0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3],
        ]
    )  # never
    test_acc = np.array(
        [
            [0.0, 0.1, 0.1, 0.2, 0.5, 0.995, 1.0, 1.0, 1.0, 1.0],  # accuracy at 500
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        ]
    )
    sum_energy = np.array([[0.0, 0.0, 0.0, 0.1, 0.6, 0.8, 0.9, 0.9, 0.9, 0.9], np.zeros(10)])
    metrics = {"fourier_concentration": concentration, "test_acc": test_acc, "fourier_sum_energy": sum_energy}
    times = structure_transition_times(steps, metrics, structure_threshold=0.5, sum_energy_threshold=0.0)
    np.testing.assert_array_equal(times["T_structure"], [300, np.nan])
    np.testing.assert_array_equal(times["T_accuracy"], [500, np.nan])
    np.testing.assert_array_equal(times["lag"], [200, np.nan])
    assert structure_transition_times(steps, metrics, 0.5, sum_energy_threshold=0.5)["T_structure"][0] == 400
    assert structure_transition_times(steps, metrics)["T_structure"][0] == 400  # defaults: R ≥ 0.3 alone
    one = structure_transition_times(steps, {k: v[0] for k, v in metrics.items()}, 0.5, 0.0)
    assert one["T_structure"] == 300 and one["T_accuracy"] == 500
