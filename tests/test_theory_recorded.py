"""`nht bound`: the checks along recorded trajectories, the engine's noise/curvature hook, the CLI."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nht_jax.cli import main
from nht_jax.results import load_results
from nht_jax.theory import noise, recorded
from nht_jax.theory import toy_models as tm


def _toy_trajectory(eta, lam, null, steps, log_every, sigma2=0.0):
    """Model (a) with y = 0 (the attractor is θ = 0, so V = ‖θ‖² is the right Lyapunov function)."""
    problem = tm.linear_problem()
    problem = problem._replace(y=np.zeros_like(problem.y))
    with jax.enable_x64(True):
        out = tm.run_linear_grid(problem, steps, eta, lam, null, 0.0, sigma2, 0)
    return np.arange(0, steps + 1, log_every, dtype=float), out["V"][0][::log_every], problem


def test_check_run_on_an_exact_trajectory_where_every_assumption_holds():
    eta, lam, k = 0.01, 0.05, 10
    steps, v, problem = _toy_trajectory(eta, lam, 100.0, 3000, k)
    t_tr = float(steps[np.flatnonzero(v <= 1.0)[0]])  # "transition": the norm reaches V_st = 1 % of V_sc
    sharp = np.full(v.shape, problem.h.max())          # the exact smoothness constant L
    row = recorded.check_run(steps, v, np.zeros_like(v), sharp, eta, lam, "sgd", 0.0, t_tr)
    assert row["verdict"] == "assumptions hold", row["verdict"]
    assert row["ineq_frac"] == 1.0 and row["ineq_worst_ratio"] <= 1.0
    assert row["position"] == "inside" and row["T_lower"] <= t_tr * (1 + 1e-9) and t_tr <= row["T_upper"]
    assert row["T_lower"] == pytest.approx(t_tr, rel=1e-9)  # pure weight decay attains the lower bound
    assert row["c_realised_max"] <= row["c_assumed"] * (1 + 1e-9)
    assert row["amplification"] == pytest.approx(1.0, abs=1e-3)


def test_check_run_reports_violated_assumptions():
    eta, lam, k = 0.2, 0.02, 10
    steps, v, problem = _toy_trajectory(eta, lam, 100.0, 1500, k)
    t_tr = float(steps[np.flatnonzero(v <= 1.0)[0]])
    sharp = np.full(v.shape, problem.h.max())  # η = 0.2 > λ/L ≈ 0.004
    row = recorded.check_run(steps, v, np.zeros_like(v), sharp, eta, lam, "sgd", 0.0, t_tr)
    assert "η > λ/L" in row["verdict"]
    # a noise floor above V_st: the upper bound is void and the report says so
    big = np.full(v.shape, 10.0 * lam / eta * v[steps == t_tr][0])
    row = recorded.check_run(steps, v, big, sharp, eta, lam, "sgd", 0.0, t_tr)
    assert "V_st ≤ V_∞" in row["verdict"] and np.isnan(row["T_upper"])
    # a norm that grows breaks the one-step inequality, and adamw is not the theory's update rule
    grow = np.linspace(1.0, 50.0, steps.size)
    row = recorded.check_run(steps, grow, np.zeros_like(grow), sharp, eta, lam, "adamw", 0.0, float(steps[-1]))
    assert row["ineq_frac"] == 0.0 and row["ineq_worst_ratio"] > 1.0
    assert "update rule (adamw)" in row["verdict"] and "no norm hierarchy" in row["verdict"]


def test_grad_noise_estimator_is_unbiased_for_sampling_without_replacement():
    """E‖g_B − g‖² = (n − B)/(B(n − 1)) · (1/n) Σ‖g_i − g‖² for B rows drawn without replacement."""
    rng = np.random.default_rng(0)
    n, d, b = 40, 3, 8
    x, y = jnp.asarray(rng.normal(size=(n, d)), jnp.float32), jnp.asarray(rng.normal(size=n), jnp.float32)
    theta = {"w": jnp.asarray(rng.normal(size=d), jnp.float32)}

    def loss(p, index, weight):
        r = x[index] @ p["w"] - y[index]
        return jnp.sum(weight * 0.5 * r ** 2) / jnp.maximum(jnp.sum(weight), 1.0)

    index, weight = jnp.arange(n + 5) % n, (jnp.arange(n + 5) < n).astype(jnp.float32)  # 5 padding rows
    full = jax.grad(loss)(theta, index, weight)
    per_example = np.asarray((x @ theta["w"] - y)[:, None] * x)
    spread = np.mean(np.sum((per_example - per_example.mean(0)) ** 2, axis=1))
    expected = (n - b) / (b * (n - 1)) * spread
    est = float(noise.grad_noise_var(loss, theta, full, index, weight, jax.random.PRNGKey(0), b, 4000))
    assert est == pytest.approx(expected, rel=0.05)
    assert float(noise.grad_noise_var(loss, theta, full, index, weight, jax.random.PRNGKey(0), n, 3)) < 1e-8


def test_sharpness_is_a_lower_bound_that_reaches_the_top_eigenvalue():
    a = jnp.diag(jnp.array([5.0, 2.0, 0.5]))
    params = {"w": jnp.array([1.0, 1.0, 1.0])}
    quad = lambda p: 0.5 * p["w"] @ a @ p["w"]  # noqa: E731
    assert float(noise.sharpness(quad, params, params, iters=60)) == pytest.approx(5.0, rel=1e-4)
    assert float(noise.sharpness(quad, params, params, iters=1)) <= 5.0 + 1e-5


def test_nht_bound_on_a_recorded_tiny_sweep(tmp_path):
    out = tmp_path / "res"
    args = ["run", "tiny", "--out", str(out), "--quiet", "--set", "train.steps=120", "--set", "train.log_every=20",
            "--set", "model.hidden=[16]", "--set", "train.record_grad_noise=true", "--set", "train.batch_size=64"]
    assert main(args) == 0
    res = load_results(out)
    assert res.metrics["grad_noise_var"].shape == (4, 7) and np.all(res.metrics["grad_noise_var"] > 0)
    assert np.all(res.metrics["sharpness"] > 0)
    assert main(["bound", str(out)]) == 0
    for name in ("bound_table.csv", "bound_report.md", "bound.png"):
        assert (out / name).exists(), name
    text = (out / "bound_report.md").read_text()
    assert "adamw" in text and "not the theory's rule" in text and "layer-wise" in text
    rows = recorded.check_results(res)
    assert len(rows) == 4 and all("update rule (adamw)" in r["verdict"] or "never fits" in r["verdict"]
                                  or "no weight decay" in r["verdict"] for r in rows)


def test_nht_bound_on_a_missing_directory_is_a_clear_error(tmp_path, capsys):
    assert main(["bound", str(tmp_path / "nothing")]) == 2
    assert "holds no results" in capsys.readouterr().err


def test_nht_bound_on_a_results_directory_holding_exact_toy_runs(tmp_path):
    """Model (a) with y = 0 written as a results directory: every assumption holds, the window contains T."""
    from nht_jax import analysis, results
    from nht_jax.config import Config, GridConfig, OptimConfig, TrainConfig, to_toml
    from nht_jax.grid import expand

    config = Config(name="toy-a", optim=OptimConfig(name="sgd", decay_on="all"),
                    train=TrainConfig(steps=3000, log_every=10),
                    grid=GridConfig(weight_decay=(0.05, 0.1), learning_rate=(0.01,), train_fraction=(0.5,)))
    hparams = expand(config.grid)
    problem = tm.linear_problem()
    problem = problem._replace(y=np.zeros_like(problem.y))
    with jax.enable_x64(True):
        v = tm.run_linear_grid(problem, 3000, hparams.learning_rate, hparams.weight_decay, 100.0)["V"][:, ::10]
    ones = np.ones_like(v)
    metrics = {"norm_sq": v, "weight_norm_sq": v, "finite": ones, "train_acc": ones, "train_loss": 0 * v,
               "test_loss": 0 * v, "test_acc": (v <= 1.0).astype(float), "sharpness": ones * problem.h.max()}
    out = tmp_path / "toy"
    out.mkdir()
    steps = np.arange(0, 3001, 10)
    results.atomic_write_text(out / "config.toml", to_toml(config))
    results.write_trajectories(out, steps, metrics, hparams, config)
    results.write_summary(out, analysis.summarize(steps, metrics, hparams, config.analysis))
    assert main(["bound", str(out)]) == 0
    rows = recorded.check_results(load_results(out))
    assert [r["verdict"] for r in rows] == ["assumptions hold"] * 2
    assert all(r["position"] == "inside" and r["ineq_frac"] == 1.0 for r in rows)
    assert (out / "bound.png").stat().st_size > 10_000
