"""The follow-up papers' data, cell by cell (nht_jax/papers/cells.py, reference_cells.py, their_data.py): the shipped
reference table is consistent and cited, its medians are recomputed from per-seed files in the authors' format,
and every new scorecard row's verdict rule passes a planted agreement and fails a planted disagreement (nothing
trains: the folders hold planted summary.csv rows)."""

import math
import re

import numpy as np
import pytest

from nht_jax.papers import cells
from nht_jax.papers import claims as claims_lib
from nht_jax.papers import reference_cells as ref
from nht_jax.papers import scorecard
from nht_jax.papers.their_data import analyses
from nht_jax.results.folder import write_summary
from nht_jax.results.followup_npz import read_tree

from ..results.test_followup_npz import write_clamp_cell

CLAIMS = {c.id: c for c in claims_lib.CLAIMS}


# ----------------------------------------------------------------------------- the reference table


def test_every_reference_cell_cites_its_source_and_counts_its_seeds():
    table = ref.load()
    assert len(table) >= 60 and len({(r.paper, r.path) for r in table}) == len(table)
    for r in table:
        repository, commit, experiments = ref.SOURCES[r.paper]
        assert (r.repository, r.commit) == (repository, commit) and re.fullmatch(r"[0-9a-f]{40}", r.commit)
        assert r.experiment in experiments and f"/{r.experiment}/" in f"/{r.path}" and r.path.endswith(".npz")
        assert 0 <= r.grokked <= r.seeds and r.seeds >= 12
        assert math.isnan(r.median_T_grok) == (r.grokked == 0)
        if r.grokked:
            assert r.median_delay == pytest.approx(r.median_T_grok - r.t_fork)
    text = ref.TABLE.read_text()
    assert ref.table_text(ref.parse(text)) == text  # the CSV round-trips


def test_the_numbers_the_papers_state_are_the_tables_medians():
    table = ref.load()
    efflr = {(r.rho, r.lr): r.median_T_grok for r in table if r.experiment == "efflr" and r.arm == "clamp"}
    assert efflr[(1.3, 1e-3)] / efflr[(0.85, 1e-3)] == pytest.approx(18.7, abs=0.05)
    assert [
        ref.find(table, "samestate", 59, arm).median_delay
        for arm in ("clamp_lowered", "free", "clamp_same", "clamp_raised")
    ] == [1525, 4225, 7200, 24162.5]


def test_medians_are_recomputed_from_per_seed_files_in_their_format(tmp_path):
    """Two cells in the clamp-law layout: the row's median is over the seeds that grokked, with the file cited."""
    root = tmp_path / "clone"
    write_clamp_cell(root / "data" / "efflr" / "metrics" / "a.npz", [1300, 1100, 1200, -1], rho=0.85)
    write_clamp_cell(root / "data" / "efflr" / "metrics" / "b.npz", [-1, -1, -1], rho=1.3)
    write_clamp_cell(root / "data" / "critfss" / "metrics" / "not_tabled.npz", [5])
    rows = ref.cells_of(root, ref.CLAMP_PAPER)
    assert [(r.rho, r.seeds, r.grokked) for r in rows] == [(0.85, 4, 3), (1.3, 3, 0)]
    assert rows[0].median_T_grok == 1200 and math.isnan(rows[1].median_T_grok)
    assert rows[0].source == "ClevixLab/critical-norm-grokking@96587b9:data/efflr/metrics/a.npz"
    assert ref.table_text(ref.parse(ref.table_text(rows))) == ref.table_text(rows)


def test_our_fits_recover_a_planted_exponential_law_from_files_in_their_format(tmp_path):
    """log T = a_p + 7.5ρ planted per seed (±5 % noise): the shared α and each single-seed α come back; a
    modulus whose ρ = 0.85 cell does not grok is left out of the shared fit."""
    root = tmp_path / "clone"
    rng = np.random.default_rng(1)
    for p, a in ((41, 1.5), (59, 1.0), (31, 2.0)):
        for rho in (0.85, 1.0, 1.15):
            t = np.exp(a + 7.5 * rho + rng.normal(0, 0.05, 12)).round()
            if p == 31 and rho == 0.85:
                t[:] = -1
            write_clamp_cell(root / "data" / "pscan" / "metrics" / f"p{p}_rho{rho}.npz", t, rho=rho, p=p)
    table = analyses(read_tree(root), n_bootstrap=50)
    shared = table[0]
    assert shared["over"] == "p ∈ {41, 59}" and shared["value"] == pytest.approx(7.5, abs=0.3)
    assert shared["lo"] <= shared["value"] <= shared["hi"] and shared["r2"] > 0.99
    assert [row["value"] for row in table[1:]] == pytest.approx([7.5, 7.5], abs=0.4)


def test_their_fits_on_the_shipped_medians_give_the_papers_numbers():
    fits = {f["quantity"]: f["value"] for f in cells.their_fits(ref.load())}
    assert fits["shared_alpha"] == pytest.approx(7.49, abs=0.005) and fits["shared_r2"] == pytest.approx(
        0.996, abs=1e-3
    )
    assert fits["alpha2"] == pytest.approx(15.45, abs=0.01) and fits["samestate_ratio"] == pytest.approx(
        3.36, abs=0.005
    )


# ----------------------------------------------------------------------------- the rows' rules on planted folders


def verdict(claim_id, *folders):
    claim = CLAIMS[claim_id]
    return scorecard.judge(claim, dict(zip(claim.parts, folders))).verdict


def plant(folder, rows):
    """A folder with summary.csv rows and a config.toml without [fork] (every results folder has one)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_summary(folder, rows)
    (folder / "config.toml").write_text('name = "planted"\n')
    return folder


def runs(times, **columns):
    return [
        {
            "learning_rate": cells.ETA_CELLS,
            **columns,
            "seed": i,
            "T_fit": 150.0,
            "T_transition": float(t),
            "norm_at_transition": (50.2074 * columns.get("w", 1.0)) ** 2,
        }
        for i, t in enumerate(times)
    ]


def clamp_folder(tmp_path, name, t085, t100):
    return plant(tmp_path / name, runs(t085, clamp_rho=0.85) + runs(t100, clamp_rho=1.0))


def test_the_cell_rows_pass_planted_agreement_and_fail_planted_disagreement(tmp_path):
    near = clamp_folder(tmp_path, "near", [600, 620, 580], [1300, 1250, 1200])  # their 587, 1,256
    free = plant(tmp_path / "free", runs([820, 800, 790], w=1.05))  # their 805, W_c 50.21 at η = 8e-3
    for claim_id in ("cells.rho0.85", "cells.rho1.00", "cells.norm_ratio"):
        assert verdict(claim_id, near) == scorecard.AGREES, claim_id
    assert verdict("cells.free", free) == verdict("cells.W_c", free) == scorecard.AGREES
    assert verdict("cells.clamp_vs_free", near, free) == scorecard.AGREES
    far = clamp_folder(tmp_path, "far", [600, 620, 580], [3000, 3100, float("nan")])  # ρ = 1 2.4× theirs
    assert verdict("cells.rho0.85", far) == scorecard.AGREES
    for claim_id in ("cells.rho1.00", "cells.norm_ratio"):
        assert verdict(claim_id, far) == scorecard.DISAGREES, claim_id
    assert verdict("cells.clamp_vs_free", far, free) == scorecard.DISAGREES
    never = clamp_folder(tmp_path, "never", [600, 620, 580], [float("nan"), float("nan"), 1300])
    assert verdict("cells.rho1.00", never) == scorecard.DISAGREES  # a censored median is +∞, not the one run
    slow_free = plant(tmp_path / "slow_free", runs([1300, 1250, 1400], w=1.2))
    assert verdict("cells.free", slow_free) == verdict("cells.W_c", slow_free) == scorecard.DISAGREES
    two_seeds = clamp_folder(tmp_path, "two", [600, 620], [1300, 1250])
    assert verdict("cells.rho0.85", two_seeds) == scorecard.UNJUDGED  # fewer seeds than the row declares


def test_a_forked_part_counts_t_grok_from_the_sources_step_0(tmp_path):
    """clamp-p59-t500 forks at step 500: its T_transition counts from the fork, the rows add the fork's step."""
    fork = clamp_folder(tmp_path, "fork", [90, 80, 100], [760, 700, 800])  # their 587 = 500 + 87, 1,256 = 500 + 756
    (fork / "config.toml").write_text('[fork]\nfrom = "x"\nstep = 500\n')
    free = plant(tmp_path / "free", runs([820, 800, 790]))
    for claim_id in ("cells.t500_rho0.85", "cells.t500_rho1.00", "cells.t500_norm_ratio"):
        assert verdict(claim_id, fork) == scorecard.AGREES, claim_id
    assert verdict("cells.t500_clamp_vs_free", fork, free) == scorecard.AGREES
    (fork / "config.toml").write_text('[fork]\nfrom = "x"\nstep = "fit"\n')  # not a step count: no offset
    assert verdict("cells.t500_rho0.85", fork) == scorecard.DISAGREES


def test_the_data_rows_agree_on_their_own_data_and_fail_a_planted_shift(tmp_path):
    folder = tmp_path / "their-data"
    cells.write_their_fits(folder)
    data_rows = [c for c in CLAIMS if c.startswith("data.") and CLAIMS[c].parts]
    assert len(data_rows) == 7
    assert {c: verdict(c, folder) for c in data_rows} == dict.fromkeys(data_rows, scorecard.AGREES)
    text = (folder / cells.THEIR_FITS).read_text()
    shifted = tmp_path / "shifted"
    shifted.mkdir()
    lines = [
        line
        if i == 0
        else re.sub(r"^([a-z_0-9]+),([0-9.e+-]+),", lambda m: f"{m.group(1)},{float(m.group(2)) * 1.05!r},", line)
        for i, line in enumerate(text.splitlines())
    ]
    (shifted / cells.THEIR_FITS).write_text("\n".join(lines) + "\n")
    assert {c: verdict(c, shifted) for c in data_rows} == dict.fromkeys(data_rows, scorecard.DISAGREES)


def batch_folder(tmp_path, name, delay_of_b, seeds=5):
    rows = [
        {"batch_size": b, "learning_rate": 1e-2, "seed": s, "T_fit": 100.0, "T_transition": 100.0 + delay_of_b(b, s)}
        for b in (128, 512, 2048, 4704)
        for s in range(seeds)
    ]
    return plant(tmp_path / name, rows)


def test_the_noise_rows_tell_a_flat_delay_from_an_arrhenius_rise(tmp_path):
    flat = batch_folder(tmp_path, "flat", lambda b, s: 1000 + 30 * s)
    assert verdict("noise.flat", flat) == scorecard.AGREES and verdict("noise.arrhenius", flat) == scorecard.DISAGREES
    rising = batch_folder(tmp_path, "rising", lambda b, s: 200 * math.exp(b / 2000) * (1 + 0.02 * s))
    assert (
        verdict("noise.flat", rising) == scorecard.DISAGREES and verdict("noise.arrhenius", rising) == scorecard.AGREES
    )
    gentle = batch_folder(tmp_path, "gentle", lambda b, s: 1000 * math.exp(b / 20000))  # log-linear, only 1.26×
    assert (
        verdict("noise.flat", gentle) == scorecard.AGREES and verdict("noise.arrhenius", gentle) == scorecard.DISAGREES
    )
    frozen = batch_folder(tmp_path, "frozen", lambda b, s: float("nan") if b == 4704 else 1000.0)
    assert verdict("noise.flat", frozen) == scorecard.DISAGREES  # the full batch never escapes: +∞
    assert verdict("noise.arrhenius", frozen) == scorecard.UNJUDGED  # no log-linear fit through +∞
    assert verdict("noise.flat", batch_folder(tmp_path, "few", lambda b, s: 1000.0, seeds=4)) == scorecard.UNJUDGED


def test_every_new_row_is_preregistered():
    """Every claim this module adds has a row of cells.PREREGISTERED (tolerance, why, minimum seeds, kind)."""
    new = {c for c in CLAIMS if c.split(".")[0] in ("cells", "data", "noise") and CLAIMS[c].parts}
    assert new == {r.id for r in cells.PREREGISTERED}
    assert len([c for c in new if c.startswith("cells.")]) >= 6
    assert all(r.tolerance and r.why and r.min_seeds and r.kind for r in cells.PREREGISTERED)


def test_the_docs_page_lists_every_row_and_cites_both_commits():
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "papers" / "follow-up-data.md").read_text()
    assert all(f"`{r.id}`" in page for r in cells.PREREGISTERED)
    assert all(commit in page for _, commit, _ in ref.SOURCES.values())
