"""The manual for a first hour (issue 46 item 7), checked statically: one name for `nht tool new-plugin`; code blocks
that stay within the text column (the site wraps their long lines, docs/stylesheets/extra.css; the README, shown
where that stylesheet is not, keeps its code lines within 100 characters); the lab-notebook pages apart from the
guides in the navigation; a glossary page in it that names the live table's columns."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
OLD_SPELLINGS = "Old spellings."  # the one sentence of docs/guides/run.md that lists the short forms
README_CODE_WIDTH = 100


def code_lines(text: str) -> list[str]:
    """The lines inside the fenced code blocks of a Markdown text."""
    lines, inside = [], False
    for line in text.splitlines():
        if re.match(r"\s*(```|~~~)", line):
            inside = not inside
        elif inside:
            lines.append(line)
    return lines


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_new_plugin_has_one_name(page):
    paragraphs = page.read_text(encoding="utf-8").split("\n\n")
    bare = [p for p in paragraphs if re.search(r"nht new-plugin", p) and OLD_SPELLINGS not in p]
    assert not bare, f"{page.name}: write `nht tool new-plugin`, not `nht new-plugin`: {bare[0][:120]!r}"


def test_the_sites_code_blocks_wrap_within_the_column():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    sheets = re.findall(r"^extra_css:\n((?:\s+- .+\n)+)", config, flags=re.M)
    assert sheets, "mkdocs.yml names no extra_css"
    css = "".join((DOCS / line.split("- ", 1)[1].strip()).read_text() for line in sheets[0].splitlines())
    rule = re.search(r"\.md-typeset pre > code\s*\{([^}]*)\}", css)
    assert rule and "white-space: pre-wrap" in rule.group(1)


def test_the_readmes_code_lines_fit_the_column():
    long = [line for line in code_lines((ROOT / "README.md").read_text(encoding="utf-8"))
            if len(line) > README_CODE_WIDTH]
    assert not long, long


def nav_sections() -> dict[str, list[str]]:
    """{top-level nav section: the pages listed under it}, from mkdocs.yml."""
    sections, current = {}, None
    for line in (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:\n", 1)[1].splitlines():
        top = re.match(r"^  - ([^:]+):\s*(\S*)$", line)
        if top:
            current = top.group(1)
            sections[current] = [top.group(2)] if top.group(2) else []
        elif current and (page := re.search(r"(\S+\.(?:md|ipynb))\s*$", line)):
            sections[current].append(page.group(1))
    return sections


def test_the_lab_notebook_stands_apart_from_the_guides_in_the_navigation():
    sections = nav_sections()
    notebook = sections["Lab notebook"]
    assert notebook and all(p.startswith("findings/") for p in notebook)
    elsewhere = [p for name, pages in sections.items() if name != "Lab notebook" for p in pages
                 if p.startswith("findings/")]
    assert not elsewhere, elsewhere
    assert all(p.startswith("guides/") for p in sections["Guides"])


def test_the_glossary_is_in_the_navigation_and_names_the_live_tables_columns():
    assert "glossary.md" in sections_pages(nav_sections())
    text = (DOCS / "glossary.md").read_text(encoding="utf-8")
    for column in ("T_hat", "T_law", "V_post", "v_post_source", "state"):
        assert f"| `{column}`" in text, column
    assert "glossary.md" in (DOCS / "guides" / "live.md").read_text(encoding="utf-8")


def sections_pages(sections: dict) -> list[str]:
    return [p for pages in sections.values() for p in pages]
