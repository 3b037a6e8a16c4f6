"""The live files and `nht watch` under faults (issue 29, items 4, 7 and 8): damaged live.csv / live_history.csv
(empty, cut mid-row, not UTF-8, another header) end in one line under `nht report`, `nht analyze` and `nht watch`;
`nht watch` never reports an earlier sweep's table as the finish of one that is starting (`--new`, and a held
lock); live.csv is replaced atomically. The watching runs in process, its clock replaced by a scenario (no
sleeps)."""

import os
import shutil

import numpy as np
import pytest

from nht_jax.cli import main
from nht_jax.training import live
from nht_jax.training import watch as watch_module
from nht_jax.training.progress import ProgressLog
from nht_jax.results.folder import load_results

KINDS = ("empty", "cut mid-row", "not UTF-8", "another header")


def damage(path, kind: str) -> None:
    text = path.read_bytes()
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "cut mid-row":  # the file ends inside its last row
        last = text.rstrip(b"\n").rsplit(b"\n", 1)[1]
        path.write_bytes(text[: len(text) - 1 - len(last) // 2])
    elif kind == "not UTF-8":
        path.write_bytes(b"\xff\xfe\x00garbage\x80\n" + text)
    else:
        path.write_bytes(b"foo,bar,baz\n1,2,3\n")


def one_line(err: str) -> bool:
    return err.startswith("nht: error: ") and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_live_history_is_one_line(folder, kind, capsys):
    """live_history.csv is appended to: a last row without its end is one being appended (or cut by a full disk),
    left out; any other damage stops `nht report` (which draws live.png from it) in one line. (`nht analyze` reads
    it through the same `live.read_history`, for the forecast scores.)"""
    rows = live.read_history(folder)
    damage(folder / live.LIVE_HISTORY, kind)
    if kind == "cut mid-row":
        assert main(["report", str(folder)]) == 0 and live.read_history(folder) == rows[:-1]
        return
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and f"'{folder / live.LIVE_HISTORY}' is damaged" in err, err
    assert "results (they are intact)" in err


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_live_table_is_one_line_under_watch_and_report(folder, kind, capsys):
    damage(folder / live.LIVE_CSV, kind)
    said = []
    assert watch_module.watch(folder, interval=0.01, say=said.append).startswith("finished")
    assert said[0].startswith(f"{folder}: '")
    assert f"{live.LIVE_CSV}' is damaged" in said[0] and "\n" not in said[0]
    assert main(["report", str(folder)]) == 0  # report draws live.png from live_history.csv only
    assert main(["watch", str(folder)]) == 0
    assert "is damaged" in capsys.readouterr().out


def test_a_row_being_appended_to_the_history_is_left_out(folder):
    rows = live.read_history(folder)
    text = (folder / live.LIVE_HISTORY).read_bytes()
    (folder / live.LIVE_HISTORY).write_bytes(text + b"60,0,flat,20")  # no newline yet: being appended
    assert live.read_history(folder) == rows


class Scenario:
    """Replaces watch's clock: each sleep runs the next step (a function of the folder), then holds."""

    def __init__(self, monkeypatch, folder, steps):
        self.folder, self.steps, self.sleeps, self.locked = folder, list(steps), 0, False
        monkeypatch.setattr(watch_module.time, "sleep", self.sleep)
        monkeypatch.setattr(watch_module, "held", lambda f: self.locked)

    def sleep(self, seconds):
        self.sleeps += 1
        assert self.sleeps < 50, "the watching never ended"
        if self.steps:
            self.steps.pop(0)(self)


def test_watch_new_waits_for_the_sweep_that_starts(finished, folder, monkeypatch):
    """`nht run --overwrite … & nht watch --new DIR`: the earlier sweep's complete folder is not its finish; the
    watching follows the new sweep (the lock held, the earlier files removed) to its end."""

    def start(s):  # what --overwrite does first, holding the lock
        s.locked = True
        for name in ("meta.json", live.LIVE_CSV, "progress.log"):
            (s.folder / name).unlink()

    def finish(s):
        for name in ("meta.json", live.LIVE_CSV, "progress.log"):
            shutil.copy(finished / name, s.folder / name)
        s.locked = False

    scenario = Scenario(monkeypatch, folder, [lambda s: None, lambda s: None, start, lambda s: None, finish])
    said = []
    end = watch_module.watch(folder, interval=0.01, say=said.append, new=True)
    assert end.startswith("finished: the folder is complete") and "--new DIR" not in end
    assert scenario.sleeps == 5
    assert said[0].endswith("waiting for a sweep to start there (--new); Ctrl-C stops the watching")
    assert "no live.csv yet" in said[1]  # the new sweep's folder before its first chunk, not the old table
    assert said[2].startswith(f"{folder}: live at step 40")


def test_watch_follows_a_held_complete_folder_until_it_is_released(folder, monkeypatch):
    """A complete folder whose lock is held (a redraw, or --overwrite about to clear it) is not finished yet."""

    def release(s):
        s.locked = False

    scenario = Scenario(monkeypatch, folder, [lambda s: None, release])
    scenario.locked = True
    said = []
    end = watch_module.watch(folder, interval=0.01, say=said.append)
    assert scenario.sleeps == 2 and end.startswith("finished")


def test_watch_new_waits_for_a_folder_that_does_not_exist_yet(finished, tmp_path, monkeypatch):
    out = tmp_path / "later"

    def appear(s):
        shutil.copytree(finished, out)

    Scenario(monkeypatch, out, [lambda s: None, appear])
    said = []
    assert watch_module.watch(out, interval=0.01, say=said.append, new=True).startswith("finished")
    assert said[1].startswith(f"{out}: live at step 40")


def test_live_csv_is_replaced_atomically(finished, tmp_path):
    """A reader never sees a half-written live.csv: the table is written beside it and renamed over it, so a hard
    link to the previous file (a reader holding it open) keeps the previous table whole, and the new one is another
    file (an in-place rewrite would change both)."""
    out = tmp_path / "res"
    out.mkdir()
    previous = b"run,step\n0,0\n"
    (out / live.LIVE_CSV).write_bytes(previous)
    os.link(out / live.LIVE_CSV, tmp_path / "reader.csv")
    res = load_results(finished)
    histories = [
        {"steps": res.steps.astype(float), **{k: v[i] for k, v in res.metrics.items()}} for i in range(res.num_runs)
    ]
    live.LiveTable(out, fresh=True).update(
        40.0,
        histories,
        np.full(res.num_runs, np.nan),
        res.hparams,
        res.config.analysis,
        "norm_sq",
        ProgressLog(out / "progress.log"),
        final=False,
    )
    assert (tmp_path / "reader.csv").read_bytes() == previous
    assert not os.path.samefile(out / live.LIVE_CSV, tmp_path / "reader.csv")
    assert [row["run"] for row in live.read_table(out)] == [str(i) for i in range(res.num_runs)]
