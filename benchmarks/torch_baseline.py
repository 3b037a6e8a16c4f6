"""A plain PyTorch loop for the benchmark's three models: the comparison `nht tool bench` times beside the grid.

Each run is written the way a PyTorch user writes it: one run at a time, an `nn.Module`, `torch.optim.AdamW`,
a Python loop over steps with `loss.backward()` and `optimizer.step()`, eager mode, and an evaluation every
`train.log_every` steps. What it shares with the JAX run of the same configuration:

    model       the same network and parameter count (the embedding-sum MLP; the one-layer transformer as
                `nn.TransformerEncoderLayer`, the companion's module, for post- and pre-norm; SimpleCNN in NCHW
                with `nn.Conv2d` / `nn.MaxPool2d`), initialised from the same distributions (`init_like_ours`)
    optimiser   AdamW with the same decoupled convention θ ← θ(1 − ηλ) − η·m̂/(√v̂ + ε) (PyTorch's AdamW is
                that update), the same β1, β2, ε, and decay on the same parameters (`decayed`: ndim ≥ 2 in the
                JAX layout, or all; the attention's stacked q/k/v bias is 2-D there, so it is decayed too)
    data        the same examples (every pair of the modular task, 50 % split drawn by torch; the digits images
                with the border painted at the run's ρ each step), the same batch size and sampling rule
    evaluation  the same metrics at the same steps: token tasks one forward and backward pass over every
                example (losses, accuracies, ‖∇L‖ of the full training loss, ‖θ‖², RMS logit), images the
                forward passes over the same evaluation sets (train, clean, coloured, aligned, conflicting, gray) in
                chunks of `train.eval_batch_size`

Random streams are PyTorch's own (`torch.manual_seed(seed)`): the runs are statistically, not bitwise, those of
the grid, so the benchmark compares loss sizes, not values. With the JAX parameters copied in (`load_jax_params`,
`torch_state`: the layouts' correspondence) each torch model is the JAX model's function: the same logits, loss,
gradients and AdamW step to float rounding (tests/training/test_torch_baseline.py). torch is imported lazily: without
the `bench` extra this module imports, `available()` is False and `MISSING` says how to get it.
"""

from __future__ import annotations

import importlib.util
import math
import time
from typing import Any, Callable, NamedTuple

import numpy as np

from nht_jax.base.errors import ConfigError

MISSING = "PyTorch rows: torch is not installed; `pip install 'nht_jax[bench]'` (CPU torch) adds them to the table."
"""The line the benchmark prints in place of the PyTorch rows when torch is absent."""

MODELS = ("mlp", "transformer", "simple_cnn")


def available() -> bool:
    """Whether torch can be imported (the `bench` extra)."""
    return importlib.util.find_spec("torch") is not None


def unsupported(config) -> str | None:
    """Why this configuration has no PyTorch baseline (None when it has one)."""
    model, optim, train = config.model.name, config.optim, config.train
    if model not in MODELS:
        return f"model {model!r} (the baseline covers {', '.join(MODELS)})"
    if model == "mlp" and config.model.embedding != "onehot":
        return "model.embedding = 'learned' (the baseline covers the one-hot embedding MLP)"
    if optim.name != "adamw":
        return f"optimiser {optim.name!r} (the baseline covers adamw)"
    if optim.before or optim.after:
        return "optim.before / optim.after slot entries"
    if train.loss != "default" or train.record_grad_noise:
        return "a non-default train.loss or train.record_grad_noise"
    if any(len(config.grid.get(axis, ())) for axis in ("temperature",)):
        return "the temperature axis"
    if getattr(config.task, "fourier_metrics", False) or getattr(config.task, "augment", False):
        return "task.fourier_metrics or task.augment"
    if config.task.name == "images" and config.task.dataset in ("celeba", "waterbirds"):
        return "datasets with groups"
    return None


# ----------------------------------------------------------------------------- models


def activation(name: str) -> Callable:
    """Our activation names in torch (`gelu` is JAX's tanh approximation, `gelu_exact` the erf form)."""
    import torch
    import torch.nn.functional as F

    return {
        "quadratic": torch.square,
        "relu": F.relu,
        "tanh": torch.tanh,
        "silu": F.silu,
        "gelu": lambda x: F.gelu(x, approximate="tanh"),
        "gelu_exact": F.gelu,
    }[name]


def lecun_normal_(tensor, fan_in: int):
    """Flax's default kernel initialiser in place: truncated normal (±2σ) of variance 1 / fan_in."""
    import torch

    # the standard deviation of a unit normal truncated to ±2 is 0.87962566; flax divides it out
    std = fan_in**-0.5 / 0.87962566103423978
    with torch.no_grad():
        return torch.nn.init.trunc_normal_(tensor, std=std, a=-2 * std, b=2 * std)


def init_like_ours(module) -> None:
    """Flax's defaults on every `nn.Linear` / `nn.Conv2d`: LeCun-normal weights, zero biases (SimpleCNN, MLP)."""
    import torch

    for sub in module.modules():
        if isinstance(sub, (torch.nn.Linear, torch.nn.Conv2d)):
            lecun_normal_(sub.weight, sub.weight[0].numel())
            torch.nn.init.zeros_(sub.bias)


def make_mlp(settings, vocab_size: int, num_classes: int, n_ctx: int):
    """h = act(Σ_i E_i[x_i] + b) (per-position tables N(0, 1/(n_ctx·vocab))), further hidden layers, head."""
    import torch
    from torch import nn

    act = activation(settings.activation)

    class EmbedMLP(nn.Module):
        def __init__(self):
            super().__init__()
            width = settings.hidden[0]
            self.tables = nn.Parameter(torch.randn(n_ctx, vocab_size, width) * (n_ctx * vocab_size) ** -0.5)
            self.bias = nn.Parameter(torch.zeros(width))
            widths = list(settings.hidden)
            self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
            self.head = nn.Linear(widths[-1], num_classes)
            self.positions = torch.arange(n_ctx)

        def forward(self, tokens):
            x = act(self.tables[self.positions, tokens].sum(dim=-2) + self.bias)
            for layer in self.hidden:
                x = act(layer(x))
            return self.head(x)

    model = EmbedMLP()
    init_like_ours(model)
    return model


def make_transformer(settings, vocab_size: int, num_classes: int, n_ctx: int):
    """Token + position embeddings, one encoder block, [final LayerNorm], head on the last position.

    Post- and pre-norm use `nn.TransformerEncoderLayer` (norm_first False / True; unmasked attention gives the
    same last-position logits as our causal one); "final" and "none" a residual block of `nn.MultiheadAttention`
    and two `nn.Linear`. Initialisation: PyTorch's module defaults with embeddings N(0, 1) under init = "pytorch"
    (the companion's); under init = "flax", embeddings N(0, 1/d_model) and LeCun-normal kernels with zero biases.
    """
    import torch
    from torch import nn

    d, act = settings.d_model, activation(settings.activation)
    norm = settings.layer_norm

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(d, settings.n_heads, dropout=0.0, batch_first=True)
            self.mlp_in, self.mlp_out = nn.Linear(d, settings.d_mlp), nn.Linear(settings.d_mlp, d)

        def forward(self, x):
            x = x + self.attn(x, x, x, need_weights=False)[0]
            return x + self.mlp_out(act(self.mlp_in(x)))

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            std = 1.0 if settings.init == "pytorch" else d**-0.5
            self.tok_embed = nn.Embedding(vocab_size, d)
            self.pos_embed = nn.Parameter(torch.randn(n_ctx, d) * std)
            nn.init.normal_(self.tok_embed.weight, std=std)
            if norm in ("post", "pre"):
                self.block = nn.TransformerEncoderLayer(
                    d,
                    settings.n_heads,
                    settings.d_mlp,
                    dropout=0.0,
                    activation=act,
                    layer_norm_eps=settings.layer_norm_eps,
                    batch_first=True,
                    norm_first=norm == "pre",
                )
            else:
                self.block = Block()
            self.ln_final = nn.LayerNorm(d, eps=settings.layer_norm_eps) if norm != "none" else nn.Identity()
            self.head = nn.Linear(d, num_classes)

        def forward(self, tokens):
            x = self.block(self.tok_embed(tokens) + self.pos_embed)
            return self.head(self.ln_final(x[:, -1]))

    model = Transformer()
    if settings.init == "flax":
        init_like_ours(model)
        for sub in model.modules():
            if isinstance(sub, nn.MultiheadAttention):
                lecun_normal_(sub.in_proj_weight, d)
                nn.init.zeros_(sub.in_proj_bias)
    return model


def make_simple_cnn(num_classes: int, side: int, channels: int = 3):
    """SimpleCNN (`nht_jax.vision.cnn`) in NCHW: four 3×3 SAME convolutions (32, 48, 96, 96), 2×2 max-pooling
    after the first three, ReLU, dense 96, head; Flax's initialisation."""
    from torch import nn
    from nht_jax.vision.cnn import CONV_WIDTHS, DENSE_WIDTH

    layers, c_in = [], channels
    for i, width in enumerate(CONV_WIDTHS):
        layers += [nn.Conv2d(c_in, width, 3, padding=1), nn.ReLU()]
        if i < len(CONV_WIDTHS) - 1:
            layers.append(nn.MaxPool2d(2))
        c_in = width
    pools = 2 ** (len(CONV_WIDTHS) - 1)
    flat = (side // pools) ** 2 * c_in
    model = nn.Sequential(
        *layers, nn.Flatten(), nn.Linear(flat, DENSE_WIDTH), nn.ReLU(), nn.Linear(DENSE_WIDTH, num_classes)
    )
    init_like_ours(model)
    return model


def decayed(name: str, param, decay_on: str) -> bool:
    """Whether weight decay acts on the torch parameter `name` as it acts on its JAX counterpart
    (`nht_jax.engine.optim.decay_mask`: every parameter under "all", else ndim ≥ 2). The JAX ndim is torch's except
    for the attention's input-projection bias: Flax keeps the query, key and value biases as (heads, head_dim), 2-D
    and so decayed; torch stacks them into the 1-D `in_proj_bias`, decayed here too."""
    return decay_on == "all" or param.ndim >= 2 or name.endswith("in_proj_bias")


def make_optimizer(model, config, hp: dict):
    """torch.optim.AdamW over two groups: decayed as the JAX run decays (`decayed`) and not."""
    import torch

    optim = config.optim
    named = list(model.named_parameters())
    decayed_ = [p for name, p in named if decayed(name, p, optim.decay_on)]
    kept = [p for name, p in named if not decayed(name, p, optim.decay_on)]
    groups = [{"params": decayed_, "weight_decay": float(hp["weight_decay"])}, {"params": kept, "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(
        [g for g in groups if g["params"]], lr=float(hp["learning_rate"]), betas=(optim.b1, optim.b2), eps=optim.eps
    )
    schedule = (
        torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=config.train.steps)
        if config.train.lr_schedule == "cosine"
        else None
    )
    return optimizer, schedule


# ----------------------------------------------------------------------------- the JAX parameters in torch


def torch_state(kind: str, params) -> dict[str, np.ndarray]:
    """The torch state dict of the baseline's `kind` model ("mlp", "transformer", "simple_cnn") holding the JAX
    model's `params` (Flax's tree): the correspondence that makes the two the same function. Dense kernels
    (in, out) are torch weights (out, in); attention's query/key/value kernels (d, heads, head_dim) stack into
    in_proj_weight (3d, d) and its output kernel (heads, head_dim, d) is out_proj.weight (d, d); convolution
    kernels HWIO are OIHW; the CNN's first dense layer reads the NHWC flattening in JAX and the NCHW one in torch,
    so its input rows are permuted. Also maps gradients, which have the parameters' layout."""
    p = {k: np.asarray(v) for k, v in flat_tree(params).items()}

    def dense(prefix: str, name: str) -> dict:
        return {f"{prefix}.weight": p[f"{name}/kernel"].T, f"{prefix}.bias": p[f"{name}/bias"]}

    def norm(prefix: str, name: str) -> dict:
        return {f"{prefix}.weight": p[f"{name}/scale"], f"{prefix}.bias": p[f"{name}/bias"]}

    if kind == "mlp":
        out = {"tables": p["embed/tables"], "bias": p["embed/bias"], **dense("head", "head")}
        hidden = sorted(k.split("/")[0] for k in p if k.startswith("hidden_") and k.endswith("/kernel"))
        for i, name in enumerate(hidden):
            out.update(dense(f"hidden.{i}", name))
        return out
    if kind == "transformer":
        d = p["tok_embed/embedding"].shape[1]
        library = "ln_attn/scale" in p  # post- and pre-norm: torch's nn.TransformerEncoderLayer
        block = "block.self_attn" if library else "block.attn"
        out = {
            "tok_embed.weight": p["tok_embed/embedding"],
            "pos_embed": p["pos_embed"],
            f"{block}.in_proj_weight": np.concatenate(
                [p[f"attn/{n}/kernel"].reshape(d, d).T for n in ("query", "key", "value")]
            ),
            f"{block}.in_proj_bias": np.concatenate(
                [p[f"attn/{n}/bias"].reshape(d) for n in ("query", "key", "value")]
            ),
            f"{block}.out_proj.weight": p["attn/out/kernel"].reshape(d, d).T,
            f"{block}.out_proj.bias": p["attn/out/bias"],
            **dense("head", "head"),
        }
        if library:
            out.update(
                {
                    **dense("block.linear1", "mlp_in"),
                    **dense("block.linear2", "mlp_out"),
                    **norm("block.norm1", "ln_attn"),
                    **norm("block.norm2", "ln_mlp"),
                }
            )
        else:
            out.update({**dense("block.mlp_in", "mlp_in"), **dense("block.mlp_out", "mlp_out")})
        if "ln_final/scale" in p:
            out.update(norm("ln_final", "ln_final"))
        return out
    if kind == "simple_cnn":
        convs = sorted(
            (k.split("/")[0] for k in p if k.startswith("conv") and k.endswith("/kernel")),
            key=lambda name: int(name[4:]),
        )
        out, index = {}, 0
        for i, name in enumerate(convs):
            out.update(
                {f"{index}.weight": p[f"{name}/kernel"].transpose(3, 2, 0, 1), f"{index}.bias": p[f"{name}/bias"]}
            )
            index += 3 if i < len(convs) - 1 else 2  # conv, ReLU, pool (the last conv: conv, ReLU), then Flatten
        channels = p[f"{convs[-1]}/kernel"].shape[-1]
        kernel = p["dense/kernel"]  # rows in (h, w, c) order
        side = int(round((kernel.shape[0] // channels) ** 0.5))
        rows = kernel.reshape(side, side, channels, -1).transpose(2, 0, 1, 3).reshape(kernel.shape[0], -1)
        out.update(
            {
                f"{index + 1}.weight": rows.T,
                f"{index + 1}.bias": p["dense/bias"],
                f"{index + 3}.weight": p["head/kernel"].T,
                f"{index + 3}.bias": p["head/bias"],
            }
        )
        return out
    raise ConfigError(f"no torch counterpart of model {kind!r} (the baseline covers {', '.join(MODELS)})")


def flat_tree(tree, prefix: str = "") -> dict:
    """A nested dict of arrays as {"outer/inner": array}."""
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict) or hasattr(value, "items"):
            out.update(flat_tree(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = value
    return out


def load_jax_params(model, kind: str, params) -> None:
    """Copy the JAX model's parameters into the baseline's torch `model` (`torch_state`), every one of them."""
    import torch

    state = {name: torch.from_numpy(np.ascontiguousarray(value)) for name, value in torch_state(kind, params).items()}
    model.load_state_dict(state, strict=True)


def scale_init(model, init_scale: float) -> None:
    """The grid's init_scale: every initial parameter multiplied by it."""
    import torch

    if init_scale != 1.0:
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(init_scale)


def sq_norm(model) -> float:
    return float(sum(p.detach().square().sum() for p in model.parameters()))


# ----------------------------------------------------------------------------- one run per domain


class Baseline(NamedTuple):
    """One configuration's PyTorch runs: `model(hp)` a fresh module, `run(hp)` one timed run → RunResult,
    `step(model, optimizer, hp)` / `evaluate(model, hp)` one step / one evaluation (for the FLOP count)."""

    model: Callable[[dict], Any]
    run: Callable[[dict], "RunResult"]
    step: Callable[[Any, Any, dict, int], Any]
    evaluate: Callable[[Any, dict], dict]
    optimizer: Callable[[Any, dict], Any]


class RunResult(NamedTuple):
    """wall_s: the run's seconds (model, optimiser, steps and evaluations); first / last: its metrics at step 0
    (untimed) and at the last evaluation."""

    wall_s: float
    first: dict
    last: dict


def timed_run(make_model, make_opt, step, evaluate, config, hp: dict) -> RunResult:
    """A run: seed, model, optimiser, `steps` steps with an evaluation every `log_every` (step 0 untimed)."""
    import torch

    steps, log_every = config.train.steps, config.train.log_every
    torch.manual_seed(int(hp["seed"]))
    model = make_model(hp)
    first = evaluate(model, hp)
    start = time.perf_counter()
    optimizer, schedule = make_opt(model, hp)
    last = first
    for t in range(steps):
        step(model, optimizer, hp, t)
        if schedule is not None:
            schedule.step()
        if (t + 1) % log_every == 0:
            last = evaluate(model, hp)
    return RunResult(time.perf_counter() - start, first, last)


def token_baseline(config) -> Baseline:
    """The token tasks (modular arithmetic): full batch or minibatches of the run's own train rows."""
    import torch
    import torch.nn.functional as F

    dataset = config.domain.load_data(config)
    inputs, labels = (
        torch.from_numpy(dataset.inputs.astype(np.int64)),
        torch.from_numpy(dataset.labels.astype(np.int64)),
    )
    n_total, n_ctx = inputs.shape
    split_cache: dict = {}

    def build():
        make = make_mlp if config.model.name == "mlp" else make_transformer
        return make(config.model, dataset.vocab_size, dataset.num_classes, n_ctx)

    def split(hp: dict):
        """The run's train / test rows: a torch permutation, the first round(f·N) for training."""
        key = (int(hp["seed"]), float(hp["train_fraction"]))
        if key not in split_cache:
            order = torch.randperm(n_total, generator=torch.Generator().manual_seed(key[0]))
            n_train = min(max(int(np.round(key[1] * n_total)), 1), n_total - 1)
            test = torch.ones(n_total, dtype=torch.bool)
            test[order[:n_train]] = False
            split_cache[key] = (order[:n_train], test)
        return split_cache[key]

    def make_model(hp: dict):
        model = build()
        scale_init(model, float(hp["init_scale"]))
        return model

    batch_size, with_replacement = config.train.batch_size, config.train.batch_sampling == "with_replacement"

    def step(model, optimizer, hp: dict, t: int):
        train_rows, _ = split(hp)
        n_train = len(train_rows)
        if batch_size == 0 or (batch_size >= n_train and not with_replacement):
            rows = train_rows
        elif with_replacement:
            rows = train_rows[torch.randint(n_train, (batch_size,))]
        else:
            rows = train_rows[torch.randperm(n_train)[:batch_size]]
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(inputs[rows]), labels[rows])
        loss.backward()
        optimizer.step()

    def evaluate(model, hp: dict) -> dict:
        """Every example in one forward; the backward of the training loss gives ‖∇L‖ (as our evaluation)."""
        _, test = split(hp)
        logits = model(inputs)
        losses = F.cross_entropy(logits, labels, reduction="none")
        train_loss = losses[~test].mean()
        grads = torch.autograd.grad(train_loss, list(model.parameters()))
        with torch.no_grad():
            correct = (logits.argmax(-1) == labels).float()
            return {
                "train_loss": float(train_loss),
                "train_acc": float(correct[~test].mean()),
                "test_loss": float(losses[test].mean()),
                "test_acc": float(correct[test].mean()),
                "grad_norm": math.sqrt(float(sum(g.square().sum() for g in grads))),
                "logit_scale": float(logits.square().mean().sqrt()),
                "norm_sq": sq_norm(model),
            }

    def make_opt(model, hp):
        return make_optimizer(model, config, hp)

    return Baseline(
        make_model,
        lambda hp: timed_run(make_model, make_opt, step, evaluate, config, hp),
        step,
        evaluate,
        lambda model, hp: make_opt(model, hp)[0],
    )


def image_baseline(config) -> Baseline:
    """The image task (digits with a spurious border): minibatches by a per-epoch permutation, the border painted
    at the run's ρ each step (PyTorch's random numbers), evaluation sets as ours (the same fixed borders)."""
    import torch
    import torch.nn.functional as F
    import jax
    from nht_jax.domains.images import EVAL_KEY
    from nht_jax.vision.border import border_mask, sample_border_classes
    from nht_jax.vision.eval_sets import shortcut_eval
    from nht_jax.vision.palette import class_palette

    task, train_cfg = config.task, config.train
    data = config.domain.load_data(config)
    num_classes, side, width = data.num_classes, task.side, task.border_width
    train_images = torch.from_numpy(np.ascontiguousarray(data.train.images.transpose(0, 3, 1, 2)))  # uint8 NCHW
    test_images = torch.from_numpy(np.ascontiguousarray(data.test.images.transpose(0, 3, 1, 2)))
    train_labels = torch.from_numpy(data.train.labels.astype(np.int64))
    test_labels = torch.from_numpy(data.test.labels.astype(np.int64))
    n_train = len(train_labels)
    batch = n_train if train_cfg.batch_size == 0 else min(train_cfg.batch_size, n_train)
    steps_per_epoch = n_train // batch
    n_eval_train = min(task.eval_train_size or n_train, n_train)
    n_eval_test = min(task.eval_test_size or len(test_labels), len(test_labels))
    colours = torch.from_numpy(np.round(255.0 * class_palette(num_classes)).astype(np.uint8))  # (K, 3)
    frame = torch.from_numpy(border_mask(side, side, width)) if width else None

    def paint(images, borders):
        """uint8 NCHW images with the frame in each border class's colour (−1: none), as float in [0, 1]."""
        if width:
            fill = colours[borders.clamp(0, num_classes - 1)][:, :, None, None]  # (N, 3, 1, 1)
            where = frame[None, None] & (borders >= 0)[:, None, None, None]
            images = torch.where(where, fill, images)
        return images.float() / 255.0

    def fixed_borders(labels, rho, fold: int):
        """An evaluation set's borders: our own draw with EVAL_KEY (identical sets in both frameworks)."""
        return torch.from_numpy(
            np.asarray(
                sample_border_classes(
                    labels.numpy(),
                    rho,
                    jax.random.fold_in(EVAL_KEY, fold),
                    num_classes=num_classes,
                    otherwise=task.border_otherwise,
                )
            ).astype(np.int64)
        )

    conflicting = fixed_borders(test_labels[:n_eval_test], 0.0, 2) if width else None
    gray = None
    if width:
        shortcut = shortcut_eval((side, side, 3), width=width, num_classes=num_classes, dtype=np.uint8)
        gray = (
            torch.from_numpy(np.asarray(shortcut.images).transpose(0, 3, 1, 2)).float() / 255.0,
            torch.from_numpy(np.asarray(shortcut.border_classes).astype(np.int64)),
        )
    sets_cache: dict = {}
    epoch = {"order": None}  # this epoch's permutation of the training images (one run at a time)

    def eval_sets(rho: float) -> dict:
        """{name: (float images, labels, borders)} of the evaluation at this ρ, built once per ρ."""
        if rho not in sets_cache:
            lt, lc = train_labels[:n_eval_train], test_labels[:n_eval_test]
            no = torch.full((n_eval_test,), -1)
            sets = {
                "train": (
                    paint(
                        train_images[:n_eval_train],
                        fixed_borders(lt, rho, 0) if width else torch.full((n_eval_train,), -1),
                    ),
                    lt,
                    None,
                ),
                "clean": (paint(test_images[:n_eval_test], no), lc, None),
            }
            if width:
                sets["coloured"] = (paint(test_images[:n_eval_test], fixed_borders(lc, rho, 1)), lc, None)
                sets["aligned"] = (paint(test_images[:n_eval_test], lc), lc, None)
                sets["conflicting"] = (paint(test_images[:n_eval_test], conflicting), lc, conflicting)
            sets_cache[rho] = sets
        return sets_cache[rho]

    def make_model(hp: dict):
        model = make_simple_cnn(num_classes, side)
        scale_init(model, float(hp["init_scale"]))
        return model

    def step(model, optimizer, hp: dict, t: int):
        if t % steps_per_epoch == 0 or epoch["order"] is None:
            epoch["order"] = torch.randperm(n_train)
        index = epoch["order"][(t % steps_per_epoch) * batch : (t % steps_per_epoch + 1) * batch]
        labels = train_labels[index]
        borders = None
        if width:
            agree = torch.rand(batch) < float(hp["rho"])
            other = (labels + torch.randint(1, num_classes, (batch,))) % num_classes
            if task.border_otherwise == "none":
                other = torch.full_like(labels, -1)
            borders = torch.where(agree, labels, other)
        x = paint(train_images[index], borders if width else torch.full((batch,), -1))
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), labels).backward()
        optimizer.step()

    def logits_of(model, images):
        chunk = train_cfg.eval_batch_size
        return torch.cat([model(images[i : i + chunk]) for i in range(0, len(images), chunk)])

    @torch.no_grad()
    def evaluate(model, hp: dict) -> dict:
        metrics = {}
        for name, (images, labels, borders) in eval_sets(float(hp["rho"])).items():
            logits = logits_of(model, images)
            metrics[f"{name}_loss"] = float(F.cross_entropy(logits, labels))
            metrics[f"{name}_acc"] = float((logits.argmax(-1) == labels).float().mean())
            if borders is not None:
                metrics[f"{name}_reliance"] = float((logits.argmax(-1) == borders).float().mean())
        if gray is not None:
            metrics["shortcut_reliance"] = float((model(gray[0]).argmax(-1) == gray[1]).float().mean())
        metrics["norm_sq"] = sq_norm(model)
        return metrics

    def make_opt(model, hp):
        return make_optimizer(model, config, hp)

    return Baseline(
        make_model,
        lambda hp: timed_run(make_model, make_opt, step, evaluate, config, hp),
        step,
        evaluate,
        lambda model, hp: make_opt(model, hp)[0],
    )


def baseline(config) -> Baseline:
    """The PyTorch baseline of a configuration (ConfigError when it has none: `unsupported`)."""
    reason = unsupported(config)
    if reason is not None:
        raise ConfigError(
            f"no PyTorch baseline for {reason}; `nht tool bench` has PyTorch rows for the presets default, "
            f"companion-exact-cpu and border-digits"
        )
    return image_baseline(config) if config.task.name == "images" else token_baseline(config)


# ----------------------------------------------------------------------------- what the benchmark reads


def param_count(model) -> int:
    return int(sum(p.numel() for p in model.parameters()))


def flops(base: Baseline, hp: dict) -> tuple[float, float]:
    """(FLOPs of one training step, of one evaluation), torch's own count (`torch.utils.flop_counter`: matrix
    products and convolutions, forward and backward; elementwise work and the optimiser are not counted)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = base.model(hp)
    optimizer = base.optimizer(model, hp)
    with FlopCounterMode(display=False) as counter:
        base.step(model, optimizer, hp, 0)
    step_flops = counter.get_total_flops()
    with FlopCounterMode(display=False) as counter:
        base.evaluate(model, hp)
    return float(step_flops), float(counter.get_total_flops())


def threads_for_jax() -> int:
    """The cores XLA:CPU's thread pool uses: the CPUs this process may run on."""
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def time_runs(config, runs: list[dict], threads: int | None = None) -> dict:
    """Every run in turn, timed: {wall_s, run_wall_s, first, last, params, step_flops, eval_flops, threads,
    default_threads, interop_threads, torch}. torch's intra-op threads are set to `threads` (default: the cores
    JAX uses) for the measurement and restored afterwards."""
    import torch

    default_threads = torch.get_num_threads()
    threads = threads or threads_for_jax()
    base = baseline(config)
    torch.set_num_threads(threads)
    try:
        step_flops, eval_flops = flops(base, runs[0])
        results = [base.run(hp) for hp in runs]
    finally:
        torch.set_num_threads(default_threads)
    return {
        "torch": torch.__version__,
        "threads": threads,
        "default_threads": default_threads,
        "interop_threads": torch.get_num_interop_threads(),
        "params": param_count(base.model(runs[0])),
        "step_flops": step_flops,
        "eval_flops": eval_flops,
        "wall_s": sum(r.wall_s for r in results),
        "run_wall_s": [r.wall_s for r in results],
        "first": [r.first for r in results],
        "last": [r.last for r in results],
    }


__all__ = [
    "MISSING",
    "MODELS",
    "Baseline",
    "RunResult",
    "available",
    "baseline",
    "decayed",
    "flops",
    "load_jax_params",
    "make_mlp",
    "make_optimizer",
    "make_simple_cnn",
    "make_transformer",
    "param_count",
    "threads_for_jax",
    "time_runs",
    "torch_state",
    "unsupported",
]
