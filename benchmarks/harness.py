"""Benchmark: one grid timed four ways in one process.

1. grid      the whole grid as one compiled program (each execution strategy: the
             default plan, and the alternatives for comparison: way "strategies");
2. loop      a Python loop over runs, each one call of the jitted single-run `train`;
3. per-step  a Python loop over runs and steps calling a jitted single step;
4. torch     the same runs as a plain PyTorch loop (`benchmarks.torch_baseline`; the `bench`
             extra), with the checks that it computes the same thing (parameters, FLOPs, losses).

Reported per way: compile time, wall time, runs·steps/s, speed relative to the loop and to
PyTorch, achieved FLOP/s (XLA's FLOP count of one step and one evaluation, times how often each
runs) against a float32 1024² matmul timed in the same process, and peak memory
(XLA's memory analysis of the compiled program; device peak on accelerators).

XLA's cost analysis counts the body of a loop once, whatever its trip count, so the evaluation is
counted on a copy of the configuration that evaluates each set in one chunk (`counting_config`):
the same arithmetic without the `lax.map` over chunks of `train.eval_batch_size`.
"""

from __future__ import annotations

import dataclasses
import platform
import resource
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.base.schema import logspace
from nht_jax.engine.executor import GridRun, host, plan, unpad
from nht_jax.engine.grid import num_runs, take
from benchmarks import torch_baseline
from benchmarks.report_files import write_report


def bench_config(preset: str, runs: int, steps: int, log_every: int = 50, overrides=()) -> experiment.Config:
    """The preset with `runs` runs and `steps` steps: λ log-spaced over [1e-3, 10] × 2 seeds, and when the
    preset varies one of its domain's own axes (ρ of border-digits), × that axis's smallest and largest value
    (runs / 4 values of λ; fewer values or seeds when `runs` is not divisible). Other axes keep their first value.
    A preset that sweeps static axes (width, p: one compiled program per value) is timed on one bucket, its
    largest value of each (the most compute per run); `static_values` says which. `overrides` ("KEY=VALUE", as
    `nht run --set`) apply to the preset first, e.g. an opt-in speed setting such as model.block_positions.
    """
    config = largest_bucket(experiment.load(preset, overrides))
    seeds = (0, 1) if runs % 2 == 0 else (0,)
    varied = [a for a in config.domain.axes if len(config.grid.get(a, ())) > 1]  # optional axes may be absent
    second = {}
    if varied and runs % (len(seeds) * 2) == 0:
        values = config.grid[varied[0]]
        second = {varied[0]: (min(values), max(values))}
    lams = tuple(logspace(1e-3, 10.0, runs // (len(seeds) * (2 if second else 1))))
    grid = {name: values[:1] for name, values in config.grid.items()}
    grid.update(weight_decay=lams, seed=seeds, **second)
    log_every = min(log_every, steps)
    train = dataclasses.replace(config.train, steps=steps, log_every=log_every, log_schedule=())  # uniform logs
    execution = dataclasses.replace(config.execution, chunk_logs=steps // log_every)
    return dataclasses.replace(config, grid=grid, zipped=(), train=train, execution=execution)


def largest_bucket(config: experiment.Config) -> experiment.Config:
    """The configuration of the bucket with every static axis at its largest value (itself without static axes)."""
    if not config.static:
        return config
    grid = {**config.grid, **{name: (max(config.grid[name]),) for name in config.static}}
    ((_, sub),) = dataclasses.replace(config, grid=grid).buckets()
    return sub


def static_values(preset: str) -> dict:
    """{static axis: the value `bench_config` times} for a preset ({} without static axes)."""
    config = experiment.load(preset)
    return {name: max(config.grid[name]) for name in config.static}


def reference_matmul_size() -> int:
    """Side of the reference matmul: 1024 on CPU, 8192 on accelerators (large enough to reach their peak)."""
    return 1024 if jax.default_backend() == "cpu" else 8192


def matmul_peak_flops(n: int | None = None, repeats: int = 20, precision: str = "highest") -> float:
    """Best float32 n×n matmul rate in FLOP/s, at the engine's matmul precision (n: `reference_matmul_size`)."""
    n = n or reference_matmul_size()
    x = jax.random.normal(jax.random.PRNGKey(0), (n, n), jnp.float32)
    f = jax.jit(lambda a: jnp.matmul(a, a, precision=precision))
    f(x).block_until_ready()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        f(x).block_until_ready()
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


WAYS = ("grid", "strategies", "loop", "per-step", "torch")
"""What `run_benchmark` can time: the default grid plan, the other strategies, the loop of jitted runs, the
per-step loop, the PyTorch loop."""


def counting_config(config: experiment.Config) -> experiment.Config:
    """The configuration whose evaluation has no loop over chunks (every evaluation set in one chunk), so that
    XLA's FLOP count of it is the evaluation's (a loop body is counted once)."""
    return dataclasses.replace(config, train=dataclasses.replace(config.train, eval_batch_size=2**31 - 1))


def _flops(jitted, *args) -> float:
    cost = jitted.lower(*args).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    return float(cost.get("flops", float("nan")))


def _program_bytes(compiled) -> int | None:
    try:
        m = compiled.memory_analysis()
        return int(m.temp_size_in_bytes + m.argument_size_in_bytes + m.output_size_in_bytes)
    except Exception:  # memory analysis is not available on every backend
        return None


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    jax.block_until_ready(out)
    return time.perf_counter() - t, out


def time_grid(trainer, config, hparams, strategy: str, runs_per_batch: int):
    execution = dataclasses.replace(config.execution, strategy=strategy, runs_per_batch=runs_per_batch)
    grid_run = GridRun(trainer, hparams, execution)
    states = grid_run.init()
    jax.block_until_ready(states)
    t = time.perf_counter()
    compiled = grid_run.advance_program.lower(states, grid_run.runs, trainer.num_logs, config.train.log_every).compile()
    compile_s = time.perf_counter() - t
    first = {name: values[:, 0] for name, values in grid_run.evaluate(states).items()}
    wall, (_, metrics) = _timed(lambda: compiled(states, grid_run.runs))
    last = {name: values[:, -1] for name, values in unpad(host(metrics), grid_run.num_runs).items()}
    return grid_run.plan.describe(), compile_s, wall, _program_bytes(compiled), first, last


def time_loop(trainer, hparams):
    train = jax.jit(trainer.train)
    first = take(hparams, 0)
    t = time.perf_counter()
    compiled = train.lower(first).compile()
    compile_s = time.perf_counter() - t
    wall, _ = _timed(lambda: [compiled(take(hparams, i)) for i in range(num_runs(hparams))])
    return compile_s, wall, _program_bytes(compiled)


def time_per_step(trainer, config, hparams):
    # fresh wrappers, so the compile time is measured rather than taken from the FLOP-count cache
    step = jax.jit(lambda s, hp: trainer.step(s, hp))
    evaluate = jax.jit(lambda s, hp: trainer.evaluate(s, hp))
    init = jax.jit(lambda hp: trainer.init(hp))
    first = take(hparams, 0)
    t = time.perf_counter()
    state = init(first)
    jax.block_until_ready((step(state, first), evaluate(state, first)))
    compile_s = time.perf_counter() - t

    def run_all():
        out = []
        for i in range(num_runs(hparams)):
            hp = take(hparams, i)
            state = init(hp)
            for s in range(1, config.train.steps + 1):
                state = step(state, hp)
                if s % config.train.log_every == 0:
                    out.append(evaluate(state, hp))
        return out

    wall, _ = _timed(run_all)
    return compile_s, wall


def mean_metric(metrics, name: str) -> float:
    """Mean over runs of one metric: from {name: (runs,) array} (the grid) or a list of per-run dicts (PyTorch)."""
    if isinstance(metrics, dict):
        return float(np.mean(metrics[name]))
    return float(np.mean([m[name] for m in metrics]))


def time_torch(config, hparams, first: dict, last: dict, threads: int | None = None) -> dict:
    """The PyTorch loop over the same runs, and what it is compared on: {"missing" | "unsupported": why} when
    there is none, else `torch_baseline.time_runs`'s report with the grid's mean train loss at step 0 and at the
    end (`jax_first_loss`, `jax_last_loss`) beside PyTorch's (`torch_first_loss`, `torch_last_loss`)."""
    if not torch_baseline.available():
        return {"missing": torch_baseline.MISSING}
    reason = torch_baseline.unsupported(config)
    if reason is not None:
        return {"unsupported": f"PyTorch rows: no baseline for {reason}."}
    runs = [{name: values[i].item() for name, values in hparams.items()} for i in range(num_runs(hparams))]
    report = torch_baseline.time_runs(config, runs, threads)
    report.update(
        jax_first_loss=mean_metric(first, "train_loss"),
        jax_last_loss=mean_metric(last, "train_loss"),
        torch_first_loss=mean_metric(report["first"], "train_loss"),
        torch_last_loss=mean_metric(report["last"], "train_loss"),
    )
    return report


def run_benchmark(
    preset: str = "default",
    runs: int = 16,
    steps: int = 600,
    ways=WAYS,
    log_every: int = 50,
    torch_threads: int | None = None,
    overrides=(),
) -> dict:
    unknown = set(ways) - set(WAYS)
    if unknown:
        raise ConfigError(f"unknown benchmark ways {sorted(unknown)}; choose among {', '.join(WAYS)}")
    if torch_threads is not None and torch_threads < 1:
        raise ConfigError(f"torch threads must be ≥ 1 (or left out: the CPUs JAX uses), got {torch_threads}")
    config = bench_config(preset, runs, steps, log_every, overrides)
    trainer = experiment.build_trainer(config)
    hparams = config.runs()
    n_runs = num_runs(hparams)
    first = take(hparams, 0)
    state = jax.jit(trainer.init)(first)
    step_flops = _flops(jax.jit(trainer.step), state, first)
    eval_flops = _flops(jax.jit(experiment.build_trainer(counting_config(config)).evaluate), state, first)
    steps = trainer.num_logs * config.train.log_every  # what actually runs
    total_flops = n_runs * (steps * step_flops + (steps // config.train.log_every) * eval_flops)
    peak = matmul_peak_flops(precision=getattr(config.model, "precision", "highest"))
    rows = []
    losses = {}

    def add(way, how, compile_s, wall, mem):
        rows.append(
            {
                "way": way,
                "how": how,
                "compile_s": compile_s,
                "wall_s": wall,
                "run_steps_per_s": n_runs * steps / wall,
                "flops_per_s": total_flops / wall,
                "fraction_of_matmul_peak": total_flops / wall / peak,
                "program_bytes": mem,
            }
        )

    default_plan = plan(config.execution, n_runs)
    strategies = [(default_plan.strategy, default_plan.runs_per_batch)] if "grid" in ways else []
    if "strategies" in ways:
        strategies += [
            s
            for s in [("map", 1), ("map", 4), ("vmap", n_runs)]
            if s != (default_plan.strategy, default_plan.runs_per_batch)
        ]
    for strategy, per_batch in strategies:
        how, compile_s, wall, mem, grid_first, grid_last = time_grid(trainer, config, hparams, strategy, per_batch)
        is_default = (strategy, per_batch) == (default_plan.strategy, default_plan.runs_per_batch)
        add("grid (default)" if is_default else "grid", how, compile_s, wall, mem)
        losses = losses or {"first": grid_first, "last": grid_last}
    if "loop" in ways:
        add("loop of jitted runs", "jit(train) per run", *time_loop(trainer, hparams))
    if "per-step" in ways:
        add("per-step Python loop", "jit(step) per step", *time_per_step(trainer, config, hparams), None)
    torch_report = None
    if "torch" in ways:
        if not losses:  # the comparison of losses needs the grid's; untimed here
            metrics = GridRun(trainer, hparams, config.execution).run()
            losses = {
                "first": {k: v[:, 0] for k, v in metrics.items()},
                "last": {k: v[:, -1] for k, v in metrics.items()},
            }
        torch_report = time_torch(config, hparams, losses["first"], losses["last"], torch_threads)
        if "wall_s" in torch_report:
            add(
                "PyTorch loop",
                f"torch {torch_report['torch']} eager, one run at a time, {torch_report['threads']} thread(s)",
                None,
                torch_report["wall_s"],
                None,
            )
    loop_wall = next((r["wall_s"] for r in rows if r["way"].startswith("loop")), None)
    torch_wall = next((r["wall_s"] for r in rows if r["way"] == "PyTorch loop"), None)
    for r in rows:
        r["speedup_vs_loop"] = loop_wall / r["wall_s"] if loop_wall else float("nan")
        r["speedup_vs_torch"] = torch_wall / r["wall_s"] if torch_wall else float("nan")
    device_peak = None
    stats = jax.local_devices()[0].memory_stats() if jax.default_backend() != "cpu" else None
    if stats:
        device_peak = stats.get("peak_bytes_in_use")
    return {
        "date": time.strftime("%Y-%m-%d"),
        "preset": preset,
        "overrides": list(overrides),
        "runs": n_runs,
        "steps": steps,
        "grid": {name: len(values) for name, values in config.grid.items() if len(values) > 1},
        "static": static_values(preset),
        "log_every": config.train.log_every,
        "backend": jax.default_backend(),
        "device": jax.local_devices()[0].device_kind,
        "device_count": jax.local_device_count(),
        "cpu": platform.processor() or platform.machine(),
        "jax": jax.__version__,
        "jax_threads": torch_baseline.threads_for_jax(),
        "matmul_peak_flops": peak,
        "matmul_size": reference_matmul_size(),
        "precision": getattr(config.model, "precision", "highest"),
        "step_flops": step_flops,
        "eval_flops": eval_flops,
        "params": int(sum(np.size(x) for x in jax.tree.leaves(state.params))),
        "process_peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "device_peak_bytes": device_peak,
        "rows": rows,
        "torch": torch_report,
    }


def relative_difference(ours: float, theirs: float) -> float:
    """(theirs − ours) / ours."""
    return (theirs - ours) / ours


def torch_lines(report: dict) -> list[str]:
    """What the PyTorch loop is compared on (parameters, FLOPs, losses) and its threads; or why it is absent."""
    t = report.get("torch")
    if not t:
        return []
    if "wall_s" not in t:
        return [t.get("missing") or t.get("unsupported")]
    params = "equal" if t["params"] == report["params"] else "DIFFERENT"
    step_d = relative_difference(report["step_flops"], t["step_flops"])
    eval_d = relative_difference(report["eval_flops"], t["eval_flops"])
    return [
        f"PyTorch loop (torch {t['torch']}): intra-op threads set to {t['threads']}"
        + (
            ", the CPUs XLA's thread pool uses"
            if t["threads"] == report["jax_threads"]
            else f" (--torch-threads; XLA's thread pool uses {report['jax_threads']} CPUs)"
        )
        + f"; torch's defaults here: {t['default_threads']} intra-op, {t['interop_threads']} inter-op threads.",
        f"Same computation? Parameters {report['params']:,} (JAX) and {t['params']:,} (torch): {params}. "
        f"FLOPs per step {report['step_flops'] / 1e6:.1f} M (XLA, every op) and {t['step_flops'] / 1e6:.1f} M "
        f"(torch's counter, matrix products and convolutions only): {100 * step_d:+.1f} %; per evaluation "
        f"{report['eval_flops'] / 1e6:.1f} M and {t['eval_flops'] / 1e6:.1f} M: {100 * eval_d:+.1f} %. "
        f"Train loss (mean over runs) at step 0: {t['jax_first_loss']:.4g} (JAX) and {t['torch_first_loss']:.4g} "
        f"(torch); at step {report['steps']}: {t['jax_last_loss']:.4g} and {t['torch_last_loss']:.4g} "
        f"(random streams differ: sizes, not values, compare).",
    ]


def markdown(report: dict) -> str:
    with_torch = any(r["way"] == "PyTorch loop" for r in report["rows"])
    lines = [
        f"Benchmark {report['date']}: preset `{report['preset']}`"
        + "".join(f" --set {o}" for o in report.get("overrides", ()))
        + f", {report['runs']} runs "
        f"({' × '.join(f'{n} {name}' for name, n in report['grid'].items())}) × {report['steps']} steps"
        + "".join(
            f", {name} = {value} (the largest bucket of the static axis)"
            for name, value in report.get("static", {}).items()
        )
        + " "
        f"(log every {report['log_every']}), backend {report['backend']} ({report['device']} × {report['device_count']}), "
        f"jax {report['jax']}. Matmul peak (float32 {report['matmul_size']}², precision {report['precision']}, same process): {report['matmul_peak_flops'] / 1e9:.0f} GFLOP/s. "
        f"Process peak RSS {report['process_peak_rss_bytes'] / 2**20:.0f} MiB"
        + (f", device peak {report['device_peak_bytes'] / 2**20:.0f} MiB." if report["device_peak_bytes"] else "."),
        "",
        "| way | execution | compile s | wall s | runs·steps/s | × loop |"
        + (" × PyTorch |" if with_torch else "")
        + " GFLOP/s | % matmul peak | program MiB |",
        "|---|---|---|---|---|---|" + ("---|" if with_torch else "") + "---|---|---|",
    ]
    for r in report["rows"]:
        mem = f"{r['program_bytes'] / 2**20:.1f}" if r["program_bytes"] else "–"
        compile_s = "–" if r["compile_s"] is None else f"{r['compile_s']:.1f}"
        versus_torch = f" {r['speedup_vs_torch']:.2f} |" if with_torch else ""
        lines.append(
            f"| {r['way']} | {r['how']} | {compile_s} | {r['wall_s']:.1f} | {r['run_steps_per_s']:.0f} | "
            f"{r['speedup_vs_loop']:.2f} |{versus_torch} {r['flops_per_s'] / 1e9:.1f} | "
            f"{100 * r['fraction_of_matmul_peak']:.0f}% | {mem} |"
        )
    extra = torch_lines(report)
    return "\n".join(lines) + "\n" + ("\n" + "\n\n".join(extra) + "\n" if extra else "")


MAIN_WAY = "main"
"""The way that times the main command end to end beside its bare grid (`benchmarks.main_command`: the preset as
`nht run` trains it, its own steps unless `main_steps`); asked for by name only, never by default (minutes)."""


def main(
    preset: str = "default",
    runs: int = 16,
    steps: int = 600,
    out: Path | None = None,
    log_every: int = 50,
    ways=WAYS,
    torch_threads: int | None = None,
    overrides=(),
    main_steps: int | None = None,
) -> dict:
    unknown = set(ways) - set(WAYS) - {MAIN_WAY}
    if unknown:
        raise ConfigError(f"unknown benchmark ways {sorted(unknown)}; choose among {', '.join((*WAYS, MAIN_WAY))}")
    report = {}
    if MAIN_WAY in ways:
        from benchmarks import main_command

        report = main_command.main(
            preset, main_steps, overrides, Path(out).with_name(Path(out).stem + "-main.md") if out else None
        )
        ways = tuple(w for w in ways if w != MAIN_WAY)
        if not ways:
            return report
    report = run_benchmark(
        preset, runs, steps, ways=ways, log_every=log_every, torch_threads=torch_threads, overrides=overrides
    )
    table = markdown(report)
    print(table)
    if out:
        write_report(out, table, report)
    return report


__all__ = [
    "MAIN_WAY",
    "WAYS",
    "bench_config",
    "counting_config",
    "largest_bucket",
    "main",
    "markdown",
    "matmul_peak_flops",
    "run_benchmark",
    "time_torch",
    "torch_lines",
]
