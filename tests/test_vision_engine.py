"""Image tasks in the engine: a run inside a (λ, ρ) grid equals the run alone (SimpleCNN; ResNet with
BatchNorm), ρ reaches the training borders, metrics, the im2col convolution, augmentation."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nht_jax.config import from_dict
from nht_jax.executor import compile_grid, pad_runs, plan, unpad
from nht_jax.grid import expand, take
from nht_jax.train import make_train, make_trainer
from nht_jax.vision.augment import random_crop_flip
from nht_jax.vision.data import load_image_data
from nht_jax.vision.patch_conv import max_pool_2x2, patch_conv


def image_config(model=None, task=None, train=None, grid=None, analysis=None):
    """Digits with a 2-pixel border, a few steps: small enough to compile and run in seconds."""
    data = {
        "name": "vision-test",
        "task": {"name": "images", "dataset": "digits", "border_width": 2, "eval_train_size": 48,
                 "eval_test_size": 40, **(task or {})},
        "model": {"name": "simple_cnn", **(model or {})},
        "optim": {"name": "adamw", "b2": 0.999},
        "train": {"steps": 6, "batch_size": 16, "log_every": 3, "eval_batch_size": 16, "chunk_logs": 1,
                  **(train or {})},
        "analysis": analysis or {"transition_metric": "shortcut_reliance", "transition_direction": "below",
                                 "transition_threshold": 0.5},
        "grid": {"weight_decay": [0.01, 1.0], "learning_rate": 3e-3, "seed": [0], "rho": [0.0, 1.0], **(grid or {})},
    }
    return from_dict(data)


def grid_run(config, data):
    trainer = make_trainer(config, data)
    hparams = expand(config.grid)
    the_plan = plan(config.train, len(hparams.seed))
    program = compile_grid(trainer, the_plan)
    padded = pad_runs(hparams, the_plan.padded_runs)
    states, metrics = program.advance(program.init(padded), padded, trainer.num_logs)
    return hparams, unpad(jax.tree.map(np.asarray, metrics), len(hparams.seed)), unpad(states, len(hparams.seed))


@pytest.fixture(scope="module")
def digits():
    return load_image_data(image_config().task)


NAMES = ("train_loss", "train_acc", "clean_acc", "coloured_acc", "conflicting_acc", "shortcut_reliance",
         "conflicting_reliance", "norm_sq",
         "layer_norm_sq/head", "head_to_first_ratio", "grad_norm")


def assert_grid_equals_alone(config, data, names=NAMES):
    hparams, metrics, states = grid_run(config, data)
    train = jax.jit(make_train(config, data))
    alone_runs = []
    for run in range(len(hparams.seed)):
        alone_state, alone = train(take(hparams, run))
        alone_runs.append(alone)
        for name in names:
            np.testing.assert_allclose(metrics[name][run], np.asarray(alone[name])[1:], rtol=1e-5, atol=1e-6,
                                       err_msg=f"{name} of run {run}")
        for a, b in zip(jax.tree.leaves(alone_state.batch_stats), jax.tree.leaves(jax.tree.map(lambda v: v[run],
                                                                                                states.batch_stats))):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    return hparams, metrics, states, alone_runs


def test_simple_cnn_run_inside_lambda_rho_grid_equals_run_alone(digits):
    config = image_config()
    hparams, metrics, _, alone_runs = assert_grid_equals_alone(config, digits)
    assert metrics["train_acc"].shape == (4, 2)  # 4 runs (2 λ × 2 ρ), logs at steps 3, 6 (step 0: `evaluate`)
    assert np.isfinite(metrics["grad_norm"]).all()
    assert all(np.isnan(alone["grad_norm"][0]) for alone in alone_runs)  # no step taken yet at step 0
    assert (metrics["finite"] == 1).all()
    # ρ is a real axis: runs differing only in ρ train on different borders
    same_lambda = (hparams.weight_decay == 0.01)
    a, b = np.flatnonzero(same_lambda)
    assert {float(hparams.rho[a]), float(hparams.rho[b])} == {0.0, 1.0}
    assert not np.allclose(metrics["train_loss"][a], metrics["train_loss"][b])
    # test_acc is the clean accuracy; layer norms add up to the total norm
    np.testing.assert_array_equal(metrics["test_acc"], metrics["clean_acc"])
    layers = [k for k in metrics if k.startswith("layer_norm_sq/")]
    assert {k.split("/")[1] for k in layers} == {"conv1", "conv2", "conv3", "conv4", "dense", "head"}
    np.testing.assert_allclose(sum(metrics[k] for k in layers), metrics["norm_sq"], rtol=1e-5)
    np.testing.assert_allclose(metrics["head_to_first_ratio"],
                               metrics["layer_norm_sq/head"] / metrics["layer_norm_sq/conv1"], rtol=1e-5)


def test_resnet_with_batchnorm_inside_the_grid_equals_the_run_alone(digits):
    config = image_config(model={"name": "resnet18", "norm": "batch", "resnet_width": 4, "resnet_stages": [1, 1],
                                 "conv_impl": "lax"},
                          train={"strategy": "vmap"})
    data16 = load_image_data(dataclasses.replace(config.task, image_size=16))
    config = dataclasses.replace(config, task=dataclasses.replace(config.task, image_size=16))
    _, _, states, _ = assert_grid_equals_alone(config, data16)
    stats = states.batch_stats["stem_norm"]
    assert float(np.abs(stats["mean"]).max()) > 1e-4 and not np.allclose(stats["var"], 1.0)  # statistics moved


def test_group_metrics_and_no_border_on_a_grouped_dataset(digits):
    """Digits with a made-up binary attribute stand in for CelebA/Waterbirds: groups, no painted border."""
    def with_groups(split, n):
        attribute = (np.arange(n) % 3 == 0).astype(np.int32)
        label = (split.labels[:n] % 2).astype(np.int32)
        return split._replace(images=split.images[:n], labels=label, attributes=attribute,
                              groups=2 * label + attribute, num_classes=2)

    data = digits._replace(name="celeba", train=with_groups(digits.train, 256), test=with_groups(digits.test, 64),
                           num_classes=2)
    config = image_config(task={"dataset": "celeba", "border_width": 0, "eval_test_size": 0, "image_size": 24},
                          grid={"rho": [1.0], "weight_decay": [0.1]},
                          analysis={"transition_metric": "worst_group_acc", "transition_threshold": 0.7})
    _, metrics = jax.jit(make_train(config, data))(take(expand(config.grid), 0))
    groups = np.stack([np.asarray(metrics[f"group_acc/{g}"]) for g in range(4)])
    np.testing.assert_allclose(metrics["worst_group_acc"], groups.min(axis=0), rtol=1e-6)
    counts = np.bincount(data.train.groups, minlength=4)
    np.testing.assert_allclose(metrics["weighted_avg_acc"], counts @ groups / counts.sum(), rtol=1e-5)
    test_counts = np.bincount(data.test.groups, minlength=4)
    np.testing.assert_allclose(metrics["avg_acc"], test_counts @ groups / test_counts.sum(), rtol=1e-5)
    assert "shortcut_reliance" not in metrics and "conflicting_acc" not in metrics
    np.testing.assert_array_equal(metrics["coloured_acc"], metrics["clean_acc"])


@pytest.mark.parametrize("stride,padding,kernel", [(1, "SAME", 3), (2, ((1, 1), (1, 1)), 3), (2, "VALID", 1),
                                                   (1, ((0, 2), (1, 0)), 3)])
def test_patch_conv_equals_lax_conv(stride, padding, kernel):
    x = jax.random.normal(jax.random.PRNGKey(0), (2, 9, 8, 5))
    k = jax.random.normal(jax.random.PRNGKey(1), (kernel, kernel, 5, 7))
    dims = jax.lax.conv_dimension_numbers(x.shape, k.shape, ("NHWC", "HWIO", "NHWC"))
    expected = jax.lax.conv_general_dilated(x, k, (stride, stride), padding, dimension_numbers=dims,
                                            precision="highest")
    got = patch_conv(x, k, (stride, stride), padding, dimension_numbers=dims, precision="highest")
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_max_pool_2x2_matches_reduce_window():
    import flax.linen as nn

    x = jax.random.normal(jax.random.PRNGKey(0), (2, 7, 6, 3))
    np.testing.assert_array_equal(max_pool_2x2(x), nn.max_pool(x, (2, 2), strides=(2, 2)))


def test_random_crop_flip():
    images = jnp.arange(2 * 4 * 4 * 1, dtype=jnp.float32).reshape(2, 4, 4, 1) + 1
    same = random_crop_flip(images, jax.random.PRNGKey(0), pad=0)
    for n in range(2):  # without padding every output is the image or its mirror
        assert np.array_equal(same[n], images[n]) or np.array_equal(same[n], images[n, :, ::-1])
    out = np.asarray(random_crop_flip(jnp.repeat(images, 32, axis=0), jax.random.PRNGKey(1), pad=2))
    assert out.shape == (64, 4, 4, 1)
    assert (out == 0).any() and not np.array_equal(out[0], out[2])  # zero padding shows; offsets differ
