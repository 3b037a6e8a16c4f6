"""The `nht` command: presets, run, report, analyze, bench, bound, verify-bounds, figs, reproduce."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nht_jax.base.errors import ConfigError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nht", description="Vectorised norm-hierarchy-transition sweeps in JAX.")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("presets", help="list the named presets shipped with the package")
    run = sub.add_parser("run", help="train a grid and write a results directory")
    run.add_argument("preset", nargs="?", default="default", help="preset name (see `nht presets`) or a .toml file")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                     help="override one setting, e.g. --set train.steps=2000 --set 'grid.seed=[0,1,2]'")
    run.add_argument("--out", type=Path, help="results directory (default: runs/out/PRESET under the current directory)")
    run.add_argument("--overwrite", action="store_true", help="discard earlier results or checkpoints in --out")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    from nht_jax.run import launch

    launch.add_arguments(run)  # --processes, --process-id, --coordinator, --join-timeout
    report = sub.add_parser("report", help="redraw the figures of a results directory")
    report.add_argument("dir", type=Path)
    analyze = sub.add_parser("analyze", help="fits, regime boundaries, the six predictions, the separation score, "
                                             "layer order, the delay predictor (and, over a width axis, the emergence "
                                             "conjecture) of a results directory")
    analyze.add_argument("dir", type=Path)
    analyze.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                         help="an analysis option, e.g. --set fits.n_bootstrap=200 (sections: fits, separation, "
                              "layers, predictor, predictions, structure, emergence; see nht_jax/analysis/analyze.py)")
    bench = sub.add_parser("bench", help="time the grid three ways (see benchmarks/)")
    bench.add_argument("--runs", type=int, default=16)
    bench.add_argument("--steps", type=int, default=600)
    bench.add_argument("--preset", default="default", help="an image preset (border-digits) times a λ × ρ × seed grid")
    bench.add_argument("--log-every", type=int, default=50)
    bench.add_argument("--out", type=Path, help="also write the table as Markdown here")
    bound = sub.add_parser("bound", help="check the paper's bounds along the runs of a results directory")
    bound.add_argument("dir", type=Path)
    verify = sub.add_parser("verify-bounds", help="check every bound on the exact toy models ([OK] / [!!])")
    verify.add_argument("--quick", action="store_true", help="fewer Monte-Carlo seeds for the noisy model")
    figs = sub.add_parser("figs", help="the paper's figures (PAPER.md §6) as PNGs in one folder, training the "
                                       "presets they need when their results are absent")
    figs.add_argument("--out", type=Path, default=Path("runs/out/paper_figs"), help="folder of the PNGs")
    figs.add_argument("--quick", action="store_true", help="train missing results at a smaller CPU scale (minutes)")
    figs.add_argument("--results", type=Path, default=Path("runs/out"),
                      help="where results folders are looked for and made (<preset>, <preset>-reduced, -quick)")
    figs.add_argument("--only", action="append", metavar="FIG", help="fig1 … fig5 or delay (repeatable)")
    figs.add_argument("--no-run", action="store_true", help="never train: say which command makes missing results")
    repro = sub.add_parser("reproduce", help="the papers' experiments at CPU scale: every claim next to our number "
                                             "([OK] / [!!] / [--]), reproduce.md and scorecard.csv")
    repro.add_argument("--out", type=Path, default=Path("runs/out/reproduce"),
                       help="folder of the parts' results and the report (finished parts are reused)")
    repro.add_argument("--quick", action="store_true", help="smaller grids (minutes; many claims unjudged)")
    repro.add_argument("--only", nargs="+", action="extend", metavar="PART",
                       help="run only these parts (default, toy-linear, verify-bounds, border-digits, "
                            "companion-exact-cpu, sparse-parity, phase-lambda-eta, digits-grokking)")
    return parser


def _print_summary(res) -> None:
    from nht_jax.run.summaries import regime_counts

    counts = regime_counts(res.summary)
    print(f"results: {res.path}")
    print("regimes: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v))
    from nht_jax.figures.folder import figure_names

    print("figures: " + ", ".join(str(res.path / name) for name in figure_names(res)))


def main(argv: list[str] | None = None) -> int:
    from nht_jax.run.launch import as_process

    return as_process(lambda: _main(argv))  # several processes: a failed one ends at once, the others see it gone


def _main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command in (None, "run"):
            from nht_jax import experiment
            from nht_jax.engine import distributed
            from nht_jax.run import launch
            from nht_jax.run.sweep import default_out, run_sweep

            how = launch.launch_of(args)  # None: one process; N: start N here; Launch: join them (before JAX runs)
            preset = getattr(args, "preset", "default")
            if isinstance(how, int):
                experiment.load(preset, getattr(args, "overrides", []))  # a bad preset fails once, here
                return launch.start_local(sys.argv[1:] if argv is None else list(argv), how)
            if how is not None:
                distributed.initialize(how)
            config = experiment.load(preset, getattr(args, "overrides", []))
            out = getattr(args, "out", None) or default_out(config)
            res = run_sweep(config, out, progress=not getattr(args, "quiet", False),
                            overwrite=getattr(args, "overwrite", False))
            if res is not None:  # None: a process other than 0 of several (process 0 writes and reports)
                from nht_jax.figures.folder import redraw

                _print_summary(redraw(res.path))
        elif args.command == "presets":
            from nht_jax.base.presets import list_presets

            presets = list_presets()
            width = max(map(len, presets))
            for name, description in presets.items():
                print(f"{name:<{width}}  {description}")
        elif args.command == "report":
            from nht_jax.figures.folder import redraw

            _print_summary(redraw(args.dir))
        elif args.command == "analyze":
            from nht_jax.analysis.analyze import analyze, options_from

            report = analyze(args.dir, options_from(args.overrides))
            print(report["markdown"].split("\n## Delay-law fits")[0])
            if report["emergence"]:
                print("## The emergence conjecture (PAPER.md §8)\n\n" + report["emergence"].verdicts_markdown())
            print(f"written: {args.dir / 'analysis.md'} (everything), predictions.csv, delay_fits.csv, "
                  f"boundaries.csv, separation.csv, layer_order.csv, delay_predictor.csv, phase_boundaries.png, "
                  f"delay_fits.png" + (", emergence.csv, emergence.png" if report["emergence"] else ""))
        elif args.command == "bench":
            from nht_jax.run.benchmark import main as bench_main

            bench_main(preset=args.preset, runs=args.runs, steps=args.steps, out=args.out, log_every=args.log_every)
        elif args.command == "bound":
            from nht_jax.theory.recorded import bound_report

            _, text = bound_report(args.dir)
            print(text + f"written: {args.dir / 'bound_table.csv'}, {args.dir / 'bound_report.md'}, {args.dir / 'bound.png'}")
        elif args.command == "figs":
            from nht_jax.papers.paper_figures import make_all

            outcomes = make_all(args.out, quick=args.quick, root=args.results, allow_run=not args.no_run,
                                only=args.only)
            print(f"written: {', '.join(str(o.png) for o in outcomes if not o.failed)}")
            if any(o.failed for o in outcomes):
                return 1
        elif args.command == "reproduce":
            from nht_jax.papers.reproduce import reproduce

            _, outcomes = reproduce(args.out, quick=args.quick, only=args.only)
            if not all(o.ok for o in outcomes):
                return 1
        elif args.command == "verify-bounds":
            from nht_jax.theory.verify import main as verify_main

            return verify_main(quick=args.quick)
    except ConfigError as e:
        print(f"nht: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nnht: interrupted; the last checkpoint is kept: run the same command again to resume.", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
