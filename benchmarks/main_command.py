"""The main command end to end beside its bare grid program, in one process: how much of the grid's speed `nht run`
keeps, and where the rest goes.

    python benchmarks/main_command.py [--preset default] [--steps N] [--set KEY=VALUE ...] [--out FILE.md]
        [--keep DIR] [--main-first]
    nht tool bench --ways main [--preset default] [--main-steps N] [--set KEY=VALUE ...] [--out FILE.md]

1. bare grid   the preset's grid as `nht run` would train it (the same configuration, runs, steps, logging schedule
               and execution plan: `GridRun`), but as one compiled call per segment of the logging schedule, with
               nothing between calls: no chunks, checkpoints, progress, live table or files. Timed: its data and
               trainer, the first states with the metrics of step 0 (compile included), each call's compile
               (lowered and compiled ahead) and its run.
2. main        `nht run PRESET --out <a temporary folder>` through the command line's own entry point
               (`nht_jax.cli.main`, progress bar on, live.png drawn), timed end to end; the training loop's own
               record of where its wall time went (meta.json's "profile", `nht_jax.training.timings`), the time in
               `run_sweep` around training (data, memory plan, results files) and in drawing the figures after it.

Both train the same runs for the same steps: run·steps/s = runs × steps / seconds. Reported: each one's rate
(training: compiles included, data and files not; end to end: everything), the ratio main / bare, and the parts of
each side by side, so the difference is read part by part, not guessed. `--steps` shortens both (train.steps=N, a
quick check); the load average (`os.getloadavg`) before and after each is printed: on a shared machine the ratio
carries the noise of the load between the two measurements.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import jax

from nht_jax import experiment
from nht_jax.engine.executor import GridRun, host
from nht_jax.engine.grid import num_runs

if __package__ in (None, ""):  # run as `python benchmarks/…py`: make the `benchmarks` package importable
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.report_files import write_report  # noqa: E402


def load(preset: str, overrides=(), steps: int | None = None) -> tuple[experiment.Config, tuple]:
    """The preset with `overrides` (and train.steps = `steps` when given) → (config, the overrides as passed)."""
    overrides = tuple(overrides) + ((f"train.steps={steps}",) if steps else ())
    return experiment.load(preset, list(overrides)), overrides


def bare_grid(config: experiment.Config) -> dict:
    """The configuration's grid trained as one compiled call per segment of the logging schedule (module docstring):
    seconds of "setup" (data, trainer, runs placed), "start" (first states and step 0's metrics, compile included),
    "compile" (each call lowered and compiled ahead), "train" (the calls)."""
    seconds = {}
    tick = time.perf_counter()
    trainer = experiment.build_trainer(config)
    grid_run = GridRun(trainer, config.runs(), config.execution)
    seconds["setup"] = time.perf_counter() - tick
    tick = time.perf_counter()
    states, _ = grid_run.start()
    jax.block_until_ready(states)
    seconds["start"] = time.perf_counter() - tick
    seconds["compile"] = seconds["train"] = 0.0
    for n, every in trainer.schedule.pieces(0, trainer.num_logs):
        tick = time.perf_counter()
        compiled = grid_run.advance_program.lower(states, grid_run.runs, n, every).compile()
        seconds["compile"] += time.perf_counter() - tick
        tick = time.perf_counter()
        states, metrics = compiled(states, grid_run.runs)
        host(metrics)  # the metrics on the host, as `GridRun.advance` returns them
        seconds["train"] += time.perf_counter() - tick
    return {
        "how": grid_run.plan.describe(),
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        "train_wall_s": seconds["start"] + seconds["compile"] + seconds["train"],
        "wall_s": sum(seconds.values()),
    }


@contextlib.contextmanager
def timing(module, name: str, into: dict, key: str):
    """While the block runs, `module.name` is wrapped so that its calls' seconds add up in into[key]."""
    real = getattr(module, name)

    def timed(*args, **kwargs):
        tick = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            into[key] = into.get(key, 0.0) + time.perf_counter() - tick

    setattr(module, name, timed)
    try:
        yield
    finally:
        setattr(module, name, real)


def main_command(preset: str, overrides: tuple, out: Path) -> dict:
    """`nht run PRESET --out OUT [--set …]` through `nht_jax.cli.main`, timed: its exit code, wall seconds, the
    seconds in `run_sweep` and in drawing the figures after it, meta.json's training wall time and "profile",
    and the chunk sizes progress.log lists."""
    from nht_jax import cli
    from nht_jax.figures import folder as figures_folder
    from nht_jax.training import sweep

    argv = ["run", preset, "--out", str(out), *[a for o in overrides for a in ("--set", o)]]
    seconds: dict = {}
    tick = time.perf_counter()
    with timing(sweep, "run_sweep", seconds, "run_sweep"), timing(figures_folder, "redraw", seconds, "figures"):
        code = cli.main(argv)
    wall = time.perf_counter() - tick
    meta = json.loads((out / "meta.json").read_text())
    chunks = [
        int(line.split(" chunk ", 1)[1].split(" logs", 1)[0])
        for line in (out / "progress.log").read_text().splitlines()
        if " chunk " in line
    ]
    return {
        "argv": ["nht", *argv],
        "exit_code": code,
        "wall_s": wall,
        "run_sweep_s": seconds.get("run_sweep", 0.0),
        "figures_s": seconds.get("figures", 0.0),
        "train_wall_s": meta["train_wall_s"],
        "profile": meta.get("profile", {}),
        "chunks": chunks,
    }


def parts(bare: dict, main: dict) -> list[tuple[str, float, float]]:
    """(part, main seconds, bare seconds) for every part of either, training first, then around it."""
    profile = main["profile"]
    rows = [
        ("start (first states, step 0's metrics, their compile)", profile.get("start", 0.0), bare["seconds"]["start"]),
        ("compile (calls that compiled)", profile.get("compile", 0.0), bare["seconds"]["compile"]),
        ("train (the other compiled calls)", profile.get("train", 0.0), bare["seconds"]["train"]),
    ]
    rows += [(part, s, 0.0) for part, s in profile.items() if part not in ("start", "compile", "train", "loop")]
    rows.append(("loop (the loop's own Python, untimed rest)", profile.get("loop", 0.0), 0.0))
    rows.append(("= training wall time", main["train_wall_s"], bare["train_wall_s"]))
    rows.append(
        (
            "setup and results files (run_sweep less training; bare: data, trainer)",
            main["run_sweep_s"] - main["train_wall_s"],
            bare["seconds"]["setup"],
        )
    )
    rows.append(("figures after training (phase diagram, trajectories)", main["figures_s"], 0.0))
    rows.append(
        (
            "command line's rest (configuration, imports, summary)",
            main["wall_s"] - main["run_sweep_s"] - main["figures_s"],
            0.0,
        )
    )
    rows.append(("= end to end", main["wall_s"], bare["wall_s"]))
    return rows


def run_main_benchmark(
    preset: str = "default", steps: int | None = None, overrides=(), keep: Path | None = None, main_first: bool = False
) -> dict:
    """The bare grid, then the main command (`main_first`: the other way round, to see the load's drift between
    the two), in this process (module docstring) → the report. The main command writes into a temporary folder, or
    into `keep` (which must not hold results yet) to keep its results."""
    from nht_jax.base import compile_cache

    compile_cache.enable()  # as the command line does: both sides under the same compile cache
    config, overrides = load(preset, overrides, steps)
    if config.static:
        from nht_jax.base.errors import ConfigError

        raise ConfigError(
            f"'{preset}' sweeps static axes (one program per bucket): time a preset without them, or "
            f"fix them with --set"
        )
    runs, total_steps = num_runs(config.runs()), config.train.steps

    def the_main_command() -> dict:
        with (
            contextlib.nullcontext(str(keep)) if keep else tempfile.TemporaryDirectory(prefix="nht-main-bench-")
        ) as tmp:
            return main_command(preset, overrides, Path(tmp) if keep else Path(tmp) / preset)

    load_before = os.getloadavg()[0]
    main = the_main_command() if main_first else None
    bare = bare_grid(config)
    load_between = os.getloadavg()[0]
    main = main or the_main_command()
    load_after = os.getloadavg()[0]
    work = runs * total_steps
    rates = {
        "bare_train": work / bare["train_wall_s"],
        "main_train": work / main["train_wall_s"],
        "bare_end_to_end": work / bare["wall_s"],
        "main_end_to_end": work / main["wall_s"],
    }
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "preset": preset,
        "overrides": list(overrides),
        "runs": runs,
        "steps": total_steps,
        "backend": jax.default_backend(),
        "device": jax.local_devices()[0].device_kind,
        "jax": jax.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "load": {"before": load_before, "between": load_between, "after": load_after},
        "order": "main, then bare" if main_first else "bare, then main",
        "compile_cache": compile_cache.describe(compile_cache.current()),
        "bare": bare,
        "main": main,
        "rates": rates,
        "ratio_train": rates["main_train"] / rates["bare_train"],
        "ratio_end_to_end": rates["main_end_to_end"] / rates["bare_end_to_end"],
        "parts": parts(bare, main),
    }


def markdown(report: dict) -> str:
    r, main = report["rates"], report["main"]
    sizes = main["chunks"]
    chunk_text = (
        f"{len(sizes)} chunks, sizes (log intervals) {sorted(set(sizes))}, the first {sizes[:6]}"
        if sizes
        else "no chunk lines"
    )
    load = report["load"]
    lines = [
        f"Main command against its bare grid, {report['date']}: preset `{report['preset']}`"
        + "".join(f" --set {o}" for o in report["overrides"])
        + f", {report['runs']} runs × {report['steps']} steps, backend {report['backend']} ({report['device']}), "
        f"{report['cpus']} CPUs, jax {report['jax']}; {report.get('order', 'bare, then main')}; load average {load['before']:.1f} before, "
        f"{load['between']:.1f} between, {load['after']:.1f} after; {report['compile_cache']}.",
        "",
        f"Command: `{' '.join(main['argv'])}` (exit {main['exit_code']}); {chunk_text}. Bare grid: "
        f"{report['bare']['how']}, one compiled call per segment of the logging schedule.",
        "",
        "| | bare grid | main command | main / bare |",
        "|---|---|---|---|",
        f"| run·steps/s, training (compiles included) | {r['bare_train']:.0f} | {r['main_train']:.0f} | "
        f"**{report['ratio_train']:.3f}** |",
        f"| run·steps/s, end to end | {r['bare_end_to_end']:.0f} | {r['main_end_to_end']:.0f} | "
        f"{report['ratio_end_to_end']:.3f} |",
        "",
        "| part | main s | bare s | main − bare s |",
        "|---|---|---|---|",
    ]
    for part, m, b in report["parts"]:
        bold = "**" if part.startswith("=") else ""
        lines.append(f"| {bold}{part}{bold} | {m:.2f} | {b:.2f} | {m - b:+.2f} |")
    return "\n".join(lines) + "\n"


def main(
    preset: str = "default",
    steps: int | None = None,
    overrides=(),
    out: Path | None = None,
    keep: Path | None = None,
    main_first: bool = False,
) -> dict:
    report = run_main_benchmark(preset, steps, overrides, keep, main_first)
    table = markdown(report)
    print(table, flush=True)
    if out:
        write_report(out, table, report)
    return report


if __name__ == "__main__":
    import argparse
    import sys

    if __package__ in (None, ""):  # run as `python benchmarks/…py`: make the `benchmarks` package importable
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="default", help="the preset `nht run` trains (default: default)")
    parser.add_argument("--steps", type=int, help="train.steps of both (default: the preset's)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting of the preset, passed to both (as `nht run --set`)",
    )
    parser.add_argument("--out", type=Path, help="also write the table as Markdown here, the report as .json beside")
    parser.add_argument("--main-first", action="store_true", help="time the main command first, then the bare grid")
    parser.add_argument("--keep", type=Path, help="the main command's results folder (default: a temporary one)")
    args = parser.parse_args()
    from nht_jax.base.errors import ConfigError

    try:
        main(args.preset, args.steps, tuple(args.overrides), args.out, args.keep, args.main_first)
    except ConfigError as e:
        sys.exit(f"error: {e}")
