"""Domain "digit_sum": k digits in base b, labelled by their sum mod b, every one of the b^k inputs once.

Built from the toolkit's token-domain pieces (`nht_jax.domains.tokens.token_domain`): the per-run train/test
split over grid.train_fraction, the token trainer, its metrics (train/test accuracy and loss, logit scale, ...) and
its model contract, so the package's token models ("mlp", "transformer") and plugin models ("sum_mlp") train on it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from nht_jax.base.errors import check
from nht_jax.domains.tokens import Dataset, token_domain


@dataclass(frozen=True)
class DigitSumSettings:
    """[task] name = "digit_sum": `digits` digits in base `base` (base^digits examples)."""

    name: str = "digit_sum"
    base: int = 5
    digits: int = 3


def digit_sum_dataset(task: DigitSumSettings) -> Dataset:
    """Every tuple (x_1, …, x_k) ∈ [0, b)^k with label (x_1 + … + x_k) mod b."""
    inputs = np.array(list(itertools.product(range(task.base), repeat=task.digits)), dtype=np.int32)
    return Dataset(
        inputs=inputs,
        labels=(inputs.sum(axis=1) % task.base).astype(np.int32),
        vocab_size=task.base,
        num_classes=task.base,
    )


def validate(task: DigitSumSettings) -> None:
    check(task.base >= 2, f"task.base must be ≥ 2, got {task.base}")
    check(1 <= task.digits <= 6, f"task.digits must lie in [1, 6] (base^digits examples), got {task.digits}")


DOMAIN = token_domain(
    "digit_sum",
    DigitSumSettings,
    digit_sum_dataset,
    validate,
    dataset_shape=lambda task: (task.base**task.digits, task.digits),
)
