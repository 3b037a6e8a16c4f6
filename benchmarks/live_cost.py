"""What the live diagnosis costs a sweep (`live.enabled`, nht_jax.training.live; docs/guides/live.md; measured:
docs/findings/live-cost.md).

    .venv/bin/python benchmarks/live_cost.py [--preset default] [--scale quick] [--pairs 3]

Trains the preset at the scale `--warmup` times to warm up (default once; not counted), then `--pairs` pairs of sweeps
with the live table on (live.csv, live_history.csv, the progress.log line and live.png, as `nht run` draws it)
and off (`live.enabled = false`), in one process, interleaved on/off, off/on, on/off, … so that a drift of the
machine's load falls on both arms alike. Prints each sweep's wall time (run_sweep from call to return: training,
compiling and writing the folder), the time spent inside the live table's per-chunk call (`after_chunk`, timed
by wrapping it; 0 when off), the chunks, and at the end the ratio of the median wall times on/off with its spread
(the smallest and largest ratio of a pair) beside the share of the on-sweeps' wall time spent in the live call
(the direct measure, which the load's noise does not blur). Also checks the trajectories are bit for bit the same.

On a shared machine the wall time of a sweep follows the others' load (the same sweep took 36 s and 89 s
apart on 2026-12-02), so each sweep also reports what the load blurs less: the process's CPU time (every thread:
user + system), the chunks it trained (how many of each size, from progress.log: the clock sizes them, so load
changes them), the one-minute load average at its end, and for the live call the CPU time of the calling thread
beside that of the process's other threads during it (XLA's or BLAS's threads busy while the table is computed
would show there).
"""

import argparse
import collections
import os
import re
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from nht_jax.experiment import load
from nht_jax.figures import live as live_figure
from nht_jax.training import hooks
from nht_jax.training import live
from nht_jax.training import sweep


class Timed:
    """The live table hook's after_chunk (`hooks.LiveTableHook`), timed: total seconds and calls, and the live table's own split (diagnosing and writing, drawing)."""

    def __init__(self, inner):
        self.inner, self.seconds, self.calls, self.table = inner, 0.0, 0, None
        self.own_cpu = self.other_cpu = 0.0  # CPU during the call: this thread's, the process's other threads'

    def __call__(self, hook, sweep_, s, chunk):
        tick, process, thread = time.perf_counter(), time.process_time(), time.thread_time()
        self.inner(hook, sweep_, s, chunk)
        self.seconds += time.perf_counter() - tick
        own = time.thread_time() - thread
        self.own_cpu += own
        self.other_cpu += time.process_time() - process - own
        self.calls += 1
        self.table = hook.table or self.table


def cpu_seconds() -> float:
    """This process's CPU time so far, every thread, user + system."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def chunk_sizes(folder: Path) -> str:
    """The chunks of a sweep by size, from its progress.log: "1 log × 58, 2 logs × 1"."""
    sizes = collections.Counter(
        int(n) for n in re.findall(r"  chunk (\d+) logs in ", (folder / "progress.log").read_text())
    )
    return ", ".join(f"{n} log{'s' if n > 1 else ''} × {k}" for n, k in sorted(sizes.items()))


def one_sweep(preset: str, scale: str, on: bool, out: Path):
    """(wall s, live s, (diagnosing and writing s, drawing s), chunks, results, Timed, process CPU s) of one sweep
    into `out`."""
    timed = Timed(hooks.LiveTableHook.after_chunk)
    hooks.LiveTableHook.after_chunk = lambda hook, *args: timed(hook, *args)  # a function: bound as a method
    try:
        config = load(preset, [f"live.enabled={str(on).lower()}"], scale=scale or None)
        tick, cpu = time.perf_counter(), cpu_seconds()
        with live.drawing(live_figure.draw):
            res = sweep.run_sweep(config, out, progress=False, overwrite=True)
        wall, cpu = time.perf_counter() - tick, cpu_seconds() - cpu
    finally:
        hooks.LiveTableHook.after_chunk = timed.inner
    split = (timed.table.seconds, timed.table.draw_seconds) if timed.table else (0.0, 0.0)
    return wall, timed.seconds, split, timed.calls, res, timed, cpu


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="default")
    parser.add_argument("--scale", default="quick", help='a scale of the preset; "" for its full size')
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="warm-up sweeps before the pairs (0: none)")
    args = parser.parse_args()
    walls, cpus = {True: [], False: []}, {True: [], False: []}
    live_share, table_share, loads = [], [], [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        ref = None
        for k in range(args.warmup):
            wall, _, _, _, ref, _, _ = one_sweep(args.preset, args.scale, False, Path(tmp) / f"warm-{k}")
            print(f"warm-up (not counted): {wall:.1f} s", flush=True)
        for k in range(args.pairs):
            for on in (True, False) if k % 2 == 0 else (False, True):
                out = Path(tmp) / f"{k}-{on}"
                wall, spent, (table, drawn), chunks, res, timed, cpu = one_sweep(args.preset, args.scale, on, out)
                loads.append(os.getloadavg()[0])
                ref = ref or res
                for name in ref.metrics:
                    np.testing.assert_array_equal(res.metrics[name], ref.metrics[name])
                walls[on].append(wall)
                cpus[on].append(cpu)
                if on:
                    live_share.append(spent / wall)
                    table_share.append(table / wall)
                print(
                    f"pair {k + 1} live {'on ' if on else 'off'}: wall {wall:.1f} s, in the live call {spent:.2f} s "
                    f"over {chunks} chunks ({spent / max(chunks, 1) * 1e3:.0f} ms each; diagnosing and writing {table:.2f} s, "
                    f"drawing live.png {drawn:.2f} s; CPU in it: this thread {timed.own_cpu:.2f} s, other threads "
                    f"{timed.other_cpu:.2f} s); process CPU {cpu:.1f} s; chunks: {chunk_sizes(out)}; load {loads[-1]:.1f}",
                    flush=True,
                )
    ratios = np.array(walls[True]) / np.array(walls[False])
    cpu_ratios = np.array(cpus[True]) / np.array(cpus[False])
    print(
        f"wall on / off: median {np.median(walls[True]) / np.median(walls[False]):.3f} (pairs {ratios.min():.3f}–"
        f"{ratios.max():.3f}); the live call's share of the on-sweeps' wall time: "
        f"{np.median(live_share):.2%} ({min(live_share):.2%}–{max(live_share):.2%}), of it diagnosing and writing "
        f"{np.median(table_share):.2%} ({min(table_share):.2%}–{max(table_share):.2%}); process CPU on / off: median "
        f"{np.median(cpus[True]) / np.median(cpus[False]):.3f} (pairs {cpu_ratios.min():.3f}–{cpu_ratios.max():.3f}); "
        f"load average {min(loads):.1f}–{max(loads):.1f}; trajectories identical"
    )


if __name__ == "__main__":
    main()
