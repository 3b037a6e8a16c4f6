"""Flax models; `make_model(model_config, dataset)` picks one."""

from nht_jax.config import ModelConfig
from nht_jax.models.mlp import EmbedMLP
from nht_jax.models.transformer import OneLayerTransformer


def make_model(model: ModelConfig, vocab_size: int, num_classes: int, n_ctx: int):
    if model.name == "mlp":
        return EmbedMLP(vocab_size=vocab_size, num_classes=num_classes, n_ctx=n_ctx, embedding=model.embedding,
                        d_embed=model.d_embed, hidden=tuple(model.hidden), activation=model.activation,
                        precision=model.precision)
    return OneLayerTransformer(vocab_size=vocab_size, num_classes=num_classes, n_ctx=n_ctx, d_model=model.d_model,
                               n_heads=model.n_heads, d_mlp=model.d_mlp, activation=model.activation,
                               layer_norm=model.layer_norm, precision=model.precision)


__all__ = ["EmbedMLP", "OneLayerTransformer", "make_model"]
