"""examples/quickstart.ipynb runs from top to bottom in a fresh kernel of this interpreter, in a temporary folder,
and computes what it says; it is stored without outputs. The test runs it with fewer steps: its cell tagged
`parameters` (papermill's convention) holds the sizes, and the test replaces that cell's source before executing.
The kernel draws inline, as Jupyter does, and imports every module of nht_jax before the notebook's own cells:
the plot cell must still show its figure (no module may switch matplotlib's backend)."""

import json
import re
import sys
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "quickstart.ipynb"
KERNEL = "nht-jax-test-python"
# 200 of the notebook's 500 steps: the middle λ still fits (at step 150), which the clamp cell needs (its T_fit)
TEST_STEPS = 200
TEST_PARAMETERS = f"STEPS = {TEST_STEPS}"
INLINE = "module://matplotlib_inline.backend_inline"
IMPORT_EVERYTHING = """import importlib, pkgutil, nht_jax
for module in pkgutil.walk_packages(nht_jax.__path__, "nht_jax."):
    if not module.name.endswith(".__main__"):  # running is what importing `python -m nht_jax.cli` means
        importlib.import_module(module.name)"""


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    """A kernelspec that starts ipykernel with this very interpreter (the venv running pytest, whatever kernels the
    machine has installed), found first through JUPYTER_PATH."""
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "nht_jax tests",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("MPLBACKEND", INLINE)  # Jupyter's own default, whatever this shell has set
    return KERNEL


def outputs_text(cell) -> str:
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs)


def tagged(nb, tag: str):
    (cell,) = [c for c in nb.cells if tag in c.metadata.get("tags", [])]
    return cell


def test_the_notebook_is_stored_without_outputs():
    nb = json.loads(NOTEBOOK.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(not c["outputs"] and c["execution_count"] is None for c in code)


def assigned(source: str) -> list[str]:
    """The names a cell's source assigns at its top level, sorted."""
    return sorted(re.findall(r"^(\w+) = ", source, flags=re.M))


def test_the_parameters_cell_holds_every_size_the_test_replaces():
    """The tagged cell assigns the names the test sets (so the test's sizes are the ones the notebook uses), and
    nothing else in the notebook hard-codes the steps."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert assigned(tagged(nb, "parameters").source) == assigned(TEST_PARAMETERS) == ["STEPS"]
    others = [c.source for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])]
    assert not [s for s in others if re.search(r"train\.steps=|[\"']steps[\"']: *\d", s)], others
    assert sum('train={"steps": STEPS}' in s for s in others) == 2  # the sweep and the clamp


def test_the_quickstart_notebook_runs(kernel, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    tagged(nb, "parameters").source = TEST_PARAMETERS
    nb.cells.insert(0, nbformat.v4.new_code_cell(IMPORT_EVERYTHING))
    work = tmp_path / "work"
    work.mkdir()
    # generous: a loaded 2-core machine; a failing cell raises CellExecutionError
    NotebookClient(
        nb, timeout=900, startup_timeout=300, kernel_name=kernel, resources={"metadata": {"path": str(work)}}
    ).execute()
    images = [o for o in tagged(nb, "plot").outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1, tagged(nb, "plot").outputs  # the figure was drawn inline, once
    sweep = outputs_text(tagged(nb, "sweep"))
    assert re.search(r"^3 runs, regimes: \{0\.05: '\w+', 0\.72: '\w+', 5(\.0)?: '\w+'\}$", sweep, flags=re.M), sweep
    clamp = outputs_text(tagged(nb, "clamp"))
    assert len(re.findall(r"^\d+\s", clamp, flags=re.M)) == 2, clamp  # the free run and the clamped one
    assert (work / "runs" / "quickstart" / "lambda" / "analysis.md").exists()
    assert (work / "runs" / "quickstart" / "clamp" / "meta.json").exists()
    for sweep_folder in ("lambda", "clamp"):  # trained at the test's size, not the notebook's
        config = (work / "runs" / "quickstart" / sweep_folder / "config.toml").read_text()
        assert re.search(rf"^steps = {TEST_STEPS}$", config, flags=re.M), sweep_folder
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
