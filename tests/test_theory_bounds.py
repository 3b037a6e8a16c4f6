"""The bound functions of nht_jax.theory.bounds and the contraction fit, against hand-computed values."""

import numpy as np
import pytest

from nht_jax.optim import gamma_eff
from nht_jax.theory import bounds
from nht_jax.theory.contraction import aggregate, amplification, fit_after_peak, fit_exponential


def test_one_step_and_unrolled_bounds():
    assert bounds.one_step_bound(10.0, 0.1, 0.5, 2.0) == pytest.approx(0.95 * 10 + 0.01 * 2)
    # iterating the one-step bound k times equals the closed multi-step form
    v = 7.0
    for _ in range(5):
        v = bounds.one_step_bound(v, 0.1, 0.5, 2.0)
    assert bounds.multi_step_bound(7.0, 0.1, 0.5, 2.0, 5) == pytest.approx(v, rel=1e-12)
    assert bounds.noise_floor(0.1, 0.5, 2.0) == pytest.approx(0.4)
    # the paper's unrolled form dominates the exact iterate and tends to V_∞
    assert bounds.unrolled_bound(5, 7.0, 0.1, 0.5, 2.0) >= v
    assert bounds.unrolled_bound(1e6, 7.0, 0.1, 0.5, 2.0) == pytest.approx(0.4)


def test_escape_time_upper_solves_the_bound_and_is_void_below_the_floor():
    eta, lam, s2, v_sc, v_st = 0.1, 0.2, 0.5, 100.0, 2.0
    t_up, t_paper = bounds.escape_time_upper(v_sc, v_st, eta, lam, s2)
    assert bounds.unrolled_bound(t_up, v_sc, eta, lam, s2) == pytest.approx(v_st, rel=1e-12)
    assert t_paper >= t_up  # (1/ηλ) log(...) is the looser paper form
    t_void, _ = bounds.escape_time_upper(v_sc, 0.2, eta, lam, s2)  # V_st = 0.2 < V_∞ = 0.25
    assert np.isnan(t_void)


def test_escape_time_lower_and_the_paper_form_is_not_a_lower_bound():
    eta, lam, c = 0.1, 0.5, 4.0  # cηλ = 0.2
    t_low, t_paper = bounds.escape_time_lower(100.0, 1.0, eta, lam, c)
    assert 100.0 * (1 - c * eta * lam) ** t_low == pytest.approx(1.0, rel=1e-12)
    assert t_paper > t_low  # (cηλ)⁻¹ log exceeds the exact lower bound for finite cηλ
    assert np.isnan(bounds.escape_time_lower(100.0, 1.0, 1.0, 1.0, 2.0)[0])  # cηλ ≥ 1


def test_gamma_eff_conventions_and_layer_rate():
    eta, lam = 0.01, 0.5
    assert bounds.contraction_c("sgd", eta, lam) == pytest.approx(4 - 4 * eta * lam)
    assert bounds.contraction_c("adamw", eta, lam) == pytest.approx(2 - eta * lam)
    assert bounds.gamma_eff("sgdw", eta, lam) == pytest.approx(gamma_eff("sgdw", eta, lam))
    assert bounds.layer_gamma_eff(0.1, 0.2, 0.5, 3.0) == pytest.approx(0.02 + 0.15)
    assert bounds.layer_gamma_eff(0.1, 0.2, 0.5, 3.0, factor=2) == pytest.approx(0.02 + 0.3)
    assert bounds.step_size_condition(0.01, 0.1, 5.0) and not bounds.step_size_condition(0.03, 0.1, 5.0)
    for name in ("sgd", "sgdw", "adamw", "sgd_momentum", "sgdw_momentum"):
        assert bounds.convention(name)


def test_exponential_fit_recovers_rate_and_amplification():
    t = np.arange(0, 2000, 10.0)
    eta, lam = 0.1, 0.01
    r = (1 - 2 * eta * lam) ** 2  # ℓ2 sgd, null-space contraction
    fit = fit_exponential(t, 50.0 * r ** t + 3.0)
    assert fit["status"] == "ok"
    assert fit["r"] == pytest.approx(r, rel=1e-9)
    assert fit["C"] == pytest.approx(3.0, rel=1e-6) and fit["A"] == pytest.approx(50.0, rel=1e-6)
    assert amplification(fit["rate"], "sgd", eta, lam) == pytest.approx(1.0, abs=1e-6)
    # decoupled convention: the same trajectory is twice as fast as adamw's weight decay alone
    assert amplification(fit["rate"], "adamw", eta, lam) == pytest.approx(2.0, rel=1e-2)


def test_fit_starts_at_the_peak_and_reports_unfittable_cases():
    t = np.arange(0, 100, 1.0)
    v = np.where(t < 20, t, 20 * 0.9 ** (t - 20))
    assert fit_after_peak(t, v)["peak_step"] == 19 or fit_after_peak(t, v)["peak_step"] == 20
    assert fit_exponential(t[:3], v[:3])["status"] == "too few points"
    assert fit_exponential(t, np.full_like(t, 5.0))["status"] != "ok"  # a constant has no resolvable rate
    assert fit_exponential(t, 1 + t)["status"] != "ok"  # a growing norm is not contracting
    agg = aggregate([1.0, 2.0, np.nan, 3.0])
    assert agg["n"] == 3 and agg["median"] == 2.0
