"""The interventions as slot entries (`nht_jax.engine.interventions`), checked against known answers: each at its
identity value is the plain run bit for bit (configured, and as a traced grid value); the pin holds ‖θ‖ = c on
its scope at every logged step; ⊥Grad is orthogonal to θ per tensor; Grokfast is its float64 recursion; row
clipping caps every row and leaves short rows alone; on the exact toy model the injection shifts the time to a
norm by log(s²)/(−log(1 − γ)); a grid over clamp_norm is the runs one by one; bad input is a ConfigError."""

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tomllib

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.engine import interventions as iv
from nht_jax.engine import slots
from nht_jax.engine.optim import declared_contraction, gamma_eff
from nht_jax.config.sections import OptimConfig, TrainConfig
from nht_jax.engine.step import make_updater
from nht_jax.experiment import build_trainer

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration" / "interventions.md"
BASE_GRID = {"weight_decay": [0.01, 1.0], "learning_rate": 1e-2, "seed": [0], "train_fraction": 0.5}


def token_config(optim=None, grid=None, steps=6, log_every=2):
    """(a + b) mod 11, a width-8 MLP, AdamW: a real token trainer that compiles in seconds."""
    return experiment.from_dict(
        {
            "name": "interventions",
            "task": {"name": "modular", "p": 11},
            "model": {"name": "mlp", "hidden": [8]},
            "optim": {"name": "adamw", **(optim or {})},
            "train": {"steps": steps, "log_every": log_every},
            "grid": {**BASE_GRID, **(grid or {})},
        }
    )


def train(config):
    """Every run of the grid, vmapped: (final params, metrics {name: (runs, logs + 1)}) as host arrays."""
    state, metrics = jax.jit(jax.vmap(build_trainer(config).train))(config.runs())
    return jax.tree.map(np.asarray, state.params), jax.tree.map(np.asarray, metrics)


def assert_bitwise_equal(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        x, y = np.asarray(x), np.asarray(y)  # the bytes on the host: viewing a jax.Array compiles a bitcast
        assert x.dtype == y.dtype and np.array_equal(x.view(np.uint8), y.view(np.uint8))


@pytest.fixture(scope="module")
def plain():
    return train(token_config())


# ----------------------------------------------------------------------------- identities, bit for bit

IDENTITY_OPTIONS = {
    "before": [{"name": "grokfast", "alpha": 0.9, "amplification": 0.0}, {"name": "ortho_grad", "weight": 0.0}],
    "after": [
        {"name": "norm_clamp", "norm": 0.0},
        {"name": "norm_clamp", "mode": "ceiling", "norm": 1e4},
        {"name": "row_clip", "max_norm": 0.0},
        {"name": "norm_injection", "scale": 1.0, "at_step": 2},
    ],
}


def test_every_intervention_configured_at_its_identity_is_the_plain_run(plain):
    """Clamp off (c = 0), a ceiling above every norm the run reaches, row clip off, s = 1, a = 0, w = 0."""
    params, metrics = train(token_config(IDENTITY_OPTIONS))
    assert np.sqrt(metrics["norm_sq"].max()) < 1e4  # the ceiling never acts
    assert_bitwise_equal(params, plain[0])
    assert_bitwise_equal(metrics, plain[1])


def test_every_strength_at_its_identity_on_the_grid_is_the_plain_run(plain):
    """The same with each strength a traced grid value at its identity (the configured values would act)."""
    optim = {
        "before": [{"name": "grokfast", "amplification": 3.0}, {"name": "ortho_grad", "weight": 1.0}],
        "after": [
            {"name": "norm_clamp", "norm": 2.0},
            {"name": "row_clip", "max_norm": 0.1},
            {"name": "norm_injection", "scale": 3.0, "at_step": 2},
        ],
    }
    grid = {
        "clamp_norm": [0.0],
        "row_clip_norm": [0.0],
        "injection_scale": [1.0],
        "grokfast_amplification": [0.0],
        "ortho_grad_weight": [0.0],
    }
    config = token_config(optim, grid)
    assert {name for name, axis in config.axes.items() if axis.optional} == set(grid)
    assert all(config.axes[name].identity == values[0] for name, values in grid.items())
    params, metrics = train(config)
    assert_bitwise_equal(params, plain[0])
    assert_bitwise_equal(metrics, plain[1])


# ----------------------------------------------------------------------------- the norm clamp

CLAMP_GRID = {"weight_decay": [1.0], "clamp_norm": [2.0, 5.0]}


@pytest.fixture(scope="module")
def pinned():
    """The pin on every parameter, c on the grid (one compiled program for both values)."""
    return train(token_config({"after": ["norm_clamp"]}, CLAMP_GRID))


@pytest.mark.parametrize(
    "scope,metric", [("all", "norm_sq"), ("weights", "weight_norm_sq"), ("per_layer", "layer_norm_sq/")]
)
def test_the_pin_holds_the_norm_on_its_scope_at_every_logged_step(pinned, scope, metric):
    _, metrics = (
        pinned
        if scope == "all"
        else train(token_config({"after": [{"name": "norm_clamp", "scope": scope}]}, CLAMP_GRID))
    )
    names = [k for k in metrics if k.startswith(metric)] if scope == "per_layer" else [metric]
    assert len(names) == (2 if scope == "per_layer" else 1)  # embed and head
    c = np.array(CLAMP_GRID["clamp_norm"])[:, None]
    for name in names:
        np.testing.assert_allclose(
            np.sqrt(metrics[name][:, 1:]), np.broadcast_to(c, metrics[name][:, 1:].shape), rtol=2e-6
        )
    if scope == "weights":  # the biases are not part of the pin
        assert np.all(metrics["norm_sq"][:, 1:] > metrics["weight_norm_sq"][:, 1:])


def test_a_grid_over_clamp_norm_is_the_runs_one_by_one(pinned):
    """The axis is traced: one compiled grid equals each value configured as a plain option."""
    params, metrics = pinned
    for i, c in enumerate(CLAMP_GRID["clamp_norm"]):
        alone_params, alone = train(
            token_config({"after": [{"name": "norm_clamp", "norm": c}]}, {"weight_decay": [1.0]})
        )
        for name in metrics:
            np.testing.assert_allclose(metrics[name][i], alone[name][0], rtol=1e-6, atol=1e-7, err_msg=name)
        for x, y in zip(jax.tree.leaves(params), jax.tree.leaves(alone_params)):
            np.testing.assert_allclose(x[i], y[0], rtol=1e-6, atol=1e-7)


TREE = {
    "dense": {"kernel": jnp.array([[3.0, -1.0], [2.0, 0.5]]), "bias": jnp.array([1.0, -2.0])},
    "head": {"kernel": jnp.array([[0.5], [-0.25]]), "bias": jnp.array([4.0])},
}


def clamped(settings, tree, hparams=None):
    """iv.norm_clamp(settings, tree, hparams) in one compiled program (settings static, hparams traced)."""
    return jax.jit(lambda t, hp: iv.norm_clamp(settings, t, hp))(tree, {} if hparams is None else hparams)


def norms(tree, scope):
    groups = {
        "all": [tree],
        "weights": [[x for x in jax.tree.leaves(tree) if x.ndim >= 2]],
        "per_layer": list(tree.values()),
    }[scope]
    return [float(np.sqrt(sum(np.sum(np.asarray(x, np.float64) ** 2) for x in jax.tree.leaves(g)))) for g in groups]


@pytest.mark.parametrize("scope", ["all", "weights", "per_layer"])
def test_the_ceiling_caps_and_leaves_what_is_inside(scope):
    low = min(norms(TREE, scope))
    capped = clamped(iv.NormClamp(mode="ceiling", scope=scope, norm=low), TREE)
    assert all(n <= low * (1 + 1e-6) for n in norms(capped, scope))
    assert min(norms(capped, scope)) == pytest.approx(low, rel=1e-6)
    inside = clamped(iv.NormClamp(mode="ceiling", scope=scope, norm=2 * max(norms(TREE, scope))), TREE)
    assert_bitwise_equal(inside, TREE)
    if scope == "weights":
        assert_bitwise_equal(
            [capped["dense"]["bias"], capped["head"]["bias"]], [TREE["dense"]["bias"], TREE["head"]["bias"]]
        )


def test_the_pin_at_rho_times_the_critical_norm():
    """c = ρ·W_c from the grid's clamp_rho; ρ = 0 leaves θ alone; clamp_rho without W_c is refused."""
    settings = iv.NormClamp(critical_norm=4.0)
    for rho in (0.5, 1.5):
        assert norms(clamped(settings, TREE, {"clamp_rho": jnp.float32(rho)}), "all")[0] == pytest.approx(
            4.0 * rho, rel=1e-6
        )
    assert_bitwise_equal(clamped(settings, TREE, {"clamp_rho": jnp.float32(0.0)}), TREE)
    assert norms(clamped(iv.NormClamp(rho=0.75, critical_norm=4.0), TREE), "all")[0] == pytest.approx(3.0)
    with pytest.raises(ConfigError, match="grid.clamp_rho gives c = ρ·W_c"):
        iv.norm_clamp(iv.NormClamp(), TREE, {"clamp_rho": jnp.float32(1.0)})


def test_critical_from_is_refused_until_resolved():
    config = token_config({"after": [{"name": "norm_clamp", "rho": 1.2, "critical_from": "runs/out/free"}]})
    assert "`nht run` measures W_c" in slots.unresolved_message(config.optim.before, config.optim.after)
    assert iv.critical_sources(config.optim.after) == ("runs/out/free",)
    with pytest.raises(ConfigError, match=re.escape("critical_from = 'runs/out/free' is not resolved: `nht run`")):
        build_trainer(config)
    after = iv.resolve_critical_norms(config.optim.after, lambda folder: {"runs/out/free": 3.5}[folder])
    assert after[0].critical_norm == 3.5 and after[0].critical_from == "runs/out/free"
    assert slots.unresolved_message((), after) is None and iv.critical_sources(after) == ()
    make_updater(OptimConfig(after=after), TrainConfig())  # resolved: builds
    with pytest.raises(ConfigError, match="must be a finite norm > 0"):
        iv.resolve_critical_norms(config.optim.after, lambda folder: float("nan"))


# ----------------------------------------------------------------------------- row clipping

ROW_TREE = {
    "embed": {"embedding": jnp.array([[3.0, 4.0], [0.3, 0.4], [1.0, 0.0]])},  # rows: tokens
    "hidden_0": {"kernel": jnp.array([[3.0, 0.1, 1.0], [4.0, 0.2, -1.0]]), "bias": jnp.array([9.0, 9.0, 9.0])},
    "attn": {"query": {"kernel": jnp.arange(12.0).reshape(2, 2, 3) / 4}},  # (in, heads, head_dim)
}
ROW_AXES = {  # the axes of one row, by the row definitions (tokens of an embedding, inputs of an output unit)
    ("embed", "embedding"): (1,),
    ("hidden_0", "kernel"): (0,),
    ("attn", "query", "kernel"): (0,),
}


def leaf(tree, path):
    for key in path:
        tree = tree[key]
    return np.asarray(tree, np.float64)


def test_row_clip_caps_every_row_and_leaves_short_rows_alone():
    c = 1.5
    clip = jax.jit(lambda tree, hp: iv.row_clip(iv.RowClip(max_norm=c), tree, hp))
    clipped = clip(ROW_TREE, {})
    for path, axes in ROW_AXES.items():
        before, after = leaf(ROW_TREE, path), leaf(clipped, path)
        row_norm = lambda x: np.sqrt(np.sum(x**2, axis=axes, keepdims=True))  # noqa: E731
        short = np.broadcast_to(row_norm(before) <= c, before.shape)
        long = row_norm(before) > c
        assert short.any() and long.any(), path  # every parameter has both kinds of rows
        np.testing.assert_allclose(row_norm(after)[long], c, rtol=1e-6, err_msg=str(path))
        assert np.all(row_norm(after) <= c * (1 + 1e-6)), path
        assert np.array_equal(after[short], before[short]), path  # bit for bit
    assert np.array_equal(clipped["hidden_0"]["bias"], ROW_TREE["hidden_0"]["bias"])  # 1-D: untouched
    assert_bitwise_equal(clip(ROW_TREE, {"row_clip_norm": jnp.float32(0.0)}), ROW_TREE)


def test_row_clip_after_a_step_of_the_updater():
    params = {"dense": {"kernel": jnp.array([[3.0, 0.1], [4.0, 0.2]]), "bias": jnp.array([9.0, 9.0])}}
    grads = jax.tree.map(jnp.ones_like, params)
    optim = OptimConfig(name="sgdw", after=(iv.RowClip(max_norm=1.0),))
    updater = make_updater(optim, TrainConfig(steps=10, log_every=5))
    hp = {"learning_rate": jnp.float32(0.01), "weight_decay": jnp.float32(0.0)}
    new, _ = jax.jit(lambda hp, p, g: updater.apply(hp, p, updater.init(hp, p), g))(hp, params, grads)
    moved = jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)
    columns = np.linalg.norm(np.asarray(new["dense"]["kernel"]), axis=0)
    assert columns[0] == pytest.approx(1.0, rel=1e-6)  # the long row (into output 0) lands on c
    np.testing.assert_array_equal(new["dense"]["kernel"][:, 1], moved["dense"]["kernel"][:, 1])  # short: as moved
    np.testing.assert_array_equal(new["dense"]["bias"], moved["dense"]["bias"])


# ----------------------------------------------------------------------------- gradient filters

PARAMS = {"dense": {"kernel": jnp.array([[3.0, -1.0], [2.0, 0.5]]), "bias": jnp.array([1.0, -2.0])}}
GRADS = {"dense": {"kernel": jnp.array([[0.3, 0.1], [-0.2, 0.4]]), "bias": jnp.array([0.5, -0.5])}}


def test_ortho_grad_is_orthogonal_to_theta_per_tensor():
    def update(settings, hp=None):  # one compiled program per settings (hp traced)
        transform = jax.jit(lambda g, p, hp: iv.ortho_grad(settings, hp).update(g, None, p)[0])
        return transform(GRADS, PARAMS, {} if hp is None else hp)

    full = update(iv.OrthoGrad())
    for g_hat, g, theta in zip(jax.tree.leaves(full), jax.tree.leaves(GRADS), jax.tree.leaves(PARAMS)):
        g_hat, g, theta = (np.asarray(x, np.float64).ravel() for x in (g_hat, g, theta))
        assert abs(g_hat @ theta) / (np.linalg.norm(g_hat) * np.linalg.norm(theta)) < 1e-6
        assert np.linalg.norm(g_hat) == pytest.approx(np.linalg.norm(g), rel=1e-6)  # the paper's renormalisation
    half = update(iv.OrthoGrad(renormalize=False), {"ortho_grad_weight": jnp.float32(0.5)})
    for g_hat, g, theta in zip(jax.tree.leaves(half), jax.tree.leaves(GRADS), jax.tree.leaves(PARAMS)):
        g, theta = np.asarray(g, np.float64), np.asarray(theta, np.float64)
        np.testing.assert_allclose(g_hat, g - 0.5 * np.sum(g * theta) / np.sum(theta**2) * theta, rtol=1e-6)
    assert_bitwise_equal(iv.ortho_grad(iv.OrthoGrad(weight=0.0), {}).update(GRADS, None, PARAMS)[0], GRADS)  # eager
    # w = 0 is g bit for bit even where the arithmetic is not: a gradient too small to square in float32 (the
    # renormalisation would zero it) and a signed zero against a negative θ (−0 − (−0) = +0)
    tiny = {"a": jnp.full(3, 1e-25, jnp.float32), "b": jnp.array([-0.0, 1.0], jnp.float32)}
    theta = {"a": jnp.ones(3, jnp.float32), "b": jnp.array([-1.0, 2.0], jnp.float32)}
    assert_bitwise_equal(iv.ortho_grad(iv.OrthoGrad(weight=0.0), {}).update(tiny, None, theta)[0], tiny)
    # through the updater: plain SGD without decay steps along −ĝ, orthogonal to θ per tensor
    optim = OptimConfig(name="sgdw", before=(iv.OrthoGrad(),))
    updater = make_updater(optim, TrainConfig(steps=10, log_every=5))
    hp = {"learning_rate": jnp.float32(0.1), "weight_decay": jnp.float32(0.0)}
    new, _ = jax.jit(lambda hp, p, g: updater.apply(hp, p, updater.init(hp, p), g))(hp, PARAMS, GRADS)
    for after, before in zip(jax.tree.leaves(new), jax.tree.leaves(PARAMS)):
        step, theta = np.asarray(after - before, np.float64).ravel(), np.asarray(before, np.float64).ravel()
        assert abs(step @ theta) / (np.linalg.norm(step) * np.linalg.norm(theta)) < 1e-5


@pytest.mark.parametrize("init", ["gradient", "zero"])
def test_grokfast_is_its_float64_recursion(init):
    alpha, a, steps = 0.7, 3.0, 6
    rng = np.random.default_rng(0)
    grads = [{"w": rng.normal(size=(3, 2)), "b": rng.normal(size=2)} for _ in range(steps)]
    tx = iv.grokfast(
        iv.Grokfast(init=init), {"grokfast_alpha": jnp.float32(alpha), "grokfast_amplification": jnp.float32(a)}
    )
    state = tx.init(jax.tree.map(jnp.zeros_like, jax.tree.map(jnp.float32, grads[0])))
    update = jax.jit(tx.update)
    slow = None
    for t, g in enumerate(grads):
        out, state = update(jax.tree.map(jnp.float32, g), state)
        if slow is None:
            slow = g if init == "gradient" else jax.tree.map(lambda x: (1 - alpha) * x, g)
        else:
            slow = jax.tree.map(lambda h, x: alpha * h + (1 - alpha) * x, slow, g)
        expected = jax.tree.map(lambda x, h: x + a * h, g, slow)
        for name in g:
            np.testing.assert_allclose(out[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=f"step {t + 1}")
    assert int(state.count) == steps
    # a = 0 is g bit for bit at every step, signed zeros included (g + 0·h would turn −0 into +0)
    off = iv.grokfast(iv.Grokfast(), {"grokfast_amplification": jnp.float32(0.0)})
    signed = [jnp.array([1.0, -2.0], jnp.float32), jnp.array([-0.0, 3.0], jnp.float32)]
    state = off.init(signed[0])
    for g in signed:
        out, state = off.update(g, state)
        assert_bitwise_equal(out, g)


# ----------------------------------------------------------------------------- the injection on the exact toy model


def test_the_injection_shifts_the_time_to_a_norm_by_the_closed_form():
    """toy_linear under ℓ2 SGD with σ² = 0 and no row-space offset: the null-space norm N contracts exactly,
    N_t = (1 − γ)^t N_0 with γ = 2ηλ(2 − 2ηλ), and θ ← s·θ after update k multiplies N by s², so the time to reach
    any N* below the jump moves by log(s²)/(−log(1 − γ))."""
    eta, lam, k, target_step = 0.05, 0.05, 50, 300
    scales = [1.0, 2.0, 0.5]
    config = experiment.from_dict(
        {
            "name": "injection",
            "task": {"name": "toy_linear"},
            "optim": {"name": "sgd", "decay_on": "all", "after": [{"name": "norm_injection", "at_step": k}]},
            "train": {"steps": 600, "log_every": 1},
            "grid": {"learning_rate": eta, "weight_decay": lam, "null_sq": 100.0, "injection_scale": scales},
        }
    )
    declared = declared_contraction(config.optim, eta, lam)
    gamma = float(gamma_eff("sgd", eta, lam))
    assert declared.known and float(declared.gamma) == gamma  # the injection leaves the rate as it was
    _, metrics = train(config)
    log_n = np.log(metrics["null_norm_sq"].astype(np.float64))
    rate = -np.log1p(-gamma)
    target = np.log(100.0) - rate * target_step

    def reach(row):  # the step where log N crosses the target, linear in t between logs (exact for a geometric N)
        i = int(np.argmax(row <= target))
        return i - 1 + (row[i - 1] - target) / (row[i - 1] - row[i])

    free = reach(log_n[0])
    assert free == pytest.approx(target_step, abs=0.05)
    for run, s in enumerate(scales[1:], start=1):
        assert reach(log_n[run]) - free == pytest.approx(np.log(s**2) / rate, abs=0.05)
        assert log_n[run, k] - log_n[0, k] == pytest.approx(np.log(s**2), abs=1e-4)  # the jump, once
        after = np.diff(log_n[run, k + 1 :])
        np.testing.assert_allclose(after, -rate, rtol=1e-3)  # then the optimiser's rate, as declared
    np.testing.assert_array_equal(log_n[0, :k], log_n[1, :k])  # nothing before update k


# ----------------------------------------------------------------------------- declarations and refusals


def test_the_declared_contractions():
    eta, lam = np.full(3, 1e-2), 0.5
    rate = gamma_eff("adamw", eta, lam)
    for settings in (iv.Grokfast(), iv.OrthoGrad()):
        c = declared_contraction(OptimConfig(before=(settings,)), eta, lam)
        assert c.known and np.array_equal(c.gamma, rate)
    c = declared_contraction(OptimConfig(after=(iv.NormInjection(scale=2.0),)), eta, lam)
    assert c.known and np.array_equal(c.gamma, rate)
    for settings, words in (
        (iv.NormClamp(norm=3.0), "norm_clamp (mode = pin, scope = all)"),
        (iv.RowClip(max_norm=1.0), "row_clip"),
    ):
        c = declared_contraction(OptimConfig(after=(settings,)), eta, lam)
        assert not c.known and np.isnan(c.gamma).all() and words in c.reason


def test_the_entries_round_trip_through_the_configuration():
    config = token_config(
        {
            "before": ["grokfast", {"name": "ortho_grad", "renormalize": False}],
            "after": [
                {"name": "norm_clamp", "mode": "ceiling", "scope": "per_layer", "norm": 3},
                "row_clip",
                {"name": "norm_injection", "scale": 2, "at_step": 3},
            ],
        },
        {"clamp_norm": [1.0, 2.0], "grokfast_alpha": [0.5, 0.9], "zip": [["clamp_norm", "grokfast_alpha"]]},
    )
    assert experiment.from_dict(experiment.to_dict(config)) == config
    assert config.optim.after[2] == iv.NormInjection(scale=2.0, at_step=3)
    assert slots.uses_step(config.optim.after) and not slots.uses_step(config.optim.after[:2])


@pytest.mark.parametrize(
    "optim,grid,message",
    [
        ({"after": [{"name": "norm_clamp", "norm": -1.0}]}, {}, "norm must be a finite number ≥ 0"),
        ({"after": ["norm_clamp"]}, {"clamp_norm": [-1.0, 2.0]}, "grid.clamp_norm must be ≥ 0"),
        ({"after": [{"name": "norm_clamp", "norm": 2.0, "rho": 1.0, "critical_norm": 3.0}]}, {}, "not both"),
        ({"after": [{"name": "norm_clamp", "rho": 1.0}]}, {}, "W_c is not given"),
        ({"after": [{"name": "norm_clamp", "mode": "clamp"}]}, {}, "choose one of ['pin', 'ceiling']"),
        ({"after": [{"name": "row_clip", "max_norm": -0.5}]}, {}, "row_clip: max_norm must be a finite number ≥ 0"),
        ({"after": ["row_clip"]}, {"row_clip_norm": [-1.0]}, "grid.row_clip_norm must be ≥ 0"),
        ({"after": [{"name": "norm_injection", "scale": 0.0}]}, {}, "scale must be a finite number > 0"),
        ({"after": [{"name": "norm_injection", "at_step": 0}]}, {}, "at_step must be an integer ≥ 1"),
        ({"after": ["norm_injection"]}, {"injection_scale": [0.0, 1.0]}, "grid.injection_scale must be > 0"),
        ({"before": [{"name": "grokfast", "alpha": 1.0}]}, {}, "alpha must lie in [0, 1)"),
        ({"before": ["grokfast"]}, {"grokfast_alpha": [0.5, 1.0]}, "grid.grokfast_alpha must lie in [0, 1)"),
        ({"before": [{"name": "grokfast", "amplification": -1.0}]}, {}, "amplification must be a finite number ≥ 0"),
        ({"before": [{"name": "ortho_grad", "weight": 1.5}]}, {}, "weight must lie in [0, 1]"),
        ({"before": ["ortho_grad"]}, {"ortho_grad_weight": [2.0]}, "grid.ortho_grad_weight must lie in [0, 1]"),
        ({}, {"clamp_norm": [1.0]}, "grid.clamp_norm is the 'norm' of the optim.after entry 'norm_clamp'"),
        (
            {"after": ["norm_clamp"]},
            {"grokfast_amplification": [1.0]},
            "grid.grokfast_amplification is the 'amplification' of the optim.before entry 'grokfast'",
        ),
    ],
)
def test_bad_strengths_and_stray_axes_are_config_errors(optim, grid, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        token_config(optim, grid)


# ----------------------------------------------------------------------------- the docs page


def test_every_example_of_the_docs_page_is_a_valid_configuration():
    """Each ```toml block of docs/configuration/interventions.md, on top of a token configuration."""
    blocks = re.findall(r"```toml\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert len(blocks) >= 6
    for block in blocks:
        tables = tomllib.loads(block)
        config = token_config(tables.get("optim"), tables.get("grid"))
        if slots.unresolved_message(config.optim.before, config.optim.after) is None:
            make_updater(config.optim, config.train)
        assert {s.name for s in (*config.optim.before, *config.optim.after)} <= set(slots.BEFORE) | set(slots.AFTER)
