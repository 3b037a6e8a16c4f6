"""`nht run --overwrite` and `nht import --overwrite` keep nothing of the experiment they replace (issue 29, item 3):
every file the project writes into a results folder (`results.FOLDER_FILES`, the domains' figures, the export
folders) goes; a file or folder it did not write stays, named in one line. Also: the list is the one the commands
actually write (a new output file must be added to it), the analyses' files checked on a planted folder where
every registered analysis writes."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from nht_jax.analysis import analyze, record, registry
from nht_jax.cli import main
from nht_jax.figures import style
from nht_jax.results import export as ex
from nht_jax.results import folder as results
from nht_jax.results.folder import load_results

from ..analysis.conftest import write_results_folder
from ..conftest import TINY, make_tiny_config

OTHER = [*TINY, "--set", "train.steps=60"]  # another configuration
STALE = b"written by the experiment that --overwrite replaces\n"


def plant_everything(folder):
    """Every file the project could have written there, with stale content; an export folder of each kind with its
    marker; and three things of the user's: a file, a folder, and a folder named like an export without a marker."""
    for name in results.known_files():
        (folder / name).write_bytes(STALE)
    for kind in results.EXPORT_FOLDERS:
        (folder / kind / "0_run").mkdir(parents=True)
        (folder / kind / ex.MARKER).write_bytes(b'{"finished": true}')
        (folder / kind / "0_run" / "events.out.tfevents.1.host").write_bytes(STALE)
    (folder / ".meta.json.abcdefgh.tmp").write_bytes(STALE)  # a killed writer's temporary
    (folder / "notes.txt").write_bytes(b"mine")
    (folder / "mine").mkdir()
    (folder / "mine" / "data.bin").write_bytes(b"mine")


def assert_nothing_stale(folder):
    stale = [p.relative_to(folder) for p in folder.rglob("*") if p.is_file() and p.read_bytes() == STALE]
    assert not stale, stale
    assert not any((folder / kind).exists() for kind in results.EXPORT_FOLDERS)
    assert (folder / "notes.txt").read_bytes() == b"mine" and (folder / "mine" / "data.bin").read_bytes() == b"mine"


def test_run_overwrite_removes_every_file_of_the_earlier_experiment(folder, capsys):
    plant_everything(folder)
    assert main(["run", *OTHER, "--out", str(folder), "--quiet", "--overwrite"]) == 0
    out = capsys.readouterr().out
    assert_nothing_stale(folder)
    assert results.check_folder(folder).complete and load_results(folder).config.train.steps == 60
    (note,) = [line for line in out.splitlines() if line.startswith("note: ")]
    assert "mine/, notes.txt, which nht did not write: left as they are" in note


def test_import_overwrite_removes_every_file_of_the_earlier_experiment(finished, folder, tmp_path, capsys):
    pytest.importorskip("tensorboardX")
    ex.write_tensorboard(load_results(finished), tmp_path / "tb")
    plant_everything(folder)
    assert (
        main(["import", str(tmp_path / "tb"), "--out", str(folder), "--overwrite", "--set", "optim.decay_on=weights"])
        == 0
    )
    out = capsys.readouterr().out
    assert_nothing_stale(folder)
    assert load_results(folder).config.task.name == "imported"
    assert "note: " in out and "notes.txt, which nht did not write" in out


def test_a_linked_file_is_removed_as_a_link(folder, tmp_path):
    target = tmp_path / "elsewhere.png"
    target.write_bytes(b"theirs")
    (folder / "bound.png").symlink_to(target)
    cleared = results.clear_folder(folder)
    assert "bound.png" in cleared.removed and not (folder / "bound.png").exists()
    assert target.read_bytes() == b"theirs"


def test_the_list_holds_what_the_commands_write(folder, tmp_path):
    """bound, export (inside the folder) and run: every entry they leave is in the list (or the lock); analyze's
    files: the next test, on a folder where every analysis writes (here most would not apply)."""
    pytest.importorskip("tensorboardX")
    for argv in (["paper", "bound", str(folder)], ["export", str(folder), "--tensorboard"]):
        assert main(argv) == 0, argv
    known = results.known_files(load_results(folder).config) | {".lock"}
    written = {p.name + ("/" if p.is_dir() else "") for p in folder.iterdir()}
    unknown = {
        name for name in written if name.rstrip("/") not in known and name.rstrip("/") not in results.EXPORT_FOLDERS
    }
    assert not unknown, f"files the commands write but results.FOLDER_FILES does not list: {unknown}"
    assert set(ex.KINDS.values()) == set(results.EXPORT_FOLDERS) and ex.MARKER == results.EXPORT_MARKER
    cleared = results.clear_folder(folder)
    assert cleared.left == () and sorted(p.name for p in folder.iterdir()) == [".lock"]


STEPS = np.arange(0, 4001, 50, dtype=np.float64)


def planted_for_every_analysis(out: Path) -> Path:
    """A results folder written by the sweep's writers from planted metrics (no training) to which every registered
    analysis applies: two widths (emergence), a temperature beside its identity 1 (interventions), the Fourier
    metrics (structure), two seeds (the held-out forecast at T_fit), head norms (early warning); every run fits at
    step 200, and transitions later from a critical width on (64 at λ = 0.1, 16 at λ = 1), its norm contracting
    from 100·width by 8·(width/16)^-½ in between (fits, predictions, separation, layers, predictor, forecast)."""
    config = make_tiny_config(
        grid={"width": [16, 64], "weight_decay": [0.1, 1.0], "seed": [0, 1], "temperature": [1.0, 2.0]},
        steps=int(STEPS[-1]),
        log_every=50,
    )
    runs = config.runs()
    norm, test = [], []
    for width, lam, tau, seed in zip(runs["width"], runs["weight_decay"], runs["temperature"], runs["seed"]):
        t_tr = 200 + 3200 * 16 / width * tau + 50 * seed if width >= (64 if lam < 0.5 else 16) else np.inf
        v_sc = 100.0 * width
        v_st = v_sc / (8 * (width / 16) ** -0.5)
        between = v_sc * (v_st / v_sc) ** np.clip((STEPS - 200) / (min(t_tr, 1e9) - 200), 0, 1)
        norm.append(np.where(STEPS <= 200, 10 + (v_sc - 10) * STEPS / 200, between))
        test.append((STEPS >= t_tr).astype(float))
    norm, test = np.array(norm), np.array(test)
    train = np.tile((STEPS >= 200).astype(float), (len(norm), 1))
    ones = np.ones_like(norm)
    metrics = {
        "norm_sq": norm,
        "weight_norm_sq": norm,
        "head_norm_sq": norm / 2,
        "layer_norm_sq/embed": norm / 2,
        "layer_norm_sq/head": norm / 2,
        "train_acc": train,
        "test_acc": test,
        "train_loss": 1.01 - train,
        "test_loss": 1.01 - test,
        "grad_norm": ones,
        "logit_scale": ones,
        "finite": ones,
        "fourier_concentration": test,
        "fourier_sum_energy": test,
    }
    metrics.update({name: ones for name in config.domain.summary(config) if name not in metrics})
    return write_results_folder(out, STEPS, metrics, runs, config)


def unrendered(fig, path, tight=True):
    """`style.write_figure` without the rendering (5 s of the test): each format's file, empty."""
    written = [Path(path).with_suffix(f".{fmt}") for fmt in style.current_output().formats]
    for target in written:
        target.write_bytes(b"")
    return written


def recording(a, drawn: dict):
    """The analysis `a` with the names of the figures it draws also kept in drawn[a.name]."""

    def figures(*args):
        drawn[a.name] = a.figures(*args)
        return drawn[a.name]

    return dataclasses.replace(a, figures=figures)


def test_the_list_holds_every_file_an_analysis_writes(tmp_path, monkeypatch):
    """`nht analyze --format png,pdf,svg` on a folder where every registered analysis applies (checked first: an
    analysis added to the registry must be given data here) writes only files of the list, and `clear_folder` then
    removes them all (until 2026-12-04 a figure's .pdf and .svg were not in it: `--overwrite` left them, as files
    nht did not write)."""
    assert results.FIGURE_FORMATS == style.FORMATS
    folder = planted_for_every_analysis(tmp_path / "planted")
    monkeypatch.setattr(style, "write_figure", unrendered)
    drawn = {}  # the figures of each analysis that draws, by its name
    for name, a in list(registry.ANALYSES.items()):
        if a.figures is not record.no_figures:
            monkeypatch.setitem(registry.ANALYSES, name, recording(a, drawn))
    options = analyze.options_from(
        [
            f"{name}.n_bootstrap=10"
            for name in (
                "fits",
                "separation",
                "emergence",
                "interventions",
                "early_warning",
                "forecast",
                "forecast_tfit",
            )
        ]
    )
    with style.writing(style.FigureOutput(formats=style.FORMATS)):  # every figure in every format (--format)
        done = analyze.analyze(folder, options)
    assert [a.name for a in done["applied"]] == list(registry.ANALYSES)
    assert drawn and all(drawn.values()), drawn  # each analysis that draws drew here
    known = results.known_files(load_results(folder).config) | {".lock"}
    unlisted = (set(done["written"]) | {p.name for p in folder.iterdir()}) - known
    assert not unlisted, f"written by nht analyze, not in results.FOLDER_FILES: {sorted(unlisted)}"
    assert results.clear_folder(folder).left == () and [p.name for p in folder.iterdir()] == [".lock"]
