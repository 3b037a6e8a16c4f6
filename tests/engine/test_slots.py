"""The two slots of the gradient step: each entry runs in its place (before: on the raw loss gradient; after: on θ
after the update), reads traced hyperparameters, is configured from [optim] with clear errors, leaves the digest
of a configuration without slots alone, and declares its contraction, which reaches γ_eff, the fits, the
predictor and the bound checks. The docs page's worked example runs here as written."""

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.engine import slots
from nht_jax.engine.contraction import unchanged
from nht_jax.engine.optim import declared_contraction, gamma_eff
from nht_jax.config.sections import OptimConfig, TrainConfig
from nht_jax.engine.step import make_updater
from nht_jax.results.folder import Results

PARAMS = {"dense": {"kernel": jnp.array([[3.0, -1.0], [2.0, 0.5]]), "bias": jnp.array([1.0, -2.0])}}
GRADS = {"dense": {"kernel": jnp.array([[0.3, 0.1], [-0.2, 0.4]]), "bias": jnp.array([0.5, -0.5])}}
ETA, LAM = 0.1, 0.2
HP = {"learning_rate": jnp.float32(ETA), "weight_decay": jnp.float32(LAM)}
DOC = Path(__file__).resolve().parents[2] / "docs" / "extending" / "intervention.md"


def one_step(optim: OptimConfig, params=PARAMS, grads=GRADS, hparams=HP):
    updater = make_updater(optim, TrainConfig(steps=10, log_every=5))
    new, _ = updater.apply(hparams, params, updater.init(hparams, params), grads)
    return new


def leaves(tree):
    return [np.asarray(x, np.float64) for x in jax.tree.leaves(tree)]


def global_norm(tree):
    return float(np.sqrt(sum(np.sum(x**2) for x in leaves(tree))))


@pytest.fixture
def register(monkeypatch):
    """Register a test entry in a slot for one test."""

    def add(slot, name, entry):
        monkeypatch.setitem(slots.SLOTS[slot], name, entry)

    return add


def named(name):
    """A settings dataclass with only a name (for test entries)."""
    from dataclasses import make_dataclass
    from typing import Literal

    return make_dataclass(name.title(), [("name", Literal[name], name)], frozen=True)


# ----------------------------------------------------------------------------- the slots in their places


def test_before_runs_on_the_raw_gradient_ahead_of_the_l2_term(register):
    """A before entry that zeroes the gradient leaves sgd's ℓ2 decay: θ ← θ(1 − 2ηλ) on the decayed kernel."""
    Zero = named("zero")
    register("before", "zero", slots.GradientEntry(Zero, lambda s, hp: optax.set_to_zero()))
    new = one_step(OptimConfig(name="sgd", before=(Zero(),)))
    np.testing.assert_allclose(new["dense"]["kernel"], PARAMS["dense"]["kernel"] * (1 - 2 * ETA * LAM), rtol=1e-6)
    np.testing.assert_array_equal(new["dense"]["bias"], PARAMS["dense"]["bias"])  # not decayed, no gradient


def test_clip_by_global_norm_clips_the_raw_gradient_only():
    c = 0.1
    new = one_step(OptimConfig(name="sgd", before=(slots.ClipByGlobalNorm(max_norm=c),)))
    scale = c / global_norm(GRADS)  # < 1: the clip is active
    (bias, kernel), (g_bias, g_kernel) = leaves(PARAMS), leaves(GRADS)  # leaves in key order: bias, kernel
    np.testing.assert_allclose(leaves(new)[0], bias - ETA * scale * g_bias, rtol=1e-6)
    np.testing.assert_allclose(leaves(new)[1], kernel - ETA * (scale * g_kernel + 2 * LAM * kernel), rtol=1e-6)


def test_after_runs_on_theta_after_the_update():
    r = 1.0
    new = one_step(OptimConfig(name="sgdw", after=(slots.ProjectL2Ball(max_norm=r),)))
    moved = one_step(OptimConfig(name="sgdw"))
    assert global_norm(new) == pytest.approx(r, rel=1e-6)
    factor = r / global_norm(moved)
    for a, b in zip(leaves(new), leaves(moved)):
        np.testing.assert_allclose(a, factor * b, rtol=1e-6)  # the projection of θ + u, not θ projected + u


def test_a_ball_that_holds_theta_changes_nothing():
    inside = one_step(OptimConfig(name="adamw", after=(slots.ProjectL2Ball(max_norm=1e3),)))
    plain = one_step(OptimConfig(name="adamw"))
    assert all(np.array_equal(a, b) for a, b in zip(leaves(inside), leaves(plain)))


def test_entries_read_traced_hyperparameters_under_vmap(register):
    """A before entry scaling g by hparams["strength"] and an after entry scaling θ by it, vmapped over runs."""
    Gain, Shrink = named("gain"), named("shrink")
    register("before", "gain", slots.GradientEntry(Gain, lambda s, hp: optax.scale(hp["strength"])))
    register(
        "after",
        "shrink",
        slots.ConstraintEntry(
            Shrink, lambda s, params, hp, step: jax.tree.map(lambda p: p * hp["strength"], params), unchanged
        ),
    )
    optim = OptimConfig(name="sgdw", before=(Gain(),), after=(Shrink(),))
    strengths = jnp.array([0.5, 2.0])
    hp = {"learning_rate": jnp.full(2, ETA), "weight_decay": jnp.zeros(2), "strength": strengths}
    new = jax.jit(jax.vmap(lambda h: one_step(optim, hparams=h)))(hp)
    for i, s in enumerate([0.5, 2.0]):
        expected = (PARAMS["dense"]["kernel"] - ETA * s * GRADS["dense"]["kernel"]) * s
        np.testing.assert_allclose(new["dense"]["kernel"][i], expected, rtol=1e-6)


def test_without_slots_the_step_is_the_optimiser_alone():
    updater = make_updater(OptimConfig(name="adamw"), TrainConfig(steps=10, log_every=5))
    state = updater.init(HP, PARAMS)
    reference = optax.adamw(
        ETA, b1=0.9, b2=0.98, eps=1e-8, weight_decay=LAM, mask=jax.tree.map(lambda p: p.ndim >= 2, PARAMS)
    )
    assert jax.tree.structure(state) == jax.tree.structure(reference.init(PARAMS))  # checkpoints keep their layout


# ----------------------------------------------------------------------------- configuration


def tiny(optim=None, grid=None):
    return experiment.from_dict(
        {
            "name": "slots",
            "task": {"name": "modular", "p": 31},
            "model": {"name": "mlp", "hidden": [32]},
            "optim": {"name": "adamw", **(optim or {})},
            "train": {"steps": 40, "log_every": 10},
            "grid": grid or {"weight_decay": [0.01, 1.0], "learning_rate": 1e-2, "seed": [0, 1], "train_fraction": 0.5},
        }
    )


def test_slots_from_names_and_tables_and_back():
    config = tiny({"before": [{"name": "clip_by_global_norm", "max_norm": 0.5}], "after": ["project_l2_ball"]})
    assert config.optim.before == (slots.ClipByGlobalNorm(max_norm=0.5),)
    assert config.optim.after == (slots.ProjectL2Ball(),)
    assert experiment.from_dict(experiment.to_dict(config)) == config
    assert 'name = "clip_by_global_norm"' in experiment.to_toml(config)
    override = experiment.load("tiny", ['optim.before=[{name="clip_by_global_norm",max_norm=0.25}]'])
    assert override.optim.before[0].max_norm == 0.25


@pytest.mark.parametrize(
    "slot,value,message",
    [
        ("before", ["clip_by_globl_norm"], "Did you mean 'clip_by_global_norm'"),
        ("before", [{"name": "clip_by_global_norm", "max_nrm": 1.0}], "Did you mean 'max_norm'"),
        ("after", [{"name": "project_l2_ball", "max_norm": -1.0}], "max_norm must be > 0"),
        ("after", ["clip_by_global_norm"], "Known entries of the 'after' slot: project_l2_ball"),
        ("before", [3], "a name or a table"),
    ],
)
def test_bad_slot_entries_are_config_errors(slot, value, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        tiny({slot: value})


def test_a_python_entry_in_the_wrong_slot_is_refused():
    with pytest.raises(ConfigError, match="no entry of the 'before' slot"):
        experiment.revised(experiment.load("tiny"), optim=OptimConfig(before=(slots.ProjectL2Ball(),)))


def test_the_digest_without_slots_is_the_digest_before_slots_existed():
    pinned = experiment.from_dict(
        {
            "name": "pin",
            "task": {"name": "modular", "p": 31},
            "model": {"name": "mlp", "hidden": [32]},
            "optim": {"name": "sgd_momentum", "momentum": 0.5},
            "train": {"steps": 40, "log_every": 10},
            "grid": {"weight_decay": [0.01, 1.0], "learning_rate": 1e-2, "seed": [0, 1], "train_fraction": 0.5},
        }
    )
    assert experiment.digest(pinned) == "8732ba2c2eb5de94"  # computed with the code before the slots
    assert experiment.digest(tiny({"before": ["clip_by_global_norm"]})) != experiment.digest(tiny())
    assert experiment.digest(tiny({"after": ["project_l2_ball"]})) != experiment.digest(tiny())


# ----------------------------------------------------------------------------- the contraction declaration


def test_a_gradient_filter_keeps_the_optimiser_s_contraction_exactly():
    optim = OptimConfig(name="sgdw", decay_on="all", before=(slots.ClipByGlobalNorm(max_norm=1e-3),))
    declared = declared_contraction(optim, ETA, LAM)
    assert declared.known and float(declared.gamma) == float(gamma_eff("sgdw", ETA, LAM))
    zeros = jax.tree.map(jnp.zeros_like, PARAMS)
    new = one_step(optim, grads=zeros)
    measured = global_norm(new) ** 2 / global_norm(PARAMS) ** 2
    assert measured == pytest.approx(1 - float(declared.gamma), rel=1e-6)


def test_a_rescaling_constraint_makes_the_contraction_unknown():
    c = declared_contraction(OptimConfig(after=(slots.ProjectL2Ball(max_norm=7.0),)), np.full(3, ETA), LAM)
    assert not c.known and np.isnan(c.gamma).all() and c.gamma.shape == (3,)
    assert "project_l2_ball" in c.reason and "max_norm = 7" in c.reason


def planted(optim=None):
    """λ ∈ {0.1, 0.2, 0.4} × 3 seeds, AdamW η = 1e-3: V contracts from 400 at T_fit = 1000 at the optimiser's
    rate and transitions two e-folds later, every run intermediate."""
    config = tiny(
        optim, {"weight_decay": [0.1, 0.2, 0.4], "learning_rate": 1e-3, "seed": [0, 1, 2], "train_fraction": 0.5}
    )
    hp = {k: np.asarray(v) for k, v in config.runs().items()}
    steps = np.arange(0, 20001, 50.0)
    rate = -np.log1p(-gamma_eff("adamw", hp["learning_rate"].astype(np.float64), hp["weight_decay"]))
    v = np.where(steps < 1000, 400.0, 400.0 * np.exp(-rate[:, None] * (steps - 1000)))
    t_tr = 1000 + 50 * np.ceil(2 / rate / 50)
    summary = [
        {
            "run": i,
            **{k: hp[k][i] for k in hp},
            "regime": "intermediate",
            "T_fit": 1000.0,
            "T_transition": float(t_tr[i]),
            "diverged": False,
        }
        for i in range(len(t_tr))
    ]
    metrics = {"norm_sq": v, "weight_norm_sq": v, "finite": np.ones_like(v), "train_acc": np.ones_like(v)}
    axes = {k: np.unique(a) for k, a in hp.items()}
    return Results(None, config, steps, metrics, hp, axes, summary)


def test_the_fits_mark_an_unknown_contraction_instead_of_using_eta_lambda():
    from nht_jax.analysis.fits import FitOptions, fit_report, report_markdown

    known = fit_report(planted(), FitOptions(n_bootstrap=20))
    collapse = next(f for f in known["delay_fits"] if f.kind == "collapse")
    assert len(collapse.runs) == 9 and known["contraction"].known
    unknown = fit_report(planted({"after": ["project_l2_ball"]}), FitOptions(n_bootstrap=20))
    collapse = next(f for f in unknown["delay_fits"] if f.kind == "collapse")
    assert len(collapse.runs) == 0 and {r for _, r in collapse.excluded} == {"γ_eff unknown (see the notes)"}
    assert np.isnan(unknown["table"].gamma).all()
    text = report_markdown(unknown)
    assert "γ_eff unknown: optim.after project_l2_ball" in text and "none is fitted with ηλ" in text


def test_the_predictor_marks_an_unknown_contraction():
    from nht_jax.analysis.predictor import predictor_report

    known = predictor_report(planted())
    assert all(r["contraction"] == "declared" and np.isfinite(r["amplification"]) for r in known.rows())
    unknown = predictor_report(planted({"after": ["project_l2_ball"]}))
    rows = unknown.rows()
    assert all(r["contraction"] == "unknown" and np.isnan(r["amplification"]) for r in rows)
    assert [p.T_hat for p in unknown.predictions] == [p.T_hat for p in known.predictions]  # γ̂ is measured
    assert "γ_eff unknown: optim.after project_l2_ball" in unknown.markdown()
    assert "γ_eff unknown" not in known.markdown()


def test_a_clamp_grid_s_runs_at_c_0_keep_the_declared_rate():
    """clamp_norm = 0 is the clamp's identity (bit for bit): those runs of a clamp grid keep the optimiser's γ_eff
    in the fits, the predictor and the bound checks; the clamped runs are unknown."""
    from nht_jax.analysis.fits import FitOptions, fit_report
    from nht_jax.analysis.predictor import predictor_report
    from nht_jax.theory.recorded import check_results

    res = planted({"after": ["norm_clamp"]})
    clamp = np.tile([0.0, 0.0, 3.0], 3)  # every third run clamped
    res.hparams["clamp_norm"] = clamp
    off = clamp == 0
    c = declared_contraction(res.config.optim, res.hparams["learning_rate"], res.hparams["weight_decay"], res.hparams)
    rate = gamma_eff("adamw", res.hparams["learning_rate"], res.hparams["weight_decay"])
    assert np.array_equal(c.gamma[off], rate[off]) and np.isnan(c.gamma[~off]).all() and "norm_clamp" in c.reason
    assert declared_contraction(res.config.optim, 1e-3, res.hparams["weight_decay"]).reason  # no grid: unknown
    table = fit_report(res, FitOptions(n_bootstrap=20))["table"]
    assert np.array_equal(np.isnan(table.gamma), ~off)
    rows = predictor_report(res).rows()
    assert [r["contraction"] for r in rows] == ["declared" if o else "unknown" for o in off]
    assert [bool(np.isfinite(r["gamma_eff"])) for r in check_results(res)] == list(off)


def test_the_bound_checks_read_the_declaration():
    from nht_jax.theory.recorded import check_results

    known = check_results(planted())
    assert all(np.isfinite(r["gamma_eff"]) and np.isfinite(r["c_assumed"]) for r in known)
    unknown = check_results(planted({"after": ["project_l2_ball"]}))
    for r in unknown:
        assert np.isnan(r["gamma_eff"]) and np.isnan(r["c_assumed"]) and np.isnan(r["T_lower"])
        assert "γ_eff unknown (optim.after project_l2_ball" in r["verdict"]
        assert "no lower bound" in r["position"]


# ----------------------------------------------------------------------------- the docs page's worked example


def doc_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)


def test_the_worked_example_runs_as_written(monkeypatch, tmp_path):
    # a placeholder under the example's name, so that monkeypatch removes the name again after the test
    monkeypatch.setitem(slots.BEFORE, "clip_by_value", slots.BEFORE["clip_by_global_norm"])
    monkeypatch.chdir(tmp_path)
    blocks = doc_blocks()
    assert len(blocks) == 3
    namespace: dict = {}
    # exec: the page's own code blocks, run as written
    exec(blocks[0], namespace)  # noqa: S102 — declared_contraction with a constraint
    assert not namespace["contraction"].known
    exec(blocks[1], namespace)  # noqa: S102 — the entry
    assert slots.BEFORE["clip_by_value"].settings is namespace["ClipByValue"]
    exec(blocks[2], namespace)  # noqa: S102 — configured and trained
    results = namespace["results"]
    assert results.config.optim.before == (namespace["ClipByValue"](max_delta=0.01),)
    assert (tmp_path / "out" / "tiny-clipped" / "summary.csv").exists()
    with pytest.raises(ConfigError, match="max_delta must be > 0"):
        namespace["ClipByValue"](max_delta=0.0)
    new = one_step(OptimConfig(name="sgdw", before=(namespace["ClipByValue"](max_delta=0.25),)))
    np.testing.assert_allclose(new["dense"]["bias"], PARAMS["dense"]["bias"] - ETA * np.array([0.25, -0.25]))
