"""The `nht` command. The everyday commands sit at the top level; the papers' and the tools' under a group word:

    nht presets              the named presets, shipped and from installed packages, with their scales
    nht run                  train a grid into a results folder (resumes after a kill), then draw its figures
    nht merge                a grid's finished shards (`nht run … --shards K --shard I`) as one results folder
    nht submit               a grid's shards as a SLURM job array (submitit), resubmitted where they fail, merged
    nht report               redraw the figures of a results folder
    nht analyze              fits, regime boundaries, P1–P6, separation score, layer order, delay predictor
    nht watch                the live table of a sweep training elsewhere, followed to its end
    nht export               a results folder's runs as TensorBoard event files or offline W&B runs
    nht import               another codebase's logs (CSV, JSON lines, TensorBoard) as a results folder
    nht paper figs           the papers' figures, training what is missing
    nht paper reproduce      every claim of the papers next to our number: the scorecard
    nht paper verify-bounds  the theory's claims on exactly solvable toy models
    nht paper bound          the theory's bounds checked along a recorded sweep
    nht tool bench           time one grid four ways, PyTorch included (the harness of a source checkout)
    nht tool cache           the compile cache: its folder, programs and size
    nht tool find-lambda     the regime boundaries in λ by rounds of small sweeps
    nht tool new-plugin      a plugin package skeleton (a model, a preset, entry points) that installs and runs

`nht` alone is `nht run`; the old spellings (until `ALIASES_UNTIL`) and the exit codes: docs/guides/run.md."""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import errno
import os
import signal
import sys
from pathlib import Path

from nht_jax.base.errors import ConfigError
from nht_jax.cli import everyday, paper, tool
from nht_jax.cli.hints import wrong_form
from nht_jax.cli.registry import aliases, build_parser, expand_alias
from nht_jax.training.signals import Stopped

GROUPS = (everyday.GROUP, paper.GROUP, tool.GROUP)
"""Every command, by group: the top-level ones first."""


ALIASES_UNTIL = "0.2"
"""The release that drops the old top-level spellings of grouped commands (`nht reproduce` for `nht paper
reproduce`, …): until then each works and prints `deprecation`'s line."""


def deprecation(alias: str) -> str:
    """The line an old spelling prints: what to type instead, and until when the old one works."""
    spelling = " ".join(aliases(GROUPS)[alias])
    return (
        f"`nht {alias}` is the old spelling of `nht {spelling}`; it works until nht_jax {ALIASES_UNTIL}: "
        f"type `nht {spelling}`"
    )


def parser() -> argparse.ArgumentParser:
    """The whole argparse tree of `nht` (`registry.build_parser`).

    Returns:
        The ArgumentParser.
    """
    old = "".join(f"\n  nht {name:<14} = nht {' '.join(spelling)}" for name, spelling in aliases(GROUPS).items())
    return build_parser(
        GROUPS,
        "Vectorised norm-hierarchy-transition sweeps in JAX.",
        f"old spellings, working until nht_jax {ALIASES_UNTIL} (each prints a note saying so):{old}"
        f"\n`nht COMMAND --help` lists a command's options.",
    )


def main(argv: list[str] | None = None) -> int:
    """The `nht` command: parse the command line and run its command, each call in its own context (what
    --allow-import allows ends with it).

    Args:
        argv: the arguments (None: sys.argv's).

    Returns:
        The exit code.
    """
    from nht_jax.training.launch import as_process

    # several processes: a failed one ends at once, the others see it gone; each call in its own context (what
    # --allow-import allows ends with it)
    return as_process(lambda: contextvars.copy_context().run(_main, argv))


ENVIRONMENT_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO}
)
"""OSErrors that a full disk, a quota or permissions cause anywhere (a log line appended, a folder made): shown as
one line, exit code 2, like a ConfigError (atomic writes already raise `nht_jax.base.atomic.WriteError`)."""


def environment_error(e: OSError, folder: Path | None = None) -> str:
    """One line for an OSError of the machine rather than of nht: the file (or else the command's folder) it
    concerns, the free space there, and what to do."""
    from nht_jax.base.atomic import free_space_text

    where = Path(e.filename) if e.filename else folder
    if e.errno in (errno.EACCES, errno.EPERM) and e.filename and where.is_file() and not os.access(where, os.R_OK):
        return (
            f"cannot read '{where}': {e.strerror or e}. Give yourself read access (chmod u+r, or ask its "
            f"owner), then run the same command again."
        )
    what = f"cannot write '{where}'" if e.filename else (f"cannot write into '{where}'" if where else "cannot write")
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):  # no question of space
        return f"{what}: {e.strerror or e}. Make it writable, or write elsewhere, then run the same command again."
    space = f" ({free_space_text(where if where.is_dir() else where.parent)})" if where else ""
    return (
        f"{what}: {e.strerror or e}{space}. Free some space or fix the folder's permissions, then run the same "
        f"command again."
    )


def _folder_of(args: argparse.Namespace) -> Path | None:
    """The folder a command writes into, as far as its arguments say (`nht run` without --out: unknown here)."""
    return getattr(args, "out", None) or getattr(args, "dir", None)


def _enable_compile_cache() -> None:
    """JAX's persistent compilation cache for this command (`nht_jax.base.compile_cache`); an unwritable folder
    is one warning line, and the command runs without it."""
    from nht_jax.base import compile_cache

    enabled = compile_cache.enable()
    if enabled.problem:
        print(f"nht: warning: {enabled.problem}", file=sys.stderr, flush=True)
    if enabled.removed:
        print(
            f"nht: note: removed {len(enabled.removed)} compile-cache entries that were cut short (a full disk or "
            f"a killed process) from '{enabled.folder}'; their programs are compiled again",
            file=sys.stderr,
            flush=True,
        )


def parse(argv: list[str] | None) -> argparse.Namespace | int:
    """The parsed command line (an alias as its grouped spelling; nothing at all as `run`), or the exit code 2 of
    a setting given as an option (`hints.wrong_form`, one line). Any other unknown argument: argparse's usage error
    (SystemExit 2). `args.argv` keeps the command line as given (`nht run --processes N` passes it on).

    Args:
        argv: the arguments (None: sys.argv's).

    Returns:
        The Namespace, or the exit code 2.
    """
    given = list(sys.argv[1:] if argv is None else argv)
    command_line = expand_alias(given, GROUPS) or ["run"]
    if given and given[0] in aliases(GROUPS):
        print(f"nht: note: {deprecation(given[0])}", file=sys.stderr, flush=True)
    top = parser()
    args, extras = top.parse_known_args(command_line)
    spec = getattr(args, "command_spec", None)
    if spec is None:
        top.error(f"unrecognized arguments: {' '.join(extras or command_line)}")
    if extras:
        hint = wrong_form(args.command_spelling, command_line, extras) if spec.config_overrides else None
        if hint:
            print(f"nht: error: {hint}", file=sys.stderr)
            return 2
        args.command_parser.error(f"unrecognized arguments: {' '.join(extras)}")
    args.argv = argv
    return args


def _main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if isinstance(args, int):
        return args
    try:
        if getattr(args, "allow_import", None):
            from nht_jax.base import plugins

            plugins.allow(args.allow_import)  # for this command (`main` runs it in its own context)
        if args.command_spec.compiles:  # before anything compiles; the other commands import no JAX to compile
            _enable_compile_cache()
        return args.command_spec.handler(args) or 0
    except ConfigError as e:
        print(f"nht: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `nht presets | head`: the reader has gone; nothing more to say, and no traceback
        quiet_stdout()
        return 128 + signal.SIGPIPE
    except OSError as e:
        if e.errno not in ENVIRONMENT_ERRNOS:
            raise
        print(f"nht: error: {environment_error(e, _folder_of(args))}", file=sys.stderr)
        return 2
    except Stopped as e:  # SIGINT, SIGTERM or SIGHUP under `nht run`: the training said where it stopped
        from nht_jax.training.launch import speaks

        if speaks():  # several processes: process 0 says it for all
            print(f"nht: {e.text}", file=sys.stderr, flush=True)
        return e.exit_code
    except KeyboardInterrupt:
        print("\nnht: interrupted; the last checkpoint is kept: run the same command again to resume.", file=sys.stderr)
        return 130


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's flush at exit does not fail on the closed pipe again."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


__all__ = ["main", "parse", "parser"]
