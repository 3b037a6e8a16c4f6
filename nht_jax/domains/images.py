"""Domain "images": image classifiers with a spurious feature (docs/science.md §4) — a coloured border at
correlation ρ (a grid axis), or the spurious attribute of CelebA / Waterbirds — trained through the engine's
loop (`init`, `step`, `evaluate` in the shared nested `lax.scan`). λ, η, ρ, seed and init scale are traced
scalars; dataset, model, widths, batch size and step counts are static.

The uint8 images live on device once, shared by every run; each step draws its minibatch by epoch permutation and
paints the border with a key folded from the step, and every log evaluates fixed sets (train, coloured, clean,
aligned, conflicting, shortcut; borders from EVAL_KEY). Metric meanings: `IMAGE_METRICS` and
`nht_jax.engine.metrics.VOCABULARY`.

The data stream step by step, BatchNorm, the evaluation sets and the metrics: docs/methods/images.md."""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
import optax

from nht_jax.base.errors import check
from nht_jax.domains import Domain, ModelContract
from nht_jax.engine.grid import Axis, number_check
from nht_jax.engine.loop import Trainer, assemble_trainer, run_key
from nht_jax.engine.metrics import logit_scale, loss_and_accuracy, parameter_metrics, sq_norm
from nht_jax.engine.step import make_updater
from nht_jax.vision.augment import random_crop_flip
from nht_jax.vision.border import NO_BORDER, paint_border, sample_border_classes
from nht_jax.vision.data import ImageData, load_image_data
from nht_jax.vision.eval_sets import EvalSet, shortcut_eval
from nht_jax.vision.group_metrics import per_group_accuracy, predictions, shortcut_reliance, weighted_group_accuracy
from nht_jax.vision.models import IMAGE_MODELS

DEFAULT_IMAGE_SIZES = {"digits": 24, "fashion_mnist": 32, "mnist": 32, "cifar10": 32, "celeba": 64, "waterbirds": 224}
PADDED_28 = frozenset({"fashion_mnist", "mnist"})
"""Datasets of 28×28 images that are padded (never resized) to the image size."""
GROUP_DATASETS = frozenset({"celeba", "waterbirds"})


@dataclass(frozen=True)
class ImageSettings:
    """[task] name = "images".

    dataset: "digits" (scikit-learn's bundled 8×8 digits, offline), "fashion_mnist" and "mnist" (IDX files or a
          Parquet export), "cifar10" (the python version, a Parquet export or a TFDS prepared copy), "celeba" (a TFDS
          prepared copy read with tfds.data_source) or "waterbirds" (the release folder).
    data_dir: where the data lies ("" = the loader's default: /usr/share/datasets/fashion-mnist (Debian's
          dataset-fashion-mnist) or $NHT_JAX_FASHION_MNIST_DIR, $NHT_JAX_MNIST_DIR or ~/data/mnist, TFDS's default
          folder, or $NHT_JAX_WATERBIRDS_DIR / ~/data/waterbird_complete95_forest2water2).
    image_size: side in pixels (0 = the dataset's default: digits 24, fashion_mnist and mnist 32, cifar10 32,
          celeba 64, waterbirds 224); digits accept 8·scale + 8 (the digit upsampled by `scale`, 4 black pixels of
          padding on each side), fashion_mnist and mnist 28 + 2·pad (pad black pixels on each side, no resizing).
    train_size: training examples used, the first ones of the stored split (0 = all): a subset for CPU-sized runs.
    border_width: width of the spurious border in pixels; 0 = no painted border (CelebA and Waterbirds carry
          their own spurious attribute).
    border_otherwise: what a training image shows when its border does not agree with its label (probability
          1 − ρ): "other_class" = another class's colour, uniform over the other classes (our default: every
          image then has a border); "none" = no border.
    target_attribute, spurious_attribute: CelebA attribute names (target = label, spurious = group attribute;
          groups = 2·target + attribute).
    augment: random crop (4-pixel zero padding) and horizontal flip of every training image.
    eval_train_size: training examples (the first ones of the stored split, their borders drawn at the run's ρ
          with a fixed evaluation key) on which train accuracy/loss are measured at every log; 0 = all.
    eval_test_size: test examples evaluated at every log (the first ones); 0 = all.
    """

    name: Literal["images"] = "images"
    dataset: Literal["digits", "fashion_mnist", "mnist", "cifar10", "celeba", "waterbirds"] = "digits"
    data_dir: str = ""
    image_size: int = 0
    train_size: int = 0
    border_width: int = 2
    border_otherwise: Literal["other_class", "none"] = "other_class"
    target_attribute: str = "Smiling"
    spurious_attribute: str = "Blond_Hair"
    augment: bool = False
    eval_train_size: int = 2048
    eval_test_size: int = 0

    @property
    def side(self) -> int:
        """The image side: image_size, or the dataset's default when 0."""
        return self.image_size or DEFAULT_IMAGE_SIZES[self.dataset]


EVAL_KEY = jax.random.PRNGKey(20_261_129)
"""Key of every evaluation border (fold 0: train set, 1: coloured test set, 2: conflicting test set)."""

NUM_GROUPS = 4


class ImageTrainState(NamedTuple):
    params: Any
    opt_state: Any
    batch_stats: Any  # BatchNorm running statistics ({} for models without BatchNorm)
    step: jnp.ndarray  # optimiser steps taken
    batch_key: jnp.ndarray  # folded with the epoch: that epoch's permutation
    border_key: jnp.ndarray  # folded with the step: that step's borders and augmentation
    grad_norm: jnp.ndarray  # ‖∇L‖ of the last minibatch (NaN before the first step)


@functools.partial(jax.jit, static_argnames=("num_classes",))
def conflicting_border_classes(test_labels, num_classes: int):
    """The border class of every conflicting test image (ρ = 0: never its label), drawn from EVAL_KEY fold 2.
    Compiled as one program (called eagerly when a trainer is built: each operation would compile its own)."""
    return sample_border_classes(test_labels, 0.0, jax.random.fold_in(EVAL_KEY, 2), num_classes=num_classes)


@functools.partial(jax.jit, static_argnames=("side", "width", "num_classes"))
def shortcut_set(side: int, width: int, num_classes: int) -> EvalSet:
    """`vision.eval_sets.shortcut_eval` as uint8 side × side images, one compiled program per (side, width, K)."""
    return shortcut_eval((side, side, 3), width=width, num_classes=num_classes, dtype=jnp.uint8)


def chunked(n: int, chunk: int) -> tuple[int, int]:
    """(chunk size, number of chunks) covering n rows with chunks of at most `chunk`."""
    size = max(1, min(chunk, n))
    return size, -(-n // size)


def make_image_trainer(config, data: ImageData | None = None) -> Trainer:
    data = data if data is not None else load_image_data(config.task)
    task, train_cfg = config.task, config.train
    num_classes = data.num_classes
    side = task.side
    width, otherwise = task.border_width, task.border_otherwise
    model = config.model.build(num_classes)
    first_layer = getattr(config.model, "first_layer", None)  # a model from outside: its first parameter layer
    updater = make_updater(config.optim, train_cfg)
    # XLA:CPU computes float32 products in float32 at every precision setting, and the "highest"
    # context slows its loops by ~25 %; on accelerators the configured precision is set explicitly.
    precision = getattr(config.model, "precision", "highest") if jax.default_backend() != "cpu" else None

    train_images, train_labels = jnp.asarray(data.train.images), jnp.asarray(data.train.labels, jnp.int32)
    test_images, test_labels = jnp.asarray(data.test.images), jnp.asarray(data.test.labels, jnp.int32)
    n_train = int(train_labels.shape[0])
    batch = n_train if train_cfg.batch_size == 0 else min(train_cfg.batch_size, n_train)
    steps_per_epoch = n_train // batch
    n_eval_train = min(task.eval_train_size or n_train, n_train)
    n_eval_test = min(task.eval_test_size or int(test_labels.shape[0]), int(test_labels.shape[0]))
    has_groups = data.has_groups
    if has_groups:
        test_groups = jnp.asarray(data.test.groups[:n_eval_test], jnp.int32)
        group_weights = jnp.asarray(data.train_group_counts(NUM_GROUPS))
    conflicting_borders = (
        conflicting_border_classes(data.test.labels[:n_eval_test], num_classes=num_classes) if width else None
    )
    shortcut = shortcut_set(side=side, width=width, num_classes=num_classes) if width else None

    def paint(images, borders):
        """uint8 images with their borders painted (none when the task paints none), as float in [0, 1]."""
        if width:
            images = paint_border(images, borders, width=width, num_classes=num_classes)
        return images.astype(jnp.float32) / 255.0

    def apply(params, batch_stats, x, train: bool):
        """Logits (and the new batch statistics in train mode) under the configured matmul precision."""
        variables = {"params": params, **({"batch_stats": batch_stats} if batch_stats else {})}
        with jax.default_matmul_precision(precision) if precision else contextlib.nullcontext():
            if train and batch_stats:
                logits, updates = model.apply(variables, x, train=True, mutable=["batch_stats"])
                return logits, updates["batch_stats"]
            return model.apply(variables, x, train=train), batch_stats

    def init(hparams: dict, key=None) -> ImageTrainState:
        key = run_key(hparams) if key is None else key
        init_key, batch_key, border_key = jax.random.split(key, 3)
        variables = model.init(init_key, jnp.zeros((1, side, side, 3), jnp.float32), train=False)
        params = jax.tree.map(lambda p: p * hparams["init_scale"], variables["params"])
        batch_stats = variables.get("batch_stats", {})
        return ImageTrainState(
            params,
            updater.init(hparams, params),
            batch_stats,
            jnp.zeros((), jnp.int32),
            batch_key,
            border_key,
            jnp.full((), jnp.nan, jnp.float32),
        )

    def minibatch(state: ImageTrainState, rho):
        """The step's images (float, bordered, augmented) and labels."""
        epoch, position = state.step // steps_per_epoch, state.step % steps_per_epoch
        order = jax.random.permutation(jax.random.fold_in(state.batch_key, epoch), n_train)
        index = jax.lax.dynamic_slice(order, (position * batch,), (batch,))
        labels = train_labels[index]
        border_key, augment_key = jax.random.split(jax.random.fold_in(state.border_key, state.step))
        borders = (
            sample_border_classes(labels, rho, border_key, num_classes=num_classes, otherwise=otherwise)
            if width
            else None
        )
        x = paint(train_images[index], borders)
        if task.augment:
            x = random_crop_flip(x, augment_key)
        return x, labels

    def step(state: ImageTrainState, hparams: dict) -> ImageTrainState:
        x, labels = minibatch(state, hparams["rho"])

        def loss_fn(params):
            logits, new_stats = apply(params, state.batch_stats, x, train=True)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean(), new_stats

        (_, new_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        params, opt_state = updater.apply(hparams, state.params, state.opt_state, grads)
        return state._replace(
            params=params,
            opt_state=opt_state,
            batch_stats=new_stats,
            step=state.step + 1,
            grad_norm=jnp.sqrt(sq_norm(grads)),
        )

    def eval_logits(state: ImageTrainState, images, borders, n: int):
        """(n, K) eval-mode logits of images[:n] painted with `borders` (None: no border), in chunks."""
        size, count = chunked(n, train_cfg.eval_batch_size)
        index = jnp.minimum(jnp.arange(size * count), n - 1).reshape(count, size)  # padding repeats the last row
        if borders is None:
            borders = jnp.full((n,), NO_BORDER, jnp.int32)
        border_chunks = jnp.concatenate([borders, jnp.full((size * count - n,), NO_BORDER, jnp.int32)]).reshape(
            count, size
        )

        def one_chunk(args):
            rows, chunk_borders = args
            return apply(state.params, state.batch_stats, paint(images[rows], chunk_borders), train=False)[0]

        logits = jax.lax.map(one_chunk, (index, border_chunks))
        return logits.reshape(size * count, -1)[:n]

    def evaluate(state: ImageTrainState, hparams: dict) -> dict:
        ones_train, ones_test = jnp.ones(n_eval_train), jnp.ones(n_eval_test)
        labels_train, labels_test = train_labels[:n_eval_train], test_labels[:n_eval_test]
        train_borders = coloured_borders = None
        if width:
            train_borders = sample_border_classes(
                labels_train,
                hparams["rho"],
                jax.random.fold_in(EVAL_KEY, 0),
                num_classes=num_classes,
                otherwise=otherwise,
            )
            coloured_borders = sample_border_classes(
                labels_test,
                hparams["rho"],
                jax.random.fold_in(EVAL_KEY, 1),
                num_classes=num_classes,
                otherwise=otherwise,
            )
        train_logits = eval_logits(state, train_images, train_borders, n_eval_train)
        train_loss, train_acc = loss_and_accuracy(train_logits, labels_train, ones_train)
        clean_logits = eval_logits(state, test_images, None, n_eval_test)
        clean_loss, clean_acc = loss_and_accuracy(clean_logits, labels_test, ones_test)
        metrics = {"train_loss": train_loss, "train_acc": train_acc, "clean_loss": clean_loss, "clean_acc": clean_acc}
        if width:
            coloured = eval_logits(state, test_images, coloured_borders, n_eval_test)
            aligned = eval_logits(state, test_images, labels_test, n_eval_test)
            conflicting = eval_logits(state, test_images, conflicting_borders, n_eval_test)
            gray = apply(state.params, state.batch_stats, shortcut.images.astype(jnp.float32) / 255.0, train=False)[0]
            metrics["coloured_acc"] = loss_and_accuracy(coloured, labels_test, ones_test)[1]
            metrics["aligned_acc"] = loss_and_accuracy(aligned, labels_test, ones_test)[1]
            metrics["conflicting_acc"] = loss_and_accuracy(conflicting, labels_test, ones_test)[1]
            metrics["conflicting_reliance"] = shortcut_reliance(predictions(conflicting), conflicting_borders)
            metrics["shortcut_reliance"] = shortcut_reliance(predictions(gray), shortcut.border_classes)
        else:
            metrics["coloured_acc"] = clean_acc
        if has_groups:
            group_acc = per_group_accuracy(predictions(clean_logits), labels_test, test_groups, NUM_GROUPS)
            metrics.update({f"group_acc/{g}": group_acc[g] for g in range(NUM_GROUPS)})
            metrics["worst_group_acc"] = jnp.nanmin(group_acc)
            metrics["weighted_avg_acc"] = weighted_group_accuracy(group_acc, group_weights)
        metrics.update(parameter_metrics(state.params, train_loss, train_cfg.divergence_norm))
        first = first_layer or next(iter(state.params))  # Flax keeps the layers in the order they were defined
        metrics.update(
            {
                "head_to_first_ratio": metrics["head_norm_sq"] / metrics[f"layer_norm_sq/{first}"],
                "clean_logit_scale": logit_scale(clean_logits, ones_test),
                "minibatch_grad_norm": state.grad_norm,
            }
        )
        return metrics

    return assemble_trainer(init, step, evaluate, train_cfg.log_every, train_cfg.steps, train_cfg.log_schedule)


IMAGE_METRICS = {
    "clean_loss": "mean cross-entropy on the clean test set (the first eval_test_size test images, no border)",
    "clean_acc": "accuracy on the clean test set: the structured solution (the headline metric)",
    "coloured_acc": "accuracy on the same test images with borders drawn at the run's ρ",
    "aligned_acc": "accuracy on held-out examples whose spurious feature agrees with the label (image tasks: the clean "
    "test images with their own class's border)",
    "conflicting_acc": "accuracy on held-out examples whose spurious feature points to another class than their label "
    "(image tasks: the clean test images with the border of another class)",
    "shortcut_reliance": "fraction of mid-gray images carrying only a class border predicted as that class",
    "conflicting_reliance": "fraction of those conflicting held-out examples predicted as the class their spurious "
    "feature points to (image tasks: their border's class)",
    "group_acc/<g>": "accuracy within group g of the held-out examples (image tasks: the clean test set, "
    "g = 2·label + attribute, datasets with groups)",
    "worst_group_acc": "the smallest group accuracy",
    "weighted_avg_acc": "group accuracies weighted by the training group counts",
    "head_to_first_ratio": "head squared norm over the first layer's squared norm",
    "clean_logit_scale": "root-mean-square logit over the clean test set",
    "minibatch_grad_norm": "‖∇L‖ of the last training minibatch (NaN at step 0, before any step)",
}


def recorded(config) -> frozenset:
    """Scalar metrics recorded by this image configuration (candidates for analysis.transition_metric)."""
    names = {
        "train_acc",
        "train_loss",
        "clean_loss",
        "clean_acc",
        "coloured_acc",
        "clean_logit_scale",
        "head_to_first_ratio",
        "minibatch_grad_norm",
    }
    if config.task.border_width > 0:
        names |= {"shortcut_reliance", "aligned_acc", "conflicting_acc", "conflicting_reliance"}
    if config.task.dataset in GROUP_DATASETS:
        names |= {"worst_group_acc", "weighted_avg_acc"}
    return frozenset(names)


SUMMARY_METRICS = (
    "clean_acc",
    "clean_loss",
    "coloured_acc",
    "aligned_acc",
    "conflicting_acc",
    "shortcut_reliance",
    "conflicting_reliance",
    "worst_group_acc",
    "weighted_avg_acc",
    "head_to_first_ratio",
)


def summary(config) -> tuple:
    return tuple(m for m in SUMMARY_METRICS if m in recorded(config))


def validate(config) -> None:
    """Checks of an image configuration that need no data on disk."""
    task, grid = config.task, config.grid
    size = task.side
    check(size >= 8, f"task.image_size must be ≥ 8 (0 = the dataset default), got {task.image_size}")
    if task.dataset == "digits":
        check(
            size >= 16 and size % 8 == 0,
            f"digits images are 8·scale + 8 pixels wide (16, 24, 32, …); task.image_size = {size} is not",
        )
    if task.dataset in PADDED_28:
        check(
            size >= 28 and size % 2 == 0,
            f"{task.dataset} images are 28×28 padded by the same number of black pixels on each side (28, 30, 32, "
            f"…); task.image_size = {size} is not",
        )
    config.model.validate(size)
    check(task.border_width >= 0, f"task.border_width must be ≥ 0 (0 = no painted border), got {task.border_width}")
    check(
        2 * task.border_width < size,
        f"task.border_width = {task.border_width} covers at least half of the {size}×{size} image; "
        f"use a width below {size / 2:g} (e.g. 2)",
    )
    check(task.train_size >= 0, f"task.train_size must be ≥ 0 (0 = all training images), got {task.train_size}")
    check(
        task.eval_train_size >= 0 and task.eval_test_size >= 0,
        f"task.eval_train_size and task.eval_test_size must be ≥ 0 (0 = all), got "
        f"{task.eval_train_size}, {task.eval_test_size}",
    )
    check(
        task.border_width > 0 or len(grid["rho"]) == 1,
        f"grid.rho varies ({list(grid['rho'])}) but task.border_width = 0 paints no border; "
        f"set task.border_width ≥ 1 or give one rho",
    )
    check(
        not config.train.record_grad_noise, "train.record_grad_noise is not available for image tasks; set it to false"
    )


IMAGE_CONTRACT = ModelContract(
    arguments=("num_classes",),
    inputs="images: float32 (batch, H, W, 3) in [0, 1], borders painted; called as module.apply(variables, images, "
    "train=bool) (train=True with mutable=['batch_stats'] when the model keeps batch statistics)",
    outputs="logits: float (batch, num_classes); the last layer named 'head' for the head metrics; "
    "head_to_first_ratio divides by the first top-level parameter layer (or the settings' first_layer)",
    settings="validate(image_size) (raise ConfigError on a bad setting) and build(num_classes) → an nn.Module; "
    "optional attributes first_layer and precision",
)
"""What the image trainer asks of a model from outside the package (docs/guides/plugins.md)."""


DOMAIN = Domain(
    name="images",
    settings=ImageSettings,
    models=IMAGE_MODELS,
    default_model="simple_cnn",
    axes={
        "rho": Axis(
            "rho",
            (1.0,),
            "border correlation ρ",
            check=number_check(
                "rho", lambda v: 0 <= v <= 1, "(border correlation) must lie in [0, 1]; e.g. grid.rho=[0.5, 0.9, 1.0]"
            ),
            meaning="probability that a training image's border shows its own class colour",
        )
    },
    metrics=IMAGE_METRICS,
    headline_metric="clean_acc",
    validate=validate,
    load_data=lambda config: load_image_data(config.task),
    make_trainer=make_image_trainer,
    recorded=recorded,
    summary=summary,
    figures={
        "phase_lambda_rho.png": ("metric_phase", "rho"),
        "clean_vs_rho.png": ("metric_against_axis", "rho"),
        "layer_norms.png": ("layer_norms", "rho"),
    },
    model_contract=IMAGE_CONTRACT,
)

__all__ = ["DOMAIN", "EVAL_KEY", "IMAGE_CONTRACT"]
