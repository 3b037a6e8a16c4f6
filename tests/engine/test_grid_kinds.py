"""Zipped and random grid axes: pairing, reproducible draws, product with list axes, error messages, the resolved
config's round trip, unchanged digests of product grids, and the figures of an irregular grid."""

import hashlib
import json
import math
import tomllib

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.base.presets import list_presets
from nht_jax.engine import grid as grid_lib
from nht_jax.results.folder import Results

ZIP = {
    "zip": [["learning_rate", "weight_decay"]],
    "learning_rate": [1e-2, 3e-3, 1e-3],
    "weight_decay": [0.01, 0.1, 1.0],
}
RANDOM = {
    "weight_decay": {"loguniform": [1e-3, 10.0]},
    "learning_rate": {"loguniform": [1e-3, 1e-2]},
    "samples": 4,
    "sample_seed": 7,
}


def points(runs, *axes):
    return [tuple(float(runs[a][i]) for a in axes) for i in range(grid_lib.num_runs(runs))]


def test_zipped_axes_are_paired_not_crossed(tiny_config):
    config = tiny_config(grid={**ZIP, "seed": [0, 1]})
    runs = config.runs()
    assert set(runs) == set(config.axes) and grid_lib.num_runs(runs) == 3 * 2  # 3 pairs × 2 seeds, not 3 × 3 × 2
    pairs = points(runs, "weight_decay", "learning_rate")
    expected = [(wd, lr) for wd, lr in zip(ZIP["weight_decay"], ZIP["learning_rate"])]
    assert len(set(pairs)) == 3 and np.allclose(sorted(set(pairs)), sorted(expected), rtol=1e-6, atol=0)
    assert config.zipped == (("weight_decay", "learning_rate"),) and config.grid_kind == "irregular"
    # row-major over the factors: the group stands where weight_decay stands, before the seed
    assert list(runs["seed"]) == [0, 1] * 3
    assert tiny_config().grid_kind == "product" and tiny_config().zipped == ()


def test_random_samples_are_reproducible_inside_bounds_and_crossed_with_list_axes(tiny_config):
    config = tiny_config(grid={**RANDOM, "seed": [0, 1, 2]})
    again = tiny_config(grid={**RANDOM, "seed": [0, 1, 2]})
    other = tiny_config(grid={**RANDOM, "seed": [0, 1, 2], "sample_seed": 8})
    assert config.grid == again.grid and config.grid["weight_decay"] != other.grid["weight_decay"]
    assert len(config.grid["weight_decay"]) == len(config.grid["learning_rate"]) == 4
    assert all(1e-3 <= v <= 10 for v in config.grid["weight_decay"])
    assert all(1e-3 <= v <= 1e-2 for v in config.grid["learning_rate"])
    runs = config.runs()
    assert grid_lib.num_runs(runs) == 4 * 3 and config.grid_kind == "irregular"
    pairs = points(runs, "weight_decay", "learning_rate")
    assert len(set(pairs)) == 4 and all(pairs.count(p) == 3 for p in set(pairs))  # each point × every seed
    for p in set(pairs):
        assert sorted(int(runs["seed"][i]) for i in range(len(pairs)) if pairs[i] == p) == [0, 1, 2]
    # one stream per axis: adding a random axis leaves the others' draws alone
    alone = tiny_config(grid={"weight_decay": RANDOM["weight_decay"], "samples": 4, "sample_seed": 7})
    assert alone.grid["weight_decay"] == config.grid["weight_decay"]
    assert alone.grid_kind == "product" and alone.zipped == ()  # one random axis is a list like any other
    u_wd = np.log(np.array(config.grid["weight_decay"]) / 1e-3) / np.log(1e4)
    u_lr = np.log(np.array(config.grid["learning_rate"]) / 1e-3) / np.log(10)
    assert not np.allclose(u_wd, u_lr)  # independent streams, not one stream shared by the axes


def test_loguniform_spreads_evenly_in_log_and_uniform_in_value():
    logs = np.log10(grid_lib.draw("weight_decay", "loguniform", 1e-4, 1.0, 4000, 0))
    assert -4 <= logs.min() and logs.max() <= 0
    assert abs(logs.mean() + 2) < 0.1 and abs(logs.std() - 4 / math.sqrt(12)) < 0.05  # uniform on [−4, 0]
    assert np.histogram(logs, bins=4, range=(-4, 0))[0].min() > 800  # every decade about a quarter
    values = np.asarray(grid_lib.draw("rho", "uniform", 0.2, 0.6, 4000, 0))
    assert 0.2 <= values.min() and values.max() <= 0.6
    assert abs(values.mean() - 0.4) < 0.01 and abs(values.std() - 0.4 / math.sqrt(12)) < 0.01


@pytest.mark.parametrize(
    "grid, message",
    [
        ({**ZIP, "weight_decay": [0.01, 0.1]}, "learning_rate has 3, weight_decay has 2 values; give them equal"),
        (
            {"zip": [["learning_rate", "wd"]], "learning_rate": [1e-2, 1e-3]},
            "grid.zip names 'wd', which is not an axis",
        ),
        (
            {
                "zip": [["learning_rate", "weight_decay"], ["weight_decay", "seed"]],
                "learning_rate": [1e-2, 1e-3],
                "weight_decay": [0.1, 1.0],
                "seed": [0, 1],
            },
            "names 'weight_decay' twice",
        ),
        (
            {"zip": [["learning_rate", "init_scale"]], "learning_rate": [1e-2, 1e-3]},
            "pairs 'init_scale' but \\[grid\\] gives it no values",
        ),
        ({"zip": [["learning_rate"]], "learning_rate": [1e-2, 1e-3]}, "needs at least two axes"),
        ({"zip": "learning_rate", "learning_rate": [1e-2]}, "must be a list of groups of axis names"),
        (
            {"zip": [["learning_rate", "weight_decay"]], "learning_rate": [1e-2, 1e-2], "weight_decay": [0.1, 0.1]},
            "repeats the point",
        ),
        ({**RANDOM, "zip": [["learning_rate", "seed"]], "seed": [0, 1]}, "drawn at random and also zipped"),
        ({**RANDOM, "samples": 0}, "grid.samples must be an integer ≥ 1"),
        ({**RANDOM, "samples": -3}, "grid.samples must be an integer ≥ 1"),
        ({**RANDOM, "samples": 2.5}, "grid.samples must be an integer ≥ 1"),
        ({"weight_decay": {"loguniform": [1e-3, 1.0]}}, "set grid.samples = N"),
        ({"samples": 4}, "grid.samples is set but no axis is drawn at random"),
        ({"sample_seed": 4}, "grid.sample_seed is set but no axis is drawn at random"),
        ({**RANDOM, "sample_seed": -1}, "grid.sample_seed must be an integer ≥ 0"),
        ({**RANDOM, "seed": {"uniform": [0, 10]}}, "grid.seed cannot be drawn at random"),
        ({**RANDOM, "weight_decay": {"loguniform": [0, 1.0]}}, "loguniform needs positive bounds"),
        ({**RANDOM, "weight_decay": {"uniform": [1.0, 0.5]}}, "needs lo < hi"),
        ({**RANDOM, "weight_decay": {"uniform": [1.0]}}, "needs \\[lo, hi\\] with two finite numbers"),
        ({**RANDOM, "weight_decay": {"uniform": [-1.0, 1.0]}}, "weight_decay must be ≥ 0"),  # the Axis check
        ({**RANDOM, "train_fraction": {"uniform": [0.0, 1.0]}}, "strictly between 0 and 1"),
        ({**ZIP, "learning_rate": [1e-2, -3e-3, 1e-3]}, "learning_rate must be > 0"),
        ({"zip": [["seed", "weight_decay"]], "seed": [0, 0, -1], "weight_decay": [0.1, 1.0, 2.0]}, "integers in"),
    ],
)
def test_bad_grids_say_how_to_fix_them(tiny_config, grid, message):
    with pytest.raises(ConfigError, match=message):
        tiny_config(grid=grid)


def test_a_crossed_axis_listing_a_value_twice_is_one_line_before_any_run(tmp_path, capsys):
    """Issue 29 item 9: grid.weight_decay = [0.1, 0.1] would train the same runs twice; refused, also when two
    values differ only below float32 (the dtype the runs see: the float32 check's own line), while a zipped column may
    repeat a value."""
    from nht_jax.cli import main

    for values, says in (
        ("[0.1, 0.1]", "grid.weight_decay lists 0.1 more than once"),
        ("[0.1, 1.0, 0.1000000001]", "float32"),
    ):
        assert (
            main(["run", "tiny", "--set", f"grid.weight_decay={values}", "--out", str(tmp_path / "out"), "--quiet"])
            == 2
        )
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "grid.weight_decay" in err and says in err, err
        assert not (tmp_path / "out").exists()
    with pytest.raises(ConfigError, match="grid.learning_rate lists 0.01 more than once"):
        experiment.load("tiny", overrides=["grid.learning_rate=[0.01, 0.001, 0.01]"])
    zipped = experiment.load(
        "tiny", overrides=['grid.zip=[["weight_decay", "seed"]]', "grid.weight_decay=[0.1, 0.1]", "grid.seed=[0, 1]"]
    )
    assert grid_lib.num_runs(zipped.runs()) == 2


def test_a_zipped_seed_may_repeat_a_value_and_a_listed_seed_may_not(tiny_config):
    config = tiny_config(grid={"zip": [["seed", "weight_decay"]], "seed": [0, 0, 1], "weight_decay": [0.1, 1.0, 1.0]})
    assert grid_lib.num_runs(config.runs()) == 3
    with pytest.raises(ConfigError, match="repeated values"):
        tiny_config(grid={"seed": [0, 0]})


@pytest.mark.parametrize(
    "grid", [ZIP, RANDOM, {**RANDOM, "zip": [["seed", "init_scale"]], "seed": [0, 1], "init_scale": [1.0, 2.0]}]
)
def test_config_toml_round_trip_gives_the_same_runs(tiny_config, grid):
    config = tiny_config(grid=grid)
    text = experiment.to_toml(config)
    written = tomllib.loads(text)["grid"]
    assert "samples" not in written and all(isinstance(v, list) for v in written.values())  # draws, not the recipe
    loaded = experiment.from_dict(tomllib.loads(text))
    assert loaded == config and experiment.digest(loaded) == experiment.digest(config)
    for name, values in config.runs().items():
        np.testing.assert_array_equal(loaded.runs()[name], values)


def digest_before_zipped_axes(config) -> str:
    """`experiment.digest` as it was computed before zipped and random axes existed (grid = {axis: list})."""
    data = {"name": config.name}
    for s in experiment.SECTIONS:
        if s not in experiment.OUTSIDE_DIGEST:
            section = getattr(config, s)
            data[s] = {k: list(v) for k, v in section.items()} if s == "grid" else experiment.to_dict(config)[s]
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(list_presets()))
def test_shipped_presets_keep_their_digest_and_round_trip(name):
    config = experiment.load(name)
    # a zipped preset (interventions) or a forked one (clamp-p59-t500: [fork] came after zipped axes) has no digest
    # from before
    if not config.zipped and config.fork is None:
        assert config.grid_kind == "product" and "zip" not in experiment.to_dict(config)["grid"]
        assert experiment.digest(config) == digest_before_zipped_axes(config)
    again = experiment.from_dict(experiment.to_dict(config))
    assert again == config and experiment.digest(again) == experiment.digest(config)


def test_as_grid_refuses_an_irregular_grid(tiny_config, tmp_path):
    config = tiny_config(grid=ZIP)
    runs = config.runs()
    res = Results(
        tmp_path, config, np.arange(3), {"test_acc": np.zeros((grid_lib.num_runs(runs), 3))}, runs, dict(config.grid)
    )
    assert res.grid_kind == "irregular"
    with pytest.raises(ConfigError, match="irregular grid .*weight_decay with learning_rate.*hparams"):
        res.as_grid("test_acc")


def test_extra_figures_of_an_irregular_image_grid_are_scatters(tmp_path, monkeypatch):
    from nht_jax.figures import axis_figures
    from nht_jax.figures import folder

    config = experiment.load(
        "border-digits",
        [
            'grid.zip=[["weight_decay", "rho"]]',
            "grid.weight_decay=[0.01, 0.1, 1.0]",
            "grid.rho=[0.5, 0.9, 1.0]",
            "grid.seed=[0, 1]",
        ],
    )
    runs = config.runs()
    headline = config.domain.headline_metric
    summary = [
        {
            **{k: float(v[i]) for k, v in runs.items()},
            "regime": ["weak", "intermediate"][i % 2],
            "T_transition": float("nan"),
            f"final_{headline}": 0.1 * i,
        }
        for i in range(grid_lib.num_runs(runs))
    ]
    res = Results(tmp_path, config, np.arange(3), {}, runs, dict(config.grid), summary)
    scattered = []
    monkeypatch.setattr(folder, "draw_phase_scatter", lambda *args: scattered.append(args))
    folder.draw_phase_diagram(res, tmp_path / "unused.png")
    assert len(scattered) == 1  # the phase diagram of an irregular grid is the scatter
    monkeypatch.undo()
    kinds = {kind for kind, _ in folder.extra_figures(res).values()}
    assert kinds == set(axis_figures.DRAW_IRREGULAR) and "layer_norms" not in kinds
    folder.draw_phase_diagram(res, tmp_path / "phase.png")
    for name, (kind, axis) in folder.extra_figures(res).items():
        axis_figures.DRAW_IRREGULAR[kind](res, axis, tmp_path / name)
        assert (tmp_path / name).stat().st_size > 0
    assert (tmp_path / "phase.png").stat().st_size > 0


@pytest.mark.parametrize(
    "grid", [{**ZIP, "learning_rate": [1e-2, 3e-3, 1e-2]}, {**RANDOM, "samples": 3}], ids=["zipped", "random"]
)
def test_a_sweep_over_an_irregular_grid_writes_its_figures(tiny_config, tmp_path, grid):
    from nht_jax.figures import folder
    from nht_jax.results.folder import load_results
    from nht_jax.training.sweep import run_sweep

    config = tiny_config(grid={**grid, "seed": [0, 1]})
    res = run_sweep(config, tmp_path, progress=False)
    assert res.num_runs == 6 and res.grid_kind == "irregular"
    folder.redraw(tmp_path)
    for name in folder.figure_names(res):
        assert (tmp_path / name).stat().st_size > 0
    loaded = load_results(tmp_path)
    assert loaded.config == config
    for name, values in config.runs().items():
        np.testing.assert_array_equal(loaded.hparams[name], values)
    with pytest.raises(ConfigError, match="irregular grid"):
        loaded.as_grid("test_acc")
