"""Shards against the whole grid (docs/findings/shards.md): each case trains a small grid once whole and once as K
shards (`nht_jax.training.shards`), merges the shards (`nht_jax.training.merge`) and compares the two folders:
trajectories.npz array by array (bit for bit, and the largest relative difference of any metric) and summary.csv
byte for byte.

    python benchmarks/shard_equality.py [--out DIR] [--cases buckets,vmap2,vmap3]

The grids are tests/conftest.py's tiny configuration (p = 31, width 32, 40 steps): `buckets` sweeps the static axis
grid.width = [16, 32] with one seed (2 buckets of 2 runs) in 3 shards (one bucket whole, the other cut in two);
`vmap2` and `vmap3` the 4-run grid under execution.strategy = "vmap" in 2 and in 3 shards."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from conftest import make_tiny_config  # noqa: E402

from nht_jax.training import merge, shards  # noqa: E402
from nht_jax.training.sweep import run_sweep  # noqa: E402

CASES = {
    "buckets": (dict(grid={"width": [16, 32], "seed": [0]}), 3),
    "vmap2": (dict(strategy="vmap"), 2),
    "vmap3": (dict(strategy="vmap"), 3),
}


def compare(whole: Path, merged: Path) -> tuple[bool, bool, float]:
    """(trajectories.npz bit for bit, summary.csv byte for byte, largest relative difference of any metric value)."""
    with np.load(whole / "trajectories.npz") as a, np.load(merged / "trajectories.npz") as b:
        same = a.files == b.files and all(a[k].tobytes() == b[k].tobytes() for k in a.files)
        worst = 0.0
        for key in (k for k in a.files if k.startswith("metric/")):
            x, y = a[key].astype(float), b[key].astype(float)
            scale = np.maximum(np.abs(x), 1e-30)
            finite = np.isfinite(x) & np.isfinite(y)
            if finite.any():
                worst = max(worst, float(np.max(np.abs(x - y)[finite] / scale[finite])))
    return same, (whole / "summary.csv").read_bytes() == (merged / "summary.csv").read_bytes(), worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="where the folders go (default: a temporary folder)")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma separated, of {', '.join(CASES)}")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="nht-shards-"))
    for name in args.cases.split(","):
        settings, count = CASES[name]
        config = make_tiny_config(**settings)
        whole, sharded = root / f"{name}-whole", root / f"{name}-sharded"
        run_sweep(config, whole, progress=False)
        for i in range(count):
            shards.run_shard(config, sharded, shards.Shard(i, count), progress=False)
        merge.merge(merge.shard_folders(sharded)[0], sharded)
        same, summary, worst = compare(whole, sharded)
        print(
            f"{name}: K = {count}, trajectories bit for bit: {same}, summary.csv identical: {summary}, largest "
            f"relative difference of a metric: {worst:.3g}",
            flush=True,
        )


if __name__ == "__main__":
    main()
