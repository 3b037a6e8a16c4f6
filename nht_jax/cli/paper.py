"""`nht paper …`: the papers' figures and scorecard, and the theory's bounds (figs, reproduce, verify-bounds,
bound). Each also answers to its bare name (`nht reproduce` = `nht paper reproduce`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from nht_jax.cli.common import (
    allow_import_argument,
    figure_output_arguments,
    figure_output_of,
    folder_argument,
    folder_path,
)
from nht_jax.cli.registry import Command, Group

PARTS_HELP = (
    "default, toy-linear, verify-bounds, border-digits, companion-exact-cpu, sparse-parity, phase-lambda-eta, "
    "digits-grokking, critical-norm, interventions, norm-clamp, logit-temperature, critical-norm-mse, "
    "logit-temperature-mse, critical-norm-ce, logit-temperature-ce, their-data, critical-norm-p59, clamp-p59, "
    "clamp-p59-t500, clamp-p59-abs, batch-noise"
)
"""The parts of `nht paper reproduce` (nht_jax.papers.reproduce.PARTS; a test checks that the help names each)."""


def figs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=folder_path, default=Path("runs/out/paper_figs"), help="folder of the PNGs")
    parser.add_argument("--quick", action="store_true", help="train missing results at a smaller CPU scale (minutes)")
    parser.add_argument(
        "--results",
        type=folder_path,
        default=Path("runs/out"),
        help="where results folders are looked for and made (<preset>, <preset>-reduced, -quick)",
    )
    parser.add_argument("--only", action="append", metavar="FIG", help="fig1 … fig5 or delay (repeatable)")
    parser.add_argument("--no-run", action="store_true", help="never train: say which command makes missing results")
    figure_output_arguments(parser)


def figs(args: argparse.Namespace) -> int:
    """`nht paper figs`: the papers' figures (`nht_jax.papers.paper_figures`).

    Args:
        args: the parsed command line.

    Returns:
        The exit code.
    """
    from nht_jax.base.atomic import remove_stale_temporaries
    from nht_jax.papers.paper_figures import check_figures, make_all
    from nht_jax.figures.style import output_names, writing
    from nht_jax.results import lock

    check_figures(args.only)  # a bad --only makes no folder
    output = figure_output_of(args)  # a bad --format or --dpi makes no folder either
    with lock.hold(args.out, "nht paper figs"), writing(output):  # busy or read-only: one line saying what to do
        remove_stale_temporaries(args.out)  # a killed `nht paper figs`'s half-written PNGs
        outcomes = make_all(args.out, quick=args.quick, root=args.results, allow_run=not args.no_run, only=args.only)
        written = [n for o in outcomes if not o.failed for n in output_names([o.png])]
    print(f"written: {', '.join(written)}")
    return 1 if any(o.failed for o in outcomes) else 0


def reproduce_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=folder_path,
        default=Path("runs/out/reproduce"),
        help="folder of the parts' results and the report (finished parts are reused)",
    )
    parser.add_argument("--quick", action="store_true", help="smaller grids (minutes; many claims unjudged)")
    parser.add_argument(
        "--only",
        nargs="+",
        action="extend",
        metavar="PART",
        help=f"run only these parts and the parts they read ({PARTS_HELP})",
    )


def reproduce(args: argparse.Namespace) -> int:
    """`nht paper reproduce`: the papers' claims judged (`nht_jax.papers.reproduce`).

    Args:
        args: the parsed command line.

    Returns:
        The exit code: 0 when every part ran (or was reused), else 1.
    """
    from nht_jax.papers.reproduce import reproduce as reproduce_parts

    _, outcomes = reproduce_parts(args.out, quick=args.quick, only=args.only)
    return 0 if all(o.ok for o in outcomes) else 1


def verify_bounds_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="fewer Monte-Carlo seeds for the noisy model")


def verify_bounds(args: argparse.Namespace) -> int:
    from nht_jax.theory.verify import main as verify_main

    return verify_main(quick=args.quick)


def bound_arguments(parser: argparse.ArgumentParser) -> None:
    folder_argument(parser)
    allow_import_argument(parser)


def bound(args: argparse.Namespace) -> None:
    """`nht paper bound`: the Lyapunov bounds checked on a results folder's runs (`nht_jax.theory.recorded`).

    Args:
        args: the parsed command line.
    """
    from nht_jax.theory.recorded import bound_report

    _, text = bound_report(args.dir)
    print(text + f"written: {args.dir / 'bound_table.csv'}, {args.dir / 'bound_report.md'}, {args.dir / 'bound.png'}")


GROUP = Group(
    "paper",
    "the papers' figures and scorecard, and the theory's bounds",
    (
        Command(
            "figs",
            "the paper's figures (docs/science.md §6) as PNGs in one folder, training the presets they need "
            "when their results are absent",
            figs_arguments,
            figs,
            compiles=True,
        ),
        Command(
            "reproduce",
            "the papers' experiments at CPU scale: every claim next to our number ([OK] / [!!] / [--]), "
            "reproduce.md and scorecard.csv",
            reproduce_arguments,
            reproduce,
            compiles=True,
        ),
        Command(
            "verify-bounds",
            "check every bound on the exact toy models ([OK] / [!!])",
            verify_bounds_arguments,
            verify_bounds,
            compiles=True,
        ),
        Command("bound", "check the paper's bounds along the runs of a results directory", bound_arguments, bound),
    ),
)

__all__ = ["bound", "figs", "reproduce"]
