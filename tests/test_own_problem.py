"""The guide "Your own problem" (docs/guides/own-problem.md) runs as written: its code blocks, in page order, in one
empty folder — Python blocks executed, TOML blocks saved under the name the line before them gives ("Save as
`mine.toml`:"), each line of a shell block an `nht` command run through `nht_jax.cli.main` (exit code 0). A
`pip install -e DIR` line installs the plugin DIR without pip, for speed and to leave the environment alone: DIR on
sys.path and a `*.dist-info` folder written from DIR/pyproject.toml's entry points beside it, which
importlib.metadata reads as it reads any installed distribution (the same entry-point discovery `nht run` uses).
Also: `nht new-plugin` refuses a bad name and an occupied folder in one line.

Cost: three small compiles (the arrays sweep, the plugin's preset at 40 steps, the loop's two jitted steps) and an
import, about 20-30 s on a quiet 2-core machine: the guide's promise is that these snippets work, so they run."""

import re
import shlex
import sys
import tomllib
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


def install_without_pip(folder: Path, site: Path, monkeypatch) -> None:
    """DIR importable and its entry points installed (module docstring)."""
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in table.items()) + "\n"
        for group, table in project["entry-points"].items()))
    monkeypatch.syspath_prepend(str(folder))
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
                    install_without_pip(tmp_path / words[3], tmp_path / "site", monkeypatch)
                    continue
                assert words[0] == "nht", line
                assert cli.main(words[1:]) == 0, (line, capsys.readouterr().err)
    out = capsys.readouterr().out
    assert out.count("wd=") == 2 and "fitted" in out  # the loop's two diagnoses
    assert (tmp_path / "runs/out/mine/summary.csv").exists() and (tmp_path / "runs/out/my-plugin/summary.csv").exists()
    assert "my_plugin_mlp" in (tmp_path / "runs/out/my-plugin/config.toml").read_text()
    assert (tmp_path / "runs/out/my-loop/trajectories.png").exists()


def test_new_plugin_refuses_a_bad_name_and_an_occupied_folder(tmp_path, capsys):
    assert cli.main(["new-plugin", "My_Plugin", "--dir", str(tmp_path)]) == 2
    assert "lower-case letters and digits" in capsys.readouterr().err and not any(tmp_path.iterdir())
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    assert cli.main(["tool", "new-plugin", "taken", "--dir", str(tmp_path)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "taken").iterdir()) == ["notes.txt"]
