"""Numbers quoted in docs/findings against the CSVs they come from (issue 44): a quoted number cannot drift from its
source. Each `Quote` names the page, a pattern whose groups are the quoted numbers (in the page's text with its line
breaks as spaces), the CSV committed under docs/findings/data/, the row (every key equal) and the columns, one per
group. A quoted number agrees when it equals the CSV's value rounded to the decimals it is quoted with. The
published scorecard page must hold the table `nht_jax.papers.scorecard.markdown` makes of its CSV, row by row."""

import csv
import re
from pathlib import Path
from typing import NamedTuple

import pytest

from nht_jax.papers import scorecard

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "findings" / "data"


class Quote(NamedTuple):
    page: str
    pattern: str
    source: str
    row: dict
    columns: tuple[str, ...]


NU = r"([-\d.]+) \[([-\d.]+), ([-\d.]+)\]"
FIVE_SEED = "reproduce-2026-12-06"
RUNS = (("scorecard.csv", {"default", "toy-linear", "verify-bounds"}), ("their-data-scorecard.csv", {"their-data"}))
"""The runs the scorecard page joins, each with the parts it made (the page counts the rows they judge)."""
RAN = set().union(*(made for _, made in RUNS))

QUOTES = [
    *[
        Quote(
            "docs/findings/default.md",
            rf"{logs}, threshold {t}, all λ: ν = {NU}",
            f"{FIVE_SEED}/p6_definitions.csv",
            {"logs": logs, "threshold": t, "runs": "all λ"},
            ("nu", "nu_lo", "nu_hi"),
        )
        for logs in ("as logged", "every 50")
        for t in ("0.95", "0.99", "0.999")
    ],
    Quote(
        "docs/findings/default.md",
        rf"every 50, threshold 0.99, λ < 0.8: ν = {NU}",
        f"{FIVE_SEED}/p6_definitions.csv",
        {"logs": "every 50", "threshold": "0.99", "runs": "λ < 0.8"},
        ("nu", "nu_lo", "nu_hi"),
    ),
]


def page_text(page: str) -> str:
    return " ".join((ROOT / page).read_text(encoding="utf-8").split())


def source_row(quote: Quote) -> dict:
    with open(DATA / quote.source, newline="", encoding="utf-8") as handle:
        found = [r for r in csv.DictReader(handle) if all(r[k] == v for k, v in quote.row.items())]
    assert len(found) == 1, f"{quote.source}: {len(found)} rows match {quote.row}"
    return found[0]


def agrees(text: str, value: str) -> bool:
    """`text` (as quoted) is `value` (as the CSV holds it) rounded to the decimals `text` has."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    return float(text) == round(float(value), decimals)


@pytest.mark.parametrize("quote", QUOTES, ids=lambda q: f"{Path(q.page).stem}:{'/'.join(q.row.values())}")
def test_a_quoted_number_is_its_sources(quote):
    match = re.search(quote.pattern, page_text(quote.page))
    assert match, f"{quote.page} no longer quotes {quote.pattern!r}"
    row = source_row(quote)
    for text, column in zip(match.groups(), quote.columns):
        assert agrees(text, row[column]), f"{quote.page} quotes {column} = {text}; {quote.source} holds {row[column]}"


def test_the_rounding_rule():
    assert agrees("1.31", "1.3149") and agrees("-0.07", "-0.0712") and agrees("350", "350.0")
    assert not agrees("1.31", "1.316") and not agrees("0.874", "0.87")


def test_the_published_scorecard_is_its_csv_row_by_row():
    rows = scorecard.joined([(scorecard.read_csv(DATA / FIVE_SEED / name), made) for name, made in RUNS])
    page = (ROOT / "docs" / "findings" / "scorecard.md").read_text(encoding="utf-8")
    assert rows and scorecard.markdown(rows) in page
    judged = [r for r in rows if r.parts and set(r.parts.split(", ")) <= RAN]
    assert f"**{scorecard.tally_text(judged)}** over the {len(judged)} rows" in page
