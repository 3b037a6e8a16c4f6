"""The reference table's reading and checks (nht_jax/papers/reference_cells.py) pinned by known answers: a row of a
seed cell (rounding, counts, the cited source), the CSV written and read back (blank NaN, `g` floats, ints), the
refusal of other columns, `find`'s one match, and the command that refuses a clone at another commit. Hand-made
cells and tables; nothing trains."""

import dataclasses
import math
import shutil
import subprocess

import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.papers import reference_cells as ref
from nht_jax.results.followup_npz import SeedCell

from ..results.test_followup_npz import write_clamp_cell

CLAMP_REPO, CLAMP_COMMIT, _ = ref.SOURCES[ref.CLAMP_PAPER]
LOGIT_REPO, LOGIT_COMMIT, _ = ref.SOURCES[ref.LOGIT_PAPER]


def row(experiment="efflr", p=59, arm="clamp", rho=1.0, lr=1e-3, tau=1.0, median=1000.0, **more):
    values = dict(
        paper=ref.CLAMP_PAPER,
        experiment=experiment,
        p=p,
        arm=arm,
        rho=rho,
        lr=lr,
        wd=1.0,
        tau=tau,
        t_fork=0,
        wc=54.6,
        seeds=16,
        grokked=16,
        median_T_grok=median,
        median_delay=median,
        repository=CLAMP_REPO,
        commit=CLAMP_COMMIT,
        path=f"data/{experiment}/metrics/x.npz",
        norm_at_grok=50.5,
    )
    return ref.ReferenceCell(**{**values, **more})


def test_the_sources_are_the_two_repositories_at_their_cited_commits():
    assert ref.SOURCES == {
        "clamp-law": (
            "ClevixLab/critical-norm-grokking",
            "96587b96058796d1592a5b7a256d9d01c30237ba",
            ("efflr", "pscan", "denserho", "tfnoln_long"),
        ),
        "logit-scale": (
            "ClevixLab/grokking-logit-scale",
            "e29d08d1c154dfa4eb2744bac39bba6eef13221b",
            ("samestate", "collapse"),
        ),
    }
    assert ref.TABLE.name == "reference_cells.csv" and ref.TABLE.parent.name == "papers"


def test_a_cells_row_rounds_its_ratios_counts_its_seeds_and_cites_its_paper():
    """ρ 0.8500000119 (float32) is 0.85, τ 0.333333 is 0.3333, W_c 54.61234 is 54.6123; 5 seeds, 3 grokked, median
    of (700, 300, 500) is 500 (mean 500 too, so the delay forked at 100 checks the subtraction: 400)."""
    seed = SeedCell(
        "collapse",
        "metrics/collapse/a.npz",
        97,
        "clamp",
        0.8500000119,
        2e-3,
        0.5,
        1 / 3,
        100,
        54.61234,
        (700, -1, 300, 0, 500),
    )
    r = ref.cell_row(seed, ref.LOGIT_PAPER)
    assert (
        r[:-1]
        == ref.ReferenceCell(
            ref.LOGIT_PAPER,
            "collapse",
            97,
            "clamp",
            0.85,
            2e-3,
            0.5,
            0.3333,
            100,
            54.6123,
            5,
            3,
            500.0,
            400.0,
            LOGIT_REPO,
            LOGIT_COMMIT,
            "metrics/collapse/a.npz",
        )[:-1]
    )
    assert math.isnan(r.norm_at_grok)  # no weight norm logged
    assert ref.cell_row(dataclasses.replace(seed, rho=0.123456), ref.LOGIT_PAPER).rho == 0.1235  # 4 places, not 5
    # ‖θ‖ at T_grok 50.123456 and 49.5 (the third seed did not grok: NaN): W_c their mean, rounded to 4 places.
    normed = ref.cell_row(
        dataclasses.replace(seed, norm_at_grok=(50.123456, math.nan, 49.5, math.nan, math.nan)), ref.LOGIT_PAPER
    )
    assert normed.norm_at_grok == 49.8117
    assert r.source == "ClevixLab/grokking-logit-scale@e29d08d:metrics/collapse/a.npz"
    none = ref.cell_row(SeedCell("efflr", "x", 59, "none", 1.0, 1e-3, 1.0, 1.0, 0, math.nan, (-1, 0)), ref.CLAMP_PAPER)
    assert (none.seeds, none.grokked) == (2, 0) and math.isnan(none.median_T_grok) and math.isnan(none.median_delay)
    assert (none.repository, none.commit) == (CLAMP_REPO, CLAMP_COMMIT)


def test_the_csv_writes_blank_nan_and_short_floats_and_reads_back_the_same_types():
    rows = [row(rho=0.85, lr=8e-3, median=1492.5, wc=54.51333), row(arm="none", median=math.nan, wc=math.nan)]
    text = ref.table_text(rows)
    lines = text.splitlines()
    assert lines[0] == ",".join(ref.COLUMNS) and len(lines) == 3 and text.endswith("\n") and "\r" not in text
    assert lines[1] == (
        f"clamp-law,efflr,59,clamp,0.85,0.008,1,1,0,54.5133,16,16,1492.5,1492.5,{CLAMP_REPO},"
        f"{CLAMP_COMMIT},data/efflr/metrics/x.npz,50.5"
    )
    assert lines[2].split(",")[9] == "" and lines[2].split(",")[12:14] == ["", ""]
    back = ref.parse(text)
    assert back[0] == rows[0]._replace(wc=54.5133)
    assert [type(v) for v in back[0]] == [
        str,
        str,
        int,
        str,
        float,
        float,
        float,
        float,
        int,
        float,
        int,
        int,
        float,
        float,
        str,
        str,
        str,
        float,
    ]
    assert math.isnan(back[1].median_T_grok) and math.isnan(back[1].wc) and back[1].median_delay != 0


def test_a_table_with_other_columns_is_refused():
    text = ref.table_text([row()])
    for broken in (
        text.replace("median_delay", "median_delays"),
        text.replace("paper,experiment", "experiment,paper"),
        "\n".join(line.rsplit(",", 1)[0] for line in text.splitlines()),
    ):
        with pytest.raises(ConfigError, match="reference table columns"):
            ref.parse(broken)
    with pytest.raises(ConfigError, match="reference table columns None"):
        ref.parse("")


def test_load_reads_the_shipped_table_or_another_file(tmp_path):
    assert ref.table_text(ref.load()) == ref.TABLE.read_text(encoding="utf-8")
    (tmp_path / "t.csv").write_text(ref.table_text([row(median=77.0)]), encoding="utf-8")
    assert [r.median_T_grok for r in ref.load(tmp_path / "t.csv")] == [77.0]


def test_find_gives_the_one_matching_row_and_refuses_none_or_several():
    """Rows differ by experiment, p, arm, ρ, η, τ; a coordinate not given matches any value; ρ matches within
    floating error (0.85 written as 0.8500000001)."""
    rows = [
        row(rho=0.85, median=1.0),
        row(rho=1.0, median=2.0),
        row(rho=1.0, lr=8e-3, median=3.0),
        row(experiment="pscan", rho=0.85, median=4.0),
        row(p=41, rho=0.85, median=5.0),
        row(arm="none", median=6.0),
        row(experiment="collapse", tau=0.5, median=7.0),
        row(experiment="collapse", tau=2.0, median=8.0),
    ]
    assert ref.find(rows, "efflr", 59, "clamp", rho=0.8500000001).median_T_grok == 1.0
    assert ref.find(rows, "efflr", 59, "clamp", rho=1.0, lr=8e-3).median_T_grok == 3.0
    assert ref.find(rows, "efflr", 59, "clamp", rho=1.0, lr=1e-3).median_T_grok == 2.0
    assert ref.find(rows, "pscan", 59, "clamp").median_T_grok == 4.0
    assert ref.find(rows, "efflr", 41, "clamp").median_T_grok == 5.0
    assert ref.find(rows, "efflr", 59, "none").median_T_grok == 6.0
    assert ref.find(rows, "collapse", 59, "clamp", tau=2.0).median_T_grok == 8.0
    with pytest.raises(ConfigError, match=r"^2 reference cells for efflr p=59 clamp ρ=1.0 η=None τ=None$"):
        ref.find(rows, "efflr", 59, "clamp", rho=1.0)
    with pytest.raises(ConfigError, match=r"^0 reference cells for efflr p=59 clamp ρ=1.15 η=None τ=None$"):
        ref.find(rows, "efflr", 59, "clamp", rho=1.15)


def git(folder, *args):
    return subprocess.run(
        ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_the_command_rebuilds_the_table_from_clones_and_refuses_one_at_another_commit(tmp_path, capsys):
    """Two folders in the authors' layouts (not git clones: accepted) give the table of their cells in order,
    clamp-law's first; a git clone at a commit other than the cited one stops the command, writing nothing."""
    clamp, logit = tmp_path / "clamp", tmp_path / "logit"
    write_clamp_cell(clamp / "data" / "efflr" / "metrics" / "a.npz", [1300, 1100, 1200, -1], rho=0.85)
    write_clamp_cell(logit / "metrics" / "samestate" / "b.npz", [900, 700, -1], rho=1.0)
    out = tmp_path / "table.csv"
    assert ref.clone_commit(clamp) is None
    assert ref.main([str(clamp), str(logit), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"2 cells → {out}"
    rows = ref.load(out)
    assert [(r.paper, r.experiment, r.median_T_grok, r.seeds) for r in rows] == [
        (ref.CLAMP_PAPER, "efflr", 1200.0, 4),
        (ref.LOGIT_PAPER, "samestate", 800.0, 3),
    ]
    if shutil.which("git") is None:
        pytest.skip("no git on this machine: the commit check needs a clone")
    git(logit, "init", "-q")
    git(logit, "commit", "-q", "--allow-empty", "-m", "x")
    head = git(logit, "rev-parse", "HEAD")
    assert ref.clone_commit(logit) == head != LOGIT_COMMIT
    out.unlink()
    assert ref.main([str(clamp), str(logit), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert f"{logit} is at commit {head}, the table cites {LOGIT_COMMIT}" in error and not out.exists()


def test_the_command_reads_only_the_tabled_experiments_writes_the_shipped_table_by_default_and_takes_the_cited_commit(
    tmp_path, monkeypatch, capsys
):
    """An experiment folder the table does not cite ("sweep") is left out; without --out the command writes the
    shipped table (here redirected to a temporary file); a clone at exactly the cited commit is taken."""
    clamp, logit = tmp_path / "clamp", tmp_path / "logit"
    write_clamp_cell(clamp / "data" / "efflr" / "metrics" / "a.npz", [1300, 1100, 1200, -1], rho=0.85)
    write_clamp_cell(clamp / "data" / "sweep" / "metrics" / "z.npz", [10, 20], rho=0.9)  # not tabled
    write_clamp_cell(logit / "metrics" / "samestate" / "b.npz", [900, 700, -1], rho=1.0)
    shipped = tmp_path / "shipped.csv"
    monkeypatch.setattr(ref, "TABLE", shipped)
    monkeypatch.setattr(
        ref, "clone_commit", lambda root: ref.SOURCES[ref.CLAMP_PAPER if root == clamp else ref.LOGIT_PAPER][1]
    )
    assert ref.main([str(clamp), str(logit)]) == 0
    assert capsys.readouterr().out.strip() == f"2 cells → {shipped}"
    assert [(r.experiment, r.seeds) for r in ref.load(shipped)] == [("efflr", 4), ("samestate", 3)]
