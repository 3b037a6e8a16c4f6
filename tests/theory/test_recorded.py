"""`nht bound`: the checks along recorded trajectories (hand-computed on synthetic trajectories, exact on the
toy model), the engine's noise/curvature hooks, the command on written and on trained results directories."""

import csv

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.base.atomic import atomic_write_text
from nht_jax.cli import main
from nht_jax.engine import noise
from nht_jax.measure import summaries
from nht_jax.results import folder as results
from nht_jax.measure import stopping
from nht_jax.results.folder import load_results
from nht_jax.theory import recorded
from nht_jax.theory import toy_models as tm

# ----------------------------------------------------------------------------- hand-computed trajectories
#
# η = 0.1, λ = 0.5: the bound's factor per step is q = 1 − ηλ = 0.95; ℓ2 sgd's c = 4 − 4ηλ = 3.8, so weight decay
# alone shrinks V by 1 − cηλ = 0.81 = 0.9² per step. Logged every k = 10 steps from 0 to 100,
# T_fit = 20 and T_transition = 60, V_t = 1000·ρ^t.

ETA, LAM, K = 0.1, 0.5, 10
STEPS = np.arange(0.0, 101.0, K)
T_FIT, T_TR = 20.0, 60.0
Q10 = 0.95**10  # the bound over one logged interval, σ² = 0
V_SC, V_ST = 1000 * 0.9**20, 1000 * 0.9**60  # V at T_fit and T_transition for ρ = 0.9


def geometric(rho):
    return 1000.0 * rho**STEPS


def check(v, sigma2=0.0, sharp=2.0, optimizer="sgd", lam=LAM, t_fit=T_FIT, t_tr=T_TR):
    return recorded.check_run(
        STEPS,
        v,
        np.broadcast_to(np.asarray(sigma2, float), v.shape).copy(),
        np.full(v.shape, sharp),
        ETA,
        lam,
        optimizer,
        t_fit,
        t_tr,
    )


def test_check_run_hand_values_on_a_geometric_trajectory():
    row = check(geometric(0.9))
    assert row["verdict"] == "assumptions hold" and row["position"] == "inside"
    # every logged interval: V_{i+1}/bound = 0.9¹⁰/0.95¹⁰
    assert row["ineq_frac"] == 1.0 and row["ineq_frac_after_fit"] == 1.0
    assert row["ineq_worst_ratio"] == pytest.approx((0.9 / 0.95) ** 10, rel=1e-12)
    assert row["L_lower"] == 2.0 and row["eta_max"] == pytest.approx(0.25)
    assert row["c_assumed"] == pytest.approx(3.8, rel=1e-12)
    assert row["c_realised_max"] == pytest.approx((1 - 0.9) / 0.05, rel=1e-12)  # = 2
    assert row["V_sc"] == pytest.approx(V_SC, rel=1e-12) and row["V_st"] == pytest.approx(V_ST, rel=1e-12)
    assert row["V_final"] == pytest.approx(1000 * 0.9**100, rel=1e-12)
    assert row["sigma2"] == 0.0 and row["V_inf"] == 0.0 and row["delay"] == 40.0
    # V_sc/V_st = 0.9⁻⁴⁰ = 0.81⁻²⁰: at the fastest allowed shrink the transition takes 20 steps
    assert row["T_lower"] == pytest.approx(40.0, rel=1e-12)
    assert row["T_upper"] == pytest.approx(20 + 40 * np.log(0.9) / np.log(0.95), rel=1e-12)  # 102.16
    assert row["T_upper_paper"] == pytest.approx(20 + 40 * np.log(1 / 0.9) / 0.05, rel=1e-12)  # 104.29
    # the fit: r = 0.9 per step, γ_eff = 1 − 0.81 = 0.19, amplification log 0.9 / log 0.81 = 1/2
    assert row["fit_status"] == "ok" and row["r"] == pytest.approx(0.9, rel=1e-7)
    assert row["rate"] == pytest.approx(-np.log(0.9), rel=1e-7)
    assert row["gamma_eff"] == pytest.approx(0.19, rel=1e-12)
    assert row["amplification"] == pytest.approx(0.5, rel=1e-7)


def test_check_run_hand_values_with_gradient_noise():
    v = geometric(0.9)
    row = check(v, sigma2=2.0)  # V_∞ = ησ²/λ = 0.4; per interval the bound adds 0.4(1 − 0.95¹⁰)
    assert row["verdict"] == "assumptions hold" and row["position"] == "inside"
    assert row["sigma2"] == 2.0 and row["V_inf"] == pytest.approx(0.4, rel=1e-12)
    # the ratio V_{i+1}/bound grows with V_i: worst on the first interval after T_fit
    assert row["ineq_worst_ratio"] == pytest.approx(v[3] / (Q10 * v[2] + 0.4 * (1 - Q10)), rel=1e-12)
    assert row["T_upper"] == pytest.approx(20 + np.log(V_SC / (V_ST - 0.4)) / -np.log(0.95), rel=1e-12)
    assert row["T_lower"] == pytest.approx(40.0, rel=1e-12)  # the lower bound ignores noise
    # σ² = t/10 rises: the window uses its largest value in [T_fit, T_transition] (6 at t = 60), the inequality
    # the larger of each interval's two ends
    ramp = STEPS / 10
    row = check(v, sigma2=ramp)
    assert row["sigma2"] == 6.0 and row["V_inf"] == pytest.approx(1.2, rel=1e-12)
    assert row["T_upper"] == pytest.approx(20 + np.log(V_SC / (V_ST - 1.2)) / -np.log(0.95), rel=1e-12)
    add = 0.01 * ramp[1:] * (1 - Q10) / 0.05
    assert row["ineq_worst_ratio"] == pytest.approx(np.max((v[1:] / (Q10 * v[:-1] + add))[2:]), rel=1e-12)


def test_inequality_fraction_counts_intervals_by_hand():
    # per-interval factors: flat (violates) before T_fit, then 0.9¹⁰, and one flat interval after T_fit (4 → 5)
    factors = np.full(10, 0.9**10)
    factors[[0, 4]] = 1.0
    v = 1000.0 * np.concatenate([[1.0], np.cumprod(factors)])
    row = check(v)
    assert row["ineq_frac"] == pytest.approx(8 / 10)  # 2 of 10 intervals break it
    assert row["ineq_frac_after_fit"] == pytest.approx(7 / 8)  # intervals 2..9: one breaks it
    assert row["ineq_worst_ratio"] == pytest.approx(0.95**-10, rel=1e-12)
    holds, ratio = recorded.inequality_along(v, np.zeros_like(v), ETA, LAM, K)
    np.testing.assert_array_equal(holds, factors < 1)
    np.testing.assert_allclose(ratio, factors / Q10, rtol=1e-12)
    np.testing.assert_allclose(recorded.realised_c(v, ETA, LAM, K), (1 - factors**0.1) / 0.05, rtol=1e-9, atol=1e-12)


# (trajectory, check() overrides, exact verdict, exact position or None when the run gets no window)
VERDICTS = {
    "adamw": (geometric(0.92), dict(optimizer="adamw"), "violated: update rule (adamw)", "inside"),
    "eta above lambda/L": (geometric(0.9), dict(sharp=10.0), "violated: η > λ/L (η = 0.1, λ/L ≤ 0.05)", "inside"),
    "no sharpness": (geometric(0.9), dict(sharp=np.nan), "violated: L unknown (no sharpness recorded)", "inside"),
    "shrinks faster than c": (
        geometric(0.8),
        {},
        "violated: V shrank faster than (1 − cηλ) (c = 4 > 3.8)",
        "below T_lower",
    ),
    "noise unknown": (geometric(0.9), dict(sigma2=np.nan), "violated: σ² unknown", "≥ T_lower (no upper bound)"),
    "noise floor above target": (
        geometric(0.9),
        dict(sigma2=100.0),
        "violated: V_st ≤ V_∞ (1.8 ≤ 20): upper bound void",  # V_st = 1.797
        "≥ T_lower (no upper bound)",
    ),
    "growing norm": (geometric(1.01), {}, "violated: V_sc ≤ V_st: no norm hierarchy", "n/a (no norm hierarchy)"),
    "every problem in order": (
        geometric(1.01),
        dict(optimizer="adamw", sharp=10.0, sigma2=np.nan),
        "violated: update rule (adamw); η > λ/L (η = 0.1, λ/L ≤ 0.05); σ² unknown; V_sc ≤ V_st: no norm hierarchy",
        "n/a (no norm hierarchy)",
    ),
    "slower than the bound": (
        geometric(0.97),
        {},
        "assumptions hold but T_transition is above T_upper: the bound fails on this run",
        "above T_upper",
    ),
    "no weight decay": (
        geometric(0.9),
        dict(lam=0.0),
        "no weight decay (λ = 0): no contraction, the bounds do not apply",
        None,
    ),
    "never fits": (geometric(0.9), dict(t_fit=np.nan, t_tr=np.nan), "never fits: no shortcut reached, no window", None),
    "no transition": (geometric(0.9), dict(t_tr=np.nan), "no transition within the budget: no window", None),
    "no transition, adamw": (
        geometric(0.92),
        dict(optimizer="adamw", t_tr=np.nan),
        "no transition within the budget: no window; update rule (adamw)",
        None,
    ),
}


@pytest.mark.parametrize("case", list(VERDICTS))
def test_check_run_exact_verdicts(case):
    v, kwargs, verdict, position = VERDICTS[case]
    row = check(v, **kwargs)
    assert row["verdict"] == verdict
    assert row.get("position") == position


def test_check_run_hand_values_of_the_violating_runs():
    row = check(geometric(0.92), optimizer="adamw")  # decoupled: c = 2 − ηλ = 1.95, γ_eff = 0.0975
    assert row["c_assumed"] == pytest.approx(1.95, rel=1e-12) and row["gamma_eff"] == pytest.approx(0.0975, rel=1e-12)
    assert row["c_realised_max"] == pytest.approx(0.08 / 0.05, rel=1e-12)
    assert row["T_lower"] == pytest.approx(20 + 40 * np.log(0.92) / np.log(1 - 0.0975), rel=1e-12)
    assert row["amplification"] == pytest.approx(np.log(0.92) / np.log(1 - 0.0975), rel=1e-7)
    row = check(geometric(0.8))  # V_sc/V_st = 0.8⁻⁴⁰: T_lower = 20 + 40·log 0.8/log 0.81 = 62.35 > T = 60
    assert row["T_lower"] == pytest.approx(20 + 40 * np.log(0.8) / np.log(0.81), rel=1e-12)
    assert row["c_realised_max"] == pytest.approx(4.0, rel=1e-12)
    row = check(geometric(0.97))  # T_upper = 20 + 40·log 0.97/log 0.95 = 43.75 < T = 60
    assert row["T_upper"] == pytest.approx(20 + 40 * np.log(0.97) / np.log(0.95), rel=1e-12)
    assert row["ineq_frac"] == 0.0 and row["ineq_worst_ratio"] == pytest.approx((0.97 / 0.95) ** 10, rel=1e-12)
    row = check(geometric(0.9), sigma2=100.0)
    assert row["V_inf"] == pytest.approx(20.0) and np.isnan(row["T_upper"]) and np.isnan(row["T_upper_paper"])
    row = check(geometric(0.9), sigma2=np.nan)
    assert np.isnan(row["T_upper"]) and np.isnan(row["ineq_frac"]) and row["T_lower"] == pytest.approx(40.0)
    row = check(geometric(1.01))
    assert row["ineq_frac"] == 0.0 and row["ineq_worst_ratio"] == pytest.approx((1.01 / 0.95) ** 10, rel=1e-12)
    row = check(geometric(0.9), t_tr=np.nan)
    assert row["V_sc"] == pytest.approx(V_SC, rel=1e-12) and "T_lower" not in row


# ----------------------------------------------------------------------------- the exact toy model (a)


# float32-rounded like the grid values a results directory stores, so that the runs written below are
# trajectories of exactly the η, λ that `nht bound` reads back
TOY_ETA = np.float32([0.01, 0.2, 0.01]).astype(np.float64)
TOY_LAM = np.float32([0.05, 0.02, 0.1]).astype(np.float64)
TOY_STEPS, TOY_K = 3000, 10


@pytest.fixture(scope="module")
def toy():
    """Model (a) with y = 0 (attractor θ = 0, so V = ‖θ‖² is the right Lyapunov function), one compiled grid:
    (logged steps, V (runs, logs), problem)."""
    problem = tm.linear_problem()
    problem = problem._replace(y=np.zeros_like(problem.y))
    with jax.enable_x64(True):
        v = tm.run_linear_grid(problem, TOY_STEPS, TOY_ETA, TOY_LAM, 100.0)["norm_sq"][:, ::TOY_K]
    return np.arange(0, TOY_STEPS + 1, TOY_K, dtype=float), v, problem


def _transition(steps, v):
    return float(steps[np.flatnonzero(v <= 1.0)[0]])  # "transition": the norm reaches V_st = 1 % of V_sc


def test_check_run_on_an_exact_trajectory_where_every_assumption_holds(toy):
    steps, v, problem = toy
    eta, lam = TOY_ETA[0], TOY_LAM[0]
    t_tr = _transition(steps, v[0])
    # pure null-space decay: V_t = 100·(1 − 2ηλ)^{2t}, so V first reaches 1 at ⌈log 100/(−2 log 0.999)⌉ rounded
    # up to the log grid
    assert t_tr == np.ceil(np.log(100.0) / (-2 * np.log(1 - 2 * eta * lam)) / TOY_K) * TOY_K
    sharp = np.full(v[0].shape, problem.h.max())  # the exact smoothness constant L
    row = recorded.check_run(steps, v[0], np.zeros_like(v[0]), sharp, eta, lam, "sgd", 0.0, t_tr)
    assert row["verdict"] == "assumptions hold" and row["position"] == "inside"
    # V shrinks by (1 − 2ηλ)² per step against the bound's 1 − ηλ
    assert row["ineq_frac"] == 1.0
    assert row["ineq_worst_ratio"] == pytest.approx(((1 - 2 * eta * lam) ** 2 / (1 - eta * lam)) ** TOY_K, rel=1e-9)
    assert row["T_lower"] == pytest.approx(t_tr, rel=1e-9)  # pure weight decay attains the lower bound
    assert row["T_upper"] == pytest.approx(np.log(100.0 / v[0][steps == t_tr][0]) / -np.log(1 - eta * lam), rel=1e-9)
    assert row["c_realised_max"] == pytest.approx(row["c_assumed"], rel=1e-9)
    assert row["amplification"] == pytest.approx(1.0, abs=1e-3)


def test_check_run_reports_violated_assumptions(toy):
    steps, v, problem = toy
    eta, lam = TOY_ETA[1], TOY_LAM[1]
    v = v[1]
    t_tr = _transition(steps, v)
    sharp = np.full(v.shape, problem.h.max())  # η = 0.2 > λ/L
    row = recorded.check_run(steps, v, np.zeros_like(v), sharp, eta, lam, "sgd", 0.0, t_tr)
    assert row["verdict"] == f"violated: η > λ/L (η = 0.2, λ/L ≤ {lam / problem.h.max():.3g})"
    assert row["eta_max"] == pytest.approx(lam / problem.h.max(), rel=1e-12)
    # a noise floor above V_st: the upper bound is void and the report says so
    v_st = v[steps == t_tr][0]
    big = np.full(v.shape, 10.0 * lam / eta * v_st)  # V_∞ = 10·V_st
    row = recorded.check_run(steps, v, big, sharp, eta, lam, "sgd", 0.0, t_tr)
    assert row["verdict"] == (
        f"violated: η > λ/L (η = 0.2, λ/L ≤ {lam / problem.h.max():.3g}); "
        f"V_st ≤ V_∞ ({v_st:.3g} ≤ {10 * v_st:.3g}): upper bound void"
    )
    assert np.isnan(row["T_upper"]) and row["V_inf"] == pytest.approx(10 * v_st, rel=1e-12)


def test_nht_bound_on_a_results_directory_holding_exact_toy_runs(toy, tmp_path):
    """Model (a) with y = 0 written as a results directory: every assumption holds, the window contains T."""
    steps, v_all, problem = toy
    config = experiment.from_dict(
        {
            "name": "toy-a",
            "optim": {"name": "sgd", "decay_on": "all"},
            "train": {"steps": TOY_STEPS, "log_every": TOY_K},
            "grid": {"weight_decay": [0.05, 0.1], "learning_rate": 0.01, "train_fraction": 0.5},
        }
    )
    runs = config.runs()
    np.testing.assert_array_equal(runs["weight_decay"], TOY_LAM[[0, 2]])
    np.testing.assert_array_equal(runs["learning_rate"], TOY_ETA[[0, 2]])
    v = v_all[[0, 2]]
    ones = np.ones_like(v)
    metrics = {
        "norm_sq": v,
        "weight_norm_sq": v,
        "finite": ones,
        "train_acc": ones,
        "train_loss": 0 * v,
        "test_loss": 0 * v,
        "test_acc": (v <= 1.0).astype(float),
        "sharpness": ones * problem.h.max(),
    }
    out = tmp_path / "toy"
    out.mkdir()
    atomic_write_text(out / "config.toml", experiment.to_toml(config))
    results.write_trajectories(out, steps, metrics, runs, config)
    results.write_summary(out, summaries.summarize(steps, metrics, runs, config))
    results.write_meta(out, {"config_digest": stopping.results_digest(config)})  # finished: meta.json last
    assert main(["paper", "bound", str(out)]) == 0
    rows = recorded.check_results(load_results(out))
    assert [r["verdict"] for r in rows] == ["assumptions hold"] * 2
    assert [r["position"] for r in rows] == ["inside"] * 2
    t_tr = [_transition(steps, x) for x in v]
    assert [r["T_transition"] for r in rows] == t_tr and [r["T_fit"] for r in rows] == [0.0, 0.0]
    assert [r["T_lower"] for r in rows] == pytest.approx(t_tr, rel=1e-9)
    assert all(r["ineq_frac"] == 1.0 for r in rows)
    assert (out / "bound.png").stat().st_size > 10_000


# ----------------------------------------------------------------------------- `nht bound` on a written directory


def _write_results(out, v, optim, sharp=2.0):
    """A results directory of two runs (seeds 0, 1) logged every 10 steps to 100, η = 0.1, λ = 0.5, fitted at 20
    and transitioned at 60 (train/test accuracy written so that the analysis finds exactly these steps)."""
    config = experiment.from_dict(
        {
            "name": "hand",
            "optim": optim,
            "train": {"steps": 100, "log_every": K},
            "grid": {"weight_decay": LAM, "learning_rate": ETA, "seed": [0, 1], "train_fraction": 0.5},
        }
    )
    runs = config.runs()
    ones = np.ones_like(v)
    metrics = {
        "norm_sq": v,
        "weight_norm_sq": v,
        "finite": ones,
        "train_loss": 0 * v,
        "test_loss": 0 * v,
        "train_acc": np.broadcast_to((STEPS >= T_FIT).astype(float), v.shape),
        "test_acc": np.broadcast_to((STEPS >= T_TR).astype(float), v.shape),
        "sharpness": sharp * ones,
        "grad_noise_var": 0 * v,
    }
    out.mkdir()
    atomic_write_text(out / "config.toml", experiment.to_toml(config))
    results.write_trajectories(out, STEPS, metrics, runs, config)
    results.write_summary(out, summaries.summarize(STEPS, metrics, runs, config))
    results.write_meta(out, {"config_digest": stopping.results_digest(config)})  # finished: meta.json last


def _table(path):
    with open(path / "bound_table.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_nht_bound_hand_values_through_the_command(tmp_path, capsys):
    out = tmp_path / "hand"
    _write_results(out, np.stack([geometric(0.9), geometric(0.97)]), {"name": "sgd", "decay_on": "all"})
    assert main(["paper", "bound", str(out)]) == 0
    printed = capsys.readouterr().out
    table = _table(out)
    assert [r["verdict"] for r in table] == [
        "assumptions hold",
        "assumptions hold but T_transition is above T_upper: the bound fails on this run",
    ]
    assert [r["position"] for r in table] == ["inside", "above T_upper"]
    assert [r["optimizer"] for r in table] == ["sgd", "sgd"]
    assert [
        float(table[0][c]) for c in ("T_fit", "T_transition", "V_sc", "c_assumed", "c_realised_max", "gamma_eff")
    ] == pytest.approx([20.0, 60.0, V_SC, 3.8, 2.0, 0.19], rel=5e-6)  # the table holds 6 digits
    assert float(table[0]["T_lower"]) == pytest.approx(40.0, rel=5e-6)
    assert float(table[0]["T_upper"]) == pytest.approx(20 + 40 * np.log(0.9) / np.log(0.95), rel=5e-6)
    assert float(table[1]["T_upper"]) == pytest.approx(20 + 40 * np.log(0.97) / np.log(0.95), rel=5e-6)
    assert float(table[0]["amplification"]) == pytest.approx(0.5, rel=5e-6)
    assert table[0]["sigma2"] == "0" and table[0]["V_inf"] == "0"
    report = (out / "bound_report.md").read_text()
    assert report in printed
    assert "optimiser sgd: ℓ2 penalty λ‖θ‖², θ shrinks by (1 − 2ηλ): the theory's update rule" in report
    assert "σ²: recorded (grad_noise_var); logged every 10 steps" in report
    assert "1 of 2 runs satisfy every assumption" in report


def test_nht_bound_names_adamw_in_every_verdict_of_a_written_directory(tmp_path):
    out = tmp_path / "adamw"
    _write_results(out, np.stack([geometric(0.92), geometric(1.01)]), {"name": "adamw", "decay_on": "weights"})
    rows, text = recorded.bound_report(out)
    assert [r["verdict"] for r in rows] == [
        "violated: update rule (adamw)",
        "violated: update rule (adamw); V_sc ≤ V_st: no norm hierarchy",
    ]
    assert [r["c_assumed"] for r in rows] == pytest.approx([1.95, 1.95], rel=1e-7)  # η, λ are stored as float32
    assert (
        "optimiser adamw: decoupled, θ shrinks by (1 − ηλ), gradient preconditioned by Adam: not the theory's "
        "rule" in text
    )
    assert "V = weight_norm_sq (decay_on = weights)" in text
    assert "0 of 2 runs satisfy every assumption" in text


# ----------------------------------------------------------------------------- the engine's hooks


def test_grad_noise_estimator_is_unbiased_for_sampling_without_replacement():
    """E‖g_B − g‖² = (n − B)/(B(n − 1)) · (1/n) Σ‖g_i − g‖² for B rows drawn without replacement."""
    rng = np.random.default_rng(0)
    n, d, b = 40, 3, 8
    x, y = jnp.asarray(rng.normal(size=(n, d)), jnp.float32), jnp.asarray(rng.normal(size=n), jnp.float32)
    theta = {"w": jnp.asarray(rng.normal(size=d), jnp.float32)}

    def loss(p, index, weight):
        r = x[index] @ p["w"] - y[index]
        return jnp.sum(weight * 0.5 * r**2) / jnp.maximum(jnp.sum(weight), 1.0)

    index, weight = jnp.arange(n + 5) % n, (jnp.arange(n + 5) < n).astype(jnp.float32)  # 5 padding rows
    full = jax.jit(jax.grad(loss))(theta, index, weight)
    per_example = np.asarray(jax.jit(lambda w: (x @ w - y)[:, None] * x)(theta["w"]))
    spread = np.mean(np.sum((per_example - per_example.mean(0)) ** 2, axis=1))
    expected = (n - b) / (b * (n - 1)) * spread

    def estimate(batch_size, samples):  # one compiled program (batch size and sample count static)
        return float(
            jax.jit(lambda *args: noise.grad_noise_var(loss, *args, batch_size, samples))(
                theta, full, index, weight, jax.random.PRNGKey(0)
            )
        )

    assert estimate(b, 4000) == pytest.approx(expected, rel=0.05)
    assert estimate(n, 3) < 1e-8


def test_sharpness_is_a_lower_bound_that_reaches_the_top_eigenvalue():
    a = jnp.diag(jnp.array([5.0, 2.0, 0.5]))
    params = {"w": jnp.array([1.0, 1.0, 1.0])}
    quad = lambda p: 0.5 * p["w"] @ a @ p["w"]  # noqa: E731
    sharpness = jax.jit(lambda p, iters: noise.sharpness(quad, p, p, iters=iters), static_argnames="iters")
    assert float(sharpness(params, iters=60)) == pytest.approx(5.0, rel=1e-4)
    assert float(sharpness(params, iters=1)) <= 5.0 + 1e-5


# ----------------------------------------------------------------------------- `nht bound` on a trained sweep


def test_nht_bound_on_a_recorded_tiny_sweep(tmp_path):
    """The tiny AdamW preset, λ ∈ {0, 1}, with σ² and sharpness recorded. The analysis thresholds are set so that
    both runs fit and transition at step 0 (train accuracy ≥ 1e-6; "transition" when test accuracy ≤ 1, which
    always holds): the verdicts then follow from the optimiser and the grid alone, whatever the training did."""
    out = tmp_path / "res"
    args = [
        "run",
        "tiny",
        "--out",
        str(out),
        "--quiet",
        "--set",
        "train.steps=60",
        "--set",
        "train.log_every=20",
        "--set",
        "model.hidden=[16]",
        "--set",
        "train.record_grad_noise=true",
        "--set",
        "train.batch_size=64",
        "--set",
        "grid.weight_decay=[0.0, 1.0]",
        "--set",
        "grid.seed=[0]",
        "--set",
        "analysis.fit_threshold=1e-6",
        "--set",
        'analysis.transition_direction="below"',
        "--set",
        "analysis.transition_threshold=1.0",
    ]
    assert main(args) == 0
    res = load_results(out)
    assert res.metrics["grad_noise_var"].shape == (2, 4) and np.all(res.metrics["grad_noise_var"] > 0)
    assert np.all(res.metrics["sharpness"] > 0)
    assert [r["T_fit"] for r in res.summary] == [0.0, 0.0] and [r["T_transition"] for r in res.summary] == [0.0, 0.0]
    assert main(["paper", "bound", str(out)]) == 0
    for name in ("bound_table.csv", "bound_report.md", "bound.png"):
        assert (out / name).exists(), name
    rows = recorded.check_results(res)
    # premises of the λ = 1 verdict, with wide margins: η ≤ λ/L (sharpness ≪ λ/η = 100) and V not shrinking
    # faster than decoupled decay (c_realised ≤ 2 − ηλ)
    assert np.max(res.metrics["sharpness"][1]) < 10 and rows[1]["c_realised_max"] < 1.5
    assert [r["verdict"] for r in rows] == [
        "no weight decay (λ = 0): no contraction, the bounds do not apply",
        "violated: update rule (adamw); V_sc ≤ V_st: no norm hierarchy",
    ]
    v0 = float(res.metrics["weight_norm_sq"][1, 0])  # decay_on = "weights"
    s2 = float(res.metrics["grad_noise_var"][1, 0])
    eta = float(res.hparams["learning_rate"][1])  # 0.01 as stored (float32)
    r = rows[1]
    assert r["optimizer"] == "adamw" and r["position"] == "n/a (no norm hierarchy)"
    assert r["V_sc"] == r["V_st"] == v0 and r["sigma2"] == s2
    assert r["V_inf"] == pytest.approx(eta * s2 / 1.0, rel=1e-12)
    assert r["T_lower"] == 0.0 and r["delay"] == 0.0
    assert r["T_upper"] == pytest.approx(np.log(v0 / (v0 - eta * s2)) / -np.log(1 - eta), rel=1e-9)
    assert r["c_assumed"] == pytest.approx(2 - eta, rel=1e-12)
    assert r["gamma_eff"] == pytest.approx(eta * (2 - eta), rel=1e-12)
    text = (out / "bound_report.md").read_text()
    assert "optimiser adamw:" in text and "not the theory's rule" in text and "layer-wise" in text
    assert "0 of 2 runs satisfy every assumption" in text
    assert [t["verdict"] for t in _table(out)] == [r["verdict"] for r in rows]


def test_nht_bound_on_a_missing_directory_is_a_clear_error(tmp_path, capsys):
    assert main(["paper", "bound", str(tmp_path / "nothing")]) == 2
    assert "holds no results" in capsys.readouterr().err


def test_nht_bound_needs_three_logged_steps(tmp_path, capsys):
    out = tmp_path / "short"
    config = experiment.from_dict(
        {
            "name": "short",
            "train": {"steps": 10, "log_every": 10},
            "grid": {"weight_decay": LAM, "learning_rate": ETA, "train_fraction": 0.5},
        }
    )
    v = np.array([[2.0, 1.0]])
    metrics = {
        "norm_sq": v,
        "weight_norm_sq": v,
        "finite": np.ones_like(v),
        "train_acc": np.ones_like(v),
        "train_loss": 0 * v,
        "test_loss": 0 * v,
        "test_acc": np.ones_like(v),
    }
    out.mkdir()
    atomic_write_text(out / "config.toml", experiment.to_toml(config))
    results.write_trajectories(out, np.array([0, 10]), metrics, config.runs(), config)
    results.write_summary(out, summaries.summarize(np.array([0, 10]), metrics, config.runs(), config))
    results.write_meta(out, {"config_digest": stopping.results_digest(config)})  # finished: meta.json last
    assert main(["paper", "bound", str(out)]) == 2
    assert "has 2 logged steps; the bound checks need at least 3" in capsys.readouterr().err
