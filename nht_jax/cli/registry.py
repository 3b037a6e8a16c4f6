"""The commands of `nht` as data: each group module (`everyday`, `paper`, `tool`) declares a `Group` of `Command`s,
each naming its arguments (a function adding them to its parser) and its handler (a function of the parsed
arguments returning the exit code). `build_parser` turns the groups into one argparse tree; the handler reached is
`args.command_spec` (a dispatch table, no if/elif on names). A command of a named group keeps its bare name as an
alias at the top level (`nht reproduce` = `nht paper reproduce`): `expand_alias` rewrites the command line before
parsing, so an alias parses, behaves and exits exactly as the grouped spelling."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """One `nht` command.

    name: its word (`reproduce`); help: one line for `nht --help`; arguments(parser) adds its arguments (each with
    help text); handler(args) does the work and returns the exit code (None: 0); compiles: it trains or evaluates,
    so it uses the compile cache (docs/guides/execution.md#compile-cache); config_overrides: its --set takes configuration
    KEY=VALUE, so a stray `--steps 100` is answered with `--set train.steps=100` (`nht_jax.cli.hints`)."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    handler: Callable[[argparse.Namespace], int | None]
    compiles: bool = False
    config_overrides: bool = False


@dataclass(frozen=True)
class Group:
    """Commands under one word (`nht paper …`); the group named "" holds the top-level commands."""

    name: str
    help: str
    commands: tuple[Command, ...]

    def spelling(self, command: Command) -> str:
        """How a user types it after `nht`: 'run', 'paper reproduce'."""
        return f"{self.name} {command.name}" if self.name else command.name


def spellings(groups: tuple[Group, ...]) -> dict[str, Command]:
    """Every command by its spelling, in the groups' order.

    Args:
        groups: the command groups.

    Returns:
        {spelling: Command}.
    """
    return {group.spelling(c): c for group in groups for c in group.commands}


def aliases(groups: tuple[Group, ...]) -> dict[str, tuple[str, str]]:
    """The top-level aliases: a grouped command's bare name → (group, name), e.g. 'bench' → ('tool', 'bench').

    Args:
        groups: the command groups.

    Returns:
        {alias: (group, name)}.
    """
    top = {c.name for group in groups if not group.name for c in group.commands}
    found = {c.name: (group.name, c.name) for group in groups if group.name for c in group.commands}
    clashes = (top | {g.name for g in groups}) & set(found)
    assert not clashes, f"an alias would hide a command or group: {sorted(clashes)}"
    return found


def expand_alias(argv: list[str], groups: tuple[Group, ...]) -> list[str]:
    """The command line with a top-level alias as its grouped spelling (`reproduce --quick` → `paper reproduce
    --quick`); any other command line unchanged. The command is the first word: `nht` has no options of its own."""
    if argv and argv[0] in (found := aliases(groups)):
        return [*found[argv[0]], *argv[1:]]
    return list(argv)


def add_command(sub: argparse._SubParsersAction, command: Command, spelling: str) -> argparse.ArgumentParser:
    """The command's parser; its defaults carry the command, its parser and its spelling to the handler."""
    parser = sub.add_parser(command.name, help=command.help, description=command.help)
    command.arguments(parser)
    parser.set_defaults(command_spec=command, command_parser=parser, command_spelling=spelling)
    return parser


def build_parser(groups: tuple[Group, ...], description: str, epilog: str) -> argparse.ArgumentParser:
    """The argparse tree: top-level commands, then one sub-tree per named group."""
    parser = argparse.ArgumentParser(
        prog="nht", description=description, epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", help="what to do (without one: `nht run`, the default preset)"
    )
    for group in groups:
        if not group.name:
            for command in group.commands:
                add_command(sub, command, group.spelling(command))
            continue
        names = ", ".join(c.name for c in group.commands)
        branch = sub.add_parser(group.name, help=f"{group.help}: {names}", description=group.help)
        inner = branch.add_subparsers(dest="subcommand", metavar="COMMAND", required=True, help=f"one of: {names}")
        for command in group.commands:
            add_command(inner, command, group.spelling(command))
    return parser


def parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(spelling words, parser) of every parser in the tree, the root first: for tests and the docs' drift check."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from parsers(child, (*path, name))


__all__ = ["aliases", "spellings"]
