"""The Python API (`nht_jax.api`, the top-level names): settings by section are `--set` overrides (same values,
same errors), a sweep in memory writes nothing anywhere and equals a sweep into a folder bit for bit, `Results`
analyse themselves as `nht analyze` does, `to_xarray` drops one-value axes, `import nht_jax` stays light, and the
README's Python example prints what the README says."""

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import nht_jax
from nht_jax import api

ROOT = Path(__file__).resolve().parents[1]
# the `tiny` preset at 2 runs × 40 steps, width 8 (tests/training/conftest.py's TINY)
TINY = {"train": {"steps": 40, "log_every": 20}, "model": {"hidden": [8]}, "grid": {"seed": [0]}}
TINY_SET = ["train.steps=40", "train.log_every=20", "model.hidden=[8]", "grid.seed=[0]"]


# ----------------------------------------------------------------------------- settings by section


def test_keyword_settings_are_the_set_overrides():
    texts = [
        "grid.weight_decay=[0.05, 0.72]",
        "grid.seed=0",
        "grid.learning_rate=[1e-3]",
        "train.steps=500",
        "optim.after=[{name = 'norm_clamp'}]",
        "name=two-runs",
    ]
    by_text = nht_jax.load("default", texts)
    by_keywords = nht_jax.load(
        "default",
        grid={"weight_decay": np.array([0.05, 0.72]), "seed": np.int64(0), "learning_rate": (1e-3,)},
        train={"steps": 500},
        optim={"after": [{"name": "norm_clamp"}]},
        name="two-runs",
    )
    assert by_keywords == by_text and by_keywords.name == "two-runs"
    assert nht_jax.load(by_text, train={"steps": 100}) == nht_jax.load("default", [*texts, "train.steps=100"])
    assert nht_jax.load("tiny", **TINY) == nht_jax.load("tiny", TINY_SET)
    assert nht_jax.load("tiny", ["train.steps=700"], train={"steps": 400}).train.steps == 400  # keywords come last


def test_the_grid_s_other_names_are_keywords_as_they_are_set_keys():
    """`grid={"lambda": …}` is `--set grid.lambda=…` (`nht_jax.base.aliases`): both give the configuration of the
    axes' own names, so the same grid and runs; any case, `λ`, `lr`, `eta` too."""
    by_axis = nht_jax.load("tiny", grid={"weight_decay": [0.1, 0.3], "learning_rate": [0.002]})
    assert by_axis.grid["weight_decay"] == (0.1, 0.3) and by_axis.grid["learning_rate"] == (0.002,)
    assert nht_jax.load("tiny", ["grid.lambda=[0.1, 0.3]", "grid.lr=[0.002]"]) == by_axis
    assert nht_jax.load("tiny", grid={"lambda": [0.1, 0.3], "lr": [0.002]}) == by_axis
    assert nht_jax.load("tiny", grid={"λ": (0.1, 0.3), "ETA": 0.002}) == by_axis
    assert nht_jax.load(by_axis, grid={"Lambda": [0.5]}).grid["weight_decay"] == (0.5,)


@pytest.mark.parametrize(
    "keywords, text",
    [
        ({"tarin": {"steps": 10}}, "tarin.steps=10"),
        ({"train": {"stpes": 10}}, "train.stpes=10"),
        ({"train": {"steps": "many"}}, "train.steps=many"),
        ({"grid": {"weight_decay": []}}, "grid.weight_decay=[]"),
        ({"grid": {"dropout": [0.1]}}, "grid.dropout=[0.1]"),
    ],
)
def test_a_bad_keyword_setting_is_the_same_error_line_as_set(keywords, text):
    with pytest.raises(nht_jax.ConfigError) as by_keywords:
        nht_jax.load("default", **keywords)
    with pytest.raises(nht_jax.ConfigError) as by_text:
        nht_jax.load("default", [text])
    assert str(by_keywords.value) == str(by_text.value) and "\n" not in str(by_keywords.value)


def test_a_section_must_be_a_dict():
    with pytest.raises(nht_jax.ConfigError, match=r"^train= expects a dict of train settings"):
        nht_jax.load("default", train=1000)


# ----------------------------------------------------------------------------- sweeps in memory and in a folder


@pytest.fixture(scope="module")
def in_memory(tmp_path_factory):
    """The tiny sweep in memory, from an empty working directory with its own temporary root: (results, the
    working directory, the temporary root)."""
    cwd, temp_root = tmp_path_factory.mktemp("cwd"), tmp_path_factory.mktemp("tmp")
    before, previous = os.getcwd(), tempfile.tempdir
    os.chdir(cwd)
    tempfile.tempdir = str(temp_root)
    try:
        res = nht_jax.sweep("tiny", progress=False, **TINY)
    finally:
        os.chdir(before)
        tempfile.tempdir = previous
    return res, cwd, temp_root


@pytest.fixture(scope="module")
def in_folder(tmp_path_factory):
    return nht_jax.sweep("tiny", tmp_path_factory.mktemp("folder") / "tiny", progress=False, **TINY)


def test_a_sweep_in_memory_writes_nothing(in_memory):
    res, cwd, temp_root = in_memory
    assert list(cwd.iterdir()) == [] and list(temp_root.iterdir()) == []
    assert isinstance(res, api.Results) and res.path is None and "files" not in res.meta
    assert res.num_runs == 2 and res.config.train.steps == 40


def test_a_sweep_in_memory_keeps_its_live_forecasts(in_memory, in_folder):
    """The forecast analysis reads the live forecasts a sweep recorded (live_history.csv): in memory they are kept."""
    from nht_jax.analysis.forecast import recorded_history
    from nht_jax.training import live

    recorded = live.read_csv(in_folder.path / live.LIVE_HISTORY)
    assert recorded and in_memory[0].live_history == recorded == recorded_history(in_memory[0])


def test_a_sweep_in_memory_equals_the_same_sweep_into_a_folder(in_memory, in_folder):
    res = in_memory[0]
    assert isinstance(in_folder, api.Results) and (in_folder.path / "meta.json").exists()
    assert res.config == in_folder.config and res.meta["config_digest"] == in_folder.meta["config_digest"]
    np.testing.assert_array_equal(res.steps, in_folder.steps)
    assert res.metrics.keys() == in_folder.metrics.keys()
    for name in res.metrics:
        np.testing.assert_array_equal(res.metrics[name], in_folder.metrics[name])
    np.testing.assert_equal(res.summary, in_folder.summary)
    again = nht_jax.load_results(in_folder.path)
    assert isinstance(again, nht_jax.Results) and isinstance(again, api.Results)


def test_to_xarray_drops_the_one_value_axes(in_memory):
    res = in_memory[0]
    ds = res.to_xarray()
    assert ds.test_acc.dims == ("weight_decay", "step")  # seed, η, init scale, fraction: one value each
    assert float(ds.learning_rate) == float(res.axes["learning_rate"][0])  # kept as a scalar coordinate
    assert ds.attrs["source"] == "in memory" and "[train]" in ds.attrs["config_toml"]
    full = res.to_xarray(squeeze=False)
    assert full.test_acc.shape == res.as_grid("test_acc").shape
    np.testing.assert_array_equal(ds.test_acc.values, full.test_acc.values.reshape(ds.test_acc.shape))
    assert full.layer_norm_sq.dims[-2:] == ("layer", "step") and ds.layer_norm_sq.dims[-2:] == ("layer", "step")


def test_analyze_in_memory_is_what_nht_analyze_writes(in_memory, in_folder):
    """The in-memory report holds analysis.md and every table `nht analyze --set …` writes, the same text; write=True
    writes the same files into the folder."""
    from nht_jax.cli import main

    report = in_memory[0].analyze(fits={"n_bootstrap": 20}, separation={"n_bootstrap": 20})
    assert report.written == () and report.markdown.startswith("# Analysis of tiny (2 runs")
    swept = {p.name for p in in_folder.path.glob("*.csv")}  # summary.csv, the live table's
    assert (
        main(["analyze", str(in_folder.path), "--set", "fits.n_bootstrap=20", "--set", "separation.n_bootstrap=20"])
        == 0
    )
    tables = sorted(p.name for p in in_folder.path.glob("*.csv") if p.name not in swept)
    assert sorted(report.tables) == tables and "predictions.csv" in tables
    assert (in_folder.path / "analysis.md").read_text() == report.markdown
    for name, text in report.tables.items():
        assert (in_folder.path / name).read_text() == text, name
    assert list(report.table("predictions.csv").columns) == report.tables["predictions.csv"].splitlines()[0].split(",")
    assert set(report.reports) >= {"predictions", "fits"} and report.summary.startswith("# Analysis of tiny")
    for name in ["analysis.md", *tables]:
        (in_folder.path / name).unlink()
    written = in_folder.analyze(write=True, fits={"n_bootstrap": 20}, separation={"n_bootstrap": 20})
    assert written.written[: len(tables) + 1] == ("analysis.md", *report.tables) and written.tables == report.tables
    assert (in_folder.path / "analysis.md").read_text() == report.markdown


def test_analysis_options_have_the_set_spelling_and_errors(in_memory):
    from nht_jax.analysis.analyze import keyword_options, options_from

    assert keyword_options({"fits": {"n_bootstrap": 7}}) == options_from(["fits.n_bootstrap=7"])
    for keywords, text in [
        ({"fitz": {"n_bootstrap": 7}}, None),
        ({"fits": {"n_bootsrap": 7}}, "fits.n_bootsrap=7"),
        ({"fits": {"n_boot": 7}}, "fits.n_boot=7"),
    ]:
        with pytest.raises(nht_jax.ConfigError) as by_keywords:
            in_memory[0].analyze(**keywords)
        if text is not None:
            with pytest.raises(nht_jax.ConfigError) as by_text:
                options_from([text])
            assert str(by_keywords.value) == str(by_text.value)
        else:
            assert str(by_keywords.value).startswith("unknown analysis 'fitz'. Did you mean 'fits'?")
    with pytest.raises(nht_jax.ConfigError, match=r"trained in memory: run nht_jax.sweep\(\.\.\., out=FOLDER\)"):
        in_memory[0].analyze(write=True)


# ----------------------------------------------------------------------------- the top level


def test_the_top_level_names():
    assert set(nht_jax.__all__) >= {
        "sweep",
        "load",
        "load_results",
        "Results",
        "make_train",
        "Config",
        "ConfigError",
        "diagnose",
        "record_norms",
        "gamma_eff",
    }
    assert not hasattr(nht_jax, "make_trainer")  # one single-run function: make_train
    for name in nht_jax.__all__:
        obj = getattr(nht_jax, name)
        if name != "ConfigError":  # a plain exception class
            assert re.search(r"^\s*(Args|Returns|Attributes):", obj.__doc__ or "", re.M), name
            assert re.search(r"^\s*Examples:", obj.__doc__, re.M), name


def test_import_nht_jax_loads_neither_jax_nor_matplotlib():
    code = "import sys, nht_jax; print(json.dumps([m for m in ('jax', 'matplotlib', 'nht_jax.experiment') if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


# ----------------------------------------------------------------------------- the README's example


def readme_example() -> tuple[str, list[str]]:
    """The README's Python example and the lines it says the example prints (the ```text block after it)."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## In Python") :]
    code = re.search(r"```python\n(.*?)```", section, flags=re.DOTALL).group(1)
    printed = re.search(r"```text\n(.*?)```", section, flags=re.DOTALL).group(1)
    return code, printed.splitlines()


def test_the_readme_example_uses_only_top_level_names():
    code, printed = readme_example()
    assert code.startswith("import nht_jax\n") and "from " not in code and code.count("import") == 1
    assert re.findall(r"nht_jax\.(\w+)", code) == ["sweep"] and printed


def test_the_readme_example_prints_what_the_readme_says(tmp_path):
    """Run exactly the README's example, in an empty folder: it prints the README's lines (after the memory plan)
    and, trained in memory, writes nothing there. It runs as users run it: under XLA's default flags, not the
    suite's quick-compile ones (its 500 steps run faster so)."""
    from .conftest import users_xla_env

    code, printed = readme_example()
    env = {**users_xla_env(), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("memory: ") and lines[1:] == printed, done.stdout
    assert list(tmp_path.iterdir()) == []
