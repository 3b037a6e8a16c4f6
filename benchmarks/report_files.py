"""A benchmark's report on disk: the Markdown table and its JSON beside it, each written atomically (a run killed
while writing leaves the previous report whole), shared by `nht tool bench` (`benchmarks.harness`), the main command's
way (`benchmarks.main_command`) and the GPU sweep (`benchmarks.gpu_sweep`)."""

from __future__ import annotations

import json
from pathlib import Path

from nht_jax.base.atomic import atomic_write_text


def write_report(out: Path, table: str, report: dict) -> None:
    """`out` (Markdown) and `out` with the suffix .json (the report, floats as numbers), folders made."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, table)
    atomic_write_text(out.with_suffix(".json"), json.dumps(report, indent=2, default=float))


__all__ = ["write_report"]
