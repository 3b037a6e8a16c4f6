"""Wall-time saved by a stop rule (`stop.rule`) on a grid where most runs stop early.

    .venv/bin/python benchmarks/early_stop.py [--n 80] [--d 400] [--steps 4000]

Trains the toy-linear λ × η grid twice into temporary folders, without a stop rule and with "transition" (margin
500 steps), and prints the training wall time of each (meta.json's train_wall_s: compiling included, the memory
estimate not), the run·steps computed, and checks that the runs that did not stop are bit for bit the same.
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from nht_jax.experiment import load
from nht_jax.training import sweep


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=80)
    parser.add_argument("--d", type=int, default=400)
    parser.add_argument("--steps", type=int, default=4000)
    args = parser.parse_args()
    base = [
        f"task.n={args.n}",
        f"task.d={args.d}",
        f"train.steps={args.steps}",
        "train.log_every=20",
        "execution.strategy=map",
        "grid.weight_decay=[5e-3, 1e-2, 2e-2]",
        "grid.learning_rate=[0.03, 0.06, 0.1, 0.15]",
    ]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in (
            ("none", []),
            ("transition", ["stop.rule=transition", "stop.margin_steps=500"]),
        ):
            tick = time.time()
            res = sweep.run_sweep(load("toy-linear", base + extra), Path(tmp) / name, progress=False)
            out[name] = (res, res.meta["train_wall_s"], time.time() - tick)
    (ref, ref_wall, ref_total), (stop, stop_wall, stop_total) = out["none"], out["transition"]
    stopped = np.isfinite(stop.stopped_step)
    steps = np.where(stopped, stop.stopped_step, args.steps)
    for name in ref.metrics:
        np.testing.assert_array_equal(stop.metrics[name][~stopped], ref.metrics[name][~stopped])
    print(
        f"{ref.num_runs} runs × {args.steps} steps (n = {args.n}, d = {args.d}); {stopped.sum()} stop early, "
        f"keeping {steps.sum() / (ref.num_runs * args.steps):.0%} of the run·steps (at log resolution)"
    )
    print(
        f"train wall: no stop rule {ref_wall:.1f} s, stop_rule = transition {stop_wall:.1f} s "
        f"({stop_wall / ref_wall:.2f}×); whole command {ref_total:.1f} s vs {stop_total:.1f} s"
    )


if __name__ == "__main__":
    main()
