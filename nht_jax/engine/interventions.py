"""The interventions of the follow-up papers as slot entries (`nht_jax.engine.slots`), each a strength on an
optional grid axis with an identity value (the value at which it changes nothing, bit for bit), so that several
interventions can share one zipped grid, one arm per strength, from one starting state.

Slot "after": `norm_clamp`, `row_clip`, `norm_injection`; slot "before": `grokfast`, `ortho_grad`. Every strength is
an option of the entry and, when [grid] lists its axis, a traced per-run value (`slot_entry.axis_option`), so one
compiled program trains every arm. Each entry declares its effect on the contraction of V = ‖θ‖²
(`nht_jax.engine.contraction`).

Formulas, options, axes and identities, and examples: docs/configuration/interventions.md."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
import optax

from nht_jax.base.errors import ConfigError, check
from nht_jax.engine.contraction import Contraction
from nht_jax.engine.grid import Axis, number_check
from nht_jax.engine.slot_entry import ConstraintEntry, GradientEntry, axis_option

EPS = 1e-30
"""ε of ⊥Grad's two denominators, as in the paper's code (‖θ‖² + ε and ‖ĝ‖ + ε)."""


def strength_axis(
    name: str,
    label: str,
    ok: Callable[[float], bool],
    rule: str,
    identity: float | None,
    meaning: str,
    log: bool = False,
) -> Axis:
    """An intervention's optional strength axis: no default column (present only when [grid] lists it)."""
    return Axis(
        name, (), label, log=log, check=number_check(name, ok, rule), meaning=meaning, optional=True, identity=identity
    )


def finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ----------------------------------------------------------------------------- pytree helpers


def l2_norm(tree) -> jnp.ndarray:
    """‖x‖ = sqrt(Σ over every leaf of Σ x²) (`optax.tree_utils.tree_norm`).

    Args:
        tree: a pytree of arrays.

    Returns:
        ‖x‖, a scalar.
    """
    return optax.tree_utils.tree_norm(tree)


def where_on(on, new, old):
    """`new` where `on` (a traced or Python bool), else `old`, leaf by leaf: off is `old` bit for bit."""
    return jax.tree.map(lambda n, o: jnp.where(on, n, o), new, old)


def rescale(tree, norm, mode: str):
    """The tree rescaled onto ‖x‖ = c ("pin": x·c/‖x‖) or onto ‖x‖ ≤ c ("ceiling": x·c/max(‖x‖, c)); c = 0 leaves
    it unchanged (as does a zero tree under the pin).

    Args:
        tree: a pytree of arrays.
        norm: c, the target norm (may be traced).
        mode: "pin" or "ceiling".

    Returns:
        The rescaled pytree.
    """
    current = l2_norm(tree)
    if mode == "pin":
        factor = jnp.where(current > 0, norm / jnp.where(current > 0, current, 1.0), 1.0)
    else:
        factor = norm / jnp.maximum(current, norm)
    return where_on(norm > 0, jax.tree.map(lambda x: x * factor, tree), tree)


def over_scope(params, scope: str, fn: Callable[[Any], Any]):
    """`fn` applied to θ's groups of `scope`: "all" (every parameter as one vector), "weights" (the parameters
    with ≥ 2 dimensions as one vector, the rest unchanged) or "per_layer" (each top-level layer of the params
    dict as its own vector)."""
    if scope == "all":
        return fn(params)
    if scope == "per_layer":
        return {name: fn(layer) for name, layer in params.items()}
    leaves, treedef = jax.tree.flatten(params)
    weights = [i for i, x in enumerate(leaves) if jnp.ndim(x) >= 2]
    changed = fn([leaves[i] for i in weights])
    for i, x in zip(weights, changed):
        leaves[i] = x
    return jax.tree.unflatten(treedef, leaves)


# ----------------------------------------------------------------------------- after: norm_clamp


@dataclass(frozen=True)
class NormClamp:
    """Options of `norm_clamp`. norm: c ≥ 0 (0 = off); mode: "pin" (‖θ‖ = c, the papers' protocol) or "ceiling"
    (‖θ‖ ≤ c); scope: "all", "weights" or "per_layer"; rho: ρ ≥ 0 of the pin at c = ρ·W_c (0 = off);
    critical_norm: W_c > 0 (0 = not used); critical_from: a results folder of free runs that `nht run` measures
    W_c from, into critical_norm, before training ("" = none)."""

    name: Literal["norm_clamp"] = "norm_clamp"
    norm: float = 0.0
    mode: Literal["pin", "ceiling"] = "pin"
    scope: Literal["all", "weights", "per_layer"] = "all"
    rho: float = 0.0
    critical_norm: float = 0.0
    critical_from: str = ""

    def __post_init__(self):
        for field in ("norm", "rho", "critical_norm"):
            value = getattr(self, field)
            check(
                finite(value) and value >= 0,
                f"optim.after norm_clamp: {field} must be a finite number ≥ 0 (0 = off), got {value!r}",
            )
        check(
            not (self.norm > 0 and self.rho > 0),
            f"optim.after norm_clamp: set either norm (c itself, here {self.norm:g}) or rho (c = ρ·W_c, here "
            f"ρ = {self.rho:g}), not both",
        )
        check(
            self.rho == 0 or self.critical_norm > 0 or self.critical_from,
            f"optim.after norm_clamp: rho = {self.rho:g} pins ‖θ‖ at ρ·W_c, but W_c is not given: set "
            f"critical_norm = W_c, or critical_from = a results folder of free runs (`nht run` measures W_c)",
        )


CLAMP_AXES = {
    "norm": strength_axis(
        "clamp_norm",
        "clamp norm c",
        lambda v: v >= 0,
        "must be ≥ 0 (0 = no clamp)",
        0.0,
        "c of optim.after norm_clamp: ‖θ‖ pinned at (or capped by) c after every step; 0 = off",
    ),
    "rho": strength_axis(
        "clamp_rho",
        "clamp ρ = c / W_c",
        lambda v: v >= 0,
        "must be ≥ 0 (0 = no clamp)",
        0.0,
        "ρ of optim.after norm_clamp: ‖θ‖ pinned at c = ρ·W_c (W_c = critical_norm); 0 = off",
    ),
}


def clamp_target(settings: NormClamp, hparams: Mapping):
    """c of one run: ρ·W_c when ρ·W_c > 0 (the pin at a multiple of the critical norm), else `norm`; each of ρ
    and c from its grid axis when the grid lists it. A grid listing clamp_rho needs W_c (a ConfigError)."""
    norm = axis_option(CLAMP_AXES, settings, hparams, "norm")
    if CLAMP_AXES["rho"].name in hparams and settings.critical_norm <= 0:
        raise ConfigError(
            "grid.clamp_rho gives c = ρ·W_c, but optim.after norm_clamp has no critical_norm W_c: "
            "set critical_norm = W_c, or critical_from = a results folder of free runs (`nht run` "
            "measures W_c from it)"
        )
    if settings.critical_norm <= 0:
        return norm
    pinned = axis_option(CLAMP_AXES, settings, hparams, "rho") * settings.critical_norm
    return jnp.where(pinned > 0, pinned, norm)


def norm_clamp(settings: NormClamp, params, hparams: Mapping, step=None):
    """Hold θ's norm after every step, on each group of the scope (`over_scope`):

        pin       θ ← θ · c/‖θ‖              (‖θ‖ = c after every update; the papers' protocol)
        ceiling   θ ← θ · c/max(‖θ‖, c)      (the projection onto ‖θ‖ ≤ c; untouched inside)

    "per_layer" holds each top-level layer at its own norm c (the same c for every layer). c = 0 changes
    nothing (bit for bit), so c = 0 is the identity of the axis clamp_norm. The initial θ is the domain's: the
    clamp acts from the first update on.

    Args:
      settings: the entry's options.
      params: θ after the update.
      hparams: the run's traced values (clamp_norm, clamp_rho when the grid lists them).
      step: updates taken (unused).

    Returns:
      θ clamped, the same pytree structure.
    """
    target = clamp_target(settings, hparams)
    return over_scope(params, settings.scope, lambda group: rescale(group, target, settings.mode))


def norm_clamp_contraction(settings: NormClamp, contraction: Contraction) -> Contraction:
    """Unknown: while c > 0 the clamp sets ‖θ‖ (pin) or caps it (ceiling) after every step, so V does not
    contract at the optimiser's rate. Runs of a grid at c = 0 (and ρ = 0), the identity, keep the optimiser's
    rate (`nht_jax.engine.slots.fold_contraction`)."""
    return contraction.unknown(
        f"optim.after norm_clamp (mode = {settings.mode}, scope = {settings.scope}) rescales θ after every step "
        f"while its norm c > 0 ({'holds ‖θ‖ = c' if settings.mode == 'pin' else 'caps ‖θ‖ at c'}), so V = ‖θ‖² "
        f"does not contract at the optimiser's rate"
    )


def norm_clamp_unresolved(settings: NormClamp) -> str | None:
    """A message while critical_from still has to be measured into critical_norm (by `nht run`), else None."""
    if settings.critical_from and settings.critical_norm <= 0:
        return (
            f"optim.after norm_clamp: critical_from = {settings.critical_from!r} is not resolved: `nht run` "
            f"measures W_c (the ‖θ‖ at which that folder's free runs transition) into critical_norm before "
            f"training. Train with `nht run`, or set critical_norm = W_c yourself"
        )
    return None


def critical_sources(after) -> tuple[str, ...]:
    """The results folders that configured norm clamps still need W_c from (critical_from, critical_norm 0)."""
    return tuple(dict.fromkeys(s.critical_from for s in after if isinstance(s, NormClamp) and norm_clamp_unresolved(s)))


def resolve_critical_norms(after, measure: Callable[[str], float]) -> tuple:
    """The `after` entries with every unresolved norm clamp's critical_norm set to measure(critical_from);
    critical_from is kept as the value's provenance.

    Args:
        after: the `optim.after` entries.
        measure: results folder → W_c of that folder (> 0).

    Returns:
        The entries, resolved.
    """
    out = []
    for s in after:
        if isinstance(s, NormClamp) and norm_clamp_unresolved(s):
            w_c = float(measure(s.critical_from))
            check(
                finite(w_c) and w_c > 0,
                f"optim.after norm_clamp: W_c measured from {s.critical_from!r} is "
                f"{w_c!r}; it must be a finite norm > 0",
            )
            s = dataclasses.replace(s, critical_norm=w_c)
        out.append(s)
    return tuple(out)


# ----------------------------------------------------------------------------- after: row_clip


@dataclass(frozen=True)
class RowClip:
    """Options of `row_clip`. max_norm: c ≥ 0, the largest ℓ2 norm of a row (0 = off)."""

    name: Literal["row_clip"] = "row_clip"
    max_norm: float = 0.0

    def __post_init__(self):
        check(
            finite(self.max_norm) and self.max_norm >= 0,
            f"optim.after row_clip: max_norm must be a finite number ≥ 0 (0 = off), got {self.max_norm!r}",
        )


ROW_CLIP_AXES = {
    "max_norm": strength_axis(
        "row_clip_norm",
        "row clip c",
        lambda v: v >= 0,
        "must be ≥ 0 (0 = no clipping)",
        0.0,
        "c of optim.after row_clip: every row of every weight clipped to ‖r‖ ≤ c; 0 = off",
    ),
}

ATTENTION_PROJECTIONS = ("query", "key", "value")
"""Flax attention modules whose kernel is (in, heads, head_dim): one row per (head, head_dim) output."""


def row_axes(path, x) -> tuple[int, ...]:
    """The axes one row's norm runs over, for a ≥ 2-D parameter at `path` (a flax params path):

        embedding tables (a leaf "embedding", nn.Embed, or "…_embed")  (vocab, d): one row per token, axis −1
        attention query/key/value kernels (in, heads, head_dim)          one row per output unit, axis 0
        every other kernel (in…, out), e.g. nn.Dense (in, out)           one row per output unit: all axes but −1

    A row is what PyTorch calls a row of the weight: `nn.Linear.weight` is (out, in), the transpose of the flax
    kernel, so its rows are the kernel's columns; `nn.Embedding.weight` is (vocab, d) in both."""
    names = [str(getattr(k, "key", getattr(k, "name", k))) for k in path]
    leaf = names[-1] if names else ""
    if leaf == "embedding" or leaf.endswith("_embed"):
        return (x.ndim - 1,)
    if leaf == "kernel" and len(names) >= 2 and names[-2] in ATTENTION_PROJECTIONS:
        return (0,)
    return tuple(range(x.ndim - 1))


def row_clip(settings: RowClip, params, hparams: Mapping, step=None):
    """Per-row ℓ2 clipping after every step: each row r of every parameter with ≥ 2 dimensions (`row_axes`)

        r ← r · c/max(‖r‖, c)

    so rows with ‖r‖ ≤ c are untouched (bit for bit) and longer ones land on ‖r‖ = c; biases and other 1-D
    parameters are left alone. c = 0 changes nothing (the identity of the axis row_clip_norm).

    Args:
      settings: the entry's options (c = max_norm, or the run's row_clip_norm).
      params: θ after the update.
      hparams: the run's traced values.
      step: updates taken (unused).

    Returns:
      θ clipped, the same pytree structure.
    """
    c = axis_option(ROW_CLIP_AXES, settings, hparams, "max_norm")

    def clip(path, x):
        if jnp.ndim(x) < 2:
            return x
        rows = jnp.sqrt(jnp.sum(jnp.square(x), axis=row_axes(path, x), keepdims=True))
        return jnp.where(c > 0, x * (c / jnp.maximum(rows, c)), x)

    return jax.tree_util.tree_map_with_path(clip, params)


def row_clip_contraction(settings: RowClip, contraction: Contraction) -> Contraction:
    """Unknown: every row longer than c is set to length c after each step, so V has no single rate."""
    return contraction.unknown(
        "optim.after row_clip rescales every row of every weight longer than its max_norm c to ‖r‖ = c after "
        "each step, so V = ‖θ‖² does not contract at the optimiser's rate"
    )


# ----------------------------------------------------------------------------- after: norm_injection


@dataclass(frozen=True)
class NormInjection:
    """Options of `norm_injection`. scale: s > 0 (1 = off); at_step: k ≥ 1, the update after which θ ← s·θ;
    scope: "all" or "weights" (≥ 2-D parameters only)."""

    name: Literal["norm_injection"] = "norm_injection"
    scale: float = 1.0
    at_step: int = 1
    scope: Literal["all", "weights"] = "all"

    def __post_init__(self):
        check(
            finite(self.scale) and self.scale > 0,
            f"optim.after norm_injection: scale must be a finite number > 0 (1 = off), got {self.scale!r}",
        )
        check(
            isinstance(self.at_step, int) and not isinstance(self.at_step, bool) and self.at_step >= 1,
            f"optim.after norm_injection: at_step must be an integer ≥ 1 (the update after which θ is "
            f"rescaled), got {self.at_step!r}",
        )


INJECTION_AXES = {
    "scale": strength_axis(
        "injection_scale",
        "injection scale s",
        lambda v: v > 0,
        "must be > 0 (1 = no change)",
        1.0,
        "s of optim.after norm_injection: θ ← s·θ once, after update at_step; 1 = off",
        log=True,
    ),
}


def norm_injection(settings: NormInjection, params, hparams: Mapping, step):
    """Rescale θ once, right after update k = at_step (`step` counts updates including this one):

        θ ← s·θ   if step = k,   else θ unchanged

    on every parameter ("all") or on the ≥ 2-D ones ("weights"). V jumps by s² at that step (on its scope);
    s = 1 changes nothing (the identity of the axis injection_scale).

    Args:
      settings: the entry's options.
      params: θ after the update.
      hparams: the run's traced values (injection_scale when the grid lists it).
      step: the number of updates taken, including this one (a traced int32).

    Returns:
      θ, rescaled at step k.
    """
    scale = axis_option(INJECTION_AXES, settings, hparams, "scale")
    now = step == settings.at_step
    return over_scope(
        params, settings.scope, lambda group: where_on(now, jax.tree.map(lambda x: x * scale, group), group)
    )


def norm_injection_contraction(settings: NormInjection, contraction: Contraction) -> Contraction:
    """Unchanged: V jumps once, by s², right after update k; before and after that step nothing but the
    optimiser moves θ, so the per-step rate of V is the optimiser's (the injection shifts the time to reach a
    norm by log(s²)/(−log(1 − γ)) steps)."""
    return contraction


# ----------------------------------------------------------------------------- before: grokfast


@dataclass(frozen=True)
class Grokfast:
    """Options of `grokfast` (Grokfast-EMA). alpha: α ∈ [0, 1), the EMA's memory; amplification: a ≥ 0, the gain
    on the slow gradient (0 = off); init: "gradient" (h starts at the first gradient, the reference code) or
    "zero" (h_0 = 0)."""

    name: Literal["grokfast"] = "grokfast"
    alpha: float = 0.98
    amplification: float = 2.0
    init: Literal["gradient", "zero"] = "gradient"

    def __post_init__(self):
        check(
            finite(self.alpha) and 0 <= self.alpha < 1,
            f"optim.before grokfast: alpha must lie in [0, 1), got {self.alpha!r}",
        )
        check(
            finite(self.amplification) and self.amplification >= 0,
            f"optim.before grokfast: amplification must be a finite number ≥ 0 (0 = off), got {self.amplification!r}",
        )


GROKFAST_AXES = {
    "alpha": strength_axis(
        "grokfast_alpha",
        "Grokfast α",
        lambda v: 0 <= v < 1,
        "must lie in [0, 1)",
        None,
        "α of optim.before grokfast, the EMA's memory (α = 0 is not the identity: g·(1 + a))",
    ),
    "amplification": strength_axis(
        "grokfast_amplification",
        "Grokfast amplification a",
        lambda v: v >= 0,
        "must be ≥ 0 (0 = no filter)",
        0.0,
        "a of optim.before grokfast: g ← g + a·h, h the EMA of g; 0 = off",
    ),
}


class GrokfastState(NamedTuple):
    """The slow gradient h (like the parameters) and the number of gradients seen."""

    slow: Any
    count: jnp.ndarray


def grokfast(settings: Grokfast, hparams: Mapping) -> optax.GradientTransformation:
    """Grokfast-EMA: amplify the slow component of the raw loss gradient.

        h_t = α·h_{t−1} + (1 − α)·g_t,    ĝ_t = g_t + a·h_t

    with h_1 = g_1 (init "gradient": the reference code starts its EMA at the first gradient) or h_0 = 0 (init
    "zero"). a = 0 returns g itself (bit for bit; the identity of grokfast_amplification); α = 0 is not an
    identity (ĝ = (1 + a)·g).

    Args:
      settings: the entry's options.
      hparams: the run's traced values (grokfast_alpha, grokfast_amplification when the grid lists them).

    Returns:
      An optax GradientTransformation with state `GrokfastState`.

    Contraction: unchanged. Under a zero loss gradient h decays as α^t and ĝ → 0, so the asymptotic rate of V is
    the optimiser's.

    References:
      Lee, Kang, Kim and Lee, Grokfast: Accelerated Grokking by Amplifying Slow Gradients, arXiv 2405.20233
      (`gradfilter_ema` of github.com/ironjr/grokfast).
    """
    alpha = axis_option(GROKFAST_AXES, settings, hparams, "alpha")
    amplification = axis_option(GROKFAST_AXES, settings, hparams, "amplification")

    def init(params) -> GrokfastState:
        return GrokfastState(jax.tree.map(jnp.zeros_like, params), jnp.zeros((), jnp.int32))

    def update(updates, state: GrokfastState, params=None):
        slow = jax.tree.map(lambda h, g: alpha * h + (1 - alpha) * g, state.slow, updates)
        if settings.init == "gradient":
            slow = where_on(state.count == 0, updates, slow)
        filtered = where_on(amplification > 0, jax.tree.map(lambda g, h: g + amplification * h, updates, slow), updates)
        return filtered, GrokfastState(slow, optax.safe_increment(state.count))

    return optax.GradientTransformation(init, update)


# ----------------------------------------------------------------------------- before: ortho_grad


@dataclass(frozen=True)
class OrthoGrad:
    """Options of `ortho_grad` (⊥Grad). weight: w ∈ [0, 1], the fraction of the radial component removed
    (1 = ⊥Grad, 0 = off); renormalize: rescale the result to ‖g‖ per tensor (the paper's code)."""

    name: Literal["ortho_grad"] = "ortho_grad"
    weight: float = 1.0
    renormalize: bool = True

    def __post_init__(self):
        check(
            finite(self.weight) and 0 <= self.weight <= 1,
            f"optim.before ortho_grad: weight must lie in [0, 1] (1 = ⊥Grad, 0 = off), got {self.weight!r}",
        )


ORTHO_AXES = {
    "weight": strength_axis(
        "ortho_grad_weight",
        "⊥Grad weight w",
        lambda v: 0 <= v <= 1,
        "must lie in [0, 1]",
        0.0,
        "w of optim.before ortho_grad: the fraction of g's component along θ removed (per tensor); 1 = ⊥Grad, 0 = off",
    ),
}


def ortho_grad(settings: OrthoGrad, hparams: Mapping) -> optax.GradientTransformation:
    """⊥Grad: remove the gradient's component along θ, per parameter tensor (θ, g flattened):

        ĝ = g − w·(⟨g, θ⟩/(‖θ‖² + ε))·θ,      then (renormalize) ĝ ← ĝ·‖g‖/(‖ĝ‖ + ε)

    ε = 1e-30 as in the paper's code; with w = 1 the step is orthogonal to θ per tensor, so it cannot grow ‖θ‖
    to first order (the paper's cure for naive loss minimisation). w = 0 returns g itself (bit for bit; the
    identity of ortho_grad_weight).

    Args:
      settings: the entry's options.
      hparams: the run's traced values (ortho_grad_weight when the grid lists it).

    Returns:
      A stateless optax GradientTransformation (it reads θ, the `params` of the update).

    Contraction: unchanged (a zero gradient stays zero; the optimiser's weight decay comes after this slot).

    References:
      Prieto, Barsbey, Mediano and Birdal, Grokking at the Edge of Numerical Stability, arXiv 2501.04697
      (`OrthoGrad` of github.com/LucasPrietoAl/grokking-at-the-edge-of-numerical-stability).
    """
    weight = axis_option(ORTHO_AXES, settings, hparams, "weight")

    def orthogonal(g, theta):
        radial = jnp.sum(g * theta) / (jnp.sum(theta * theta) + EPS)
        out = g - weight * radial * theta
        if settings.renormalize:
            out = out * (jnp.sqrt(jnp.sum(g * g)) / (jnp.sqrt(jnp.sum(out * out)) + EPS))
        return jnp.where(weight > 0, out, g)

    return optax.stateless_with_tree_map(orthogonal)


# ----------------------------------------------------------------------------- the entries

GRADIENT_ENTRIES: dict[str, GradientEntry] = {
    "grokfast": GradientEntry(Grokfast, grokfast, axes=GROKFAST_AXES),
    "ortho_grad": GradientEntry(OrthoGrad, ortho_grad, axes=ORTHO_AXES),
}
"""The interventions of the `before` slot, by name."""

CONSTRAINT_ENTRIES: dict[str, ConstraintEntry] = {
    "norm_clamp": ConstraintEntry(
        NormClamp, norm_clamp, norm_clamp_contraction, axes=CLAMP_AXES, unresolved=norm_clamp_unresolved
    ),
    "row_clip": ConstraintEntry(RowClip, row_clip, row_clip_contraction, axes=ROW_CLIP_AXES),
    "norm_injection": ConstraintEntry(
        NormInjection, norm_injection, norm_injection_contraction, axes=INJECTION_AXES, uses_step=True
    ),
}
"""The interventions of the `after` slot, by name."""


__all__ = [
    "Grokfast",
    "grokfast",
    "l2_norm",
    "norm_clamp",
    "norm_injection",
    "ortho_grad",
    "rescale",
    "resolve_critical_norms",
    "row_clip",
]
