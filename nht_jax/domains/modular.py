"""Domain "modular": (a ∘ b) mod p for ∘ ∈ {+, −, ×, ÷} over all p² pairs (grokking)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from nht_jax.base.errors import check
from nht_jax.domains.tokens import Dataset, token_domain


@dataclass(frozen=True)
class ModularSettings:
    """[task] name = "modular". op: the operation; p: the modulus (÷ needs a prime: b ≠ 0 is dropped);
    tokens: "ab" feeds [a, b]; "ab=" feeds [a, b, =] (the "=" token has id p)."""

    name: Literal["modular"] = "modular"
    op: Literal["+", "-", "*", "/"] = "+"
    p: int = 97
    tokens: Literal["ab", "ab="] = "ab"


def is_prime(n: int) -> bool:
    return n >= 2 and all(n % d for d in range(2, int(n ** 0.5) + 1))


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
    check(task.op != "/" or is_prime(task.p),
          f"task.op = '/' needs a prime modulus so every b ≠ 0 is invertible; task.p = {task.p} is not prime "
          f"(try 97 or 113)")


DOMAIN = token_domain("modular", ModularSettings, lambda task: modular_dataset(task.p, task.op, task.tokens), validate)
