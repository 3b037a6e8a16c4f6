"""Time one grid four ways (one compiled program, a loop of jitted runs, a per-step loop, a plain PyTorch loop).

    .venv/bin/python benchmarks/bench_grid.py [--preset default] [--runs 16] [--steps 600] [--log-every 50]
        [--ways grid,strategies,loop,per-step,torch] [--torch-threads N] [--set KEY=VALUE ...] [--out FILE.md]

An image preset (e.g. --preset border-digits) times a λ × ρ × seed grid (see `bench_config`).

Same as `nht tool bench`. The Markdown table (and a .json beside it with --out) reports wall
time, runs·steps/s, the speed relative to the loop and to PyTorch, achieved FLOP/s against a
matmul timed in the same process, and the compiled program's memory. The PyTorch rows need the
`bench` extra (`pip install 'nht_jax[bench]'`, CPU torch); without it the table says so.
"""

import argparse
from pathlib import Path

import sys

if __package__ in (None, ""):  # run as `python benchmarks/…py`: make the `benchmarks` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import WAYS, main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--ways", default=",".join(WAYS))
    parser.add_argument("--torch-threads", type=int)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    main(
        args.preset,
        args.runs,
        args.steps,
        args.out,
        args.log_every,
        ways=tuple(w.strip() for w in args.ways.split(",") if w.strip()),
        torch_threads=args.torch_threads,
        overrides=tuple(args.overrides),
    )
