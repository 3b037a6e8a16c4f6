"""The commands are listed in four places that must not drift apart: the parser (`nht_jax.cli.parser`), the CLI's
docstring, the commands table of the usage page (docs/guides/run.md, with each command's options) and the README's
Commands table. A command (or an option) one of them gains and another lacks fails here, naming it."""

import argparse
import re
from pathlib import Path

from nht_jax import cli
from nht_jax.cli.registry import aliases, parsers

ROOT = Path(__file__).resolve().parents[1]
USAGE = ROOT / "docs" / "guides" / "run.md"
README = ROOT / "README.md"


def parser_commands() -> dict[str, set[str]]:
    """{spelling: its long options} of every command the parser reaches (groups themselves left out)."""
    found = {}
    for path, p in parsers(cli.parser()):
        if path and p.get_default("command_spec") is not None:
            found[" ".join(path)] = {
                o
                for a in p._actions
                if not isinstance(a, argparse._HelpAction)
                for o in a.option_strings
                if o.startswith("--")
            }
    return found


def group_names() -> set[str]:
    return {g.name for g in cli.GROUPS if g.name}


def spelling(text: str) -> str:
    """The command a cell or line names: `nht paper figs [--quick]` → 'paper figs', `nht run [PRESET]` → 'run'
    (a group word takes the next word with it)."""
    words = re.findall(r"[^\s`]+", text.split("nht", 1)[1])
    first = words[0]
    return f"{first} {words[1]}" if first in group_names() and len(words) > 1 else first


def table_rows(text: str, heading: str) -> list[list[str]]:
    """The cells of the rows of the first table after `heading` (header and rule left out)."""
    section = text.split(heading, 1)[1]
    block = []
    for line in section.splitlines():
        if line.startswith("|"):
            block.append(line)
        elif block:
            break
    assert block, f"no table after {heading!r}"
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]] for line in block[2:]]


def usage_commands() -> dict[str, set[str]]:
    rows = table_rows(USAGE.read_text(), "## The commands")
    return {spelling(row[0]): set(re.findall(r"--[a-z][a-z-]*", row[1])) for row in rows}


def docstring_commands() -> list[str]:
    return [spelling(line) for line in cli.__doc__.splitlines() if re.match(r"^ {4}nht \S", line)]


def readme_commands() -> list[str]:
    return [spelling(row[0]) for row in table_rows(README.read_text(), "## Commands")]


def test_the_usage_page_lists_the_parser_s_commands_and_their_options():
    assert usage_commands() == parser_commands()


def test_the_cli_docstring_lists_the_parser_s_commands():
    listed = docstring_commands()
    assert len(listed) == len(set(listed)) and set(listed) == set(parser_commands())


def test_the_readme_lists_the_parser_s_commands():
    listed = readme_commands()
    assert len(listed) == len(set(listed)) and set(listed) == set(parser_commands())


def test_the_usage_page_names_every_old_spelling():
    paragraph = USAGE.read_text().split("**Old spellings", 1)[1].split("\n\n", 1)[0]
    assert {name for name in aliases(cli.GROUPS)} <= set(re.findall(r"`nht ([a-z-]+)`", paragraph))


def test_a_command_missing_from_one_place_is_seen():
    """The readers themselves: a row the parser lacks, and a group word, are read as commands."""
    assert spelling("`nht paper figs [--quick]`") == "paper figs"
    assert spelling("    nht tool find-lambda     the boundaries") == "tool find-lambda"
    assert spelling("`nht theory bound DIR`") == "theory"  # an unknown group: a command the parser lacks
    assert "theory" not in parser_commands()
