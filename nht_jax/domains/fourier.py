"""Fourier structure of modular-arithmetic logits: how much of a network's output is the structured ("Fourier
multiplication") solution rather than a lookup table, and when that structure appears.

A network that has grokked (a + b) mod p computes logits that depend on (a, b, c) only through s = (a + b − c) mod
p and are sparse in frequency (Nanda et al. 2023). Every supported operation is addition in a cyclic group once its
elements are indexed suitably; on that view, `fourier_sum_energy` R is the share of the centred logits' energy
that is a function of s, and `fourier_concentration` C the share of it carried by its K strongest frequencies
(ours: the papers give no formula). `structure_transition_times` gives per run T_structure (C and R above their
thresholds, SUM_ENERGY_THRESHOLD) beside T_accuracy, for the analysis (NumPy only).

The group view, the definitions of R and C, and the transition times: docs/methods/index.md, "Fourier structure of
modular arithmetic"."""

from __future__ import annotations

import functools
from typing import Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

SUPPORTED_OPS = ("+", "-", "*", "/")
STRUCTURE_THRESHOLD = 0.0
SUM_ENERGY_THRESHOLD = 0.3
"""Default T_structure criterion: fourier_concentration ≥ STRUCTURE_THRESHOLD (0: not required) and
fourier_sum_energy ≥ SUM_ENERGY_THRESHOLD. Measured on the default preset (p = 97, width-64 quadratic MLP, 6,000
steps, 2026-11-30): its s-component spreads over 15 or more frequencies, so the top-5 share C sits at 0.44–0.71 in
weak, grokking and strong runs alike and does not separate them (it passes 0.5 by step 200 in 14 of 16 runs);
the share R reaches 0.39–0.45 in the runs that generalise and stays ≤ 0.25 (weak λ) and ≤ 0.04 (strong λ)
elsewhere. Raise STRUCTURE_THRESHOLD for models whose solution is sparse in frequency (Nanda et al.'s transformer)."""
ACCURACY_THRESHOLD = 0.99


# ----------------------------------------------------------------------------------------------- group view


def is_prime(n: int) -> bool:
    return n >= 2 and all(n % d for d in range(2, int(n**0.5) + 1))


def primitive_root(p: int) -> int:
    """The smallest generator g of the multiplicative group mod a prime p (its powers g^0 … g^(p−2) are 1 … p−1)."""
    if not is_prime(p):
        raise ValueError(f"{p} is not prime: the multiplicative group mod {p} is not cyclic of order {p} − 1")
    order = p - 1
    factors = [q for q in range(2, order + 1) if order % q == 0 and is_prime(q)]
    return next(g for g in range(1, p) if all(pow(g, order // q, p) != 1 for q in factors))


def group_size(p: int, op: str) -> int:
    """N: the order of the cyclic group the view indexes (p for + and −, p − 1 for × and ÷)."""
    return p if op in ("+", "-") else p - 1


def num_frequencies(p: int, op: str) -> int:
    """⌊N/2⌋: the number of real frequencies (k and N − k counted once) of the view's s-component."""
    return group_size(p, op) // 2


def unsupported(p: int, op: str) -> str | None:
    """Why the Fourier view cannot be built for (p, op), or None when it can."""
    if op not in SUPPORTED_OPS:
        return f"operation {op!r} is not one of {', '.join(SUPPORTED_OPS)}"
    if op in ("*", "/") and not is_prime(p):
        return (
            f"op = '{op}' re-indexes residues by their discrete logarithm, which needs a prime modulus "
            f"(p = {p} is not prime)"
        )
    if num_frequencies(p, op) < 2:
        return f"p = {p} leaves fewer than 2 frequencies for op = '{op}' (every logit table would score 1)"
    return None


class SumView(NamedTuple):
    """Where the group view's table comes from in a task's logits (N_examples, p): `T = logits[rows][..., classes]`.

    rows[i, j]: the example (a, b) = (x_i, x_j); classes[l]: the class x_l; sign σ: s = (i + σj − l) mod N."""

    rows: np.ndarray
    classes: np.ndarray
    sign: int


def sum_view(a: np.ndarray, b: np.ndarray, p: int, op: str) -> SumView:
    """The group view of a task whose examples have operands a, b (one entry per example, any order)."""
    reason = unsupported(p, op)
    if reason:
        raise ValueError(reason)
    n = group_size(p, op)
    if op in ("+", "-"):
        elements = np.arange(p)
    else:
        g = primitive_root(p)
        elements = np.array([pow(g, i, p) for i in range(n)])
    position = np.full((p, p), -1, np.int64)
    position[np.asarray(a), np.asarray(b)] = np.arange(len(a))
    rows = position[elements[:, None], elements[None, :]]
    if (rows < 0).any():
        raise ValueError(f"the examples miss {int((rows < 0).sum())} of the {n * n} pairs the Fourier view needs")
    return SumView(rows=rows.astype(np.int32), classes=elements.astype(np.int32), sign=1 if op in ("+", "*") else -1)


def view_table(logits, view: SumView):
    """(N, N, N) table T[i, j, l] of the view from a task's logits (N_examples, p)."""
    return gather_view(jnp.asarray(logits), view.rows, view.classes)


@jax.jit
def gather_view(logits, rows, classes):
    """`logits[rows][..., classes]`, one compiled gather (called eagerly, the indexing would compile one tiny
    program per primitive and shape)."""
    return logits[rows][..., classes]


# ----------------------------------------------------------------------------------------------- the metrics


@functools.partial(jax.jit, static_argnames=("sign",))
def sum_spectrum(table, sign: int = 1):
    """(e, E): the s-component's energy per frequency k = 1 … ⌊N/2⌋, shape (⌊N/2⌋,), and the energy E of the
    class-centred table (docs/methods/index.md). table: (N, N, N) T[i, j, l]; s = (i + sign·j − l) mod N.
    Jitted (sign static), as is fourier_metrics: one program per table shape when called outside a trace."""
    table = jnp.asarray(table, jnp.float32)
    n = table.shape[0]
    centred = table - jnp.mean(table, axis=-1, keepdims=True)
    total = jnp.sum(jnp.square(centred))
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    r = ((i + sign * j) % n).ravel()  # r = i + σj: s = r − l
    by_r = jax.ops.segment_sum(centred.reshape(n * n, n), jnp.asarray(r), num_segments=n)  # H[r, l]
    s = np.arange(n)
    g = jnp.sum(by_r[np.arange(n)[:, None], (np.arange(n)[:, None] - s[None, :]) % n], axis=0)  # G[s]
    power = jnp.square(jnp.abs(jnp.fft.fft(g))) / n**3  # Σ_k power_k = Σ_s G[s]² / N² = ‖P‖²
    k = np.arange(1, n // 2 + 1)
    mirror = np.where(k != n - k, n - k, 0)  # index 0 holds no energy (Σ_s G = 0) ...
    energy = power[k] + jnp.where(jnp.asarray(k != n - k), power[mirror], 0.0)  # ... and is masked anyway
    return energy, total


def key_frequencies(table, sign: int = 1, top_k: int = 5) -> np.ndarray:
    """The top_k frequencies (in 1 … ⌊N/2⌋) carrying most of the s-component's energy, strongest first."""
    energy, _ = sum_spectrum(table, sign)
    return np.argsort(-np.asarray(energy), kind="stable")[:top_k] + 1


@functools.partial(jax.jit, static_argnames=("sign", "top_k"))
def fourier_metrics(table, sign: int = 1, top_k: int = 5) -> dict:
    """{"fourier_concentration": C, "fourier_sum_energy": R} of an (N, N, N) logit table (module docstring)."""
    energy, total = sum_spectrum(table, sign)
    in_sum = jnp.sum(energy)
    top = jnp.sum(jax.lax.top_k(energy, top_k)[0])
    concentration = jnp.where(in_sum > 0, top / jnp.where(in_sum > 0, in_sum, 1.0), 0.0)
    sum_energy = jnp.where(total > 0, in_sum / jnp.where(total > 0, total, 1.0), 0.0)
    return {
        "fourier_concentration": jnp.clip(concentration, 0.0, 1.0),
        "fourier_sum_energy": jnp.clip(sum_energy, 0.0, 1.0),
    }


def logit_fourier_metrics(view: SumView, top_k: int = 5):
    """logits (N_examples, p) → fourier_metrics of their group view: the in-engine metric function."""

    def metrics(logits) -> dict:
        return fourier_metrics(view_table(logits, view), view.sign, top_k)

    return metrics


def chance_concentration(n_freq: int, top_k: int) -> float:
    """E[C] for random logits: the expected share of the top_k of n_freq i.i.d. exponential energies (each
    frequency of an i.i.d. Gaussian table's s-component carries a χ²₂ energy), (1/n) Σ_{r ≤ K} Σ_{m=r}^{n} 1/m —
    above K/n_freq (a lookup table's value) because the top K are picked after the fact: 0.68 for p = 31, K = 5
    (15 frequencies), 0.33 for p = 97 (48)."""
    return float(sum(sum(1.0 / m for m in range(r, n_freq + 1)) for r in range(1, top_k + 1)) / n_freq)


# ----------------------------------------------------------------------------------------------- transition times


def first_step_at_or_above(values: np.ndarray, steps: np.ndarray, threshold: float) -> np.ndarray:
    """First logged step at which values ≥ threshold, per run (values (..., logs)); NaN where never."""
    values = np.asarray(values, np.float64)
    holds = values >= threshold
    first = np.argmax(holds, axis=-1)
    return np.where(holds.any(axis=-1), np.asarray(steps, np.float64)[first], np.nan)


def structure_transition_times(
    steps: np.ndarray,
    metrics: Mapping[str, np.ndarray],
    structure_threshold: float = STRUCTURE_THRESHOLD,
    sum_energy_threshold: float = SUM_ENERGY_THRESHOLD,
    accuracy_threshold: float = ACCURACY_THRESHOLD,
    accuracy_metric: str = "test_acc",
) -> dict[str, np.ndarray]:
    """Both transition times of each run, from its logged metrics (arrays (logs,) for one run or (runs, logs)).

    T_structure: first logged step with fourier_concentration ≥ structure_threshold and fourier_sum_energy ≥
    sum_energy_threshold; T_accuracy: first logged step with `accuracy_metric` ≥ accuracy_threshold (no
    persistence required: the companion paper's T_grok); lag = T_accuracy − T_structure (positive: structure
    came first). NaN where a time is undefined. NumPy only."""
    steps = np.asarray(steps, np.float64)
    concentration = np.asarray(metrics["fourier_concentration"], np.float64)
    sum_energy = np.asarray(metrics.get("fourier_sum_energy", np.ones_like(concentration)), np.float64)
    structured = np.where((concentration >= structure_threshold) & (sum_energy >= sum_energy_threshold), 1.0, 0.0)
    t_structure = first_step_at_or_above(structured, steps, 1.0)
    t_accuracy = first_step_at_or_above(metrics[accuracy_metric], steps, accuracy_threshold)
    return {"T_structure": t_structure, "T_accuracy": t_accuracy, "lag": t_accuracy - t_structure}


__all__ = []
