"""`pip install -e .` (the core dependencies of pyproject.toml, no extra) is enough for `nht run`: the README's main
command installs only that. Checked without installing anything: a subprocess refuses to import every package that
only an extra installs (`EXTRA_ONLY`), then runs `nht run --help` and a tiny `nht run` (training, summary, figures)
through `nht_jax.cli.main`. An optional feature reached without its extra names the extra to install."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path


from .conftest import TINY

ROOT = Path(__file__).resolve().parents[1]

EXTRA_ONLY = (
    "tensorflow_datasets",
    "tensorflow",
    "wandb",
    "tensorboardX",
    "tensorboard",
    "xarray",
    "pandas",
    "sklearn",
    "torch",
    "nbclient",
    "ipykernel",
    "mkdocs",
    "pytest",
    "pyarrow",
)
"""Top-level modules that only an extra (data, xarray, tensorboard, wandb, parquet, test, docs, bench) installs. PIL is
not among them: matplotlib, a core dependency, requires pillow itself."""

BLOCKER = textwrap.dedent('''
    import importlib.abc, sys
    BLOCKED = set({blocked!r})

    class Refuse(importlib.abc.MetaPathFinder):
        """Any import of a blocked top-level package fails as if it were not installed."""
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {{name!r}} (blocked: not a core dependency)", name=name)
            return None

    sys.meta_path.insert(0, Refuse())
''')


def without_extras(code: str, cwd: Path, blocked=EXTRA_ONLY) -> subprocess.CompletedProcess:
    """`code` run in a fresh interpreter in which the extras' packages cannot be imported."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    script = BLOCKER.format(blocked=tuple(blocked)) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def test_the_blocker_refuses_what_it_names(tmp_path):
    """The check itself: a blocked package that is installed in the test environment cannot be imported."""
    done = without_extras("import pandas", tmp_path)
    assert done.returncode != 0 and "blocked: not a core dependency" in done.stderr


def test_nht_run_needs_no_extra_and_an_optional_feature_names_its_extra(tmp_path):
    """In one fresh interpreter with every extra's package refused (one interpreter: ~10 s of imports and one small
    compile, the only way to see what the commands import from a clean start): `nht run --help`, then `nht run
    TINY` (the suite's tiny sweep, its program in the session's compile cache: trains, writes the folder, draws the
    figures) imports none of them; then `to_xarray`, `to_pandas`, the digits images (border-digits) and both
    exports on that folder each end in one line naming the extra to install, and nothing is exported."""
    done = without_extras(
        f"TINY = {TINY!r}\n"
        + textwrap.dedent("""
        import contextlib, io, json, sys
        import nht_jax
        from nht_jax import cli
        from nht_jax.base.errors import ConfigError
        help_text = io.StringIO()
        with contextlib.redirect_stdout(help_text), contextlib.suppress(SystemExit):
            cli.main(["run", "--help"])
        code = cli.main(["run", *TINY, "--quiet", "--out", "out"])
        loaded = sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)
        missing = {}
        for name in ("to_xarray", "to_pandas"):
            try:
                getattr(nht_jax.load_results("out"), name)()
            except ConfigError as e:
                missing[name] = str(e)
        try:
            from nht_jax.vision.datasets.digits import digits_images
            digits_images()
        except ConfigError as e:
            missing["digits"] = str(e)
        errors = io.StringIO()
        with contextlib.redirect_stderr(errors):
            exports = [cli.main(["export", "out", kind, "--out", "exported"]) for kind in ("--tensorboard", "--wandb")]
        print(json.dumps({"code": code, "help": "--set" in help_text.getvalue(), "loaded": loaded,
                          "missing": missing, "exports": exports, "export_errors": errors.getvalue()}))
    """),
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["code"], result["help"], result["loaded"]) == (0, True, [])
    assert (tmp_path / "out" / "summary.csv").exists() and (tmp_path / "out" / "phase_diagram.png").exists()
    extras = {name: text.split("pip install ")[1].split(" ")[0] for name, text in result["missing"].items()}
    assert extras == {"to_xarray": "'nht_jax[xarray]'", "to_pandas": "'nht_jax[xarray]'", "digits": "'nht_jax[data]'"}
    assert result["exports"] == [2, 2] and not (tmp_path / "exported").exists()
    lines = result["export_errors"].splitlines()
    assert (
        len(lines) == 2
        and "pip install 'nht_jax[tensorboard]'" in lines[0]
        and "pip install 'nht_jax[wandb]'" in lines[1]
    ), lines
