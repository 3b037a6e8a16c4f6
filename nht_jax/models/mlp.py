"""MLP over token embeddings (layer names: embed, hidden_i, head)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import flax.linen as nn
import jax.numpy as jnp

from nht_jax.base.errors import check
from nht_jax.models.activations import ACTIVATIONS, Activation


@dataclass(frozen=True)
class MLPSettings:
    """[model] name = "mlp".

    `embedding = "onehot"` is one hidden layer on the one-hot encoding of every position,
    h = act(Σ_i E_i[x_i] + b) (per-position tables of width `hidden[0]`), then further `hidden` layers;
    `embedding = "learned"` embeds tokens with one shared table of width `d_embed`, concatenates the
    positions and applies all `hidden` layers. Initialisation is LeCun normal (variance 1/fan-in) for dense
    kernels, N(0, 1/d) for embeddings; the grid's `init_scale` multiplies every initial parameter.
    `precision` of matrix products: "highest" is true float32 everywhere (GPUs otherwise use TF32).
    """

    name: Literal["mlp"] = "mlp"
    embedding: Literal["onehot", "learned"] = "onehot"
    d_embed: int = 128
    hidden: tuple[int, ...] = (128,)
    activation: Activation = "quadratic"
    precision: Literal["default", "high", "highest"] = "highest"

    def validate(self) -> None:
        check(all(h > 0 for h in self.hidden), f"model.hidden widths must be positive, got {list(self.hidden)}")
        check(self.d_embed > 0, f"model.d_embed must be positive, got {self.d_embed}")
        check(
            self.embedding != "onehot" or len(self.hidden) >= 1,
            "model.embedding = 'onehot' needs at least one hidden width (model.hidden = [128])",
        )

    def build(self, vocab_size: int, num_classes: int, n_ctx: int) -> nn.Module:
        return EmbedMLP(
            vocab_size=vocab_size,
            num_classes=num_classes,
            n_ctx=n_ctx,
            embedding=self.embedding,
            d_embed=self.d_embed,
            hidden=tuple(self.hidden),
            activation=self.activation,
            precision=self.precision,
        )


class OneHotEmbed(nn.Module):
    """First dense layer on the one-hot encoding of every position: Σ_i E_i[x_i] + b.

    Equivalent to Dense(concat(onehot(x_1), …, onehot(x_n))) but computed as gathers, and
    initialised like that dense layer (LeCun normal: variance 1 / fan-in, fan-in = n_ctx · vocab).
    """

    vocab_size: int
    n_ctx: int
    width: int

    @nn.compact
    def __call__(self, tokens):
        init = nn.initializers.normal(stddev=(self.n_ctx * self.vocab_size) ** -0.5)
        tables = self.param("tables", init, (self.n_ctx, self.vocab_size, self.width))
        bias = self.param("bias", nn.initializers.zeros, (self.width,))
        picked = tables[jnp.arange(self.n_ctx), tokens]  # (..., n_ctx, width)
        return picked.sum(axis=-2) + bias


class EmbedMLP(nn.Module):
    """logits = head(act(… act(first(x)) …)).

    embedding "onehot": first = OneHotEmbed of width hidden[0], then hidden[1:];
    embedding "learned": first = concat of shared token embeddings (width d_embed), then hidden.
    """

    vocab_size: int
    num_classes: int
    n_ctx: int
    embedding: str = "onehot"
    d_embed: int = 128
    hidden: tuple[int, ...] = (128,)
    activation: str = "quadratic"
    precision: str = "highest"

    @nn.compact
    def __call__(self, tokens):
        act = ACTIVATIONS[self.activation]
        if self.embedding == "onehot":
            x = act(OneHotEmbed(self.vocab_size, self.n_ctx, self.hidden[0], name="embed")(tokens))
            widths = self.hidden[1:]
        else:
            table = nn.Embed(
                self.vocab_size, self.d_embed, embedding_init=nn.initializers.normal(self.d_embed**-0.5), name="embed"
            )
            x = table(tokens).reshape(*tokens.shape[:-1], self.n_ctx * self.d_embed)
            widths = self.hidden
        for i, width in enumerate(widths):
            x = act(nn.Dense(width, precision=self.precision, name=f"hidden_{i}")(x))
        return nn.Dense(self.num_classes, precision=self.precision, name="head")(x)
