"""κ as a function of (λ, η): the first-passage law's rate share modelled on the calibration runs, pure numpy
(docs/guides/forecast.md, `kappa_pool = "model"`).

The law T − T_mem = log(V_mem / V★)/(κ·g) takes κ as one number per architecture (arXiv 2605.18845); measured on
each transitioned run (`nht_jax.measure.forecast.first_passage.law_kappa`) it is not one number on every grid
(docs/findings/forecast.md). This module fits log κ = a + b·log λ + c·log η by least squares on the calibration
runs' κ, each slope only where the calibration identifies it (`identified`; with neither, the pooled median), with a
seed-level bootstrap interval.

Why this form, what it cannot follow, identification and the interval: docs/guides/forecast.md, "κ as a function
of λ and η"."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

N_BOOTSTRAP = 400
"""Resamples of the calibration seeds behind κ(λ, η)'s interval when a calibration fits the model."""


class KappaModel(NamedTuple):
    """log κ = a + b·log λ + c·log η (module docstring); `boot` the (a, b, c) of each bootstrap refit."""

    a: float
    b: float
    c: float
    identified: tuple[str, ...]  # the slopes fitted: () (the pooled median), ("lambda",), ("lambda", "eta"), …
    n: int  # calibration runs with a finite positive κ
    boot: np.ndarray  # (resamples, 3)
    confidence: float


NO_MODEL = KappaModel(math.nan, 0.0, 0.0, (), 0, np.zeros((0, 3)), 0.9)


def coefficients(lam, eta, kappa) -> tuple[float, float, float, tuple[str, ...], int]:
    """(a, b, c, identified, n): the least-squares fit of the module docstring's form on the finite positive κ with
    positive λ (and η where c is fitted); a = NaN without any."""
    lam, eta, kappa = (np.asarray(x, np.float64).ravel() for x in (lam, eta, kappa))
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = np.isfinite(kappa) & (kappa > 0) & np.isfinite(lam) & (lam > 0)
    if not ok.any():
        return math.nan, 0.0, 0.0, (), 0
    x_lam, y = np.log(lam[ok]), np.log(kappa[ok])
    eta_ok = eta[ok]
    columns, names = [np.ones_like(y)], []
    if np.unique(x_lam).size >= 2:
        columns.append(x_lam)
        names.append("lambda")
    if np.isfinite(eta_ok).all() and (eta_ok > 0).all() and np.unique(eta_ok).size >= 2:
        trial = np.column_stack([*columns, np.log(eta_ok)])
        if np.linalg.matrix_rank(trial) == trial.shape[1]:  # not collinear with log λ and the constant
            columns.append(np.log(eta_ok))
            names.append("eta")
    if not names:  # no slope: the pooled median (module docstring)
        return float(np.log(np.median(kappa[ok]))), 0.0, 0.0, (), int(ok.sum())
    design = np.column_stack(columns)
    beta = np.linalg.lstsq(design, y, rcond=None)[0]
    coef = dict(zip(["const", *names], beta))
    return (
        float(coef["const"]),
        float(coef.get("lambda", 0.0)),
        float(coef.get("eta", 0.0)),
        tuple(names),
        int(ok.sum()),
    )


def fit(
    lam, eta, kappa, seeds=None, n_bootstrap: int = N_BOOTSTRAP, confidence: float = 0.9, rng_seed: int = 0
) -> KappaModel:
    """The model of the calibration runs, with its seed-level bootstrap (module docstring).

    Args:
        lam: λ of each calibration run.
        eta: η of each run, or None (one η: c is not identified).
        kappa: the realised κ of each run.
        seeds: the seed of each run, for the seed-level bootstrap (None: no bootstrap).
        n_bootstrap: the bootstrap resamples.
        confidence: the interval's coverage, e.g. 0.9.
        rng_seed: the bootstrap's random seed.

    Returns:
        The fitted model and its resampled coefficients.
    """
    lam = np.asarray(lam, np.float64).ravel()
    eta = np.full(lam.shape, math.nan) if eta is None else np.broadcast_to(np.asarray(eta, np.float64), lam.shape)
    kappa = np.asarray(kappa, np.float64).ravel()
    a, b, c, names, n = coefficients(lam, eta, kappa)
    boot = np.zeros((0, 3))
    if seeds is not None and n_bootstrap > 0 and np.isfinite(a):
        seeds = np.asarray(seeds, np.float64).ravel()
        levels = np.unique(seeds)
        if levels.size >= 2:
            groups = [np.flatnonzero(seeds == s) for s in levels]
            rng = np.random.default_rng(rng_seed)
            rows = []
            for _ in range(n_bootstrap):
                idx = np.concatenate([groups[k] for k in rng.integers(0, levels.size, levels.size)])
                rows.append(coefficients(lam[idx], eta[idx], kappa[idx])[:3])
            boot = np.array(rows, np.float64)
    return KappaModel(a, b, c, names, n, boot, confidence)


def predict(model: KappaModel, lam, eta=math.nan):
    """κ(λ, η) = e^a·λ^b·η^c (η is not read when c is not identified); NaN without a model or for λ ≤ 0."""
    return _predict(model.a, model.b, model.c, "eta" in model.identified, lam, eta)


def _predict(a, b, c, use_eta: bool, lam, eta):
    lam, eta = np.asarray(lam, np.float64), np.asarray(eta, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        log_k = a + b * np.where(lam > 0, np.log(np.where(lam > 0, lam, 1.0)), np.nan)
        if use_eta:
            log_k = log_k + c * np.where(eta > 0, np.log(np.where(eta > 0, eta, 1.0)), np.nan)
    out = np.exp(log_k)
    return float(out) if out.ndim == 0 else out


def interval(model: KappaModel, lam: float, eta: float = math.nan) -> tuple[float, float]:
    """The seed-bootstrap interval of κ(λ, η) at `model.confidence` (module docstring).

    Args:
        model: the fitted κ model.
        lam: λ of the run.
        eta: η of the run (NaN: λ only).

    Returns:
        (lo, hi) of κ; (NaN, NaN) without resamples.
    """
    if model.boot.shape[0] == 0:
        return math.nan, math.nan
    k = np.array([_predict(a, b, c, "eta" in model.identified and c != 0.0, lam, eta) for a, b, c in model.boot])
    k = k[np.isfinite(k)]
    if k.size == 0:
        return math.nan, math.nan
    alpha = (1.0 - model.confidence) / 2.0
    return float(np.quantile(k, alpha)), float(np.quantile(k, 1.0 - alpha))


def describe(model: KappaModel) -> str:
    """One line: the fitted form, e.g. "κ = 0.031·λ^-0.71 (λ-only: η not identified; 35 runs)".

    Args:
        model: the fitted κ model.

    Returns:
        The line.
    """
    if not np.isfinite(model.a):
        return "κ: no calibration run"
    if not model.identified:
        return f"κ = {math.exp(model.a):.3g} (the pooled median: no λ or η spread; {model.n} runs)"
    text = f"κ = {math.exp(model.a):.3g}·λ^{model.b:.3g}"
    text += f"·η^{model.c:.3g}" if "eta" in model.identified else ""
    note = "" if "eta" in model.identified else " (λ only: η not identified)"
    return f"{text}{note}; {model.n} runs"


__all__ = ["describe", "fit", "interval"]
