"""Model "sum_mlp": a bare Flax module meeting the token domains' contract. The trainer builds it as
SumMLP(vocab_size=…, num_classes=…, n_ctx=…, **[model]) and calls it on int32 tokens (batch, n_ctx), expecting
logits (batch, num_classes); its other fields (width) are the [model] table's settings."""

from __future__ import annotations

import flax.linen as nn


class SumMLP(nn.Module):
    """logits = head(relu(hidden(concat of the digits' embeddings)))."""

    vocab_size: int
    num_classes: int
    n_ctx: int
    width: int = 32

    @nn.compact
    def __call__(self, tokens):
        x = nn.Embed(self.vocab_size, self.width, name="embed")(tokens)
        x = x.reshape(*tokens.shape[:-1], self.n_ctx * self.width)
        return nn.Dense(self.num_classes, name="head")(nn.relu(nn.Dense(self.width, name="hidden")(x)))
