"""The guide "Your own problem" (docs/guides/own-problem.md) runs as written: its code blocks, in page order, in one
empty folder — Python blocks executed, TOML blocks saved under the name the line before them gives ("Save as
`mine.toml`:"), each line of a shell block an `nht` command run through `nht_jax.cli.main` (exit code 0). A
`pip install -e DIR` line installs the plugin DIR with pip itself, not editable and into a folder of the test's own
(`pip install --no-deps --no-build-isolation --target SITE DIR`, about 2 s; pip refuses -e with --target, and the
test's environment stays untouched), SITE then on sys.path: pip builds it from its pyproject.toml (its package data,
the preset, included) and writes the entry points that `nht run` discovers as for any installed distribution.
Also: `nht new-plugin` refuses a bad name and an occupied folder in one line.

Cost: three small compiles (the arrays sweep, the plugin's preset at 40 steps, the loop's two jitted steps) and an
import, about 20-30 s on a quiet 2-core machine: the guide's promise is that these snippets work, so they run."""

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from nht_jax import cli
from nht_jax.base import plugins

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guides" / "own-problem.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
SAVE_AS = re.compile(r"Save as `([^`]+)`:\s*$")


def blocks(text: str) -> list[tuple[str, str, str | None]]:
    """(language, code, the file name a "Save as `NAME`:" line before it gives) of every fenced block, in order."""
    found = []
    for match in BLOCK.finditer(text):
        before = text[: match.start()].rstrip("\n").splitlines()[-1:] or [""]
        name = SAVE_AS.search(before[0])
        found.append((match.group(1), match.group(2), name.group(1) if name else None))
    return found


def install(folder: Path, site: Path, monkeypatch) -> None:
    """The plugin package `folder` installed by pip into `site`, which goes on sys.path (module docstring)."""
    isolation = (
        [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    )  # 3.12+ venvs lack it
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", *isolation, "--target", str(site), str(folder)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    monkeypatch.syspath_prepend(str(site))


@pytest.fixture
def plugin_modules(monkeypatch):
    """The guide's plugin package dropped from sys.modules afterwards; nothing loaded for the user kept."""
    monkeypatch.setattr(plugins, "_loaded_by_user", set())
    yield
    for name in [m for m in sys.modules if m.split(".")[0] == "my_plugin"]:
        del sys.modules[name]


def test_the_guide_s_snippets_run_in_order(tmp_path, monkeypatch, capsys, plugin_modules):
    monkeypatch.chdir(tmp_path)
    found = blocks(GUIDE.read_text())
    assert [language for language, _, _ in found] == ["python", "toml", "sh", "sh", "python", "sh"]
    for language, code, name in found:
        if language == "python":
            exec(compile(code, str(GUIDE), "exec"), {"__name__": "guide"})
        elif language == "toml":
            assert name, "a TOML block of the guide names the file it is saved as"
            (tmp_path / name).write_text(code)
        else:
            for line in code.strip().splitlines():
                words = shlex.split(line)
                if words[:3] == ["pip", "install", "-e"]:
                    install(tmp_path / words[3], tmp_path / "site", monkeypatch)
                    continue
                assert words[0] == "nht", line
                assert cli.main(words[1:]) == 0, (line, capsys.readouterr().err)
    out = capsys.readouterr().out
    assert out.count("wd=") == 2 and "fitted" in out  # the loop's two diagnoses
    assert (tmp_path / "runs/out/mine/summary.csv").exists() and (tmp_path / "runs/out/my-plugin/summary.csv").exists()
    assert "my_plugin_mlp" in (tmp_path / "runs/out/my-plugin/config.toml").read_text()
    assert (tmp_path / "runs/out/my-loop/trajectories.png").exists()


def test_new_plugin_refuses_a_bad_name_and_an_occupied_folder(tmp_path, capsys):
    assert cli.main(["tool", "new-plugin", "My_Plugin", "--dir", str(tmp_path)]) == 2
    assert "lower-case letters and digits" in capsys.readouterr().err and not any(tmp_path.iterdir())
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    assert cli.main(["tool", "new-plugin", "taken", "--dir", str(tmp_path)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "taken").iterdir()) == ["notes.txt"]
