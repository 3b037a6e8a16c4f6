"""`nht submit tiny --shards 4` through a real SLURM: the single-node cluster `.ci/slurm-setup.sh` starts on this
machine (slurmctld and slurmd on localhost, munge). One job is cancelled (scancel) while its shard trains; the second
`nht submit` resubmits that shard alone, waits for all four and merges; the merged folder equals `nht run tiny`'s.
A second test cancels a job as `PreemptMode=CANCEL` preempts one (`scancel`: SIGTERM, no requeue) once its shard has
written a checkpoint: the next `nht submit` resubmits that shard, which resumes from its checkpoint, and the grid
completes with the same results.

Skipped, with the reason, where no SLURM controller answers (not root, no apt, the setup not run); under
`.ci/run` after a successful setup (NHT_REQUIRE_SLURM=1) that skip is a failure instead. Every wait polls the queue
or the files with a generous limit; nothing sleeps a fixed time. It trains the real `tiny` preset (4 runs × 300
steps) twice, as four jobs and as one run: minutes on a loaded 2-core machine, which is why it is here alone."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from nht_jax.cli import main
from nht_jax.results import folder as results
from nht_jax.training import shards

from .test_shards import assert_same_results


def slurm_problem() -> str:
    """Why this machine cannot run the test ("" when it can)."""
    if importlib.util.find_spec("submitit") is None:  # not imported here: `nht submit` imports it its own way
        return "submitit is not installed (pip install 'nht_jax[slurm]')"
    missing = [tool for tool in ("sbatch", "squeue", "scancel", "scontrol") if shutil.which(tool) is None]
    if missing:
        return (
            f"no SLURM client ({', '.join(missing)} missing): run .ci/slurm-setup.sh as root on a Debian/Ubuntu "
            f"machine to install and start a single-node SLURM"
        )
    ping = subprocess.run(["scontrol", "ping"], check=False, capture_output=True, text=True, timeout=60)
    if "is UP" not in ping.stdout:
        return "no slurmctld answers (`scontrol ping`): start one with .ci/slurm-setup.sh (root)"
    nodes = subprocess.run(
        ["sinfo", "-h", "-N", "-o", "%t"], check=False, capture_output=True, text=True, timeout=60
    ).stdout.split()
    if not any(state.rstrip("*") in ("idle", "mix", "alloc") for state in nodes):
        return f"no SLURM node takes jobs (sinfo: {', '.join(nodes) or 'none'})"
    return ""


@pytest.fixture(scope="module")
def slurm():
    problem = slurm_problem()
    if problem:
        if os.environ.get("NHT_REQUIRE_SLURM") == "1":
            pytest.fail(f"NHT_REQUIRE_SLURM=1 but {problem}")
        pytest.skip(problem)


def wait_until(condition, limit_s: float, what: str, every_s: float = 0.2):
    """Poll `condition()` until it returns something true (returned), failing after limit_s seconds."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every_s)  # polling: the job's state is outside this process
    pytest.fail(f"{what} did not happen within {limit_s:.0f} s")


def job_state(job_id: str) -> str | None:
    """The job's state as squeue shows it (PENDING, RUNNING, …), None once SLURM no longer lists it."""
    shown = subprocess.run(
        ["squeue", "-h", "-r", "-j", job_id, "-o", "%T"], check=False, capture_output=True, text=True, timeout=60
    )
    return (shown.stdout.split() or [None])[0] if shown.returncode == 0 else None


def test_submit_through_slurm_survives_a_cancelled_job(slurm, tmp_path):
    out, ref = tmp_path / "out", tmp_path / "ref"
    argv = ["submit", "tiny", "--shards", "4", "--out", str(out), "--poll", "1", "--time", "60"]
    assert main([*argv, "--no-wait"]) == 0
    victim = json.loads((out / "submit.json").read_text())["jobs"]["1"]["id"]
    shard = shards.folder(out, shards.Shard(1, 4))
    # mid-way: the job runs and its shard has begun training (progress.log's first line is written)
    wait_until(
        lambda: job_state(victim) == "RUNNING" and (shard / "progress.log").exists(),
        900,
        f"job {victim} (shard 1) training",
    )
    subprocess.run(["scancel", victim], check=True, timeout=60)
    wait_until(lambda: job_state(victim) is None, 300, f"job {victim} leaving the queue")
    assert not results.check_folder(shard).complete, "the cancelled shard finished before scancel reached it"

    assert main(["run", "tiny", "--out", str(ref), "--quiet"]) == 0  # the reference, while the others train
    assert main(argv) == 0  # resubmits shard 1, waits for all four, merges
    state = json.loads((out / "submit.json").read_text())
    assert [s["resubmitted"] for s in state["submissions"]] == [[], [1]]
    assert state["submissions"][1]["shards"] == [1] and state["jobs"]["1"]["id"] != victim
    assert_same_results(out, ref, shard_count=4)


PREEMPTED = [
    "tiny",
    "--set",
    "train.steps=3000",
    "--set",
    "train.log_every=100",
    "--set",
    "execution.chunk_logs=1",
    "--set",
    "execution.checkpoint_every_s=0",
]  # 30 calls, a checkpoint after each


def test_a_shard_cancelled_as_preemption_cancels_it_is_resubmitted_and_resumes_from_its_checkpoint(slurm, tmp_path):
    # PreemptMode=CANCEL ends a preempted job as scancel does (SIGTERM, SIGKILL after KillWait) and never requeues it:
    # the shard's job leaves the queue for good; only the next `nht submit` brings the shard back.
    out, ref = tmp_path / "out", tmp_path / "ref"
    argv = ["submit", *PREEMPTED, "--shards", "2", "--out", str(out), "--poll", "1", "--time", "60"]
    assert main([*argv, "--no-wait"]) == 0
    victim = json.loads((out / "submit.json").read_text())["jobs"]["1"]["id"]
    log = shards.folder(out, shards.Shard(1, 2)) / "progress.log"
    written = re.compile(r"  step (\d+)/3000 .*checkpoint written")

    def checkpointed() -> int:
        steps = [int(m[1]) for m in written.finditer(log.read_text())] if log.exists() else []
        return max(steps, default=0)

    wait_until(checkpointed, 900, f"job {victim} (shard 1) writing its first checkpoint")
    subprocess.run(["scancel", victim], check=True, timeout=60)
    wait_until(lambda: job_state(victim) is None, 300, f"job {victim} leaving the queue")
    kept = checkpointed()
    assert not results.check_folder(log.parent).complete and (log.parent / "checkpoint.npz").exists()
    assert job_state(victim) is None  # not requeued

    assert main(["run", *PREEMPTED, "--out", str(ref), "--quiet"]) == 0  # while shard 0 trains
    assert main(argv) == 0  # resubmits shard 1, waits for both, merges
    state = json.loads((out / "submit.json").read_text())
    assert [s["resubmitted"] for s in state["submissions"]] == [[], [1]]
    assert state["jobs"]["1"]["id"] != victim
    resumed = [int(m[1]) for m in re.finditer(r"resumed at step (\d+) of 3000", log.read_text())]
    assert len(resumed) == 1 and resumed[0] >= kept > 0, (resumed, kept)  # the work before the cancel kept
    assert_same_results(out, ref, shard_count=2)
