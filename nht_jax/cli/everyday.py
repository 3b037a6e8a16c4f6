"""The everyday commands, at the top level of `nht`: presets, run, report, analyze, watch, export, import."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
from pathlib import Path

from nht_jax.base.errors import ConfigError
from nht_jax.cli.common import (
    allow_import_argument,
    figure_output_arguments,
    figure_output_of,
    chosen_preset,
    folder_argument,
    folder_path,
    partial_argument,
    preset_arguments,
    print_summary,
    signal_exit,
)
from nht_jax.cli.registry import Command, Group
from nht_jax.training.signals import handle_again, stop_on_signals

# ----------------------------------------------------------------------------- nht presets


def presets_arguments(parser: argparse.ArgumentParser) -> None:
    """`nht presets` takes no arguments."""


def presets(args: argparse.Namespace) -> None:
    """The shipped presets with their scales and descriptions, then those of installed packages.

    Args:
        args: the parsed command line.
    """
    from nht_jax import experiment

    found = {
        name: (", ".join(experiment.scales(name)) or "–", description)
        for name, description in experiment.list_presets().items()
    }
    width = max(map(len, ["preset", *found]))
    scale_width = max(len(scales) for scales, _ in [("scales", ""), *found.values()])
    print(f"{'preset':<{width}}  {'scales':<{scale_width}}  description")
    for name, (scales, description) in found.items():
        print(f"{name:<{width}}  {scales:<{scale_width}}  {description}")
    print_plugin_presets()
    print("Train a preset at one of its scales with `nht run PRESET --scale NAME` (docs/configuration/scales.md).")


def print_plugin_presets() -> None:
    """`nht presets`: the presets of installed packages, with the distribution each comes from."""
    from nht_jax import experiment
    from nht_jax.base.presets import plugin_presets

    found = plugin_presets()
    if not found:
        return
    print("\nfrom installed packages (preset, origin, scales, description):")
    for p in found:
        scales, note = (
            "–",
            (f"ignored: {p.ignored}" if p.ignored else f"cannot be used: {p.problem}" if p.problem else p.description),
        )
        if p.path is not None and not p.ignored:
            try:
                scales = ", ".join(experiment.scales(p.name)) or "–"
            except ConfigError as e:
                note = f"cannot be used: {e}"
        print(f"{p.name}  {p.distribution}  {scales}  {note}")


# ----------------------------------------------------------------------------- nht run


def run_arguments(parser: argparse.ArgumentParser) -> None:
    preset_arguments(parser, default="default")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one setting, e.g. --set train.steps=2000 --set 'grid.seed=[0,1,2]' "
        "(grid.lambda, grid.wd, grid.lr name grid.weight_decay and grid.learning_rate)",
    )
    parser.add_argument(
        "--scale",
        metavar="NAME",
        help="train the preset at one of its reduced sizes, e.g. --scale "
        "quick (`nht presets` lists them; --set applies after it)",
    )
    parser.add_argument(
        "--out",
        type=folder_path,
        help="results directory (default: runs/out/PRESET, or "
        "runs/out/PRESET-SCALE with --scale, under the current directory)",
    )
    parser.add_argument("--overwrite", action="store_true", help="discard earlier results or checkpoints in --out")
    parser.add_argument(
        "--resume",
        type=folder_path,
        metavar="DIR",
        help="resume the unfinished sweep in DIR (stopped "
        "before its end) with the configuration its "
        "checkpoint names; takes no preset, --set or --scale",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--no-figures",
        dest="figures",
        action="store_false",
        help="draw no figure, neither live.png during training nor the folder's figures after it "
        "(`nht report OUT` draws them later); the results are the same",
    )
    from nht_jax.training import launch

    launch.add_arguments(parser)  # --processes, --process-id, --coordinator, --join-timeout
    shard_arguments(parser)


def shard_arguments(parser: argparse.ArgumentParser) -> None:
    """--shards K --shard I of `nht run` (docs/guides/execution.md#shards)."""
    group = parser.add_argument_group("shards (one part of the grid; docs/guides/execution.md#shards)")
    group.add_argument(
        "--shards",
        type=int,
        metavar="K",
        help="split the grid into K shards (whole static buckets first, then blocks of runs) and train one of them",
    )
    group.add_argument(
        "--shard",
        type=int,
        metavar="I",
        help="the shard to train, 0 … K − 1, into OUT/shards/I-of-K; `nht merge OUT` joins the K shards",
    )


def run_one_shard(args: argparse.Namespace, preset: str) -> None:
    """`nht run … --shards K --shard I`: train the shard into OUT/shards/I-of-K (no figures: `nht merge` draws the
    merged folder's)."""
    from nht_jax import experiment
    from nht_jax.training import shards
    from nht_jax.training.sweep import default_out

    shard = shards.parse(args.shards, args.shard)
    if args.processes is not None or args.process_id is not None or args.coordinator is not None:
        raise ConfigError(
            "--shards trains one shard in one process: drop --processes, --process-id and --coordinator "
            "(or train the whole grid as one program of several processes without --shards)"
        )
    config = experiment.load(preset, args.overrides, args.scale)
    out = args.out or default_out(config)
    if args.scale and not args.out:
        out = out.with_name(f"{out.name}-{args.scale}")
    where = shards.run_shard(config, out, shard, progress=not args.quiet, overwrite=args.overwrite)
    print(f"{shard.label} done: {where}; when all {shard.count} are done: nht merge {shlex.quote(str(out))}")


def run(args: argparse.Namespace) -> int:
    """`nht run`. Stop signals are handled from the first moment (`nht_jax.training.signals`: imports, data, memory plan,
    compiles) in the process that trains; `--processes N` hands over to the launcher, which passes them on to its
    processes (`nht_jax.training.launch`). A signal after the last compiled call lets the results be written, then ends
    the command (exit 128 + the signal) without drawing the figures. After a stop, a further signal ends the
    process at once (its default action).

    Args:
        args: the parsed command line.

    Returns:
        The exit code (128 + the signal after a stop).
    """
    argv = args.argv
    with contextlib.ExitStack() as handling:
        stops = handling.enter_context(stop_on_signals(then_default=True))
        from nht_jax import experiment
        from nht_jax.engine import distributed
        from nht_jax.training import launch
        from nht_jax.training.sweep import default_out, run_sweep

        configured = resumed_config(args) if args.resume else None
        preset = chosen_preset(args) if configured is None else None
        if args.shards is not None or args.shard is not None:
            if configured is not None:
                raise ConfigError(
                    "nht run --resume DIR resumes a whole sweep; a shard resumes by running its own "
                    "command again (`nht run PRESET --shards K --shard I`)"
                )
            run_one_shard(args, preset)
            return (
                signal_exit(stops.received[0], "after the last compiled call: the shard's results are written")
                if stops.received
                else 0
            )
        how = launch.launch_of(args)  # None: one process; N: start N here; Launch: join them (before JAX runs)
        if isinstance(how, int):
            if configured is None:
                experiment.load(preset, args.overrides, args.scale)  # a bad preset fails once, here
            handling.close()  # the launcher's own handlers take over (`launch.forwarded_signals`)
            if stops.received:
                return signal_exit(stops.received[0], "before starting the processes")
            return launch.start_local(sys.argv[1:] if argv is None else list(argv), how)
        if how is not None:
            stops.speaks = how.process_id in (None, 0)  # the terminal hears process 0 alone (auto: once joined)
            distributed.initialize(how)
            handle_again()  # jax.distributed's preemption notifier took SIGTERM: take it back
            stops.speaks = launch.speaks()
        config = configured or experiment.load(preset, args.overrides, args.scale)
        out = args.resume or args.out or default_out(config)
        if args.scale and not args.out:
            out = out.with_name(f"{out.name}-{args.scale}")  # runs/out/PRESET-SCALE: where `nht paper figs` looks
        with live_drawing(args.figures):
            res = run_sweep(config, out, progress=not args.quiet, overwrite=args.overwrite)
    if stops.received:
        where = (
            (f"its results are written in '{res.path}'; `nht report {shlex.quote(str(res.path))}` draws the figures")
            if res
            else "process 0 writes the results"
        )
        return signal_exit(stops.received[0], f"after the last compiled call: {where}")
    if res is not None and args.figures:  # None: a process other than 0 of several (process 0 writes and reports)
        from nht_jax.figures.folder import redraw

        print_summary(redraw(res.path))
    elif res is not None:
        from nht_jax.results.folder import load_results

        print_summary(load_results(res.path), figures=False)
    return 0


def live_drawing(figures: bool) -> contextlib.AbstractContextManager:
    """Where `nht run` draws live.png after each chunk (`nht_jax.figures.live.draw`; the run layer draws
    nothing): with figures, every sweep in the block; without (--no-figures), none, and matplotlib is never
    imported."""
    if not figures:
        return contextlib.nullcontext()
    from nht_jax.figures import live as live_figure
    from nht_jax.training.live import drawing

    return drawing(live_figure.draw)


def resumed_config(args: argparse.Namespace):
    """The configuration of `nht run --resume DIR`: the one DIR's checkpoint names (`nht_jax.results.folder.read_unfinished`); a
    preset, --set, --scale or another --out beside it, or a DIR that is no unfinished sweep: ConfigError."""
    from nht_jax.results.folder import read_unfinished

    given = [
        name
        for name, value in (
            ("a preset", args.preset or args.preset_option),
            ("--set", args.overrides),
            ("--scale", args.scale),
        )
        if value
    ]
    if args.out is not None and Path(args.out).resolve() != Path(args.resume).resolve():
        given.append("--out")
    if given:
        raise ConfigError(
            f"nht run --resume DIR trains the configuration DIR's checkpoint names: leave out {', '.join(given)}"
        )
    found = read_unfinished(args.resume)
    if found is None:
        raise ConfigError(
            f"'{args.resume}' holds no unfinished sweep (no checkpoint.npz without results): "
            f"`nht run PRESET --out {args.resume}` starts one"
        )
    if found.config is None:
        raise ConfigError(found.text())
    return found.config


# ----------------------------------------------------------------------------- nht merge, submit


def merge_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dirs",
        type=folder_path,
        nargs="+",
        metavar="DIR",
        help="OUT (its shards in OUT/shards/I-of-K are merged into it), or with --out the shard folders to merge",
    )
    parser.add_argument("--out", type=folder_path, help="the results folder to write (then DIR… are shard folders)")
    parser.add_argument(
        "--shards", type=int, metavar="K", help="with OUT holding shards of several splits: merge the split into K"
    )
    parser.add_argument(
        "--allow-mixed-code",
        action="store_true",
        help="merge shards that different code trained (another version, commit or uncommitted "
        "change), recording the mix in meta.json; refused without it",
    )
    allow_import_argument(parser)


def merge(args: argparse.Namespace) -> None:
    """`nht merge`: the complete shards of one grid as one results folder, then its figures
    (`nht_jax.training.merge`).

    Args:
        args: the parsed command line.
    """
    from nht_jax.figures.folder import redraw
    from nht_jax.training import merge as merging

    if args.out is None:
        if len(args.dirs) != 1:
            raise ConfigError(
                "name one results folder OUT (its shards are in OUT/shards), or the shard folders with --out OUT"
            )
        folders, _ = merging.shard_folders(args.dirs[0], args.shards)
        out = args.dirs[0]
    else:
        folders, out = list(args.dirs), args.out
    print_summary(redraw(merging.merge(folders, out, args.allow_mixed_code)))


def submit_arguments(parser: argparse.ArgumentParser) -> None:
    preset_arguments(parser, default=None)
    parser.add_argument("--shards", type=int, required=True, metavar="K", help="the number of shards (jobs)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one setting, as for `nht run` (every job gets the same)",
    )
    parser.add_argument("--scale", metavar="NAME", help="train the preset at one of its reduced sizes")
    parser.add_argument(
        "--out",
        type=folder_path,
        help="results directory (default: as `nht run`); the shards go to "
        "OUT/shards, the job state to OUT/submit.json, the logs to "
        "OUT/submitit",
    )
    parser.add_argument(
        "--executor",
        default="slurm",
        choices=("slurm", "local"),
        help="slurm: sbatch job arrays (default); local: the same jobs as processes of this machine "
        "(submitit's LocalExecutor)",
    )
    parser.add_argument("--partition", metavar="P", help="SLURM partition of the jobs")
    parser.add_argument("--gpus-per-job", type=int, metavar="G", help="GPUs of each job (submitit's gpus_per_node)")
    parser.add_argument("--cpus-per-task", type=int, metavar="C", help="CPUs of each job")
    parser.add_argument(
        "--time", dest="time_min", type=int, metavar="MIN", help="time limit of each job in minutes (default 1440)"
    )
    parser.add_argument(
        "--parallel", type=int, metavar="N", help="at most N shards running at once (slurm_array_parallelism)"
    )
    parser.add_argument(
        "--wait",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="wait for the jobs and merge when all shards are done (default); --no-wait: submit and "
        "return, a later `nht submit` checks, resubmits and merges",
    )
    parser.add_argument(
        "--poll",
        dest="poll_s",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="seconds between looks at the queue while waiting (default 5)",
    )


def submit(args: argparse.Namespace) -> int:
    """`nht submit`: the shards as a job array through submitit, resubmitted where they failed, merged when all
    are done (`nht_jax.training.submit`); then the merged folder's figures.

    Args:
        args: the parsed command line.

    Returns:
        The exit code.
    """
    from nht_jax import experiment
    from nht_jax.figures.folder import redraw
    from nht_jax.training.submit import Request
    from nht_jax.training.submit import submit as submit_shards
    from nht_jax.training.sweep import default_out

    preset = chosen_preset(args)
    out = args.out
    if out is None:
        out = default_out(experiment.load(preset, args.overrides, args.scale))
        out = out.with_name(f"{out.name}-{args.scale}") if args.scale else out
    request = Request(
        preset,
        tuple(args.overrides),
        args.scale,
        args.shards,
        out,
        args.executor,
        args.partition,
        args.gpus_per_job,
        args.cpus_per_task,
        args.time_min,
        args.parallel,
        args.wait,
        args.poll_s,
    )
    code, merged = submit_shards(request)
    if merged is not None:
        print_summary(redraw(merged))
    return code


# ----------------------------------------------------------------------------- nht report, analyze, watch


def report_arguments(parser: argparse.ArgumentParser) -> None:
    folder_argument(parser)
    parser.add_argument(
        "--step-axis",
        choices=("auto", "log", "linear"),
        default="auto",
        help="step on a log axis: auto = when the logging schedule is log-spaced (default)",
    )
    allow_import_argument(parser)
    figure_output_arguments(parser, captions=True)
    partial_argument(parser, "draw")


def report(args: argparse.Namespace) -> None:
    """`nht report`: the figures of a results folder, drawn again.

    Args:
        args: the parsed command line.
    """
    from nht_jax.figures.folder import redraw
    from nht_jax.figures.style import writing

    from nht_jax.results.folder import shard_note

    with writing(figure_output_of(args)):
        res = redraw(args.dir, args.step_axis, partial=args.partial)
        print_summary(res)
    if res.shard is not None:
        print(
            f"note: '{args.dir}' is {shard_note(res)}: its figures show these runs alone; `nht merge` joins the "
            f"shards into the whole grid's folder and figures"
        )


def analyze_arguments(parser: argparse.ArgumentParser) -> None:
    folder_argument(parser)
    allow_import_argument(parser)
    figure_output_arguments(parser)
    partial_argument(parser, "analyse")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME.KEY=VALUE",
        help="an option of one analysis, e.g. --set fits.n_bootstrap=200 (one section per analysis "
        "of nht_jax.analysis.registry; an unknown one is refused with the list)",
    )


def analyze(args: argparse.Namespace) -> None:
    """`nht analyze`: every registered analysis of a results folder, written into it.

    Args:
        args: the parsed command line.
    """
    from nht_jax.analysis.analyze import analyze as analyze_folder
    from nht_jax.analysis.analyze import options_from
    from nht_jax.figures.style import writing

    with writing(figure_output_of(args)):
        written = analyze_folder(args.dir, options_from(args.overrides), partial=args.partial)
    for part in written["summary"]:
        print(part)
    print(f"written: {args.dir / 'analysis.md'} (everything), {', '.join(written['written'][1:])}")


def watch_arguments(parser: argparse.ArgumentParser) -> None:
    folder_argument(parser, "the results folder a sweep is training into (its --out)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between looks at the files (default 1)")
    parser.add_argument(
        "--new",
        action="store_true",
        help="follow the next sweep to start in DIR (e.g. an `nht run "
        "--overwrite` just started), not the one that finished there",
    )


def watch(args: argparse.Namespace) -> None:
    """`nht watch`: a results folder's live table, followed until the sweep ends.

    Args:
        args: the parsed command line.
    """
    from nht_jax.training.watch import watch as watch_folder

    watch_folder(args.dir, args.interval, new=args.new)


# ----------------------------------------------------------------------------- nht export, import


def export_arguments(parser: argparse.ArgumentParser) -> None:
    folder_argument(parser)
    allow_import_argument(parser)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--tensorboard", action="store_true", help="event files in OUT/tensorboard/<run>")
    target.add_argument("--wandb", action="store_true", help="offline W&B runs in OUT/wandb (upload: wandb sync)")
    parser.add_argument(
        "--out", type=folder_path, help="folder the export goes into (default: DIR itself; a read-only DIR needs --out)"
    )
    parser.add_argument("--project", default="nht", help="the W&B project of the runs (with --wandb)")
    partial_argument(parser, "export")


def export(args: argparse.Namespace) -> None:
    """`nht export`: a missing or damaged folder is refused before anything is created; the results folder's lock
    is held only when the export goes inside it (default: DIR/tensorboard, DIR/wandb), so a read-only folder
    exports with --out elsewhere.

    Args:
        args: the parsed command line.
    """
    from nht_jax.results import export as exporting
    from nht_jax.results import lock
    from nht_jax.results.folder import load_results, require_complete

    kind = "tensorboard" if args.tensorboard else "wandb"
    if kind == "wandb":
        exporting.check_project(args.project)  # before anything is read or written
    res = load_results(args.dir, partial=True) if args.partial else None  # an unfinished folder, or a finished one
    if res is None or res.partial is None:
        require_complete(args.dir)
    base = args.out if args.out is not None else args.dir
    inside = exporting.inside(base / exporting.KINDS[kind], args.dir)
    with lock.hold(args.dir, "nht export") if inside else contextlib.nullcontext():
        target, runs = exporting.export(res or load_results(args.dir), kind, base, project=args.project)
    partial = f" (partial: step {res.partial[0]} of {res.partial[1]})" if res is not None and res.partial else ""
    print(f"written: {len(runs)} runs{partial} in {target}; {exporting.next_step(kind, target)}")


def import_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "logs", type=folder_path, metavar="LOGS", help="a .csv or .jsonl file, or a folder of TensorBoard runs"
    )
    parser.add_argument("--out", type=folder_path, required=True, help="the results directory to write")
    parser.add_argument(
        "--steps",
        default="exact",
        metavar="exact|common|K",
        help="runs logged at different steps: refuse (exact), keep the steps all share (common), "
        "or of those the multiples of K",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="describe the training, e.g. --set optim.name=sgd --set train.batch_size=512 "
        "--set grid.learning_rate=0.001 --set analysis.fit_threshold=0.95",
    )
    parser.add_argument(
        "--rename",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="a logged metric or hyperparameter name as nht's, e.g. --rename top1=test_acc",
    )
    parser.add_argument("--ignore", action="append", default=[], metavar="NAME", help="a column or tag to leave out")
    parser.add_argument("--overwrite", action="store_true", help="replace the results already in --out")
    parser.add_argument(
        "--step-offset",
        type=int,
        default=None,
        metavar="K",
        help="add K to every logged step of a CSV / JSON-lines file (default: 1 for Lightning's "
        "CSVLogger, whose step is the index of the last batch; else 0)",
    )


def import_logs(args: argparse.Namespace) -> None:
    """`nht import`: another codebase's logs (CSV, JSON lines, TensorBoard event files) as a results folder.

    Args:
        args: the parsed command line.
    """
    from nht_jax.results.import_logs import import_logs as import_folder
    from nht_jax.results.import_logs import parse_names, parse_steps_policy

    done = import_folder(
        args.logs,
        args.out,
        parse_steps_policy(args.steps),
        args.overrides,
        parse_names(args.rename, args.ignore),
        args.overwrite,
        args.step_offset,
    )
    res = done["results"]
    for note in done["notes"]:
        print(f"note: {note}")
    print(
        f"imported: {res.num_runs} runs × {len(res.steps)} logged steps ({', '.join(res.metrics)}) into "
        f"{res.path}; next: nht analyze {shlex.quote(str(res.path))}"
    )


GROUP = Group(
    "",
    "everyday commands",
    (
        Command(
            "presets",
            "list the named presets shipped with the package and those of installed packages",
            presets_arguments,
            presets,
        ),
        Command(
            "run",
            "train a grid and write a results directory",
            run_arguments,
            run,
            compiles=True,
            config_overrides=True,
        ),
        Command(
            "merge",
            "join the finished shards of a grid (`nht run … --shards K --shard I`) into one results "
            "directory, the one `nht run` writes without shards",
            merge_arguments,
            merge,
        ),
        Command(
            "submit",
            "train a grid as K shards in a job array through submitit (SLURM, or --executor local), "
            "resubmit failed shards on the next call, merge when all are done",
            submit_arguments,
            submit,
            config_overrides=True,
        ),
        Command("report", "redraw the figures of a results directory", report_arguments, report),
        Command(
            "analyze",
            "fits, regime boundaries, the six predictions, the separation score, layer order, the delay "
            "predictor (and, over a width axis, the emergence conjecture) of a results directory",
            analyze_arguments,
            analyze,
            compiles=True,
        ),
        Command(
            "watch",
            "print the live table of a sweep training into DIR (elsewhere) and follow it until it ends; "
            "Ctrl-C stops the watching only",
            watch_arguments,
            watch,
        ),
        Command(
            "export",
            "a results directory's runs as TensorBoard event files or offline W&B runs, one per grid run "
            "(docs/guides/export.md)",
            export_arguments,
            export,
        ),
        Command(
            "import",
            "another codebase's logs (long or wide CSV / JSON lines, TensorBoard event files) as a results "
            "directory (docs/guides/import.md)",
            import_arguments,
            import_logs,
            config_overrides=True,
        ),
    ),
)
"""The top-level commands (the group without a name)."""

__all__ = ["analyze", "export", "import_logs", "merge", "presets", "report", "run", "submit", "watch"]
