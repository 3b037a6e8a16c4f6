"""Importing nht_jax changes nothing global: every module of the package, imported in a fresh interpreter whose
matplotlib backend is not Agg, leaves that backend as it was (a Jupyter kernel's inline plots keep working after
`import nht_jax.figures`), and drawing a results folder's figure does not switch it either."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "nht_jax"
BACKEND = "svg"  # not Agg, and it needs no display


def every_module() -> list[str]:
    """Every module of the package, from its files (as tests/test_layout.py finds them), but `__main__` modules:
    running is what importing one means (`python -m nht_jax.cli`)."""
    return sorted(
        ("nht_jax." + ".".join(p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
        for p in PACKAGE.rglob("*.py")
        if p.name != "__main__.py"
    )


PROBE = """
import importlib, json, sys
import matplotlib
before = matplotlib.get_backend()
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
after_import = matplotlib.get_backend()
from nht_jax.figures import style
fig, ax = style.subplots(figsize=(2, 2))
ax.plot([0, 1], [1, 0])
style.save(fig, __import__("pathlib").Path(sys.argv[2]))
print(json.dumps([before, after_import, matplotlib.get_backend()]))
"""


def test_importing_every_module_and_drawing_keeps_the_backend(tmp_path):
    modules = every_module()
    assert "nht_jax.figures.style" in modules and "nht_jax.theory.recorded" in modules and len(modules) > 50
    env = {**os.environ, "MPLBACKEND": BACKEND}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(modules), str(tmp_path / "drawn.png")],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    before, after_import, after_drawing = json.loads(done.stdout.strip().splitlines()[-1])
    assert before == after_import == after_drawing == BACKEND
    assert (tmp_path / "drawn.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # still drawn as a PNG


def test_no_module_imports_pyplot_or_switches_the_backend():
    """Figures are `matplotlib.figure.Figure` objects of their own (`nht_jax.figures.style.subplots`): no module
    imports pyplot (its global figure registry and backend resolution) or calls matplotlib.use."""
    pyplot = re.compile(
        r"^\s*(import matplotlib\.pyplot|from matplotlib\.pyplot import|from matplotlib import .*\bpyplot\b)"
        r"|matplotlib\.use\(",
        re.M,
    )
    offending = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if pyplot.search(p.read_text())]
    assert not offending, offending
