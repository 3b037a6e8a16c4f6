"""A second `nht run` against the first: the start time the persistent compilation cache saves.

    python benchmarks/compile_cache.py [--preset tiny] [--preset default --set train.steps=500 …] [--out FILE.md]

For each preset, three `nht run`s in fresh subprocesses (the way a user starts them): with NHT_COMPILE_CACHE=off,
then twice with an empty temporary cache folder (cold: every program compiled and written; warm: every program
loaded). Reported per run: the whole command's wall time, the first chunk's seconds (compile included, from
progress.log), the sum of the chunks that compiled, and the programs in the cache. Without --preset: `tiny` and
`default` cut to 500 steps (the default's programs, a shorter training).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHUNK = re.compile(r"chunk \d+ logs in ([0-9.]+) s( \(compiling\))?")
DEFAULT_JOBS = [("tiny", []), ("default", ["train.steps=500"])]


def timed_run(preset: str, overrides: list[str], out: Path, cache: str) -> dict:
    """One `nht run` in a subprocess: wall seconds, first chunk seconds, compiling chunks' seconds."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JAX_PERSISTENT_CACHE_MIN_", "JAX_COMPILATION_CACHE_DIR"))
    }
    command = [
        sys.executable,
        "-m",
        "nht_jax.cli",
        "run",
        preset,
        "--out",
        str(out),
        "--quiet",
        "--overwrite",
        *[arg for o in overrides for arg in ("--set", o)],
    ]
    start = time.perf_counter()
    subprocess.run(command, env={**env, "NHT_COMPILE_CACHE": cache}, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    chunks = CHUNK.findall((out / "progress.log").read_text())
    return {
        "wall_s": wall,
        "first_chunk_s": float(chunks[0][0]),
        "compiling_s": sum(float(s) for s, compiling in chunks if compiling),
    }


def measure(preset: str, overrides: list[str], work: Path) -> list[dict]:
    cache = work / "cache"
    rows = []
    for name, setting in (("off", "off"), ("cold", str(cache)), ("warm", str(cache))):
        row = timed_run(preset, overrides, work / f"out-{name}", setting)
        programs = len(list(cache.glob("*-cache"))) if cache.is_dir() else 0
        rows.append({"preset": " ".join([preset, *overrides]), "cache": name, "programs": programs, **row})
    return rows


def table(rows: list[dict]) -> str:
    lines = [
        "| preset | cache | programs cached | whole command s | first chunk s | compiling chunks s |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['preset']} | {r['cache']} | {r['programs']} | {r['wall_s']:.1f} | {r['first_chunk_s']:.2f} | "
        f"{r['compiling_s']:.2f} |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", action="append", help="a preset (repeatable; default: tiny and default)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="KEY=VALUE for every preset")
    parser.add_argument("--out", type=Path, help="also write the table as Markdown here")
    args = parser.parse_args(argv)
    jobs = [(p, args.overrides) for p in args.preset] if args.preset else DEFAULT_JOBS
    rows = []
    for preset, overrides in jobs:
        with tempfile.TemporaryDirectory(prefix="nht-cache-bench-") as work:
            rows += measure(preset, overrides, Path(work))
    stamp = (
        f"{datetime.date.today().isoformat()}, {platform.node()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at the end"
    )
    text = f"{table(rows)}\n\n{stamp}\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
