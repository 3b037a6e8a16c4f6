"""Domain "arrays": a classifier trained on the user's own arrays, a `.npz` archive or a directory of `.npy` files
(task.path), with integer labels and, optionally, a group column (the group metrics of CelebA / Waterbirds) and a
spurious-attribute column (the bias-aligned / bias-conflicting metrics of the border tasks).

The file is checked from its .npy headers alone before anything is loaded (`inspect`, also behind `data_bytes`),
then once loaded (`load_data`); `validate` never opens it, so a results folder opens without its data. Every
np.load is allow_pickle=False. Models: "mlp", "simple_cnn", or a model plugin (`ARRAYS_CONTRACT`); group and
attribute metrics from `nht_jax.vision.group_metrics`.

The file contract, the split, the models' input contract, training, the metrics and every check:
docs/guides/arrays.md; model plugins: docs/guides/plugins.md."""

from __future__ import annotations

import contextlib
import hashlib
import math
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nht_jax.base.errors import ConfigError, check
from nht_jax.domains import Domain, ModelContract
from nht_jax.domains.digits_grokking import DigitsMLPSettings
from nht_jax.domains.images import IMAGE_METRICS, chunked
from nht_jax.domains.tokens import WIDTH_AXIS, minibatch
from nht_jax.engine.loop import assemble_trainer, run_key
from nht_jax.engine.losses import (
    CLASSIFICATION_LOSSES,
    TEMPERATURE,
    TEMPERATURE_METRICS,
    effective_logit_scale,
    has_temperature,
    loss_function,
    temperature_metrics,
    tempered,
)
from nht_jax.engine.metrics import parameter_metrics
from nht_jax.engine.step import make_updater
from nht_jax.vision.group_metrics import per_group_accuracy, predictions, shortcut_reliance, weighted_group_accuracy
from nht_jax.vision.models import SimpleCNNSettings


@dataclass(frozen=True)
class ArraysSettings:
    """[task] name = "arrays" (the file contract: the module docstring and docs/guides/arrays.md).

    path: the .npz archive or the directory of .npy files (relative paths from the working directory, ~ expanded).
    inputs, labels: the names of the input and label arrays; groups, spurious: of the optional group and
          spurious-attribute arrays ("" = none).
    split: "auto", "file" (NAME_train / NAME_test arrays) or "seeded" (our split of NAME by train_fraction and
          split_seed, the same for every run).
    num_classes: K (0 = the largest label + 1).
    input_scale: factor applied to the inputs as float32 (e.g. 1/255 for uint8 pixels).
    sha256: "" or the expected SHA-256 of the data (`data_sha256`), checked before training, so the configuration
          and its digest name the data, not only its path.
    """

    name: Literal["arrays"] = "arrays"
    path: str = ""
    inputs: str = "x"
    labels: str = "y"
    groups: str = ""
    spurious: str = ""
    split: Literal["auto", "file", "seeded"] = "auto"
    train_fraction: float = 0.8
    split_seed: int = 0
    num_classes: int = 0
    input_scale: float = 1.0
    sha256: str = ""


ROLES = ("inputs", "labels", "groups", "spurious")
INTEGER_ROLES = ("labels", "groups", "spurious")
PARTS = {"file": ("train", "test"), "seeded": ("all",)}
"""The parts a file holds under each split: its own train and test arrays, or one set that we split."""


# ----------------------------------------------------------------------------- headers (nothing loaded)


class Header(NamedTuple):
    shape: tuple[int, ...]
    dtype: np.dtype


HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def npy_header(fp, where: str) -> Header:
    """Shape and dtype from a .npy header (the array itself is not read)."""
    try:
        version = np.lib.format.read_magic(fp)
    except ValueError as e:
        raise ConfigError(f"{where} is not a .npy array ({e}); write it with numpy.save or numpy.savez") from None
    check(
        version in HEADER_READERS,
        f"{where} has .npy format version {version[0]}.{version[1]}, which this "
        f"domain does not read; save it again with numpy.save or numpy.savez",
    )
    shape, _, dtype = HEADER_READERS[version](fp)
    return Header(tuple(int(s) for s in shape), dtype)


def data_path(task) -> Path:
    """task.path resolved; ConfigError when it is empty, missing or neither a .npz archive nor a directory."""
    check(
        task.path != "",
        "task.path is empty: set it to your .npz archive or directory of .npy files, "
        "e.g. --set task.path=data/mine.npz (docs/guides/arrays.md)",
    )
    path = Path(task.path).expanduser()
    check(
        path.exists(),
        f"task.path = '{task.path}': file not found ({path.resolve()}); give the path of a .npz "
        f"archive or of a directory of .npy files (relative to the working directory)",
    )
    check(
        path.is_dir() or path.suffix != ".npy",
        f"task.path = '{task.path}' is one .npy file; give a .npz archive (numpy.savez(path, x=..., y=...)) or the "
        f"directory holding {task.inputs}.npy, {task.labels}.npy, …",
    )
    return path


def headers(path: Path) -> dict[str, Header]:
    """Array name → Header of every array in the archive or directory."""
    if path.is_dir():
        found = {}
        for file in sorted(path.glob("*.npy")):
            with file.open("rb") as fp:
                found[file.stem] = npy_header(fp, str(file))
        check(
            bool(found),
            f"task.path = '{path}' is a directory without .npy files; save each array there with "
            f"numpy.save (x.npy, y.npy, …)",
        )
        return found
    try:
        with zipfile.ZipFile(path) as archive:
            found = {}
            for member in archive.namelist():
                if member.endswith(".npy"):
                    with archive.open(member) as fp:
                        found[member[:-4]] = npy_header(fp, f"{path}:{member}")
    except (zipfile.BadZipFile, OSError) as e:
        raise ConfigError(
            f"task.path = '{path}' is not a .npz archive ({e}); write it with numpy.savez or "
            f"numpy.savez_compressed, or give a directory of .npy files"
        ) from None
    check(bool(found), f"task.path = '{path}' holds no arrays; write them with numpy.savez(path, x=..., y=...)")
    return found


# ----------------------------------------------------------------------------- the layout from the headers


class Layout(NamedTuple):
    """What the file holds for this task: the split, part → role → array name, part → rows, an example's shape."""

    path: Path
    split: str
    names: dict
    rows: dict
    example_shape: tuple[int, ...]


def role_names(task) -> dict[str, str]:
    """Role → configured array name, for the roles the task uses (groups and spurious only when named)."""
    return {role: getattr(task, role) for role in ROLES if getattr(task, role)}


def resolve_split(task, found: dict, path: Path) -> str:
    """ "file" or "seeded" (task.split, "auto" from which arrays the file holds)."""
    if task.split != "auto":
        return task.split
    own, pooled = f"{task.inputs}_train" in found, task.inputs in found
    check(
        not (own and pooled),
        f"{path} holds both '{task.inputs}' and '{task.inputs}_train', so task.split = "
        f"'auto' cannot tell which to use: set task.split = 'file' (its own train/test "
        f"arrays) or 'seeded' (our split of '{task.inputs}')",
    )
    return "file" if own else "seeded"


def array_name(name: str, part: str) -> str:
    return name if part == "all" else f"{name}_{part}"


DTYPE_RULES = {
    "inputs": ("iuf", "integers or floating point", "x.astype(np.float32)"),
    "labels": ("iu", "integers", "y.astype(np.int64)"),
    "groups": ("iu", "integers", "groups.astype(np.int64)"),
    "spurious": ("iu", "integers", "attribute.astype(np.int64)"),
}


def check_array(role: str, array: str, header: Header, rows: int | None) -> None:
    """The dtype and shape a role needs, and the row count of its part (`rows`: the inputs' rows, None for them)."""
    kinds, need, fix = DTYPE_RULES[role]
    check(
        header.dtype.kind in kinds and not header.dtype.fields,
        f"array '{array}' (task.{role}) has dtype {header.dtype}; {role} must be {need}: save it as e.g. {fix}",
    )
    if role == "inputs":
        check(
            len(header.shape) >= 2,
            f"array '{array}' (task.inputs) has shape {header.shape}; inputs are "
            f"(examples, features…): for one feature save x[:, None]",
        )
        return
    check(
        len(header.shape) == 1,
        f"array '{array}' (task.{role}) has shape {header.shape}; {role} are one value "
        f"per example, shape (examples,): save {array}.ravel()",
    )
    check(
        header.shape[0] == rows,
        f"length mismatch: array '{array}' (task.{role}) has {header.shape[0]} rows but "
        f"the inputs of its split have {rows}; give every array one row per example",
    )


def model_input_shape(model, example_shape: tuple[int, ...]) -> tuple[int, ...]:
    """One example's shape as the model sees it: flat for "mlp", (H, W, C) for "simple_cnn", as in the file for a
    model from outside the package (its validate(example_shape) says whether it fits); ConfigError if unfit."""
    if isinstance(model, DigitsMLPSettings):
        return (math.prod(example_shape),)
    if not isinstance(model, SimpleCNNSettings):
        model.validate(example_shape)
        return example_shape
    check(
        len(example_shape) in (2, 3),
        f"model.name = 'simple_cnn' takes images, inputs of shape (n, H, W) or "
        f"(n, H, W, C); these examples have shape {example_shape}: use model.name = "
        f"'mlp', or reshape the inputs",
    )
    height, breadth = example_shape[:2]
    check(
        height % 8 == 0 and breadth % 8 == 0,
        f"simple_cnn pools three times by 2, so H and W must be multiples of 8; these images are "
        f"{height}×{breadth}: pad or crop them (e.g. to {8 * -(-height // 8)}×{8 * -(-breadth // 8)})",
    )
    return (height, breadth, example_shape[2] if len(example_shape) == 3 else 1)


def train_rows(n: int, fraction: float) -> int:
    """Rows of the seeded training split: round(fraction · n)."""
    return round(fraction * n)


def inspect(config) -> Layout:
    """The file's layout for this configuration, from the headers alone (module docstring: the checks)."""
    task = config.task
    path = data_path(task)
    found = headers(path)
    split = resolve_split(task, found, path)
    names, rows, shapes = {}, {}, {}
    for part in PARTS[split]:
        names[part] = {role: array_name(name, part) for role, name in role_names(task).items()}
        for role, array in names[part].items():
            where = " (task.split = 'file': the file's own NAME_train / NAME_test arrays)" if part != "all" else ""
            check(
                array in found,
                f"{path} holds no array '{array}' (task.{role} = '{getattr(task, role)}'{where}); "
                f"it holds {', '.join(sorted(found))}. Name the array so when saving, or set "
                f"task.{role} to its name",
            )
            check_array(role, array, found[array], rows.get(part))
            if role == "inputs":
                rows[part], shapes[part] = found[array].shape[0], found[array].shape[1:]
        check(rows[part] >= 1, f"array '{names[part]['inputs']}' has no rows; every split needs examples")
    if split == "file":
        check(
            shapes["train"] == shapes["test"],
            f"the training examples have shape {shapes['train']} but the test "
            f"examples {shapes['test']}; both splits need one example shape",
        )
    else:
        n_train = train_rows(rows["all"], task.train_fraction)
        check(
            1 <= n_train <= rows["all"] - 1,
            f"task.train_fraction = {task.train_fraction} of the {rows['all']} examples gives {n_train} training "
            f"rows; the training and the test split each need at least one: choose another fraction, or give "
            f"more examples",
        )
    example_shape = next(iter(shapes.values()))
    model_input_shape(config.model, example_shape)
    return Layout(path, split, names, rows, example_shape)


def data_bytes(config) -> int:
    """Bytes of the arrays `load_data` builds, from the headers: float32 inputs and one int32 per example for the
    labels and for each of the groups and the attribute given."""
    layout = inspect(config)
    per_row = 4 * math.prod(layout.example_shape) + 4 * (len(role_names(config.task)) - 1)
    return per_row * sum(layout.rows.values())


# ----------------------------------------------------------------------------- loading and value checks


class ArraysSplit(NamedTuple):
    x: np.ndarray  # (n, *model input shape) float32
    y: np.ndarray  # (n,) int32
    groups: np.ndarray | None  # (n,) int32, or None
    spurious: np.ndarray | None  # (n,) int32, or None


class ArraysData(NamedTuple):
    train: ArraysSplit
    test: ArraysSplit
    num_classes: int
    num_groups: int  # 0 without a group column

    def train_group_counts(self) -> np.ndarray:
        """(G,) training rows per group (the weights of weighted_avg_acc)."""
        return np.bincount(self.train.groups, minlength=self.num_groups).astype(np.float32)


def read_array(path: Path, name: str) -> np.ndarray:
    """One array, never unpickled."""
    try:
        if path.is_dir():
            return np.load(path / f"{name}.npy", allow_pickle=False)
        with np.load(path, allow_pickle=False) as archive:
            return archive[name]
    except (ValueError, OSError, zipfile.BadZipFile) as e:
        raise ConfigError(f"array '{name}' of {path} cannot be read ({e}); save it again with numpy.savez") from None


def data_sha256(path: Path, arrays) -> str:
    """SHA-256 of the data: the archive's bytes, or (a directory) of each used array's file name and bytes in name
    order."""
    digest = hashlib.sha256()
    files = [path] if not path.is_dir() else [path / f"{name}.npy" for name in sorted(arrays)]
    for file in files:
        if path.is_dir():
            digest.update(file.name.encode() + b"\0")
        with file.open("rb") as fp:
            for block in iter(lambda: fp.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask.reshape(mask.shape[0], -1).any(axis=1))[0])


def inputs_as_float(x: np.ndarray, array: str, scale: float, shape: tuple[int, ...]) -> np.ndarray:
    """x · scale as float32 of the model's input shape; ConfigError naming the first row that is not finite."""
    with np.errstate(over="ignore", invalid="ignore"):  # reported below, with the row
        out = (x.astype(np.float32) * np.float32(scale)).reshape(x.shape[0], *shape)
    bad = ~np.isfinite(out)
    if bad.any():
        raise ConfigError(
            f"array '{array}' (task.inputs) holds {int(bad.sum())} values that are NaN or infinite "
            f"after scaling by task.input_scale = {scale:g}, the first in row {first_bad(bad)}; clean "
            f"or drop those rows"
        )
    return out


def check_range(values: np.ndarray, array: str, role: str, low: int, high: int | None, fix: str) -> None:
    """Every value in [low, high) (high None: no upper bound)."""
    bad = (values < low) | ((values >= high) if high is not None else False)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        bound = f"[{low}, {high})" if high is not None else f"≥ {low}"
        raise ConfigError(f"array '{array}' (task.{role}) holds {values[row]} in row {row}, outside {bound}; {fix}")


def check_classes(labels: np.ndarray, array: str, num_classes: int) -> None:
    """Labels below task.num_classes = K when it is set (a label ≥ K has no logit: its loss would be undefined, and
    the run would end "diverged"); the message names the largest label, K, and the K that would hold them."""
    if num_classes and labels.size and int(labels.max()) >= num_classes:
        top = int(labels.max())
        raise ConfigError(
            f"array '{array}' (task.labels) holds labels up to {top}, but task.num_classes = "
            f"{num_classes} (labels 0 … {num_classes - 1}); set task.num_classes = {top + 1} (or 0: "
            f"the largest label + 1), or remap the labels"
        )


def load_data(config) -> ArraysData:
    """The training and test splits, checked (module docstring).

    Args:
        config: the configuration whose [task] names the array file.

    Returns:
        The training and test splits.
    """
    task = config.task
    layout = inspect(config)
    if task.sha256:
        used = {name for part in layout.names.values() for name in part.values()}
        actual = data_sha256(layout.path, used)
        check(
            actual == task.sha256.lower(),
            f"task.sha256 = '{task.sha256}' but {layout.path} hashes to '{actual}': the data is not the data this "
            f"configuration names; set task.sha256 = '{actual}' if the new data is intended",
        )
    shape = model_input_shape(config.model, layout.example_shape)
    parts = {
        part: {role: read_array(layout.path, array) for role, array in names.items()}
        for part, names in layout.names.items()
    }
    labels = np.concatenate([p["labels"] for p in parts.values()])
    num_classes = task.num_classes or int(labels.max()) + 1
    label_fix = (
        f"labels are 0 … K − 1 with K = task.num_classes = {task.num_classes}: remap them or raise it"
        if task.num_classes
        else "labels are class indices 0 … K − 1: remap them (np.unique(y, return_inverse=True))"
    )
    num_groups = 0
    for part, arrays in parts.items():
        names = layout.names[part]
        check_classes(arrays["labels"], names["labels"], task.num_classes)
        check_range(arrays["labels"], names["labels"], "labels", 0, task.num_classes or None, label_fix)
        if "groups" in arrays:
            check_range(arrays["groups"], names["groups"], "groups", 0, None, "group ids are 0 … G − 1")
            num_groups = max(num_groups, int(arrays["groups"].max()) + 1)
        if "spurious" in arrays:
            check_range(
                arrays["spurious"],
                names["spurious"],
                "spurious",
                0,
                num_classes,
                f"the spurious attribute is the class it points to, 0 … {num_classes - 1}",
            )
    check(
        num_classes >= 2,
        f"the labels hold one class only ({labels.min()}); a classifier needs two or more "
        f"(set task.num_classes if some classes are absent from this data)",
    )
    splits = {
        part: ArraysSplit(
            inputs_as_float(arrays["inputs"], layout.names[part]["inputs"], task.input_scale, shape),
            arrays["labels"].astype(np.int32),
            *(arrays[role].astype(np.int32) if role in arrays else None for role in ("groups", "spurious")),
        )
        for part, arrays in parts.items()
    }
    if layout.split == "file":
        train, test = splits["train"], splits["test"]
    else:
        train, test = seeded_split(splits["all"], task.train_fraction, task.split_seed)
    return ArraysData(train, test, num_classes, num_groups)


def seeded_split(data: ArraysSplit, fraction: float, seed: int) -> tuple[ArraysSplit, ArraysSplit]:
    """The first round(fraction · n) rows of default_rng(seed).permutation(n) train, the others test (file order)."""
    n = data.y.shape[0]
    order = np.random.default_rng(seed).permutation(n)
    cut = train_rows(n, fraction)
    train, test = np.sort(order[:cut]), np.sort(order[cut:])

    def take(index):
        return ArraysSplit(*(None if a is None else a[index] for a in data))

    return take(train), take(test)


# ----------------------------------------------------------------------------- the trainer


class ArraysState(NamedTuple):
    params: Any
    opt_state: Any
    step: jnp.ndarray  # optimiser steps taken
    batch_key: jnp.ndarray  # folded with the step for each minibatch (`tokens.minibatch`)
    train_index: jnp.ndarray  # (n_train,) 0 … n_train − 1: the rows minibatches are drawn from
    train_weight: jnp.ndarray  # (n_train,) ones


def make_trainer(config, data: ArraysData):
    """init / step / evaluate of one run (module docstring); metrics on both splits at every log."""
    model = config.model.build(data.num_classes)
    updater = make_updater(config.optim, config.train)
    loss = loss_function(config.train.loss)
    # as the image domain: XLA:CPU ignores the precision setting, accelerators get the configured one
    precision = getattr(config.model, "precision", None) if jax.default_backend() != "cpu" else None
    train_x, train_y = jnp.asarray(data.train.x), jnp.asarray(data.train.y)
    test_x, test_y = jnp.asarray(data.test.x), jnp.asarray(data.test.y)
    n_train = int(train_y.shape[0])
    size = config.train.batch_size
    with_replacement = config.train.batch_sampling == "with_replacement"
    batch = size if 0 < size < n_train or (with_replacement and size > 0) else 0
    ones_train, ones_test = jnp.ones(n_train), jnp.ones(test_y.shape[0])
    spurious = data.test.spurious is not None
    if spurious:
        attribute = jnp.asarray(data.test.spurious)
        aligned = (attribute == test_y).astype(jnp.int32)  # 1 aligned, 0 conflicting
        conflicting_attribute = jnp.where(aligned == 1, -1, attribute)
    if data.num_groups:
        test_groups = jnp.asarray(data.test.groups)
        group_weights = jnp.asarray(data.train_group_counts())

    def apply(params, x):
        with jax.default_matmul_precision(precision) if precision else contextlib.nullcontext():
            return model.apply({"params": params}, x)

    def logits_of(params, x):
        """(n, K) logits of every row of x, in chunks of train.eval_batch_size (padding repeats the last row)."""
        n = x.shape[0]
        rows, count = chunked(n, config.train.eval_batch_size)
        index = jnp.minimum(jnp.arange(rows * count), n - 1).reshape(count, rows)
        return jax.lax.map(lambda chunk: apply(params, x[chunk]), index).reshape(rows * count, -1)[:n]

    def init(hparams: dict, key=None) -> ArraysState:
        key = run_key(hparams) if key is None else key
        init_key, batch_key = jax.random.split(key)
        params = model.init(init_key, train_x[:1])["params"]
        params = jax.tree.map(lambda p: p * hparams["init_scale"], params)
        return ArraysState(
            params,
            updater.init(hparams, params),
            jnp.zeros((), jnp.int32),
            batch_key,
            jnp.arange(n_train, dtype=jnp.int32),
            jnp.ones(n_train, jnp.float32),
        )

    def batch_loss(params, state: ArraysState, hparams: dict):
        if batch == 0:
            x, y, weight = train_x, train_y, ones_train
        else:
            index, weight = minibatch(state, batch, with_replacement)
            x, y = train_x[index], train_y[index]
        return loss(tempered(apply(params, x), hparams), y, weight)[0]

    def step(state: ArraysState, hparams: dict) -> ArraysState:
        grads = jax.grad(batch_loss)(state.params, state, hparams)
        params, opt_state = updater.apply(hparams, state.params, state.opt_state, grads)
        return state._replace(params=params, opt_state=opt_state, step=state.step + 1)

    def evaluate(state: ArraysState, hparams: dict) -> dict:
        train_logits, test_logits = logits_of(state.params, train_x), logits_of(state.params, test_x)
        train_loss, train_acc = loss(tempered(train_logits, hparams), train_y, ones_train)
        test_loss, test_acc = loss(tempered(test_logits, hparams), test_y, ones_test)
        metrics = {"train_loss": train_loss, "train_acc": train_acc, "test_loss": test_loss, "test_acc": test_acc}
        if has_temperature(hparams):
            every = jnp.concatenate([train_logits, test_logits])
            metrics["effective_logit_scale"] = effective_logit_scale(every, hparams, jnp.ones(every.shape[0]))
        predicted = predictions(test_logits)
        if spurious:
            conflicting_acc, aligned_acc = per_group_accuracy(predicted, test_y, aligned, 2)
            metrics.update(
                {
                    "aligned_acc": aligned_acc,
                    "conflicting_acc": conflicting_acc,
                    "conflicting_reliance": shortcut_reliance(predicted, conflicting_attribute),
                }
            )
        if data.num_groups:
            group_acc = per_group_accuracy(predicted, test_y, test_groups, data.num_groups)
            metrics.update({f"group_acc/{g}": group_acc[g] for g in range(data.num_groups)})
            metrics["worst_group_acc"] = jnp.nanmin(group_acc)
            metrics["weighted_avg_acc"] = weighted_group_accuracy(group_acc, group_weights)
        metrics.update(parameter_metrics(state.params, train_loss, config.train.divergence_norm))
        return metrics

    return assemble_trainer(init, step, evaluate, config.train.log_every, config.train.steps, config.train.log_schedule)


# ----------------------------------------------------------------------------- declarations

SHORTCUT_METRICS = ("aligned_acc", "conflicting_acc", "conflicting_reliance")
GROUP_METRICS = ("worst_group_acc", "weighted_avg_acc")

ARRAYS_METRICS = {
    **{
        name: IMAGE_METRICS[name]
        for name in ("aligned_acc", "conflicting_acc", "conflicting_reliance", "group_acc/<g>", *GROUP_METRICS)
    },
    **TEMPERATURE_METRICS,
}
"""Metric name → meaning; the shortcut and group names are the image domain's, with the same meanings."""

ARRAYS_CONTRACT = ModelContract(
    arguments=("num_classes",),
    inputs="x: float32 (batch, *example shape), the file's examples times task.input_scale; called as "
    "module.apply({'params': p}, x)",
    outputs="logits: float (batch, num_classes); all its variables in 'params' (the grid's init_scale multiplies them)",
    settings="validate(example_shape) (raise ConfigError when examples of that shape do not fit the model) and "
    "build(num_classes) → an nn.Module",
)
"""What the arrays trainer asks of a model from outside the package (docs/guides/plugins.md)."""


def optional_metrics(config) -> tuple[str, ...]:
    """The shortcut metrics when a spurious attribute is named, the group metrics when groups are."""
    return (SHORTCUT_METRICS if config.task.spurious else ()) + (GROUP_METRICS if config.task.groups else ())


def recorded(config) -> frozenset:
    return frozenset(
        {
            "train_loss",
            "train_acc",
            "test_loss",
            "test_acc",
            *optional_metrics(config),
            *temperature_metrics(config.grid),
        }
    )


def validate(config) -> None:
    """Checks that need no data (the file is read by `inspect` and `load_data`, never here)."""
    task, model = config.task, config.model
    named = [getattr(task, role) for role in ROLES if getattr(task, role)]
    check(
        task.inputs != "" and task.labels != "",
        "task.inputs and task.labels name the input and label arrays; they cannot be empty (defaults 'x' and 'y')",
    )
    check(
        len(set(named)) == len(named),
        f"task.inputs, task.labels, task.groups and task.spurious must name different arrays, got {named}",
    )
    check(
        0 < task.train_fraction < 1, f"task.train_fraction must lie strictly between 0 and 1, got {task.train_fraction}"
    )
    check(
        task.num_classes == 0 or task.num_classes >= 2,
        f"task.num_classes must be 0 (the largest label + 1) or at least 2, got {task.num_classes}",
    )
    check(
        math.isfinite(task.input_scale) and task.input_scale > 0,
        f"task.input_scale must be a positive number (e.g. 1/255 = 0.00392156862745098 for uint8 pixels), got "
        f"{task.input_scale}",
    )
    check(
        task.sha256 == "" or (len(task.sha256) == 64 and all(c in "0123456789abcdefABCDEF" for c in task.sha256)),
        f"task.sha256 must be empty or 64 hexadecimal digits (the data's SHA-256), got '{task.sha256}'",
    )
    if isinstance(model, DigitsMLPSettings):
        check(all(h > 0 for h in model.hidden), f"model.hidden widths must be positive, got {list(model.hidden)}")
    check(
        not config.train.record_grad_noise,
        "train.record_grad_noise is not available for the arrays domain; set it to false",
    )


DOMAIN = Domain(
    name="arrays",
    settings=ArraysSettings,
    models={"mlp": DigitsMLPSettings, "simple_cnn": SimpleCNNSettings},
    default_model="mlp",
    axes={TEMPERATURE.name: TEMPERATURE},
    metrics=ARRAYS_METRICS,
    headline_metric="test_acc",
    validate=validate,
    load_data=load_data,
    make_trainer=make_trainer,
    recorded=recorded,
    summary=lambda config: ("test_acc", "test_loss") + optional_metrics(config) + temperature_metrics(config.grid),
    static_axes={"width": WIDTH_AXIS},
    data_bytes=data_bytes,
    losses=CLASSIFICATION_LOSSES,
    model_contract=ARRAYS_CONTRACT,
)

__all__ = ["ARRAYS_CONTRACT", "DOMAIN", "load_data"]
