"""The GPU sweep benchmark: whole sweeps through `nht run`'s own path on one accelerator, no downloads.

    python benchmarks/gpu_sweep.py [--out DIR] [--quick] [--jobs scaling,precision,companion,mlp,companion_full]
        [--budget-s SECONDS]

On a lent GPU, the one prepared command (5 minutes at most, so that a rerun and the machine's start fit in 15 minutes
of device time; no job starts after 150 s, leaving the companion sweep, goal under 2 minutes, its time; `--single 0`
skips the one-at-a-time comparison):

    timeout 300 python benchmarks/gpu_sweep.py --out "$OUT/gpu_sweep" --budget-s 150 --single 0

Jobs, in the order given (default: scaling, precision, companion); a job is skipped, with the reason, once
`--budget-s` seconds have passed since the start, and the report (DIR/gpu_sweep.json and .md) is rewritten after
every job, so a run cut short by its timeout keeps what it measured:

    scaling         the time of one training step against the number of runs vmapped together (1, 4, 16, 64, 256
                    runs of the companion's model, λ log-spaced, one compiled call of `--scaling-steps` steps timed
                    after its compile, best of two): a small-step `lax.scan` can be launch-bound on a GPU
                    (jax-ml/jax#29946), so a step of 1 run may take nearly as long as a step of 64
    precision       the same step, 64 runs, with float32 matrix products at "highest" (true float32, the presets'
                    setting) against TF32 (model.precision = "default" and jax's default_matmul_precision
                    "tensorfloat32"): the per-step times and the final train loss of each

Sweep jobs (each a real `run_sweep` into DIR/<job>: chunks, checkpoints, the lock, progress.log):
    companion       the companion λ-sweep: preset companion-transformer, 8 λ × 10 seeds = 80 runs, 15,000 steps
                    (goal on one H200: under 2 minutes; one step of one run ≈ 1.3 GFLOP, so about 28 % of a
                    50 TFLOP/s float32 peak)
    mlp             the default MLP preset as a grid of ≥ 1,000 runs (125 λ × 8 seeds), its 6,000 steps
    companion_full  the companion's full budget (80,000 steps) with finished runs leaving the batch
                    (stop.rule = "transition", 2,000 steps after the transition, as the companion
                    code stops)
Reported per job, measured side by side in one process: wall time of the whole sweep (compiles included),
runs·steps/s, the ratio to one-at-a-time runs on the same device (one compile of the jitted single-run `train`
plus a Python loop of it over `--single` runs of the same configuration, extrapolated to all runs), achieved FLOP/s (XLA's
FLOP count of one step and one evaluation × how often each ran) against a float32 matmul timed in the same
process, and the device's peak memory. `--quick` shrinks every job (steps, λ, seeds, runs: 1, 4, 16) to a CPU smoke test (seconds; tests/benchmarks
runs it). Writes DIR/gpu_sweep.md and DIR/gpu_sweep.json.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax
import numpy as np

import sys

if __package__ in (None, ""):  # run as `python benchmarks/…py`: make the `benchmarks` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nht_jax import experiment
from nht_jax.engine.executor import GridRun, host
from nht_jax.engine.grid import num_runs, take
from benchmarks.harness import _flops, matmul_peak_flops
from benchmarks.report_files import write_report
from nht_jax.training.sweep import run_sweep

JOBS = {
    "companion": ("companion-transformer", ["train.steps=15000"]),
    "mlp": ("default", ["grid.weight_decay={logspace=[1e-3, 10.0, 125]}", "grid.seed=[0,1,2,3,4,5,6,7]"]),
    "companion_full": (
        "companion-transformer",
        ["train.steps=80000", "stop.rule=transition", "stop.margin_steps=2000"],
    ),
}
QUICK = {
    "companion": [
        "train.steps=500",
        "train.log_every=250",
        "grid.weight_decay=[0.3, 1.0]",
        "grid.seed=[0]",
        "task.p=23",
        "train.batch_size=64",
        "model.d_model=32",
        "model.d_mlp=64",
    ],
    "mlp": ["train.steps=200", "grid.weight_decay={logspace=[1e-3, 10.0, 4]}", "grid.seed=[0,1]", "task.p=23"],
    "companion_full": [
        "train.steps=1000",
        "train.log_every=250",
        "grid.weight_decay=[0.3, 1.0]",
        "grid.seed=[0]",
        "task.p=23",
        "train.batch_size=64",
        "model.d_model=32",
        "model.d_mlp=64",
        "stop.margin_steps=250",
    ],
}


SCALING_RUNS = (1, 4, 16, 64, 256)
QUICK_SCALING_RUNS = (1, 4, 16)
STEP_JOB = ("companion-transformer", ["train.steps=1000", "train.log_every=250"])
QUICK_STEP_JOB = ("default", ["train.steps=40", "train.log_every=20", "task.p=23", "model.hidden=[16]"])
PRECISIONS = {"highest": ("highest", "highest"), "tf32": ("default", "tensorfloat32")}
"""Name → (model.precision, jax's default_matmul_precision) of the precision job."""


def step_config(runs: int, quick: bool, precision: str = "highest") -> experiment.Config:
    """The step jobs' configuration: `runs` runs (λ log-spaced over [0.1, 3], seed 0), vmapped together, at a
    precision of `PRECISIONS`."""
    preset, overrides = QUICK_STEP_JOB if quick else STEP_JOB
    lams = [1.0] if runs == 1 else [float(x) for x in np.logspace(-1, np.log10(3.0), runs)]
    return experiment.load(
        preset,
        overrides
        + [
            f"grid.weight_decay={lams}",
            "grid.seed=[0]",
            "execution.strategy=vmap",
            f"model.precision={PRECISIONS[precision][0]}",
        ],
    )


def time_steps(config: experiment.Config, precision: str = "highest", repeats: int = 2) -> dict:
    """One compiled call of every log of `config` (its runs vmapped): compile seconds, then the best of `repeats`
    calls → seconds per step, run·steps/s, the mean final train loss."""
    with jax.default_matmul_precision(PRECISIONS[precision][1]):
        trainer = experiment.build_trainer(config)
        grid_run = GridRun(trainer, config.runs(), config.execution)
        states = grid_run.init()
        jax.block_until_ready(states)
        ((n, every),) = trainer.schedule.pieces(0, trainer.num_logs)
        t = time.perf_counter()
        compiled = grid_run.advance_program.lower(states, grid_run.runs, n, every).compile()
        compile_s = time.perf_counter() - t
        best, metrics = float("inf"), None
        for _ in range(repeats):
            t = time.perf_counter()
            _, metrics = compiled(states, grid_run.runs)
            jax.block_until_ready(metrics)
            best = min(best, time.perf_counter() - t)
    runs, steps = num_runs(config.runs()), config.train.steps
    loss = host(metrics)["train_loss"][:runs, -1]
    return {
        "runs": runs,
        "steps": steps,
        "precision": precision,
        "compile_s": compile_s,
        "call_s": best,
        "step_ms": 1e3 * best / steps,
        "run_steps_per_s": runs * steps / best,
        "final_train_loss": float(np.mean(loss)),
    }


def scaling_job(quick: bool) -> dict:
    """Per-step time against the number of runs vmapped together (module docstring)."""
    rows = [time_steps(step_config(r, quick)) for r in (QUICK_SCALING_RUNS if quick else SCALING_RUNS)]
    return {"job": "scaling", "preset": (QUICK_STEP_JOB if quick else STEP_JOB)[0], "rows": rows}


def precision_job(quick: bool) -> dict:
    """The same step at float32 "highest" and at TF32 (module docstring)."""
    runs = QUICK_SCALING_RUNS[-1] if quick else 64
    rows = [time_steps(step_config(runs, quick, p), p) for p in PRECISIONS]
    return {
        "job": "precision",
        "preset": (QUICK_STEP_JOB if quick else STEP_JOB)[0],
        "rows": rows,
        "tf32_speedup": rows[0]["call_s"] / rows[1]["call_s"],
    }


def single_run_seconds(config, runs: int) -> tuple[float, float]:
    """(seconds per run of a Python loop of the jitted single-run train over `runs` runs, compile seconds)."""
    trainer = experiment.build_trainer(config)
    hparams = config.runs()
    train = jax.jit(trainer.train)
    t = time.perf_counter()
    compiled = train.lower(take(hparams, 0)).compile()
    compile_s = time.perf_counter() - t
    runs = min(runs, num_runs(hparams))
    t = time.perf_counter()
    for i in range(runs):
        jax.block_until_ready(compiled(take(hparams, i)))
    return (time.perf_counter() - t) / runs, compile_s


def flops_per_run(config) -> float:
    """XLA's FLOP count of one run's whole budget: steps × one step + logs × one evaluation."""
    trainer = experiment.build_trainer(config)
    first = take(config.runs(), 0)
    state = jax.jit(trainer.init)(first)
    step, evaluate = _flops(jax.jit(trainer.step), state, first), _flops(jax.jit(trainer.evaluate), state, first)
    return config.train.steps * step + (trainer.num_logs + 1) * evaluate


def run_job(name: str, out: Path, quick: bool, single: int, peak: float) -> dict:
    preset, overrides = JOBS[name]
    config = experiment.load(preset, overrides + (QUICK[name] if quick else []))
    runs = num_runs(config.runs())
    flops = flops_per_run(config)
    t = time.perf_counter()
    res = run_sweep(config, out / name, progress=False, overwrite=True)
    wall = time.perf_counter() - t
    steps_done = runs * config.train.steps
    if "stopped_step" in res.metrics or any("stopped_step" in r for r in res.summary[:1]):
        stopped = np.array([r.get("stopped_step", np.nan) for r in res.summary], float)
        steps_done = float(np.nansum(np.where(np.isfinite(stopped), stopped, config.train.steps)))
    per_run, single_compile = single_run_seconds(config, single) if single else (float("nan"), float("nan"))
    device_stats = jax.local_devices()[0].memory_stats() if jax.default_backend() != "cpu" else None
    return {
        "job": name,
        "preset": preset,
        "overrides": overrides + (QUICK[name] if quick else []),
        "runs": runs,
        "steps": config.train.steps,
        "run_steps_done": steps_done,
        "wall_s": wall,
        "run_steps_per_s": steps_done / wall,
        "one_at_a_time_s": single_compile + per_run * runs,
        "speedup_vs_one_at_a_time": (single_compile + per_run * runs) / wall,
        "single_runs_timed": min(single, runs),
        "single_compile_s": single_compile,
        "flops_per_run_budget": flops,
        "flops_per_s": flops * steps_done / config.train.steps / wall,
        "fraction_of_matmul_peak": flops * steps_done / config.train.steps / wall / peak,
        "regimes": {r: sum(row["regime"] == r for row in res.summary) for r in {row["regime"] for row in res.summary}},
        "device_peak_bytes": device_stats.get("peak_bytes_in_use") if device_stats else None,
    }


def markdown(report: dict) -> str:
    lines = [
        f"GPU sweep benchmark {report['date']}: {report['device']} × {report['device_count']} "
        f"({report['backend']}), jax {report['jax']}; float32 matmul peak {report['matmul_peak_flops'] / 1e12:.1f} "
        f"TFLOP/s ({report.get('matmul_size', 8192)}², same process){' — QUICK (CPU smoke sizes)' if report['quick'] else ''}.",
        "",
        "| job | runs × steps | wall s | runs·steps/s | × one-at-a-time | TFLOP/s | % matmul peak | device peak GiB | regimes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    steps = [j for j in report["jobs"] if j.get("job") in ("scaling", "precision") and "rows" in j]
    for j in report["jobs"]:
        if j.get("job") in ("scaling", "precision"):
            continue
        if "skipped" in j:
            lines.append(f"| {j['job']} | skipped: {j['skipped']} | | | | | | | |")
            continue
        mem = f"{j['device_peak_bytes'] / 2**30:.1f}" if j["device_peak_bytes"] else "–"
        lines.append(
            f"| {j['job']} | {j['runs']} × {j['steps']} | {j['wall_s']:.1f} | {j['run_steps_per_s']:.0f} | "
            f"{j['speedup_vs_one_at_a_time']:.1f} | {j['flops_per_s'] / 1e12:.2f} | "
            f"{100 * j['fraction_of_matmul_peak']:.0f}% | {mem} | "
            f"{', '.join(f'{k} {v}' for k, v in sorted(j['regimes'].items()))} |"
        )
    for j in steps:
        lines += [
            "",
            f"{j['job']} ({j['preset']}, runs vmapped, one compiled call timed after its compile, best of 2):",
            "",
            "| runs | precision | steps | compile s | ms per step | runs·steps/s | final train loss |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['runs']} | {r['precision']} | {r['steps']} | {r['compile_s']:.1f} | {r['step_ms']:.3f} | "
            f"{r['run_steps_per_s']:.0f} | {r['final_train_loss']:.4g} |"
            for r in j["rows"]
        ]
        if "tf32_speedup" in j:
            lines += ["", f"TF32 against float32 highest: {j['tf32_speedup']:.2f}× the speed."]
    lines += [
        f"| skipped | {j['job']}: {j['skipped']} |"
        for j in report["jobs"]
        if j.get("job") in ("scaling", "precision") and "skipped" in j
    ]
    return "\n".join(lines) + "\n"


STEP_JOBS = {"scaling": scaling_job, "precision": precision_job}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("runs/out/gpu_sweep"))
    parser.add_argument("--quick", action="store_true", help="CPU smoke-test sizes")
    parser.add_argument(
        "--jobs",
        default="scaling,precision,companion",
        help="comma-separated, among scaling, precision, companion, mlp, companion_full",
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        default=float("inf"),
        help="start no job after this many seconds (the ones left are reported as skipped)",
    )
    parser.add_argument("--single", type=int, default=2, help="runs timed one at a time (0: skip)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    size = 8192 if jax.default_backend() != "cpu" else 1024
    peak = matmul_peak_flops(size)
    report = {
        "date": time.strftime("%Y-%m-%d"),
        "backend": jax.default_backend(),
        "device": jax.local_devices()[0].device_kind,
        "device_count": jax.local_device_count(),
        "jax": jax.__version__,
        "matmul_peak_flops": peak,
        "matmul_size": size,
        "quick": args.quick,
        "jobs": [],
    }
    names = [n.strip() for n in args.jobs.split(",") if n.strip()]
    unknown = sorted(set(names) - set(STEP_JOBS) - set(JOBS))
    if unknown:
        parser.error(f"unknown jobs {unknown}; choose among {', '.join([*STEP_JOBS, *JOBS])}")
    start = time.perf_counter()
    for name in names:
        if time.perf_counter() - start > args.budget_s:
            report["jobs"].append({"job": name, "skipped": f"--budget-s {args.budget_s:g} s spent"})
        elif name in STEP_JOBS:
            report["jobs"].append(STEP_JOBS[name](args.quick))
        else:
            report["jobs"].append(run_job(name, args.out, args.quick, args.single, peak))
        report["wall_s"] = time.perf_counter() - start
        write_report(args.out / "gpu_sweep.md", markdown(report), report)
        print(markdown(report), flush=True)


if __name__ == "__main__":
    main()
