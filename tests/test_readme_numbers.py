"""The README's numbers about the default run are that run's own (issue 46 item 7): each number the paragraph "What
the main job shows" quotes is computed here from the committed summary.csv of `nht run default`
(docs/findings/data/default/summary.csv), whose runs must be the default preset's grid; a README sentence that no
longer matches, or a preset whose grid changed without a fresh summary, fails, saying which number."""

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from nht_jax import experiment

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = ROOT / "docs" / "findings" / "data" / "default" / "summary.csv"


def rows() -> list[dict]:
    with open(SUMMARY, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def paragraph() -> str:
    """The README's paragraph under "What the main job shows", its line breaks as spaces."""
    text = (ROOT / "README.md").read_text(encoding="utf-8").split("## What the main job shows", 1)[1]
    return " ".join(text.split("\n## ", 1)[0].split())


def steps(value: float) -> str:
    """A step count as the README writes it: 3,950; 350."""
    return f"{value:,.0f}"


def lambdas(values) -> str:
    return "–".join(f"{v:g}" for v in (min(values), max(values))) if len(set(values)) > 1 else f"{values[0]:g}"


def quoted(table: list[dict]) -> dict[str, str]:
    """What the README must say, computed from the run's rows: {what: the text}."""

    def number(row, key):
        return float(row[key]) if row[key] not in ("", "nan") else np.nan

    by = {regime: [r for r in table if r["regime"] == regime] for regime in ("weak", "intermediate", "strong")}
    inter = by["intermediate"]
    inter_lams = sorted({float(r["weight_decay"]) for r in inter})
    # the weak runs at an intermediate λ: they generalise too slowly for the budget
    slow = [r for r in by["weak"] if float(r["weight_decay"]) in inter_lams]
    always_weak = sorted({float(r["weight_decay"]) for r in by["weak"]} - set(inter_lams))
    fits = [number(r, "T_fit") for r in inter]
    times = [number(r, "T_transition") for r in inter]
    delays = [number(r, "delay") for r in inter]
    weak_fit = {number(r, "T_fit") for r in by["weak"] if float(r["weight_decay"]) in always_weak}
    assert len(weak_fit) == 1, weak_fit
    out = {
        "the weak λ and their fit": f"λ = {lambdas(always_weak)} memorises the training set at step "
        f"{steps(weak_fit.pop())}",
        "the intermediate λ and their fit": f"λ = {lambdas(inter_lams)} fit at the norm's peak (step "
        f"{steps(min(fits))}–{steps(max(fits))})",
        "T_transition": f"crosses 99 % at step {steps(max(times))} down to {steps(min(times))}",
        "the delays": f"delays T_transition − T_fit from {steps(max(delays))} steps down to {steps(min(delays))}",
        "the strong λ": f"λ = {lambdas(sorted({float(r['weight_decay']) for r in by['strong']}))} never fits (strong)",
        "the budget": f"in {steps(int(experiment.load('default').train.steps))} steps",
    }
    if slow:
        (run,) = slow
        out["the slow run"] = (
            f"one λ = {float(run['weight_decay']):g} run stops at {100 * float(run['final_test_acc']):.1f} %"
        )
    return out


def test_the_committed_summary_is_a_run_of_the_default_presets_grid():
    config = experiment.load("default")
    runs = config.runs()
    table = rows()
    assert len(table) == len(runs["weight_decay"]), (
        "the default's grid changed: run `nht run default` and commit "
        "its summary.csv at " + str(SUMMARY.relative_to(ROOT))
    )
    for axis in ("weight_decay", "seed", "learning_rate", "train_fraction"):
        np.testing.assert_allclose(
            [float(r[axis]) for r in table],
            np.asarray(runs[axis], float),
            rtol=1e-6,
            err_msg=f"{axis}: the default's grid changed; commit a fresh run's summary.csv",
        )


@pytest.mark.parametrize("what", list(quoted(rows())))
def test_the_readme_quotes_the_default_runs_numbers(what):
    expected = quoted(rows())[what]
    assert expected in paragraph(), (
        f"README.md, 'What the main job shows': {what} should read {expected!r} (from {SUMMARY.relative_to(ROOT)})"
    )


def test_the_readme_links_the_summary_it_quotes():
    assert re.search(r"\]\(docs/findings/data/default/summary\.csv\)", paragraph())
