"""The scorecard of `nht paper reproduce`: every claim of nht_jax.papers.claims judged against the result folders, with
its row of the preregistered table (nht_jax.papers.preregistered: kind, seeds, alternatives).

The verdicts are [OK], [!!] (a disagreement, reported, never tuned away), [≠] (a different definition or
experiment), [≡] (a definition check), [~] (fragile under an alternative definition,
nht_jax.analysis.sensitivity) and [--] (no number to judge, or fewer seeds than the row's min_seeds). Seeds are
the distinct values of the `seed` column of each part's summary.csv, the fewest over the claim's parts.
`markdown` makes the table the published scorecard page holds.

Each verdict word and when it is given: docs/papers/reproduce.md; the rows: docs/papers/claims.md."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from nht_jax.papers.measures import NotMeasured, seed_count
from nht_jax.papers.preregistered import Preregistered
from nht_jax.analysis.tables import csv_text, markdown_table

AGREES, DISAGREES, UNJUDGED = "[OK]", "[!!]", "[--]"
DIFFERENT, DEFINITION, FRAGILE = "[≠]", "[≡]", "[~]"
VERDICTS = (AGREES, DISAGREES, DIFFERENT, DEFINITION, FRAGILE, UNJUDGED)
DIFFERENT_KINDS = ("different definition", "different experiment")

UNREGISTERED = Preregistered("", "prediction", "", (), "", "not in the preregistered table", "", 0, "", ())
"""The row of a claim that the table does not hold (a claims table passed in by a caller, e.g. a test)."""


class Row(NamedTuple):
    id: str
    claim: str
    paper: str
    ours: str
    tolerance: str
    verdict: str
    parts: str
    source: str
    note: str
    kind: str = ""
    seeds: str = ""
    tolerance_source: str = ""
    sensitivity: str = ""
    tolerance_set: str = ""
    flips: str = ""


Alternative = Callable[[str, str], Path]
"""(part key, alternative definition "KEY=VALUE") → a folder holding that part's summary and analysis under it."""


def word(agrees: bool, kind: str) -> str:
    """The verdict word of a judged claim of this kind (module docstring).

    Args:
        agrees: whether the claim agrees.
        kind: the claim's kind.

    Returns:
        The word.
    """
    if agrees:
        return DEFINITION if kind == "definition check" else AGREES
    return DIFFERENT if kind in DIFFERENT_KINDS else DISAGREES


def judged_under(claim, alternative: Alternative, text: str) -> str:
    """The claim's verdict (OK / !! / n.a.) with its parts' folders analysed under one alternative definition."""
    try:
        measured = claim.measure(*[alternative(p, text) for p in claim.parts])
    except NotMeasured:
        return "n.a."
    return "OK" if claim.rule.accepts(measured.value) else "!!"


def judge(
    claim,
    folders: Mapping[str, Path],
    absent: Mapping[str, str] | None = None,
    registered: Preregistered | None = None,
    alternative: Alternative | None = None,
) -> Row:
    """One claim against the folders of the parts that ran.

    Args:
        claim: the claim.
        folders: part key → folder.
        absent: part key → why it has no folder (not run, failed).
        registered: its row of the preregistered table (kind, min_seeds, alternatives).
        alternative: how to get a part's folder under an alternative definition (None: the alternatives are not
            tried).

    Returns:
        The claim's Row.
    """
    absent = absent or {}
    reg = registered or UNREGISTERED
    row = {
        "id": claim.id,
        "claim": claim.text,
        "paper": claim.paper,
        "ours": "",
        "verdict": UNJUDGED,
        "tolerance": claim.rule.text if claim.rule else "",
        "parts": ", ".join(claim.parts),
        "source": claim.source,
        "note": "",
        "kind": reg.kind,
        "seeds": "",
        "tolerance_source": f"{reg.why} (set {reg.set})" if reg.set else reg.why,
        "sensitivity": "",
        "tolerance_set": reg.set,
        "flips": "",
    }
    if not claim.parts:
        return Row(**{**row, "ours": "not checked here", "note": claim.elsewhere})
    missing = [p for p in claim.parts if p not in folders]
    if missing:
        return Row(**{**row, "note": "; ".join(f"part {p} {absent.get(p, 'not run')}" for p in missing)})
    counted = [n for n in (seed_count(Path(folders[p])) for p in claim.parts) if n is not None]
    seeds = min(counted) if counted else None  # a part without summary.csv (verify-bounds) has no seeds
    row["seeds"] = f"{seeds} (needs ≥ {reg.min_seeds})" if seeds is not None else "–"
    try:
        measured = claim.measure(*[Path(folders[p]) for p in claim.parts])
    except NotMeasured as reason:
        return Row(**{**row, "note": str(reason)})
    row["ours"] = measured.text
    if seeds is not None and seeds < reg.min_seeds:
        return Row(
            **{
                **row,
                "note": f"n.a.: rests on {seeds} seed(s); its preregistered row needs ≥ "
                f"{reg.min_seeds} ({reg.seeds_why})",
            }
        )
    agrees = claim.rule.accepts(measured.value)
    verdict = word(agrees, reg.kind)
    if alternative is not None and reg.alternatives:
        under = {text: judged_under(claim, alternative, text) for text in reg.alternatives}
        row["sensitivity"] = "; ".join(f"{text}: {v}" for text, v in under.items())
        flipped = [t for t, v in under.items() if v == ("!!" if agrees else "OK")]
        if flipped:
            verdict = FRAGILE
            row["flips"] = ", ".join(flipped)
            row["note"] = (
                f"fragile: {'OK' if agrees else '!!'} at the default definition, the opposite under " + row["flips"]
            )
    return Row(**{**row, "verdict": verdict})


def scorecard(
    claims,
    folders: Mapping[str, Path],
    absent: Mapping[str, str] | None = None,
    table: Mapping[str, Preregistered] | None = None,
    alternative: Alternative | None = None,
) -> list[Row]:
    """Every claim judged (`judge`), in order.

    Args:
        claims: the claims.
        folders: part key → folder.
        absent: part key → why it has no folder.
        table: the preregistered table, claim id → its row (None: none).
        alternative: how to get a part's folder under an alternative definition (None: not tried).

    Returns:
        One Row per claim.
    """
    table = table or {}
    return [judge(c, folders, absent, table.get(c.id), alternative) for c in claims]


def counts(rows: list[Row]) -> dict[str, int]:
    """How many rows have each verdict.

    Args:
        rows: the scorecard's rows.

    Returns:
        {verdict: count}, every verdict of VERDICTS.
    """
    return {v: sum(r.verdict == v for r in rows) for v in VERDICTS}


def tally_text(rows: list[Row]) -> str:
    """ "21 [OK], 3 [!!], …" over every verdict word that occurs."""
    return ", ".join(f"{n} {v}" for v, n in counts(rows).items() if n)


def clip(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def sensitivity_text(row: Row) -> str:
    """ "–" (no alternatives tried), "same under 5" or "flips: KEY=VALUE, …" (the printed table's last column)."""
    if not row.sensitivity:
        return "–"
    return f"flips: {row.flips}" if row.flips else f"same under {row.sensitivity.count('; ') + 1}"


def text_table(rows: list[Row], widths=(28, 22, 44, 34)) -> str:
    """The printed scorecard: verdict | claim | paper | ours | tolerance (marked "set after" when the preregistered
    table says it was set after the number was seen) | seeds (found, needed) | other definitions, long cells clipped
    (the files hold them whole)."""
    id_w, paper_w, ours_w, tol_w = widths
    head = (
        f"{'':4}  {'claim':<{id_w}}  {'paper':<{paper_w}}  {'ours':<{ours_w}}  {'tolerance':<{tol_w}}  "
        f"{'seeds':<14}  other definitions"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        ours = r.ours if r.ours and r.verdict != UNJUDGED else (r.ours + " " if r.ours else "") + f"— ({r.note})"
        tolerance = r.tolerance + (" (set after)" if "after" in r.tolerance_set else "")
        lines.append(
            f"{r.verdict:<4}  {clip(r.id, id_w):<{id_w}}  {clip(r.paper, paper_w):<{paper_w}}  "
            f"{clip(ours, ours_w):<{ours_w}}  {clip(tolerance, tol_w):<{tol_w}}  {r.seeds or '–':<14}  "
            f"{clip(sensitivity_text(r), 40)}"
        )
    return "\n".join(lines)


def markdown(rows: list[Row]) -> str:
    """The scorecard as a Markdown table (every cell whole): the tolerance with its preregistered reason, the seeds,
    the verdict under each alternative definition.

    Args:
        rows: the scorecard's rows.

    Returns:
        The Markdown.
    """
    return markdown_table(
        [
            {
                "": r.verdict,
                "claim": f"`{r.id}` {r.claim}",
                "kind": r.kind or "—",
                "paper": r.paper,
                "ours": r.ours or "—",
                "tolerance": r.tolerance,
                "why (preregistered)": r.tolerance_source or "—",
                "seeds": r.seeds or "–",
                "under other definitions": r.sensitivity or "–",
                "measured by": r.parts or "—",
                "note": r.note,
            }
            for r in rows
        ]
    )


def csv(rows: list[Row]) -> str:
    """The rows as scorecard.csv's text.

    Args:
        rows: the scorecard's rows.

    Returns:
        The CSV text.
    """
    return csv_text([r._asdict() for r in rows])


def read_csv(path: Path) -> list[Row]:
    """The rows of a scorecard.csv (`csv`), every field as written (an empty cell reads as "").

    Args:
        path: the scorecard.csv file.

    Returns:
        The Rows.
    """
    import csv as csv_module

    with open(path, newline="", encoding="utf-8") as handle:
        return [Row(**{field: row.get(field) or "" for field in Row._fields}) for row in csv_module.DictReader(handle)]


def joined(runs: list[tuple[list[Row], set[str]]]) -> list[Row]:
    """One scorecard from several runs of `nht paper reproduce`: every claim's row from the first run that made all of
    the row's parts, else the first run's row (in the first run's order). A row naming no part (not checked here) is
    the first run's.

    Args:
        runs: each run's (rows, the parts it made).

    Returns:
        The rows.
    """
    by_run = [({r.id: r for r in rows}, made) for rows, made in runs]

    def made_by(row: Row, made: set[str]) -> bool:
        return bool(row.parts) and set(row.parts.split(", ")) <= made

    return [
        next((rows[r.id] for rows, made in by_run if r.id in rows and made_by(rows[r.id], made)), r) for r in runs[0][0]
    ]


__all__ = ["counts", "csv", "joined", "judge", "markdown", "read_csv", "scorecard", "word"]
