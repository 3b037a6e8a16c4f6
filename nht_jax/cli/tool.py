"""`nht tool …`: timing, the compile cache, the λ search and a plugin skeleton (bench, cache, find-lambda,
new-plugin). Each also answers to its
bare name (`nht bench` = `nht tool bench`).

`nht tool bench` runs the benchmark harness, which lives in the source checkout (benchmarks/harness.py, beside
benchmarks/torch_baseline.py), not in the installed package: it is looked for next to the imported `nht_jax`
package (an editable install, or PYTHONPATH pointing at a clone), then in the current directory, and imported as
`benchmarks.harness`; found nowhere, the command says in one line to run it from a clone."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import sys
from pathlib import Path

from nht_jax.base.errors import ConfigError
from nht_jax.cli.common import chosen_preset, folder_path, preset_arguments
from nht_jax.cli.registry import Command, Group

HARNESS = Path("benchmarks") / "harness.py"
"""The benchmark harness, relative to the root of a source checkout."""

BENCH_WAYS = "grid,strategies,loop,per-step,torch"


# ----------------------------------------------------------------------------- nht tool bench


def bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=16, help="runs in the timed grid (default 16)")
    parser.add_argument("--steps", type=int, default=600, help="training steps of every run (default 600)")
    parser.add_argument("--preset", default="default", help="an image preset (border-digits) times a λ × ρ × seed grid")
    parser.add_argument("--log-every", type=int, default=50, help="steps between logged metrics (default 50)")
    parser.add_argument("--out", type=folder_path, help="also write the table as Markdown here")
    parser.add_argument(
        "--ways",
        default=BENCH_WAYS,
        help="comma-separated, among grid (the default plan), strategies (the others), loop, per-step, "
        "torch (a plain PyTorch loop: pip install 'nht_jax[bench]'), main (the main command "
        "`nht run PRESET` end to end beside its bare grid program, never by default: minutes)",
    )
    parser.add_argument(
        "--main-steps",
        type=int,
        help="with --ways main: train.steps of both (default: the preset's own, as `nht run` trains)",
    )
    parser.add_argument("--torch-threads", type=int, help="torch's intra-op threads (default: the CPUs JAX uses)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting of the preset before timing, e.g. --set model.block_positions=readout",
    )


def harness_roots() -> tuple[Path, ...]:
    """Where a source checkout may be: the folder holding the imported `nht_jax` package, then the current
    directory."""
    import nht_jax

    return Path(nht_jax.__file__).resolve().parent.parent, Path.cwd()


def find_harness(roots) -> Path | None:
    """The first root holding benchmarks/harness.py, or None."""
    return next((Path(root) for root in roots if (Path(root) / HARNESS).is_file()), None)


@contextlib.contextmanager
def importable(root: Path):
    """`root` first on sys.path while the harness is imported and runs, and no `benchmarks` package of another
    checkout in sys.modules (so the harness's own `benchmarks.…` imports resolve in `root`); both restored after."""
    stashed = {
        name: sys.modules.pop(name)
        for name in list(sys.modules)
        if name == "benchmarks" or name.startswith("benchmarks.")
    }
    sys.path.insert(0, str(root))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(root))
        for name in [n for n in sys.modules if n == "benchmarks" or n.startswith("benchmarks.")]:
            del sys.modules[name]
        sys.modules.update(stashed)


def load_harness(root: Path):
    """The module `benchmarks.harness` of the checkout at `root` (that file, whatever `benchmarks` was imported
    before)."""
    spec = importlib.util.spec_from_file_location("benchmarks.harness", root / HARNESS)
    module = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks.harness"] = module
    spec.loader.exec_module(module)
    return module


def bench(args: argparse.Namespace) -> None:
    """`nht tool bench`: the benchmark harness of a source checkout (benchmarks/harness.py).

    Args:
        args: the parsed command line.
    """
    root = find_harness(harness_roots())
    if root is None:
        raise ConfigError(
            "`nht tool bench` runs the benchmark harness of a source checkout (benchmarks/harness.py), "
            "which the installed package does not carry: run it from a clone of the nht_jax repository "
            "(git clone <repository> && cd <clone> && python benchmarks/bench_grid.py --help, or "
            "`nht tool bench` there)"
        )
    with importable(root):
        load_harness(root).main(
            preset=args.preset,
            runs=args.runs,
            steps=args.steps,
            out=args.out,
            log_every=args.log_every,
            ways=tuple(w.strip() for w in args.ways.split(",") if w.strip()),
            torch_threads=args.torch_threads,
            overrides=tuple(args.overrides),
            main_steps=args.main_steps,
        )


# ----------------------------------------------------------------------------- nht tool cache


def cache_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clear", action="store_true", help="remove the cached programs")


def cache(args: argparse.Namespace) -> None:
    """`nht tool cache [--clear]`: the compile cache's folder, programs and size; --clear removes the programs.

    Args:
        args: the parsed command line.
    """
    from nht_jax.base import compile_cache

    chosen = compile_cache.current()
    if args.clear and chosen.folder is not None:
        programs, freed = compile_cache.clear(chosen.folder)
        print(f"removed {programs} programs ({compile_cache.mib(freed)}) from {chosen.folder}")
    print(compile_cache.describe(chosen))


# ----------------------------------------------------------------------------- nht tool find-lambda


def find_lambda_arguments(parser: argparse.ArgumentParser) -> None:
    preset_arguments(parser, default=None)
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one setting of every round, as in `nht run`",
    )
    parser.add_argument("--scale", metavar="NAME", help="search the preset at one of its reduced sizes")
    parser.add_argument(
        "--out",
        type=folder_path,
        help="folder of the rounds (round-NN) and the report (default: "
        "runs/out/find-lambda-PRESET[-SCALE]); finished rounds are read back",
    )
    parser.add_argument("--factor", type=float, help="width hi/lo each boundary must reach (default 1.5)")
    parser.add_argument("--coarse", type=int, help="λ of the first round, log-spaced over the span (default 5)")
    parser.add_argument(
        "--span",
        type=float,
        nargs=2,
        metavar=("LO", "HI"),
        help="λ range of the first round (default: the preset grid's positive extent)",
    )
    parser.add_argument("--budget", type=float, help="run·steps at most (default: the dense grid's of the same width)")
    parser.add_argument("--points", type=int, help="λ added per refined gap (default 1: bisection in log λ)")
    parser.add_argument(
        "--extend", type=int, help="coarse steps the search may go past each end of the span (default 2)"
    )
    parser.add_argument("--max-rounds", type=int, help="rounds at most (default 12)")
    parser.add_argument("--digits", type=int, help="significant digits of every λ tried (default 3)")
    parser.add_argument(
        "--fits",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the boundary fit, as `nht analyze --set fits.KEY=VALUE`",
    )
    parser.add_argument(
        "--boundaries-only",
        action="store_true",
        help="add λ for the two boundaries only; the shortest delay is read off the λ they bring",
    )
    parser.add_argument(
        "--weak-fit-everywhere",
        action="store_true",
        help="fit weak→intermediate on every λ (default: on the λ up to the shortest delay)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar while a round trains")


def find_lambda(args: argparse.Namespace) -> None:
    """`nht tool find-lambda`: the search of `nht_jax.analysis.find_lambda`, each round an ordinary sweep (run_sweep).

    Args:
        args: the parsed command line.
    """
    from nht_jax.analysis.analyze import options_from
    from nht_jax.analysis.find_lambda import RoundRunner, SearchOptions
    from nht_jax.analysis.find_lambda import find_lambda as search
    from nht_jax.results.folder import load_results
    from nht_jax.training.sweep import run_sweep

    preset = chosen_preset(args)
    names = ("factor", "coarse", "span", "budget", "points", "extend", "max_rounds", "digits")
    chosen = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    options = SearchOptions(
        **chosen, refine_delay=not args.boundaries_only, weak_below_delay=not args.weak_fit_everywhere
    )
    fit_options = options_from([f"fits.{text}" for text in args.fits]).fits
    scale = f"-{args.scale}" if args.scale else ""
    out = args.out or Path.cwd() / "runs" / "out" / f"find-lambda-{Path(preset).stem}{scale}"
    runner = RoundRunner(
        train=lambda config, folder: run_sweep(config, folder, progress=not args.quiet).summary,
        load=lambda folder: load_results(folder).summary,
    )
    search(preset, out, runner, options, args.overrides, args.scale, fit_options)
    print(f"written: {out / 'find_lambda.md'}, {out / 'find_lambda.csv'}")


# ----------------------------------------------------------------------------- nht tool new-plugin


def new_plugin_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name",
        metavar="NAME",
        help="the plugin's name: lower-case words joined by '-' (my-plugin); its package is NAME with '_' (my_plugin)",
    )
    parser.add_argument(
        "--dir",
        type=folder_path,
        default=Path("."),
        metavar="D",
        help="the folder to write D/NAME/ in (default: the current directory)",
    )


def new_plugin(args: argparse.Namespace) -> None:
    """`nht tool new-plugin NAME`: a plugin package skeleton (`nht_jax.base.skeleton`)."""
    from nht_jax.base.skeleton import write_skeleton

    root = write_skeleton(args.name, args.dir)
    print(f"written: {root} (pyproject.toml with a model and a preset entry point, the model, the preset, README.md)")
    print(f"next: pip install -e '{root}' && nht run {args.name}")


GROUP = Group(
    "tool",
    "timing, the compile cache, the λ search and a plugin skeleton",
    (
        Command(
            "bench",
            "time the grid four ways, PyTorch included (the harness in a clone's benchmarks/)",
            bench_arguments,
            bench,
            compiles=True,
            config_overrides=True,
        ),
        Command(
            "cache",
            "where the compiled programs are kept (NHT_COMPILE_CACHE), their number and size "
            "(docs/guides/execution.md#compile-cache)",
            cache_arguments,
            cache,
        ),
        Command(
            "find-lambda",
            "the weak→intermediate and intermediate→strong boundaries in λ and the λ of the shortest "
            "delay, to a factor, by rounds of small sweeps (docs/guides/find-lambda.md)",
            find_lambda_arguments,
            find_lambda,
            compiles=True,
            config_overrides=True,
        ),
        Command(
            "new-plugin",
            "write a plugin package skeleton D/NAME/ (pyproject.toml with entry points, a model, a "
            "preset, a README) that installs and runs (docs/guides/own-problem.md)",
            new_plugin_arguments,
            new_plugin,
        ),
    ),
)

__all__ = ["bench", "cache", "find_lambda"]
