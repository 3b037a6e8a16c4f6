"""The scorecard's verdict rules pinned by known answers: hand-made folders and tables whose right verdict, seeds and
numbers are worked out by hand (asymmetric data, so that mean and median, fewest and most, n and n + 1 differ),
and property tests of the laws that hold for every input. Nothing trains; one tiny trajectories folder (written by
the sweep's own writers) feeds the alternative definitions' folders."""

import csv
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nht_jax import experiment
from nht_jax.papers import cells
from nht_jax.papers import claims as claims_lib
from nht_jax.papers import measures as m
from nht_jax.papers import preregistered as pre
from nht_jax.papers import reference_cells as ref
from nht_jax.papers import reproduce as repro
from nht_jax.papers import scorecard as sc
from nht_jax.results.folder import read_summary, write_summary
from nht_jax.results.followup_npz import SeedCell
from nht_jax.training import live

from ..analysis.conftest import write_results_folder

PROPERTY = settings(max_examples=25, deadline=None)


def registered(min_seeds=1, alternatives=(), kind="prediction"):
    return pre.Preregistered("planted", kind, "", (), "", "why", "before", min_seeds, "", alternatives)


def seeded(folder, seeds):
    """A part folder whose summary.csv has one run per entry of `seeds` (a seed may repeat: runs ≠ seeds)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_summary(folder, [{"run": i, "seed": s, "regime": "intermediate"} for i, s in enumerate(seeds)])
    return folder


def constant_claim(parts, rule=claims_lib.equals(1)):
    """A claim over `parts` whose measure is 1 whatever the folders hold (only the seeds and the rule matter)."""
    return claims_lib.Claim(
        "planted", "test", "a planted claim", "1", tuple(parts), lambda *folders: m.Measurement(1, "one"), rule
    )


# ----------------------------------------------------------------------------- seeds: the fewest over the parts


def test_a_claims_seeds_are_the_fewest_over_its_parts(tmp_path):
    """Part a has 5 distinct seeds over 10 runs, part b 3 seeds over 6 runs: the claim rests on 3 (not the most, 5,
    nor a run count, 6 or 10), in either order of its parts; a row needing 4 is not judged, one needing 3 is."""
    folders = {"a": seeded(tmp_path / "a", [4, 0, 1, 2, 3, 0, 1, 2, 3, 4]), "b": seeded(tmp_path / "b", [7, 8, 9] * 2)}
    for parts in (("a", "b"), ("b", "a")):
        row = sc.judge(constant_claim(parts), folders, registered=registered(min_seeds=3))
        assert (row.seeds, row.verdict) == ("3 (needs ≥ 3)", sc.AGREES)
        row = sc.judge(constant_claim(parts), folders, registered=registered(min_seeds=4))
        assert (row.seeds, row.verdict, row.ours) == ("3 (needs ≥ 4)", sc.UNJUDGED, "one")
        assert row.note.startswith("n.a.: rests on 3 seed(s); its preregistered row needs ≥ 4")


def test_a_part_without_a_seed_column_has_one_seed_and_one_without_a_summary_none(tmp_path):
    """seed_count: distinct seeds (2 over 3 runs); no seed column: 1; no summary.csv (verify-bounds): None, shown
    "–" and never "too few seeds"."""
    assert m.seed_count(seeded(tmp_path / "two", [5, 6, 5])) == 2
    (tmp_path / "noseed").mkdir()
    write_summary(tmp_path / "noseed", [{"run": 0, "regime": "weak"}, {"run": 1, "regime": "weak"}])
    assert m.seed_count(tmp_path / "noseed") == 1
    (tmp_path / "bounds").mkdir()
    assert m.seed_count(tmp_path / "bounds") is None
    row = sc.judge(constant_claim(["p"]), {"p": tmp_path / "bounds"}, registered=registered(min_seeds=99))
    assert (row.seeds, row.verdict) == ("–", sc.AGREES)


def test_a_part_without_a_summary_leaves_the_seeds_to_the_other_parts(tmp_path):
    """Parts a (2 seeds) and bounds (no summary.csv, no seeds): the claim rests on a's 2, in either order; over two
    parts without a summary it rests on none ("–") and is judged."""
    (tmp_path / "bounds").mkdir()
    (tmp_path / "bounds2").mkdir()
    folders = {"a": seeded(tmp_path / "a", [3, 4, 3]), "bounds": tmp_path / "bounds", "bounds2": tmp_path / "bounds2"}
    for parts in (("a", "bounds"), ("bounds", "a")):
        row = sc.judge(constant_claim(parts), folders, registered=registered(min_seeds=2))
        assert (row.seeds, row.verdict) == ("2 (needs ≥ 2)", sc.AGREES)
        assert sc.judge(constant_claim(parts), folders, registered=registered(min_seeds=3)).verdict == sc.UNJUDGED
    row = sc.judge(constant_claim(("bounds", "bounds2")), folders, registered=registered(min_seeds=9))
    assert (row.seeds, row.verdict) == ("–", sc.AGREES)


@PROPERTY
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 3)), min_size=1, max_size=4))
def test_for_any_parts_a_claim_rests_on_the_fewest_seeds_of_any_part(spec):
    """Each part: k distinct seeds, each run r times; the claim's seeds are min k, judged exactly from min k on."""
    fewest = min(k for k, _ in spec)
    with tempfile.TemporaryDirectory() as tmp:
        folders = {f"p{i}": seeded(Path(tmp) / f"p{i}", list(range(k)) * r) for i, (k, r) in enumerate(spec)}
        claim = constant_claim(folders)
        judged = sc.judge(claim, folders, registered=registered(min_seeds=fewest))
        assert (judged.seeds, judged.verdict) == (f"{fewest} (needs ≥ {fewest})", sc.AGREES)
        assert sc.judge(claim, folders, registered=registered(min_seeds=fewest + 1)).verdict == sc.UNJUDGED


# ----------------------------------------------------------------------------- alternatives: n.a. is never a flip

VALUE = {"agree": 1, "disagree": 0}


def by_name(folder):
    """The folder's name is the measurement: agree → 1, disagree → 0, na → not measured."""
    if Path(folder).name == "na":
        raise m.NotMeasured("no number under this definition")
    return m.Measurement(VALUE[Path(folder).name], Path(folder).name)


NAMED = claims_lib.Claim("planted", "test", "named", "1", ("part",), by_name, claims_lib.equals(1))


def judged_with(tmp_path, default, outcomes):
    """NAMED judged at `default` with alternatives a0, a1, … measuring `outcomes` (folder names; none exist)."""
    under = {f"transition_threshold=0.{i + 1}": tmp_path / o for i, o in enumerate(outcomes)}
    return sc.judge(
        NAMED,
        {"part": tmp_path / default},
        registered=registered(alternatives=tuple(under)),
        alternative=lambda part, text: under[text],
    )


@pytest.mark.parametrize("default, word", [("agree", sc.AGREES), ("disagree", sc.DISAGREES)])
def test_an_alternative_without_a_number_never_makes_a_verdict_fragile(tmp_path, default, word):
    """Under both alternatives the measure raises NotMeasured: n.a., which is neither verdict, so no flip."""
    row = judged_with(tmp_path, default, ["na", "na"])
    assert (row.verdict, row.flips, row.note) == (word, "", "")
    assert row.sensitivity == "transition_threshold=0.1: n.a.; transition_threshold=0.2: n.a."
    assert sc.sensitivity_text(row) == "same under 2"


def test_only_the_opposite_verdict_flips_and_the_note_names_it(tmp_path):
    """Default [!!] with alternatives (n.a., !!, OK): fragile, flipped by the third alone."""
    row = judged_with(tmp_path, "disagree", ["na", "disagree", "agree"])
    assert row.verdict == sc.FRAGILE and row.flips == "transition_threshold=0.3"
    assert row.note == "fragile: !! at the default definition, the opposite under transition_threshold=0.3"
    assert row.sensitivity == (
        "transition_threshold=0.1: n.a.; transition_threshold=0.2: !!; transition_threshold=0.3: OK"
    )


@PROPERTY
@given(
    st.sampled_from(["agree", "disagree"]),
    st.lists(st.sampled_from(["agree", "disagree", "na"]), min_size=1, max_size=5),
)
def test_a_verdict_is_fragile_exactly_when_some_alternative_gives_the_opposite(default, outcomes):
    with tempfile.TemporaryDirectory() as tmp:
        row = judged_with(Path(tmp), default, outcomes)
    opposite = "disagree" if default == "agree" else "agree"
    flipped = [f"transition_threshold=0.{i + 1}" for i, o in enumerate(outcomes) if o == opposite]
    assert row.flips == ", ".join(flipped)
    assert row.verdict == (sc.FRAGILE if flipped else sc.AGREES if default == "agree" else sc.DISAGREES)


# ----------------------------------------------------------------------------- medians are medians


def seed_cell(t_grok, t_fork=0):
    return SeedCell("efflr", "data/efflr/metrics/x.npz", 59, "clamp", 0.85, 8e-3, 1.0, 1.0, t_fork, 54.6, tuple(t_grok))


def test_a_reference_cells_medians_are_over_the_seeds_that_grokked():
    """Seeds (100, 900, 200, −1): three grokked, median 200 (mean 400); forked at step 50 the delay's median is 150.
    Four grokked (100, 900, 200, 3000): the median is (200 + 900) / 2 = 550 (mean 1,050)."""
    row = ref.cell_row(seed_cell([100, 900, 200, -1], t_fork=50), ref.CLAMP_PAPER)
    assert (row.seeds, row.grokked, row.median_T_grok, row.median_delay) == (4, 3, 200.0, 150.0)
    row = ref.cell_row(seed_cell([100, 900, 200, 3000]), ref.CLAMP_PAPER)
    assert (row.median_T_grok, row.median_delay) == (550.0, 550.0)
    assert math.isnan(ref.cell_row(seed_cell([-1, -1]), ref.CLAMP_PAPER).median_T_grok)


def test_a_censored_median_counts_a_run_without_a_transition_as_infinite():
    """(100, 1400, 200): 200, not the mean 566.7; (100, NaN, 200): the middle of 100, 200, ∞ is 200; (100, NaN, NaN)
    and (NaN, 100): ∞ (half or more censored); (100, 1400, 200, NaN): (200 + 1400) / 2 = 800."""
    assert cells.censored_median([100, 1400, 200]) == 200.0
    assert cells.censored_median([100, float("nan"), 200]) == 200.0
    assert cells.censored_median([100, float("nan"), float("nan")]) == math.inf
    assert cells.censored_median([float("nan"), 100]) == math.inf
    assert cells.censored_median([100, 1400, 200, float("nan")]) == 800.0


def plant(folder, rows):
    folder.mkdir(parents=True, exist_ok=True)
    write_summary(folder, rows)
    (folder / "config.toml").write_text('name = "planted"\n')
    return folder


def cell_runs(times, rho, lr=cells.ETA_CELLS, first_seed=0):
    return [
        {"learning_rate": lr, "clamp_rho": rho, "seed": first_seed + i, "T_fit": 150.0, "T_transition": float(t)}
        for i, t in enumerate(times)
    ]


def test_a_cell_is_the_runs_at_its_learning_rate_and_its_rho_and_its_centre_their_median(tmp_path):
    """The cell ρ = 0.85, η = 8e-3 holds (500, 1400, 600): median 600 (mean 833); runs at η = 1e-3 and at ρ = 1 of
    the same part are other cells (the six at ρ = 0.85 have median 3,200). Theirs is 587 (efflr's cell)."""
    folder = plant(
        tmp_path / "part",
        cell_runs([500, 1400, 600], 0.85)
        + cell_runs([5000, 6000, 7000], 0.85, 1e-3)
        + cell_runs([9000, 9000, 9000], 1.0),
    )
    np.testing.assert_array_equal(cells.cell_times(folder, 0.85), [500, 1400, 600])
    np.testing.assert_array_equal(cells.cell_times(folder, 0.85, 1e-3), [5000, 6000, 7000])
    measured = cells.cell_vs_reference(0.85, "clamp", 0.85)(folder)
    assert measured.value == 600 / 587
    assert measured.text.startswith("600 (3/3 seeds: 500, 600, 1,400) against 587 (16/16 seeds, ClevixLab/")
    ratio = cells.ratio_vs_reference((0, 1.0, "clamp", 1.0), (0, 0.85, "clamp", 0.85))(folder)
    assert ratio.value == pytest.approx((9000 / 600) / (1256 / 587), rel=1e-12)


def test_a_cell_with_runs_at_other_learning_rates_needs_its_own_three_seeds(tmp_path):
    """Two runs at η = 8e-3 and three at 2e-3: the cell at 8e-3 has 2 < MIN_CELL_SEEDS, whatever the part holds."""
    folder = plant(tmp_path / "part", cell_runs([500, 600], 0.85) + cell_runs([700, 800, 900], 0.85, 2e-3, 2))
    with pytest.raises(m.NotMeasured, match="2 run"):
        cells.cell_times(folder, 0.85)


# ----------------------------------------------------------------------------- alternative definitions' folders

STEPS = np.arange(0, 2001, 50, dtype=np.float64)


def trajectories(out, grok_at, others=(None, None), seeds=(0,)):
    """A sweep of λ 0.01, 0.1, 1 × `seeds`: λ 0.1 reaches test accuracy 0.97 at `grok_at`, λ 0.01 and 1 at
    `others` (None: they never leave 0.5); every run fits at step 200."""
    config = experiment.from_dict(
        {
            "name": "planted",
            "task": {"name": "modular", "p": 31},
            "model": {"name": "mlp", "hidden": [32]},
            "optim": {"name": "adamw"},
            "train": {"steps": int(STEPS[-1]), "log_every": 50},
            "grid": {
                "learning_rate": 1e-3,
                "train_fraction": 0.5,
                "weight_decay": [0.01, 0.1, 1.0],
                "seed": list(seeds),
            },
        }
    )
    runs = config.runs()
    train = np.tile((STEPS >= 200).astype(float), (len(runs["seed"]), 1))
    at = {0.01: others[0], 0.1: grok_at, 1.0: others[1]}
    test = np.array(
        [
            np.full(STEPS.shape, 0.5)
            if (step := at[round(float(lam), 2)]) is None
            else np.where(STEPS >= step, 0.97, 0.5)
            for lam in runs["weight_decay"]
        ]
    )
    norm = np.tile(100.0 * np.exp(-STEPS / 2000), (len(runs["seed"]), 1))
    ones = np.ones_like(train)
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
    }
    metrics.update({name: ones for name in config.domain.summary(config) if name not in metrics})
    return write_results_folder(out, STEPS, metrics, runs, config)


def test_two_parts_under_one_alternative_definition_never_share_a_folder(tmp_path):
    """Parts a (λ 0.1 groks at 600) and b (at 1,400) under transition_threshold=0.95: two folders, each with its own
    part's recomputed T_transition and trajectories, and each made once (asked again: the same folder)."""
    a, b = trajectories(tmp_path / "a", 600), trajectories(tmp_path / "b", 1400)
    folders = repro.AlternativeFolders({"a": a, "b": b}, {}, tmp_path / "alternatives")
    under_a, under_b = folders("a", "transition_threshold=0.95"), folders("b", "transition_threshold=0.95")
    assert under_a != under_b and folders("a", "transition_threshold=0.95") == under_a
    assert [r["T_transition"] for r in read_summary(under_a / "summary.csv")][1] == 600
    assert [r["T_transition"] for r in read_summary(under_b / "summary.csv")][1] == 1400
    assert (under_a / "trajectories.npz").resolve() == (a / "trajectories.npz").resolve()
    assert (under_b / "trajectories.npz").resolve() == (b / "trajectories.npz").resolve()
    assert math.isnan(read_summary(a / "summary.csv")[1]["T_transition"])  # 0.97 < 0.99: none at the default


def test_an_alternative_folder_holds_the_parts_own_analyses_without_bootstrap_or_sensitivity(tmp_path):
    """Every run groks (λ 0.01 at 400, 0.1 at 600, 1 at 900; seeds 0–4), so the delay fits have 15 runs in 5 seed
    clusters (126 distinct resamples: enough for an interval, were the bootstrap on). The folder of
    `a` under transition_threshold=0.95 is DIR/a/transition_threshold-0.95, links the part's trajectories and
    config, copies its meta.json, and holds the analyses under the part's own options (its early-warning drop of
    0.2: the total norm 100·e^(−t/2000) falls 20 % below V_fit = 90.48 at t ≥ 646, logged at 650; the default 10 %
    fires at 450) with no bootstrap (a fitted slope, no interval, no resample) and no alternatives of its own (no
    sensitivity column filled); of the part's folder it reads only the trajectories, config and meta (its
    live_history.csv, recorded under the part's own definition, is not scored here). Made again from a new instance over the same root: the same folder, no error."""
    from nht_jax.analysis.analyze import AnalyzeOptions
    from nht_jax.analysis.early_warning import EarlyWarningOptions

    a = trajectories(tmp_path / "a", 600, others=(400, 900), seeds=range(5))
    recorded = {"state": "contracting", "T_fit": 200.0, "T_transition": math.nan, "T_hat": 700.0, "T_lo": 500.0}
    rows_live = [{"step": 300.0, "run": i, **recorded, "T_hi": 900.0, "v_post_source": "pilot"} for i in range(15)]
    (a / live.LIVE_HISTORY).write_text(live.csv_text(rows_live, live.HISTORY_COLUMNS))  # the part's own, not read
    options = {"a": AnalyzeOptions({"early_warning": EarlyWarningOptions(drop_fraction=0.2)})}
    made = repro.AlternativeFolders({"a": a}, options, tmp_path / "alt")("a", "transition_threshold=0.95")
    assert made == tmp_path / "alt" / "a" / "transition_threshold-0.95"
    for name in ("trajectories.npz", "config.toml"):
        assert (made / name).is_symlink() and (made / name).resolve() == (a / name).resolve()
    assert not (made / "meta.json").is_symlink()
    assert (made / "meta.json").read_bytes() == (a / "meta.json").read_bytes()
    assert {r["weight_decay"]: r["T_transition"] for r in read_summary(made / "summary.csv")} == {
        0.01: 400,
        0.1: 600,
        1: 900,
    }

    def rows(name):
        with open(made / name, newline="") as f:
            return list(csv.DictReader(f))

    assert [r["fire_total_norm"] for r in rows("early_warning_runs.csv")] == ["650"] * 15
    fit = next(r for r in rows("delay_fits.csv") if r["fit"] == "inverse_lambda")
    assert (fit["n_runs"], fit["slope_lo"], fit["slope_hi"], fit["distinct_resamples"]) == ("15", "", "", "126")
    assert float(fit["slope"]) != 0
    assert [r["sensitivity"] for r in rows("predictions.csv")] == [""] * len(rows("predictions.csv"))
    assert {r["source"] for r in rows("forecast_runs.csv")} == {"replay", "law"}  # no recorded live forecast
    again = repro.AlternativeFolders({"a": a}, options, tmp_path / "alt")("a", "transition_threshold=0.95")
    assert again == made and [r["fire_total_norm"] for r in rows("early_warning_runs.csv")] == ["650"] * 15


# ----------------------------------------------------------------------------- verdict words and the row's cells


def test_every_kind_has_its_word_for_agreement_and_disagreement():
    """Only a definition check agrees as [≡]; only a different definition or experiment misses as [≠]."""
    words = {kind: (sc.word(True, kind), sc.word(False, kind)) for kind in pre.KINDS}
    assert words == {
        "prediction": (sc.AGREES, sc.DISAGREES),
        "definition check": (sc.DEFINITION, sc.DISAGREES),
        "different definition": (sc.AGREES, sc.DIFFERENT),
        "different experiment": (sc.AGREES, sc.DIFFERENT),
        "re-analysis": (sc.AGREES, sc.DISAGREES),
        "not checked here": (sc.AGREES, sc.DISAGREES),
    }


def test_a_claim_without_its_parts_or_its_number_is_not_judged_and_says_why(tmp_path):
    folders = {"a": seeded(tmp_path / "a", [0, 1])}
    row = sc.judge(constant_claim(["a", "b", "c"]), folders, absent={"b": "FAILED: diverged"})
    assert (row.verdict, row.ours, row.seeds) == (sc.UNJUDGED, "", "")
    assert row.note == "part b FAILED: diverged; part c not run"
    elsewhere = claims_lib.Claim("x", "s", "t", "p", elsewhere="`nht run big`")
    row = sc.judge(elsewhere, folders)
    assert (row.verdict, row.ours, row.note, row.tolerance) == (sc.UNJUDGED, "not checked here", "`nht run big`", "")

    def unmeasured(folder):
        raise m.NotMeasured("a fit without enough runs")

    row = sc.judge(claims_lib.Claim("u", "s", "t", "p", ("a",), unmeasured, claims_lib.equals(1)), folders)
    assert (row.verdict, row.ours, row.note, row.seeds) == (
        sc.UNJUDGED,
        "",
        "a fit without enough runs",
        "2 (needs ≥ 0)",
    )


def test_the_row_carries_the_preregistered_reason_and_when_it_was_set(tmp_path):
    folders = {"a": seeded(tmp_path / "a", [0])}
    reg = registered()._replace(why="the paper's band", set="after the number was seen")
    row = sc.judge(constant_claim(["a"]), folders, registered=reg)
    assert row.tolerance_source == "the paper's band (set after the number was seen)"
    assert row.tolerance == "= 1" and row.kind == "prediction" and row.parts == "a"
    assert "= 1 (set after)" in sc.text_table([row])
    assert (
        sc.judge(constant_claim(["a"]), folders, registered=reg._replace(set="")).tolerance_source == "the paper's band"
    )
    assert sc.sensitivity_text(row) == "–"


def test_the_tally_counts_each_word_that_occurs_in_the_fixed_order():
    rows = [
        sc.Row("i", "c", "p", "o", "t", v, "", "", "")
        for v in (sc.UNJUDGED, sc.AGREES, sc.FRAGILE, sc.AGREES, sc.DISAGREES, sc.UNJUDGED, sc.AGREES)
    ]
    assert sc.tally_text(rows) == "3 [OK], 1 [!!], 1 [~], 2 [--]"
    assert sc.counts(rows)[sc.DIFFERENT] == 0


def test_a_long_cell_is_clipped_to_its_width_with_an_ellipsis():
    assert sc.clip("abc  def\nghi", 11) == "abc def ghi"
    assert sc.clip("abcdef", 6) == "abcdef" and sc.clip("abcdefg", 6) == "abcde…"


# ----------------------------------------------------------------------------- alternatives: each part its own folder


def joined(*folders):
    """The measurement is the folders' names joined with "+": which folder each part was given."""
    return m.Measurement("+".join(Path(f).name for f in folders), "joined")


def test_under_an_alternative_each_part_reads_its_own_folder(tmp_path):
    """Parts a and b; the alternative "transition_threshold=0.9" puts part p in folder "p@TEXT". The rule accepts
    "a+b" (the defaults) and "a@…+b@…" only, so the verdict stays [OK] under the alternative exactly when every
    part got its own alternative folder."""
    text = "transition_threshold=0.9"
    claim = claims_lib.Claim(
        "two",
        "test",
        "two parts",
        "1",
        ("a", "b"),
        joined,
        claims_lib.Rule("planted", lambda v: v in ("a+b", f"a@{text}+b@{text}")),
    )
    folders = {"a": seeded(tmp_path / "a", [0]), "b": seeded(tmp_path / "b", [0])}
    row = sc.judge(
        claim,
        folders,
        registered=registered(alternatives=(text,)),
        alternative=lambda part, alt: tmp_path / f"{part}@{alt}",
    )
    assert (row.verdict, row.ours, row.sensitivity, row.flips) == (sc.AGREES, "joined", f"{text}: OK", "")


def test_alternatives_in_the_table_are_not_tried_without_a_way_to_make_their_folders(tmp_path):
    """A row with alternatives, judged with alternative=None: plain [OK], no sensitivity, no flips."""
    row = sc.judge(NAMED, {"part": tmp_path / "agree"}, registered=registered(alternatives=("fit_threshold=0.5",)))
    assert (row.verdict, row.sensitivity, row.flips, row.note) == (sc.AGREES, "", "", "")
    assert sc.sensitivity_text(row) == "–"


def test_an_agreement_flipped_by_two_alternatives_names_both_in_order(tmp_path):
    """Default [OK], alternatives (!!, OK, !!): fragile, flipped by the first and the third, "OK" at the default."""
    row = judged_with(tmp_path, "agree", ["disagree", "agree", "disagree"])
    assert row.verdict == sc.FRAGILE and row.flips == "transition_threshold=0.1, transition_threshold=0.3"
    assert row.note == (
        "fragile: OK at the default definition, the opposite under transition_threshold=0.1, transition_threshold=0.3"
    )
    assert sc.sensitivity_text(row) == "flips: transition_threshold=0.1, transition_threshold=0.3"


def test_the_scorecard_judges_every_claim_with_its_own_row_of_the_table(tmp_path):
    """Claim a (part p, 2 seeds) has a table row needing 2 seeds with one alternative; claim b's part q did not run
    (absent says why) and b has no row in the table: unregistered, its note from `absent`."""
    folders = {"p": seeded(tmp_path / "p", [0, 1, 1])}
    under = tmp_path / "agree"
    a = claims_lib.Claim("a", "test", "a", "1", ("p",), lambda *f: m.Measurement(1, "one"), claims_lib.equals(1))
    b = claims_lib.Claim("b", "test", "b", "1", ("q",), lambda *f: m.Measurement(1, "one"), claims_lib.equals(1))
    rows = sc.scorecard(
        [a, b],
        folders,
        {"q": "FAILED: out of memory"},
        {"a": registered(min_seeds=2, alternatives=("fit_threshold=0.5",))},
        lambda part, text: under,
    )
    assert [(r.id, r.verdict, r.seeds, r.sensitivity, r.kind, r.note) for r in rows] == [
        ("a", sc.AGREES, "2 (needs ≥ 2)", "fit_threshold=0.5: OK", "prediction", ""),
        ("b", sc.UNJUDGED, "", "", "prediction", "part q FAILED: out of memory"),
    ]
    assert rows[1].tolerance_source == "not in the preregistered table"


# ----------------------------------------------------------------------------- the printed, Markdown and CSV tables


def rows_to_print():
    """Four rows: agreed with two alternatives; not judged with a number (too few seeds, tolerance set after); not
    judged without one (part not run); fragile with a long flips list."""
    agreed = sc.Row(
        "modular.P1",
        "c1",
        "✓",
        "✓ (0.93)",
        "verdict ✓",
        sc.AGREES,
        "default",
        "s",
        "",
        "prediction",
        "3 (needs ≥ 3)",
        "why",
        "transition_threshold=0.95: OK; transition_persists=true: OK",
        "before",
        "",
    )
    few = sc.Row(
        "few",
        "c2",
        "2.1",
        "one",
        "= 1",
        sc.UNJUDGED,
        "p",
        "s",
        "n.a.: 1 seed",
        "re-analysis",
        "1 (needs ≥ 3)",
        "",
        "",
        "after the number was seen",
        "",
    )
    absent = sc.Row("planted.b", "c3", "p3", "", "t3", sc.UNJUDGED, "", "s", "part b not run")
    fragile = sc.Row(
        "x",
        "c4",
        "1.56",
        "1.9",
        "≥ 3",
        sc.FRAGILE,
        "q",
        "s",
        "fragile: …",
        "prediction",
        "5 (needs ≥ 3)",
        "w",
        "transition_threshold=0.95: !!; fit_threshold=0.999: !!",
        "",
        "transition_threshold=0.95, fit_threshold=0.999",
    )
    return [agreed, few, absent, fragile]


def test_the_printed_scorecard_pads_clips_and_marks_each_cell():
    """Widths 8 / 6 / 12 / 10: "modular.P1" clips to "modular…"; a row not judged shows its number (if any) then
    "— (note)", clipped; a tolerance set after the number is marked; empty seeds print "–"; the last column says
    "same under 2" or the flips, clipped at 40: "flips: transition_threshold=0.95, fit_t…" (39 characters and "…")."""
    lines = sc.text_table(rows_to_print(), widths=(8, 6, 12, 10)).split("\n")
    head = "      claim     paper   ours          tolerance   seeds           other definitions"
    assert lines == [
        head,
        "-" * len(head),
        "[OK]  modular…  ✓       ✓ (0.93)      verdict ✓   3 (needs ≥ 3)   same under 2",
        "[--]  few       2.1     one — (n.a.…  = 1 (set …  1 (needs ≥ 3)   –",
        "[--]  planted…  p3      — (part b n…  t3          –               –",
        "[~]   x         1.56    1.9           ≥ 3         5 (needs ≥ 3)   flips: transition_threshold=0.95, fit_t…",
    ]


def test_the_markdown_scorecard_writes_every_cell_whole_and_a_dash_for_an_empty_one():
    agreed, _, absent, _ = rows_to_print()
    assert sc.markdown([agreed, absent]).split("\n") == [
        "|  | claim | kind | paper | ours | tolerance | why (preregistered) | seeds | under other definitions "
        "| measured by | note |",
        "|" + "---|" * 11,
        "| [OK] | `modular.P1` c1 | prediction | ✓ | ✓ (0.93) | verdict ✓ | why | 3 (needs ≥ 3) | "
        "transition_threshold=0.95: OK; transition_persists=true: OK | default |  |",
        "| [--] | `planted.b` c3 | — | p3 | — | t3 | — | – | – | — | part b not run |",
        "",
    ]


def test_the_csv_scorecard_holds_every_field_of_the_row_in_order():
    absent = rows_to_print()[2]
    assert sc.csv([absent]) == (
        "id,claim,paper,ours,tolerance,verdict,parts,source,note,kind,seeds,tolerance_source,"
        "sensitivity,tolerance_set,flips\nplanted.b,c3,p3,,t3,[--],,s,part b not run,,,,,,\n"
    )


# ----------------------------------------------------------------------------- several runs joined into one scorecard


def row(id, verdict, parts, ours=""):
    return sc.Row(id, "a claim", "1", ours, "= 1", verdict, parts, "", "")


def test_a_joined_scorecard_takes_each_row_from_the_first_run_that_made_its_parts():
    """Known answer: the first run made `a`; the second `b` and `a`; the third `b` and `c`. A row of `a` alone comes
    from the first run (its earlier number is kept even though the second run made `a` again); a row of `b` from the
    second (the first run did not make `b`; the third did, later); a row of `b, c` from the third, the only run that
    made both; a row whose parts no run made, and a row naming no part, from the first run, in the first run's
    order."""
    first = [
        row("on_a", "[OK]", "a", "first"),
        row("on_b", "[--]", "b"),
        row("on_bc", "[--]", "b, c"),
        row("on_d", "[--]", "d"),
        row("unchecked", "[--]", ""),
    ]
    second = [
        row("on_bc", "[--]", "b, c"),
        row("on_b", "[!!]", "b", "second"),
        row("on_a", "[!!]", "a", "second"),
        row("unchecked", "[OK]", ""),
    ]
    third = [row("on_b", "[OK]", "b", "third"), row("on_bc", "[~]", "b, c", "third"), row("on_d", "[--]", "d")]
    joined = sc.joined([(first, {"a"}), (second, {"a", "b"}), (third, {"b", "c"})])
    assert [(r.id, r.verdict, r.ours) for r in joined] == [
        ("on_a", "[OK]", "first"),
        ("on_b", "[!!]", "second"),
        ("on_bc", "[~]", "third"),
        ("on_d", "[--]", ""),
        ("unchecked", "[--]", ""),
    ]
