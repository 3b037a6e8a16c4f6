"""Time one grid three ways (one compiled program, a loop of jitted runs, a per-step loop).

    .venv/bin/python benchmarks/bench_grid.py [--preset default] [--runs 16] [--steps 600] [--log-every 50] [--out FILE.md]

An image preset (e.g. --preset border-digits) times a λ × ρ × seed grid (see `bench_config`).

Same as `nht bench`. The Markdown table (and a .json beside it with --out) reports wall
time, runs·steps/s, the speed relative to the loop, achieved FLOP/s against a matmul timed
in the same process, and the compiled program's memory.
"""

import argparse
from pathlib import Path

from nht_jax.run.benchmark import main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    main(args.preset, args.runs, args.steps, args.out, args.log_every)
