"""Typed sweep configuration: static settings apart from the grid of dynamic hyperparameters.

Static values (shapes, widths, step counts, the task) are Python values: changing one
recompiles. Dynamic values (λ, η, seed, init scale, train fraction, border correlation ρ) live in `GridConfig`
as per-axis value lists; `nht_jax.grid` turns them into arrays that vmap.

Presets are TOML files whose tables mirror these dataclasses; `--set section.key=value`
overrides one field with a TOML-parsed value.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

import tomli_w


class ConfigError(ValueError):
    """A configuration problem, reported to the user as one clear message (no traceback)."""


@dataclass(frozen=True)
class TaskConfig:
    """What is learned.

    name: "modular" — (a ∘ b) mod p over all p² pairs (÷: b ≠ 0, p prime);
          "sparse_parity" — parity of the first `parity_k` of `parity_n` random bits;
          "images" — an image classification set with a spurious feature (PAPER.md §4), trained by
          `nht_jax.vision.train`; the grid's `rho` sets the border correlation.
    tokens: "ab" feeds [a, b]; "ab=" feeds [a, b, =] (the "=" token has id p).

    Image tasks (name = "images"):
    dataset: "digits" (scikit-learn's bundled 8×8 digits, offline), "cifar10", "celeba" (TFDS
          prepared copies read with tfds.data_source) or "waterbirds" (the release folder).
    data_dir: where the data lies ("" = the loader's default: TFDS's default folder, or
          $NHT_JAX_WATERBIRDS_DIR / ~/data/waterbird_complete95_forest2water2).
    image_size: side in pixels (0 = the dataset's default: digits 24, cifar10 32, celeba 64,
          waterbirds 224); digits accept 8·scale + 8 (the digit upsampled by `scale`, 4 black
          pixels of padding on each side).
    border_width: width of the spurious border in pixels; 0 = no painted border (CelebA and
          Waterbirds carry their own spurious attribute).
    border_otherwise: what a training image shows when its border does not agree with its label
          (probability 1 − ρ): "other_class" = another class's colour, uniform over the other
          classes (our default: every image then has a border); "none" = no border.
    target_attribute, spurious_attribute: CelebA attribute names (target = label, spurious =
          group attribute; groups = 2·target + attribute).
    augment: random crop (4-pixel zero padding) and horizontal flip of every training image.
    eval_train_size: training examples (the first ones of the stored split, their borders drawn
          at the run's ρ with a fixed evaluation key) on which train accuracy/loss are measured at
          every log; 0 = all.
    eval_test_size: test examples evaluated at every log (the first ones); 0 = all.
    """

    name: Literal["modular", "sparse_parity", "images"] = "modular"
    op: Literal["+", "-", "*", "/"] = "+"
    p: int = 97
    tokens: Literal["ab", "ab="] = "ab"
    parity_n: int = 40
    parity_k: int = 3
    parity_samples: int = 2000
    data_seed: int = 0
    dataset: Literal["digits", "cifar10", "celeba", "waterbirds"] = "digits"
    data_dir: str = ""
    image_size: int = 0
    border_width: int = 2
    border_otherwise: Literal["other_class", "none"] = "other_class"
    target_attribute: str = "Smiling"
    spurious_attribute: str = "Blond_Hair"
    augment: bool = False
    eval_train_size: int = 2048
    eval_test_size: int = 0


DEFAULT_IMAGE_SIZES = {"digits": 24, "cifar10": 32, "celeba": 64, "waterbirds": 224}


def image_size(task: TaskConfig) -> int:
    """The image side of an image task: task.image_size, or the dataset's default when 0."""
    return task.image_size or DEFAULT_IMAGE_SIZES[task.dataset]


@dataclass(frozen=True)
class ModelConfig:
    """The network.

    name "mlp": `embedding = "onehot"` is one hidden layer on the one-hot encoding of every
    position, h = act(Σ_i E_i[x_i] + b) (per-position tables of width `hidden[0]`), then
    further `hidden` layers; `embedding = "learned"` embeds tokens with one shared table of
    width `d_embed`, concatenates the positions and applies all `hidden` layers.
    name "transformer": one pre-norm-free block (attention + MLP, residual), token and
    position embeddings, readout of the last position; `layer_norm` = "none" | "final"
    (before the head) | "pre" (before attention, MLP and head).
    Initialisation is LeCun normal (variance 1/fan-in) for dense kernels, N(0, 1/d) for
    embeddings; the grid's `init_scale` multiplies every initial parameter.
    `precision` of matrix products: "highest" is true float32 everywhere (GPUs otherwise use
    TF32 for float32 products, which changes trajectories at the 1e-3 level); "default" is
    the backend's fastest (for image models it is set for every matmul and convolution).
    name "simple_cnn": the paper's 6-layer CNN without normalisation (`nht_jax.vision.cnn`).
    name "resnet18": ResNet18 for 32×32 inputs (`nht_jax.vision.resnet`) with `norm` = "batch" |
    "group" | "none", `resnet_width` channels in the first stage (64 standard) and
    `resnet_stages` BasicBlocks per stage ((2, 2, 2, 2) = ResNet18; smaller for tests).
    `conv_impl` of image models: "lax" (XLA convolutions), "patches" (im2col + one matmul, the same
    maths; XLA:CPU runs convolutions inside loops ~10× slower, see nht_jax.vision.patch_conv), or
    "auto" = "patches" on CPU, "lax" elsewhere.
    """

    name: Literal["mlp", "transformer", "simple_cnn", "resnet18"] = "mlp"
    embedding: Literal["onehot", "learned"] = "onehot"
    d_embed: int = 128
    hidden: tuple[int, ...] = (128,)
    activation: Literal["quadratic", "relu", "gelu", "tanh", "silu"] = "quadratic"
    d_model: int = 128
    n_heads: int = 4
    d_mlp: int = 512
    layer_norm: Literal["none", "final", "pre"] = "none"
    precision: Literal["default", "high", "highest"] = "highest"
    norm: Literal["batch", "group", "none"] = "batch"
    resnet_width: int = 64
    resnet_stages: tuple[int, ...] = (2, 2, 2, 2)
    conv_impl: Literal["auto", "lax", "patches"] = "auto"


@dataclass(frozen=True)
class OptimConfig:
    """Optimiser family; η and λ come from the grid. Conventions (per step, θ the parameters):

    adamw          θ ← θ(1 − ηλ) − η·m̂/(√v̂ + ε)                (decoupled, optax.adamw)
    sgd            θ ← θ − η(∇L + 2λθ)                          (the theory's ℓ2 penalty λ‖θ‖²)
    sgdw           θ ← θ(1 − ηλ) − η∇L                          (decoupled)
    sgd_momentum   m ← βm + ∇L + 2λθ;  θ ← θ − ηm               (ℓ2 penalty through momentum)
    sgdw_momentum  m ← βm + ∇L;        θ ← θ(1 − ηλ) − ηm       (decoupled)

    decay_on: "weights" decays only parameters with ≥ 2 dimensions (kernels, embeddings),
    not biases or LayerNorm scales; "all" decays everything.
    """

    name: Literal["adamw", "sgd", "sgdw", "sgd_momentum", "sgdw_momentum"] = "adamw"
    b1: float = 0.9
    b2: float = 0.98
    eps: float = 1e-8
    momentum: float = 0.9
    nesterov: bool = False
    decay_on: Literal["weights", "all"] = "weights"


@dataclass(frozen=True)
class TrainConfig:
    """Loop and execution settings.

    batch_size 0 means full batch. Metrics are recorded at step 0 and every `log_every`
    steps; `steps` must be a multiple of `log_every`. `strategy` picks how the grid runs:
    "auto" (sequential on CPU, vmap elsewhere), "map" (runs one after another inside one
    compiled program, `runs_per_batch` at a time vectorised), "vmap" (all runs at once).
    `shard` spreads the grid over local devices ("auto": when there are several).
    `chunk_logs` log intervals run per compiled call (progress, checkpoints, resume).
    `record_grad_noise` also records, at every logged step, "grad_noise_var" (σ² = E‖g_B − g‖² from
    `noise_samples` minibatches of `noise_batch_size` rows, 0 = the training batch size) and "sharpness"
    (a lower bound on the loss smoothness L); see `nht_jax.theory.noise`. Used by `nht bound` (token tasks only).
    `lr_schedule`: "constant" uses η at every step; "cosine" uses η_t = η·(1 + cos(π·t/steps))/2
    (optax.cosine_decay_schedule; decoupled weight decay is scaled by η_t too, as in PyTorch's AdamW).
    `eval_batch_size`: image tasks evaluate in chunks of this many images (bounds memory).
    """

    steps: int = 6000
    batch_size: int = 0
    log_every: int = 50
    strategy: Literal["auto", "map", "vmap"] = "auto"
    runs_per_batch: int = 1
    shard: Literal["auto", "on", "off"] = "auto"
    chunk_logs: int = 10
    checkpoint_every_s: float = 30.0
    divergence_norm: float = 1e12
    record_grad_noise: bool = False
    noise_batch_size: int = 0
    noise_samples: int = 4
    lr_schedule: Literal["constant", "cosine"] = "constant"
    eval_batch_size: int = 1024


@dataclass(frozen=True)
class AnalysisConfig:
    """Definitions used by the analysis (our choices where the papers are silent).

    T_fit: first logged step with train accuracy ≥ fit_threshold.
    T_transition: first logged step at or after T_fit at which the metric `transition_metric`
    is ≥ transition_threshold (`transition_direction` = "above", e.g. test accuracy) or
    ≤ transition_threshold ("below", e.g. shortcut reliance falling to one half: our definition
    of T for the vision domains, PAPER.md §3 leaves it open).
    transition_persists: when true, T_transition is the first logged step ≥ T_fit from which the
    criterion holds at every later log (a momentary crossing by a noisy metric does not count);
    when false (default), the first logged step at which it holds.
    regime_rule "accuracy": strong = never fits; weak = fits, no transition within the
    budget; structured = fits and the transition criterion already holds at T_fit (no delay at
    log resolution: the structured solution is learned directly); intermediate = fits, then
    transitions later. regime_rule "norm": strong = never fits; intermediate = ‖θ‖² falls by more
    than `norm_decay_fraction` of its peak after the peak; weak = otherwise (the norm keeps
    growing or plateaus); this rule has no "structured".
    Paper's names for the (λ, ρ) diagram: weak ↔ shortcut-dominated, intermediate ↔ transition,
    structured ↔ structured, strong ↔ suppressed.
    """

    fit_threshold: float = 0.99
    transition_threshold: float = 0.99
    transition_metric: str = "test_acc"
    transition_direction: Literal["above", "below"] = "above"
    transition_persists: bool = False
    regime_rule: Literal["accuracy", "norm"] = "accuracy"
    norm_decay_fraction: float = 0.1


AXES = ("weight_decay", "learning_rate", "seed", "init_scale", "train_fraction", "rho")


@dataclass(frozen=True)
class GridConfig:
    """Per-axis value lists; the grid is their Cartesian product in this field order.

    rho: correlation of the spurious border with the label in training (image tasks; token
    tasks ignore it). Must lie in [0, 1].
    """

    weight_decay: tuple[float, ...] = (1.0,)
    learning_rate: tuple[float, ...] = (1e-3,)
    seed: tuple[int, ...] = (0,)
    init_scale: tuple[float, ...] = (1.0,)
    train_fraction: tuple[float, ...] = (0.4,)
    rho: tuple[float, ...] = (1.0,)


@dataclass(frozen=True)
class Config:
    name: str = "default"
    description: str = ""
    task: TaskConfig = field(default_factory=TaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    analysis: AnalysisConfig = field(default_factory=AnalysisConfig)
    grid: GridConfig = field(default_factory=GridConfig)


_SECTION_TYPES = {"task": TaskConfig, "model": ModelConfig, "optim": OptimConfig, "train": TrainConfig,
                  "analysis": AnalysisConfig, "grid": GridConfig}


# ----------------------------------------------------------------------------- value coercion

def _axis_values(key: str, raw: Any) -> tuple:
    """A grid axis from a scalar, a list, or {logspace|linspace = [lo, hi, n]} / {geomspace = ...}."""
    if isinstance(raw, dict):
        if len(raw) != 1 or next(iter(raw)) not in ("logspace", "linspace"):
            raise ConfigError(f"grid.{key}: a table must be {{logspace = [lo, hi, n]}} or "
                              f"{{linspace = [lo, hi, n]}}, got {raw!r}")
        kind, spec = next(iter(raw.items()))
        if not (isinstance(spec, list) and len(spec) == 3 and isinstance(spec[2], int)):
            raise ConfigError(f"grid.{key}.{kind} needs [lo, hi, n] with integer n, got {spec!r}")
        lo, hi, n = spec
        if kind == "logspace":
            if not (lo > 0 and hi > 0):
                raise ConfigError(f"grid.{key}.logspace needs positive ends, got [{lo}, {hi}]")
            return tuple(float(v) for v in logspace(lo, hi, n))
        return tuple(float(lo + (hi - lo) * i / max(n - 1, 1)) for i in range(n))
    values = raw if isinstance(raw, (list, tuple)) else [raw]
    if not values:
        raise ConfigError(f"grid.{key} is empty: give at least one value")
    return tuple(values)


def logspace(lo: float, hi: float, n: int) -> list[float]:
    """n values from lo to hi, evenly spaced in log10 (both ends included)."""
    if n == 1:
        return [float(lo)]
    a, b = math.log10(lo), math.log10(hi)
    return [10 ** (a + (b - a) * i / (n - 1)) for i in range(n)]


def _coerce(section: str, key: str, hint: Any, value: Any) -> Any:
    where = f"{section}.{key}"
    origin = get_origin(hint)
    if origin is Literal:
        if value not in get_args(hint):
            raise ConfigError(f"{where} = {value!r} is not allowed; choose one of {list(get_args(hint))}")
        return value
    if origin is tuple:
        (elem, _ellipsis) = get_args(hint)
        if not isinstance(value, (list, tuple)):
            value = [value]
        return tuple(_coerce(section, key, elem, v) for v in value)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, float) and value.is_integer())):
            raise ConfigError(f"{where} must be an integer, got {value!r}")
        return int(value)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where} must be a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string, got {value!r}")
        return value
    raise ConfigError(f"{where}: unsupported type {hint}")  # pragma: no cover - schema bug


def _unknown_key(where: str, key: str, known: list[str]) -> ConfigError:
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return ConfigError(f"unknown key '{where}{key}'.{hint} Known keys: {', '.join(sorted(known))}")


def _build_section(name: str, table: dict) -> Any:
    cls = _SECTION_TYPES[name]
    hints = get_type_hints(cls)
    kwargs = {}
    for key, value in table.items():
        if key not in hints:
            raise _unknown_key(f"{name}.", key, list(hints))
        if name == "grid":
            value = _axis_values(key, value)
        kwargs[key] = _coerce(name, key, hints[key], value)
    return cls(**kwargs)


def from_dict(data: dict) -> Config:
    """Build and validate a Config from nested dicts (TOML tables)."""
    top = {}
    for key, value in data.items():
        if key in _SECTION_TYPES:
            if not isinstance(value, dict):
                raise ConfigError(f"[{key}] must be a table, got {value!r}")
            top[key] = _build_section(key, value)
        elif key in ("name", "description"):
            top[key] = _coerce("config", key, str, value)
        else:
            raise _unknown_key("", key, list(_SECTION_TYPES) + ["name", "description"])
    config = Config(**top)
    validate(config)
    return config


def to_dict(config: Config) -> dict:
    """Nested plain dicts (lists for tuples), TOML-serialisable."""
    def plain(v):
        return list(v) if isinstance(v, tuple) else v
    out: dict = {"name": config.name, "description": config.description}
    for name in _SECTION_TYPES:
        section = getattr(config, name)
        out[name] = {f.name: plain(getattr(section, f.name)) for f in dataclasses.fields(section)}
    return out


def to_toml(config: Config) -> str:
    return tomli_w.dumps(to_dict(config))


def parse_override(text: str) -> tuple[list[str], Any]:
    """'section.key=value' → (['section', 'key'], value), the value parsed as TOML (bare words as strings)."""
    if "=" not in text:
        raise ConfigError(f"--set expects key=value (e.g. train.steps=2000), got {text!r}")
    key, raw = text.split("=", 1)
    path = key.strip().split(".")
    if len(path) == 1 and path[0] in ("name", "description"):
        return path, raw
    if len(path) != 2 or not all(path):
        raise ConfigError(f"--set key must look like section.key (sections: {', '.join(_SECTION_TYPES)}), got {key!r}")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return path, value


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    for text in overrides:
        path, value = parse_override(text)
        if len(path) == 1:
            data[path[0]] = value
            continue
        section, key = path
        if section not in _SECTION_TYPES:
            raise _unknown_key("", section, list(_SECTION_TYPES))
        if key not in get_type_hints(_SECTION_TYPES[section]):
            raise _unknown_key(f"{section}.", key, list(get_type_hints(_SECTION_TYPES[section])))
        data.setdefault(section, {})[key] = value
    return data


def presets_dir() -> Path:
    """The repository's `runs/` folder (presets), next to the package."""
    return Path(__file__).resolve().parent.parent / "runs"


def list_presets() -> dict[str, str]:
    """Preset name → its one-line description."""
    out = {}
    for path in sorted(presets_dir().glob("*.toml")):
        with path.open("rb") as f:
            out[path.stem] = tomllib.load(f).get("description", "")
    return out


def load(preset_or_file: str = "default", overrides: list[str] = ()) -> Config:
    """Load a preset by name (from `runs/`) or a TOML file by path, then apply `--set` overrides."""
    path = Path(preset_or_file)
    if not (path.suffix == ".toml" and path.exists()):
        path = presets_dir() / f"{preset_or_file}.toml"
        if not path.exists():
            known = list(list_presets())
            close = difflib.get_close_matches(preset_or_file, known, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ConfigError(f"unknown preset or file '{preset_or_file}'.{hint} "
                              f"Presets: {', '.join(known)} (see `nht presets`), or pass a path to a .toml file.")
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path} is not valid TOML: {e}") from None
    data.setdefault("name", path.stem)
    return from_dict(apply_overrides(data, list(overrides)))


# ----------------------------------------------------------------------------- validation

def is_prime(n: int) -> bool:
    return n >= 2 and all(n % d for d in range(2, int(n ** 0.5) + 1))


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def validate(config: Config) -> None:
    """Raise ConfigError naming the first problem and how to fix it."""
    g, t, task, m, a = config.grid, config.train, config.task, config.model, config.analysis
    for name in ("weight_decay", "learning_rate", "init_scale", "train_fraction", "rho"):
        for v in getattr(g, name):
            _check(not math.isnan(v) and not math.isinf(v), f"grid.{name} contains {v}: every value must be a finite number")
    _check(all(v >= 0 for v in g.weight_decay), f"grid.weight_decay must be ≥ 0 (got {list(g.weight_decay)}); use 0 for no weight decay")
    _check(all(v > 0 for v in g.learning_rate), f"grid.learning_rate must be > 0 (got {list(g.learning_rate)})")
    _check(all(v > 0 for v in g.init_scale), f"grid.init_scale must be > 0 (got {list(g.init_scale)})")
    _check(all(0 < v < 1 for v in g.train_fraction),
           f"grid.train_fraction must lie strictly between 0 and 1 (got {list(g.train_fraction)})")
    _check(all(0 <= v <= 1 for v in g.rho),
           f"grid.rho (border correlation) must lie in [0, 1], got {list(g.rho)}; e.g. grid.rho=[0.5, 0.9, 1.0]")
    _check(all(0 <= s < 2**31 for s in g.seed), f"grid.seed values must be integers in [0, 2^31), got {list(g.seed)}")
    _check(len(set(g.seed)) == len(g.seed), f"grid.seed has repeated values {list(g.seed)}")
    _check(t.steps > 0 and t.log_every > 0, "train.steps and train.log_every must be positive")
    _check(t.steps % t.log_every == 0, f"train.steps ({t.steps}) must be a multiple of train.log_every ({t.log_every})")
    _check(t.batch_size >= 0, f"train.batch_size must be ≥ 0 (0 = full batch), got {t.batch_size}")
    _check(t.runs_per_batch >= 1, f"train.runs_per_batch must be ≥ 1, got {t.runs_per_batch}")
    _check(t.chunk_logs >= 1, f"train.chunk_logs must be ≥ 1, got {t.chunk_logs}")
    _check(t.noise_batch_size >= 0 and t.noise_samples >= 1,
           f"train.noise_batch_size must be ≥ 0 and train.noise_samples ≥ 1, got {t.noise_batch_size}, {t.noise_samples}")
    _check(t.eval_batch_size >= 1, f"train.eval_batch_size must be ≥ 1, got {t.eval_batch_size}")
    if task.name == "images":
        validate_images(config)
    else:
        _check(m.name in ("mlp", "transformer"),
               f"model.name = '{m.name}' is an image model; token tasks use 'mlp' or 'transformer' "
               f"(or set task.name = 'images')")
        _check(len(g.rho) == 1, f"grid.rho varies ({list(g.rho)}) but task '{task.name}' has no spurious border; "
                                f"leave grid.rho at one value for token tasks")
        _check(config.analysis.transition_metric in TOKEN_METRICS,
               f"analysis.transition_metric = '{config.analysis.transition_metric}' is not recorded for token tasks; "
               f"choose one of {sorted(TOKEN_METRICS)}")
    if task.name == "modular":
        _check(task.p >= 2, f"task.p must be ≥ 2, got {task.p}")
        _check(task.op != "/" or is_prime(task.p),
               f"task.op = '/' needs a prime modulus so every b ≠ 0 is invertible; task.p = {task.p} is not prime "
               f"(try 97 or 113)")
    elif task.name == "sparse_parity":
        _check(1 <= task.parity_k <= task.parity_n, f"task.parity_k must be in [1, parity_n], got k={task.parity_k}, n={task.parity_n}")
        _check(task.parity_samples >= 4, f"task.parity_samples must be ≥ 4, got {task.parity_samples}")
    _check(all(h > 0 for h in m.hidden), f"model.hidden widths must be positive, got {list(m.hidden)}")
    _check(m.name != "mlp" or m.embedding != "onehot" or len(m.hidden) >= 1,
           "model.embedding = 'onehot' needs at least one hidden width (model.hidden = [128])")
    _check(m.name != "transformer" or m.d_model % m.n_heads == 0,
           f"model.d_model ({m.d_model}) must be divisible by model.n_heads ({m.n_heads})")
    for name in ("fit_threshold", "transition_threshold", "norm_decay_fraction"):
        v = getattr(a, name)
        _check(0 < v <= 1, f"analysis.{name} must lie in (0, 1], got {v}")
    o = config.optim
    _check(0 <= o.b1 < 1 and 0 <= o.b2 < 1 and 0 <= o.momentum < 1, "optim.b1, optim.b2 and optim.momentum must lie in [0, 1)")


TOKEN_METRICS = frozenset({"test_acc", "train_acc", "test_loss", "train_loss", "logit_scale"})
GROUP_DATASETS = frozenset({"celeba", "waterbirds"})


def image_metrics(task: TaskConfig) -> frozenset:
    """Scalar metrics recorded by image tasks that can serve as analysis.transition_metric."""
    names = {"test_acc", "train_acc", "test_loss", "train_loss", "clean_acc", "coloured_acc", "logit_scale"}
    if task.border_width > 0:
        names |= {"shortcut_reliance", "conflicting_acc", "conflicting_reliance"}
    if task.dataset in GROUP_DATASETS:
        names |= {"worst_group_acc", "avg_acc", "weighted_avg_acc"}
    return frozenset(names)


def validate_images(config: Config) -> None:
    """Checks of an image task (task.name = "images") that need no data on disk."""
    task, m, t, a = config.task, config.model, config.train, config.analysis
    size = image_size(task)
    _check(m.name in ("simple_cnn", "resnet18"),
           f"model.name = '{m.name}' cannot read images; use 'simple_cnn' or 'resnet18'")
    _check(size >= 8, f"task.image_size must be ≥ 8 (0 = the dataset default), got {task.image_size}")
    if task.dataset == "digits":
        _check(size >= 16 and size % 8 == 0,
               f"digits images are 8·scale + 8 pixels wide (16, 24, 32, …); task.image_size = {size} is not")
    _check(m.name != "simple_cnn" or size % 8 == 0,
           f"simple_cnn pools three times by 2, so the image side must be a multiple of 8; got {size} "
           f"(set task.image_size)")
    _check(task.border_width >= 0, f"task.border_width must be ≥ 0 (0 = no painted border), got {task.border_width}")
    _check(2 * task.border_width < size,
           f"task.border_width = {task.border_width} covers at least half of the {size}×{size} image; "
           f"use a width below {size / 2:g} (e.g. 2)")
    _check(task.eval_train_size >= 0 and task.eval_test_size >= 0,
           f"task.eval_train_size and task.eval_test_size must be ≥ 0 (0 = all), got "
           f"{task.eval_train_size}, {task.eval_test_size}")
    _check(task.border_width > 0 or len(config.grid.rho) == 1,
           f"grid.rho varies ({list(config.grid.rho)}) but task.border_width = 0 paints no border; "
           f"set task.border_width ≥ 1 or give one rho")
    _check(m.resnet_width >= 1 and len(m.resnet_stages) >= 1 and all(b >= 1 for b in m.resnet_stages),
           f"model.resnet_width must be ≥ 1 and model.resnet_stages a non-empty list of positive block counts, "
           f"got {m.resnet_width}, {list(m.resnet_stages)}")
    _check(not t.record_grad_noise, "train.record_grad_noise is available for token tasks only; set it to false")
    known = image_metrics(task)
    _check(a.transition_metric in known,
           f"analysis.transition_metric = '{a.transition_metric}' is not recorded for this image task "
           f"(dataset {task.dataset}, border_width {task.border_width}); choose one of {sorted(known)}")
