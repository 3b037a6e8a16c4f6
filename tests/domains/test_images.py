"""Domain "images" through the engine: a run inside a (λ, ρ) grid, executed chunk by chunk, equals the run alone
(SimpleCNN; ResNet with BatchNorm), the training borders follow ρ, the metric vocabulary, group metrics, the
im2col convolution, augmentation.

Everything runs on digits at 16×16 (the smallest size digits allow), a handful of steps and small evaluation sets:
the cost of these tests is compilation."""

import dataclasses

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nht_jax import experiment, make_train
from nht_jax.experiment import build_trainer
from nht_jax.domains.images import IMAGE_METRICS, make_image_trainer
from nht_jax.engine.executor import GridRun, join_logs, unpad
from nht_jax.engine.grid import single, take
from nht_jax.engine.metrics import VOCABULARY
from nht_jax.vision import DEFAULT_PALETTE, NO_BORDER, border_mask
from nht_jax.vision.augment import random_crop_flip
from nht_jax.vision.data import ImageData, load_image_data
from nht_jax.vision.datasets import ImageSplit
from nht_jax.vision.patch_conv import max_pool_2x2, patch_conv

SMALL = (
    "task.image_size=16",
    "task.eval_train_size=48",
    "task.eval_test_size=40",
    "train.steps=6",
    "train.batch_size=16",
    "train.log_every=3",
    "train.eval_batch_size=16",
    "execution.chunk_logs=1",
    "grid.weight_decay=[0.01, 1.0]",
    "grid.seed=[0]",
    "grid.rho=[0.0, 1.0]",
)


def image_config(*overrides):
    """The border-digits preset shrunk to 16×16 digits, 6 steps, 2 λ × 2 ρ: compiles and runs in seconds."""
    return experiment.load("border-digits", [*SMALL, *overrides])


def grid_run(config, data):
    """The grid of `config` as `nht run` executes it with chunk_logs = 1: start, then one log per compiled call.
    Returns (runs, metrics {name: (runs, logs + 1)}, final states without padding)."""
    runs = config.runs()
    trainer = build_trainer(config, data)
    grid = GridRun(trainer, runs, config.execution)
    states, first = grid.start()
    chunks = [first]
    for _ in range(trainer.num_logs):
        states, metrics = grid.advance(states, 1)
        chunks.append(metrics)
    return runs, join_logs(chunks), unpad(jax.device_get(states), len(runs["seed"]))  # on the host: no eager slicing


@pytest.fixture(scope="module")
def digits():
    return load_image_data(image_config().task)


def assert_grid_equals_alone(config, data):
    """Every run of the chunked grid has the metrics (all of them, every log) and the final state (parameters,
    optimiser and BatchNorm state, step, keys) of the same run trained alone in one uninterrupted call."""
    runs, metrics, states = grid_run(config, data)
    train = jax.jit(make_train(config, data))
    for run in range(len(runs["seed"])):
        alone_state, alone = train(take(runs, run))
        chex.assert_trees_all_close({k: v[run] for k, v in metrics.items()}, alone, rtol=1e-5, atol=1e-6)
        # AdamW divides by √v̂: where a gradient entry is near zero, rounding differences between the two compiled
        # programs (grid and run alone) can move that parameter by up to ~η per step (seen: one entry in 41,472
        # off by 1.4e-4 with η = 3e-3 after 6 steps), so the state is compared to η; the metrics above to 1e-5
        chex.assert_trees_all_close(jax.tree.map(lambda v, i=run: v[i], states), alone_state, rtol=1e-4, atol=3e-3)
    return runs, metrics, states


def test_simple_cnn_run_inside_lambda_rho_grid_equals_run_alone(digits):
    # the CPU default convolution (im2col, "patches"): at the tests' XLA optimisation level 0 (conftest) XLA's own
    # convolutions run ~10× slower; the ResNet test trains with "lax", test_patch_conv_equals_lax_conv compares them
    config = image_config()
    runs, metrics, _ = assert_grid_equals_alone(config, digits)
    assert metrics["train_acc"].shape == (4, 3)  # 4 runs (2 λ × 2 ρ), logs at steps 0, 3, 6
    assert np.isfinite(metrics["minibatch_grad_norm"][:, 1:]).all()
    assert np.isnan(metrics["minibatch_grad_norm"][:, 0]).all()  # no step taken yet at step 0
    assert (metrics["finite"] == 1).all()
    # ρ is a real axis: runs differing only in ρ train on different borders
    a, b = np.flatnonzero(runs["weight_decay"] == np.float32(0.01))
    assert {float(runs["rho"][a]), float(runs["rho"][b])} == {0.0, 1.0}
    assert not np.allclose(metrics["train_loss"][a, 1:], metrics["train_loss"][b, 1:])
    # every metric the domain says it records is there, every name has one stated meaning, and the token
    # domains' names (test_acc, logit_scale, grad_norm, ...) are not used for image metrics
    assert config.domain.recorded(config) <= set(metrics)
    assert not {"test_acc", "test_loss", "avg_acc", "logit_scale", "grad_norm"} & set(metrics)
    for name in metrics:
        generic = name.split("/")[0] + "/<layer>" if name.startswith("layer_norm_sq/") else name
        assert generic in VOCABULARY or name in IMAGE_METRICS, f"metric {name} has no stated meaning"
    # layer norms add up to the total norm; the head-to-first ratio uses the first layer, conv1
    layers = [k for k in metrics if k.startswith("layer_norm_sq/")]
    assert {k.split("/")[1] for k in layers} == {"conv1", "conv2", "conv3", "conv4", "dense", "head"}
    np.testing.assert_allclose(sum(metrics[k] for k in layers), metrics["norm_sq"], rtol=1e-5)
    np.testing.assert_allclose(
        metrics["head_to_first_ratio"], metrics["layer_norm_sq/head"] / metrics["layer_norm_sq/conv1"], rtol=1e-5
    )
    assert np.all((metrics["clean_acc"] >= 0) & (metrics["clean_acc"] <= 1))
    assert np.all(metrics["clean_logit_scale"] > 0) and np.all(metrics["clean_loss"] > 0)


def test_resnet_with_batchnorm_inside_the_grid_equals_the_run_alone(digits):
    # one stage of one block (stem, BatchNorm, a residual block): half the compile time of two stages; the
    # projection block is exercised in tests/vision/test_models.py
    config = image_config(
        "model.name='resnet18'",
        "model.norm='batch'",
        "model.resnet_width=4",
        "model.resnet_stages=[1]",
        "model.conv_impl='lax'",
        "execution.strategy='vmap'",
    )
    _, _, states = assert_grid_equals_alone(config, digits)
    stats = states.batch_stats["stem_norm"]
    assert float(np.abs(stats["mean"]).max()) > 1e-4 and not np.allclose(stats["var"], 1.0)  # statistics moved


# ------------------------------------------------------------------ ρ reaches the training minibatches

SIDE, WIDTH, K = 16, 2, 10
FRAME_VALUE = 77  # the stored frame of every synthetic image: no palette colour


class MinibatchProbe(nn.Module):
    """A linear model that keeps the last training minibatch it was given, exactly as the trainer painted it,
    in its `batch_stats` collection: the trainer carries that collection in its state like BatchNorm's."""

    num_classes: int
    batch: int

    @nn.compact
    def __call__(self, x, train: bool = False):
        seen = self.variable("batch_stats", "seen", jnp.zeros, (self.batch, SIDE, SIDE, 3), jnp.float32)
        if train and not self.is_initializing():
            seen.value = x
        return nn.Dense(self.num_classes, name="head")(x.mean(axis=(1, 2)))


@dataclasses.dataclass(frozen=True)
class ProbeSettings:
    batch: int
    name = "probe"
    precision = "highest"
    first_layer = "head"

    def build(self, num_classes):
        return MinibatchProbe(num_classes, self.batch)


def synthetic_data(n_train: int) -> ImageData:
    """Images whose interior encodes the label (value 20·label + 10) and whose frame is a fixed non-palette grey:
    the label and the painted border class of any training image can be read back from its pixels alone."""

    def split(n, name):
        labels = (np.arange(n) % K).astype(np.int32)
        images = np.full((n, SIDE, SIDE, 3), FRAME_VALUE, np.uint8)
        interior = ~border_mask(SIDE, SIDE, WIDTH)
        images[:, interior] = (20 * labels + 10).astype(np.uint8)[:, None, None]
        return ImageSplit(images, labels, None, None, name, K)

    return ImageData("digits", split(n_train, "train"), split(20, "test"), K)


def read_back(x):
    """(labels, border classes) of a painted float minibatch; checks the frame is one colour and the interior is
    the stored image."""
    pixels = np.rint(np.asarray(x) * 255).astype(np.int64)
    mask = border_mask(SIDE, SIDE, WIDTH)
    frame, interior = pixels[:, mask], pixels[:, ~mask]  # (B, P, 3)
    assert (frame == frame[:, :1]).all(), "a border is not one colour"
    assert (interior == interior[:, :1, :1]).all(), "the interior was changed"
    labels = (interior[:, 0, 0] - 10) // 20
    colours = np.rint(255 * DEFAULT_PALETTE).astype(np.int64)
    match = (frame[:, 0, None, :] == colours[None]).all(-1)  # (B, K)
    unpainted = (frame[:, 0] == FRAME_VALUE).all(-1)
    assert (match.sum(1) + unpainted == 1).all(), "a border colour is neither a class colour nor unpainted"
    return labels, np.where(unpainted, NO_BORDER, match.argmax(1))


@pytest.mark.parametrize("otherwise", ["other_class", "none"])
def test_training_borders_agree_with_the_label_at_rate_rho(otherwise):
    """Through the trainer's own step (permutation, border draw, painting): the fraction of training images whose
    painted border shows their own class colour is ρ, within 4 binomial standard errors of 6,000 draws."""
    batch, steps = 1000, 6
    config = image_config(f"task.border_otherwise='{otherwise}'", f"train.batch_size={batch}")
    config = dataclasses.replace(config, model=ProbeSettings(batch))
    trainer = make_image_trainer(config, synthetic_data(2 * batch))
    init, step = jax.jit(trainer.init), jax.jit(trainer.step)
    for rho in (0.3, 0.9):
        hparams = single(config.axes, rho=rho, learning_rate=1e-3, weight_decay=0.0)
        state = init(hparams)
        labels, borders = [], []
        for _ in range(steps):
            state = step(state, hparams)
            got_labels, got_borders = read_back(state.batch_stats["seen"])
            labels.append(got_labels)
            borders.append(got_borders)
        labels, borders = np.concatenate(labels), np.concatenate(borders)
        assert np.bincount(labels, minlength=K).min() > 0.08 * labels.size  # every class drawn
        n = labels.size
        agree = float(np.mean(borders == labels))
        tolerance = 4 * np.sqrt(rho * (1 - rho) / n)
        assert abs(agree - rho) < tolerance, f"ρ = {rho}: {agree:.4f} of {n} training borders show the label"
        if otherwise == "none":  # a border, when painted, is the label's
            assert set(np.unique(borders[borders != labels])) == {NO_BORDER}
        else:  # every image carries a border, another class's when it disagrees
            assert (borders != NO_BORDER).all()


# ------------------------------------------------------------------ grouped datasets


def test_group_metrics_and_no_border_on_a_grouped_dataset(digits):
    """Digits with a made-up binary attribute stand in for CelebA/Waterbirds: groups, no painted border."""

    def with_groups(split, n):
        attribute = (np.arange(n) % 3 == 0).astype(np.int32)
        label = (split.labels[:n] % 2).astype(np.int32)
        return split._replace(
            images=split.images[:n], labels=label, attributes=attribute, groups=2 * label + attribute, num_classes=2
        )

    data = digits._replace(
        name="celeba", train=with_groups(digits.train, 256), test=with_groups(digits.test, 64), num_classes=2
    )
    config = image_config(
        "task.dataset='celeba'",
        "task.border_width=0",
        "task.eval_test_size=0",
        "grid.rho=[1.0]",
        "grid.weight_decay=[0.1]",
        "analysis.transition_metric='worst_group_acc'",
        "analysis.transition_direction='above'",
        "analysis.transition_threshold=0.7",
    )
    _, metrics = jax.jit(make_train(config, data))(take(config.runs(), 0))
    groups = np.stack([np.asarray(metrics[f"group_acc/{g}"]) for g in range(4)])
    np.testing.assert_allclose(metrics["worst_group_acc"], groups.min(axis=0), rtol=1e-6)
    counts = np.bincount(data.train.groups, minlength=4)
    np.testing.assert_allclose(metrics["weighted_avg_acc"], counts @ groups / counts.sum(), rtol=1e-5)
    # the average accuracy of the group literature is clean_acc: groups weighted by their test counts
    test_counts = np.bincount(data.test.groups, minlength=4)
    np.testing.assert_allclose(metrics["clean_acc"], test_counts @ groups / test_counts.sum(), rtol=1e-5)
    assert config.domain.recorded(config) <= set(metrics)
    assert not {"shortcut_reliance", "conflicting_acc", "conflicting_reliance", "avg_acc", "test_acc"} & set(metrics)
    np.testing.assert_array_equal(metrics["coloured_acc"], metrics["clean_acc"])


def test_image_mlp_and_the_aligned_set(digits):
    """The image MLP trains through the same trainer (head_to_first_ratio over hidden_0), and aligned_acc is the
    accuracy of the final parameters on the clean test images painted with their own class's border."""
    from nht_jax.vision import paint_border

    config = image_config("model.name='mlp'", "model.hidden=[32]", "grid.rho=[1.0]", "grid.weight_decay=[0.1]")
    state, metrics = jax.jit(make_train(config, digits))(take(config.runs(), 0))
    assert {"aligned_acc", "conflicting_acc"} <= config.domain.recorded(config) <= set(metrics)
    np.testing.assert_allclose(
        metrics["head_to_first_ratio"], metrics["layer_norm_sq/head"] / metrics["layer_norm_sq/hidden_0"], rtol=1e-5
    )
    n = config.task.eval_test_size
    images, labels = digits.test.images[:n], digits.test.labels[:n]
    painted = paint_border(images, labels, width=config.task.border_width).astype(np.float32) / 255.0
    logits = config.model.build(10).apply({"params": state.params}, painted)
    np.testing.assert_allclose(metrics["aligned_acc"][-1], np.mean(np.argmax(logits, -1) == labels), atol=1e-6)


# ------------------------------------------------------------------ building blocks


@pytest.mark.parametrize(
    "stride,padding,kernel", [(1, "SAME", 3), (2, ((1, 1), (1, 1)), 3), (2, "VALID", 1), (1, ((0, 2), (1, 0)), 3)]
)
def test_patch_conv_equals_lax_conv(stride, padding, kernel):
    x = jax.random.normal(jax.random.PRNGKey(0), (2, 9, 8, 5))
    k = jax.random.normal(jax.random.PRNGKey(1), (kernel, kernel, 5, 7))
    dims = jax.lax.conv_dimension_numbers(x.shape, k.shape, ("NHWC", "HWIO", "NHWC"))
    # each compiled as one program (eager, patch_conv's dozen operations each compile their own)
    expected = jax.jit(
        lambda x, k: jax.lax.conv_general_dilated(
            x, k, (stride, stride), padding, dimension_numbers=dims, precision="highest"
        )
    )(x, k)
    got = jax.jit(
        lambda x, k: patch_conv(x, k, (stride, stride), padding, dimension_numbers=dims, precision="highest")
    )(x, k)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_max_pool_2x2_matches_reduce_window():
    x = jax.random.normal(jax.random.PRNGKey(0), (2, 7, 6, 3))
    reduce_window = jax.jit(lambda x: nn.max_pool(x, (2, 2), strides=(2, 2)))
    np.testing.assert_array_equal(jax.jit(max_pool_2x2)(x), reduce_window(x))


def test_random_crop_flip():
    images = jnp.arange(2 * 4 * 4 * 1, dtype=jnp.float32).reshape(2, 4, 4, 1) + 1
    crop_flip = jax.jit(random_crop_flip, static_argnames="pad")  # one program per shape, not one per operation
    same = crop_flip(images, jax.random.PRNGKey(0), pad=0)
    for n in range(2):  # without padding every output is the image or its mirror
        assert np.array_equal(same[n], images[n]) or np.array_equal(same[n], images[n, :, ::-1])
    out = np.asarray(crop_flip(jnp.repeat(images, 32, axis=0), jax.random.PRNGKey(1), pad=2))
    assert out.shape == (64, 4, 4, 1)
    assert (out == 0).any() and not np.array_equal(out[0], out[2])  # zero padding shows; offsets differ
