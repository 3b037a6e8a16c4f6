"""No command follows a symbolic link out of a results folder when it writes (issue 29, item 2): a `.lock`,
`progress.log` or `live_history.csv` that is a link is refused in one line (or, for the atomic writes, the link
itself is replaced), and the file it points to is never touched."""

import os

import numpy as np
import pytest

from nht_jax.base import atomic
from nht_jax.cli import main
from nht_jax.training import live
from nht_jax.results import lock
from nht_jax.training.progress import ProgressLog
from nht_jax.results.folder import load_results

from ..conftest import TINY

PRECIOUS = b"a file of the user's, outside the results folder\n"


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "precious.txt"
    path.write_bytes(PRECIOUS)
    return path


def link(path, target):
    if os.path.lexists(path):
        path.unlink()
    path.symlink_to(target)


def one_line(err: str) -> bool:
    return err.startswith("nht: error: ") and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("verb", ["report", "analyze", "paper bound", "run"])
def test_a_linked_lock_is_refused_and_its_target_untouched(folder, victim, verb, capsys):
    link(folder / lock.LOCK_NAME, victim)
    argv = ["run", *TINY, "--out", str(folder), "--quiet"] if verb == "run" else [*verb.split(), str(folder)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "is a symbolic link" in err and f"rm '{folder / '.lock'}'" in err, err
    assert victim.read_bytes() == PRECIOUS and (folder / lock.LOCK_NAME).is_symlink()


def test_a_linked_progress_log_is_refused(tmp_path, victim, capsys):
    out = tmp_path / "fresh"
    out.mkdir()
    link(out / "progress.log", victim)
    assert main(["run", *TINY, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "progress.log' is a symbolic link" in err, err
    assert victim.read_bytes() == PRECIOUS
    with pytest.raises(atomic.LinkError, match="symbolic link"):
        ProgressLog(out / "progress.log").write("a line")
    assert victim.read_bytes() == PRECIOUS


def test_appends_never_follow_a_link(tmp_path, victim):
    path = tmp_path / "log.txt"
    link(path, victim)
    with pytest.raises(atomic.LinkError):
        atomic.append_text(path, "more\n")
    assert victim.read_bytes() == PRECIOUS
    path.unlink()
    atomic.append_text(path, "one\n")
    atomic.append_text(path, "two\n")
    assert path.read_text() == "one\ntwo\n"


def test_an_atomic_write_replaces_the_link_itself(tmp_path, victim):
    path = tmp_path / "meta.json"
    link(path, victim)
    atomic.atomic_write_text(path, "new")
    assert not path.is_symlink() and path.read_text() == "new"
    assert victim.read_bytes() == PRECIOUS


def test_the_live_history_of_a_resumed_sweep_replaces_a_link(finished, tmp_path, victim):
    """A resumed sweep's live table keeps live_history.csv (`kept_history`) by writing it atomically: a link there
    is replaced by the file, and the later appends go to that file, never to the link's target."""
    out = tmp_path / "res"
    out.mkdir()
    link(out / live.LIVE_HISTORY, victim)
    table = live.LiveTable(out, fresh=False)
    res = load_results(finished)
    histories = [
        {"steps": res.steps.astype(float), **{k: v[i] for k, v in res.metrics.items()}} for i in range(res.num_runs)
    ]
    table.update(
        40.0,
        histories,
        np.full(res.num_runs, np.nan),
        res.hparams,
        res.config.analysis,
        "norm_sq",
        ProgressLog(out / "progress.log"),
        final=False,
    )
    assert not (out / live.LIVE_HISTORY).is_symlink() and victim.read_bytes() == PRECIOUS
    assert len(live.read_history(out)) == res.num_runs
