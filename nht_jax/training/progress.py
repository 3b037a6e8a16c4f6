"""DIR/progress.log: a sweep's lines, appended and flushed one at a time, so `tail -f DIR/progress.log` follows it
(also remotely).

A "started" line (configuration, runs, steps, plan, chunk sizing, memory plan, pid and host), "resumed at step S of
T" when a checkpoint is used, one line per chunk (steps, runs, the chunk's time and rate, elapsed time, peak
memory, checkpoint), "run slice k/K done" between run slices, and at the end "finished: …" or "stopped (…) at step
S of T; …" with where a rerun resumes. With static axes the lines of a bucket say so (`nht_jax.training.buckets`).

A chunk's line, field by field: docs/guides/execution.md, "Chunks, progress and checkpoints"; the stop lines:
docs/guides/faults.md, "Signals"."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

import jax

from nht_jax.base.atomic import append_text
from nht_jax.engine import distributed

PROGRESS_LOG = "progress.log"


class ProgressLog:
    """DIR/progress.log (module docstring); written by process 0 only (`distributed.is_writer`), a no-op
    elsewhere."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.enabled = distributed.is_writer()

    def write(self, text: str) -> None:
        """Append one line (`atomic.append_text`: a symbolic link is refused with one line); an OSError (a full
        disk, a quota) names progress.log, which a failed write or flush does not (the command's one line then
        names the file, not only its folder)."""
        if not self.enabled:
            return
        stamp = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        append_text(self.path, f"{stamp}  {text}\n")  # never through a symbolic link

    def chunk(
        self,
        step: int,
        steps: int,
        runs: int,
        logs: int,
        chunk_steps: int,
        seconds: float,
        compiled: bool,
        elapsed: float,
        checkpoint: bool,
        devices: int,
        label: str = "",
    ) -> None:
        """The line of one chunk: `runs` trained `chunk_steps` steps (`logs` log intervals) in `seconds`."""
        rate = runs * chunk_steps / max(seconds, 1e-9)
        device = device_peak_bytes(devices)
        self.write(
            f"step {step}/{steps} ({100 * step / steps:.1f}%)  {runs} runs{label}  "
            f"chunk {logs} logs in {seconds:.2f} s{' (compiling)' if compiled else ''}  "
            f"{rate:.4g} run·steps/s  elapsed {datetime.timedelta(seconds=round(elapsed))}  "
            f"peak RSS {gib(peak_rss_bytes())}  device peak {gib(device)}"
            f"{'  checkpoint written' if checkpoint else ''}"
        )


def gib(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**30:.2f} GiB"


def peak_rss_bytes() -> int | None:
    """Peak resident memory of this process (None where `resource` is missing, as on Windows)."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux


def device_peak_bytes(devices: int) -> int | None:
    """The largest peak memory in use on the devices the grid runs on (None where not reported, as on CPU).

    Args:
        devices: how many of the local devices the grid runs on.

    Returns:
        The bytes, or None.
    """
    peaks = []
    for device in jax.local_devices()[:devices]:
        try:
            stats = device.memory_stats()
        except (RuntimeError, NotImplementedError):  # some backends raise instead of returning None
            stats = None
        if stats and "peak_bytes_in_use" in stats:
            peaks.append(stats["peak_bytes_in_use"])
    return max(peaks) if peaks else None


__all__ = ["device_peak_bytes"]
