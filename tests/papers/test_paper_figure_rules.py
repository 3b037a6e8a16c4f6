"""What the paper's figures plot (nht_jax/papers/paper_figures.py) pinned by known answers: which runs and columns
each figure selects and the values it draws, read back from the Axes (lines, error bars, scatter offsets, image
cells, texts), the notice written when data is missing, where results are looked for and the files' names.
Hand-made in-memory Results with asymmetric seeds (mean ≠ median, first ≠ last); `save` is replaced by a recorder,
so nothing is rendered or trained. Colours, line widths, font sizes, marker shapes and legend layout are left
unpinned (decoration)."""

import itertools
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from matplotlib import cm
from matplotlib.collections import PathCollection

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.papers import paper_figures as pf
from nht_jax.results.folder import Results


@pytest.fixture
def saved(monkeypatch):
    """The figures `save` was given, by path (nothing is written)."""
    figures = {}
    monkeypatch.setattr(pf, "save", lambda fig, path: figures.__setitem__(Path(path), fig))
    return figures


def results(config, axes: dict, steps, metrics_of, summary_of=lambda run: {}):
    """Results over the product of `axes` (row-major, as a sweep orders runs); metrics_of(run) → {name: curve},
    summary_of(run) → the run's summary columns (run: a dict of its axis values and its index `i`)."""
    runs = [dict(zip(axes, combo), i=i) for i, combo in enumerate(itertools.product(*axes.values()))]
    hparams = {a: np.array([r[a] for r in runs], np.float64) for a in axes}
    names = metrics_of(runs[0]).keys()
    metrics = {n: np.array([metrics_of(r)[n] for r in runs], np.float64) for n in names}
    summary = [{**{a: r[a] for a in axes}, **summary_of(r)} for r in runs]
    return Results(
        Path("planted"),
        config,
        np.asarray(steps, np.float64),
        metrics,
        hparams,
        {a: np.asarray(v, np.float64) for a, v in axes.items()},
        summary,
    )


def errorbar(ax, i=0):
    """(x, y, low, high) of the i-th error bar container of `ax`."""
    data, _, (bars, *_) = ax.containers[i].lines
    segments = np.array(bars.get_segments())
    return (
        np.asarray(data.get_xdata(), float),
        np.asarray(data.get_ydata(), float),
        segments[:, 0, 1],
        segments[:, 1, 1],
    )


def offsets(ax):
    return [
        np.asarray(np.ma.getdata(c.get_offsets()), float)
        for c in ax.collections
        if isinstance(c, PathCollection) and len(c.get_offsets())
    ]


# ----------------------------------------------------------------------------- the registry and its files


def test_each_figure_has_its_file_its_source_preset_and_its_order():
    assert [(k, f.filename, f.source.preset) for k, f in pf.FIGURES.items()] == [
        ("fig1", "fig1_three_regimes.png", "default"),
        ("fig2", "fig2_clean_vs_rho.png", "border-digits"),
        ("fig3", "fig3_phase_lambda_rho.png", "border-digits"),
        ("fig4", "fig4_layer_norms.png", "border-digits"),
        ("fig5", "fig5_celeba_groups.png", "celeba"),
        ("delay", "companion_delay_law.png", "toy-linear"),
    ]
    assert [f.draw for f in pf.FIGURES.values()] == [
        pf.draw_fig1,
        pf.draw_fig2,
        pf.draw_fig3,
        pf.draw_fig4,
        pf.draw_fig5,
        pf.draw_delay,
    ]
    assert {k: s.quick for k, s in pf.SOURCES.items()} == {
        "default": True,
        "border-digits": True,
        "celeba": True,
        "toy-linear": False,
    }
    assert pf.DEFAULT_OUT == Path("runs/out/paper_figs")


def test_results_are_looked_for_at_full_then_reduced_then_quick_scale(tmp_path):
    source = pf.SOURCES["border-digits"]

    def finish(name):
        (tmp_path / name).mkdir()
        (tmp_path / name / "meta.json").write_text("{}")
        (tmp_path / name / "trajectories.npz").write_text("")

    finish("border-digits-quick")
    assert pf.find_results(source, tmp_path, quick=False) is None
    assert pf.find_results(source, tmp_path, quick=True) == tmp_path / "border-digits-quick"
    finish("border-digits-reduced")
    assert pf.find_results(source, tmp_path, quick=True) == tmp_path / "border-digits-reduced"
    (tmp_path / "border-digits").mkdir()
    (tmp_path / "border-digits" / "meta.json").write_text("{}")  # unfinished: skipped
    assert pf.find_results(source, tmp_path, quick=True) == tmp_path / "border-digits-reduced"
    (tmp_path / "border-digits" / "trajectories.npz").write_text("")
    assert pf.find_results(source, tmp_path, quick=False) == tmp_path / "border-digits"
    assert pf.folder_name(source, None) == "border-digits" and pf.folder_name(source, "quick") == "border-digits-quick"
    assert pf.run_command(source, Path("o"), None) == "nht run border-digits --out o"
    assert pf.run_command(source, Path("o"), "quick") == "nht run border-digits --scale quick --out o"


def test_an_unknown_figure_is_refused_naming_every_unknown_sorted():
    pf.check_figures(None)
    pf.check_figures(["fig2"])
    with pytest.raises(ConfigError, match="unknown figure.s. fig8, fig9; choose among fig1, fig2, fig3"):
        pf.check_figures(["fig9", "fig1", "fig8"])


# ----------------------------------------------------------------------------- helpers on results


def test_the_nearest_grid_value_is_nearest_in_log_unless_a_value_is_not_positive():
    assert pf.nearest([0.01, 0.1, 1.0], 0.04) == 0.1  # linearly 0.01 is nearer
    assert pf.nearest([0.0, 1.0, 2.0], 0.6) == 1.0 and pf.nearest([1.0, 2.0], -1.0) == 1.0
    assert pf.nearest([0.01, 0.1, 1.0], 0.03) == 0.01


def test_varied_axes_exclude_the_seed_and_single_values_and_symbols_name_them():
    res = SimpleNamespace(axes={"weight_decay": [1, 2], "seed": [0, 1], "learning_rate": [1], "rho": [0.5, 1]})
    assert pf.varied(res) == ["weight_decay", "rho"]
    assert pf.slice_text({"rho": 0.5, "learning_rate": 0.001, "other": 2}) == "ρ = 0.5, η = 0.001, other = 2"
    assert [pf.symbol(a) for a in ("weight_decay", "init_scale", "train_fraction")] == [
        "λ",
        "init scale",
        "train fraction",
    ]


def slice_results():
    """λ × η × seed: at η = 1e-3 the λ show weak, intermediate, strong (3 regimes); at η = 1e-2 every run is
    intermediate (1 regime, more intermediate runs, larger η); at η = 1e-1 two regimes."""

    def regime(r):
        if r["learning_rate"] == 1e-3:
            return ("weak", "intermediate", "strong")[[0.01, 0.1, 1.0].index(r["weight_decay"])]
        if r["learning_rate"] == 1e-1:
            return "weak" if r["weight_decay"] < 0.5 else "strong"
        return "intermediate"

    return results(
        experiment.load("default"),
        {"weight_decay": [0.01, 0.1, 1.0], "learning_rate": [1e-3, 1e-2, 1e-1], "seed": [0, 1]},
        [0, 10],
        lambda r: {"norm_sq": [1, 1]},
        lambda r: {"regime": regime(r)},
    )


def test_a_slice_shows_the_most_regimes_and_a_fixed_value_is_snapped_to_the_grid():
    res = slice_results()
    assert pf.pick_slice(res, "weight_decay") == {"learning_rate": 1e-3}
    assert pf.pick_slice(res, "weight_decay", {"learning_rate": 0.02}) == {"learning_rate": 1e-2}
    assert pf.pick_slice(res, "weight_decay", {"nope": 3}) == {"learning_rate": 1e-3}  # not an axis: ignored
    for r in res.summary:  # ties on regimes (1 each): the most intermediate runs, then the larger value
        r["regime"] = "intermediate" if r["learning_rate"] != 1e-2 else "weak"
    assert pf.pick_slice(res, "weight_decay") == {"learning_rate": 1e-1}
    for r in res.summary:  # one regime each again: η = 1e-3 has the intermediate runs, so not the larger 1e-1
        r["regime"] = "intermediate" if r["learning_rate"] == 1e-3 else "weak"
    assert pf.pick_slice(res, "weight_decay") == {"learning_rate": 1e-3}


def test_epochs_per_step_is_one_over_the_whole_batches_of_an_epoch():
    digits = experiment.load("border-digits", ["train.batch_size=128"])
    assert pf.epochs_per_step(digits) == pytest.approx(1 / 10)  # 1,347 // 128
    assert pf.epochs_per_step(experiment.load("border-digits", ["train.batch_size=5000"])) == 1.0
    assert pf.epochs_per_step(experiment.load("border-digits", ["train.batch_size=0"])) is None
    assert pf.epochs_per_step(experiment.load("default")) is None


def test_the_scale_note_says_reduced_only_for_fewer_steps_or_values_and_counts_the_other_settings():
    assert pf.scale_note(experiment.load("border-digits", ["train.steps=360"])) == "reduced scale: 360 of 400 steps"
    assert pf.scale_note(experiment.load("border-digits", ["train.steps=440"])) == "modified: 440 of 400 steps"
    assert (
        pf.scale_note(experiment.load("border-digits", ["grid.rho=[0.5, 0.9, 0.98, 0.99, 1.0]"]))
        == "modified: ρ 5 values (preset: 4 values)"
    )
    assert (
        pf.scale_note(experiment.load("border-digits", ["grid.learning_rate=[0.1]"]))
        == "modified: η 0.1 (preset: 1 value)"
    )
    assert (
        pf.scale_note(experiment.load("border-digits", ["grid.rho=[0.5]"])) == "reduced scale: ρ 0.5 (preset: 4 values)"
    )
    # one shortened setting makes it reduced, whatever the settings after it
    assert pf.scale_note(
        experiment.load("border-digits", ["train.steps=360", "grid.rho=[0.5, 0.9, 0.98, 0.99, 1.0]"])
    ) == ("reduced scale: 360 of 400 steps, ρ 5 values (preset: 4 values)")
    assert pf.scale_note(
        experiment.load("border-digits", ["grid.weight_decay=[0.1]", "grid.rho=[0.5, 0.9, 0.98, 0.99, 1.0]"])
    ).startswith("reduced scale: ")
    three = pf.scale_note(
        experiment.load("border-digits", ["train.log_every=8", "train.batch_size=16", "train.eval_batch_size=16"])
    )
    assert three.startswith("modified: train.batch_size = 16 (preset: ") and "more settings" not in three
    four = pf.scale_note(
        experiment.load(
            "border-digits",
            ["train.log_every=8", "train.batch_size=16", "train.eval_batch_size=16", "task.image_size=16"],
        )
    )
    assert four.endswith(", 1 more settings (see its config.toml)") and four.count(" = ") == 3


def test_the_data_lines_add_the_stand_in_only_for_the_sources_own_preset():
    res = SimpleNamespace(config=experiment.load("default"), num_runs=16)
    data, stand_in = pf.data_lines(res, pf.SOURCES["default"])
    assert (
        data == f"Data: (a + b) mod 97; preset default (preset as shipped); 16 runs × {res.config.train.steps} steps."
    )
    assert stand_in == (
        "Stand-in for the paper's CIFAR-10 with a spurious border: grokking on modular addition, "
        "whose three regimes in λ are clean on a CPU."
    )
    assert len(pf.data_lines(res, pf.SOURCES["border-digits"])) == 1 and len(pf.data_lines(res, None)) == 1


# ----------------------------------------------------------------------------- fig. 1


def fig1_results():
    """λ 0.01, 0.1, 1 × η 1e-3, 1e-2 × seeds 0, 1; η = 1e-3 shows the most regimes. Run i's norm rises to a peak
    then falls; its final test accuracy is a run-specific number."""
    regimes = [r["regime"] for r in slice_results().summary if r["learning_rate"] != 1e-1]
    return results(
        experiment.load("default"),
        {"weight_decay": [0.01, 0.1, 1.0], "learning_rate": [1e-3, 1e-2], "seed": [0, 1]},
        [0, 10, 20],
        lambda r: {
            "norm_sq": [1 + r["i"], 10 + 3 * r["i"], 2 + r["i"] ** 1.5],
            "test_acc": [0.0, 0.1, (r["i"] % 5) / 4],
        },
        lambda r: {"regime": regimes[r["i"]]},
    )


def test_fig1_plots_the_seed_mean_norm_per_lambda_and_the_final_accuracy_and_decay_at_the_slice(saved, tmp_path):
    res = fig1_results()
    note = pf.draw_fig1(res, tmp_path / "f.png")
    norm_ax, acc_ax = saved[tmp_path / "f.png"].axes[:2]
    runs = {lam: res.select(weight_decay=lam, learning_rate=1e-3) for lam in (0.01, 0.1, 1.0)}
    assert [list(v) for v in runs.values()] == [[0, 1], [4, 5], [8, 9]]
    norm = res.metrics["norm_sq"]
    for line, lam in zip(norm_ax.lines, runs):
        assert np.allclose(line.get_xydata(), np.column_stack([[0, 10, 20], norm[runs[lam]].mean(0)]))
    acc = {lam: res.metrics["test_acc"][runs[lam], -1] for lam in runs}
    decay = {lam: (norm[runs[lam]].max(1) - norm[runs[lam], -1]) / norm[runs[lam]].max(1) for lam in runs}
    for i, values in enumerate((acc, decay)):
        x, y, low, high = errorbar(acc_ax, i)
        assert np.allclose(x, list(runs)) and np.allclose(y, [v.mean() for v in values.values()])
        assert np.allclose(low, [v.min() for v in values.values()]) and np.allclose(
            high, [v.max() for v in values.values()]
        )
        assert np.allclose(offsets(acc_ax)[i], np.column_stack([x, y]))
    assert note == "regimes along λ; fixed η = 0.001: weak 1, intermediate 1, strong 1"
    assert saved[tmp_path / "f.png"]._suptitle.get_text() == "Fig. 1 — three regimes in λ; fixed η = 0.001"
    assert pf.draw_fig1(res, tmp_path / "g.png", fixed={"learning_rate": 0.01}).startswith(
        "regimes along λ; fixed η = 0.01: intermediate 3"
    )
    assert np.allclose(saved[tmp_path / "g.png"].axes[0].lines[2].get_ydata(), norm[[10, 11]].mean(0))


def test_fig1_needs_two_lambdas():
    res = results(
        experiment.load("default"), {"weight_decay": [0.1], "seed": [0, 1]}, [0, 1], lambda r: {"norm_sq": [1, 1]}
    )
    with pytest.raises(pf.FigureNeedsData, match="fig1 needs a grid over λ"):
        pf.draw_fig1(res, Path("x.png"))


# ----------------------------------------------------------------------------- fig. 2 and fig. 3


def rho_results():
    """border-digits' shape: λ 0.001, 0.01, 0.1, 1 × ρ 0.5, 0.9 × seeds 0, 1, 2; final clean accuracy per run
    asymmetric over the seeds (0.2, 0.3, 0.9: mean ≠ median)."""

    def acc(r):
        return {0: 0.2, 1: 0.3, 2: 0.9}[r["seed"]] * (1 - r["rho"] / 2) + r["weight_decay"] / 10

    def regime(r):
        return "intermediate" if r["seed"] != 2 or r["rho"] == 0.9 else "weak"

    return results(
        experiment.load("border-digits"),
        {"weight_decay": [1e-3, 1e-2, 1e-1, 1.0], "rho": [0.5, 0.9], "seed": [0, 1, 2]},
        [0, 5],
        lambda r: {"clean_acc": [0.0, acc(r)], "norm_sq": [1, 1]},
        lambda r: {"regime": regime(r), "final_clean_acc": acc(r)},
    )


def test_fig2_draws_the_seed_mean_against_rho_at_the_middle_lambda_with_min_max_bars(saved, tmp_path):
    res = rho_results()
    assert pf.draw_fig2(res, tmp_path / "f.png") == "fixed λ = 0.01"  # 4 λ: index (4 − 1) // 2 = 1
    ax = saved[tmp_path / "f.png"].axes[0]
    finals = {
        (lam, rho): res.metrics["clean_acc"][res.select(weight_decay=lam, rho=rho), -1]
        for lam in (1e-3, 1e-2, 1e-1, 1.0)
        for rho in (0.5, 0.9)
    }
    x, y, low, high = errorbar(ax)
    assert np.allclose(x, [0.5, 0.9]) and np.allclose(y, [finals[0.01, r].mean() for r in (0.5, 0.9)])
    assert np.allclose(low, [finals[0.01, r].min() for r in (0.5, 0.9)])
    assert np.allclose(high, [finals[0.01, r].max() for r in (0.5, 0.9)])
    context = {line.get_label(): line.get_ydata() for line in ax.lines if line.get_label().startswith("λ = ")}
    assert set(context) == {"λ = 0.001", "λ = 0.1", "λ = 1"}
    assert np.allclose(context["λ = 1"], [finals[1.0, r].mean() for r in (0.5, 0.9)])
    assert [t.get_text() for t in ax.texts] == [f"{finals[0.01, r].mean():.2f}" for r in (0.5, 0.9)]
    assert ax.get_title() == "Fig. 2 — clean accuracy against ρ at λ = 0.01"
    assert pf.draw_fig2(res, tmp_path / "g.png", lam=0.04) == "fixed λ = 0.1"  # log-nearest, not 0.01


def test_fig2_and_fig3_need_a_rho_grid():
    res = results(
        experiment.load("default"),
        {"weight_decay": [0.1, 1.0], "rho": [1.0], "seed": [0]},
        [0, 1],
        lambda r: {"norm_sq": [1, 1]},
    )
    for draw, name in ((pf.draw_fig2, "fig2"), (pf.draw_fig3, "fig3")):
        with pytest.raises(pf.FigureNeedsData, match=f"{name} needs a grid over the border correlation"):
            draw(res, Path("x.png"))


def test_fig3_colours_each_cell_by_its_seed_mean_and_letters_its_majority_regime(saved, tmp_path):
    res = rho_results()
    note = pf.draw_fig3(res, tmp_path / "f.png")
    ax = saved[tmp_path / "f.png"].axes[0]
    lams, rhos = [1e-3, 1e-2, 1e-1, 1.0], [0.5, 0.9]
    mean = np.array(
        [
            [
                np.mean([r["final_clean_acc"] for r in res.summary if r["weight_decay"] == lam and r["rho"] == rho])
                for lam in lams
            ]
            for rho in rhos
        ]
    )
    assert np.allclose(np.asarray(ax.images[0].get_array()), mean)  # rows ρ, columns λ
    labels = {(t.get_position()): t.get_text() for t in ax.texts}
    assert labels[(0, 0)] == f"I {mean[0, 0]:.2f}\n2/3" and labels[(3, 1)] == f"I {mean[1, 3]:.2f}"
    assert note == "cells: intermediate 8"
    assert (ax.images[0].norm.vmin, ax.images[0].norm.vmax) == (0, 1)  # one accuracy scale for every grid


# ----------------------------------------------------------------------------- fig. 4 and fig. 5


def layer_results(regimes, t_transition=float("nan")):
    """λ 0.01, 0.1, 1 × seeds 0, 1 with embed and head layer norms; `regimes`: the regime of each λ's seed 0; every
    run fits at 10 and transitions at `t_transition`."""
    lams = [0.01, 0.1, 1.0]
    return results(
        experiment.load("default"),
        {"weight_decay": lams, "seed": [0, 1]},
        [0, 10, 20],
        lambda r: {
            "norm_sq": [4.0 + r["i"], 8.0 + r["i"], 2.0],
            "layer_norm_sq/embed": [1.0, 4.0, 2.0],
            "layer_norm_sq/head": [1.0 + r["i"], 2.0, 3.0],
            "test_acc": [0, 0, 1],
        },
        lambda r: {
            "regime": regimes[lams.index(r["weight_decay"])] if r["seed"] == 0 else "weak",
            "T_fit": 10.0,
            "T_transition": t_transition,
        },
    )


def test_fig4_shows_the_middle_intermediate_run_and_each_lambdas_first_seed(saved, tmp_path):
    """Seed-0 runs 0, 2, 4 (λ 0.01, 0.1, 1); intermediate at λ 0.01 and 1: the second of them, run 4. None
    intermediate: the middle λ's, run 2; λ = 0.02 asked: run 0."""
    res = layer_results(["intermediate", "weak", "intermediate"])
    assert pf.draw_fig4(res, tmp_path / "f.png") == "layers embed, head; run 4 (λ = 1)"
    layer_ax, total_ax, ratio_ax = saved[tmp_path / "f.png"].axes[:3]
    assert np.allclose(layer_ax.lines[0].get_ydata(), [0.25, 1.0, 0.5])  # embed over its peak
    assert np.allclose(layer_ax.lines[2].get_ydata(), res.metrics["norm_sq"][4] / 12.0)  # the total over its peak
    assert [line.get_xdata()[0] for line in layer_ax.lines[3:]] == [10.0]  # T_fit; T_transition is NaN
    assert [list(line.get_ydata()) for line in total_ax.lines] == [list(res.metrics["norm_sq"][i]) for i in (0, 2, 4)]
    assert np.allclose(ratio_ax.lines[1].get_ydata(), np.array([3.0, 2.0, 3.0]) / [1.0, 4.0, 2.0])
    assert layer_ax.get_title() == "one run: λ = 1, seed 0 (intermediate)"
    res = layer_results(["weak", "weak", "strong"])
    assert pf.draw_fig4(res, tmp_path / "g.png").endswith("run 2 (λ = 0.1)")
    assert pf.draw_fig4(res, tmp_path / "h.png", lam=0.02).endswith("run 0 (λ = 0.01)")
    with pytest.raises(pf.FigureNeedsData, match="fig4 needs per-layer norms"):
        pf.draw_fig4(rho_results(), tmp_path / "i.png")
    res = layer_results(["intermediate", "weak", "intermediate"], t_transition=15.0)
    pf.draw_fig4(res, tmp_path / "j.png")
    marks = saved[tmp_path / "j.png"].axes[0].lines[3:]
    assert [(line.get_xdata()[0], line.get_linestyle()) for line in marks] == [(10.0, ":"), (15.0, "-.")]


def test_each_lambda_has_its_own_colour_along_viridis_in_order():
    colours = pf.lambda_colours(3)
    assert len(colours) == 3 and np.allclose(colours, cm.viridis([0, 0.46, 0.92]))


def test_fig1_puts_lambda_on_a_log_axis_or_symlog_when_a_lambda_is_zero(saved, tmp_path):
    for lams, scale in (([0.01, 0.1, 1.0], "log"), ([0.0, 0.1, 1.0], "symlog")):
        res = results(
            experiment.load("default"),
            {"weight_decay": lams, "seed": [0]},
            [0, 10],
            lambda r: {"norm_sq": [1.0, 2.0], "test_acc": [0.0, 1.0]},
            lambda r: {"regime": "intermediate"},
        )
        pf.draw_fig1(res, tmp_path / f"{scale}.png")
        assert saved[tmp_path / f"{scale}.png"].axes[1].get_xscale() == scale


def test_fig5_draws_seed_means_against_epochs_and_reports_the_final_worst_group(saved, tmp_path):
    config = experiment.load("celeba", ["train.batch_size=1000"])  # 162,770 // 1,000 = 162 steps an epoch
    res = results(
        config,
        {"weight_decay": [0.01, 1.0], "seed": [0, 1, 2]},
        [0, 162, 324],
        lambda r: {
            "norm_sq": [10.0 + r["i"], 5.0, 4.0],
            "worst_group_acc": [0.0, 0.1, 0.1 * r["i"] ** 2],
            "clean_acc": [0.0, 0.5, 0.6 + 0.01 * r["i"]],
            "weighted_avg_acc": [0, 0.2, 0.3],
        },
    )
    note = pf.draw_fig5(res, tmp_path / "f.png")
    axes = saved[tmp_path / "f.png"].axes
    worst = res.metrics["worst_group_acc"]
    assert note == f"2 λ, worst-group at the end: {worst[:3, -1].mean():.2f}, {worst[3:, -1].mean():.2f}"
    assert np.allclose(axes[1].lines[1].get_xydata(), np.column_stack([[0, 1, 2], worst[3:].mean(0)]))
    assert np.allclose(axes[0].lines[0].get_ydata(), res.metrics["norm_sq"][:3].mean(0))
    assert [line.get_label() for line in axes[2].lines] == [
        "λ=0.01 average",
        "λ=0.01 train-weighted",
        "λ=1 average",
        "λ=1 train-weighted",
    ]
    assert np.allclose(axes[2].lines[2].get_ydata(), res.metrics["clean_acc"][3:].mean(0))
    assert axes[0].get_xlabel() == "epoch"
    with pytest.raises(pf.FigureNeedsData, match="fig5 needs group metrics"):
        pf.draw_fig5(rho_results(), tmp_path / "g.png")


# ----------------------------------------------------------------------------- the delay panels


def fit(runs, ok=True, slope=2.0, intercept=1.0, slice=(("learning_rate", 0.1),)):
    return SimpleNamespace(
        runs=runs,
        ok=ok,
        slope=slope,
        intercept=intercept,
        r2=0.95,
        slope_ci=(1.5, 2.5),
        status="ok" if ok else "not enough data: 1 run",
        slice=slice,
    )


def test_a_delay_panel_plots_each_fits_runs_and_its_line_from_zero(saved, tmp_path):
    from nht_jax.figures.style import subplots

    table = SimpleNamespace(
        run=np.arange(6), delay=np.array([10.0, 20, 30, 40, 50, 60]), x=np.array([1.0, 2, 3, 4, 5, 6])
    )
    fig, ax = subplots()
    fits = [fit([0, 1, 2, 3]), fit([4, 5]), fit([], ok=False), fit([5], ok=False)]  # a fit without runs: skipped
    drawn = pf._fit_panel(ax, table, fits, lambda t: t.x, lambda n: ["r", "g", "b", "k"][:n], "x", "nothing")
    assert drawn == 1 and not ax.texts
    assert [list(map(tuple, o)) for o in offsets(ax)] == [
        [(1, 10), (2, 20), (3, 30), (4, 40)],
        [(5, 50), (6, 60)],
        [(6, 60)],
    ]
    line = ax.lines[0]
    assert line.get_xdata()[0] == 0 and line.get_xdata()[-1] == pytest.approx(4 * 1.05)
    assert np.allclose(line.get_ydata(), 1.0 + 2.0 * line.get_xdata())
    assert line.get_label() == "η=0.1: slope 2 [1.5, 2.5], R² 0.950"
    assert [l.get_label() for l in ax.lines[1:]] == ["η=0.1: too few points for a fit", "η=0.1: not enough data: 1 run"]
    fig, ax = subplots()
    assert (
        pf._fit_panel(
            ax, table, [fit([0, 1, 2, 3], slice=())], lambda t: t.x, lambda n: ["r"], "x", "none", from_zero=False
        )
        == 1
    )
    assert (ax.lines[0].get_xdata()[0], ax.lines[0].get_xdata()[-1]) == (1.0, 4.0)
    assert ax.lines[0].get_label().startswith("all runs: ")
    fig, ax = subplots()
    assert pf._fit_panel(ax, table, [fit([], ok=False)], lambda t: t.x, lambda n: ["r"], "x", "no usable runs") == 0
    assert [t.get_text() for t in ax.texts] == ["no usable runs"]


# ----------------------------------------------------------------------------- notices and outcomes


def test_a_notice_says_not_drawn_with_its_title_and_reason(saved, tmp_path):
    pf.draw_notice(tmp_path / "n.png", "Fig. 5 — groups", "no CelebA\nrun this")
    ax = saved[tmp_path / "n.png"].axes[0]
    assert [t.get_text() for t in ax.texts] == ["Fig. 5 — groups\n\nNOT DRAWN — no data shown.\n\nno CelebA\nrun this"]
    assert not ax.lines and not ax.collections


def test_results_that_cannot_give_a_figure_become_a_notice_naming_why(saved, tmp_path, monkeypatch):
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "meta.json").write_text("{}")
    (folder / "trajectories.npz").write_text("")
    res = rho_results()
    monkeypatch.setattr(pf, "load_results", lambda path: res)
    outcome = pf.make_figure("fig1", folder, tmp_path / "o" / "fig1.png")  # λ varies: fig1 draws
    assert outcome.status == "drawn" and outcome.results == folder
    assert outcome.note.startswith(f"{pf.data_source(res.config)}; {pf.preset_text(res.config)}; regimes along λ")
    outcome = pf.make_figure("fig5", folder, tmp_path / "o" / "fig5.png")
    assert (outcome.status, outcome.results) == ("not drawn", folder) and outcome.note.startswith("fig5 needs group")
    text = saved[tmp_path / "o" / "fig5.png"].axes[0].texts[0].get_text()
    assert text.startswith("fig5 — CelebA: norm, worst-group and average accuracy\n\nNOT DRAWN")
    with pytest.raises(
        ConfigError,
        match=r"fig2: '%s' holds no finished results; make them with `nht run "
        r"border-digits --out %s`" % (tmp_path / "none", tmp_path / "none"),
    ):
        pf.make_figure("fig2", tmp_path / "none", tmp_path / "o" / "fig2.png", allow_run=False)


def test_make_all_draws_the_figures_asked_and_says_which_failed(tmp_path, monkeypatch, capsys):
    def make_figure(key, out, quick, root, allow_run, progress):
        if key == "fig3":
            raise ConfigError("no results")
        return pf.Outcome(key, out, "drawn", Path("r"), "fine")

    monkeypatch.setattr(pf, "make_figure", make_figure)
    outcomes = pf.make_all(tmp_path, only=["fig3", "fig1"])
    assert [(o.key, o.png, o.status) for o in outcomes] == [
        ("fig1", tmp_path / "fig1_three_regimes.png", "drawn"),
        ("fig3", tmp_path / "fig3_phase_lambda_rho.png", "FAILED, nothing written"),
    ]
    assert outcomes[1].failed and not outcomes[0].failed and outcomes[1].note.startswith("no results [")
    assert outcomes[0].line() == f"fig1   drawn from r: {tmp_path / 'fig1_three_regimes.png'}\n       fine [0 s]"
    assert [o.key for o in pf.make_all(tmp_path)] == list(pf.FIGURES)


def test_a_figure_script_passes_its_options_on_and_a_configuration_error_is_one_line_and_exit_2(
    monkeypatch, tmp_path, capsys
):
    asked = []

    def make_figure(key, results_dir, out, **options):
        asked.append((key, results_dir, out, options))
        if key == "fig1":
            raise ConfigError("no results")
        return pf.Outcome(key, Path(out or "x.png"), "drawn", results_dir, "a note")

    monkeypatch.setattr(pf, "make_figure", make_figure)
    argv = [str(tmp_path), "--lam", "0.1", "--out", "f.png", "--quick", "--no-run", "--root", "r"]
    assert pf.script_main("fig4", argv + ["--rho", "0.9"]) == 0
    assert asked[-1] == (
        "fig4",
        tmp_path,
        Path("f.png"),
        {"quick": True, "root": Path("r"), "allow_run": False, "lam": 0.1, "fixed": {"rho": 0.9}},
    )
    assert capsys.readouterr().out == f"fig4   drawn from {tmp_path}: f.png\n       a note\n"
    assert pf.script_main("fig2", argv) == 0 and asked[-1][3]["lam"] == 0.1 and "fixed" not in asked[-1][3]
    assert pf.script_main("fig3", [str(tmp_path)]) == 0
    assert asked[-1][3] == {"quick": False, "root": pf.DEFAULT_ROOT, "allow_run": True}
    with pytest.raises(SystemExit):
        pf.script_main("fig3", ["--lam", "0.1"])  # fig3 has no one λ to fix
    capsys.readouterr()
    assert pf.script_main("fig1", ["--rho", "0.5"]) == 2
    assert capsys.readouterr().out == f"{pf.FIGURES['fig1'].filename[:-4]}: error: no results\n"


def test_the_delay_figure_puts_one_over_lambda_one_over_eta_and_the_log_norm_ratio_on_its_x_axes(
    saved, tmp_path, monkeypatch
):
    from nht_jax.analysis import fits

    table = SimpleNamespace(
        axes={"weight_decay": np.array([0.5, 2.0]), "learning_rate": np.array([0.01, 0.1])},
        v_fit=np.array([8.0, 9.0]),
        v_post=np.array([2.0, 3.0]),
    )
    monkeypatch.setattr(fits, "fit_report", lambda res, options: {"table": table, "delay_fits": [], "skipped": []})
    panels = []

    def fit_panel(ax, table, fits, x_of, colours, xlabel, empty, from_zero=True):
        panels.append((xlabel, list(x_of(table)), from_zero))
        return 0

    monkeypatch.setattr(pf, "_fit_panel", fit_panel)
    pf.draw_delay(fig1_results(), tmp_path / "d.png")
    assert [(x, from_zero) for _, x, from_zero in panels] == [
        ([2.0, 0.5], True),
        ([100.0, 10.0], True),
        ([pytest.approx(np.log(4.0)), pytest.approx(np.log(3.0))], False),
    ]
    assert [label for label, _, _ in panels[:2]] == ["1/λ", "1/η"]
