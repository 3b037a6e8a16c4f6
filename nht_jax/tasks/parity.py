"""Sparse parity: y = x_1 ⊕ … ⊕ x_k over n random bits (a control that is not expected to grok)."""

from __future__ import annotations

import numpy as np

from nht_jax.tasks.dataset import Dataset


def sparse_parity_dataset(n: int, k: int, samples: int, data_seed: int = 0) -> Dataset:
    """`samples` distinct-by-chance bit strings drawn uniformly (fixed by data_seed); label = parity of bits 0..k−1."""
    rng = np.random.default_rng(data_seed)
    bits = rng.integers(0, 2, size=(samples, n), dtype=np.int32)
    labels = bits[:, :k].sum(axis=1) % 2
    return Dataset(inputs=bits, labels=labels.astype(np.int32), vocab_size=2, num_classes=2)
