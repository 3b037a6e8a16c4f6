"""The registry drives `nht analyze`: a registered analysis gets its section, its files and its `--set` section;
the analyses run after the ones they need; the old bootstrap spellings are refused with the new name."""

import re
import shutil
import sys
import types
from dataclasses import fields
from pathlib import Path

import pytest

from nht_jax.analysis import registry
from nht_jax.analysis.analyze import AnalyzeOptions, options_from, run_analyses, write_analysis
from nht_jax.analysis.bootstrap import BootstrapOptions
from nht_jax.analysis.record import Analysis
from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.results.folder import load_results

DOCS = Path(__file__).resolve().parents[2] / "docs" / "extending" / "analysis.md"
TODAY = (
    "predictions",
    "fits",
    "separation",
    "layers",
    "predictor",
    "structure",
    "emergence",
    "interventions",
    "early_warning",
    "forecast",
    "forecast_tfit",
)
BOOTSTRAPPING = {
    "fits": 1000,
    "separation": 2000,
    "layers": 2000,
    "predictor": 2000,
    "emergence": 1000,
    "interventions": 1000,
    "early_warning": 1000,
}
"""The analyses that bootstrap, and their default n_bootstrap (as before the options were shared)."""


def docs_example() -> types.ModuleType:
    """The worked example of docs/extending/analysis.md, run as it stands: its first Python block."""
    text = DOCS.read_text().split("## A worked example")[1]
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    module = types.ModuleType("final_norm_example")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(code, str(DOCS), "exec"), module.__dict__)
    return module


@pytest.fixture
def example():
    module = docs_example()
    registry.register(module.ANALYSIS)
    try:
        yield module
    finally:
        registry.unregister("final_norm")
        del sys.modules[module.__name__]


@pytest.fixture
def folder(tiny_results, tmp_path):
    """A copy of the tiny sweep's results (nht analyze writes into its folder)."""
    return shutil.copytree(tiny_results.path, tmp_path / "tiny")


def headings(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("## ")]


def test_the_registry_keeps_the_order_of_the_sections_and_files():
    assert tuple(registry.ANALYSES) == TODAY
    assert all(isinstance(a, Analysis) for a in registry.analyses())


def test_a_registered_analysis_gets_its_section_its_file_and_its_options(example, folder, capsys):
    options = options_from(["final_norm.metric=weight_norm_sq", "final_norm.n_bootstrap=50"])
    assert options.final_norm == example.FinalNormOptions(metric="weight_norm_sq", n_bootstrap=50)
    with pytest.raises(ConfigError, match="final_norm.metirc.*Known keys: confidence, metric, n_bootstrap"):
        options_from(["final_norm.metirc=norm_sq"])

    assert main(["analyze", str(folder), "--set", "final_norm.n_bootstrap=50", "--set", "fits.n_bootstrap=20"]) == 0
    assert "final_norm.csv" in capsys.readouterr().out.splitlines()[-1]  # the "written:" line
    text = (folder / "analysis.md").read_text()
    assert headings(text)[-1] == "## Final norm_sq per regime"  # registered last: the last section
    rows = (folder / "final_norm.csv").read_text().splitlines()
    assert rows[0] == "regime,n_runs,median,lo,hi" and len(rows) == 1 + 4
    runs = load_results(folder).summary
    assert sum(int(r.split(",")[1]) for r in rows[1:]) == sum(r["regime"] != "diverged" for r in runs)

    registry.unregister("final_norm")
    try:
        with pytest.raises(ConfigError, match="unknown analysis 'final_norm'"):
            options_from(["final_norm.metric=norm_sq"])
        out = write_analysis(load_results(folder), options_from(["fits.n_bootstrap=20"]))
        assert "final_norm" not in out and "Final norm_sq" not in (folder / "analysis.md").read_text()
    finally:
        registry.register(example.ANALYSIS)  # the fixture removes it


def test_an_analysis_that_does_not_apply_writes_nothing(example, folder):
    out = write_analysis(load_results(folder), options_from(["fits.n_bootstrap=20", "final_norm.metric=nothing"]))
    assert out["final_norm"] is None and "final_norm.csv" not in out["written"]
    assert not (folder / "final_norm.csv").exists() and "Final" not in out["markdown"]


def test_analysis_md_sections_and_files_follow_the_registry(folder):
    out = write_analysis(load_results(folder), options_from(["fits.n_bootstrap=20"]))
    assert headings(out["markdown"]) == [
        "## The six predictions (docs/science.md §3; rules are ours: nht_jax/analysis/predictions.py)",
        "## Delay-law fits",
        "## Regime boundaries",
        "## Skipped",
        "## Excluded runs",
        "## Norm Separation Score",
        "## Layer order",
        "## Delay predictor at T_fit",
        "## Early-warning signals (docs/science.md §5)",
    ]
    assert out["written"] == (
        "analysis.md",
        "predictions.csv",
        "delay_fits.csv",
        "boundaries.csv",
        "separation.csv",
        "layer_order.csv",
        "delay_predictor.csv",
        "early_warning.csv",
        "early_warning_runs.csv",
        "phase_boundaries.png",
        "delay_fits.png",
        "early_warning.png",
    )
    assert out["summary"][1].startswith("## The six predictions") and len(out["summary"]) == 3
    assert all((folder / name).exists() for name in out["written"])


def record(name, log, needs=()):
    def run(results, options, needed):
        log.append((name, sorted(needed)))
        return name.upper()

    return Analysis(name=name, options=BootstrapOptions, run=run, needs=needs)


def test_analyses_run_after_the_ones_they_need_and_once():
    log = []
    first, second = record("first", log, needs=("second",)), record("second", log)
    reports = run_analyses(None, AnalyzeOptions(), (first, second))
    assert log == [("second", []), ("first", ["second"])] and reports == {"first": "FIRST", "second": "SECOND"}
    with pytest.raises(ConfigError, match="cycle: a → b → a"):
        run_analyses(None, AnalyzeOptions(), (record("a", [], ("b",)), record("b", [], ("a",))))


def test_register_checks_names_and_needs():
    with pytest.raises(ConfigError, match="already registered"):
        registry.register(registry.ANALYSES["fits"])
    with pytest.raises(ConfigError, match="needs nowhere, which is not registered"):
        registry.register(record("orphan", [], needs=("nowhere",)))
    with pytest.raises(ConfigError, match="needed by predictions"):
        registry.unregister("fits")
    with pytest.raises(ConfigError, match="reserved"):
        record("markdown", [])
    with pytest.raises(ConfigError, match="identifier"):
        record("final-norm", [])
    added = registry.register(record("early", []), before="fits")
    try:
        assert list(registry.ANALYSES)[:3] == ["predictions", "early", "fits"]
    finally:
        registry.unregister("early")
    assert tuple(registry.ANALYSES) == TODAY and added.name == "early"


def test_every_bootstrapping_analysis_spells_its_options_the_same_way():
    shared = {f.name for f in fields(BootstrapOptions)}
    for name, n_bootstrap in BOOTSTRAPPING.items():
        cls = registry.ANALYSES[name].options
        assert issubclass(cls, BootstrapOptions) and shared <= {f.name for f in fields(cls)}
        assert cls().n_bootstrap == n_bootstrap and cls().regimes == ("intermediate",)
        assert options_from([f"{name}.n_bootstrap=7"])[name].n_bootstrap == 7
        assert options_from([f"{name}.regimes=['weak']"])[name].regimes == ("weak",)


@pytest.mark.parametrize("section", list(BOOTSTRAPPING))
@pytest.mark.parametrize("old, new", [("n_boot", "n_bootstrap"), ("pool_regimes", "regimes")])
def test_old_spellings_are_refused_with_the_new_name(section, old, new):
    with pytest.raises(ConfigError, match=f"'{section}.{old}' was renamed '{section}.{new}'"):
        options_from([f"{section}.{old}=10"])


def test_the_command_refuses_an_old_spelling_without_a_traceback(folder, capsys):
    assert main(["analyze", str(folder), "--set", "layers.n_boot=50"]) == 2
    err = capsys.readouterr().err
    assert "--set layers.n_bootstrap=" in err and "Traceback" not in err
    assert not (folder / "analysis.md").exists()


@pytest.mark.parametrize(
    "override, message",
    [
        ("fitz.n_bootstrap=10", "unknown analysis 'fitz'.*Did you mean 'fits'.*predictions, fits, separation"),
        ("fits.n_bootstrp=10", "Did you mean 'n_bootstrap'"),
        ("n_bootstrap=10", "section.key .sections: predictions, fits"),
        ("name=x", "NAME.KEY=VALUE"),
        ("separation.regimes=['wek']", "regimes must be a list of"),
        ("predictor.n_bootstrap=-1", "n_bootstrap must be ≥ 0"),
        ("emergence.confidence=1", "confidence must lie in"),
    ],
)
def test_bad_options_say_what_exists(override, message):
    with pytest.raises(ConfigError, match=message):
        options_from([override])
