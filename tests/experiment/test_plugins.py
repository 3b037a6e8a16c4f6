"""Plugins (docs/guides/plugins.md): task.name and model.name as import paths or entry-point names, presets of
installed packages, and the rule that opening a results folder imports no code the folder names.

The example plugin (examples/nht_example_plugin) is "installed" without touching the venv: its source folder goes on
sys.path (PYTHONPATH for subprocesses) and a `*.dist-info` folder written from its pyproject.toml's entry points
goes beside it, which importlib.metadata reads as it reads any installed distribution. Both are removed with the
test's tmp folders; the plugin's modules are dropped from sys.modules after each test."""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import jax
import numpy as np
import pytest

from nht_jax import cli, domains, experiment
from nht_jax.base import plugins
from nht_jax.base.errors import ConfigError
from nht_jax.base.presets import plugin_presets, preset_path, presets_dir
from nht_jax.results import folder as results

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "nht_example_plugin"
DOMAIN_PATH, MODEL_PATH = "nht_example_plugin.digit_sum:DOMAIN", "nht_example_plugin.models:SumMLP"
PRESET = "example-digit-sum"
TIMEOUT = 900  # generous: the machine may be busy


def write_distribution(folder: Path, name: str, entry_points: dict) -> Path:
    """A `<name>.dist-info` in `folder` registering `entry_points` ({group: {name: value}}): installed, for
    importlib.metadata, once `folder` is on sys.path."""
    info = folder / f"{name.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in table.items()) + "\n"
            for group, table in entry_points.items()
        )
    )
    return folder


def example_entry_points() -> dict:
    with (EXAMPLE / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["project"]["entry-points"]


@pytest.fixture
def clean_modules(monkeypatch):
    """No plugin module imported and nothing loaded for the user, before and after the test."""

    def drop():
        for name in [m for m in sys.modules if m.split(".")[0] in ("nht_example_plugin", "my_settings_model")]:
            del sys.modules[name]

    drop()
    monkeypatch.setattr(plugins, "_loaded_by_user", set())
    yield
    drop()


@pytest.fixture
def on_path(monkeypatch, clean_modules):
    """The example plugin's source importable (not installed: no entry points)."""
    monkeypatch.syspath_prepend(str(EXAMPLE))


@pytest.fixture
def installed(tmp_path, on_path, monkeypatch):
    """The example plugin importable and its entry points installed."""
    monkeypatch.syspath_prepend(
        str(write_distribution(tmp_path / "site", "nht-example-plugin", example_entry_points()))
    )


def plugin_table(task=DOMAIN_PATH, model=MODEL_PATH, **model_settings) -> dict:
    return {
        "name": "plugin-test",
        "task": {"name": task, "base": 3, "digits": 2},
        "model": {"name": model, **model_settings},
        "train": {"steps": 20, "log_every": 10},
        "grid": {"weight_decay": [0.01], "train_fraction": 0.5},
    }


# ----------------------------------------------------------------------------- import paths


def test_an_import_path_names_a_domain_and_a_flax_module_as_its_model(on_path):
    config = experiment.from_dict(plugin_table(width=8))
    assert config.domain.name == "digit_sum" and config.task.name == DOMAIN_PATH
    assert config.model.name == MODEL_PATH and config.model.width == 8
    assert experiment.to_dict(config)["model"] == {"name": MODEL_PATH, "width": 8}
    assert experiment.from_dict(experiment.to_dict(config)) == config  # config.toml reads back as the same config
    module = config.model.build(3, 3, 2)
    assert (type(module).__name__, module.vocab_size, module.num_classes, module.n_ctx, module.width) == (
        "SumMLP",
        3,
        3,
        2,
        8,
    )
    with pytest.raises(ConfigError, match="model.width must be an integer"):
        experiment.from_dict(plugin_table(width="wide"))
    with pytest.raises(ConfigError, match="unknown key 'model.depth'"):
        experiment.from_dict(plugin_table(depth=2))


def test_a_plugin_model_trains_through_the_token_trainer(on_path):
    config = experiment.from_dict(plugin_table(width=4))
    trainer = experiment.build_trainer(config)
    hparams = {"seed": 0, "train_fraction": 0.5, "init_scale": 1.0, "weight_decay": 0.0, "learning_rate": 1e-2}
    state = jax.jit(trainer.init)(hparams)  # one compiled program each, not one per eager operation
    assert set(state.params) == {"embed", "hidden", "head"}
    assert {"train_acc", "test_acc"} <= set(jax.jit(trainer.evaluate)(state, hparams))


def test_a_settings_dataclass_is_a_model_like_the_packages(tmp_path, monkeypatch, on_path):
    (tmp_path / "my_settings_model.py").write_text(
        "from dataclasses import dataclass\n"
        "from nht_example_plugin.models import SumMLP\n"
        "@dataclass(frozen=True)\n"
        "class Wide:\n"
        "    name: str = 'wide'\n"
        "    width: int = 64\n"
        "    def validate(self):\n"
        "        pass\n"
        "    def build(self, vocab_size, num_classes, n_ctx):\n"
        "        return SumMLP(vocab_size, num_classes, n_ctx, width=self.width)\n"
        "@dataclass(frozen=True)\n"
        "class NoBuild:\n"
        "    name: str = 'x'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = experiment.from_dict(plugin_table(model="my_settings_model:Wide", width=16))
    assert config.model.name == "my_settings_model:Wide" and config.model.build(3, 3, 2).width == 16
    with pytest.raises(ConfigError, match="lacks validate, build"):
        experiment.from_dict(plugin_table(model="my_settings_model:NoBuild"))


@pytest.mark.parametrize(
    "setting, value, message",
    [
        ("task", "no_such_package.tasks:DOMAIN", "module 'no_such_package' not found"),
        ("task", "nht_example_plugin.missing:DOMAIN", "module 'nht_example_plugin.missing' not found"),
        ("task", "nht_example_plugin.digit_sum:NOPE", "'nht_example_plugin.digit_sum' has no attribute 'NOPE'"),
        ("task", "nht_example_plugin.digit_sum:DOMAIN.nope", "'nht_example_plugin.digit_sum.DOMAIN' has no attribute"),
        ("task", MODEL_PATH, "names the class SumMLP, not a nht_jax.domains.Domain"),
        ("task", "nht_example_plugin.digit_sum:np", "names a module, not a nht_jax.domains.Domain"),
        ("model", "nht_example_plugin.models:nn", "neither a Flax nn.Module class nor a settings dataclass"),
        ("model", DOMAIN_PATH, "names a Domain: neither a Flax nn.Module class"),
        ("model", "nht_example_plugin.models:NOPE", "'nht_example_plugin.models' has no attribute 'NOPE'"),
    ],
)
def test_a_name_that_does_not_import_or_define_what_it_must_says_what_was_tried(on_path, setting, value, message):
    table = plugin_table(**({setting: value} if setting == "task" else {"model": value}))
    if setting == "model":
        table["task"] = {"name": DOMAIN_PATH}
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        experiment.from_dict(table)


def test_an_import_that_fails_is_one_line_with_its_error(tmp_path, monkeypatch, clean_modules):
    (tmp_path / "my_settings_model.py").write_text("raise RuntimeError('the plugin is broken')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="importing module 'my_settings_model' failed: RuntimeError: the plugin is"):
        domains.get("my_settings_model:DOMAIN")


def test_a_module_must_declare_the_contracts_arguments(tmp_path, monkeypatch, on_path):
    (tmp_path / "my_settings_model.py").write_text(
        "import flax.linen as nn\n"
        "class NoCtx(nn.Module):\n"
        "    vocab_size: int\n"
        "    num_classes: int\n"
        "    def __call__(self, x):\n"
        "        return x\n"
        "class NeedsDepth(nn.Module):\n"
        "    vocab_size: int\n"
        "    num_classes: int\n"
        "    n_ctx: int\n"
        "    depth: int\n"
        "    def __call__(self, x):\n"
        "        return x\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        ConfigError,
        match=r"NoCtx has no field n_ctx; this task builds its model as "
        r"NoCtx\(vocab_size=…, num_classes=…, n_ctx=…",
    ):
        experiment.from_dict(plugin_table(model="my_settings_model:NoCtx"))
    with pytest.raises(ConfigError, match="field 'depth' of NeedsDepth has no default"):
        experiment.from_dict(plugin_table(model="my_settings_model:NeedsDepth"))


def test_a_domain_without_a_model_contract_refuses_models_from_outside(on_path):
    with pytest.raises(ConfigError, match="task 'toy_linear' trains only its own models"):
        experiment.from_dict({"task": {"name": "toy_linear"}, "model": {"name": MODEL_PATH}})
    with pytest.raises(ConfigError, match=r"choose one of \['linear'\]$"):
        experiment.from_dict({"task": {"name": "toy_linear"}, "model": {"name": "mlpx"}})


def test_shipped_names_are_unchanged():
    config = experiment.load("tiny")
    assert config.task.name == "modular" and config.model.name == "mlp" and config.domain is domains.get("modular")
    with pytest.raises(ConfigError, match="Did you mean 'modular'"):
        domains.get("modularx")
    with pytest.raises(ConfigError, match="cannot be trained on task 'modular'; choose one of"):
        experiment.load("tiny", ["model.name=mlpx"])


# ----------------------------------------------------------------------------- entry points and presets


def test_entry_points_register_a_domain_a_model_and_a_preset(installed):
    assert [r.distribution for r in plugins.registered(plugins.DOMAINS) if r.name == "digit_sum"] == [
        "nht-example-plugin"
    ]
    config = experiment.load(PRESET)  # task.name = "digit_sum", model.name = "sum_mlp": entry-point names
    assert (config.task.name, config.domain.name, config.model.name, type(config.model.build(5, 5, 3)).__name__) == (
        "digit_sum",
        "digit_sum",
        "sum_mlp",
        "SumMLP",
    )
    assert experiment.from_dict(experiment.to_dict(config)) == config
    assert preset_path(PRESET) == EXAMPLE / "nht_example_plugin" / "presets" / f"{PRESET}.toml"
    with pytest.raises(ConfigError, match="Did you mean 'example-digit-sum'"):
        preset_path("example-digit-summ")


def test_a_plugin_preset_never_shadows_a_shipped_one(tmp_path, monkeypatch, installed, capsys):
    (tmp_path / "my_settings_model.py").write_text(
        f"TINY = {str(tmp_path / 'tiny.toml')!r}\nMISSING = {str(tmp_path / 'missing.toml')!r}\n"
    )
    (tmp_path / "tiny.toml").write_text('name = "not-the-shipped-tiny"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(
        str(
            write_distribution(
                tmp_path / "site2",
                "shadowing-plugin",
                {
                    "nht_jax.presets": {
                        "tiny": "my_settings_model:TINY",
                        PRESET: "my_settings_model:TINY",
                        "broken": "my_settings_model:MISSING",
                    }
                },
            )
        )
    )
    assert preset_path("tiny") == presets_dir() / "tiny.toml"  # the shipped one
    assert experiment.load("tiny").name == "tiny"
    assert preset_path(PRESET).parent.name == "presets"  # the first distribution by name: nht-example-plugin's
    found = {(p.name, p.distribution): p for p in plugin_presets()}
    assert "shipped preset has this name" in found["tiny", "shadowing-plugin"].ignored
    assert "nht-example-plugin registers this name too" in found[PRESET, "shadowing-plugin"].ignored
    assert not found[PRESET, "nht-example-plugin"].ignored
    assert "not a .toml file" in found["broken", "shadowing-plugin"].problem
    with pytest.raises(ConfigError, match="preset 'broken' of shadowing-plugin: .*not a .toml file"):
        preset_path("broken")

    assert cli.main(["presets"]) == 0
    out = capsys.readouterr().out
    lines = {
        line.split("  ")[0] + "/" + line.split("  ")[1]: line
        for line in out.splitlines().__iter__()
        if line.count("  ") >= 2
    }
    assert "Example plugin: 3 digits" in lines[f"{PRESET}/nht-example-plugin"]
    assert "ignored: a shipped preset has this name" in lines["tiny/shadowing-plugin"]
    assert "cannot be used" in lines["broken/shadowing-plugin"]


# ----------------------------------------------------------------------------- the CLI, end to end


def plugin_env(folder: Path, installed_: bool) -> dict:
    env = dict(os.environ)
    paths = [str(EXAMPLE)] + ([str(folder)] if installed_ else [])
    env["PYTHONPATH"] = os.pathsep.join(paths + [env["PYTHONPATH"]] if env.get("PYTHONPATH") else paths)
    return env


def nht(*args, env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nht_jax.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The example preset trained by `nht run` in a subprocess (tiny: 40 steps), its entry points installed in
    `site`; and `foreign`, the same folder as a colleague would send it with import paths in its config.toml."""
    base = tmp_path_factory.mktemp("plugin")
    site = write_distribution(base / "site", "nht-example-plugin", example_entry_points())
    out = base / "out"
    done = nht(
        "run",
        PRESET,
        "--out",
        out,
        "--quiet",
        "--set",
        "train.steps=40",
        "--set",
        "train.log_every=10",
        env=plugin_env(site, True),
    )
    assert done.returncode == 0, done.stderr
    return base, site, out


def as_import_paths(folder: Path, into: Path) -> Path:
    """A copy of the results folder whose config.toml names the domain and the model by import path (sealed again)."""
    into.mkdir()
    for name in ("trajectories.npz", "summary.csv"):
        (into / name).write_bytes((folder / name).read_bytes())
    text = (folder / "config.toml").read_text()
    text = text.replace('name = "digit_sum"', f'name = "{DOMAIN_PATH}"').replace(
        'name = "sum_mlp"', f'name = "{MODEL_PATH}"'
    )
    assert DOMAIN_PATH in text and MODEL_PATH in text
    (into / "config.toml").write_text(text)
    meta = {k: v for k, v in json.loads((folder / "meta.json").read_text()).items() if k != "files"}
    results.write_meta(into, meta)
    return into


def test_the_example_preset_runs_and_is_analysed_through_the_cli(trained):
    base, site, out = trained
    listing = nht("presets", env=plugin_env(site, True))
    assert listing.returncode == 0 and any(
        line.startswith(f"{PRESET}  nht-example-plugin") for line in listing.stdout.splitlines()
    ), listing.stdout
    assert 'name = "digit_sum"' in (out / "config.toml").read_text()
    done = nht("analyze", out, env=plugin_env(site, True))
    assert done.returncode == 0, done.stderr
    assert "domain digit_sum" in (out / "analysis.md").read_text()


def test_a_folder_naming_an_import_path_is_refused_unless_allowed(trained, tmp_path):
    base, site, out = trained
    foreign = as_import_paths(out, tmp_path / "foreign")
    refused = nht("analyze", foreign, env=plugin_env(site, False))  # importable, not installed
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert f"names task.name = '{DOMAIN_PATH}', code outside nht_jax" in refused.stderr
    assert "--allow-import nht_example_plugin.digit_sum" in refused.stderr
    assert not (foreign / "analysis.md").exists()
    allowed = nht(
        "analyze",
        foreign,
        "--allow-import",
        "nht_example_plugin.digit_sum",
        "--allow-import",
        MODEL_PATH,
        env=plugin_env(site, False),
    )
    assert allowed.returncode == 0, allowed.stderr
    assert (foreign / "analysis.md").exists()


def test_reading_imports_nothing_the_folder_names(trained, tmp_path, on_path, capsys):
    base, site, out = trained
    foreign = as_import_paths(out, tmp_path / "foreign")
    for command, options in (
        (["report"], []),
        (["analyze"], []),
        (["paper", "bound"], []),
        (["export"], ["--tensorboard"]),
    ):
        assert cli.main([*command, str(foreign), *options]) == 2
        assert "reading a results folder never imports code the folder names" in capsys.readouterr().err
    with pytest.raises(plugins.PluginError, match="--allow-import nht_example_plugin.digit_sum"):
        results.load_results(foreign)
    with pytest.raises(plugins.PluginError, match="model.name = 'nht_example_plugin.models:SumMLP'"):
        results.load_results(foreign, allow_imports=["nht_example_plugin.digit_sum"])
    assert "nht_example_plugin.models" not in sys.modules  # refused before importing

    res = results.load_results(foreign, allow_imports=["nht_example_plugin.digit_sum", MODEL_PATH])
    assert res.domain.name == "digit_sum" and res.num_runs == 4
    assert (
        cli.main(
            [
                "paper",
                "bound",
                str(foreign),
                "--allow-import",
                "nht_example_plugin.digit_sum",
                "--allow-import",
                "nht_example_plugin.models",
            ]
        )
        == 0
    )
    capsys.readouterr()
    plugins._loaded_by_user.clear()
    with pytest.raises(plugins.PluginError):  # what --allow-import allowed ended with its command
        results.load_results(foreign)
    with pytest.raises(ConfigError, match="neither a module"):
        results.load_results(foreign, allow_imports=["not a module!"])


def test_installed_entry_points_and_the_users_own_imports_are_allowed(trained, tmp_path, monkeypatch, on_path):
    base, site, out = trained
    foreign = as_import_paths(out, tmp_path / "foreign")
    experiment.from_dict(plugin_table())  # the user's own configuration imports both (outside any folder)
    assert results.load_results(foreign).domain.name == "digit_sum"
    plugins._loaded_by_user.clear()
    monkeypatch.syspath_prepend(str(site))  # installed: its entry points' values are allowed
    assert results.load_results(foreign).config.model.name == MODEL_PATH
    assert results.load_results(out).config.model.name == "sum_mlp"


def test_no_loader_unpickles():
    calls = [
        (path, line)
        for path in (ROOT / "nht_jax").rglob("*.py")
        for line in path.read_text().splitlines()
        if "np.load(" in line
    ]
    assert calls and all("allow_pickle=False" in line for _, line in calls), calls


def test_a_bare_flax_cnn_trains_through_the_image_trainer(tmp_path, monkeypatch):
    """The image domains' contract (`images.IMAGE_CONTRACT`): a module taking (batch, H, W, 3) images and `train`,
    returning logits; head_to_first_ratio divides by its first parameter layer."""
    (tmp_path / "my_cnn.py").write_text(
        "import flax.linen as nn\n"
        "class TinyCNN(nn.Module):\n"
        "    num_classes: int\n"
        "    features: int = 4\n"
        "    @nn.compact\n"
        "    def __call__(self, x, train: bool = False):\n"
        "        x = nn.relu(nn.Conv(self.features, (3, 3), name='conv')(x))\n"
        "        return nn.Dense(self.num_classes, name='head')(x.mean(axis=(1, 2)))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = experiment.load(
        "border-digits",
        [
            "task.image_size=16",
            "train.steps=4",
            "train.log_every=2",
            "grid.seed=[0]",
            "grid.weight_decay=[0.1]",
            "grid.rho=[0.9]",
            "model.name='my_cnn:TinyCNN'",
            "model.features=3",
        ],
    )
    assert config.model.features == 3 and config.model.build(10).features == 3
    trainer = experiment.build_trainer(config)
    hparams = {k: v[0] for k, v in config.runs().items()}
    state = jax.jit(trainer.init)(hparams)
    assert set(state.params) == {"conv", "head"} and state.params["conv"]["kernel"].shape == (3, 3, 3, 3)
    metrics = {k: np.asarray(v) for k, v in jax.jit(trainer.evaluate)(state, hparams).items()}
    expected = float(metrics["head_norm_sq"] / metrics["layer_norm_sq/conv"])
    assert float(metrics["head_to_first_ratio"]) == pytest.approx(expected) and np.isfinite(expected)


def test_a_bare_flax_mlp_trains_through_the_digits_grokking_trainer(tmp_path, monkeypatch):
    """digits-grokking's contract (`digits_grokking.DIGITS_CONTRACT`): (batch, 64) images in, logits out; the
    grid's init_scale multiplies every parameter."""
    (tmp_path / "my_mlp.py").write_text(
        "import flax.linen as nn\n"
        "class TinyMLP(nn.Module):\n"
        "    num_classes: int\n"
        "    width: int = 8\n"
        "    @nn.compact\n"
        "    def __call__(self, x):\n"
        "        return nn.Dense(self.num_classes, name='head')(nn.relu(nn.Dense(self.width, name='hidden')(x)))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "mine.toml").write_text(
        '[task]\nname = "digits_grokking"\n[model]\nname = "my_mlp:TinyMLP"\nwidth = 5\n'
        "[train]\nsteps = 4\nlog_every = 2\n[grid]\nweight_decay = 0.1\nseed = 0\ninit_scale = [1.0, 2.0]\n"
    )
    config = experiment.load(str(tmp_path / "mine.toml"))
    trainer = experiment.build_trainer(config)
    runs = config.runs()
    small, large = ({k: v[i] for k, v in runs.items()} for i in (0, 1))
    assert small["init_scale"] == 1.0 and large["init_scale"] == 2.0
    init = jax.jit(trainer.init)  # one program for both runs: init_scale is traced
    one, two = init(small), init(large)
    assert one.params["hidden"]["kernel"].shape == (64, 5) and set(one.params) == {"hidden", "head"}
    np.testing.assert_allclose(two.params["head"]["kernel"], 2 * np.asarray(one.params["head"]["kernel"]), rtol=1e-6)
    assert {"train_acc", "test_acc", "head_norm_sq"} <= set(jax.jit(trainer.evaluate)(one, small))


def test_allow_import_admits_the_module_and_its_submodules_never_a_name_it_prefixes():
    """Issue 29 item 6: --allow-import mypkg admits mypkg and mypkg.x, never mypkg_evil (whole dotted names)."""
    with plugins.reading("a folder"), plugins.allowing(["mypkg"]):
        assert plugins.permitted("mypkg:DOMAIN") and plugins.permitted("mypkg.tasks:DOMAIN")
        assert plugins.permitted("mypkg.tasks.deep:Model.Inner")
        for other in ("mypkg_evil:DOMAIN", "mypkg_evil.tasks:DOMAIN", "mypkgx:DOMAIN", "my:DOMAIN"):
            assert not plugins.permitted(other), other
    with plugins.reading("a folder"), plugins.allowing(["mypkg.tasks:DOMAIN"]):  # a whole path: that one only
        assert plugins.permitted("mypkg.tasks:DOMAIN")
        assert not plugins.permitted("mypkg.tasks:OTHER") and not plugins.permitted("mypkg.tasks.sub:DOMAIN")
