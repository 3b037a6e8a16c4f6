"""Whether a job of `nht submit --executor local` still runs: its process, known by pid *and* start time.

submitit's LocalExecutor names a job by its process id. A pid is reused once its process has ended (soon, in a
container's small pid space), so "a process with this pid lives" is not "the job still runs": `nht submit` would
then wait on a stranger for ever, or never resubmit the shard whose job was lost. So submit.json records with each
local job its process's start time (field 22 of /proc/PID/stat, clock ticks since boot, unique to one process of one
pid until the next boot), and a job runs when a process with its pid lives (not a zombie) and started then. A job
recorded without a start time (a submit.json of older code, or a job that ended before its start could be read)
runs when its pid's process lives and is submitit's local job runner (`submitit.local._local` on its command
line)."""

from __future__ import annotations

from pathlib import Path

RUNNER = b"submitit.local._local"
"""What the command line of submitit's local job process holds (`python -m submitit.local._local FOLDER`)."""


def stat_fields(pid) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (field 3, the state, first); None when there is no such
    process (or no /proc)."""
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except (OSError, ValueError, TypeError):
        return None
    return stat.rsplit(")", 1)[-1].split()


def process_start(pid) -> int | None:
    """The start time of process `pid` (clock ticks since boot: /proc/PID/stat field 22); None when it is gone."""
    fields = stat_fields(pid)
    try:
        return int(fields[19]) if fields else None
    except (IndexError, ValueError):
        return None


def is_runner(pid) -> bool:
    """Whether process `pid`'s command line is submitit's local job runner."""
    try:
        return RUNNER in Path(f"/proc/{int(pid)}/cmdline").read_bytes()
    except (OSError, ValueError, TypeError):
        return False


def process_lives(pid, started: int | None = None) -> bool:
    """Whether the local job (`pid`, recorded start time `started`) still runs (module docstring)."""
    fields = stat_fields(pid)
    if not fields or fields[0] == "Z":
        return False
    if started is None:
        return is_runner(pid)
    return process_start(pid) == started


__all__ = []
