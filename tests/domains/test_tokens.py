"""The token domains through the engine: grid runs equal single runs, determinism, minibatches, the per-run
train/test split on the trainer's own state, isolation of diverging runs, the models."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nht_jax import experiment, load, make_train
from nht_jax.experiment import build_trainer
from nht_jax.domains.tokens import minibatch, num_train
from nht_jax.engine.executor import run_grid
from nht_jax.engine.grid import num_runs, take


def grid_metrics(config):
    """The grid through the executor; metrics (runs, logs) from step log_every on (step 0 dropped)."""
    runs = config.runs()
    metrics = run_grid(build_trainer(config), runs, config.execution)
    return runs, {k: v[:, 1:] for k, v in metrics.items()}


@pytest.fixture(scope="module")
def reference(tiny_config):
    """The tiny grid's runs, each trained alone (computed once for the module)."""
    config = tiny_config()
    train = jax.jit(make_train(config))
    runs = config.runs()
    return runs, [jax.tree.map(lambda x: np.asarray(x)[1:], train(take(runs, i))[1]) for i in range(num_runs(runs))]


@pytest.mark.parametrize("strategy,per_batch", [("map", 1), ("map", 3), ("vmap", 1)])
def test_run_inside_grid_equals_run_alone(tiny_config, reference, strategy, per_batch):
    runs, alone = reference
    _, metrics = grid_metrics(tiny_config(strategy=strategy, runs_per_batch=per_batch))
    for run in range(num_runs(runs)):
        chex.assert_trees_all_close(take(metrics, run), alone[run], rtol=1e-5, atol=1e-6)


def test_same_seed_same_result_and_different_seeds_differ(tiny_config, reference):
    runs, alone = reference
    _, again = jax.jit(make_train(tiny_config()))(take(runs, 0))
    if jax.default_backend() == "cpu":
        np.testing.assert_array_equal(alone[0]["norm_sq"], np.asarray(again["norm_sq"])[1:])
    else:  # GPU scatter-adds are atomic: bitwise repeatable only with --xla_gpu_deterministic_ops=true
        np.testing.assert_allclose(alone[0]["norm_sq"], np.asarray(again["norm_sq"])[1:], rtol=1e-5)
    assert runs["seed"][0] != runs["seed"][1] and not np.allclose(alone[0]["norm_sq"], alone[1]["norm_sq"])


def test_metrics_are_decimated(tiny_config):
    config = tiny_config(steps=60, log_every=20)
    _, metrics = jax.jit(make_train(config))(take(config.runs(), 0))
    assert metrics["train_acc"].shape == (4,)  # steps 0, 20, 40, 60
    assert set(metrics) == {
        "train_loss",
        "test_loss",
        "train_acc",
        "test_acc",
        "norm_sq",
        "weight_norm_sq",
        "head_norm_sq",
        "logit_scale",
        "grad_norm",
        "layer_norm_sq/embed",
        "layer_norm_sq/head",
        "finite",
    }
    chex.assert_tree_shape_prefix(metrics, (4,))


def test_minibatch_runs_draw_their_own_batches(tiny_config, reference):
    runs, full = reference
    config = tiny_config(batch_size=64)
    _, metrics = grid_metrics(config)
    _, alone = jax.jit(make_train(config))(take(runs, 2))
    chex.assert_trees_all_close(
        take(metrics, 2), jax.tree.map(lambda x: np.asarray(x)[1:], alone), rtol=1e-5, atol=1e-6
    )
    assert not np.allclose(metrics["train_loss"][2], full[2]["train_loss"])


def test_train_fraction_axis_shares_one_program(tiny_config):
    config = tiny_config(grid={"train_fraction": [0.3, 0.6], "seed": [0]})
    runs, metrics = grid_metrics(config)
    train = jax.jit(make_train(config))
    for run in range(num_runs(runs)):
        _, alone = train(take(runs, run))
        chex.assert_trees_all_close(
            take(metrics, run), jax.tree.map(lambda x: np.asarray(x)[1:], alone), rtol=1e-5, atol=1e-6
        )


@pytest.mark.parametrize("fraction", [0.3, 0.55])
def test_split_on_the_trainers_state_is_disjoint_covering_and_sized(tiny_config, fraction):
    """A train row scored as test (or missing from both) would fake grokking: check the run's own state."""
    config = tiny_config(grid={"train_fraction": [0.3, 0.55], "seed": [0]})
    trainer = build_trainer(config)
    state = jax.jit(trainer.init)(take(config.runs(), 0 if fraction == 0.3 else 1))
    n = 31 * 31
    train_rows = np.asarray(state.train_index)[np.asarray(state.train_weight) > 0]
    test_rows = np.flatnonzero(np.asarray(state.test_weight) > 0)
    assert len(train_rows) == round(fraction * n) == int(num_train(n, fraction))
    assert len(np.intersect1d(train_rows, test_rows)) == 0
    assert np.array_equal(np.union1d(train_rows, test_rows), np.arange(n))
    assert set(np.unique(np.asarray(state.test_weight))) == {0.0, 1.0}


def test_test_metrics_score_only_the_held_out_rows(tiny_config):
    """test_acc and train_acc by hand from the trained parameters on the state's own split."""
    config = tiny_config(steps=100, log_every=100)
    trainer = build_trainer(config)
    hparams = take(config.runs(), 0)  # λ = 0.01: memorises, so train and test accuracy differ
    state, _ = jax.jit(lambda hp: trainer.advance(trainer.init(hp), hp, 1))(hparams)
    metrics = jax.jit(trainer.evaluate)(state, hparams)
    data = config.domain.load_data(config)
    model = config.model.build(data.vocab_size, data.num_classes, 2)
    predicted = jax.jit(lambda params, x: jnp.argmax(model.apply({"params": params}, x), -1))
    correct = np.asarray(predicted(state.params, data.inputs)) == data.labels
    test = np.asarray(state.test_weight) > 0
    assert float(metrics["test_acc"]) == pytest.approx(correct[test].mean(), abs=1e-6)
    assert float(metrics["train_acc"]) == pytest.approx(correct[~test].mean(), abs=1e-6)
    assert abs(correct[test].mean() - correct[~test].mean()) > 0.2


def test_minibatches_come_only_from_the_runs_own_train_rows(tiny_config):
    config = tiny_config(batch_size=64, grid={"train_fraction": [0.1, 0.6], "seed": [0]})
    trainer = build_trainer(config)
    runs = config.runs()
    for run in range(2):
        state = jax.jit(trainer.init)(take(runs, run))
        own = set(np.asarray(state.train_index)[np.asarray(state.train_weight) > 0].tolist())
        draw = jax.jit(lambda s, t: minibatch(s._replace(step=t), 64))
        seen = set()
        for t in range(30):
            rows, weight = draw(state, t)
            used = np.asarray(rows)[np.asarray(weight) > 0]
            assert set(used.tolist()) <= own and len(set(used.tolist())) == len(used)
            assert len(used) == min(64, len(own))
            seen |= set(used.tolist())
        assert len(seen) > min(64, len(own))  # different steps draw different batches


def test_diverging_run_is_isolated(tiny_config):
    config = tiny_config(steps=20, log_every=10)
    config = experiment.revised(
        config, optim=type(config.optim)(name="sgd"), grid={**config.grid, "learning_rate": (1e-2, 1e6), "seed": (0,)}
    )
    runs, metrics = grid_metrics(config)
    exploded = runs["learning_rate"] > 1
    assert (metrics["finite"][exploded] == 0).all()
    assert (metrics["finite"][~exploded] == 1).all()
    assert np.isfinite(metrics["norm_sq"][~exploded]).all()


def test_divergence_by_norm_while_still_finite(tiny_config):
    config = tiny_config(steps=20, log_every=10, divergence_norm=175.0)
    runs, metrics = grid_metrics(config)
    assert np.isfinite(metrics["norm_sq"]).all()
    np.testing.assert_array_equal(metrics["finite"], (metrics["norm_sq"] < 175.0).astype(np.float32))
    assert 0 < metrics["finite"].sum() < metrics["finite"].size


@pytest.mark.parametrize(
    "model,layers",
    [
        (
            dict(name="mlp", embedding="learned", d_embed=8, hidden=[16, 16], activation="gelu"),
            {"embed", "hidden_0", "hidden_1", "head"},
        ),
        (
            dict(name="transformer", d_model=16, n_heads=2, d_mlp=32, activation="relu", layer_norm="pre"),
            {"tok_embed", "pos_embed", "ln_attn", "attn", "ln_mlp", "mlp_in", "mlp_out", "ln_final", "head"},
        ),
    ],
)
def test_other_models_train_in_the_grid(tiny_config, model, layers):
    config = tiny_config(steps=20, log_every=10, task={"tokens": "ab="}, model=model)
    _, metrics = grid_metrics(config)
    assert {k.split("/", 1)[1] for k in metrics if k.startswith("layer_norm_sq/")} == layers
    assert (
        np.isfinite(metrics["train_loss"]).all() and (metrics["train_loss"][:, -1] < metrics["train_loss"][:, 0]).all()
    )
    by_layer = sum(metrics[f"layer_norm_sq/{name}"] for name in layers)
    np.testing.assert_allclose(by_layer, metrics["norm_sq"], rtol=1e-5)


class TestPureFunctions(chex.TestCase):
    """init, step and evaluate are pure: the same values with and without jit."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_init_step_evaluate(self):
        # width 7 = p: the hidden and output biases share a shape, so the eager variant compiles fewer one-op programs
        config = load("tiny", ["task.p=7", "model.hidden=[7]", "train.batch_size=16", "train.steps=50"])
        trainer = build_trainer(config)
        hparams = take(config.runs(), 1)
        reference_state = jax.jit(trainer.init)(hparams)
        state = self.variant(trainer.init)(hparams)
        chex.assert_trees_all_close(state, reference_state)
        stepped = self.variant(trainer.step)(state, hparams)
        chex.assert_trees_all_close(stepped, jax.jit(trainer.step)(reference_state, hparams), rtol=1e-4, atol=1e-6)
        chex.assert_trees_all_equal_shapes_and_dtypes(stepped, state)
        metrics = self.variant(trainer.evaluate)(stepped, hparams)
        chex.assert_trees_all_close(metrics, jax.jit(trainer.evaluate)(stepped, hparams), rtol=1e-4, atol=1e-6)
        chex.assert_rank(list(metrics.values()), 0)


SPLIT_SIZES = {0.3: (288, 673), 0.5: (480, 481), 0.55: (529, 432)}


def test_a_modular_split_has_the_exact_number_of_examples(tiny_config):
    """p = 31: 961 examples; the train set is round(f · 961) by round-half-to-even (jnp.round): 288.3 → 288,
    480.5 → 480 (not 481), 528.55 → 529; the test set the rest. Literal counts, on one grid of the three fractions
    (its rows padded to the largest), so that a changed rounding (floor, half up) or an off-by-one in the train
    size or the padding fails here."""
    config = tiny_config(grid={"train_fraction": list(SPLIT_SIZES), "seed": [0], "weight_decay": [0.1]})
    init = jax.jit(build_trainer(config).init)
    for run, sizes in enumerate(SPLIT_SIZES.values()):
        state = init(take(config.runs(), run))
        n_train = int((np.asarray(state.train_weight) > 0).sum())
        n_test = int((np.asarray(state.test_weight) > 0).sum())
        assert (n_train, n_test) == sizes, run
