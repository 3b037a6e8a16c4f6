"""OUT/submit.json of `nht submit` (`nht_jax.training.submit`): read, checked, written.

    {"preset", "overrides", "scale", "shards": K, "config_digest", "executor": "slurm" | "local",
     "jobs": {"I": {"id": JOB, "submitted": TIME, "stdout": LOG, "stderr": LOG, "started": TICKS | null}},
     "submissions": [{"at": TIME, "shards": [I, …], "resubmitted": [I, …], "jobs": [JOB, …]}, …]}

"started" (local jobs only): the job process's start time, what tells it from a later process given the same pid
(`nht_jax.training.local_jobs`). A file that is not this (hand-edited, truncated, another program's) is one
ConfigError line naming what is wrong and how to go on, never a traceback; a file of another configuration or split
is refused as such."""

from __future__ import annotations

import json
from pathlib import Path

from nht_jax.base.atomic import atomic_write_text
from nht_jax.base.errors import ConfigError

STATE = "submit.json"
REQUIRED = ("config_digest", "shards", "executor", "jobs", "submissions")


def damaged(path: Path, what: str) -> ConfigError:
    """The one line for a submit.json that is not one.

    Args:
        path: the submit.json file.
        what: what is wrong with it.

    Returns:
        The ConfigError, to raise.
    """
    return ConfigError(
        f"'{path}' is damaged ({what}): correct it, or delete it to submit afresh once none of its "
        f"jobs is queued or running (the shards already done in {Path(path).parent / 'shards'} are "
        f"kept and not trained again)"
    )


def job_problem(index, job, executor: str, count: int) -> str:
    """What is wrong with one entry of "jobs" ("" when nothing)."""
    if not (isinstance(index, str) and index.isdigit() and int(index) < count):
        return f'"jobs" names shard {index!r}, not one of 0 … {count - 1}'
    if not isinstance(job, dict):
        return f"the job of shard {index} is not an object"
    job_id = job.get("id")
    if not isinstance(job_id, str) or not job_id.strip() or (executor == "local" and not job_id.isdigit()):
        return f"the job of shard {index} has no valid id ({job_id!r})"
    started = job.get("started")
    if started is not None and (isinstance(started, bool) or not isinstance(started, int)):
        return f"the job of shard {index} has a start time {started!r}, not a whole number"
    for log in ("stdout", "stderr"):
        if not isinstance(job.get(log, ""), str):
            return f"the job of shard {index} names its {log} log {job.get(log)!r}, not a path"
    return ""


def check_state(state, path: Path, identity: dict) -> dict:
    """`state` as read from `path`, checked against the format (module docstring) and `identity` (the submission's
    digest and K); ConfigError in one line otherwise."""
    if not isinstance(state, dict):
        raise damaged(path, f"a JSON {type(state).__name__}, not an object")
    missing = [key for key in REQUIRED if key not in state]
    if missing:
        raise damaged(path, f"no {', '.join(repr(k) for k in missing)}")
    if state["config_digest"] != identity["config_digest"] or state["shards"] != identity["shards"]:
        raise ConfigError(
            f"'{path.parent}' holds a submission of another configuration or split ({STATE}: digest "
            f"{state['config_digest']}, {state['shards']} shards): use another --out folder"
        )
    if not isinstance(state["jobs"], dict):
        raise damaged(path, '"jobs" is not an object')
    if not isinstance(state["submissions"], list):
        raise damaged(path, '"submissions" is not a list')
    for index, job in state["jobs"].items():
        problem = job_problem(index, job, state["executor"], identity["shards"])
        if problem:
            raise damaged(path, problem)
    return state


def read_state(out: Path, identity: dict) -> dict:
    """submit.json of OUT (a fresh state when there is none), checked (`check_state`)."""
    path = Path(out) / STATE
    if not path.exists():
        return {**identity, "jobs": {}, "submissions": []}
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise damaged(path, f"it cannot be read as JSON: {type(e).__name__}") from None
    return check_state(state, path, identity)


def write_state(out: Path, state: dict) -> None:
    atomic_write_text(Path(out) / STATE, json.dumps(state, indent=2))


__all__ = ["damaged"]
