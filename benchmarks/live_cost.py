"""What the live diagnosis costs a sweep (`execution.live`, nht_jax.run.live; docs/usage/live.md).

    .venv/bin/python benchmarks/live_cost.py [--preset default] [--scale quick] [--pairs 2]

Trains the preset at the scale `--warmup` times to warm up (default once; not counted), then `--pairs` pairs of sweeps
with the live table on (live.csv, live_history.csv, the progress.log line and live.png, as `nht run` draws it)
and off (`execution.live = false`), in one process, interleaved on/off, off/on, on/off, … so that a drift of the
machine's load falls on both arms alike. Prints each sweep's wall time (run_sweep from call to return: training,
compiling and writing the folder), the time spent inside the live table's per-chunk call (`after_chunk`, timed
by wrapping it; 0 when off), the chunks, and at the end the ratio of the median wall times on/off with its spread
(the smallest and largest ratio of a pair) beside the share of the on-sweeps' wall time spent in the live call
(the direct measure, which the load's noise does not blur). Also checks the trajectories are bit for bit the same.
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from nht_jax.experiment import load
from nht_jax.figures import live as live_figure
from nht_jax.run import live, sweep, training


class Timed:
    """after_chunk, timed: total seconds and calls, and the live table's own split (diagnosing and writing, drawing)."""

    def __init__(self, inner):
        self.inner, self.seconds, self.calls, self.table = inner, 0.0, 0, None

    def __call__(self, training_, s):
        tick = time.perf_counter()
        self.inner(training_, s)
        self.seconds += time.perf_counter() - tick
        self.calls += 1
        self.table = live.table_of(training_) or self.table


def one_sweep(preset: str, scale: str, on: bool, out: Path):
    """(wall s, live s, (diagnosing and writing s, drawing s), chunks, results) of one sweep into `out`."""
    timed = Timed(live.after_chunk)
    training.update_live_table = timed
    try:
        config = load(preset, [f"execution.live={str(on).lower()}"], scale=scale or None)
        tick = time.perf_counter()
        with live.drawing(live_figure.draw):
            res = sweep.run_sweep(config, out, progress=False, overwrite=True)
        wall = time.perf_counter() - tick
    finally:
        training.update_live_table = timed.inner
    split = (timed.table.seconds, timed.table.draw_seconds) if timed.table else (0.0, 0.0)
    return wall, timed.seconds, split, timed.calls, res


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="default")
    parser.add_argument("--scale", default="quick", help="a scale of the preset; \"\" for its full size")
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=1, help="warm-up sweeps before the pairs (0: none)")
    args = parser.parse_args()
    walls = {True: [], False: []}
    live_share, table_share = [], []
    with tempfile.TemporaryDirectory() as tmp:
        ref = None
        for k in range(args.warmup):
            wall, _, _, _, ref = one_sweep(args.preset, args.scale, False, Path(tmp) / f"warm-{k}")
            print(f"warm-up (not counted): {wall:.1f} s", flush=True)
        for k in range(args.pairs):
            for on in ((True, False) if k % 2 == 0 else (False, True)):
                wall, spent, (table, drawn), chunks, res = one_sweep(args.preset, args.scale, on, Path(tmp) / f"{k}-{on}")
                ref = ref or res
                for name in ref.metrics:
                    np.testing.assert_array_equal(res.metrics[name], ref.metrics[name])
                walls[on].append(wall)
                if on:
                    live_share.append(spent / wall)
                    table_share.append(table / wall)
                print(f"pair {k + 1} live {'on ' if on else 'off'}: wall {wall:.1f} s, in the live call {spent:.2f} s "
                      f"over {chunks} chunks ({spent / max(chunks, 1) * 1e3:.0f} ms each; diagnosing and writing {table:.2f} s, "
                      f"drawing live.png {drawn:.2f} s)", flush=True)
    ratios = np.array(walls[True]) / np.array(walls[False])
    print(f"wall on / off: median {np.median(walls[True]) / np.median(walls[False]):.3f} (pairs {ratios.min():.3f}–"
          f"{ratios.max():.3f}); the live call's share of the on-sweeps' wall time: "
          f"{np.median(live_share):.2%} ({min(live_share):.2%}–{max(live_share):.2%}), of it diagnosing and writing "
          f"{np.median(table_share):.2%} ({min(table_share):.2%}–{max(table_share):.2%}); trajectories identical")


if __name__ == "__main__":
    main()
