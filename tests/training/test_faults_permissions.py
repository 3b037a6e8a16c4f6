"""Permission errors and odd paths (issue 46 item 4): a result file that may not be read is one line saying so,
never "damaged, delete the folder", and the folder is left as it was; an unreadable log file for `nht import` and a
read-only results folder for `nht report` are one line each; a folder whose path holds spaces and a newline is
trained, drawn, analysed, exported and imported back, and the commands printed for the next step quote it.

Permissions are real: the commands run in a child process. Root ignores permission bits (CAP_DAC_OVERRIDE,
CAP_DAC_READ_SEARCH), and the CI runs as root, so there the child runs as root without those two capabilities
(util-linux's `setpriv --bounding-set`), which obeys them like any user; where that is not possible the test is
skipped, saying why."""

import os
import shlex
import shutil
import subprocess
import sys

import pytest

from nht_jax.cli import main
from nht_jax.results.folder import load_results

from ..conftest import TINY, users_xla_env

DROP = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]


@pytest.fixture(scope="module")
def unprivileged(tmp_path_factory) -> list[str]:
    """The prefix that runs a child without the power to ignore permission bits (nothing for a user that is not
    root), checked on a file of mode 000."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip(
            "running as root, which reads and writes whatever the permission bits say, and no setpriv here "
            "to drop that power (util-linux)"
        )
    probe = tmp_path_factory.mktemp("probe") / "closed"
    probe.write_text("x")
    probe.chmod(0)
    tried = subprocess.run(
        [*DROP, sys.executable, "-c", f"open({str(probe)!r}).read()"], capture_output=True, text=True, timeout=60
    )
    if "PermissionError" not in tried.stderr:
        pytest.skip(
            f"running as root, and dropping CAP_DAC_OVERRIDE with setpriv did not make a mode-000 file "
            f"unreadable here (exit {tried.returncode}: {tried.stderr.strip()[-200:]})"
        )
    return DROP


def nht(prefix: list[str], *argv) -> subprocess.CompletedProcess:
    env = {**users_xla_env(), "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "nht_jax.cli", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def contents(folder) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != ".lock"}


@pytest.mark.parametrize("name", ["meta.json", "summary.csv"])
def test_an_unreadable_result_file_is_one_line_and_the_folder_stays_as_it_was(name, unprivileged, folder):
    before = contents(folder)
    (folder / name).chmod(0)
    try:
        done = nht(unprivileged, "report", folder)
    finally:
        (folder / name).chmod(0o644)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"nht: error: cannot read '{folder / name}': Permission denied; the folder's results are "
        f"untouched. Give yourself read access (chmod u+r, or ask the folder's owner), then run "
        f"the same command again\n"
    )
    assert contents(folder) == before


def test_an_unreadable_log_file_and_a_read_only_folder_are_one_line_each(unprivileged, folder, tmp_path):
    logs = tmp_path / "logs.csv"
    logs.write_text("run,step,lambda,lr,train_acc,test_acc,norm_sq\na,0,0.1,0.01,0,0,1\na,10,0.1,0.01,1,1,1\n")
    logs.chmod(0)
    done = nht(unprivileged, "import", logs, "--out", tmp_path / "imported")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"nht: error: '{logs}' cannot be read as a CSV of logs (PermissionError:")
    assert not (tmp_path / "imported").exists()
    before = contents(folder)
    folder.chmod(0o555)
    try:
        done = nht(unprivileged, "report", folder)
    finally:
        folder.chmod(0o755)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "Permission denied" in done.stderr and "Traceback" not in done.stderr
    assert contents(folder) == before


def test_a_path_with_spaces_and_a_newline_goes_through_every_command(tmp_path, capsys):
    out = tmp_path / "my runs" / "λ sweep\nsecond line"
    assert main(["run", *TINY, "--out", str(out), "--quiet"]) == 0
    assert main(["report", str(out)]) == 0 and main(["analyze", str(out)]) == 0
    assert main(["export", str(out), "--tensorboard"]) == 0
    capsys.readouterr()
    back = tmp_path / "back in"
    assert main(["import", str(out / "tensorboard"), "--out", str(back)]) == 0
    said = capsys.readouterr().out
    assert said.rstrip().endswith(f"next: nht analyze {shlex.quote(str(back))}") and "'" in said.splitlines()[-1]
    assert shlex.split(said.rstrip().rsplit("next: ", 1)[1]) == ["nht", "analyze", str(back)]
    assert (out / "analysis.md").is_file() and (out / "phase_diagram.png").is_file()
    assert load_results(back).num_runs == load_results(out).num_runs
