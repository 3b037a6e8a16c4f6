"""`nht submit PRESET --shards K`: a grid's shards (`nht_jax.training.shards`) as a job array through submitit
(`submitit.AutoExecutor`, `map_array`, `slurm_array_parallelism`), waited for, resubmitted where they failed, merged.

Each job runs the shard's own command line (`nht run … --shards K --shard I`, a `submitit.helpers.CommandFunction`),
so it resumes its shard from the shard's checkpoint. Executors: "slurm" (sbatch job arrays, the default) and
"local" (subprocesses of this machine). The state is OUT/submit.json (`nht_jax.training.submit_state`) and
OUT/submitit/, held under OUT's lock. A call finds each shard done, active or to submit, submits those to submit as
one array, then returns (--no-wait) or waits, merges when every shard is done (`nht_jax.training.merge`) and exits
1 naming the unfinished ones otherwise; job states come from squeue and the shard folders, never from sacct.

The options, the state files, the steps of a call and a real SLURM in the tests: docs/guides/execution.md,
"nht submit"."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.measure import stopping
from nht_jax.results import folder as results
from nht_jax.results import lock
from nht_jax.training import local_jobs
from nht_jax.training import merge as merging
from nht_jax.training import partition as shards
from nht_jax.training.submit_state import read_state, write_state

LOGS = "submitit"
EXECUTORS = ("slurm", "local")
INSTALL = "pip install 'nht_jax[slurm]'"


class Request(NamedTuple):
    """What `nht submit` was asked: the shard command's preset, --set and --scale, K, OUT, and how to submit."""

    preset: str
    overrides: tuple
    scale: str | None
    count: int
    out: Path
    executor: str = "slurm"
    partition: str | None = None
    gpus_per_job: int | None = None
    cpus_per_task: int | None = None
    time_min: int | None = None
    parallel: int | None = None
    wait: bool = True
    poll_s: float = 5.0


def require_submitit():
    """submitit, or a one-line ConfigError saying how to install it. Imported without its logging configuration
    (SUBMITIT_LOG_LEVEL=NOCONFIG unless set): submitit's import otherwise runs `logging.config.dictConfig`, which
    closes every logging handler the host program already has (pytest's, a notebook's). Its warnings still reach
    stderr through logging's last resort; the jobs, started with the environment as it was, log as usual."""
    unset = "SUBMITIT_LOG_LEVEL" not in os.environ
    if unset:
        os.environ["SUBMITIT_LOG_LEVEL"] = "NOCONFIG"
    try:
        import submitit
    except ImportError:
        raise ConfigError(f"nht submit needs submitit, which is not installed: {INSTALL}") from None
    finally:
        if unset:
            del os.environ["SUBMITIT_LOG_LEVEL"]
    return submitit


def preset_argument(preset: str) -> str:
    """The preset as the jobs see it: a .toml file by its absolute path (a job may start in another folder)."""
    path = Path(preset)
    return str(path.resolve()) if path.suffix == ".toml" and path.exists() else preset


def shard_command(request: Request) -> list[str]:
    """The command line of every job, without its shard index (the job array appends it after --shard)."""
    sets = [part for value in request.overrides for part in ("--set", value)]
    scale = ["--scale", request.scale] if request.scale else []
    return [
        sys.executable,
        "-m",
        "nht_jax.cli",
        "run",
        preset_argument(request.preset),
        *sets,
        *scale,
        "--out",
        str(Path(request.out).resolve()),
        "--quiet",
        "--shards",
        str(request.count),
        "--shard",
    ]


def make_executor(request: Request, name: str):
    """submitit's AutoExecutor for `request.executor`, its logs in OUT/submitit."""
    submitit = require_submitit()
    if request.executor == "slurm" and shutil.which("sbatch") is None:
        raise ConfigError(
            "no sbatch on PATH: run `nht submit` on a SLURM login node, or --executor local to run the "
            "shards on this machine"
        )
    executor = submitit.AutoExecutor(folder=Path(request.out).resolve() / LOGS, cluster=request.executor)
    executor.update_parameters(
        name=f"nht-{name}",
        timeout_min=request.time_min if request.time_min is not None else 24 * 60,
        cpus_per_task=request.cpus_per_task,
        gpus_per_node=request.gpus_per_job,
        slurm_partition=request.partition,
        slurm_array_parallelism=request.parallel,
    )
    return executor


def check_request(request: Request) -> None:
    if request.executor not in EXECUTORS:
        raise ConfigError(f"--executor must be one of {', '.join(EXECUTORS)}, got {request.executor!r}")
    for flag, value in (
        ("--gpus-per-job", request.gpus_per_job),
        ("--cpus-per-task", request.cpus_per_task),
        ("--time", request.time_min),
        ("--parallel", request.parallel),
    ):
        if value is not None and value < (0 if flag == "--gpus-per-job" else 1):
            raise ConfigError(f"{flag} must be ≥ {0 if flag == '--gpus-per-job' else 1}, got {value}")
    if not request.poll_s > 0:
        raise ConfigError(f"--poll must be > 0 seconds, got {request.poll_s}")
    if request.executor == "local" and (request.partition or request.parallel):
        raise ConfigError("--partition and --parallel belong to --executor slurm")


# ----------------------------------------------------------------------------- job states


def squeue_ids() -> set[str]:
    """The ids (array tasks as JOB_TASK) of this user's jobs that SLURM still lists (queued, running, completing)."""
    try:
        listed = subprocess.run(
            ["squeue", "--me", "-h", "-r", "-o", "%i"], check=False, capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ConfigError(
            f"squeue did not answer ({e}): is the SLURM controller up? Run `nht submit` again later "
            f"(the jobs keep running)"
        ) from None
    if listed.returncode != 0:
        raise ConfigError(
            f"squeue failed: {listed.stderr.strip() or listed.returncode}. Run `nht submit` again "
            f"later (the jobs keep running)"
        )
    return set(listed.stdout.split())


def active_jobs(executor: str, jobs: list[dict]) -> set[str]:
    """The ids of those of `jobs` (submit.json entries) still queued or running: listed by squeue, or (local) their
    process alive and the one that was started for them (`nht_jax.training.local_jobs`)."""
    if not jobs:
        return set()
    if executor == "slurm":
        return {j["id"] for j in jobs} & squeue_ids()
    return {j["id"] for j in jobs if local_jobs.process_lives(j["id"], j.get("started"))}


def jobs_to_wait_for(state: dict, waiting: set[int], done_before: set[int]) -> list[dict]:
    """The jobs `finish` waits for: those of the shards `waiting` for (not done when this call began), and of the
    shards done before it only a local job known by its start time (exactly its process, about to exit and release
    the shard's lock). A job recorded for a shard done before, without a start time, is never waited for: its pid
    may be another process's now, and the shard's results are final."""
    jobs = state["jobs"]
    return [
        jobs[str(i)]
        for i in sorted(waiting | done_before)
        if str(i) in jobs
        and (i in waiting or (state["executor"] == "local" and jobs[str(i)].get("started") is not None))
    ]


def shard_done(out: Path, shard: shards.Shard, digest: str) -> bool:
    found = results.check_folder(shards.folder(out, shard))
    return found.complete and found.meta.get("config_digest") == shards.shard_digest(digest, shard)


def last_line(path: str | None) -> str:
    """The last line of a job's log that says something ("" when there is none)."""
    try:
        lines = [line.strip() for line in Path(path).read_text(errors="replace").splitlines() if line.strip()]
    except (OSError, TypeError):
        return ""
    said = [line for line in lines if line.startswith("nht:")] or lines
    return said[-1][:300] if said else ""


# ----------------------------------------------------------------------------- the command


def submit(request: Request) -> tuple[int, Path | None]:
    """`nht submit` (module docstring).

    Args:
        request: what the command line asked for.

    Returns:
        (exit code, OUT when merged, else None).
    """
    check_request(request)
    require_submitit()
    config = experiment.load(request.preset, list(request.overrides), request.scale)
    shards.refuse_unsupported(config)
    shards.partition(shards.bucket_sizes(config), request.count)  # more shards than runs: refused here
    digest = stopping.results_digest(config)
    out = Path(request.out)
    identity = {
        "preset": request.preset,
        "overrides": list(request.overrides),
        "scale": request.scale,
        "shards": request.count,
        "config_digest": digest,
        "executor": request.executor,
    }
    with contextlib.ExitStack() as held:
        out = results.prepare_out_dir(held.enter_context(lock.hold(out, "nht submit")))
        existing = results.check_folder(out)
        if existing.digest is not None and existing.digest != digest:
            raise ConfigError(f"'{out}' already holds results of another configuration: use another --out folder")
        if existing.complete:
            print(f"{out} already holds the merged results of this configuration.")
            return 0, out
        state = read_state(out, identity)
        if state.get("executor") != request.executor:
            raise ConfigError(
                f"'{out}' was submitted with --executor {state.get('executor')}: keep it, or use another --out folder"
            )
        everyone = [shards.Shard(i, request.count) for i in range(request.count)]
        jobs = state["jobs"]
        done = {s.index for s in everyone if shard_done(out, s, digest)}
        active = active_jobs(
            request.executor, [jobs[str(s.index)] for s in everyone if s.index not in done and str(s.index) in jobs]
        )
        to_submit = [
            s.index
            for s in everyone
            if s.index not in done and not (str(s.index) in jobs and jobs[str(s.index)]["id"] in active)
        ]
        if to_submit:
            submit_array(request, config.name, out, state, to_submit)
        print(status_line(request.count, done, len(active), to_submit))
        if not request.wait:
            return 0, None
        return finish(request, out, state, digest, everyone, done)


def submit_array(request: Request, name: str, out: Path, state: dict, indices: list[int]) -> None:
    """Submit the shards `indices` as one job array; record their jobs in submit.json (written before returning)."""
    submitit = require_submitit()
    executor = make_executor(request, name)
    command = submitit.helpers.CommandFunction(shard_command(request), cwd=os.getcwd())
    resubmitted = [i for i in indices if str(i) in state["jobs"]]
    submitted = executor.map_array(command, indices)
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    for i, job in zip(indices, submitted):
        state["jobs"][str(i)] = {
            "id": str(job.job_id),
            "submitted": now,
            "stdout": str(job.paths.stdout),
            "stderr": str(job.paths.stderr),
        }
        if request.executor == "local":  # the pid alone may name another process later (local_jobs)
            state["jobs"][str(i)]["started"] = local_jobs.process_start(job.job_id)
    state["submissions"].append(
        {"at": now, "shards": indices, "resubmitted": resubmitted, "jobs": [str(job.job_id) for job in submitted]}
    )
    write_state(out, state)
    again = (
        f" ({len(resubmitted)} again: shard{'s' if len(resubmitted) > 1 else ''} {', '.join(map(str, resubmitted))})"
        if resubmitted
        else ""
    )
    print(
        f"submitted {len(indices)} shard{'s' if len(indices) > 1 else ''}{again} as "
        f"{request.executor} job{'s' if len(indices) > 1 else ''} {', '.join(j.job_id for j in submitted)}; "
        f"logs in {Path(request.out).resolve() / LOGS}",
        flush=True,
    )


def status_line(count: int, done: set, active: int, submitted: list) -> str:
    return (
        f"{count} shards: {len(done)} done, {active} queued or running before this call, {len(submitted)} submitted now"
    )


def finish(
    request: Request, out: Path, state: dict, digest: str, everyone: list, done_before: set[int] = frozenset()
) -> tuple[int, Path | None]:
    """Wait until no job of ours that may still change a shard is queued or running (`jobs_to_wait_for`: never a
    job of a shard done before this call but the very process of a local one), then merge, or name the shards that
    did not finish."""
    waiting = {s.index for s in everyone} - set(done_before)
    while active_jobs(request.executor, jobs_to_wait_for(state, waiting, set(done_before))):
        time.sleep(request.poll_s)  # polling the scheduler: nothing to wait on but time
    unfinished = [s for s in everyone if not shard_done(out, s, digest)]
    if unfinished:
        for s in unfinished:
            job = state["jobs"].get(str(s.index), {})
            said = last_line(job.get("stderr"))
            print(
                f"nht: {s.label} did not finish (job {job.get('id', '?')}; log {job.get('stderr', '?')})"
                + (f": {said}" if said else ""),
                file=sys.stderr,
                flush=True,
            )
        print(
            f"nht: {len(unfinished)} of {request.count} shards did not finish: run the same `nht submit` again to "
            f"resubmit them",
            file=sys.stderr,
            flush=True,
        )
        return 1, None
    folders = [shards.folder(out, s) for s in everyone]
    return 0, merging.merge(folders, out)


__all__ = ["LOGS", "submit"]
