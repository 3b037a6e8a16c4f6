"""Domain "modular": (a ∘ b) mod p for ∘ ∈ {+, −, ×, ÷} over all p² pairs (grokking).

With task.fourier_metrics on, every log also records how much of the logits is the structured Fourier solution
(fourier_concentration, fourier_sum_energy; definitions in nht_jax.domains.fourier), so the transition can be
timed on structure as well as on test accuracy (nht_jax.domains.fourier.structure_transition_times)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from nht_jax.base.errors import check
from nht_jax.domains.fourier import is_prime, logit_fourier_metrics, num_frequencies, sum_view, unsupported
from nht_jax.domains.tokens import Dataset, LogitMetrics, token_domain


@dataclass(frozen=True)
class ModularSettings:
    """[task] name = "modular". op: the operation; p: the modulus (÷ needs a prime: b ≠ 0 is dropped);
    tokens: "ab" feeds [a, b]; "ab=" feeds [a, b, =] (the "=" token has id p).
    fourier_metrics: also record fourier_concentration and fourier_sum_energy at every log (nht_jax.domains.fourier;
    × and ÷ need a prime p: residues are re-indexed by their discrete logarithm); fourier_top_k: the K of
    fourier_concentration (how many frequencies count as the structured solution's)."""

    name: Literal["modular"] = "modular"
    op: Literal["+", "-", "*", "/"] = "+"
    p: int = 97
    tokens: Literal["ab", "ab="] = "ab"
    fourier_metrics: bool = False
    fourier_top_k: int = 5


def modular_labels(a: np.ndarray, b: np.ndarray, p: int, op: str) -> np.ndarray:
    """c = (a ∘ b) mod p; for ÷, c = a · b^(p−2) mod p (Fermat inverse, p prime, b ≠ 0)."""
    if op == "+":
        return (a + b) % p
    if op == "-":
        return (a - b) % p
    if op == "*":
        return (a * b) % p
    if op == "/":
        if not is_prime(p):
            raise ValueError(f"division mod {p} needs a prime modulus")
        inverse = np.array([pow(int(x), p - 2, p) for x in range(p)])
        return (a * inverse[b]) % p
    raise ValueError(f"unknown operation {op!r}")


def modular_dataset(p: int, op: str, tokens: str = "ab") -> Dataset:
    """All pairs (a, b) in [0, p)² (b ≠ 0 for ÷) with labels (a ∘ b) mod p.

    tokens "ab" gives inputs [a, b] (vocab p); "ab=" gives [a, b, p] (vocab p + 1, token p is "=").
    """
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    a, b = a.ravel(), b.ravel()
    if op == "/":
        a, b = a[b != 0], b[b != 0]
    labels = modular_labels(a, b, p, op)
    columns = [a, b] if tokens == "ab" else [a, b, np.full_like(a, p)]
    return Dataset(
        inputs=np.stack(columns, axis=1).astype(np.int32),
        labels=labels.astype(np.int32),
        vocab_size=p if tokens == "ab" else p + 1,
        num_classes=p,
    )


def validate(task: ModularSettings) -> None:
    check(task.p >= 2, f"task.p must be ≥ 2, got {task.p}")
    check(
        task.op != "/" or is_prime(task.p),
        f"task.op = '/' needs a prime modulus so every b ≠ 0 is invertible; task.p = {task.p} is not prime "
        f"(try 97 or 113)",
    )
    if task.fourier_metrics:
        reason = unsupported(task.p, task.op)
        check(
            reason is None,
            f"task.fourier_metrics = true cannot be measured here: {reason}. Supported: + and − "
            f"for any p ≥ 4, × and ÷ for a prime p ≥ 5; or set task.fourier_metrics = false",
        )
        n_freq = num_frequencies(task.p, task.op)
        check(
            1 <= task.fourier_top_k < n_freq,
            f"task.fourier_top_k must lie in [1, {n_freq - 1}] for op '{task.op}' mod {task.p} ({n_freq} frequencies: "
            f"K = {n_freq} would score 1 whatever the logits), got {task.fourier_top_k}",
        )


FOURIER = LogitMetrics(
    meanings={
        "fourier_concentration": "share of the logits' (a∘b − c)-component carried by its fourier_top_k strongest "
        "frequencies (task.fourier_metrics; nht_jax.domains.fourier)",
        "fourier_sum_energy": "share of the class-centred logits' energy that is a function of (a∘b − c) alone, "
        "in discrete-log coordinates for × and ÷ (task.fourier_metrics; nht_jax.domains.fourier)",
    },
    enabled=lambda config: config.task.fourier_metrics,
    make=lambda config, data: logit_fourier_metrics(
        sum_view(data.inputs[:, 0], data.inputs[:, 1], config.task.p, config.task.op), config.task.fourier_top_k
    ),
)
"""The optional structure metrics of the modular task, from the logits on every pair."""


def dataset_shape(task: ModularSettings) -> tuple[int, int]:
    """(rows, tokens per row) of `modular_dataset`: p² pairs (p(p − 1) for ÷), 2 tokens ("ab") or 3 ("ab=")."""
    return task.p * (task.p - 1 if task.op == "/" else task.p), len(task.tokens)


DOMAIN = token_domain(
    "modular",
    ModularSettings,
    lambda task: modular_dataset(task.p, task.op, task.tokens),
    validate,
    FOURIER,
    dataset_shape,
)
