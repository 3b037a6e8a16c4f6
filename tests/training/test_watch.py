"""`nht watch DIR` (`nht_jax.training.watch`): a finished folder is printed once; a sweep running in another process is
followed to its end; an unfinished folder nobody holds ends at once; Ctrl-C ends the watching only. Every wait is
on a file or a line, with generous timeouts (no sleeps as synchronisation)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.results import lock
from nht_jax.training.live import LIVE_CSV
from nht_jax.training.watch import watch


NHT = [sys.executable, "-m", "nht_jax.cli"]
TIMEOUT = 600

ROOT = Path(__file__).resolve().parents[2]


def wait_for(condition, what: str, timeout: float = TIMEOUT):
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_a_finished_folder_is_printed_once(finished):
    said = []
    end = watch(finished, interval=0.01, say=said.append)
    assert end.startswith("finished: the folder is complete (finished 20") and "nht watch --new DIR" in end
    assert len(said) == 2 and said[0].splitlines()[1].split()[:2] == ["run", "weight_decay"]
    assert said[0].startswith(f"{finished}: live at step 40: 2 runs")  # the last live line of progress.log


def test_the_table_explains_its_forecast_columns_under_it(finished):
    """Issue 46 item 7: T_hat, V_post, source and T_law are explained where they are shown, one line each, and
    the line points to the glossary."""
    from nht_jax.training.watch import table_text

    lines = table_text(finished).splitlines()
    header = lines[1].split()
    assert {"T_hat", "interval", "V_post", "source", "T_law"} <= set(header)
    key = lines[-3:]
    assert key[0].startswith("T_hat [interval]: T_transition forecast") and key[1].startswith("V_post: where V")
    assert "source: where V_post came from" in key[1] and key[2].startswith("T_law: T_transition forecast")
    assert key[2].endswith("docs/glossary.md") and (ROOT / "docs" / "glossary.md").is_file()
    glossary = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    for column in ("`T_hat`", "`T_law`", "`V_post`", "`v_post_source` (source)"):
        assert f"| {column}" in glossary, column


def test_an_unfinished_folder_nobody_holds_ends_at_once(folder):
    (folder / "meta.json").unlink()  # no longer complete, and no sweep holds it
    said = []
    assert watch(folder, interval=0.01, say=said.append).startswith("no sweep holds the folder")
    with pytest.raises(ConfigError, match="no folder"):
        watch(folder / "missing")


def test_a_sweep_in_another_process_is_followed_to_its_end(tmp_path):
    out = tmp_path / "sweep"
    sweep = subprocess.Popen(
        [
            *NHT,
            "run",
            "tiny",
            "--set",
            "train.steps=400",
            "--set",
            "train.log_every=20",
            "--set",
            "model.hidden=[8]",
            "--set",
            "execution.chunk_logs=1",
            "--out",
            str(out),
            "--quiet",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: (out / LIVE_CSV).exists() or sweep.poll() is not None, "the first live.csv")
        watcher = subprocess.run(
            [*NHT, "watch", str(out), "--interval", "0.2"], capture_output=True, text=True, timeout=TIMEOUT
        )
        assert sweep.wait(timeout=TIMEOUT) == 0
    finally:
        sweep.kill()
    assert watcher.returncode == 0, watcher.stderr
    last = watcher.stdout.rstrip().splitlines()[-1]
    assert last.startswith("finished: the folder is complete (finished ")  # (with the --new hint if it had ended)
    assert f"{out}: live at step 400: 4 runs" in watcher.stdout  # the last table, after the last chunk


def test_ctrl_c_stops_the_watching_only(folder):
    (folder / "meta.json").unlink()
    with lock.hold(folder, "a sweep (this test)"):  # held by another process than the watcher: it follows
        watcher = subprocess.Popen([*NHT, "watch", str(folder), "--interval", "0.2"], stdout=subprocess.PIPE, text=True)
        try:
            first = watcher.stdout.readline()  # the ready line: the table's first line is printed
            assert first.startswith(f"{folder}: live at step 40")
            os.kill(watcher.pid, signal.SIGINT)
            rest, _ = watcher.communicate(timeout=TIMEOUT)
        finally:
            watcher.kill()
        assert watcher.returncode == 0 and "stopped watching (the sweep itself goes on)" in rest
        assert lock.holds(folder)  # the watcher took nothing from the sweep
