"""The `nht` command: presets, run, report, analyze, bench, bound, verify-bounds, figs, reproduce, export."""

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
from nht_jax.run.signals import Stopped, exit_code, handle_again, signal_name, stop_on_signals


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nht", description="Vectorised norm-hierarchy-transition sweeps in JAX.")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("presets", help="list the named presets shipped with the package and those of installed packages")
    run = sub.add_parser("run", help="train a grid and write a results directory")
    run.add_argument("preset", nargs="?", default="default", help="preset name (see `nht presets`) or a .toml file")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                     help="override one setting, e.g. --set train.steps=2000 --set 'grid.seed=[0,1,2]'")
    run.add_argument("--scale", metavar="NAME", help="train the preset at one of its reduced sizes, e.g. --scale quick "
                                                     "(`nht presets` lists them; --set applies after it)")
    run.add_argument("--out", type=Path, help="results directory (default: runs/out/PRESET, or runs/out/PRESET-SCALE "
                                              "with --scale, under the current directory)")
    run.add_argument("--overwrite", action="store_true", help="discard earlier results or checkpoints in --out")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    from nht_jax.run import launch

    launch.add_arguments(run)  # --processes, --process-id, --coordinator, --join-timeout
    report = sub.add_parser("report", help="redraw the figures of a results directory")
    report.add_argument("dir", type=Path)
    report.add_argument("--step-axis", choices=("auto", "log", "linear"), default="auto",
                        help="step on a log axis: auto = when the logging schedule is log-spaced (default)")
    allow_import_argument(report)
    analyze = sub.add_parser("analyze", help="fits, regime boundaries, the six predictions, the separation score, "
                                             "layer order, the delay predictor (and, over a width axis, the emergence "
                                             "conjecture) of a results directory")
    analyze.add_argument("dir", type=Path)
    allow_import_argument(analyze)
    analyze.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME.KEY=VALUE",
                         help="an option of one analysis, e.g. --set fits.n_bootstrap=200 (one section per analysis "
                              "of nht_jax.analysis.registry; an unknown one is refused with the list)")
    bench = sub.add_parser("bench", help="time the grid four ways, PyTorch included (see benchmarks/)")
    bench.add_argument("--runs", type=int, default=16)
    bench.add_argument("--steps", type=int, default=600)
    bench.add_argument("--preset", default="default", help="an image preset (border-digits) times a λ × ρ × seed grid")
    bench.add_argument("--log-every", type=int, default=50)
    bench.add_argument("--out", type=Path, help="also write the table as Markdown here")
    bench.add_argument("--ways", default="grid,strategies,loop,per-step,torch",
                       help="comma-separated, among grid (the default plan), strategies (the others), loop, per-step, "
                            "torch (a plain PyTorch loop: pip install 'nht_jax[bench]')")
    bench.add_argument("--torch-threads", type=int, help="torch's intra-op threads (default: the CPUs JAX uses)")
    bench.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="override a setting of the preset before timing, e.g. --set model.block_positions=readout")
    bound = sub.add_parser("bound", help="check the paper's bounds along the runs of a results directory")
    bound.add_argument("dir", type=Path)
    allow_import_argument(bound)
    watch = sub.add_parser("watch", help="print the live table of a sweep training into DIR (elsewhere) and follow it "
                                         "until it ends; Ctrl-C stops the watching only")
    watch.add_argument("dir", type=Path)
    watch.add_argument("--interval", type=float, default=1.0, help="seconds between looks at the files (default 1)")
    export = sub.add_parser("export", help="a results directory's runs as TensorBoard event files or offline W&B "
                                           "runs, one per grid run (docs/usage/export.md)")
    export.add_argument("dir", type=Path)
    allow_import_argument(export)
    target = export.add_mutually_exclusive_group(required=True)
    target.add_argument("--tensorboard", action="store_true", help="event files in OUT/tensorboard/<run>")
    target.add_argument("--wandb", action="store_true", help="offline W&B runs in OUT/wandb (upload: wandb sync)")
    export.add_argument("--out", type=Path, help="folder the export goes into (default: DIR itself; a read-only DIR "
                                                 "needs --out)")
    export.add_argument("--project", default="nht", help="the W&B project of the runs (with --wandb)")
    imports = sub.add_parser("import", help="another codebase's logs (long or wide CSV / JSON lines, TensorBoard "
                                            "event files) as a results directory (docs/usage/import.md)")
    imports.add_argument("logs", type=Path, help="a .csv or .jsonl file, or a folder of TensorBoard runs")
    imports.add_argument("--out", type=Path, required=True, help="the results directory to write")
    imports.add_argument("--steps", default="exact", metavar="exact|common|K",
                         help="runs logged at different steps: refuse (exact), keep the steps all share (common), "
                              "or of those the multiples of K")
    imports.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                         help="describe the training, e.g. --set optim.name=sgd --set train.batch_size=512 "
                              "--set grid.learning_rate=0.001 --set analysis.fit_threshold=0.95")
    imports.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                         help="a logged metric or hyperparameter name as nht's, e.g. --rename top1=test_acc")
    imports.add_argument("--ignore", action="append", default=[], metavar="NAME", help="a column or tag to leave out")
    imports.add_argument("--overwrite", action="store_true", help="replace the results already in --out")
    imports.add_argument("--step-offset", type=int, default=None, metavar="K",
                         help="add K to every logged step of a CSV / JSON-lines file (default: 1 for Lightning's "
                              "CSVLogger, whose step is the index of the last batch; else 0)")
    verify = sub.add_parser("verify-bounds", help="check every bound on the exact toy models ([OK] / [!!])")
    verify.add_argument("--quick", action="store_true", help="fewer Monte-Carlo seeds for the noisy model")
    cache = sub.add_parser("cache", help="where the compiled programs are kept (NHT_COMPILE_CACHE), their number "
                                         "and size (docs/execution.md#compile-cache)")
    cache.add_argument("--clear", action="store_true", help="remove the cached programs")
    figs = sub.add_parser("figs", help="the paper's figures (docs/science.md §6) as PNGs in one folder, training the "
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
                       help="run only these parts and the parts they read (default, toy-linear, verify-bounds, "
                            "border-digits, companion-exact-cpu, sparse-parity, phase-lambda-eta, digits-grokking, "
                            "critical-norm, interventions, norm-clamp, logit-temperature, critical-norm-mse, "
                            "logit-temperature-mse)")
    find = sub.add_parser("find-lambda", help="the weak→intermediate and intermediate→strong boundaries in λ and the "
                                              "λ of the shortest delay, to a factor, by rounds of small sweeps "
                                              "(docs/usage/find-lambda.md)")
    find.add_argument("preset", help="preset name (see `nht presets`) or a .toml file")
    find.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                      help="override one setting of every round, as in `nht run`")
    find.add_argument("--scale", metavar="NAME", help="search the preset at one of its reduced sizes")
    find.add_argument("--out", type=Path, help="folder of the rounds (round-NN) and the report (default: "
                                               "runs/out/find-lambda-PRESET[-SCALE]); finished rounds are read back")
    find.add_argument("--factor", type=float, help="width hi/lo each boundary must reach (default 1.5)")
    find.add_argument("--coarse", type=int, help="λ of the first round, log-spaced over the span (default 5)")
    find.add_argument("--span", type=float, nargs=2, metavar=("LO", "HI"),
                      help="λ range of the first round (default: the preset grid's positive extent)")
    find.add_argument("--budget", type=float, help="run·steps at most (default: the dense grid's of the same width)")
    find.add_argument("--points", type=int, help="λ added per refined gap (default 1: bisection in log λ)")
    find.add_argument("--extend", type=int, help="coarse steps the search may go past each end of the span "
                                                 "(default 2)")
    find.add_argument("--max-rounds", type=int, help="rounds at most (default 12)")
    find.add_argument("--digits", type=int, help="significant digits of every λ tried (default 3)")
    find.add_argument("--fits", action="append", default=[], metavar="KEY=VALUE",
                      help="an option of the boundary fit, as `nht analyze --set fits.KEY=VALUE`")
    find.add_argument("--boundaries-only", action="store_true", help="add λ for the two boundaries only; the "
                                                                     "shortest delay is read off the λ they bring")
    find.add_argument("--weak-fit-everywhere", action="store_true",
                      help="fit weak→intermediate on every λ (default: on the λ up to the shortest delay)")
    find.add_argument("--quiet", action="store_true", help="no progress bar while a round trains")
    return parser


def allow_import_argument(parser: argparse.ArgumentParser) -> None:
    """--allow-import MODULE: code outside the package that the folder's config.toml names may be imported."""
    parser.add_argument("--allow-import", dest="allow_import", action="append", default=[], metavar="MODULE",
                        help="import this module (or package.module:ATTR) if the folder's config.toml names it: "
                             "opening a folder imports no other code (docs/usage/plugins.md; repeatable)")


def _print_summary(res) -> None:
    from nht_jax.run.summaries import regime_counts

    counts = regime_counts(res.summary)
    print(f"results: {res.path}")
    print("regimes: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v))
    from nht_jax.figures.folder import figure_names

    print("figures: " + ", ".join(str(res.path / name) for name in figure_names(res)))


def main(argv: list[str] | None = None) -> int:
    from nht_jax.run.launch import as_process

    # several processes: a failed one ends at once, the others see it gone; each call in its own context (what
    # --allow-import allows ends with it)
    return as_process(lambda: contextvars.copy_context().run(_main, argv))


ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM,
                                errno.EIO})
"""OSErrors that a full disk, a quota or permissions cause anywhere (a log line appended, a folder made): shown as
one line, exit code 2, like a ConfigError (atomic writes already raise `nht_jax.base.atomic.WriteError`)."""


def environment_error(e: OSError, folder: Path | None = None) -> str:
    """One line for an OSError of the machine rather than of nht: the file (or else the command's folder) it
    concerns, the free space there, and what to do."""
    from nht_jax.base.atomic import free_space_text

    where = Path(e.filename) if e.filename else folder
    what = f"cannot write '{where}'" if e.filename else (f"cannot write into '{where}'" if where else "cannot write")
    space = f" ({free_space_text(where if where.is_dir() else where.parent)})" if where else ""
    return (f"{what}: {e.strerror or e}{space}. Free some space or fix the folder's permissions, then run the same "
            f"command again.")


def _folder_of(args: argparse.Namespace) -> Path | None:
    """The folder a command writes into, as far as its arguments say (`nht run` without --out: unknown here)."""
    return getattr(args, "out", None) or getattr(args, "dir", None)


def _run(args: argparse.Namespace, argv: list[str] | None) -> int:
    """`nht run`. Stop signals are handled from the first moment (`nht_jax.run.signals`: imports, data, memory plan,
    compiles) in the process that trains; `--processes N` hands over to the launcher, which passes them on to its
    processes (`nht_jax.run.launch`). A signal after the last compiled call lets the results be written, then ends
    the command (exit 128 + the signal) without drawing the figures. After a stop, a further signal ends the
    process at once (its default action)."""
    with contextlib.ExitStack() as handling:
        stops = handling.enter_context(stop_on_signals(then_default=True))
        from nht_jax import experiment
        from nht_jax.engine import distributed
        from nht_jax.run import launch
        from nht_jax.run.sweep import default_out, run_sweep

        how = launch.launch_of(args)  # None: one process; N: start N here; Launch: join them (before JAX runs)
        preset = getattr(args, "preset", "default")
        scale = getattr(args, "scale", None)
        if isinstance(how, int):
            experiment.load(preset, getattr(args, "overrides", []), scale)  # a bad preset fails once, here
            handling.close()  # the launcher's own handlers take over (`launch.forwarded_signals`)
            if stops.received:
                return signal_exit(stops.received[0], "before starting the processes")
            return launch.start_local(sys.argv[1:] if argv is None else list(argv), how)
        if how is not None:
            stops.speaks = how.process_id in (None, 0)  # the terminal hears process 0 alone (auto: once joined)
            distributed.initialize(how)
            handle_again()  # jax.distributed's preemption notifier took SIGTERM: take it back
            stops.speaks = launch.speaks()
        config = experiment.load(preset, getattr(args, "overrides", []), scale)
        out = getattr(args, "out", None) or default_out(config)
        if scale and not getattr(args, "out", None):
            out = out.with_name(f"{out.name}-{scale}")  # runs/out/PRESET-SCALE: where `nht figs` looks
        from nht_jax.figures import live as live_figure
        from nht_jax.run.live import drawing

        with drawing(live_figure.draw):  # live.png each chunk (the run layer draws nothing)
            res = run_sweep(config, out, progress=not getattr(args, "quiet", False),
                            overwrite=getattr(args, "overwrite", False))
    if stops.received:
        where = f"its results are written in '{res.path}'; `nht report {res.path}` draws the figures" if res else \
            "process 0 writes the results"
        return signal_exit(stops.received[0], f"after the last compiled call: {where}")
    if res is not None:  # None: a process other than 0 of several (process 0 writes and reports)
        from nht_jax.figures.folder import redraw

        _print_summary(redraw(res.path))
    return 0


def signal_exit(signum: int, when: str) -> int:
    """The line (process 0's alone of several) and exit code (128 + the signal) of a stop signal that came when there
    was nothing left to stop."""
    from nht_jax.run.launch import speaks

    if speaks():
        print(f"nht: {signal_name(signum)} received {when}; stopped", file=sys.stderr, flush=True)
    return exit_code(signum)


def _print_plugin_presets() -> None:
    """`nht presets`: the presets of installed packages, with the distribution each comes from."""
    from nht_jax import experiment
    from nht_jax.base.presets import plugin_presets

    found = plugin_presets()
    if not found:
        return
    print("\nfrom installed packages (preset, origin, scales, description):")
    for p in found:
        scales, note = "–", (f"ignored: {p.ignored}" if p.ignored else f"cannot be used: {p.problem}" if p.problem
                             else p.description)
        if p.path is not None and not p.ignored:
            try:
                scales = ", ".join(experiment.scales(p.name)) or "–"
            except ConfigError as e:
                note = f"cannot be used: {e}"
        print(f"{p.name}  {p.distribution}  {scales}  {note}")


def _export(args: argparse.Namespace) -> None:
    """`nht export`: a missing or damaged folder is refused before anything is created; the results folder's lock
    is held only when the export goes inside it (default: DIR/tensorboard, DIR/wandb), so a read-only folder
    exports with --out elsewhere."""
    from nht_jax.run import export, lock
    from nht_jax.run.results import load_results, require_complete

    kind = "tensorboard" if args.tensorboard else "wandb"
    require_complete(args.dir)
    base = args.out if args.out is not None else args.dir
    inside = export.inside(base / export.KINDS[kind], args.dir)
    with lock.hold(args.dir, "nht export") if inside else contextlib.nullcontext():
        target, runs = export.export(load_results(args.dir), kind, base, project=args.project)
    print(f"written: {len(runs)} runs in {target}; {export.next_step(kind, target)}")


def _find_lambda(args: argparse.Namespace) -> None:
    """`nht find-lambda`: the search of `nht_jax.analysis.find_lambda`, each round an ordinary sweep (run_sweep)."""
    from nht_jax.analysis.analyze import options_from
    from nht_jax.analysis.find_lambda import RoundRunner, SearchOptions, find_lambda
    from nht_jax.run.results import load_results
    from nht_jax.run.sweep import run_sweep

    names = ("factor", "coarse", "span", "budget", "points", "extend", "max_rounds", "digits")
    chosen = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    options = SearchOptions(**chosen, refine_delay=not args.boundaries_only,
                            weak_below_delay=not args.weak_fit_everywhere)
    fit_options = options_from([f"fits.{text}" for text in args.fits]).fits
    scale = f"-{args.scale}" if args.scale else ""
    out = args.out or Path.cwd() / "runs" / "out" / f"find-lambda-{Path(args.preset).stem}{scale}"
    runner = RoundRunner(train=lambda config, folder: run_sweep(config, folder, progress=not args.quiet).summary,
                         load=lambda folder: load_results(folder).summary)
    find_lambda(args.preset, out, runner, options, args.overrides, args.scale, fit_options)
    print(f"written: {out / 'find_lambda.md'}, {out / 'find_lambda.csv'}")


COMPILING = frozenset({None, "run", "analyze", "bench", "verify-bounds", "figs", "reproduce", "find-lambda"})
"""The commands that train or evaluate, and so use the compile cache (docs/execution.md#compile-cache); `nht watch`,
`import`, `export`, `report`, `bound`, `presets` and `cache` compile nothing."""


def _enable_compile_cache() -> None:
    """JAX's persistent compilation cache for this command (`nht_jax.base.compile_cache`); an unwritable folder
    is one warning line, and the command runs without it."""
    from nht_jax.base import compile_cache

    enabled = compile_cache.enable()
    if enabled.problem:
        print(f"nht: warning: {enabled.problem}", file=sys.stderr, flush=True)
    if enabled.removed:
        print(f"nht: note: removed {len(enabled.removed)} compile-cache entries that were cut short (a full disk or "
              f"a killed process) from '{enabled.folder}'; their programs are compiled again", file=sys.stderr,
              flush=True)


def _cache(args: argparse.Namespace) -> None:
    """`nht cache [--clear]`: the compile cache's folder, programs and size; --clear removes the programs."""
    from nht_jax.base import compile_cache

    chosen = compile_cache.current()
    if args.clear and chosen.folder is not None:
        programs, freed = compile_cache.clear(chosen.folder)
        print(f"removed {programs} programs ({compile_cache.mib(freed)}) from {chosen.folder}")
    print(compile_cache.describe(chosen))


def _main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if getattr(args, "allow_import", None):
            from nht_jax.base import plugins

            plugins.allow(args.allow_import)  # for this command (`main` runs it in its own context)
        if args.command in COMPILING:  # before anything compiles; the other commands import no JAX to compile
            _enable_compile_cache()
        if args.command in (None, "run"):
            return _run(args, argv)
        elif args.command == "presets":
            from nht_jax import experiment

            presets = {name: (", ".join(experiment.scales(name)) or "–", description)
                       for name, description in experiment.list_presets().items()}
            width = max(map(len, ["preset", *presets]))
            scale_width = max(len(scales) for scales, _ in [("scales", ""), *presets.values()])
            print(f"{'preset':<{width}}  {'scales':<{scale_width}}  description")
            for name, (scales, description) in presets.items():
                print(f"{name:<{width}}  {scales:<{scale_width}}  {description}")
            _print_plugin_presets()
            print("Train a preset at one of its scales with `nht run PRESET --scale NAME` "
                  "(docs/configuration/scales.md).")
        elif args.command == "report":
            from nht_jax.figures.folder import redraw

            _print_summary(redraw(args.dir, args.step_axis))
        elif args.command == "analyze":
            from nht_jax.analysis.analyze import analyze, options_from

            report = analyze(args.dir, options_from(args.overrides))
            for part in report["summary"]:
                print(part)
            print(f"written: {args.dir / 'analysis.md'} (everything), {', '.join(report['written'][1:])}")
        elif args.command == "bench":
            from nht_jax.run.benchmark import main as bench_main

            bench_main(preset=args.preset, runs=args.runs, steps=args.steps, out=args.out, log_every=args.log_every,
                       ways=tuple(w.strip() for w in args.ways.split(",") if w.strip()), torch_threads=args.torch_threads,
                       overrides=tuple(args.overrides))
        elif args.command == "bound":
            from nht_jax.theory.recorded import bound_report

            _, text = bound_report(args.dir)
            print(text + f"written: {args.dir / 'bound_table.csv'}, {args.dir / 'bound_report.md'}, {args.dir / 'bound.png'}")
        elif args.command == "figs":
            from nht_jax.base.atomic import remove_stale_temporaries
            from nht_jax.papers.paper_figures import check_figures, make_all
            from nht_jax.run import lock

            check_figures(args.only)  # a bad --only makes no folder
            with lock.hold(args.out, "nht figs"):  # busy or read-only: one line saying what to do
                remove_stale_temporaries(args.out)  # a killed `nht figs`'s half-written PNGs
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
        elif args.command == "export":
            _export(args)
        elif args.command == "import":
            from nht_jax.run.import_logs import import_logs, parse_names, parse_steps_policy

            done = import_logs(args.logs, args.out, parse_steps_policy(args.steps), args.overrides,
                               parse_names(args.rename, args.ignore), args.overwrite, args.step_offset)
            res = done["results"]
            for note in done["notes"]:
                print(f"note: {note}")
            print(f"imported: {res.num_runs} runs × {len(res.steps)} logged steps ({', '.join(res.metrics)}) into "
                  f"{res.path}; next: nht analyze {res.path}")
        elif args.command == "cache":
            _cache(args)
        elif args.command == "find-lambda":
            _find_lambda(args)
        elif args.command == "watch":
            from nht_jax.run.watch import watch

            watch(args.dir, args.interval)
        elif args.command == "verify-bounds":
            from nht_jax.theory.verify import main as verify_main

            return verify_main(quick=args.quick)
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
    except Stopped as e:  # SIGINT, SIGTERM or SIGHUP under `_run`: the training said where it stopped
        from nht_jax.run.launch import speaks

        if speaks():  # several processes: process 0 says it for all
            print(f"nht: {e.text}", file=sys.stderr, flush=True)
        return e.exit_code
    except KeyboardInterrupt:
        print("\nnht: interrupted; the last checkpoint is kept: run the same command again to resume.", file=sys.stderr)
        return 130
    return 0


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's flush at exit does not fail on the closed pipe again."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
