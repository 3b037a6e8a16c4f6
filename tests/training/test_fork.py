"""[fork] (`nht_jax.training.fork`): grids forked from one memorised state, their refusals, and W_c of another folder
(`nht_jax.training.critical`)."""

import shutil

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.training import critical
from nht_jax.training import fork
from nht_jax.results import folder as results
from nht_jax.training import snapshots
from nht_jax.training.sweep import run_sweep

BASE = ["train.steps=300", "model.hidden=[16]"]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    root = tmp_path_factory.mktemp("fork")
    run_sweep(experiment.load("tiny", BASE), root / "plain", progress=False)
    return run_sweep(
        experiment.load("tiny", BASE + ["execution.snapshot_steps=[100]", "execution.snapshot_at_fit=true"]),
        root / "source",
        progress=False,
    )


def forked(source, *settings, steps=100):
    return experiment.load(
        "tiny",
        [
            "model.hidden=[16]",
            f"train.steps={steps}",
            f"fork.from={str(source.path)!r}",
            "fork.select={weight_decay = 1.0}",
            'fork.step="fit"',
            *settings,
        ],
    )


def test_the_arms_of_a_forked_grid_start_from_the_source_state_and_the_identity_arm_continues_it(source, tmp_path):
    config = forked(source, "execution.snapshot_steps=[0]")
    res = run_sweep(config, tmp_path / "forked", progress=False)
    chosen = source.select(weight_decay=1.0)  # seeds 0 and 1
    sources = {s["seed"]: s for s in res.config.fork.sources}
    assert [sources[s]["run"] for s in (0, 1)] == list(chosen)
    snaps, start = snapshots.read(source.path / "snapshots.npz"), snapshots.read(res.path / "snapshots.npz")
    for r in range(res.num_runs):  # arms wd = 0.01 and 1.0 of each seed
        src = sources[int(res.hparams["seed"][r])]["run"]
        t_fit = source.summary[src]["T_fit"]
        assert sources[int(res.hparams["seed"][r])]["step"] == t_fit
        j = int(np.searchsorted(source.steps, t_fit))
        for name, values in res.metrics.items():  # step 0 of the fork = the source at its T_fit
            assert np.array_equal(values[r, 0], source.metrics[name][src, j], equal_nan=True), name
        for a, b in zip(start.leaves["step_0"], snaps.leaves["fit"]):  # the whole state, bit for bit
            assert np.array_equal(a[r], b[src])
        if res.hparams["weight_decay"][r] == 1.0:  # the source's own settings: the source run continued
            n = min(res.steps.size, source.steps.size - j)  # as far as the source trained
            for name, values in res.metrics.items():
                assert np.array_equal(values[r, :n], source.metrics[name][src, j : j + n], equal_nan=True), name
    other = res.hparams["weight_decay"] != 1.0
    assert not np.array_equal(res.metrics["norm_sq"][other, -1], res.metrics["norm_sq"][~other, -1])
    text = (res.path / "config.toml").read_text()
    assert "[fork]" in text and source.meta["config_digest"] in text and str(source.path) in text
    assert res.meta["fork"]["sources"][0]["values"]["weight_decay"] == 1.0
    assert "forked from source at T_fit of run(s) 2, 3" in res.config.fork.origin_text()
    moved = experiment.from_dict(
        {**experiment.to_dict(config), "fork": {**experiment.to_dict(config)["fork"], "step": 100}}
    )
    assert experiment.digest(fork.prepare(moved)[0]) != experiment.digest(fork.prepare(config)[0])


def test_a_fork_without_fork_is_its_configuration_unchanged():
    config = experiment.load("tiny")
    assert fork.prepare(config) == (config, None) and "fork" not in experiment.to_dict(config)


@pytest.mark.parametrize(
    "settings, message",
    [
        (["fork.select={weight_decay = 0.5}"], "no source run of fork.select = {'weight_decay': 0.5} has seed 0"),
        (["grid.seed=[0, 7]"], "has seed 7"),
        (["fork.select={}"], "2 source runs of every source run"),
        (["fork.select={width = 8}"], "fork.select names ['width'], which the source grid does not have"),
        (["fork.step=150"], "has no snapshot at step 150; it kept step_100 (4 of 4 runs), fit (4 of 4 runs)"),
        (["model.hidden=[32]"], "trains [model]"),
        (["task.p=29"], "trains [task]"),
        (['optim.name="sgd"'], "trains with optim.name = 'adamw'"),
    ],
)
def test_a_fork_is_refused_before_training_saying_what_exists(source, settings, message):
    with pytest.raises(ConfigError) as error:
        fork.prepare(forked(source, *settings))
    assert message in str(error.value)
    if "source run" in message or "seed" in message:
        assert "run 2 (weight_decay = 1" in str(error.value) or "run 0 (weight_decay = 0.01" in str(error.value)


def test_a_fork_from_a_missing_an_incomplete_or_a_snapshotless_folder_is_refused(source, tmp_path):
    with pytest.raises(ConfigError, match="no such results folder"):
        fork.prepare(experiment.load("tiny", [f"fork.from='{tmp_path / 'none'}'"]))
    broken = tmp_path / "broken"
    shutil.copytree(source.path, broken)
    (broken / "meta.json").unlink()
    with pytest.raises(ConfigError, match="is not a complete results folder .*meta.json is missing"):
        fork.prepare(experiment.load("tiny", ["model.hidden=[16]", f"fork.from='{broken}'"]))
    with pytest.raises(ConfigError, match="holds no snapshots"):
        fork.prepare(experiment.load("tiny", ["model.hidden=[16]", f"fork.from='{source.path.parent / 'plain'}'"]))


def test_fork_keys_are_checked_when_loaded():
    with pytest.raises(ConfigError, match="fork.step must be"):
        experiment.load("tiny", ["fork.from='x'", "fork.step=-1"])
    with pytest.raises(ConfigError, match="fork.from must name a results folder"):
        experiment.load("tiny", ["fork.step=100"])


def test_slot_entries_the_source_lacks_start_fresh_and_the_optimiser_state_is_carried(source):
    import jax
    import jax.numpy as jnp

    from nht_jax.engine.step import make_updater

    config = forked(
        source,
        'optim.before=[{name = "clip_by_global_norm", max_norm = 1.0}]',
        'optim.after=[{name = "norm_clamp", norm = 0.0}]',
    )
    params = {"w": jnp.ones((2, 3))}
    hp = {"learning_rate": jnp.float32(1e-2), "weight_decay": jnp.float32(1.0)}
    fresh = make_updater(config.optim, config.train).init(hp, params)
    old = make_updater(source.config.optim, source.config.train).init(hp, params)
    old = jax.tree.map(lambda x: x + 1 if jnp.issubdtype(x.dtype, jnp.floating) else x, old)
    merged = fork.carry_optimiser(fresh, old, source.config.optim, config.optim)
    assert jax.tree.structure(merged) == jax.tree.structure(fresh)
    entries, tx = fork.optimiser_parts(merged, config.optim)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(tx), jax.tree.leaves(old)))
    assert jax.tree.structure(entries) == jax.tree.structure(fork.optimiser_parts(fresh, config.optim)[0])


def test_critical_norm_is_the_mean_norm_at_transition_of_the_runs_that_transition(source):
    rows = source.summary
    loose = experiment.AnalysisConfig(transition_metric="test_acc", transition_threshold=0.3)
    measured = critical.critical_norm_of(source.path, loose)
    expected = [
        i
        for i in range(source.num_runs)
        if results.load_results(source.path).summary[i]["regime"] in ("intermediate", "structured")
    ]
    assert expected == [] and rows  # the source's own definitions: none transitions in 300 steps
    assert measured.runs == [2, 3]
    norms = [
        np.sqrt(source.metrics["norm_sq"][i, int(np.searchsorted(source.steps, t))])
        for i, t in zip(measured.runs, measured.steps)
    ]
    assert measured.value == pytest.approx(np.mean(norms), rel=1e-6)
    assert measured.cv == pytest.approx(np.std(norms) / np.mean(norms), rel=1e-5)
    with pytest.raises(ConfigError, match="none of its 4 runs transitions .*W_c is undefined"):
        critical.critical_norm_of(source.path)
    with pytest.raises(ConfigError, match="no such results folder"):
        critical.critical_norm_of(source.path / "none")


def test_nht_run_resolves_a_norm_clamps_critical_from_before_training_or_refuses(source):
    unresolved = experiment.load(
        "tiny", [f'optim.after=[{{name = "norm_clamp", rho = 1.0, critical_from = "{source.path}"}}]']
    )
    with pytest.raises(ConfigError, match="none of its 4 runs transitions"):
        critical.resolve(unresolved)
    plain = experiment.load("tiny")
    assert critical.resolve(plain) == (plain, [])


def test_nht_run_measures_w_c_from_critical_from_into_the_config_and_meta(tmp_path):
    import json
    import tomllib

    loose = BASE + ["analysis.transition_metric=test_acc", "analysis.transition_threshold=0.3"]
    free = run_sweep(experiment.load("tiny", loose), tmp_path / "free", progress=False)
    expected = critical.critical_norm_of(free.path)
    assert expected.runs  # some of its runs transition under its own definitions
    clamped = experiment.load(
        "tiny",
        [
            "train.steps=20",
            "train.log_every=10",
            "grid.seed=[0]",
            f'optim.after=[{{name = "norm_clamp", rho = 1.0, critical_from = "{free.path}"}}]',
        ],
    )
    res = run_sweep(clamped, tmp_path / "clamped", progress=False)
    written = tomllib.loads((res.path / "config.toml").read_text())["optim"]["after"][0]
    assert written["critical_norm"] == pytest.approx(expected.value, rel=1e-12)
    assert written["critical_from"] == str(free.path)
    meta = json.loads((res.path / "meta.json").read_text())
    assert meta["critical_norm"][0]["critical_norm"] == pytest.approx(expected.value, rel=1e-12)
    pinned = np.sqrt(res.metrics["norm_sq"][:, 1:])  # ρ = 1: ‖θ‖ = W_c after every update
    np.testing.assert_allclose(pinned, expected.value, rtol=2e-6)
