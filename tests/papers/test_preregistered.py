"""The preregistered table against the claims, its docs page, and the scorecard's verdict words on planted folders
(no training: summary.csv written by the results' own writer)."""

import dataclasses
from pathlib import Path

import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.papers import claims as claims_lib
from nht_jax.papers import measures as m
from nht_jax.papers import preregistered as pre
from nht_jax.papers import scorecard as sc
from nht_jax.results.folder import write_summary

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "python -c 'from nht_jax.papers.preregistered import write_page; write_page()' from the repository root"


def test_every_claim_has_exactly_its_preregistered_row():
    assert pre.problems(claims_lib.CLAIMS, pre.load()) == []
    pre.check(claims_lib.CLAIMS)


def changed(table, claim_id, **fields):
    return {**table, claim_id: table[claim_id]._replace(**fields)}


def test_a_tolerance_not_in_the_table_or_a_row_without_a_claim_fails():
    table = pre.load()
    assert any(
        "modular.nu: its rule is '|ν − 1| ≤ 0.25'" in p
        for p in pre.problems(claims_lib.CLAIMS, changed(table, "modular.nu", tolerance="|ν − 1| ≤ 0.3"))
    )
    missing = {k: v for k, v in table.items() if k != "clamp.alpha"}
    assert pre.problems(claims_lib.CLAIMS, missing) == ["claim clamp.alpha has no row in the preregistered table"]
    extra = {**table, "nobody.uses": table["modular.nu"]._replace(id="nobody.uses")}
    assert pre.problems(claims_lib.CLAIMS, extra) == ["row nobody.uses of the preregistered table is no claim's"]
    with pytest.raises(ConfigError, match="does not match the claims"):
        pre.check(claims_lib.CLAIMS, missing)
    # A claim whose rule changes without its row is caught the same way.
    moved = [
        dataclasses.replace(c, rule=claims_lib.at_least(0.7)) if c.id == "modular.S" else c for c in claims_lib.CLAIMS
    ]
    assert pre.problems(moved, table) == ["claim modular.S: its rule is '≥ 0.7', the preregistered tolerance '≥ 0.8'"]


def test_a_fit_on_too_few_seeds_a_wrong_part_an_unknown_kind_or_definition_fails():
    table = pre.load()
    found = pre.problems(claims_lib.CLAIMS, changed(table, "modular.P6", min_seeds=2))
    assert found == ["claim modular.P6: a fitted exponent or slope on 2 seed(s) < 5"]
    found = pre.problems(claims_lib.CLAIMS, changed(table, "modular.P6", reads=("border-digits/predictions.csv",)))
    assert found and "measures parts default" in found[0]
    assert "kind 'guess'" in pre.problems(claims_lib.CLAIMS, changed(table, "modular.P6", kind="guess"))[0]
    found = pre.problems(claims_lib.CLAIMS, changed(table, "modular.P6", alternatives=("weight_decay=1",)))
    assert found and "KEY one of transition_threshold" in found[0]


def test_a_malformed_row_is_one_clear_error():
    with pytest.raises(ConfigError, match="claim x: missing"):
        pre.parse('[[claim]]\nid = "x"\nkind = "prediction"\n')
    row = (
        "[[claim]]\n"
        + "\n".join(
            f"{f} = {v}"
            for f, v in (
                ("id", '"x"'),
                ("kind", '"prediction"'),
                ("measure", '""'),
                ("reads", "[]"),
                ("tolerance", '""'),
                ("why", '""'),
                ("set", '""'),
                ("min_seeds", "1"),
                ("seeds_why", '""'),
                ("alternatives", "[]"),
            )
        )
        + "\n"
    )
    assert list(pre.parse(row)) == ["x"]
    with pytest.raises(ConfigError, match="used twice"):
        pre.parse(row + row)


def test_the_rows_the_issue_names_say_what_they_are():
    table = pre.load()
    assert table["modular.P3"].kind == "definition check"
    assert {table[i].kind for i in ("modular.S", "modular.P5", "companion.λ=1.V_post")} == {"different definition"}
    assert {table[i].kind for i in ("grokfast.speedup", "ortho_grad.speedup", "row_clip.speedup")} == {
        "different experiment"
    }
    assert "after the number was seen" in table["modular.predictor"].set
    assert "after the 1,000-sample version grokked" in table["parity.no_grok"].set
    assert {table[i].kind for i in ("parity.no_grok", "parity.norm_grows")} == {"not checked here"}
    assert {table[i].kind for i in ("cells.rho0.85", "cells.rho1.00", "cells.norm_ratio", "cells.clamp_vs_free")} == {
        "different experiment"
    }
    assert "39.4" in table["modular.predictor"].tolerance and "anew" in table["modular.predictor"].set
    assert all(table[i].min_seeds >= 5 for i in ("modular.P4", "modular.P5", "modular.P6", "cifar.P6", "clamp.alpha"))


def test_the_docs_page_is_generated_from_the_table():
    page = (ROOT / pre.DOCS_PAGE).read_text(encoding="utf-8")
    assert page == pre.page(claims_lib.CLAIMS), f"docs/papers/claims.md is stale: regenerate it with {REGENERATE}"
    assert "| `modular.P3`" in page and "definition check" in page


# ----------------------------------------------------------------------------- verdict words on planted folders


def planted(folder, regimes, seeds):
    folder.mkdir(parents=True, exist_ok=True)
    write_summary(folder, [{"run": i, "seed": s, "regime": r} for i, (r, s) in enumerate(zip(regimes, seeds))])
    return folder


def claim(rule):
    return claims_lib.Claim(
        "planted", "test", "intermediate runs", "2", ("part",), m.regime_count("intermediate"), rule
    )


def registered(kind="prediction", min_seeds=1, alternatives=()):
    return pre.Preregistered(
        "planted", kind, "", ("part/summary.csv",), "", "why", "before", min_seeds, "", alternatives
    )


def test_the_verdict_word_follows_the_kind_and_the_seeds(tmp_path):
    two = {"part": planted(tmp_path / "a", ["intermediate", "intermediate", "weak"], [0, 1, 2])}
    agree, miss = claim(claims_lib.equals(2)), claim(claims_lib.equals(3))
    assert sc.judge(agree, two, registered=registered()).verdict == sc.AGREES
    assert sc.judge(miss, two, registered=registered()).verdict == sc.DISAGREES
    assert sc.judge(miss, two, registered=registered("different definition")).verdict == sc.DIFFERENT
    assert sc.judge(miss, two, registered=registered("different experiment")).verdict == sc.DIFFERENT
    assert sc.judge(agree, two, registered=registered("definition check")).verdict == sc.DEFINITION
    row = sc.judge(agree, two, registered=registered(min_seeds=5))
    assert row.verdict == sc.UNJUDGED and row.ours.startswith("2 of 3 runs") and row.seeds == "3 (needs ≥ 5)"
    assert "rests on 3 seed(s)" in row.note
    assert sc.judge(agree, two, registered=registered(min_seeds=3)).verdict == sc.AGREES


def test_a_verdict_that_flips_under_an_alternative_is_fragile(tmp_path):
    default = {"part": planted(tmp_path / "d", ["intermediate", "intermediate"], [0, 1])}
    strict = planted(tmp_path / "s", ["weak", "weak"], [0, 1])
    loose = planted(tmp_path / "l", ["intermediate", "intermediate"], [0, 1])
    under = {"transition_threshold=0.999": strict, "transition_threshold=0.95": loose}
    row = sc.judge(
        claim(claims_lib.equals(2)),
        default,
        registered=registered(alternatives=tuple(under)),
        alternative=lambda part, text: under[text],
    )
    assert row.verdict == sc.FRAGILE
    assert row.sensitivity == "transition_threshold=0.999: !!; transition_threshold=0.95: OK"
    assert sc.sensitivity_text(row) == "flips: transition_threshold=0.999"
    assert "flips: transition_threshold=0.999" in sc.text_table([row])
    assert "under transition_threshold=0.999" in row.note
    steady = sc.judge(
        claim(claims_lib.equals(2)),
        default,
        registered=registered(alternatives=("x=1",)),
        alternative=lambda part, text: loose,
    )
    assert (
        steady.verdict == sc.AGREES
        and steady.sensitivity == "x=1: OK"
        and sc.sensitivity_text(steady) == "same under 1"
    )


def test_a_fitted_claim_needs_five_seeds_and_not_checked_here_means_no_parts():
    """FITTED_MIN_SEEDS = 5: 4 seeds is a problem, 5 is not; a checked claim of kind "not checked here" and an
    unchecked claim of another kind are both named."""
    table = pre.load()
    assert pre.FITTED_MIN_SEEDS == 5
    assert pre.problems(claims_lib.CLAIMS, changed(table, "modular.P6", min_seeds=4)) == [
        "claim modular.P6: a fitted exponent or slope on 4 seed(s) < 5"
    ]
    assert pre.problems(claims_lib.CLAIMS, changed(table, "modular.P6", min_seeds=5)) == []
    assert pre.problems(claims_lib.CLAIMS, changed(table, "modular.P6", kind="not checked here")) == [
        "claim modular.P6: kind 'not checked here' but it is checked here"
    ]
    assert pre.problems(claims_lib.CLAIMS, changed(table, "celeba", kind="prediction")) == [
        "claim celeba: kind 'prediction' but it is not checked here"
    ]


def test_problems_are_all_listed_together_and_each_message_is_exact():
    """Known answers on a table with several faults at once (a claim without a row, a row without a claim, and two
    rows that read another part, one by a path with a folder in it): every one is listed, in order, whole."""
    table = pre.load()
    broken = {k: v for k, v in table.items() if k != "clamp.alpha"}
    broken["nobody.uses"] = table["modular.nu"]._replace(id="nobody.uses")
    broken["modular.P6"] = table["modular.P6"]._replace(reads=("default/analysis/extra.csv", "toy-linear/x.csv"))
    broken["modular.S"] = table["modular.S"]._replace(reads=())
    assert pre.problems(claims_lib.CLAIMS, broken) == [
        "claim clamp.alpha has no row in the preregistered table",
        "row nobody.uses of the preregistered table is no claim's",
        "claim modular.P6: reads default/analysis/extra.csv, toy-linear/x.csv, but it measures parts default",
        "claim modular.S: reads nothing, but it measures parts default",
    ]
    # the check after a missing row goes on to the next claims (a kind none of KINDS, named with all of them)
    broken["modular.nu"] = table["modular.nu"]._replace(kind="guess")
    assert f"claim modular.nu: kind 'guess' is none of {', '.join(pre.KINDS)}" in pre.problems(
        claims_lib.CLAIMS, broken
    )


def test_parse_reads_rows_in_order_as_tuples_and_an_empty_table_is_empty():
    assert pre.parse("") == {}
    text = "\n".join(
        "[[claim]]\n"
        + "\n".join(
            f"{f} = {v}"
            for f, v in (
                ("id", f'"{i}"'),
                ("kind", '"prediction"'),
                ("measure", '"m"'),
                ("reads", '["default/summary.csv"]'),
                ("tolerance", '"≥ 1"'),
                ("why", '"w"'),
                ("set", '"s"'),
                ("min_seeds", "1"),
                ("seeds_why", '"x"'),
                ("alternatives", '["fit_threshold=0.95"]'),
            )
        )
        for i in ("b", "a")
    )
    table = pre.parse(text)
    assert list(table) == ["b", "a"] and table["a"].reads == ("default/summary.csv",)
    assert table["a"].alternatives == ("fit_threshold=0.95",) and table["a"].min_seeds == 1


def test_the_page_uses_the_table_it_is_given_and_write_page_writes_the_shipped_one(tmp_path, monkeypatch):
    table = pre.load()
    marked = changed(table, "modular.nu", why="a reason | with a bar\nand a line break")
    text = pre.page(claims_lib.CLAIMS, marked)
    assert "a reason \\| with a bar and a line break" in text and text != pre.page(claims_lib.CLAIMS)
    assert pre.cell("x|y\nz") == "x\\|y z"
    (tmp_path / pre.DOCS_PAGE).parent.mkdir(parents=True)
    path = pre.write_page(tmp_path)
    assert path == tmp_path / pre.DOCS_PAGE and path.read_text() == pre.page(claims_lib.CLAIMS, table)
    monkeypatch.chdir(tmp_path)  # without a root: the checkout it is run from
    assert pre.write_page().resolve() == path.resolve()


def test_a_missing_row_stops_only_its_own_checks_and_reads_are_judged_by_their_first_folder():
    """The first claim without a row (modular.P1) does not end the checks of the claims after it; a row reading
    a part through a nested path ("default/analysis/x.csv") reads part `default`; the parts are named, "none" for a
    claim checked nowhere, and both of a two-part claim."""
    table = pre.load()
    broken = {k: v for k, v in table.items() if k != "modular.P1"}
    broken["modular.nu"] = table["modular.nu"]._replace(kind="guess")
    found = pre.problems(claims_lib.CLAIMS, broken)
    assert found[0] == "claim modular.P1 has no row in the preregistered table" and any(
        "modular.nu" in p for p in found
    )
    nested = changed(table, "modular.P6", reads=("default/analysis/x.csv", "default/summary.csv"))
    assert pre.problems(claims_lib.CLAIMS, nested) == []
    nowhere = changed(table, "parity.no_grok", reads=("default/summary.csv",))
    assert pre.problems(claims_lib.CLAIMS, nowhere) == [
        "claim parity.no_grok: reads default/summary.csv, but it measures parts none"
    ]
    two = changed(table, "S.order", reads=("default/summary.csv",))
    assert pre.problems(claims_lib.CLAIMS, two) == [
        "claim S.order: reads default/summary.csv, but it measures parts default, border-digits"
    ]
