"""One-layer transformer with readout from the last position.

Layers: tok_embed, pos_embed, [ln_attn], attn, [ln_mlp], mlp_in, mlp_out, [ln_final], head. `layer_norm` is "none",
"final", "pre" or "post" (PyTorch's `nn.TransformerEncoderLayer`); attention is causal, which with one layer and
readout of the last position gives the same logits as unmasked attention. `block_positions = "readout"` computes
the block after the attention at the last position only (equal to float rounding, opt-in); `init` is "flax" or
"pytorch" (PyTorch 2.x module defaults).

The equations of each layer_norm, block_positions and both initialisations: docs/methods/index.md, "The
transformer, precisely"."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

from nht_jax.base.errors import check
from nht_jax.models.activations import ACTIVATIONS, Activation

TRANSFORMER_ACTIVATIONS = {**ACTIVATIONS, "gelu_exact": functools.partial(jax.nn.gelu, approximate=False)}
"""The shared activations plus "gelu_exact" (the erf form, PyTorch's default; "gelu" is JAX's tanh approximation)."""


def uniform_init(bound: float):
    """Initialiser U(−bound, bound) whatever the shape (the bound is computed by the caller from PyTorch's fans)."""

    def init(key, shape, dtype=jnp.float32):
        return jax.random.uniform(key, shape, dtype, -bound, bound)

    return init


@dataclass(frozen=True)
class TransformerSettings:
    """[model] name = "transformer": one block (attention + MLP, residual), token and position embeddings,
    readout of the last position; `layer_norm` = "none" | "final" (before the head) | "pre" (before
    attention, MLP and head) | "post" (after each residual sum, PyTorch's post-norm encoder layer, plus a final
    LayerNorm before the head); `layer_norm_eps` the LayerNorm ε (Flax's 1e-6 by default; PyTorch's is 1e-5).
    `block_positions` = "all" (the block at every position; default) | "readout" (attention output, MLP and
    LayerNorms only at the last position, which the head reads: the same function, equal to float rounding,
    with about half the arithmetic; docs/methods/index.md, "The transformer, precisely").
    `init` = "flax" (embeddings N(0, 1/d_model), kernels LeCun normal, biases 0) | "pytorch" (PyTorch's module
    defaults: embeddings N(0, 1), linear layers U(±1/√fan_in) for kernels and biases, attention input projection
    Xavier-uniform with zero bias; docs/methods/index.md). `activation` also accepts "gelu_exact" (erf GELU,
    PyTorch's default). `precision` as for mlp.
    """

    name: Literal["transformer"] = "transformer"
    d_model: int = 128
    n_heads: int = 4
    d_mlp: int = 512
    activation: Literal[Activation, "gelu_exact"] = "quadratic"
    layer_norm: Literal["none", "final", "pre", "post"] = "none"
    layer_norm_eps: float = 1e-6
    init: Literal["flax", "pytorch"] = "flax"
    precision: Literal["default", "high", "highest"] = "highest"
    block_positions: Literal["all", "readout"] = "all"

    def validate(self) -> None:
        check(
            self.d_model > 0 and self.n_heads > 0 and self.d_mlp > 0,
            f"model.d_model, model.n_heads and model.d_mlp must be positive, got {self.d_model}, {self.n_heads}, {self.d_mlp}",
        )
        check(
            self.d_model % self.n_heads == 0,
            f"model.d_model ({self.d_model}) must be divisible by model.n_heads ({self.n_heads})",
        )
        check(self.layer_norm_eps > 0, f"model.layer_norm_eps must be > 0, got {self.layer_norm_eps}")

    def build(self, vocab_size: int, num_classes: int, n_ctx: int) -> nn.Module:
        return OneLayerTransformer(
            vocab_size=vocab_size,
            num_classes=num_classes,
            n_ctx=n_ctx,
            d_model=self.d_model,
            n_heads=self.n_heads,
            d_mlp=self.d_mlp,
            activation=self.activation,
            layer_norm=self.layer_norm,
            precision=self.precision,
            layer_norm_eps=self.layer_norm_eps,
            init_scheme=self.init,
            block_positions=self.block_positions,
        )


class OneLayerTransformer(nn.Module):
    vocab_size: int
    num_classes: int
    n_ctx: int
    d_model: int = 128
    n_heads: int = 4
    d_mlp: int = 512
    activation: str = "gelu"
    layer_norm: str = "none"  # "none" | "final" | "pre" | "post"
    precision: str = "highest"
    layer_norm_eps: float = 1e-6
    init_scheme: str = "flax"  # TransformerSettings.init ("init" would shadow Module.init)
    block_positions: str = "all"  # "all" | "readout" (TransformerSettings.block_positions)

    def _norm(self, x, name, used):
        return nn.LayerNorm(epsilon=self.layer_norm_eps, name=name)(x) if used else x

    def _dense(self, features: int, fan_in: int, name: str) -> nn.Dense:
        if self.init_scheme == "pytorch":  # nn.Linear: kernel and bias U(±1/√fan_in)
            bound = 1.0 / math.sqrt(fan_in)
            return nn.Dense(
                features,
                precision=self.precision,
                kernel_init=uniform_init(bound),
                bias_init=uniform_init(bound),
                name=name,
            )
        return nn.Dense(features, precision=self.precision, name=name)

    def _attention(self) -> nn.MultiHeadDotProductAttention:
        if self.init_scheme == "pytorch":  # nn.MultiheadAttention._reset_parameters
            return nn.MultiHeadDotProductAttention(
                num_heads=self.n_heads,
                precision=self.precision,
                name="attn",
                kernel_init=uniform_init(math.sqrt(6.0 / (self.d_model + 3 * self.d_model))),
                bias_init=nn.initializers.zeros,
                out_kernel_init=uniform_init(1.0 / math.sqrt(self.d_model)),
                out_bias_init=nn.initializers.zeros,
            )
        return nn.MultiHeadDotProductAttention(num_heads=self.n_heads, precision=self.precision, name="attn")

    def _block_rows(self, x):
        """x (…, n_ctx, d) at the positions the block computes: all, or (…, 1, d) the last ("readout")."""
        return x[..., -1:, :] if self.block_positions == "readout" else x

    def _attend(self, queries, keys):
        """Causal attention of `queries` over `keys` (every position). The last query alone sees every key, so it
        needs no mask."""
        mask = None if queries.shape[-2] == 1 else nn.make_causal_mask(jnp.ones(keys.shape[:-1], bool))
        return self._attention()(queries, keys, mask=mask)

    @nn.compact
    def __call__(self, tokens):
        embed_init = nn.initializers.normal(1.0 if self.init_scheme == "pytorch" else self.d_model**-0.5)
        x = nn.Embed(self.vocab_size, self.d_model, embedding_init=embed_init, name="tok_embed")(tokens)
        x = x + self.param("pos_embed", embed_init, (self.n_ctx, self.d_model))
        pre, post = self.layer_norm == "pre", self.layer_norm == "post"
        act = TRANSFORMER_ACTIVATIONS[self.activation]
        where = self._block_rows  # the rows the block computes: every position, or the last one only
        if post:
            x = self._norm(where(x) + self._attend(where(x), x), "ln_attn", True)
            h = act(self._dense(self.d_mlp, self.d_model, "mlp_in")(x))
            x = self._norm(x + self._dense(self.d_model, self.d_mlp, "mlp_out")(h), "ln_mlp", True)
        else:
            h = self._norm(x, "ln_attn", pre)
            x = where(x) + self._attend(where(h), h)
            h = self._norm(x, "ln_mlp", pre)
            h = act(self._dense(self.d_mlp, self.d_model, "mlp_in")(h))
            x = x + self._dense(self.d_model, self.d_mlp, "mlp_out")(h)
        last = self._norm(x[..., -1, :], "ln_final", self.layer_norm in ("pre", "final", "post"))
        return self._dense(self.num_classes, self.d_model, "head")(last)
