"""One-layer transformer with readout from the last position.

Layers: tok_embed, pos_embed, [ln_attn], attn, [ln_mlp], mlp_in, mlp_out, [ln_final], head.
x = E[tok] + P;  x += Attn(LN?(x));  x += W_out act(W_in LN?(x));  logits = head(LN?(x_last)).
Attention is causal (the last position sees all), heads of width d_model / n_heads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import flax.linen as nn
import jax.numpy as jnp

from nht_jax.base.errors import check
from nht_jax.models.activations import ACTIVATIONS, Activation


@dataclass(frozen=True)
class TransformerSettings:
    """[model] name = "transformer": one block (attention + MLP, residual), token and position embeddings,
    readout of the last position; `layer_norm` = "none" | "final" (before the head) | "pre" (before
    attention, MLP and head). Embeddings N(0, 1/d_model), dense kernels LeCun normal; `precision` as for mlp.
    """

    name: Literal["transformer"] = "transformer"
    d_model: int = 128
    n_heads: int = 4
    d_mlp: int = 512
    activation: Activation = "quadratic"
    layer_norm: Literal["none", "final", "pre"] = "none"
    precision: Literal["default", "high", "highest"] = "highest"

    def validate(self) -> None:
        check(self.d_model > 0 and self.n_heads > 0 and self.d_mlp > 0,
              f"model.d_model, model.n_heads and model.d_mlp must be positive, got {self.d_model}, {self.n_heads}, {self.d_mlp}")
        check(self.d_model % self.n_heads == 0,
              f"model.d_model ({self.d_model}) must be divisible by model.n_heads ({self.n_heads})")

    def build(self, vocab_size: int, num_classes: int, n_ctx: int) -> nn.Module:
        return OneLayerTransformer(vocab_size=vocab_size, num_classes=num_classes, n_ctx=n_ctx, d_model=self.d_model,
                                   n_heads=self.n_heads, d_mlp=self.d_mlp, activation=self.activation,
                                   layer_norm=self.layer_norm, precision=self.precision)


class OneLayerTransformer(nn.Module):
    vocab_size: int
    num_classes: int
    n_ctx: int
    d_model: int = 128
    n_heads: int = 4
    d_mlp: int = 512
    activation: str = "gelu"
    layer_norm: str = "none"  # "none" | "final" | "pre"
    precision: str = "highest"

    def _norm(self, x, name, used):
        return nn.LayerNorm(name=name)(x) if used else x

    @nn.compact
    def __call__(self, tokens):
        embed_init = nn.initializers.normal(self.d_model ** -0.5)
        x = nn.Embed(self.vocab_size, self.d_model, embedding_init=embed_init, name="tok_embed")(tokens)
        x = x + self.param("pos_embed", embed_init, (self.n_ctx, self.d_model))
        pre = self.layer_norm == "pre"
        mask = nn.make_causal_mask(jnp.ones(tokens.shape, bool))
        h = self._norm(x, "ln_attn", pre)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.n_heads, precision=self.precision, name="attn")(h, h, mask=mask)
        h = self._norm(x, "ln_mlp", pre)
        h = ACTIVATIONS[self.activation](nn.Dense(self.d_mlp, precision=self.precision, name="mlp_in")(h))
        x = x + nn.Dense(self.d_model, precision=self.precision, name="mlp_out")(h)
        last = self._norm(x[..., -1, :], "ln_final", self.layer_norm in ("pre", "final"))
        return nn.Dense(self.num_classes, precision=self.precision, name="head")(last)
