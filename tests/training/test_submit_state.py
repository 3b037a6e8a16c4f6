"""`nht submit --executor local` against what submit.json says (issue 46 item 2): a recorded pid that another live
process now has is not the job (a `sleep` of this test stands for that process, recorded with a wrong start time);
its shard is resubmitted; a grid whose shards are all done merges and returns without waiting on their old jobs; a
hand-edited or damaged submit.json is one line, nothing submitted, the file left as it was. No job is started:
`submit_array` is replaced by a recorder, so these take seconds (the path through submitit is
test_shards.py's `test_submit_local_resubmits_the_failed_shard_and_merges`)."""

import importlib.util
import json
import shutil
import subprocess
import time
from types import SimpleNamespace

import pytest

from nht_jax.cli import main
from nht_jax.training import local_jobs, submit

from ..conftest import TINY
from .test_shards import assert_same_results, digest_of, sharded  # noqa: F401 (sharded: a fixture)

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("submitit") is None, reason="submitit is not installed (pip install 'nht_jax[slurm]')"
)

ARGV = ["submit", *TINY, "--shards", "2", "--executor", "local", "--poll", "0.01"]


@pytest.fixture
def stranger():
    """A live process that is not a job of ours (`sleep`) → (its pid, its true start time); killed afterwards."""
    process = subprocess.Popen(["sleep", "600"])
    try:
        deadline = time.monotonic() + 60
        while local_jobs.process_start(process.pid) is None and time.monotonic() < deadline:
            time.sleep(0.05)  # polling /proc until the child is listed
        yield process.pid, local_jobs.process_start(process.pid)
    finally:
        process.kill()
        process.wait(timeout=60)


def identity() -> dict:
    return {
        "preset": "tiny",
        "overrides": TINY[2::2],
        "scale": None,
        "shards": 2,
        "config_digest": digest_of(TINY),
        "executor": "local",
    }


def state_with(jobs: dict) -> str:
    return json.dumps(
        {
            **identity(),
            "jobs": {
                i: {
                    "id": str(j[0]),
                    "submitted": "",
                    "stdout": "",
                    "stderr": "",
                    **({"started": j[1]} if j[1] is not None else {}),
                }
                for i, j in jobs.items()
            },
            "submissions": [{"at": "", "shards": [0, 1], "resubmitted": [], "jobs": []}],
        }
    )


@pytest.fixture
def recorded(monkeypatch):
    """`submit_array` replaced: the shards each call would submit, recorded; no job starts."""
    calls = []
    monkeypatch.setattr(submit, "submit_array", lambda request, name, out, state, indices: calls.append(indices))
    return calls


def test_a_pid_that_another_process_has_is_not_the_job(stranger):
    pid, started = stranger
    assert started is not None and local_jobs.process_lives(pid, started)  # the very process
    assert not local_jobs.process_lives(pid, started + 1)  # the pid, but a process started at another time
    assert not local_jobs.process_lives(pid, None)  # no start time recorded: not submitit's job runner
    assert submit.active_jobs("local", [{"id": str(pid), "started": started + 1}]) == set()
    assert submit.active_jobs("local", [{"id": str(pid), "started": started}]) == {str(pid)}


def test_a_lost_shard_is_resubmitted(stranger, recorded, tmp_path, capsys):
    """Both shards' recorded pids are now the stranger's (one with a wrong start time, one recorded by older code
    without one): both jobs are lost, both shards are submitted again."""
    pid, started = stranger
    out = tmp_path / "out"
    out.mkdir()
    (out / "submit.json").write_text(state_with({"0": (pid, started + 1), "1": (pid, None)}))
    assert main([*ARGV, "--out", str(out), "--no-wait"]) == 0
    assert recorded == [[0, 1]]
    assert "0 queued or running before this call, 2 submitted now" in capsys.readouterr().out


def test_a_grid_whose_shards_are_all_done_merges_and_returns(
    sharded,  # noqa: F811 (the fixture imported above)
    stranger,
    recorded,
    tmp_path,
    finished,
    monkeypatch,
):
    """Every shard done, their recorded pids the stranger's: nothing submitted, merged at once. Waiting is bounded
    here (a poll that would go on for ever fails the test after 200 looks)."""
    pid, started = stranger
    out = shutil.copytree(sharded, tmp_path / "out")
    (out / "submit.json").write_text(state_with({"0": (pid, started + 1), "1": (pid, None)}))
    looks = []

    def sleep(seconds):
        looks.append(seconds)
        assert len(looks) < 200, "nht submit is still waiting on the jobs of shards that are done"

    monkeypatch.setattr(submit, "time", SimpleNamespace(sleep=sleep, strftime=time.strftime))
    assert main([*ARGV, "--out", str(out)]) == 0
    assert recorded == [] and not looks
    assert_same_results(out, finished)


def test_jobs_of_shards_done_before_are_waited_for_only_as_their_own_process():
    state = {"executor": "local", "jobs": {"0": {"id": "11", "started": 5}, "1": {"id": "12"}, "2": {"id": "13"}}}
    assert submit.jobs_to_wait_for(state, waiting={2}, done_before={0, 1}) == [{"id": "11", "started": 5}, {"id": "13"}]
    assert submit.jobs_to_wait_for({**state, "executor": "slurm"}, waiting={2}, done_before={0, 1}) == [{"id": "13"}]


VALID = {"id": "123", "submitted": "", "stdout": "", "stderr": ""}
DAMAGED = {
    "a list": ("[1, 2]", "a JSON list, not an object"),
    "truncated": ('{"preset": "ti', "cannot be read as JSON"),
    "not text": (b"\xff\xfe\x00", "cannot be read as JSON"),
    "no keys": ('{"jobs": {}}', "no 'config_digest', 'shards', 'executor', 'submissions'"),
    "jobs a string": ({"jobs": "x"}, '"jobs" is not an object'),
    "submissions": ({"submissions": {}}, '"submissions" is not a list'),
    "shard 7": ({"jobs": {"7": VALID}}, "names shard '7', not one of 0 … 1"),
    "job a list": ({"jobs": {"0": []}}, "the job of shard 0 is not an object"),
    "id a number": ({"jobs": {"0": {**VALID, "id": 123}}}, "the job of shard 0 has no valid id (123)"),
    "id a word": ({"jobs": {"1": {**VALID, "id": "abc"}}}, "the job of shard 1 has no valid id ('abc')"),
    "no id": ({"jobs": {"0": {"submitted": ""}}}, "the job of shard 0 has no valid id (None)"),
    "started": ({"jobs": {"0": {**VALID, "started": "yesterday"}}}, "a start time 'yesterday', not a whole number"),
    "log": ({"jobs": {"0": {**VALID, "stderr": 5}}}, "names its stderr log 5, not a path"),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_a_damaged_submit_json_is_one_line_and_left_as_it_was(case, recorded, tmp_path, capsys):
    content, said = DAMAGED[case]
    if isinstance(content, dict):
        content = json.dumps({**identity(), "jobs": {}, "submissions": [], **content})
    out = tmp_path / "out"
    out.mkdir()
    path = out / "submit.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = path.read_bytes()
    assert main([*ARGV, "--out", str(out), "--no-wait"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("nht: error:") and "\n" not in err, err
    assert f"'{path}' is damaged" in err and said in err and "delete it to submit afresh" in err, err
    assert path.read_bytes() == before and recorded == [] and not (out / "submitit").exists()
