"""The exact toy models: engine-trained trajectories against closed forms, and checks that can fail."""

import jax
import numpy as np
import pytest

from nht_jax.theory import bounds, verify
from nht_jax.theory import toy_models as tm


@pytest.fixture(scope="module")
def linear():
    return tm.linear_problem()


# Every run of model (a)/(c) on the default problem that the tests below need, trained as one compiled grid:
# name → (η, λ, ‖null offset‖², row offset, σ², seeds)
LINEAR_RUNS = {
    "closed form": ([0.1, 0.2, 0.05], [0.02, 0.05, 0.05], [100.0, 10.0, 1000.0], 0.0, 0.0, 1),
    "inequality": ([0.1, 0.2], [0.02, 0.01], 100.0, 2.0, 0.0, 1),
    "literal": (0.1, 0.05, 1000.0, 0.0, 0.0, 1),
    "noisy": (0.1, 0.05, 50.0, 0.0, 1.0, 128),
}
LINEAR_STEPS = 1500


@pytest.fixture(scope="module")
def linear_runs(linear):
    """{name: {"norm_sq", "excess_sq", "null_norm_sq": (runs, LINEAR_STEPS + 1)}} for every entry of LINEAR_RUNS (seeds 0, 1, ...)."""
    blocks = []
    for eta, lam, null, row, s2, seeds in LINEAR_RUNS.values():
        size = max(np.size(eta), np.size(lam), np.size(null), seeds)
        cols = [np.broadcast_to(np.asarray(x, np.float64), (size,)) for x in (eta, lam, null, row, s2)]
        blocks.append(cols + [np.arange(size) if seeds > 1 else np.zeros(size, int)])
    grid = [np.concatenate(col) for col in zip(*blocks)]
    with jax.enable_x64(True):
        out = tm.run_linear_grid(linear, LINEAR_STEPS, *grid)
    ends = np.cumsum([len(b[0]) for b in blocks])
    return {
        name: {k: v[end - len(b[0]) : end] for k, v in out.items()} for name, b, end in zip(LINEAR_RUNS, blocks, ends)
    }


def test_linear_model_matches_closed_form_and_transition_time(linear, linear_runs):
    eta, lam, null = (np.asarray(x) for x in LINEAR_RUNS["closed form"][:3])
    out = linear_runs["closed form"]
    assert out["norm_sq"].dtype == np.float64 and out["norm_sq"].shape == (3, LINEAR_STEPS + 1)
    for i in range(3):
        exact = tm.linear_mean_trajectory(linear, LINEAR_STEPS, eta[i], lam[i], null[i])
        np.testing.assert_allclose(out["norm_sq"][i], exact["V"], rtol=1e-10)
        excess = out["norm_sq"][i] - exact["ridge_sq"]
        t_c, t_int = tm.null_transition_time(eta[i], lam[i], 1e-2)
        assert tm.log_linear_crossing(excess, 1e-2 * null[i]) == pytest.approx(t_c, rel=1e-6)
        assert tm.first_crossing(excess, 1e-2 * null[i]) == t_int
    # the target is the ridge solution, which differs from the min-norm interpolant for λ > 0
    ridge, mn = tm.ridge_solution(linear, 0.05), tm.min_norm_interpolant(linear)
    assert np.sum(ridge**2) < np.sum(mn**2)
    np.testing.assert_allclose(tm.ridge_solution(linear, 1e-9), mn, atol=1e-6)


def test_inequality_holds_exactly_for_plain_sgd_at_zero_noise_and_fails_when_violated(linear, linear_runs):
    eta, lam = (np.asarray(x) for x in LINEAR_RUNS["inequality"][:2])
    bad_eta = 1.999 / (linear.h.max() + 2 * lam)
    stiff = linear._replace(row_dir=linear.Q[:, -1])
    good = linear_runs["inequality"]
    with jax.enable_x64(True):
        bad = tm.run_linear_grid(stiff, 200, bad_eta, lam, 0.0, 3.0)
    assert verify.lyapunov_holds(good["excess_sq"], eta, lam, atol=verify.rounding_floor(good["norm_sq"][:, 0])).all()
    assert not verify.lyapunov_holds(
        bad["excess_sq"], bad_eta, lam, atol=verify.rounding_floor(bad["norm_sq"][:, 0])
    ).any()
    assert not verify.check_violation_detected(np.array([True, False])).ok


def test_literal_norm_inequality_breaks_at_the_closed_form_step(linear, linear_runs):
    eta, lam, null = LINEAR_RUNS["literal"][:3]
    v = linear_runs["literal"]["norm_sq"][0]
    ok = v[1:] <= (1 - eta * lam) * v[:-1]
    ridge_sq = float(np.sum(tm.ridge_solution(linear, lam) ** 2))
    assert int(np.argmin(ok)) == tm.l2_lyapunov_failure_step(eta, lam, null, ridge_sq)


def test_transition_check_fails_on_the_wrong_convention(linear):
    eta, lam = np.array([0.1, 0.05]), np.array([0.02, 0.05])
    t_c, t_int = tm.null_transition_time(eta, lam, 1e-2)
    assert verify.check_transition_times(t_c, t_c, t_int, t_int).ok
    # decoupled decay (θ shrinks by 1 − ηλ) would predict twice the time: the check must reject it
    t_wrong, t_wrong_int = tm.null_transition_time(eta, lam / 2, 1e-2)
    assert not verify.check_transition_times(t_c, t_wrong, t_int, t_wrong_int).ok
    assert not verify.check_trajectories(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-8])).ok


def test_noisy_model_mean_and_noise_floor(linear, linear_runs):
    eta, lam, null, _, s2, seeds = LINEAR_RUNS["noisy"]
    steps = 600
    u = linear_runs["noisy"]["excess_sq"][:, : steps + 1]
    exact = tm.linear_mean_trajectory(linear, steps, eta, lam, null, 0.0, s2)
    sub = slice(25, None, 25)
    mean, se = u.mean(0)[sub], u.std(0, ddof=1)[sub] / np.sqrt(seeds)
    assert verify.check_mean_trajectory(mean, se, exact["U"][sub], "(c)").ok
    assert not verify.check_mean_trajectory(mean, se, 1.5 * exact["U"][sub], "(c)").ok  # a wrong mean is caught
    floor = tm.linear_stationary_excess(linear, eta, lam, s2)
    assert floor <= bounds.noise_floor(eta, lam, s2)
    assert exact["U"][-1] == pytest.approx(floor, rel=1e-3)
    # the unrolled bound holds for the exact mean at every step
    assert np.all(exact["U"] <= bounds.unrolled_bound(np.arange(steps + 1), null, eta, lam, s2) * (1 + 1e-12))
    # a target below the noise floor: the upper bound is void and says so
    t_void = bounds.escape_time_upper(null, 0.5 * float(bounds.noise_floor(eta, lam, s2)), eta, lam, s2)[0]
    assert verify.check_violation_reported(t_void, 1.0, 2.0, False).ok
    assert not verify.check_violation_reported(123.0, 1.0, 2.0, False).ok


def test_diagonal_network_balance_identity_and_kernel_first():
    problem = tm.sparse_problem()
    eta, lam, alpha = np.array([0.04, 0.02]), np.array([0.01, 0.01]), np.array([2.0, 4.0])
    with jax.enable_x64(True):
        short = tm.run_diagonal_grid(problem, 200, eta, lam, alpha, log_every=1)
        out = tm.run_diagonal_grid(problem, 8000, eta, lam, alpha, log_every=10)
    assert verify.check_balance_identity(short["delta"], short["r"], eta, lam).ok
    assert not verify.check_balance_identity(short["delta"], short["r"], eta, lam / 2).ok  # the decoupled rate fails
    kernel = tm.kernel_interpolant(problem)
    kernel_err = np.sum((kernel - problem.w_star) ** 2) / np.sum(problem.w_star**2)
    i_fit = [int(tm.first_crossing(x, 1e-3 * x[0])) for x in out["train_loss"]]
    assert verify.check_kernel_first(
        out["recovery_error"][[0, 1], i_fit], kernel_err, out["norm_sq"][[0, 1], i_fit], out["norm_sq"][:, -1]
    ).ok
    assert np.all(out["recovery_error"][:, -1] < 1e-2)  # the sparse solution is reached
    t_tr = np.array([tm.first_crossing(x, 0.05) * 10 for x in out["recovery_error"]])
    rate = -2 * np.log(1 - 2 * eta * lam)
    # same λ, twice η and α²/4: T·rate − log α² is the same constant (one Δ_c)
    kappa = t_tr * rate - np.log(alpha**2)
    assert abs(kappa[0] - kappa[1]) < 0.1
    claims = verify.check_time_scale(np.array([100.0, 300.0, 500.0]), [0.1] * 3, [0.01] * 3, [2.0, 4.0, 8.0])
    assert not all(c.ok for c in claims)  # times that ignore the law fail the check
