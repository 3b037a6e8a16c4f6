"""Domain "sparse_parity": y = x_1 ⊕ … ⊕ x_k over n random bits. With 100 training samples it is the control that
does not grok (preset `sparse-parity`); with 1,000 it groks (`sparse-parity-groks`); docs/findings/sparse-parity.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from nht_jax.base.errors import check
from nht_jax.domains.tokens import Dataset, token_domain


@dataclass(frozen=True)
class SparseParitySettings:
    """[task] name = "sparse_parity": the parity of the first `parity_k` of `parity_n` random bits, over a fixed
    sample of `parity_samples` bit strings drawn with `data_seed`."""

    name: Literal["sparse_parity"] = "sparse_parity"
    parity_n: int = 40
    parity_k: int = 3
    parity_samples: int = 2000
    data_seed: int = 0


def sparse_parity_dataset(n: int, k: int, samples: int, data_seed: int = 0) -> Dataset:
    """`samples` distinct-by-chance bit strings drawn uniformly (fixed by data_seed); label = parity of bits 0..k−1."""
    rng = np.random.default_rng(data_seed)
    bits = rng.integers(0, 2, size=(samples, n), dtype=np.int32)
    labels = bits[:, :k].sum(axis=1) % 2
    return Dataset(inputs=bits, labels=labels.astype(np.int32), vocab_size=2, num_classes=2)


def validate(task: SparseParitySettings) -> None:
    check(
        1 <= task.parity_k <= task.parity_n,
        f"task.parity_k must be in [1, parity_n], got k={task.parity_k}, n={task.parity_n}",
    )
    check(task.parity_samples >= 4, f"task.parity_samples must be ≥ 4, got {task.parity_samples}")
    check(task.data_seed >= 0, f"task.data_seed must be ≥ 0, got {task.data_seed}")


DOMAIN = token_domain(
    "sparse_parity",
    SparseParitySettings,
    lambda task: sparse_parity_dataset(task.parity_n, task.parity_k, task.parity_samples, task.data_seed),
    validate,
    dataset_shape=lambda task: (task.parity_samples, task.parity_n),
)
