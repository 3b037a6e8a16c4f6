"""Token models, each with its own settings dataclass (the [model] table when model.name names it).

A settings class has `validate()` and `build(vocab_size, num_classes, n_ctx)` → a Flax module.
"""

from nht_jax.models.mlp import EmbedMLP, MLPSettings
from nht_jax.models.transformer import OneLayerTransformer, TransformerSettings

TOKEN_MODELS = {"mlp": MLPSettings, "transformer": TransformerSettings}
"""model.name → settings class, for domains whose inputs are token sequences."""

__all__ = ["EmbedMLP", "MLPSettings", "OneLayerTransformer", "TOKEN_MODELS", "TransformerSettings"]
