"""The paper's figures (nht_jax.papers.paper_figures, `nht figs`, paper_figs/*.py) on tiny results directories made
here: every figure writes a PNG whose caption names the data, the preset and the scale; a figure whose dataset is
absent (CelebA) writes a notice instead of curves; results that cannot give a figure say why; `nht figs` draws
from prepared folders and never trains with --no-run."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nht_jax import experiment
from nht_jax.base import presets
from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.papers import paper_figures as pf
from nht_jax.results.folder import Results, load_results
from nht_jax.training.sweep import run_sweep

from .conftest import copy_presets

REPO = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TINY_IMAGES = (
    "task.image_size=16",
    "task.eval_train_size=48",
    "task.eval_test_size=40",
    "train.steps=6",
    "train.batch_size=16",
    "train.log_every=3",
    "train.eval_batch_size=16",
    "execution.chunk_logs=1",
    "grid.weight_decay=[0.01, 1.0]",
    "grid.seed=[0]",
    "grid.rho=[0.5, 1.0]",
    "task.augment=true",
    "train.lr_schedule=cosine",
)
TINY_TOY = (
    "train.steps=1000",
    "train.log_every=10",
    "grid.weight_decay=[0.01, 0.015, 0.02]",
    "grid.learning_rate=[0.15, 0.2, 0.3]",
)  # T = 1.15/(ηλ) ≤ 770 steps: every run intermediate


def is_png(path: Path) -> bool:
    return path.exists() and path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 5000


@pytest.fixture(scope="module")
def root(tiny_config, tmp_path_factory):
    """A results root as `nht figs --results` reads it: default/ (tiny modular, 3 λ × 2 η), border-digits/
    (16×16 digits, 2 λ × 2 ρ, 6 steps, through `nht run`: its figures too) and toy-linear/ (3 λ × 3 η, 1000 steps:
    intermediate runs to fit)."""
    base = tmp_path_factory.mktemp("paper-figs")
    modular = tiny_config(grid={"weight_decay": [0.01, 0.3, 3.0], "learning_rate": [1e-2, 3e-3], "seed": [0]})
    run_sweep(modular, base / "default", progress=False)
    settings = [arg for setting in TINY_IMAGES for arg in ("--set", setting)]
    assert main(["run", "border-digits", *settings, "--out", str(base / "border-digits"), "--quiet"]) == 0
    run_sweep(experiment.load("toy-linear", TINY_TOY), base / "toy-linear", progress=False)
    return base


def test_a_tiny_rho_grid_end_to_end_through_the_cli(root):
    """border-digits/ came through `nht run`: its ρ figures, grid and image metrics (no token metrics)."""
    out = root / "border-digits"
    for name in ("phase_lambda_rho.png", "clean_vs_rho.png", "layer_norms.png", "phase_diagram.png"):
        assert (out / name).stat().st_size > 1000, name
    res = load_results(out)
    assert res.num_runs == 4 and res.grid_shape == (2, 1, 1, 1, 2)
    assert res.config.train.lr_schedule == "cosine" and res.config.task.augment
    assert res.select(weight_decay=1.0, rho=0.5).tolist() == [2]
    assert {"rho", "final_clean_acc", "final_shortcut_reliance", "final_coloured_acc", "final_conflicting_acc"} <= set(
        res.summary[0]
    )
    assert "final_test_acc" not in res.summary[0] and "train_fraction" not in res.summary[0]
    assert [row["rho"] for row in res.summary] == [0.5, 1.0, 0.5, 1.0]
    assert {"shortcut_reliance", "clean_acc", "layer_norm_sq/conv1", "head_to_first_ratio"} <= set(res.metrics)
    assert "test_acc" not in res.metrics


def no_training(*args, **kwargs):
    raise AssertionError("a figure trained although its results were there")


@pytest.mark.parametrize(
    "key, folder",
    [
        ("fig1", "default"),
        ("fig1", "border-digits"),
        ("fig2", "border-digits"),
        ("fig3", "border-digits"),
        ("fig4", "border-digits"),
        ("fig4", "default"),
        ("delay", "toy-linear"),
        ("delay", "default"),
    ],
)
def test_each_figure_draws_a_png_from_a_tiny_results_directory(root, tmp_path, monkeypatch, capsys, key, folder):
    monkeypatch.setattr("nht_jax.training.sweep.run_sweep", no_training)
    out = tmp_path / f"{key}.png"
    outcome = pf.make_figure(key, root / folder, out)
    assert outcome.status == "drawn" and outcome.results == root / folder
    assert is_png(out)
    res = load_results(root / folder)
    assert pf.data_source(res.config) in outcome.note and res.config.name in outcome.note


def test_titles_name_the_data_preset_and_scale(root):
    images = load_results(root / "border-digits")
    note = pf.scale_note(images.config)
    assert note.startswith("reduced scale: ") and "6 of 400 steps" in note and "λ 0.01, 1" in note
    title = pf.title_lines(images, pf.SOURCES["border-digits"], "Fig. 3")
    assert "scikit-learn digits (16×16, offline)" in title and "preset border-digits" in title
    assert "Stand-in for the paper's CIFAR-10" in title
    data, stand_in = pf.data_lines(images, pf.SOURCES["border-digits"])  # the caption's lines
    assert data.startswith("Data: scikit-learn digits (16×16, offline)") and "preset border-digits" in data
    assert stand_in.startswith("Stand-in for the paper's CIFAR-10")
    assert pf.scale_note(experiment.load("border-digits")) == "preset as shipped"
    assert pf.preset_text(load_results(root / "default").config) == "configuration tiny-test (not a shipped preset)"
    assert "more settings (see its config.toml)" in note
    assert "modified: " in pf.scale_note(experiment.load("toy-linear", ["train.steps=20000"]))


def test_the_delay_figure_fits_the_toy_model(root, tmp_path):
    """toy-linear's delay is exactly ∝ 1/(ηλ): every per-η fit of delay on 1/λ is a line with R² ≈ 1."""
    from nht_jax.analysis.fits import FitOptions, fit_report

    report = fit_report(load_results(root / "toy-linear"), FitOptions(n_bootstrap=20))
    for kind in ("inverse_lambda", "inverse_eta"):
        ok = [f for f in report["delay_fits"] if f.kind == kind and f.ok]
        assert len(ok) == 3 and all(f.r2 > 0.99 for f in ok), kind
    assert "inverse_lambda" in pf.make_figure("delay", root / "toy-linear", tmp_path / "d.png").note


def test_results_without_the_axis_say_so_instead_of_drawing(root, tmp_path):
    """fig2/fig3 need ρ, fig5 group metrics: the PNG is a notice and the outcome says why."""
    for key, folder, words in (
        ("fig2", "default", "grid over the border correlation"),
        ("fig3", "toy-linear", "grid over the border correlation"),
        ("fig5", "border-digits", "needs group metrics"),
    ):
        out = tmp_path / f"{key}.png"
        outcome = pf.make_figure(key, root / folder, out)
        assert outcome.status == "not drawn" and words in outcome.note
        assert is_png(out)


def celeba_without_data(monkeypatch, tmp_path) -> Path:
    """Point the celeba preset (a copy of the presets) at an empty data folder, so the test does not depend on
    this machine."""
    empty = tmp_path / "no-tfds"
    empty.mkdir()
    folder = copy_presets(tmp_path / "presets", {}, replace={"celeba": ('data_dir = ""', f'data_dir = "{empty}"')})
    monkeypatch.setattr(presets, "presets_dir", lambda: folder)
    return empty


def test_fig5_without_celeba_writes_a_notice_and_the_command(monkeypatch, tmp_path, capsys):
    celeba_without_data(monkeypatch, tmp_path)
    out = tmp_path / "fig5.png"
    outcome = pf.make_figure("fig5", out=out, quick=True, root=tmp_path / "runs", progress=False)
    assert outcome.status == "not drawn (needs data)" and is_png(out)
    assert "CelebA" in outcome.note and "nht run celeba" in outcome.note
    assert "tfds build celeb_a" in outcome.note or "tensorflow-datasets" in outcome.note
    script = "paper_figs/fig5_celeba_groups.py"  # the command it prints runs the figure's own script
    assert f"`python {script} " in outcome.note and (Path(__file__).parents[2] / script).is_file()
    assert not (tmp_path / "runs" / "celeba-quick" / "trajectories.npz").exists()  # nothing made up, nothing written
    assert "training celeba" in capsys.readouterr().out


def test_fig5_draws_group_metrics_when_they_are_recorded(tmp_path):
    """With results that record worst_group_acc (here a synthetic CelebA-shaped Results: no CelebA offline), fig5
    draws norm, worst-group and average accuracy against epoch."""
    config = experiment.load("celeba", ["train.steps=2542", "grid.seed=[0]"])
    steps = np.arange(0, 2543, 1271)
    lams = np.array([0.001, 0.1, 1.0], np.float32)
    hp = {
        "weight_decay": lams,
        "learning_rate": np.full(3, 1e-3, np.float32),
        "seed": np.zeros(3, np.uint32),
        "init_scale": np.ones(3, np.float32),
        "rho": np.ones(3, np.float32),
    }
    curve = np.tile(np.linspace(0.2, 0.8, len(steps)), (3, 1))
    metrics = {"norm_sq": 100 + curve, "worst_group_acc": curve / 2, "clean_acc": curve, "weighted_avg_acc": curve}
    res = Results(tmp_path, config, steps, metrics, hp, {k: np.unique(v) for k, v in hp.items()}, [])
    out = tmp_path / "fig5.png"
    note = pf.draw_fig5(res, out, pf.SOURCES["celeba"])
    assert is_png(out) and "3 λ" in note
    assert pf.epochs_per_step(config) == pytest.approx(1 / 1271)


def test_missing_results_are_trained_at_the_quick_scale(tmp_path, monkeypatch):
    """No results: the figure's preset is trained with its quick overrides into ROOT/<preset>-quick, then drawn."""
    calls = []

    def fake_run(config, out, progress=True, draw=True):
        calls.append((config, out))
        raise ConfigError("stop here")

    monkeypatch.setattr("nht_jax.training.sweep.run_sweep", fake_run)
    with pytest.raises(ConfigError, match="stop here"):
        pf.make_figure("fig3", out=tmp_path / "f.png", quick=True, root=tmp_path)
    config, out = calls[0]
    assert out == tmp_path / "border-digits-quick" and config == experiment.load("border-digits", scale="quick")
    assert list(config.grid["seed"]) == [0] and len(config.grid["weight_decay"]) == 3
    with pytest.raises(ConfigError, match="nht run border-digits --out"):
        pf.make_figure("fig3", out=tmp_path / "f.png", root=tmp_path, allow_run=False)
    command = f"nht run border-digits --scale quick --out {tmp_path / 'border-digits-quick'}"
    with pytest.raises(ConfigError, match=re.escape(command)):
        pf.make_figure("fig3", out=tmp_path / "f.png", quick=True, root=tmp_path, allow_run=False)
    # The size is the preset's own [scale.quick]: edit it in a copy of the presets and the figure trains that.
    folder = copy_presets(tmp_path / "presets", {"border-digits": "[scale.quick]\ngrid.seed = [7]\n"})
    monkeypatch.setattr(presets, "presets_dir", lambda: folder)
    with pytest.raises(ConfigError, match="stop here"):
        pf.make_figure("fig3", out=tmp_path / "f.png", quick=True, root=tmp_path / "other")
    config, out = calls[1]
    assert out == tmp_path / "other" / "border-digits-quick" and config.grid["seed"] == (7,)
    assert config.grid["weight_decay"] == experiment.load("border-digits").grid["weight_decay"]


def test_find_results_prefers_the_full_scale(root, tmp_path):
    assert pf.find_results(pf.SOURCES["border-digits"], root, quick=False) == root / "border-digits"
    assert pf.find_results(pf.SOURCES["celeba"], root, quick=True) is None


def test_each_figure_trains_its_presets_own_scale():
    """Without results a figure trains its preset's [scale.quick] with --quick, [scale.reduced] (a GPU-sized
    preset) without, else the preset as shipped; the delay figure keeps toy-linear's shipped grid at --quick."""
    expected = {
        ("default", False): None,
        ("default", True): "quick",
        ("border-digits", False): None,
        ("border-digits", True): "quick",
        ("celeba", False): "reduced",
        ("celeba", True): "quick",
        ("toy-linear", False): None,
        ("toy-linear", True): None,
    }
    assert {
        (key, quick): pf.scale_of(source, quick) for key, source in pf.SOURCES.items() for quick in (False, True)
    } == expected
    assert "quick" in experiment.scales("toy-linear")  # it has one (nht reproduce --quick); the figure does not use it


def test_nht_figs_on_prepared_directories(root, tmp_path, monkeypatch, capsys):
    """`nht figs --no-run`: every figure with results is drawn into --out; fig5 (no celeba folder) fails without
    training, naming the command; exit code 1. With training allowed and no CelebA, fig5 is a notice."""
    monkeypatch.setattr("nht_jax.training.sweep.run_sweep", no_training)
    out = tmp_path / "figs"
    code = main(["paper", "figs", "--out", str(out), "--results", str(root), "--no-run"])
    printed = capsys.readouterr().out
    assert code == 1
    for key, figure in pf.FIGURES.items():
        assert (out / figure.filename).exists() == (key != "fig5"), key
        assert key in printed
    assert "fig5   FAILED" in printed and "nht run celeba" in printed
    assert "preset border-digits (reduced scale" in printed

    monkeypatch.undo()
    celeba_without_data(monkeypatch, tmp_path)
    code = main(["paper", "figs", "--out", str(out), "--results", str(tmp_path / "empty"), "--only", "fig5", "--quick"])
    assert code == 0 and is_png(out / "fig5_celeba_groups.png")
    assert "not drawn (needs data)" in capsys.readouterr().out
    assert main(["paper", "figs", "--only", "fig9", "--no-run"]) == 2


def test_paper_figs_scripts_are_thin_wrappers(root, tmp_path):
    """Each paper_figs/ script draws its figure through the package (here fig3 on the tiny images folder)."""
    scripts = sorted(p.name for p in (REPO / "paper_figs").glob("*.py"))
    assert scripts == sorted(f.filename.replace(".png", ".py") for f in pf.FIGURES.values())
    out = tmp_path / "fig3.png"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "paper_figs" / "fig3_phase_lambda_rho.py"),
            str(root / "border-digits"),
            "--out",
            str(out),
            "--no-run",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert is_png(out) and "fig3   drawn" in done.stdout
    missing = subprocess.run(
        [sys.executable, str(REPO / "paper_figs" / "fig2_clean_vs_rho.py"), str(tmp_path / "nothing"), "--no-run"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert missing.returncode == 2 and "nht run border-digits" in missing.stdout


@pytest.mark.parametrize("folder", ["default", "border-digits", "toy-linear"])
def test_nht_analyze_on_each_results_directory(root, tmp_path, folder):
    """`nht analyze` on the tiny modular, border-image and toy results: every verdict carries its rule."""
    import shutil

    from nht_jax.analysis.analyze import analyze, options_from

    copy = tmp_path / folder
    shutil.copytree(root / folder, copy)
    report = analyze(copy, options_from(["fits.n_bootstrap=50", "separation.n_bootstrap=50", "layers.n_bootstrap=50"]))
    assert [v.id for v in report["predictions"]] == ["P1", "P2", "P3", "P4", "P5", "P6"]
    assert all(v.rule and v.verdict in ("✓", "✗", "n.a.") for v in report["predictions"])
    assert (copy / "analysis.md").exists() and is_png(copy / "phase_boundaries.png")
