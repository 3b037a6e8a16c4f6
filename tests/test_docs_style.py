"""The manual for a first hour (issue 46 item 7), checked statically: one name for `nht tool new-plugin`; code blocks
that stay within the text column (the site wraps their long lines, docs/stylesheets/extra.css; the README, shown
where that stylesheet is not, keeps its code lines within 100 characters); the lab-notebook pages apart from the
guides in the navigation; a glossary page in it that names the live table's columns. And the API reference's
docstrings (issue 47 item 4): every public function has Google `Args:` and `Returns:` sections, which the site
renders as tables."""

import ast
import importlib
import inspect
import logging
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
OLD_SPELLINGS = "Old spellings"  # the one sentence of docs/guides/run.md that lists the short forms
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
    long = [
        line for line in code_lines((ROOT / "README.md").read_text(encoding="utf-8")) if len(line) > README_CODE_WIDTH
    ]
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
    elsewhere = [
        p for name, pages in sections.items() if name != "Lab notebook" for p in pages if p.startswith("findings/")
    ]
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


# The layers whose public functions carry Google sections (issue 47 item 4), lowest first (tests/test_layout.py).
DOCUMENTED_LAYERS = [
    "base",
    "forecast",
    "engine",
    "models",
    "vision",
    "domains",
    "experiment",
    "measure",
    "results",
    "training",
    "figures",
    "theory",
    "analysis",
    "api",
    "papers",
    "cli",
]
NOT_PARAMETERS = {"self", "cls"}
RETURNS_NOTHING = {None, "None", "NoReturn", "Never", "typing.NoReturn", "Iterator[None]"}  # the last: `with` blocks


def layer_of(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def public_functions(layer: str) -> list:
    """The functions named by the `__all__` of the layer's modules (and by nht_jax's lazy `_EXPORTS`) that are
    defined where they are listed: no classes, no constants, no re-exports; a cached function counts as the
    function it wraps."""
    import nht_jax

    package = ROOT / "nht_jax"
    names = sorted(
        ("nht_jax." + ".".join(p.relative_to(package).with_suffix("").parts)).removesuffix(".__init__")
        for p in package.rglob("*.py")
    )
    found = {}
    for name in [n for n in names if layer_of(n) == layer and not n.endswith("__main__")]:
        module = importlib.import_module(name)
        for listed in getattr(module, "__all__", []):
            function = inspect.unwrap(getattr(module, listed))
            if inspect.isfunction(function) and function.__module__ == name:
                found[f"{name}.{listed}"] = function
    for listed, home in nht_jax._EXPORTS.items():
        function = inspect.unwrap(getattr(importlib.import_module(home), listed))
        if inspect.isfunction(function) and layer_of(function.__module__) == layer:
            found.setdefault(f"{function.__module__}.{function.__name__}", function)
    return sorted(found.items())


def returns_nothing(function) -> bool:
    """True where the return annotation says None, or, with none, where the body holds no `return value` and no
    `yield value` (a context manager's bare `yield` gives nothing; nested functions and lambdas left out)."""
    annotation = inspect.signature(function).return_annotation
    if annotation is not inspect.Signature.empty:
        return annotation in RETURNS_NOTHING
    tree = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    nodes, stack = [], list(ast.iter_child_nodes(tree))
    while stack:
        node = stack.pop()
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            nodes.append(node)
            stack.extend(ast.iter_child_nodes(node))
    return not any(
        isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom))
        and n.value is not None
        and not (isinstance(n.value, ast.Constant) and n.value.value is None)
        for n in nodes
    )


def docstring_problems(function) -> list[str]:
    """What the function's docstring lacks, parsed as the site parses it (griffe, Google style)."""
    import griffe

    text = inspect.getdoc(function) or ""
    logging.getLogger("griffe").setLevel(logging.ERROR)  # "no type for parameter x": the annotation gives it
    sections = griffe.Docstring(text).parse("google")
    kinds = {section.kind.value for section in sections}
    documented = [p.name.lstrip("*") for s in sections if s.kind.value == "parameters" for p in s.value]
    signature = inspect.signature(function).parameters.values()
    wanted = [
        p.name for p in signature if p.name not in NOT_PARAMETERS and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    problems = [f"Args: lacks {name}" for name in wanted if name not in documented]
    problems += [
        f"Args: names {name}, which is no parameter" for name in documented if name not in {p.name for p in signature}
    ]
    problems += [f"Args: names {name} twice" for name in set(documented) if documented.count(name) > 1]
    if not returns_nothing(function) and not kinds & {"returns", "yields"}:
        problems.append("no Returns: (or Yields:) section")
    too_long = [line for line in (function.__doc__ or "").splitlines() if len(line) > 120]
    return problems + [f"a line over 120 characters: {line.strip()[:60]}..." for line in too_long]


@pytest.mark.parametrize("layer", DOCUMENTED_LAYERS)
def test_every_public_function_has_args_and_returns_sections(layer):
    """Google `Args:` naming every parameter (`self`, `cls`, `*args` and `**kwargs` aside) and no other, and
    `Returns:` (or `Yields:`) unless the function returns nothing, on each public function of the layer."""
    problems = {name: found for name, function in public_functions(layer) if (found := docstring_problems(function))}
    assert not problems, f"{len(problems)} functions: " + "; ".join(f"{n}: {', '.join(p)}" for n, p in problems.items())
