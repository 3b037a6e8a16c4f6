"""The bound functions of nht_jax.theory.bounds and the contraction fit, against hand-computed values."""

import numpy as np
import pytest

from nht_jax.theory import bounds
from nht_jax.theory.realised_rate import aggregate, amplification, fit_after_peak, fit_exponential


def test_one_step_and_unrolled_bounds():
    assert bounds.one_step_bound(10.0, 0.1, 0.5, 2.0) == pytest.approx(0.95 * 10 + 0.01 * 2)
    # iterating the one-step bound k times equals the closed multi-step form
    v = 7.0
    for _ in range(5):
        v = bounds.one_step_bound(v, 0.1, 0.5, 2.0)
    assert bounds.multi_step_bound(7.0, 0.1, 0.5, 2.0, 5) == pytest.approx(v, rel=1e-12)
    assert bounds.multi_step_bound(7.0, 0.1, 0.5, 2.0, 1) == pytest.approx(0.95 * 7 + 0.01 * 2, rel=1e-12)
    assert bounds.noise_floor(0.1, 0.5, 2.0) == pytest.approx(0.4)
    # the paper's unrolled form dominates the exact iterate and tends to V_∞
    assert bounds.unrolled_bound(5, 7.0, 0.1, 0.5, 2.0) == pytest.approx(0.95**5 * 7 + 0.4, rel=1e-12)
    assert bounds.unrolled_bound(5, 7.0, 0.1, 0.5, 2.0) >= v
    assert bounds.unrolled_bound(1e6, 7.0, 0.1, 0.5, 2.0) == pytest.approx(0.4)


def test_escape_time_upper_solves_the_bound_and_is_void_below_the_floor():
    eta, lam, s2, v_sc, v_st = 0.1, 0.2, 0.5, 100.0, 2.0  # ηλ = 0.02, V_∞ = ησ²/λ = 0.25
    t_up, t_paper = bounds.escape_time_upper(v_sc, v_st, eta, lam, s2)
    assert t_up == pytest.approx(np.log(100.0 / 1.75) / -np.log(0.98), rel=1e-12)
    assert t_paper == pytest.approx(np.log(100.0 / 1.75) / 0.02, rel=1e-12)
    assert bounds.unrolled_bound(t_up, v_sc, eta, lam, s2) == pytest.approx(v_st, rel=1e-12)
    assert t_paper >= t_up  # (1/ηλ) log(...) is the looser paper form
    t_void, t_void_paper = bounds.escape_time_upper(v_sc, 0.2, eta, lam, s2)  # V_st = 0.2 < V_∞ = 0.25
    assert np.isnan(t_void) and np.isnan(t_void_paper)
    assert bounds.escape_time_upper(1.0, 2.0, eta, lam, 0.0) == (0.0, 0.0)  # already below the target


def test_escape_time_lower_and_the_paper_form_is_not_a_lower_bound():
    eta, lam, c = 0.1, 0.5, 4.0  # cηλ = 0.2
    t_low, t_paper = bounds.escape_time_lower(100.0, 1.0, eta, lam, c)
    assert t_low == pytest.approx(np.log(100.0) / -np.log(0.8), rel=1e-12)
    assert t_paper == pytest.approx(np.log(100.0) / 0.2, rel=1e-12)
    assert 100.0 * (1 - c * eta * lam) ** t_low == pytest.approx(1.0, rel=1e-12)
    assert t_paper > t_low  # (cηλ)⁻¹ log exceeds the exact lower bound for finite cηλ
    assert np.isnan(bounds.escape_time_lower(100.0, 1.0, 1.0, 1.0, 2.0)[0])  # cηλ ≥ 1


# γ_eff by hand (η = 0.1, λ = 0.5, ηλ = 0.05): decoupled θ ← (1 − ηλ)θ, so V ← (1 − ηλ)²V and
# γ = 1 − 0.95² = ηλ(2 − ηλ) = 0.0975; ℓ2 θ ← (1 − 2ηλ)θ, γ = 1 − 0.9² = 2ηλ(2 − 2ηλ) = 0.19.
GAMMA_BY_HAND = [("adamw", 0.0975), ("sgdw", 0.0975), ("sgdw_momentum", 0.0975), ("sgd", 0.19)]


@pytest.mark.parametrize("name, gamma", GAMMA_BY_HAND)
def test_gamma_eff_hand_values(name, gamma):
    assert bounds.gamma_eff(name, 0.1, 0.5) == pytest.approx(gamma, rel=1e-12)
    assert bounds.contraction_c(name, 0.1, 0.5) == pytest.approx(gamma / 0.05, rel=1e-12)
    # V after one step of weight decay alone, from the per-step shrink of θ
    assert 1 - bounds.gamma_eff(name, 0.1, 0.5) == pytest.approx((1 - bounds.theta_shrink(name, 0.1, 0.5)) ** 2)


def test_gamma_eff_of_heavy_ball_momentum_by_hand():
    # ℓ2 heavy ball on λ‖θ‖²: θ_{t+1} = (1 + β − 2ηλ)θ_t − βθ_{t−1}, r² − (1 + β − 2ηλ)r + β = 0.
    # η = 0.1, λ = 0.25, β = 0.45: r² − 1.4r + 0.45 = (r − 0.9)(r − 0.5), slowest mode r = 0.9, γ = 1 − 0.81.
    assert bounds.gamma_eff("sgd_momentum", 0.1, 0.25, momentum=0.45) == pytest.approx(0.19, rel=1e-12)
    # complex roots (β = 0.9, 2ηλ = 0.1: 1.8² < 4·0.9): |r|² = β, γ = 1 − β = 0.1
    assert bounds.gamma_eff("sgd_momentum", 0.1, 0.5, momentum=0.9) == pytest.approx(0.1, rel=1e-12)
    # β = 0 is plain ℓ2 sgd
    assert bounds.gamma_eff("sgd_momentum", 0.1, 0.5, momentum=0.0) == pytest.approx(0.19, rel=1e-12)


def test_gamma_eff_broadcasts_and_the_theory_rate_is_eta_lambda():
    eta, lam = np.array([0.1, 0.01]), np.array([0.5, 0.5])
    np.testing.assert_allclose(bounds.gamma_eff("adamw", eta, lam), [0.0975, 0.005 * 1.995], rtol=1e-12)
    np.testing.assert_allclose(bounds.gamma_eff("sgd", eta, lam), [0.19, 0.01 * 1.99], rtol=1e-12)
    np.testing.assert_allclose(bounds.gamma_theory(eta, lam), [0.05, 0.005], rtol=1e-12)
    np.testing.assert_allclose(bounds.theta_shrink("adamw", eta, lam), [0.05, 0.005], rtol=1e-12)
    np.testing.assert_allclose(bounds.theta_shrink("sgd", eta, lam), [0.1, 0.01], rtol=1e-12)
    with pytest.raises(ValueError):
        bounds.gamma_eff("lion", 0.1, 0.5)


def test_contraction_constant_and_layer_rate():
    eta, lam = 0.01, 0.5
    assert bounds.contraction_c("sgd", eta, lam) == pytest.approx(4 - 4 * eta * lam)
    assert bounds.contraction_c("adamw", eta, lam) == pytest.approx(2 - eta * lam)
    assert bounds.layer_gamma_eff(0.1, 0.2, 0.5, 3.0) == pytest.approx(0.02 + 0.15)
    assert bounds.layer_gamma_eff(0.1, 0.2, 0.5, 3.0, factor=2) == pytest.approx(0.02 + 0.3)
    assert bounds.step_size_condition(0.01, 0.1, 5.0) and not bounds.step_size_condition(0.03, 0.1, 5.0)
    assert bounds.step_size_condition(0.02, 0.1, 5.0)  # η = λ/L exactly is allowed
    assert "the theory's update rule" in bounds.convention("sgd")
    for name in ("sgdw", "adamw", "sgd_momentum", "sgdw_momentum"):
        assert "not the theory's rule" in bounds.convention(name)


def test_exponential_fit_recovers_rate_and_amplification():
    t = np.arange(0, 2000, 10.0)
    eta, lam = 0.1, 0.01
    r = (1 - 2 * eta * lam) ** 2  # ℓ2 sgd, null-space contraction
    fit = fit_exponential(t, 50.0 * r**t + 3.0)
    assert fit["status"] == "ok"
    assert fit["r"] == pytest.approx(r, rel=1e-9)
    assert fit["C"] == pytest.approx(3.0, rel=1e-6) and fit["A"] == pytest.approx(50.0, rel=1e-6)
    assert amplification(fit["rate"], "sgd", eta, lam) == pytest.approx(1.0, abs=1e-6)
    # decoupled convention: −log r / −log(1 − ηλ)² = log(0.998)/log(0.999)
    assert amplification(fit["rate"], "adamw", eta, lam) == pytest.approx(np.log(0.998) / np.log(0.999), rel=1e-6)
    assert np.isnan(amplification(fit["rate"], "sgd", eta, 0.0))  # λ = 0: no weight-decay rate


def test_fit_starts_at_the_peak_and_reports_unfittable_cases():
    t = np.arange(0, 100, 1.0)
    v = np.where(t < 20, t, 20 * 0.9 ** (t - 20))
    fit = fit_after_peak(t, v)
    assert fit["peak_step"] == 20 and fit["status"] == "ok" and fit["r"] == pytest.approx(0.9, rel=1e-9)
    assert fit_exponential(t[:3], v[:3])["status"] == "too few points"
    assert fit_exponential(t, np.full_like(t, 5.0))["status"] != "ok"  # a constant has no resolvable rate
    assert fit_exponential(t, 1 + t)["status"] != "ok"  # a growing norm is not contracting
    assert np.isnan(fit_after_peak(t, np.full_like(t, np.nan))["peak_step"])
    agg = aggregate([1.0, 2.0, np.nan, 3.0])
    assert agg == {"n": 3, "median": 2.0, "q25": 1.5, "q75": 2.5, "min": 1.0, "max": 3.0}
    assert aggregate([np.nan])["n"] == 0
