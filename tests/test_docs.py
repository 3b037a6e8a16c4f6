"""The README stays an index and the manual (docs/, built by MkDocs from mkdocs.yml) stays whole.

Checked here, statically (no MkDocs needed): the README's length, its two commands, its Python example's imports,
that it carries no dated timings (they live in the lab notebook, docs/findings/timings.md), that no page names a
file outside the repository, that every relative link of the README and of docs/ points at a file that exists
(docs/ pages only into docs/), that the README's anchors into docs/ exist, that the nav lists exactly the pages
under docs/ (the quickstart notebook included: docs/getting-started/quickstart.ipynb is a link to
examples/quickstart.ipynb, rendered by mkdocs-jupyter), that every docs/ page the code names exists, that every
top-level name of the package has an API entry, and that every package layer has an API page. The strict build itself
(`mkdocs build --strict`: rendered links, anchors inside docs/, the API reference from the docstrings) runs in
.ci/run, after the tests: about 15 s, and it needs the `docs` extra."""

import ast
import os
import importlib
import importlib.util
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
MAX_README_LINES = 200
OUTSIDE_NAMES = ("PAPER.md", "shared/")  # files that live beside the repository, not in it
COMMANDS = (
    "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/nht run",
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest",
)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*([^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
NAV_PAGE = re.compile(r"^\s*-\s+(?:[^:\n]+:\s+)?([\w./-]+\.(?:md|ipynb))\s*$", re.MULTILINE)
NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"
NOTEBOOK_PAGE = DOCS / "getting-started" / "quickstart.ipynb"
DOCS_PATH = re.compile(r"\bdocs/[\w./-]+?\.md\b")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
DURATION = re.compile(r"\b\d+(?:\.\d+)?\s*(?:min|s|h)\b")
# top-level names that have no entry of their own on the API pages, each with the reason
UNDOCUMENTED_TOP_LEVEL: dict[str, str] = {}


def markdown_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def site_pages() -> list[Path]:
    """What MkDocs builds pages from: the Markdown pages and the notebooks (mkdocs-jupyter)."""
    return sorted([*DOCS.rglob("*.md"), *DOCS.rglob("*.ipynb")])


def outside_code(text: str) -> str:
    """The text without fenced code blocks (a link-like pattern in code is not a link)."""
    return re.sub(r"```.*?```", "", text, flags=re.DOTALL)


def relative_links(text: str) -> list[str]:
    """Targets of Markdown links and images that point into the repository (not URLs, not same-page anchors)."""
    targets = [m.group(1) for m in LINK.finditer(outside_code(text))]
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def slug(heading: str) -> str:
    """Python-Markdown's default toc slug: ASCII-folded, punctuation dropped, lower case, spaces to hyphens."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """The ids of a page's headings: an explicit `{#id}`, else the slug of the heading's text."""
    found = set()
    for line in outside_code(page.read_text()).splitlines():
        if m := re.match(r"^#{1,6}\s+(.*?)\s*$", line):
            explicit = re.search(r"\{#([\w-]+)\}\s*$", m.group(1))
            found.add(explicit.group(1) if explicit else slug(re.sub(r"`", "", m.group(1))))
    return found


def broken_links(page: Path, inside: Path | None) -> list[str]:
    """Links of `page` whose file does not exist (or, with `inside`, lies outside that folder), and, for links
    into docs/ from outside it, anchors the target page does not have."""
    problems = []
    for target in relative_links(page.read_text()):
        path_part, _, anchor = target.partition("#")
        resolved = Path(os.path.normpath(page.parent / path_part))  # a link inside docs/ stays inside, symlink or not
        if not resolved.exists():
            problems.append(f"{target}: no such file")
        elif inside is not None and inside not in resolved.parents:
            problems.append(f"{target}: outside {inside.name}/")
        elif anchor and resolved.suffix == ".md" and inside is None and anchor not in anchors(resolved):
            problems.append(f"{target}: no heading with anchor #{anchor}")
    return problems


def nav_pages() -> list[str]:
    return NAV_PAGE.findall((ROOT / "mkdocs.yml").read_text())


def test_the_readme_is_an_index_of_at_most_200_lines():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines: move the detail into docs/"


def test_the_readme_keeps_the_two_fresh_clone_commands_verbatim():
    text = README.read_text()
    for command in COMMANDS:
        assert f"    {command}\n" in text, command


@pytest.mark.parametrize(
    "page", [README, ROOT / "mkdocs.yml", *markdown_pages()], ids=lambda p: str(p.relative_to(ROOT))
)
def test_no_page_names_a_file_outside_the_repository(page):
    text = page.read_text()
    assert not [name for name in OUTSIDE_NAMES if name in text], page


def test_every_readme_link_exists_with_its_anchor():
    assert broken_links(README, inside=None) == []


@pytest.mark.parametrize("page", markdown_pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_every_docs_link_points_at_a_docs_file_that_exists(page):
    assert broken_links(page, inside=DOCS) == []


def test_the_readme_python_example_parses_and_its_imports_exist():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert len(blocks) == 1
    for node in ast.walk(ast.parse(blocks[0])):
        if isinstance(node, ast.ImportFrom):
            module = importlib.import_module(node.module)
            assert all(hasattr(module, a.name) for a in node.names), node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                importlib.import_module(alias.name)


def test_the_nav_lists_exactly_the_pages_that_exist():
    listed = nav_pages()
    assert listed, "mkdocs.yml has no nav"
    missing = [p for p in listed if not (DOCS / p).is_file()]
    assert not missing, f"mkdocs.yml lists pages that do not exist: {missing}"
    assert len(listed) == len(set(listed)), "a page is listed twice in the nav"
    unlisted = sorted(str(p.relative_to(DOCS)) for p in site_pages() if str(p.relative_to(DOCS)) not in listed)
    assert not unlisted, f"pages under docs/ that the nav does not list: {unlisted}"


def test_every_package_layer_has_an_api_page_that_renders_it():
    spec = importlib.util.spec_from_file_location("layout", ROOT / "tests" / "test_layout.py")
    layout = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layout)
    LAYERS = layout.LAYERS
    pages = {p: p.read_text() for p in (DOCS / "api").glob("*.md")}
    unrendered = [
        layer
        for layer in LAYERS
        if layer != "cli"
        and not any(re.search(rf"^::: nht_jax\.{layer}\s*$", text, re.MULTILINE) for text in pages.values())
    ]
    assert not unrendered, f"layers without an API page (a `::: nht_jax.<layer>` line in docs/api/): {unrendered}"
    in_nav = set(nav_pages())
    assert all(str(p.relative_to(DOCS)) in in_nav for p in pages)


def test_no_code_text_names_a_file_outside_the_repository():
    """Docstrings, messages and comments of the package, tests, benchmarks and presets point into docs/, not beside
    the repository (what users read in analysis.md or the scorecard comes from these strings)."""
    sources = [
        p
        for folder in ("nht_jax", "tests", "benchmarks", "paper_figs")
        for p in (ROOT / folder).rglob("*")
        if p.suffix in (".py", ".toml", ".sh") and p.name != "test_docs.py"
    ]
    named = [f"{p.relative_to(ROOT)}: {name}" for p in sources for name in OUTSIDE_NAMES if name in p.read_text()]
    assert not named, named


def test_the_readme_carries_no_dated_timings():
    """Wall times depend on the day's machine and load: they are dated rows of docs/findings/timings.md, which the
    README links to, not sentences of the README."""
    text = outside_code(README.read_text())
    assert not DATE.findall(text) and not DURATION.findall(text), (DATE.findall(text), DURATION.findall(text))
    assert "docs/findings/timings.md" in text


def test_the_notebook_page_is_the_quickstart_notebook():
    """Getting started renders examples/quickstart.ipynb itself (a link, so the page and the notebook the tests run
    cannot drift apart)."""
    assert NOTEBOOK_PAGE.is_symlink() and NOTEBOOK_PAGE.resolve() == NOTEBOOK.resolve()
    assert "getting-started/quickstart.ipynb" in nav_pages()


def test_every_docs_page_the_code_names_exists():
    """Docstrings, messages, comments and tests name manual pages by path (`docs/guides/plugins.md`): each exists."""
    sources = [
        p
        for folder in ("nht_jax", "tests", "benchmarks", "paper_figs", "examples")
        for p in (ROOT / folder).rglob("*")
        if p.suffix in (".py", ".toml", ".sh", ".md", ".ipynb") and p.is_file()
    ]
    missing = sorted(
        {
            f"{p.relative_to(ROOT)}: {name}"
            for p in sources
            for name in DOCS_PATH.findall(p.read_text())
            if not (ROOT / name).is_file()
        }
    )
    assert not missing, missing


def test_every_top_level_name_has_an_api_entry():
    """Each name of `nht_jax.__all__` is rendered under its top-level name on an API page (a `heading:
    "nht_jax.NAME"` of a mkdocstrings block), with an example beside it."""
    import nht_jax

    text = "\n".join(p.read_text() for p in (DOCS / "api").glob("*.md"))
    headed = set(re.findall(r'^\s+heading: "nht_jax\.(\w+)"\s*$', text, re.MULTILINE))
    missing = sorted(set(nht_jax.__all__) - headed - set(UNDOCUMENTED_TOP_LEVEL))
    assert not missing, f"top-level names without an API entry (docs/api/*.md): {missing}"
