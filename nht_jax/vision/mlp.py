"""ImageMLP: a fully connected network on the flattened image, the image domain's cheap second model.

    x (N, H, W, 3) → flatten (N, 3·H·W) → hidden_0 → ReLU → … → hidden_{k−1} → ReLU → head (num_classes)

Parameters: (3·H·W + 1)·h₀ + Σ (h_{i−1} + 1)·h_i + (h_{k−1} + 1)·num_classes; at 32×32 with hidden (256, 256) and
10 classes: 786,688 + 65,792 + 2,570 = 855,050. Initialisation: Flax defaults (LeCun normal kernels, zero biases), as
SimpleCNN. No normalisation, no train/eval difference. Unlike a convolution it sees the border and the object as
unrelated pixels: the shortcut is a linear function of the input, the structured solution is not.
"""

from __future__ import annotations

import flax.linen as nn


class ImageMLP(nn.Module):
    """logits = head(relu(hidden_{k−1}(… relu(hidden_0(flatten(x))) …)))."""

    num_classes: int = 10
    hidden: tuple[int, ...] = (256, 256)

    @nn.compact
    def __call__(self, x, train: bool = False):
        """x: (N, H, W, C) float images; `train` is accepted for the image models' uniform interface."""
        del train
        x = x.reshape(x.shape[0], -1)
        for i, width in enumerate(self.hidden):
            x = nn.relu(nn.Dense(width, name=f"hidden_{i}")(x))
        return nn.Dense(self.num_classes, name="head")(x)


__all__ = []
