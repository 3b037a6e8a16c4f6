"""The package's layout: one home per job, imports pointing down, no cycles, and who may draw or train.

Layers, lowest first (a module may import its own layer and those below it):
    base → config → engine → models, vision → domains → experiment → measure → results → training → figures, theory
    → analysis → api → papers → cli
config: every section of a configuration, frozen and checked, one floor above base (the forecast's options too);
measure: pure measurement on a run's history (regimes, stop rules, and the forecast: the window fit, the diagnosis,
V̂_post, the first-passage law, its held-out score); results: the folder format, checkpoints, lock, export and
import; training: the sweep (the loop, its hooks, buckets, forks, launch); `api` (nht_jax/api.py) is what
`import nht_jax` offers: a sweep from Python and results that analyse themselves.
Imports inside functions count. Package facades (`__init__.py`) are left out of the cycle check, so a re-export
is not a cycle."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "nht_jax"
LAYERS = {
    "base": 0,
    "config": 1,
    "engine": 2,
    "models": 3,
    "vision": 3,
    "domains": 4,
    "experiment": 5,
    "measure": 6,
    "results": 7,
    "training": 8,
    "figures": 9,
    "theory": 9,
    "analysis": 10,
    "api": 11,
    "papers": 12,
    "cli": 13,
}


def modules() -> dict[str, Path]:
    return {
        ("nht_jax." + ".".join(p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__"): p
        for p in PACKAGE.rglob("*.py")
    }


def imported(path: Path) -> list[str]:
    """Every nht_jax module named by an import in the file, at any depth (relative imports resolved)."""
    names = []
    package = "nht_jax." + ".".join(path.relative_to(PACKAGE).parent.parts)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.rstrip(".").split(".")[: len(package.split(".")) - node.level + 1] + [base])
            names += [base] + [f"{base}.{a.name}" for a in node.names]
    return [n.rstrip(".") for n in names if n.startswith("nht_jax")]


def layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def resolve(name: str, known: dict) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def test_every_top_level_module_has_a_layer():
    assert {m.split(".")[1] for m in modules() if "." in m} == set(LAYERS)
    assert not (PACKAGE / "report").exists()  # split into measure/summaries, figures/, analysis/ and papers/
    assert not (PACKAGE / "run").exists()  # split into measure/, results/ and training/; the benchmark into benchmarks/
    assert not (PACKAGE / "forecast").exists()  # measure/forecast/, its options config/forecast.py


def test_imports_point_down():
    upward = [
        f"{m} → {n}"
        for m, path in modules().items()
        if (own := layer(m)) is not None
        for n in imported(path)
        if (target := layer(n)) is not None and target > own
    ]
    assert not upward, upward


def test_no_import_cycles():
    known = modules()
    graph = {
        m: {r for n in imported(p) if (r := resolve(n, known)) and r != m and not known[r].name == "__init__.py"}
        for m, p in known.items()
        if p.name != "__init__.py"
    }
    state, cycles = {}, []

    def visit(m, stack):
        state[m] = "open"
        for n in sorted(graph.get(m, ())):
            if state.get(n) == "open":
                cycles.append(" → ".join(stack[stack.index(n) :] + [n]))
            elif n not in state:
                visit(n, stack + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, cycles


def test_the_layers_below_figures_draw_nothing_and_only_the_api_the_cli_and_the_papers_train():
    below = ("nht_jax.measure", "nht_jax.results", "nht_jax.training")
    drawing = [m for m, p in modules().items() if m.startswith(below) and "matplotlib" in p.read_text()]
    assert not drawing, drawing
    trains = {
        "nht_jax.training.sweep",
        "nht_jax.training.loop",
        "nht_jax.training.hooks",
        "nht_jax.training.buckets",
        "nht_jax.training.shards",
    }  # a sweep (or a shard of one) into a results folder
    training = sorted(m for m, p in modules().items() if trains & set(imported(p)) and m not in trains)
    assert all(m.split(".")[1] in ("api", "cli", "papers") for m in training), training


def test_the_measurement_layer_is_pure():
    """measure/ works on a run's logged history alone: no training, no folders, no JAX."""
    impure = {"nht_jax.results", "nht_jax.training", "nht_jax.engine.loop", "nht_jax.engine.executor"}
    found = [
        f"{m} → {n}"
        for m, p in modules().items()
        if m.startswith("nht_jax.measure")
        for n in imported(p)
        if n.startswith(tuple(impure))
    ]
    jax_users = [m for m, p in modules().items() if m.startswith("nht_jax.measure") and "import jax" in p.read_text()]
    assert not found and not jax_users, (found, jax_users)


def test_the_forecast_is_one_pure_home():
    """measure/forecast/ imports only itself, its options (config) and base (no engine, no JAX: the optimiser's g is
    passed in), and none of the forecast's users declares a field of its options again: each is declared once, in
    nht_jax.config.forecast."""
    foreign = [
        f"{m} → {n}"
        for m, p in modules().items()
        if m.startswith("nht_jax.measure.forecast")
        for n in imported(p)
        if not n.startswith(("nht_jax.measure.forecast", "nht_jax.config", "nht_jax.base"))
    ]
    jax_users = [
        m for m, p in modules().items() if m.startswith("nht_jax.measure.forecast") and "import jax" in p.read_text()
    ]
    assert not foreign and not jax_users, (foreign, jax_users)
    import dataclasses

    from nht_jax.config import forecast as options

    names = {f.name for f in dataclasses.fields(options.ForecastSettings)}
    users = (
        "nht_jax.training.live",
        "nht_jax.training.hooks",
        "nht_jax.analysis.monitor",
        "nht_jax.analysis.predictor",
        "nht_jax.analysis.forecast",
        "nht_jax.analysis.tfit_forecast",
        "nht_jax.config.sections",
        "nht_jax.engine.norm_monitor",
    )
    declared = [
        f"{m}: {t.target.id}"
        for m, p in modules().items()
        if m in users
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.ClassDef)
        for t in node.body
        if isinstance(t, ast.AnnAssign) and isinstance(t.target, ast.Name) and t.target.id in names
    ]
    assert not declared, declared


def test_the_configuration_is_one_floor_at_the_bottom():
    """Every section of a configuration is a frozen dataclass in nht_jax/config/, which imports only itself and base:
    no section is declared elsewhere in the engine, and the configuration cannot reach up to the code it configures."""
    import dataclasses

    from nht_jax import experiment

    foreign = [
        f"{m} → {n}"
        for m, p in modules().items()
        if m.startswith("nht_jax.config")
        for n in imported(p)
        if not n.startswith(("nht_jax.config", "nht_jax.base"))
    ]
    assert not foreign, foreign
    for section, cls in experiment.ENGINE_SECTIONS.items():
        assert cls.__module__ == "nht_jax.config.sections", section
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, section
    assert set(experiment.ENGINE_SECTIONS) | {"task", "model", "grid"} == set(experiment.SECTIONS)
    assert experiment.ForkConfig.__module__ == "nht_jax.config.sections"


def test_the_benchmark_and_the_pytorch_baseline_are_not_installed():
    assert not [p for p in PACKAGE.rglob("*.py") if "torch" in p.read_text() and "import torch" in p.read_text()]
    assert (PACKAGE.parent / "benchmarks" / "harness.py").exists()


PUBLIC_NAMES_AT_MOST = 400
"""Issue 47's bound on the public surface: the names of every module's `__all__`, summed (1,103 before the cut)."""


def test_the_public_surface_is_small_and_every_exported_name_exists():
    """`__all__` lists what users call (the docs, examples, notebooks and benchmarks name it); every listed name is
    defined in its module, and all of them together stay under PUBLIC_NAMES_AT_MOST."""
    import importlib

    exported, missing = 0, []
    for name in sorted(modules()):
        if name.endswith("__main__"):
            continue
        module = importlib.import_module(name)
        listed = getattr(module, "__all__", [])
        exported += len(listed)
        missing += [f"{name}.{n}" for n in listed if not hasattr(module, n)]
    assert not missing, missing
    assert exported <= PUBLIC_NAMES_AT_MOST, f"{exported} exported names"


MODULE_DOCSTRING_LINES = 15
"""Issue 47 item 4's bound on a module docstring's lines (64 modules were over 20 before it, the longest 85): what
the module is for and who uses it, and the docs page that explains it. The maths, the definitions, the conventions
and the measured numbers live in the docs (the guides, docs/science.md, docs/methods/, docs/theory/,
docs/configuration/), where a reader looks for them, in one copy; the API pages render the module docstrings,
which stay short there."""
PACKAGE_DOCSTRING_LINES = 21
"""A package `__init__` may keep a compact table of its parts under a bound of its own: the `nht` command's list of
commands (21 lines, which tests/test_cli_drift.py reads), the engine's modules (16)."""


def docstring_lines(path: Path) -> int:
    """The lines of a module's docstring, as written (`ast.get_docstring(..., clean=False)`); 0 without one."""
    text = ast.get_docstring(ast.parse(path.read_text()), clean=False)
    return len(text.splitlines()) if text else 0


def test_every_module_docstring_is_short():
    long = {
        str(path.relative_to(PACKAGE)): n
        for path in sorted(PACKAGE.rglob("*.py"))
        if (n := docstring_lines(path))
        > (PACKAGE_DOCSTRING_LINES if path.name == "__init__.py" else MODULE_DOCSTRING_LINES)
    }
    assert not long, f"{len(long)} module docstrings over the bound (the maths belongs in the docs): {long}"
