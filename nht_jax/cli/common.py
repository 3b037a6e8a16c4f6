"""Pieces several `nht` commands share: the folder argument, --allow-import, the preset argument (positional or
--preset), the results summary printed after a run or report, and the line of a stop signal."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from nht_jax.base.errors import ConfigError


def folder_path(text: str) -> Path:
    """A folder given on the command line; an empty one is refused: Path("") is the current folder, where results
    and a .lock would land unasked."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "an empty folder name; give a folder (e.g. runs/out/mine), or '.' for the current one"
        )
    return Path(text)


def folder_argument(
    parser: argparse.ArgumentParser, what: str = "a results folder (what `nht run` or `nht import` wrote)"
) -> None:
    """The DIR positional of the commands that read a results folder."""
    parser.add_argument("dir", type=folder_path, metavar="DIR", help=what)


def allow_import_argument(parser: argparse.ArgumentParser) -> None:
    """--allow-import MODULE: code outside the package that the folder's config.toml names may be imported."""
    parser.add_argument(
        "--allow-import",
        dest="allow_import",
        action="append",
        default=[],
        metavar="MODULE",
        help="import this module (or package.module:ATTR) if the folder's config.toml names it: "
        "opening a folder imports no other code (docs/guides/plugins.md; repeatable)",
    )


def partial_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """--partial of the commands that read a results folder: an unfinished sweep read as far as it has logged."""
    parser.add_argument(
        "--partial",
        action="store_true",
        help=f"an unfinished sweep's folder (stopped before its end: a checkpoint, no results yet): "
        f"{what} what it has logged so far, marked as partial (docs/guides/run.md#unfinished-folders)",
    )


def figure_output_arguments(parser: argparse.ArgumentParser, captions: bool = False) -> None:
    """--format and --dpi of a command that draws figures (`nht_jax.figures.style.FigureOutput`); with `captions`,
    --captions (`nht report`: trajectories.png, whose legend explains it, with a caption too)."""
    parser.add_argument(
        "--format",
        metavar="FORMATS",
        help="figure formats, comma separated: png, pdf, svg (default png; e.g. --format png,pdf,svg)",
    )
    parser.add_argument(
        "--dpi", type=int, metavar="N", help="resolution of raster figures in dots per inch (default 120)"
    )
    if captions:
        parser.add_argument(
            "--captions",
            action="store_true",
            help="a caption under trajectories.png too (its legend explains it without one)",
        )


def figure_output_of(args: argparse.Namespace):
    """The figure-output setting of a figure command's --format and --dpi (a bad value: ConfigError)."""
    from nht_jax.figures.style import figure_output

    return figure_output(args.format, args.dpi, getattr(args, "captions", False))


def preset_arguments(parser: argparse.ArgumentParser, default: str | None) -> None:
    """PRESET as the first argument, or as --preset NAME (the spelling `nht tool bench` uses): either one."""
    shown = f" (default: {default})" if default else ""
    parser.add_argument(
        "preset", nargs="?", metavar="PRESET", help=f"preset name (see `nht presets`) or a .toml file{shown}"
    )
    parser.add_argument(
        "--preset",
        dest="preset_option",
        metavar="PRESET",
        help="the same as the first argument, for those who type it as an option",
    )
    parser.set_defaults(preset_default=default)


def chosen_preset(args: argparse.Namespace) -> str:
    """The preset of `preset_arguments`: the positional, else --preset, else the command's default; both given and
    different, or neither without a default: a ConfigError."""
    positional, option = getattr(args, "preset", None), getattr(args, "preset_option", None)
    if positional and option and positional != option:
        raise ConfigError(f"two presets given, '{positional}' and --preset '{option}': give one")
    chosen = positional or option or getattr(args, "preset_default", None)
    if not chosen:
        raise ConfigError(
            f"name a preset (`nht presets` lists them) or a .toml file: "
            f"nht {getattr(args, 'command_spelling', 'run')} PRESET"
        )
    return chosen


def print_summary(res, figures: bool = True) -> None:
    """What `nht run` and `nht report` print: the folder, the regimes counted, the figures drawn (figures=False:
    `nht run --no-figures`, which drew none)."""
    from nht_jax.measure.summaries import regime_counts

    counts = regime_counts(res.summary)
    print(f"results: {res.path}")
    print("regimes: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v))
    if not figures:
        print(f"figures: none drawn (--no-figures); `nht report {shlex.quote(str(res.path))}` draws them")
        return
    from nht_jax.figures.folder import figure_names

    print("figures: " + ", ".join(str(res.path / name) for name in figure_names(res)))


def signal_exit(signum: int, when: str) -> int:
    """The line (process 0's alone of several) and exit code (128 + the signal) of a stop signal that came when there
    was nothing left to stop."""
    from nht_jax.training.launch import speaks
    from nht_jax.training.signals import exit_code, signal_name

    if speaks():
        print(f"nht: {signal_name(signum)} received {when}; stopped", file=sys.stderr, flush=True)
    return exit_code(signum)


__all__ = []
