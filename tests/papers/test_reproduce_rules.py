"""`nht reproduce`'s rules pinned by known answers (nht_jax/papers/reproduce.py): which parts run and where, which
folders a part reads, when a finished part is reused, resumed or re-analysed, what its record keeps, what the
report and the scorecard files say. Nothing trains: the sweep, the analysis and the bounds are replaced by fakes
that write what a finished part holds, and the one end-to-end call runs the their-data part (seconds)."""

import csv
import dataclasses
import io
import json
import math
import os
from pathlib import Path

import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.measure.stopping import results_digest
from nht_jax.papers import claims as claims_lib
from nht_jax.papers import measures as m
from nht_jax.papers import reproduce as repro
from nht_jax.papers import scorecard as sc

PARTS = repro.PARTS


def plan_of(key, folder, overrides=(), scale=None, moved=()):
    return repro.Plan(PARTS[key], Path(folder), None, "the analysis options", tuple(overrides), scale, tuple(moved))


def outcome(key, folder, status="made", wall=1.0, made=2.0, cpu=3.0, runs="4 runs × 10 steps"):
    return repro.Outcome(key, Path(folder), status, wall, made, cpu, runs)


def finish(folder, runs=3, steps=12000, digest="d"):
    """What a finished sweep leaves: meta.json (written last) and trajectories.npz."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "meta.json").write_text(json.dumps({"runs": runs, "steps": steps, "config_digest": digest}))
    (folder / "trajectories.npz").write_bytes(b"")
    return folder


# ----------------------------------------------------------------------------- which parts, where


def test_a_part_lives_in_dir_part_at_full_scale_and_dir_part_quick_at_quick():
    assert repro.folder_of(Path("D"), "critical-norm", "full") == Path("D/critical-norm")
    assert repro.folder_of(Path("D"), "critical-norm", "quick") == Path("D/critical-norm-quick")


def test_the_scales_of_reproduce_are_the_presets_reproduce_and_quick_tables():
    assert repro.PRESET_SCALE == {"full": "reproduce", "quick": "quick"}


def test_only_brings_its_sources_along_in_the_order_parts_run():
    """--only clamp-p59 sparse-parity: clamp-p59 reads critical-norm-p59, which comes along, and the three run in
    PARTS order (sparse-parity first, the source before its dependent), whatever order --only names them."""
    keys = [p.key for p in repro.select(["clamp-p59", "sparse-parity"])]
    assert keys == ["sparse-parity", "critical-norm-p59", "clamp-p59"]
    assert [p.key for p in repro.select(["toy-linear"])] == ["toy-linear"]
    assert [p.key for p in repro.select(None)] == list(PARTS) == [p.key for p in repro.select([])]


def test_an_unknown_part_fails_naming_every_unknown_sorted_and_the_known():
    with pytest.raises(ConfigError, match=r"unknown part\(s\) xb, ya for --only; choose among default, toy-linear"):
        repro.select(["ya", "default", "xb"])


def test_every_source_runs_before_its_dependent_part():
    """PARTS is the running order: every source of a part is a part that comes before it."""
    order = list(PARTS)
    for key, part in PARTS.items():
        assert all(order.index(s) < order.index(key) for s in part.sources), key
    assert {k: p.sources for k, p in PARTS.items() if p.sources} == {
        "interventions": ("critical-norm",),
        "norm-clamp": ("critical-norm",),
        "logit-temperature": ("critical-norm",),
        "logit-temperature-mse": ("critical-norm-mse",),
        "logit-temperature-ce": ("critical-norm-ce",),
        "clamp-p59": ("critical-norm-p59",),
        "clamp-p59-t500": ("critical-norm-p59",),
        "clamp-p59-abs": ("critical-norm-p59",),
    }
    assert [k for k, p in PARTS.items() if p.preset is None] == [repro.BOUNDS, repro.THEIR_DATA]
    assert all(p.preset == k for k, p in PARTS.items() if p.preset)


# ----------------------------------------------------------------------------- parts that read other parts


def test_a_configuration_reads_its_clamps_folder_then_its_forks_each_once():
    """clamp-p59-t500 pins at critical-norm-p59's W_c and forks from it: one reference, not two; with the fork moved
    elsewhere, the clamp's folder comes first."""
    config = experiment.load("clamp-p59-t500")
    assert repro.references(config) == ("runs/out/critical-norm-p59",)
    other = dataclasses.replace(config, fork=dataclasses.replace(config.fork, from_="runs/out/elsewhere"))
    assert repro.references(other) == ("runs/out/critical-norm-p59", "runs/out/elsewhere")
    assert repro.references(experiment.load("critical-norm-p59")) == ()


def test_a_reference_names_its_source_by_folder_or_folder_dash_one_of_its_scales():
    part = repro.Part("x", "x", "a dependent", ("critical-norm",))
    for reference in ("runs/out/critical-norm", "elsewhere/critical-norm-quick"):
        assert repro.source_of(part, reference) == "critical-norm", reference
    for reference in (
        "runs/out/critical-norm-p59",
        "runs/out/critical-normx",
        "runs/out/critical-norm-reduced",
        "runs/out/critical",
    ):
        with pytest.raises(
            ConfigError,
            match=r"'%s', which is none of the parts it names as sources "
            r"\(critical-norm\)" % reference,
        ):
            repro.source_of(part, reference)
    with pytest.raises(ConfigError, match=r"sources \(none\)"):
        repro.source_of(repro.Part("y", "y", "none"), "runs/out/critical-norm")


@pytest.mark.parametrize("scale, folder", [("full", "critical-norm-p59"), ("quick", "critical-norm-p59-quick")])
def test_a_dependent_part_reads_its_sources_folder_under_dir_at_the_same_scale(tmp_path, scale, folder):
    """clamp-p59-t500's clamp and fork both read DIR/critical-norm-p59[-quick], recorded as moved."""
    p = repro.plan(tmp_path, scale, [PARTS["clamp-p59-t500"]])[0]
    target = str(tmp_path / folder)
    assert p.moved == (("runs/out/critical-norm-p59", target),)
    assert p.config.fork.from_ == target
    assert [s.critical_from for s in p.config.optim.after if getattr(s, "critical_from", None)] == [target]
    size = "as shipped" if p.scale is None else f"quick: {', '.join(f'`{s}`' for s in p.overrides)}"
    assert p.scale == {"full": None, "quick": "quick"}[scale]
    assert repro.scale_text(p) == f"{size}; reads `{target}` for `runs/out/critical-norm-p59`"


# ----------------------------------------------------------------------------- finished folders, reuse, resume


def test_a_sweep_is_finished_only_with_both_its_meta_and_its_trajectories(tmp_path):
    (tmp_path / "meta.json").write_text("{}")
    assert not repro.finished(tmp_path)
    (tmp_path / "trajectories.npz").write_bytes(b"")
    assert repro.finished(tmp_path)
    (tmp_path / "meta.json").unlink()
    assert not repro.finished(tmp_path)


def test_an_analysis_is_stale_when_missing_or_strictly_older_than_the_sweep(tmp_path):
    finish(tmp_path)
    assert repro.analysis_stale(tmp_path)
    predictions = tmp_path / "predictions.csv"
    predictions.write_text("")
    for analysed, stale in ((1000, True), (2000, False), (3000, False)):  # meta.json at 2000: equal is fresh
        os.utime(tmp_path / "meta.json", (2000, 2000))
        os.utime(predictions, (analysed, analysed))
        assert repro.analysis_stale(tmp_path) == stale, analysed


def test_a_folder_of_another_configuration_is_refused_and_the_same_one_is_reused(tmp_path):
    """sparse-parity (no sources): meta.json with its own digest passes (even unfinished: it resumes); another digest
    names the folder, the part and the scale's table."""
    config = repro.plan(tmp_path, "quick", [PARTS["sparse-parity"]])[0].config
    folder = tmp_path / "sparse-parity-quick"
    folder.mkdir()
    (folder / "meta.json").write_text(json.dumps({"config_digest": results_digest(config)}))
    assert repro.plan(tmp_path, "quick", [PARTS["sparse-parity"]])[0].folder == folder
    finish(folder, digest=results_digest(config))
    assert repro.plan(tmp_path, "quick", [PARTS["sparse-parity"]])[0].folder == folder
    finish(folder, digest="another")
    with pytest.raises(
        ConfigError,
        match=r"'%s' holds results of another configuration than part sparse-parity at "
        r"scale 'quick' \(the preset or its \[scale.quick\] table" % folder,
    ):
        repro.plan(tmp_path, "quick", [PARTS["sparse-parity"]])
    full = finish(tmp_path / "sparse-parity", digest="another")
    with pytest.raises(ConfigError, match=r"'%s' .* at scale 'full' \(the preset or its \[scale.reproduce\]" % full):
        repro.plan(tmp_path, "full", [PARTS["sparse-parity"]])


def test_a_finished_dependent_part_whose_source_is_unfinished_is_refused(tmp_path):
    """clamp-p59 finished, critical-norm-p59 not: its results were made from another source. Unfinished, it is not
    compared (it resumes and reads the source when it trains)."""
    folder = tmp_path / "clamp-p59-quick"
    folder.mkdir()
    (folder / "meta.json").write_text(json.dumps({"config_digest": "whatever"}))
    assert repro.plan(tmp_path, "quick", [PARTS["clamp-p59"]])[0].folder == folder
    finish(folder, digest="whatever")
    finish(tmp_path / "critical-norm-p59")  # the full scale's source: not the one quick reads
    with pytest.raises(
        ConfigError,
        match=r"holds results of part clamp-p59 that do not match its sources under "
        r"'%s': its source part\(s\) critical-norm-p59 are not finished" % tmp_path,
    ):
        repro.plan(tmp_path, "quick", [PARTS["clamp-p59"]])


# ----------------------------------------------------------------------------- running one part


@pytest.fixture
def sweep_fakes(monkeypatch):
    """run_sweep writes a finished 3-run × 12,000-step folder; redraw and analyze are recorded."""
    calls = []

    def run_sweep(config, folder, progress=True):
        calls.append(("run_sweep", config, progress))
        finish(Path(folder))

    def analyze(folder, options):
        calls.append(("analyze", options))
        (Path(folder) / "predictions.csv").write_text("")

    monkeypatch.setattr("nht_jax.training.sweep.run_sweep", run_sweep)
    monkeypatch.setattr("nht_jax.figures.folder.redraw", lambda folder: calls.append(("redraw", folder)))
    monkeypatch.setattr("nht_jax.analysis.analyze.analyze", analyze)
    return calls


def test_a_sweep_part_is_trained_then_reused_then_only_reanalysed(tmp_path, sweep_fakes):
    p = repro.Plan(PARTS["sparse-parity"], tmp_path / "part", "the config", "the options", ())
    assert repro.run_sweep_part(p, progress=False) == ("made", "3 runs × 12,000 steps")
    assert sweep_fakes == [("run_sweep", "the config", False), ("redraw", p.folder), ("analyze", "the options")]
    os.utime(p.folder / "meta.json", (1000, 1000))
    os.utime(p.folder / "predictions.csv", (1000, 1000))
    assert repro.run_sweep_part(p, progress=False) == ("", "3 runs × 12,000 steps")
    (p.folder / "predictions.csv").unlink()
    assert repro.run_sweep_part(p, progress=False) == ("re-analysed", "3 runs × 12,000 steps")
    assert [c[0] for c in sweep_fakes] == ["run_sweep", "redraw", "analyze", "analyze"]


def record_of(folder):
    return json.loads((folder / repro.PART_RECORD).read_text())


def test_a_made_part_records_its_time_scale_and_overrides(tmp_path, monkeypatch):
    monkeypatch.setattr(repro, "run_sweep_part", lambda p, progress: ("made", "2 runs × 5 steps"))
    folder = tmp_path / "part"
    folder.mkdir()
    o = repro.run_part(plan_of("sparse-parity", folder, ("train.steps=5", "grid.seed=[0]"), "quick"), True, False)
    record = record_of(folder)
    assert (o.key, o.folder, o.status, o.runs, o.made_s, o.ok) == (
        "sparse-parity",
        folder,
        "made",
        "2 runs × 5 steps",
        record["made_s"],
        True,
    )
    assert record["scale"] == "quick" and record["overrides"] == ["train.steps=5", "grid.seed=[0]"]
    assert record["runs"] == "2 runs × 5 steps" and len(record["load_average"]) == 3
    assert {"made_s", "cpu_s", "finished"} <= set(record) and o.cpu_s == record["cpu_s"]


def test_a_reused_part_keeps_its_record_and_reports_the_time_it_was_made(tmp_path, monkeypatch):
    """Reused: the record (made in 12.5 s, 3.0 s of CPU) stays byte for byte; without one, one is written."""
    monkeypatch.setattr(repro, "run_sweep_part", lambda p, progress: ("", "2 runs × 5 steps"))
    folder = tmp_path / "part"
    folder.mkdir()
    (folder / repro.PART_RECORD).write_text(text := json.dumps({"made_s": 12.5, "cpu_s": 3.0, "runs": "old"}))
    o = repro.run_part(plan_of("sparse-parity", folder), False, False)
    assert (o.status, o.made_s, o.cpu_s, o.runs) == ("reused", 12.5, 3.0, "2 runs × 5 steps")
    assert (folder / repro.PART_RECORD).read_text() == text
    (folder / repro.PART_RECORD).unlink()
    o = repro.run_part(plan_of("sparse-parity", folder), False, False)
    assert o.status == "reused" and record_of(folder)["made_s"] == o.made_s < 12.5


def test_a_reanalysed_part_keeps_its_training_time_and_dates_the_analysis_beside_it(tmp_path, monkeypatch):
    monkeypatch.setattr(repro, "run_sweep_part", lambda p, progress: ("re-analysed", "2 runs × 5 steps"))
    folder = tmp_path / "part"
    folder.mkdir()
    (folder / repro.PART_RECORD).write_text(json.dumps({"made_s": 12.5, "cpu_s": 3.0, "scale": "quick"}))
    o = repro.run_part(plan_of("sparse-parity", folder), False, False)
    record = record_of(folder)
    assert (o.status, o.made_s, o.cpu_s) == ("re-analysed", 12.5, 3.0)
    assert {k: record[k] for k in ("made_s", "cpu_s", "scale")} == {"made_s": 12.5, "cpu_s": 3.0, "scale": "quick"}
    assert set(record) == {"made_s", "cpu_s", "scale", "analysed_s", "analysed"} and record["analysed_s"] < 12.5
    (folder / repro.PART_RECORD).unlink()  # re-analysed without a record: the record is made now
    o = repro.run_part(plan_of("sparse-parity", folder), False, False)
    assert "analysed_s" not in record_of(folder) and o.made_s == record_of(folder)["made_s"]


def test_a_failed_part_says_why_and_the_others_go_on(tmp_path, monkeypatch):
    def fails(p, progress):
        raise ConfigError("diverged at step 7")

    monkeypatch.setattr(repro, "run_sweep_part", fails)
    o = repro.run_part(plan_of("sparse-parity", tmp_path), False, False)
    assert (o.status, o.ok, o.runs) == ("FAILED: diverged at step 7", False, "")
    assert math.isnan(o.made_s) and math.isnan(o.cpu_s) and not (tmp_path / repro.PART_RECORD).exists()
    assert outcome("x", tmp_path, status="FAILED").ok is False and outcome("x", tmp_path, status="reused").ok


def test_the_parts_without_a_sweep_run_their_own_function_and_are_made(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(repro, "run_bounds_part", lambda p, quick: seen.append(("bounds", quick)) or (True, "3 claims"))
    monkeypatch.setattr(repro, "run_their_data_part", lambda p, quick: seen.append(("theirs", quick)) or (True, "11"))
    assert repro.run_part(plan_of(repro.BOUNDS, tmp_path), True, False).status == "made"
    assert repro.run_part(plan_of(repro.THEIR_DATA, tmp_path), False, False).runs == "11"
    assert seen == [("bounds", True), ("theirs", False)]


class Checked:
    def __init__(self, text, ok, measured, tolerance):
        self.text, self.ok, self.measured, self.tolerance = text, ok, measured, tolerance


def test_the_bounds_part_writes_one_row_per_claim_once(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(
        "nht_jax.theory.verify.run_all",
        lambda quick: asked.append(quick) or [Checked("a ≤ b", True, 0.5, "1e-3"), Checked("c", False, 2.0, "0.1")],
    )
    p = plan_of(repro.BOUNDS, tmp_path / "bounds")
    assert repro.run_bounds_part(p, True) == (True, "2 claims (quick Monte-Carlo)")
    with open(p.folder / "bounds.csv", newline="") as f:
        assert list(csv.DictReader(f)) == [
            {"claim": "a ≤ b", "ok": "True", "measured": "0.5", "tolerance": "1e-3"},
            {"claim": "c", "ok": "False", "measured": "2", "tolerance": "0.1"},
        ]
    assert repro.run_bounds_part(p, True) == (False, "2 claims") and asked == [True]
    (p.folder / "bounds.csv").unlink()
    assert repro.run_bounds_part(p, False) == (True, "2 claims") and asked == [True, False]


def test_the_their_data_part_is_always_redone_from_the_reference_table(tmp_path):
    from nht_jax.papers.cells import THEIR_FITS, their_fits
    from nht_jax.papers.reference_cells import load

    p = plan_of(repro.THEIR_DATA, tmp_path / "theirs")
    n = len(their_fits(load()))
    assert repro.run_their_data_part(p, False) == (True, f"{n} quantities from the reference table")
    (p.folder / THEIR_FITS).write_text("stale")
    assert repro.run_their_data_part(p, True)[0] is True and (p.folder / THEIR_FITS).read_text() != "stale"


def test_a_killed_writers_temporaries_go_from_figures_the_bounds_and_each_planned_part_only(tmp_path):
    def temporary(folder):
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / ".x.csv.abcd1234.tmp"
        path.write_text("")
        os.utime(path, (0, 0))
        return path

    removed = [
        temporary(tmp_path / "figures"),
        temporary(tmp_path / "verify-bounds"),
        temporary(tmp_path / "sparse-parity"),
    ]
    kept = [temporary(tmp_path), temporary(tmp_path / "not-planned"), temporary(tmp_path / "figures" / "deeper")]
    plans = [
        plan_of(repro.BOUNDS, tmp_path / "verify-bounds"),
        plan_of("sparse-parity", tmp_path / "sparse-parity"),
        plan_of("toy-linear", tmp_path / "toy-linear"),
    ]  # never made: nothing to clean
    assert sorted(repro.remove_stale_temporaries_of_parts(tmp_path, plans)) == sorted(removed)
    assert not any(p.exists() for p in removed) and all(p.exists() for p in kept)


# ----------------------------------------------------------------------------- alternative definitions


def test_an_alternative_definition_is_made_once_and_a_failure_is_not_measured(tmp_path):
    folders = repro.AlternativeFolders({"a": tmp_path}, {}, tmp_path / "alt")
    made = []

    def make(part, text):
        made.append((part, text))
        if text == "bad=1":
            raise ConfigError("no such key")
        return tmp_path / part / text

    folders.make = make
    assert folders("a", "k=1") == folders("a", "k=1") == tmp_path / "a" / "k=1"
    assert folders("a", "k=2") == tmp_path / "a" / "k=2" and made == [("a", "k=1"), ("a", "k=2")]
    with pytest.raises(m.NotMeasured, match=r"^under bad=1: no such key$"):
        folders("a", "bad=1")


# ----------------------------------------------------------------------------- the paper's figures


def test_the_papers_figures_are_drawn_for_the_presets_that_ran_into_dir_figures(tmp_path, monkeypatch):
    from nht_jax.papers import paper_figures as pf

    calls = []

    def make_figure(key, folder, png, allow_run, progress):
        calls.append((key, folder, png, allow_run, progress))
        if key == "fig3":
            raise ConfigError("no ρ grid")
        return pf.Outcome(key, png, "drawn", folder, f"note {key}")

    monkeypatch.setattr(pf, "make_figure", make_figure)
    folder = tmp_path / "bd"
    drawn = repro.paper_figures(tmp_path, {"border-digits": folder, "sparse-parity": tmp_path / "sp"})
    figures = tmp_path / "figures"
    assert drawn == [
        ("fig2", figures / "fig2_clean_vs_rho.png", "drawn: note fig2"),
        ("fig3", figures / "fig3_phase_lambda_rho.png", "not drawn: no ρ grid"),
        ("fig4", figures / "fig4_layer_norms.png", "drawn: note fig4"),
    ]
    assert [c[1:] for c in calls] == [(folder, png, False, False) for _, png, _ in drawn]


# ----------------------------------------------------------------------------- the report


def row(id, verdict, parts="a", note="", sensitivity=""):
    return sc.Row(
        id,
        f"claim {id}",
        f"paper {id}",
        f"ours {id}",
        f"tol {id}",
        verdict,
        parts,
        f"source {id}",
        note,
        sensitivity=sensitivity,
    )


def test_the_scale_text_says_as_shipped_the_scales_settings_and_the_folders_read():
    assert repro.scale_text(plan_of("sparse-parity", "f")) == "as shipped"
    assert repro.scale_text(plan_of(repro.BOUNDS, "f")) == "–"
    p = plan_of("clamp-p59", "f", ("train.steps=5", "grid.seed=[0]"), "quick", (("runs/out/a", "D/a-quick"),))
    assert repro.scale_text(p) == "quick: `train.steps=5`, `grid.seed=[0]`; reads `D/a-quick` for `runs/out/a`"
    p = plan_of("clamp-p59", "f", moved=(("x", "D/a"), ("y", "D/b")))
    assert repro.scale_text(p) == "as shipped; reads `D/a` for `x`; reads `D/b` for `y`"


def test_the_load_when_made_is_the_1_and_15_minute_averages(tmp_path):
    assert repro.load_when_made(tmp_path) == "–"
    (tmp_path / repro.PART_RECORD).write_text(json.dumps({"load_average": [1.04, 2.0, 3.06]}))
    assert repro.load_when_made(tmp_path) == "1.0, 3.1"


def test_the_parts_table_names_each_parts_preset_size_and_folder(tmp_path):
    plans = [
        plan_of("sparse-parity", tmp_path / "sp-quick", ("train.steps=5",), "quick"),
        plan_of(repro.THEIR_DATA, tmp_path / "their-data"),
    ]
    table = repro.parts_table(
        [
            outcome("sparse-parity", tmp_path / "sp-quick", wall=1.26),
            outcome(repro.THEIR_DATA, tmp_path / "their-data", status="reused"),
        ],
        plans,
        tmp_path,
    )
    lines = table.strip().splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == [
        "part",
        "preset",
        "size (scale: --set)",
        "runs",
        "status",
        "this run (s)",
        "made in (s)",
        "CPU (s)",
        "load then (1, 15 min)",
        "folder",
    ]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    assert cells[0] == [
        "sparse-parity",
        "sparse-parity",
        "quick: `train.steps=5`",
        "4 runs × 10 steps",
        "made",
        "1.3",
        "2",
        "3",
        "–",
        "sp-quick",
    ]
    assert cells[1][:2] == [repro.THEIR_DATA, "the reference table"] and cells[1][4] == "reused"


def test_the_disagreements_list_only_that_verdict_with_the_note_when_there_is_one():
    rows = [row("a", sc.DISAGREES, note="n"), row("b", sc.AGREES), row("c", sc.DISAGREES), row("d", sc.DIFFERENT)]
    assert repro.disagreements(rows) == [
        "`a` — claim a: the paper says paper a, we measure ours a (tolerance tol a; source a); n",
        "`c` — claim c: the paper says paper c, we measure ours c (tolerance tol c; source c)",
    ]
    assert [line[:3] for line in repro.disagreements(rows, sc.DIFFERENT)] == ["`d`"]


def test_a_parts_section_shows_its_analysis_its_table_or_its_bounds(tmp_path):
    sweep = tmp_path / "sp"
    sweep.mkdir()
    for name in ("b.png", "a.png", "notes.txt"):
        (sweep / name).write_text("")
    text = repro.part_section(outcome("sparse-parity", sweep, runs="2 runs × 5 steps"), tmp_path)
    assert text == (
        f"### sparse-parity\n\n{PARTS['sparse-parity'].what}. Folder `sp/`; 2 runs × 5 steps; made.\n\n"
        "The whole analysis: [sp/analysis.md](sp/analysis.md).\n\n"
        "![sparse-parity: a](sp/a.png)\n![sparse-parity: b](sp/b.png)\n"
    )
    failed = repro.part_section(outcome("sparse-parity", sweep, status="FAILED: x"), tmp_path)
    assert (
        failed == f"### sparse-parity\n\n{PARTS['sparse-parity'].what}. Folder `sp/`; 4 runs × 10 steps; FAILED: x.\n"
    )
    bounds = tmp_path / "b"
    bounds.mkdir()
    (bounds / "bounds.csv").write_text("claim,ok,measured,tolerance\nx ≤ y,True,0.5,0.1\nz,False,2,0.2\n")
    assert repro.part_section(outcome(repro.BOUNDS, bounds), tmp_path).endswith(
        "\n\n- [OK] x ≤ y: 0.5 (tolerance 0.1)\n- [!!] z: 2 (tolerance 0.2)\n"
    )
    theirs = tmp_path / "t"
    theirs.mkdir()
    (theirs / "their_fits.csv").write_text("quantity,value\nalpha,7.5\n")
    assert repro.part_section(outcome(repro.THEIR_DATA, theirs), tmp_path).endswith(
        "\n\n```\nquantity,value\nalpha,7.5\n```\n"
    )


def test_the_report_sums_the_made_times_of_the_parts_that_ran_and_lists_each_kind_of_row(tmp_path):
    """Made in 2 s and 5 s, one FAILED (NaN): 7 s. A disagreement, a miss [≠], a fragile row and a claim not
    checked here each land in their own section, and only there."""
    rows = [
        row("dis", sc.DISAGREES),
        row("dif", sc.DIFFERENT),
        row("fra", sc.FRAGILE, note="why", sensitivity="s"),
        row("ok", sc.AGREES),
        row("else", sc.UNJUDGED, parts="", note="`nht run big`"),
    ]
    outcomes = [
        outcome("sparse-parity", tmp_path / "a", made=2.0),
        outcome("toy-linear", tmp_path / "b", made=5.0),
        outcome("default", tmp_path / "c", status="FAILED: x", made=float("nan")),
    ]
    plans = [plan_of(o.key, o.folder) for o in outcomes]
    figures = [("fig1", tmp_path / "figures" / "fig1.png", "drawn: fine")]
    text = repro.report_markdown(rows, outcomes, plans, figures, tmp_path, "quick", "then", "m0", 42.4)
    sections = {s.split("\n", 1)[0]: s for s in text.split("\n## ")}
    assert text.startswith(
        "# nht paper reproduce (quick scale)\n\nStarted then; 42 s in all (the parts took 7 s of wall"
    )
    assert f"**Scorecard: {sc.tally_text(rows)}** over 5 claims." in text
    assert (
        "`dis`" in sections["Disagreements with the papers"]
        and "`dif`" not in sections["Disagreements with the papers"]
    )
    assert "`dif`" in sections["Misses of a different definition or experiment ([≠])"]
    fragile = sections["Fragile verdicts ([~]): they flip under another definition the papers leave open"]
    assert "- `fra`: s (why)" in fragile and "`dis`" not in fragile
    assert sections["Not checked here"].split("\n\n")[1].splitlines() == [
        "- `else` claim else (paper: paper else): `nht run big`"
    ]
    assert "- fig1: drawn: fine\n\n![fig1](figures/fig1.png)" in text
    nu, lams = claims_lib.companion_table_exponent()
    assert f"T_grok ∝ λ^(−{nu:.2f}) over λ ∈ {{{', '.join(f'{x:g}' for x in lams)}}}" in text
    empty = repro.report_markdown([row("ok", sc.AGREES)], outcomes[:1], plans[:1], [], tmp_path, "full", "t", "m", 1)
    assert empty.splitlines().count("None at this scale.") == 3 and "redrawn from the parts" not in empty
    # each heading between blank lines, in order; the parts' folders relative to DIR; one newline at the end
    headings = [
        "## Parts",
        "## Scorecard",
        "## Disagreements with the papers",
        "## Misses of a different definition or experiment ([≠])",
        "## Fragile verdicts ([~]): they flip under another definition the papers leave open",
        "## Inconsistencies of the papers themselves (docs/science.md §7)",
        "## Not checked here",
        "## Parts and their figures",
        "## The paper's figures, redrawn from the parts",
    ]
    assert [line for line in text.splitlines() if line.startswith("## ")] == headings
    assert all(f"\n\n{h}\n\n" in text for h in headings)
    assert "(quick scale)\n\nStarted then;" in text and "15 min).\n\n**Scorecard: " in text
    assert "Folder `a/`;" in text and "| sparse-parity " in text
    assert [line.split("|")[-2].strip() for line in text.splitlines() if line.startswith("| sparse-parity ")] == ["a"]
    assert text.endswith("\n\n![fig1](figures/fig1.png)\n\n") and not text.endswith("\n\n\n")


def test_reproduce_writes_the_scorecard_and_the_report_of_what_it_judged(tmp_path):
    """Only the their-data part (seconds, nothing trains): a planted claim it meets agrees, one it cannot meet
    disagrees, one over a part not run is not judged; scorecard.csv is the scorecard of exactly those rows."""
    value = claims_lib.Claim(
        "planted.one",
        "test",
        "one",
        "1",
        (repro.THEIR_DATA,),
        lambda folder: m.Measurement(1.0, "1"),
        claims_lib.within(0.5, 1.5),
    )
    wrong = dataclasses.replace(value, id="planted.two", rule=claims_lib.within(1.5, 2.5))
    absent = dataclasses.replace(value, id="planted.three", parts=("sparse-parity",))
    rows, outcomes = repro.reproduce(
        tmp_path, quick=True, only=[repro.THEIR_DATA], claims=(value, wrong, absent), progress=False
    )
    assert [(o.key, o.folder, o.status) for o in outcomes] == [
        (repro.THEIR_DATA, tmp_path / "their-data-quick", "made")
    ]
    assert [r.verdict for r in rows] == [sc.AGREES, sc.DISAGREES, sc.UNJUDGED]
    assert rows[2].note == "part sparse-parity not run (--only)"
    assert (tmp_path / "scorecard.csv").read_text() == sc.csv(rows)
    assert [r["id"] for r in csv.DictReader(io.StringIO((tmp_path / "scorecard.csv").read_text()))] == [
        "planted.one",
        "planted.two",
        "planted.three",
    ]
    report = (tmp_path / "reproduce.md").read_text()
    assert report.startswith("# nht paper reproduce (quick scale)")
    assert "`planted.two`" in report.split("## Disagreements with the papers")[1].split("\n## ")[0]
    assert "their-data-quick/their_fits.csv" not in report and "```\nquantity," in report
    assert record_of(tmp_path / "their-data-quick")["scale"] is None


# ----------------------------------------------------------------------------- known answers added in issue 43


def test_a_finished_dependent_part_is_reused_only_under_the_digest_of_its_resolved_references(tmp_path, monkeypatch):
    """The digest compared is meta.json's against that of the configuration with its sources' values resolved
    (`resolve_references` of the plan's own configuration); unfinished sources are named, every one."""
    resolved = experiment.load("sparse-parity")
    monkeypatch.setattr(
        "nht_jax.training.sweep.resolve_references",
        lambda config: (resolved if config == "the config" else experiment.load("toy-linear"), {}, {}),
    )
    folder = finish(tmp_path / "x", digest=results_digest(resolved))
    p = repro.Plan(repro.Part("x", "x", "two sources", ("a", "b")), folder, "the config", None, ())
    assert repro.source_digest_problem(p, True) is None
    finish(folder, digest=results_digest(experiment.load("toy-linear")))
    assert repro.source_digest_problem(p, True) == "it was made from other results of its source part(s)"
    assert repro.source_digest_problem(p, False) == (
        "its source part(s) a, b are not finished, so it was made from others"
    )


def test_plan_compares_a_finished_dependent_part_once_its_sources_at_the_same_scale_are_finished(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(repro, "source_digest_problem", lambda p, finished_sources: asked.append(finished_sources))
    finish(tmp_path / "clamp-p59-quick")
    finish(tmp_path / "critical-norm-p59-quick")
    assert repro.plan(tmp_path, "quick", [PARTS["clamp-p59"]])[0].folder == tmp_path / "clamp-p59-quick"
    assert asked == [True]


def held_elsewhere(folder):
    """The folder's lock taken through another open file, as another process takes it (flock conflicts between
    open files); the caller closes it."""
    import fcntl

    from nht_jax.results import lock

    folder.mkdir(parents=True, exist_ok=True)
    f = open(folder / lock.LOCK_NAME, "w")
    fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    f.write(json.dumps({"command": "nht run", "pid": 1, "host": "h", "since": "then"}))
    f.flush()
    return f


def test_a_part_folder_held_by_another_process_stops_the_plan_and_the_cleanup_naming_reproduce(tmp_path):
    again = "run `nht paper reproduce` again"
    f = held_elsewhere(tmp_path / "sparse-parity-quick")
    try:
        with pytest.raises(
            ConfigError, match=r"'%s' is in use by `nht run` .*%s" % (tmp_path / "sparse-parity-quick", again)
        ):
            repro.plan(tmp_path, "quick", [PARTS["sparse-parity"]])
        with pytest.raises(ConfigError, match=again):
            repro.remove_stale_temporaries_of_parts(
                tmp_path, [plan_of("sparse-parity", tmp_path / "sparse-parity-quick")]
            )
    finally:
        f.close()
    assert repro.plan(tmp_path, "quick", [PARTS["sparse-parity"]])[0].folder == tmp_path / "sparse-parity-quick"
    # a planned sweep part never made stays unmade (the cleanup takes no lock on it, which would create it)
    assert repro.remove_stale_temporaries_of_parts(tmp_path, [plan_of("toy-linear", tmp_path / "toy-linear")]) == []
    assert not (tmp_path / "toy-linear").exists()


def test_the_bounds_part_makes_its_folder_with_its_parents(tmp_path, monkeypatch):
    monkeypatch.setattr("nht_jax.theory.verify.run_all", lambda quick: [Checked("a ≤ b", True, 0.5, "1e-3")])
    p = plan_of(repro.BOUNDS, tmp_path / "a" / "b" / "bounds")
    assert repro.run_bounds_part(p, False) == (True, "1 claims") and (p.folder / "bounds.csv").exists()


class Clock:
    """time as run_part reads it: perf_counter and process_time give the values listed, strftime names its
    format."""

    def __init__(self, walls, cpus):
        self.walls, self.cpus = iter(walls), iter(cpus)

    def perf_counter(self):
        return next(self.walls)

    def process_time(self):
        return next(self.cpus)

    def strftime(self, fmt):
        return f"at {fmt}"


def test_a_parts_record_holds_its_wall_and_cpu_seconds_to_a_tenth_as_indented_json(tmp_path, monkeypatch):
    """Made: wall 112.34 − 100 = 12.34 s → 12.3, CPU 7.26 − 5 = 2.26 s → 2.3; re-analysed: 3.44 s → 3.4 beside the
    training's time; failed: the wall time and the part; reused without a CPU time: NaN."""
    seen = []
    monkeypatch.setattr(repro, "run_sweep_part", lambda p, progress: seen.append((p, progress)) or ("made", "2 runs"))
    monkeypatch.setattr(repro.os, "getloadavg", lambda: (1.0, 2.0, 3.0))
    monkeypatch.setattr(repro, "time", Clock([100.0, 112.34], [5.0, 7.26]))
    folder = tmp_path / "part"
    folder.mkdir()
    p = plan_of("sparse-parity", folder, ("train.steps=5",), "quick")
    o = repro.run_part(p, True, True)
    assert seen == [(p, True)]
    assert (o.key, o.folder, o.status, o.made_s, o.cpu_s, o.runs) == (
        "sparse-parity",
        folder,
        "made",
        12.3,
        2.3,
        "2 runs",
    )
    assert o.wall_s == pytest.approx(12.34)
    stamp = "at %Y-%m-%dT%H:%M:%S%z"
    made = {
        "made_s": 12.3,
        "cpu_s": 2.3,
        "runs": "2 runs",
        "scale": "quick",
        "overrides": ["train.steps=5"],
        "load_average": [1.0, 2.0, 3.0],
        "finished": stamp,
    }
    assert (folder / repro.PART_RECORD).read_text() == json.dumps(made, indent=2)

    monkeypatch.setattr(repro, "run_sweep_part", lambda p, progress: ("re-analysed", "2 runs"))
    monkeypatch.setattr(repro, "time", Clock([100.0, 103.44], [5.0, 5.5]))
    o = repro.run_part(p, True, True)
    assert (o.status, o.made_s, o.cpu_s) == ("re-analysed", 12.3, 2.3)
    again = {**made, "analysed_s": 3.4, "analysed": stamp}
    assert (folder / repro.PART_RECORD).read_text() == json.dumps(again, indent=2)

    def fails(p, progress):
        raise ConfigError("diverged")

    monkeypatch.setattr(repro, "run_sweep_part", fails)
    monkeypatch.setattr(repro, "time", Clock([100.0, 103.5], [5.0]))
    o = repro.run_part(p, True, True)
    assert (o.key, o.folder, o.status, o.wall_s) == ("sparse-parity", folder, "FAILED: diverged", 3.5)

    monkeypatch.setattr(repro, "run_sweep_part", lambda p, progress: ("", "2 runs"))
    monkeypatch.setattr(repro, "time", Clock([100.0, 101.0], [5.0, 5.5]))
    (folder / repro.PART_RECORD).write_text(json.dumps({"made_s": 12.5}))
    o = repro.run_part(p, True, True)
    assert (o.status, o.made_s) == ("reused", 12.5) and math.isnan(o.cpu_s)


def test_the_machine_text_names_the_host_its_cores_and_the_three_load_averages(monkeypatch):
    import platform

    monkeypatch.setattr(repro.os, "getloadavg", lambda: (1.04, 2.0, 3.06))
    text = repro.machine_text()
    assert (
        text
        == f"{platform.node()}, {os.cpu_count()} CPU cores, {platform.machine()}, load average 1.0, 2.0, 3.1 (1, 5, 15 min)"
    )


def test_reproduce_runs_each_planned_part_then_judges_draws_and_reports_what_ran(tmp_path, monkeypatch, capsys):
    """The wiring, every step faked but the plan: at the full scale (the default) with progress (the default), each
    part runs with those; the scorecard gets the made parts' folders, the failed part's status and every part not
    run, the shipped preregistered table (checked) and the alternative definitions of the parts' analyses; the
    figures get DIR and the made parts by preset; the report gets all of it and 142.5 − 100 s; what is printed."""
    from nht_jax.papers import preregistered

    ran, judged, drawn, reported = [], [], [], []
    made, toy, failed = tmp_path / "default", tmp_path / "toy-linear", tmp_path / repro.THEIR_DATA

    def run_part(p, quick, progress):
        ran.append((p.part.key, p.folder, quick, progress))
        if p.part.key == repro.THEIR_DATA:
            return outcome(p.part.key, p.folder, status="FAILED: x", wall=1.0, made=float("nan"))
        made_s = {"default": 3.2, "toy-linear": 5.6}[p.part.key]
        return outcome(p.part.key, p.folder, status="made", wall=made_s, made=made_s)

    rows = [row("ok", sc.AGREES)]

    def scorecard(claims, folders, absent, table, alternative):
        judged.append((claims, folders, absent, table, alternative.folders, alternative.options))
        return rows

    monkeypatch.setattr(repro, "run_part", run_part)
    monkeypatch.setattr(repro.scorecard, "scorecard", scorecard)
    monkeypatch.setattr(repro, "paper_figures", lambda out, folders: drawn.append((out, folders)) or ["figures"])
    monkeypatch.setattr(repro, "report_markdown", lambda *args: reported.append(args) or "the report")
    monkeypatch.setattr(repro, "machine_text", lambda: "the machine")
    monkeypatch.setattr(repro, "time", Clock([100.0, 142.5], []))
    claims = (claims_lib.CLAIMS[0],)
    assert repro.reproduce(tmp_path, only=["default", "toy-linear", repro.THEIR_DATA], claims=claims)[0] == rows
    assert ran == [
        ("default", made, False, True),
        ("toy-linear", toy, False, True),
        (repro.THEIR_DATA, failed, False, True),
    ]
    absent = {repro.THEIR_DATA: "FAILED: x"} | {
        k: "not run (--only)" for k in PARTS if k not in ("default", "toy-linear", repro.THEIR_DATA)
    }
    ((c, folders, absent_given, table, alt_folders, alt_options),) = judged
    assert (c, folders, absent_given, table) == (
        claims,
        {"default": made, "toy-linear": toy},
        absent,
        preregistered.load(),
    )
    plans = repro.plan(tmp_path, "full", [PARTS["default"], PARTS["toy-linear"], PARTS[repro.THEIR_DATA]])
    assert alt_folders == folders and alt_options == {p.part.key: p.analysis for p in plans}
    assert drawn == [(tmp_path, {"default": made, "toy-linear": toy})]
    ((r, outcomes, plans_given, figures, out, scale, started, machine, total),) = reported
    assert (r, [o.key for o in outcomes], plans_given, figures, out, scale) == (
        rows,
        ["default", "toy-linear", repro.THEIR_DATA],
        plans,
        ["figures"],
        tmp_path,
        "full",
    )
    assert (started, machine, total) == ("at %Y-%m-%d %H:%M:%S %z", "the machine", 42.5)
    assert (tmp_path / "reproduce.md").read_text() == "the report"
    assert (tmp_path / "scorecard.csv").read_text() == sc.csv(rows)
    sp = plans[0]
    assert sp.scale and len(sp.overrides) == 2  # default has a [scale.reproduce] table of 2 settings
    assert capsys.readouterr().out.splitlines() == [
        f"reproduce: part default (default at scale {sp.scale}: {', '.join(sp.overrides)}) → {made}",
        "reproduce: part default made in 3 s",
        f"reproduce: part toy-linear (toy-linear) → {toy}",
        "reproduce: part toy-linear made in 6 s",
        f"reproduce: part {repro.THEIR_DATA} (the reference table) → {failed}",
        f"reproduce: part {repro.THEIR_DATA} FAILED: x in 1 s (made in nan s)",
        *sc.text_table(rows).splitlines(),
        "",
        f"{sc.tally_text(rows)} over 1 claims; wall time of each part when made: default 3 s, toy-linear 6 s",
        f"written: {tmp_path / 'reproduce.md'}, {tmp_path / 'scorecard.csv'}",
    ]
    monkeypatch.setattr(repro, "time", Clock([100.0, 101.0], []))
    given = repro.reproduce(tmp_path, quick=True, only=["default"], claims=claims, progress=False, table="t")
    assert given[0] == rows and judged[-1][3] == "t" and ran[-1] == ("default", tmp_path / "default-quick", True, False)


def test_reproduce_refuses_a_claim_of_an_unknown_part_and_a_dir_another_process_holds(tmp_path):
    unknown = dataclasses.replace(claims_lib.CLAIMS[0], parts=("no-such-part",))
    with pytest.raises(ConfigError, match="no-such-part"):
        repro.reproduce(tmp_path, only=[repro.THEIR_DATA], claims=(unknown,), progress=False)
    f = held_elsewhere(tmp_path)
    try:
        with pytest.raises(ConfigError, match="run `nht paper reproduce` again"):
            repro.reproduce(tmp_path, only=[repro.THEIR_DATA], claims=(claims_lib.CLAIMS[0],), progress=False)
    finally:
        f.close()
