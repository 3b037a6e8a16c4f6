"""The scorecard of `nht reproduce`: every claim of nht_jax.papers.claims judged against the result folders.

    [OK]  our number meets the claim's tolerance
    [!!]  it does not: a disagreement with the papers (reported, never tuned away)
    [--]  no number to judge: the claim is not checked here (it needs an accelerator or real data; the note
          gives the command), its experiment was not run (--only) or failed, or the analysis has no value
          (a verdict n.a., a fit without enough runs; the note says which)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from nht_jax.papers.measures import NotMeasured
from nht_jax.analysis.tables import csv_text, markdown_table

AGREES, DISAGREES, UNJUDGED = "[OK]", "[!!]", "[--]"


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


def judge(claim, folders: Mapping[str, Path], absent: Mapping[str, str] | None = None) -> Row:
    """One claim against the folders of the parts that ran (part key → folder); `absent`: part key → why it has
    no folder (not run, failed)."""
    absent = absent or {}
    row = {"id": claim.id, "claim": claim.text, "paper": claim.paper, "ours": "", "verdict": UNJUDGED,
           "tolerance": claim.rule.text if claim.rule else "", "parts": ", ".join(claim.parts),
           "source": claim.source, "note": ""}
    if not claim.parts:
        return Row(**{**row, "ours": "not checked here", "note": claim.elsewhere})
    missing = [p for p in claim.parts if p not in folders]
    if missing:
        return Row(**{**row, "note": "; ".join(f"part {p} {absent.get(p, 'not run')}" for p in missing)})
    try:
        measured = claim.measure(*[Path(folders[p]) for p in claim.parts])
    except NotMeasured as reason:
        return Row(**{**row, "note": str(reason)})
    agrees = claim.rule.accepts(measured.value)
    return Row(**{**row, "ours": measured.text, "verdict": AGREES if agrees else DISAGREES})


def scorecard(claims, folders: Mapping[str, Path], absent: Mapping[str, str] | None = None) -> list[Row]:
    return [judge(c, folders, absent) for c in claims]


def counts(rows: list[Row]) -> dict[str, int]:
    return {v: sum(r.verdict == v for r in rows) for v in (AGREES, DISAGREES, UNJUDGED)}


def clip(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def text_table(rows: list[Row], widths=(28, 22, 44, 34)) -> str:
    """The printed scorecard: verdict | claim | paper | ours | tolerance, long cells clipped (the files hold them
    whole)."""
    id_w, paper_w, ours_w, tol_w = widths
    head = f"{'':4}  {'claim':<{id_w}}  {'paper':<{paper_w}}  {'ours':<{ours_w}}  tolerance"
    lines = [head, "-" * len(head)]
    for r in rows:
        ours = r.ours or f"— ({r.note})"
        lines.append(f"{r.verdict}  {clip(r.id, id_w):<{id_w}}  {clip(r.paper, paper_w):<{paper_w}}  "
                     f"{clip(ours, ours_w):<{ours_w}}  {clip(r.tolerance, tol_w)}")
    return "\n".join(lines)


def markdown(rows: list[Row]) -> str:
    """The scorecard as a Markdown table (every cell whole)."""
    return markdown_table([{"": r.verdict, "claim": f"`{r.id}` {r.claim}", "paper": r.paper,
                            "ours": r.ours or "—", "tolerance": r.tolerance, "measured by": r.parts or "—",
                            "note": r.note} for r in rows])


def csv(rows: list[Row]) -> str:
    return csv_text([r._asdict() for r in rows])


__all__ = ["AGREES", "DISAGREES", "UNJUDGED", "Row", "counts", "csv", "judge", "markdown", "scorecard",
           "text_table"]
