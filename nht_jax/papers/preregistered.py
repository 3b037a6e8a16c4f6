"""The preregistered claims: every scorecard row's kind, tolerance, reason, seeds and alternative definitions, in
one reviewed table shipped with the package (preregistered.toml beside this file; its header names the fields).

The rules themselves live in nht_jax.papers.claims (they judge numbers); this table is what a referee reviews: for
each claim the tolerance's text (which must be the rule's, `check`), why and when it was set, the fewest seeds a
verdict may rest on, the kind of comparison (prediction, definition check, different definition, different
experiment, re-analysis, not checked here) and the definitions under which the verdict is recomputed.
docs/papers/claims.md is generated from it (`page`; tests/papers/test_preregistered.py checks that the page is
current), and says what each kind means."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path
from typing import NamedTuple

from nht_jax.base.errors import ConfigError

TABLE = Path(__file__).with_name("preregistered.toml")
DOCS_PAGE = "docs/papers/claims.md"
KINDS = (
    "prediction",
    "definition check",
    "different definition",
    "different experiment",
    "re-analysis",
    "not checked here",
)
FITTED_MIN_SEEDS = 5
"""The fewest seeds a claim about a fitted exponent or slope may rest on (unless its experiment is deterministic)."""
FIELDS = ("id", "kind", "measure", "reads", "tolerance", "why", "set", "min_seeds", "seeds_why", "alternatives")


class Preregistered(NamedTuple):
    """One row of the table (fields: preregistered.toml's header)."""

    id: str
    kind: str
    measure: str
    reads: tuple[str, ...]
    tolerance: str
    why: str
    set: str
    min_seeds: int
    seeds_why: str
    alternatives: tuple[str, ...]


def parse(text: str, source: str = "preregistered.toml") -> dict[str, Preregistered]:
    """{id: row} of a table's text; a row with a missing or unknown field, or an id used twice, is a ConfigError."""
    try:
        rows = tomllib.loads(text).get("claim", [])
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{source}: {error}") from None
    table: dict[str, Preregistered] = {}
    for i, row in enumerate(rows):
        missing, unknown = set(FIELDS) - set(row), set(row) - set(FIELDS)
        if missing or unknown:
            raise ConfigError(
                f"{source}: claim {row.get('id', f'#{i + 1}')}: "
                + "; ".join(
                    filter(
                        None,
                        [
                            missing and f"missing {', '.join(sorted(missing))}",
                            unknown and f"unknown {', '.join(sorted(unknown))}",
                        ],
                    )
                )
            )
        if row["id"] in table:
            raise ConfigError(f"{source}: claim id {row['id']} used twice")
        table[row["id"]] = Preregistered(
            **{**row, "reads": tuple(row["reads"]), "alternatives": tuple(row["alternatives"])}
        )
    return table


@functools.cache
def load() -> dict[str, Preregistered]:
    """The shipped table.

    Returns:
        {claim id: Preregistered}.
    """
    return parse(TABLE.read_text(encoding="utf-8"), str(TABLE))


def problems(claims, table: dict[str, Preregistered]) -> list[str]:
    """Every way `table` and `claims` (nht_jax.papers.claims.Claim) disagree: a claim without a row, a row no claim
    uses, a tolerance that is not the rule's text, reads naming other parts than the claim's, an unknown kind, a
    claim about a fit on fewer than FITTED_MIN_SEEDS seeds without a deterministic reason, an alternative that is
    not a definition the papers leave open."""
    from nht_jax.analysis.sensitivity import parse_alternative

    found = []
    ids = {c.id for c in claims}
    found += [f"claim {c.id} has no row in the preregistered table" for c in claims if c.id not in table]
    found += [f"row {i} of the preregistered table is no claim's" for i in table if i not in ids]
    for c in claims:
        row = table.get(c.id)
        if row is None:
            continue
        rule = c.rule.text if c.rule else ""
        if row.tolerance != rule:
            found.append(f"claim {c.id}: its rule is '{rule}', the preregistered tolerance '{row.tolerance}'")
        if row.kind not in KINDS:
            found.append(f"claim {c.id}: kind '{row.kind}' is none of {', '.join(KINDS)}")
        if (row.kind == "not checked here") != (not c.parts):
            found.append(f"claim {c.id}: kind '{row.kind}' but it is {'not ' if not c.parts else ''}checked here")
        read_parts = {r.split("/", 1)[0] for r in row.reads}
        if read_parts != set(c.parts):
            found.append(
                f"claim {c.id}: reads {', '.join(row.reads) or 'nothing'}, but it measures parts "
                f"{', '.join(c.parts) or 'none'}"
            )
        fitted = "fitted exponent or slope" in row.seeds_why
        if fitted and row.min_seeds < FITTED_MIN_SEEDS:
            found.append(f"claim {c.id}: a fitted exponent or slope on {row.min_seeds} seed(s) < {FITTED_MIN_SEEDS}")
        for text in row.alternatives:
            try:
                parse_alternative(text)
            except ConfigError as error:
                found.append(f"claim {c.id}: {error}")
    return found


def check(claims, table: dict[str, Preregistered] | None = None) -> None:
    """ConfigError listing every problem (`problems`) of the table against the claims.

    Args:
        claims: the claims.
        table: the preregistered table (None: the shipped one).
    """
    found = problems(claims, load() if table is None else table)
    if found:
        raise ConfigError(
            "the preregistered table (nht_jax/papers/preregistered.toml) does not match the claims: " + "; ".join(found)
        )


def cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def page(claims, table: dict[str, Preregistered] | None = None) -> str:
    """docs/papers/claims.md: the table with each claim's paper number and source, generated.

    Args:
        claims: the claims.
        table: the preregistered table (None: the shipped one).

    Returns:
        The page's Markdown.
    """
    table = load() if table is None else table
    lines = [
        "# The preregistered claims",
        "",
        "<!-- Generated from nht_jax/papers/preregistered.toml by nht_jax.papers.preregistered.page; do not edit "
        "by hand: tests/papers/test_preregistered.py says how to regenerate it. -->",
        "",
        "Every claim of the [scorecard](reproduce.md) with its tolerance, why that tolerance, when it was set, "
        "the fewest seeds its verdict may rest on, and the definitions the papers leave open under which it is "
        "recomputed. The table is `nht_jax/papers/preregistered.toml` (its header names the fields); a test "
        "fails when a claim's rule and its row disagree.",
        "",
        "**Kinds and verdict words.** *prediction*: `[OK]` or `[!!]` (a disagreement with the paper). "
        "*definition check*: true by construction, `[≡]` when it holds. *different definition* / *different "
        "experiment*: the paper's number belongs to another definition or another experiment than ours, "
        "`[≠]` when ours misses it. *re-analysis*: the paper's number re-derived from the authors' own published "
        "data with the paper's estimator, `[OK]` or `[!!]` (the paper and its data disagree). `[~]` *fragile*: the verdict flips under one of the row's alternative "
        "definitions. `[--]`: not judged (not checked here, too few seeds, n.a.; the note says why).",
        "",
        "**Seeds.** A verdict never rests on fewer seeds than `min seeds`; a claim about a fitted exponent or "
        f"slope needs ≥ {FITTED_MIN_SEEDS} (a seed bootstrap over n seeds has C(2n−1, n) distinct "
        "resamples: 3 for 2 seeds, 126 for 5; an interval with fewer than 40 is shown as n.a.).",
        "",
        "| claim | kind | paper (where) | our measure (reads) | tolerance | why | set | min seeds | alternatives |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in claims:
        r = table[c.id]
        lines.append(
            "| "
            + " | ".join(
                cell(x)
                for x in (
                    f"`{c.id}` {c.text}",
                    r.kind,
                    f"{c.paper} ({c.source})",
                    f"{r.measure} (" + (", ".join(f"`{x}`" for x in r.reads) or "—") + ")",
                    r.tolerance or "—",
                    r.why,
                    r.set,
                    f"{r.min_seeds}: {r.seeds_why}",
                    ", ".join(f"`{a}`" for a in r.alternatives) or "—",
                )
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


def write_page(root: Path | str = ".") -> Path:
    """Write `page` of the shipped claims to ROOT/docs/papers/claims.md (atomically)."""
    from nht_jax.base.atomic import atomic_write_text
    from nht_jax.papers.claims import CLAIMS

    path = Path(root) / DOCS_PAGE
    atomic_write_text(path, page(CLAIMS))
    return path


__all__ = ["Preregistered", "check", "load", "page"]
