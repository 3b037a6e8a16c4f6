"""`nht paper verify-bounds`: every claim of theory/*.md checked on the exact toy models, printed [OK] / [!!].

Each `check_*` function is pure: it takes measured and closed-form numbers and returns Claims, so tests
can feed it a deliberately wrong closed form (or a violating run) and see it fail. `run_all` trains the
toy models (float64, vmapped scans through the engine's ℓ2 "sgd") and applies every check.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from nht_jax.theory import bounds
from nht_jax.theory import toy_models as tm
from nht_jax.theory.realised_rate import amplification, fit_after_peak


@dataclass(frozen=True)
class Claim:
    text: str
    ok: bool
    measured: str
    tolerance: str

    def line(self) -> str:
        return f"[{'OK' if self.ok else '!!'}] {self.text}: {self.measured} (tolerance {self.tolerance})"


# ----------------------------------------------------------------------------- pure checks


def check_trajectories(measured: np.ndarray, exact: np.ndarray, rtol: float = 1e-10) -> Claim:
    """V_t trained through the engine equals the eigen closed form at every step.

    Args:
        measured: V_t trained, per (run, step).
        exact: the closed form.
        rtol: the tolerance, relative.

    Returns:
        The Claim.
    """
    err = float(np.max(np.abs(measured - exact) / np.abs(exact)))
    return Claim(
        "(a) V_t trained through the engine equals the eigen closed form at every step",
        err <= rtol,
        f"max relative error {err:.2e} over {measured.size} values",
        f"{rtol:g} relative",
    )


def check_transition_times(measured_c, closed_c, measured_int, closed_int, rtol: float = 1e-6) -> Claim:
    """Continuous crossing times (log-linear interpolation) and integer first-crossing steps.

    Args:
        measured_c: the measured continuous crossing times.
        closed_c: their closed form.
        measured_int: the measured integer first-crossing steps.
        closed_int: their closed form.
        rtol: the tolerance on the continuous times, relative.

    Returns:
        The Claim.
    """
    rel = float(np.max(np.abs(np.asarray(measured_c) - closed_c) / closed_c))
    same = bool(np.array_equal(measured_int, closed_int))
    return Claim(
        "(a) transition time T = log(1/ε)/(−2 log(1 − 2ηλ)), measured vs closed form",
        rel <= rtol and same,
        f"max relative error {rel:.2e}, integer steps equal: {same} ({np.size(closed_c)} runs, "
        f"T from {np.min(closed_c):.0f} to {np.max(closed_c):.0f})",
        f"{rtol:g} relative, exact integers",
    )


def lyapunov_holds(u: np.ndarray, eta, lam, sigma2=0.0, slack: float = 1e-12, atol: float = 0.0) -> np.ndarray:
    """Per run: True where U_{t+1} ≤ (1 − ηλ)U_t + η²σ² at every step, up to `slack` relative and `atol`
    absolute (float64 resolves θ to ~1e-16‖θ‖, so U below ~1e3·ε²‖θ‖² is rounding noise)."""
    bound = bounds.one_step_bound(u[..., :-1], np.asarray(eta)[..., None], np.asarray(lam)[..., None], sigma2)
    return np.all(u[..., 1:] <= bound * (1 + slack) + atol, axis=-1)


def rounding_floor(v0) -> float:
    """1e3·ε²·max V_0: squared distances below this are float64 rounding of θ, not dynamics."""
    return 1e3 * np.finfo(np.float64).eps ** 2 * float(np.max(v0))


def check_lyapunov_exact(holds: np.ndarray, predicted: np.ndarray, step_size_ok: np.ndarray) -> list[Claim]:
    """The one-step inequality on U = ‖θ − θ_λ‖² at zero noise: it holds at every step exactly where
    max_i (1 − η(h_i + 2λ))² ≤ 1 − ηλ; the paper's η ≤ λ/L is reported, not assumed.

    Args:
        holds: per run, whether the inequality held at every step.
        predicted: per run, whether max_i (1 − η(h_i + 2λ))² ≤ 1 − ηλ.
        step_size_ok: per run, whether η ≤ λ/L.

    Returns:
        Two Claims: the inequality, and the assumption reported.
    """
    agree = bool(np.array_equal(holds, predicted))
    claims = [
        Claim(
            "(a) one-step inequality E[V_{t+1}] ≤ (1 − ηλ)V_t, σ = 0, V = ‖θ − θ_λ‖², every step",
            agree and bool(holds[predicted].all()),
            f"holds in {int(holds.sum())}/{holds.size} runs, exactly where max_i a_i² ≤ 1 − ηλ predicts "
            f"({int(predicted.sum())}/{predicted.size})",
            "exact up to 1e-12 relative and the rounding floor 1e3·ε²·V_0",
        )
    ]
    claims.append(
        Claim(
            "(a) the assumption η ≤ λ/L is reported per run (sufficient, not necessary here)",
            bool(np.all(holds[step_size_ok])),
            f"η ≤ λ/L in {int(step_size_ok.sum())}/{step_size_ok.size} runs; the inequality held in "
            f"{int(holds[~step_size_ok].sum())} of the {int((~step_size_ok).sum())} runs violating it",
            "every run with η ≤ λ/L must satisfy the inequality",
        )
    )
    return claims


def check_literal_failure(first_fail: np.ndarray, closed: np.ndarray) -> Claim:
    """With V = ‖θ‖² the one-step inequality breaks at the step its closed form says (`l2_lyapunov_failure_step`).

    Args:
        first_fail: the first failing step of each run, measured.
        closed: the same from the closed form.

    Returns:
        The Claim.
    """
    same = bool(np.array_equal(first_fail, closed))
    return Claim(
        "(a) with V = ‖θ‖² (attractor θ_λ ≠ 0) the inequality breaks at t = first N_t < ‖θ_λ‖²/(3 − 4ηλ)",
        same,
        f"first failing steps {first_fail.tolist()} vs closed form {closed.tolist()}",
        "exact integers",
    )


def check_escape_window(delay, t_lower, t_upper, label: str, tight_lower: bool = False, rtol: float = 1e-6) -> Claim:
    """The measured time lies in [T_lower, T_upper] in every run.

    Args:
        delay: the measured time of each run, in steps.
        t_lower: T_lower of each run (`escape_time_lower`).
        t_upper: T_upper of each run (`escape_time_upper`).
        label: the claim's prefix.
        tight_lower: also claim the lower bound attained.
        rtol: the tolerance at the edges, relative.

    Returns:
        The Claim.
    """
    delay, t_lower, t_upper = (np.asarray(x, np.float64) for x in (delay, t_lower, t_upper))
    inside = (delay >= t_lower * (1 - rtol)) & (delay <= t_upper * (1 + rtol))
    ok = bool(inside.all())
    extra = ""
    if tight_lower:
        rel = float(np.max(np.abs(delay - t_lower) / t_lower))
        ok = ok and rel <= rtol
        extra = f", lower bound attained (max rel. gap {rel:.1e})"
    return Claim(
        f"{label} measured time in [T_lower, T_upper]",
        ok,
        f"{int(inside.sum())}/{inside.size} inside; T_upper/T {np.min(t_upper / delay):.2f}–"
        f"{np.max(t_upper / delay):.2f}{extra}",
        f"{rtol:g} relative at the edges",
    )


def check_amplification(amp, target: float, atol: float, label: str) -> Claim:
    """The realised rate's ratio to the weight-decay rate equals `target` in every run.

    Args:
        amp: the ratio of each run (`amplification`).
        target: the ratio claimed.
        atol: the tolerance, absolute.
        label: the claim's prefix.

    Returns:
        The Claim.
    """
    amp = np.asarray(amp, np.float64)
    err = float(np.max(np.abs(amp - target)))
    return Claim(
        f"{label} realised rate −log r / −log(1 − γ_eff) = {target:g}",
        bool(np.isfinite(amp).all() and err <= atol),
        f"range {np.min(amp):.6f}–{np.max(amp):.6f} over {amp.size} runs",
        f"±{atol:g}",
    )


def check_balance_identity(delta: np.ndarray, r: np.ndarray, eta, lam, rtol: float = 1e-12) -> Claim:
    """Δ_{t+1} = ((1 − 2ηλ)² − η² r_t²) Δ_t at every step and coordinate (runs, steps + 1, d).

    Args:
        delta: Δ, shape (runs, steps + 1, d).
        r: r_t, shape (runs, steps + 1, d).
        eta: η of each run.
        lam: λ of each run.
        rtol: the tolerance, relative.

    Returns:
        The Claim.
    """
    pred = tm.balance_factor(np.asarray(eta)[:, None, None], np.asarray(lam)[:, None, None], r[:, :-1]) * delta[:, :-1]
    err = float(np.max(np.abs(delta[:, 1:] - pred) / np.maximum(np.abs(pred), 1e-300)))
    return Claim(
        "(b) balancedness Δ_{t+1} = ((1 − 2ηλ)² − η²r_t²)Δ_t, every step and coordinate",
        err <= rtol,
        f"max relative error {err:.1e}",
        f"{rtol:g} relative",
    )


def check_time_scale(t_trans, eta, lam, alpha, slope_tol: float = 0.03, spread_tol: float = 0.1) -> list[Claim]:
    """T·r = log(α²) − log Δ_c with the balancedness decay rate r = −2 log(1 − 2ηλ): slope 1 in log α², one Δ_c
    for the whole grid.

    Args:
        t_trans: the transition step of each run.
        eta: η of each run.
        lam: λ of each run.
        alpha: α of each run (Δ_0 = α²).
        slope_tol: the tolerance on the slope, absolute.
        spread_tol: the tolerance on the spread of log Δ_c.

    Returns:
        Two Claims: the slope, and one Δ_c.
    """
    rate = -2.0 * np.log(1.0 - 2.0 * np.asarray(eta) * np.asarray(lam))
    x, y = np.log(np.asarray(alpha) ** 2), np.asarray(t_trans) * rate
    slope = float(np.polyfit(x, y, 1)[0])
    kappa = y - x
    spread = float(np.max(kappa) - np.min(kappa))
    return [
        Claim(
            "(b) T·(−2 log(1 − 2ηλ)) grows with slope 1 in log Δ_0 = log α²",
            abs(slope - 1) <= slope_tol,
            f"slope {slope:.4f} over {np.size(x)} runs",
            f"±{slope_tol:g}",
        ),
        Claim(
            "(b) one Δ_c for the grid: T = log(Δ_0/Δ_c)/(−2 log(1 − 2ηλ))",
            spread <= spread_tol,
            f"log Δ_c = {-np.mean(kappa):.3f}, spread {spread:.3f} across (η, λ, α)",
            f"{spread_tol:g} in log Δ_c",
        ),
    ]


def check_kernel_first(err_at_fit, kernel_err, v_fit, v_final, ratio_min: float = 0.8) -> Claim:
    """The high-norm (kernel) interpolant is reached first: the error at T_fit is near the kernel interpolant's, and
    V falls after T_fit.

    Args:
        err_at_fit: the recovery error of each run at T_fit.
        kernel_err: the kernel interpolant's recovery error.
        v_fit: V of each run at T_fit.
        v_final: V of each run at the end.
        ratio_min: the least error ratio (at T_fit over the kernel's) claimed.

    Returns:
        The Claim.
    """
    ratio = np.asarray(err_at_fit) / kernel_err
    ok = bool(np.all(ratio >= ratio_min) and np.all(np.asarray(v_fit) > np.asarray(v_final)))
    return Claim(
        "(b) the high-norm (kernel) interpolant is reached first",
        ok,
        f"error at T_fit / kernel-interpolant error ≥ {np.min(ratio):.2f}; V(T_fit)/V_final ≥ "
        f"{np.min(np.asarray(v_fit) / v_final):.1f}",
        f"ratio ≥ {ratio_min:g} and V(T_fit) > V_final",
    )


def check_mean_trajectory(mc_mean, mc_se, exact, label: str, z_max: float = 5.0) -> Claim:
    """The Monte-Carlo mean of V_t equals the closed-form E[V_t] within `z_max` standard errors.

    Args:
        mc_mean: the Monte-Carlo mean of V_t, per (run, step).
        mc_se: its standard error.
        exact: the closed-form E[V_t].
        label: the claim's prefix.
        z_max: the tolerance, in standard errors.

    Returns:
        The Claim.
    """
    z = np.abs(mc_mean - exact) / np.maximum(mc_se, 1e-300)
    return Claim(
        f"{label} Monte-Carlo mean of V_t equals the closed-form E[V_t]",
        bool(np.max(z) <= z_max),
        f"max |z| = {np.max(z):.2f} over {z.size} (run, step) points",
        f"|z| ≤ {z_max:g} standard errors",
    )


def check_noise_floor(exact_floor, v_inf, mc_floor, mc_se, z_max: float = 5.0) -> list[Claim]:
    """The exact noise floor lies under V_∞ = ησ²/λ, and the measured late-time floor equals it.

    Args:
        exact_floor: the exact floor lim E‖θ − θ_λ‖² of each run.
        v_inf: V_∞ of each run.
        mc_floor: the measured late-time floor.
        mc_se: its standard error.
        z_max: the tolerance, in standard errors.

    Returns:
        Two Claims.
    """
    exact_floor, v_inf = np.asarray(exact_floor), np.asarray(v_inf)
    z = np.abs(np.asarray(mc_floor) - exact_floor) / np.asarray(mc_se)
    return [
        Claim(
            "(c) exact noise floor lim E‖θ − θ_λ‖² ≤ V_∞ = ησ²/λ",
            bool(np.all(exact_floor <= v_inf)),
            f"floor / V_∞ = {np.min(exact_floor / v_inf):.3f}–{np.max(exact_floor / v_inf):.3f} "
            f"(null-space noise contracts at (1 − 2ηλ)², about 4× the bound's rate ηλ)",
            "≤ 1",
        ),
        Claim(
            "(c) measured late-time E‖θ − θ_λ‖² equals the exact floor",
            bool(np.max(z) <= z_max),
            f"max |z| = {np.max(z):.2f}",
            f"|z| ≤ {z_max:g}",
        ),
    ]


def check_unrolled_bound(mean_u, se_u, bound_u, label: str, z_max: float = 5.0) -> Claim:
    """E[V_t] ≤ (1 − ηλ)^t V_0 + V_∞ at every step, within `z_max` standard errors.

    Args:
        mean_u: the Monte-Carlo mean, per (run, step).
        se_u: its standard error.
        bound_u: the unrolled bound (`unrolled_bound`).
        label: the claim's prefix.
        z_max: the tolerance, in standard errors.

    Returns:
        The Claim.
    """
    excess = (np.asarray(mean_u) - bound_u) / np.maximum(se_u, 1e-300)
    return Claim(
        f"{label} E[V_t] ≤ (1 − ηλ)^t V_0 + V_∞ at every step",
        bool(np.max(excess) <= z_max),
        f"max (mean − bound)/SE = {np.max(excess):.1f}; min bound/mean = {np.min(bound_u / mean_u):.3f}",
        f"mean ≤ bound + {z_max:g} SE",
    )


def check_violation_reported(t_upper, v_st, v_inf, reached: bool) -> Claim:
    """A noise floor above the target: the upper bound must come back NaN (void), not a number.

    Args:
        t_upper: T_upper computed (`escape_time_upper`).
        v_st: V_st, the target.
        v_inf: V_∞, the noise floor.
        reached: whether the mean reached the target.

    Returns:
        The Claim.
    """
    void = bool(np.isnan(t_upper))
    return Claim(
        "(c) deliberately violated V_st ≤ V_∞ is reported as such (no escape time claimed)",
        void,
        f"V_st = {v_st:.3g}, V_∞ = {v_inf:.3g}, T_upper = {t_upper}; target reached by the mean: {reached}",
        "T_upper must be NaN",
    )


def check_violation_detected(holds: np.ndarray) -> Claim:
    """A deliberately violated step size (max a_i² > 1 − ηλ) breaks the inequality, and the check detects it.

    Args:
        holds: per violating run, whether the inequality held at every step.

    Returns:
        The Claim.
    """
    return Claim(
        "(a) deliberately violated step size (max a_i² > 1 − ηλ) breaks the inequality and is detected",
        bool(not holds.any()),
        f"inequality held in {int(holds.sum())}/{holds.size} violating runs",
        "must fail in every violating run",
    )


# ----------------------------------------------------------------------------- the experiments


def linear_zero_noise(problem: tm.LinearProblem, eps: float = 1e-2, steps: int = 3000) -> list[Claim]:
    grid = [
        a.ravel() for a in np.meshgrid([0.05, 0.1, 0.2], [0.01, 0.02, 0.05], [10.0, 1000.0], [0.0, 3.0], indexing="ij")
    ]
    extra = [a.ravel() for a in np.meshgrid([0.01], [0.05], [10.0, 1000.0], [0.0, 3.0], indexing="ij")]  # η ≤ λ/L
    etas, lams, nulls, rows = (np.concatenate([g, e]) for g, e in zip(grid, extra))
    out = tm.run_linear_grid(problem, steps, etas, lams, nulls, rows)
    exact = np.stack(
        [tm.linear_mean_trajectory(problem, steps, e, l, n, r)["V"] for e, l, n, r in zip(etas, lams, nulls, rows)]
    )
    claims = [check_trajectories(out["norm_sq"], exact)]
    pure = rows == 0.0
    ridge_sq = np.array([float(np.sum(tm.ridge_solution(problem, l) ** 2)) for l in lams])
    excess = out["norm_sq"][pure] - ridge_sq[pure, None]
    meas_c = np.array([tm.log_linear_crossing(x, eps * n) for x, n in zip(excess, nulls[pure])])
    meas_i = np.array([tm.first_crossing(x, eps * n) for x, n in zip(excess, nulls[pure])])
    t_c, t_i = tm.null_transition_time(etas[pure], lams[pure], eps)
    claims.append(check_transition_times(meas_c, t_c, meas_i, t_i))
    c = bounds.contraction_c("sgd", etas[pure], lams[pure])
    t_low, _ = bounds.escape_time_lower(nulls[pure], eps * nulls[pure], etas[pure], lams[pure], c)
    t_up, _ = bounds.escape_time_upper(nulls[pure], eps * nulls[pure], etas[pure], lams[pure], 0.0)
    claims.append(
        check_escape_window(
            meas_c, t_low, t_up, "(a) escape time of U = ‖θ − θ_λ‖² from V_sc to V_st:", tight_lower=True
        )
    )
    holds = lyapunov_holds(out["excess_sq"], etas, lams, atol=rounding_floor(out["norm_sq"][:, 0]))
    a2 = np.array([np.max((1 - e * (problem.h + 2 * l)) ** 2) for e, l in zip(etas, lams)])
    step_ok = bounds.step_size_condition(etas, lams, problem.h.max())
    claims += check_lyapunov_exact(holds, a2 <= 1 - etas * lams, step_ok)
    ok_v = out["norm_sq"][pure][:, 1:] <= (1 - etas[pure, None] * lams[pure, None]) * out["norm_sq"][pure][:, :-1]
    first_fail = np.where(ok_v.all(axis=1), -1, np.argmin(ok_v, axis=1))
    closed = np.array(
        [
            tm.l2_lyapunov_failure_step(e, l, n, r)
            for e, l, n, r in zip(etas[pure], lams[pure], nulls[pure], ridge_sq[pure])
        ]
    )
    closed = np.where(closed <= steps - 1, closed, -1)
    claims.append(check_literal_failure(first_fail, closed))
    steps_arr = np.arange(steps + 1, dtype=np.float64)
    amp = [
        amplification(fit_after_peak(steps_arr, v)["rate"], "sgd", e, l)
        for v, e, l in zip(out["norm_sq"][pure], etas[pure], lams[pure])
    ]
    claims.append(check_amplification(amp, 1.0, 1e-6, "(a) fit of V_t = A·r^t + C:"))
    # deliberately violated: η(h_max + 2λ) = 1.999, so the stiffest mode contracts by only 0.999² per step
    # (start on the stiffest eigenvector, so that mode dominates U from the first step)
    lam_v = np.array([0.01, 0.02])
    eta_v = 1.999 / (problem.h.max() + 2 * lam_v)
    bad = tm.run_linear_grid(problem._replace(row_dir=problem.Q[:, -1]), 200, eta_v, lam_v, 0.0, 3.0)
    claims.append(
        check_violation_detected(
            lyapunov_holds(bad["excess_sq"], eta_v, lam_v, atol=rounding_floor(bad["norm_sq"][:, 0]))
        )
    )
    return claims


def diagonal_network(
    problem: tm.SparseProblem, steps: int = 16000, log_every: int = 10, threshold: float = 0.05
) -> list[Claim]:
    g = np.array(np.meshgrid([0.02, 0.04], [0.005, 0.01], [2.0, 3.0, 4.0, 6.0], indexing="ij")).reshape(3, -1)
    eta, lam, alpha = g[:, g[0] * g[2] ** 2 <= 1.5]  # keep the kernel phase stable: η·α²·h_max ≤ 1.5
    short = tm.run_diagonal_grid(problem, 300, eta, lam, alpha, log_every=1)
    claims = [check_balance_identity(short["delta"], short["r"], eta, lam)]
    out = tm.run_diagonal_grid(problem, steps, eta, lam, alpha, log_every)
    t = np.arange(0, steps + 1, log_every, dtype=np.float64)
    i_fit = np.array(
        [tm.first_crossing(x, 1e-3 * x[0]) for x in out["train_loss"]]
    )  # T_fit: loss at 0.1 % of its start
    i_tr = np.array([tm.first_crossing(x, threshold) for x in out["recovery_error"]])
    if np.isnan(i_tr).any() or np.isnan(i_fit).any():
        return claims + [
            Claim(
                "(b) the kernel fit, then the sparse solution, are reached within the budget",
                False,
                f"{int(np.isnan(i_fit).sum())} runs never fit, {int(np.isnan(i_tr).sum())} never reach "
                f"error ≤ {threshold}",
                "all runs",
            )
        ]
    i_fit, i_tr = i_fit.astype(int), i_tr.astype(int)
    kernel = tm.kernel_interpolant(problem)
    kernel_err = float(np.sum((kernel - problem.w_star) ** 2) / np.sum(problem.w_star**2))
    rows = np.arange(eta.size)
    claims.append(
        check_kernel_first(
            out["recovery_error"][rows, i_fit], kernel_err, out["norm_sq"][rows, i_fit], out["norm_sq"][:, -1]
        )
    )
    claims += check_time_scale(t[i_tr], eta, lam, alpha)
    v_sc, v_st = out["norm_sq"][rows, i_fit], out["norm_sq"][rows, i_tr]
    c = bounds.contraction_c("sgd", eta, lam)
    t_low, _ = bounds.escape_time_lower(v_sc, v_st, eta, lam, c)
    t_up, _ = bounds.escape_time_upper(v_sc, v_st, eta, lam, 0.0)
    claims.append(check_escape_window(t[i_tr] - t[i_fit], t_low, t_up, "(b) delay T − T_fit:"))
    amp = [amplification(fit_after_peak(t, v)["rate"], "sgd", e, l) for v, e, l in zip(out["norm_sq"], eta, lam)]
    claims.append(check_amplification(amp, 1.0, 0.05, "(b) fit of V_t = A·r^t + C after the peak:"))
    return claims


def linear_noisy(problem: tm.LinearProblem, seeds: int = 256, steps: int = 2000, eps: float = 0.05) -> list[Claim]:
    points = [(0.1, 0.02, 100.0, 0.5), (0.2, 0.01, 100.0, 1.0), (0.1, 0.05, 1000.0, 2.0), (0.05, 0.05, 1000.0, 0.25)]
    eta, lam, null, sigma2 = (np.repeat(np.array(col), seeds) for col in zip(*points))
    seed = np.tile(np.arange(seeds), len(points))
    out = tm.run_linear_grid(problem, steps, eta, lam, null, 0.0, sigma2, seed)
    claims, mean_v, se_v, exact_v = [], [], [], []
    floors, v_infs, mc_floor, mc_floor_se = [], [], [], []
    u_mean, u_se, u_bound = [], [], []
    t_meas, t_exact, t_up, t_lo, t_hi = [], [], [], [], []
    tt = np.arange(steps + 1)
    for j, (e, l, n, s2) in enumerate(points):
        block = slice(j * seeds, (j + 1) * seeds)
        v, u = out["norm_sq"][block], out["excess_sq"][block]
        cf = tm.linear_mean_trajectory(problem, steps, e, l, n, 0.0, s2)
        sub = tt[50::50]  # t = 0 is deterministic (zero standard error)
        mean_v.append(v.mean(0)[sub])
        se_v.append(v.std(0, ddof=1)[sub] / np.sqrt(seeds))
        exact_v.append(cf["V"][sub])
        floors.append(tm.linear_stationary_excess(problem, e, l, s2))
        v_infs.append(float(bounds.noise_floor(e, l, s2)))
        late = u[:, -200:].mean(1)
        mc_floor.append(late.mean())
        mc_floor_se.append(late.std(ddof=1) / np.sqrt(seeds))
        u_mean.append(u.mean(0))
        u_se.append(u.std(0, ddof=1) / np.sqrt(seeds))
        u_bound.append(bounds.unrolled_bound(tt, n, e, l, s2))
        target = eps * n
        t_meas.append(tm.first_crossing(u.mean(0), target))
        t_exact.append(tm.first_crossing(cf["U"], target))
        # the Monte-Carlo mean is E[U_t] ± z·SE_t: it may first cross anywhere between these two steps
        se_u = u.std(0, ddof=1) / np.sqrt(seeds)
        t_lo.append(tm.first_crossing(cf["U"] - 4 * se_u, target))
        hi = tm.first_crossing(cf["U"] + 4 * se_u, target)
        t_hi.append(np.inf if np.isnan(hi) else hi)
        t_up.append(float(bounds.escape_time_upper(n, target, e, l, s2)[0]))
    claims.append(check_mean_trajectory(np.stack(mean_v), np.stack(se_v), np.stack(exact_v), "(c)"))
    claims += check_noise_floor(floors, v_infs, mc_floor, mc_floor_se)
    claims.append(
        check_unrolled_bound(np.stack(u_mean), np.stack(u_se), np.stack(u_bound), "(c) noisy U = ‖θ − θ_λ‖²:")
    )
    t_meas, t_exact = np.array(t_meas), np.array(t_exact)
    t_lo, t_hi = np.array(t_lo), np.array(t_hi)
    t_up = np.array(t_up)
    applies = np.isfinite(t_up)  # NaN: V_st ≤ V_∞, the bound makes no claim
    ok = bool(np.all((t_lo <= t_meas) & (t_meas <= t_hi)) and np.all(t_exact[applies] <= t_up[applies]))
    claims.append(
        Claim(
            "(c) noisy escape time: Monte-Carlo vs closed form, and ≤ T_upper where the bound applies",
            ok,
            f"measured {t_meas.tolist()} vs exact {t_exact.tolist()}; T_upper {np.round(t_up, 1).tolist()} "
            f"(NaN: V_st ≤ V_∞, yet the target is reached: the condition is sufficient only)",
            f"measured within the steps where |E[U_t] − target| ≤ 4 SE: {t_lo.tolist()}–{t_hi.tolist()}",
        )
    )
    # deliberately violated: a noise floor above the target norm
    e, l, n = 0.1, 0.02, 100.0
    target = eps * n
    s2 = 2.0 * target * l / e  # V_∞ = 2·V_st
    t_bad = float(bounds.escape_time_upper(n, target, e, l, s2)[0])
    cf = tm.linear_mean_trajectory(problem, steps, e, l, n, 0.0, s2)
    claims.append(
        check_violation_reported(
            t_bad, target, float(bounds.noise_floor(e, l, s2)), bool(np.isfinite(tm.first_crossing(cf["U"], target)))
        )
    )
    return claims


def run_all(quick: bool = False) -> list[Claim]:
    """Every claim, float64.

    Args:
        quick: shorten the noisy Monte-Carlo (fewer seeds).

    Returns:
        The Claims.
    """
    import jax

    with jax.enable_x64(True):
        claims = linear_zero_noise(tm.linear_problem())
        claims += diagonal_network(tm.sparse_problem())
        claims += linear_noisy(tm.linear_problem(), seeds=64 if quick else 256)
    return claims


def main(quick: bool = False) -> int:
    """`nht paper verify-bounds`: print every claim, then how many hold.

    Args:
        quick: shorten the noisy Monte-Carlo (fewer seeds).

    Returns:
        The exit code: 0 when every claim holds, else 1.
    """
    start = time.time()
    claims = run_all(quick)
    for claim in claims:
        print(claim.line())
    failed = sum(not c.ok for c in claims)
    print(f"\n{len(claims) - failed}/{len(claims)} claims hold ({time.time() - start:.1f} s)")
    return 1 if failed else 0


__all__ = ["Claim", "run_all", "main"] + [n for n in dir() if n.startswith("check_")]
