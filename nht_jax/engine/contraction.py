"""The contraction of V = ‖θ‖² under zero loss gradient, as each optimiser and slot entry declares it.

Every optimiser (`nht_jax.engine.optim.OPTIMISERS`) declares γ with V_{t+1} = (1 − γ)·V_t per step when the loss
gradient is zero, from how its weight decay enters the update; every slot entry (`nht_jax.engine.slots`) then
declares how it changes that γ (`unchanged`, `unknown`). The folded result is a `Contraction`: γ per run, or NaN
with the reason; a run at the identity of every strength axis keeps the rate it had before the entry
(`Contraction.where`, `nht_jax.engine.slots.fold_contraction`). Pure NumPy, float64, on the host (no JAX).

Each optimiser's γ and how the entries change it: docs/methods/index.md, "Optimisers and γ_eff"."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Contraction(NamedTuple):
    """γ_eff of V = ‖θ‖² per run (float64, broadcast over the runs' η and λ), or why it cannot be stated.

    `reason` is empty when γ is known for every run; otherwise γ is NaN at the runs it cannot be stated for (all
    of them unless some runs are at an entry's identity) and `reason` says which part of the configuration makes
    it unknown there (so a fit can mark those runs instead of using ηλ silently)."""

    gamma: np.ndarray
    reason: str = ""

    @property
    def known(self) -> bool:
        return not self.reason

    def unknown(self, reason: str) -> Contraction:
        """The same runs with γ unknown; the first reason given is kept (it names the first cause)."""
        return Contraction(np.full(np.shape(self.gamma), np.nan), self.reason or reason)

    def where(self, keep, other: Contraction) -> Contraction:
        """γ of `self` at the runs where `keep` holds, of `other` elsewhere; the reason `other` gives (the first
        cause, as `unknown` keeps it) when some run's γ is then unknown, else none."""
        gamma = np.where(np.asarray(keep, bool), self.gamma, other.gamma)
        return Contraction(gamma, other.reason if np.isnan(gamma).any() else "")

    def of_run(self, i: int, num_runs: int) -> Contraction:
        """Run i's γ, with the reason only when its γ is unknown."""
        g = np.broadcast_to(np.asarray(self.gamma, np.float64), (num_runs,))[i]
        return Contraction(g, self.reason if np.isnan(g) else "")


def eta_lambda(learning_rate, weight_decay) -> np.ndarray:
    """ηλ in float64."""
    return np.asarray(learning_rate, np.float64) * np.asarray(weight_decay, np.float64)


def shrink_rate(shrink) -> np.ndarray:
    """γ = s(2 − s) of a per-step shrink θ ← (1 − s)θ: V ← (1 − s)²V."""
    s = np.asarray(shrink, np.float64)
    return s * (2.0 - s)


def heavy_ball_rate(shrink, momentum) -> np.ndarray:
    """γ = 1 − r² of heavy-ball momentum β on the ℓ2 shrink s = 2ηλ: m ← βm + sθ/η, θ ← θ − ηm.

    θ_t ∝ r^t with r the larger root of r² − (1 + β − s)r + β = 0; with complex roots |r|² = β, γ = 1 − β.
    """
    s = np.asarray(shrink, np.float64)
    b = 1.0 + momentum - s
    disc = b * b - 4.0 * momentum
    root = 0.5 * (np.abs(b) + np.sqrt(np.maximum(disc, 0.0)))
    return np.where(disc >= 0, 1.0 - root**2, 1.0 - momentum)


def unchanged(settings, contraction: Contraction) -> Contraction:
    """The declaration of a slot entry that maps a zero loss gradient to zero: γ as it was.

    Args:
        settings: the entry's options (unused).
        contraction: γ as declared before the entry.

    Returns:
        `contraction` itself.
    """
    return contraction


__all__ = ["Contraction", "unchanged"]
