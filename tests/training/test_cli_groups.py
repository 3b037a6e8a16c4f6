"""The `nht` command in groups: every argument has help text, the old spellings parse and exit as the grouped ones,
wrong forms get the right one in one line before anything trains, the grid's other names resolve through `--set`,
and `nht tool bench` finds the harness of a source checkout. Nothing here trains: `run_sweep` is replaced."""

import argparse
import json
import sys
from pathlib import Path

import pytest

import nht_jax
from nht_jax import cli, experiment
from nht_jax.base.errors import ConfigError
from nht_jax.base import aliases
from nht_jax.cli import hints, tool
from nht_jax.cli.common import chosen_preset
from nht_jax.cli.registry import parsers, spellings
from nht_jax.results import import_logs


def actions_without_help(parser: argparse.ArgumentParser) -> list[str]:
    """'spelling: option' of every argument, option or subcommand in the tree with no help text."""
    missing = []
    for path, p in parsers(parser):
        where = " ".join(("nht", *path))
        for action in p._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            name = "/".join(action.option_strings) or action.metavar or action.dest
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{where}: {name}")
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"{where}: {choice.dest}" for choice in action._choices_actions if not choice.help]
    return missing


def test_every_argument_and_option_of_every_command_has_help():
    assert actions_without_help(cli.parser()) == []


def test_the_help_walk_sees_a_missing_help():
    """The walk itself: one option added without help is reported."""
    parser = cli.parser()
    run = next(p for path, p in parsers(parser) if path == ("run",))
    run.add_argument("--unexplained")
    assert actions_without_help(parser) == ["nht run: --unexplained"]


def without_parsers(args: argparse.Namespace) -> dict:
    return {k: v for k, v in vars(args).items() if k not in ("command_parser", "argv")}


@pytest.mark.parametrize(
    "old,new",
    [
        (["reproduce", "--quick", "--only", "toy-linear"], ["paper", "reproduce", "--quick", "--only", "toy-linear"]),
        (["figs", "--no-run", "--only", "fig1"], ["paper", "figs", "--no-run", "--only", "fig1"]),
        (["verify-bounds", "--quick"], ["paper", "verify-bounds", "--quick"]),
        (["bound", "DIR"], ["paper", "bound", "DIR"]),
        (
            ["bench", "--runs", "2", "--set", "train.steps=4"],
            ["tool", "bench", "--runs", "2", "--set", "train.steps=4"],
        ),
        (["cache", "--clear"], ["tool", "cache", "--clear"]),
        (["find-lambda", "tiny", "--factor", "2"], ["tool", "find-lambda", "tiny", "--factor", "2"]),
    ],
)
def test_an_old_spelling_parses_as_its_grouped_command(old, new):
    assert without_parsers(cli.parse(old)) == without_parsers(cli.parse(new))
    assert cli.parse(old).command_spec is cli.parse(new).command_spec


def test_every_grouped_command_has_its_old_spelling():
    grouped = [c.name for g in cli.GROUPS if g.name for c in g.commands]
    assert sorted(grouped) == sorted(cli.registry.aliases(cli.GROUPS))
    assert set(grouped) == {
        "figs",
        "reproduce",
        "verify-bounds",
        "bound",
        "bench",
        "cache",
        "find-lambda",
        "new-plugin",
    }


def test_an_old_spelling_exits_as_the_grouped_one(tmp_path, capsys, monkeypatch):
    for argv in (["reproduce"], ["paper", "reproduce"]):
        assert cli.main([*argv, "--only", "toy-linaer", "--out", str(tmp_path / "r")]) == 2
        assert "toy-linaer" in capsys.readouterr().err
    # a cache folder of this test's own: the suite's shared one grows while the other workers compile
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "jit_a-1-cache").write_bytes(b"x" * 1024)
    monkeypatch.setenv("NHT_COMPILE_CACHE", str(tmp_path / "cache"))
    assert cli.main(["cache"]) == 0
    old = capsys.readouterr().out
    assert cli.main(["tool", "cache"]) == 0
    assert capsys.readouterr().out == old


def test_an_old_spelling_says_what_to_type_and_until_when_and_the_grouped_one_says_nothing(capsys):
    """Old spellings are kept for one release (issue 47): each prints one line on stderr naming the grouped
    spelling and the release that drops it; the grouped spelling prints none."""
    cli.parse(["verify-bounds", "--quick"])
    assert capsys.readouterr().err == (
        "nht: note: `nht verify-bounds` is the old spelling of `nht paper "
        f"verify-bounds`; it works until nht_jax {cli.ALIASES_UNTIL}: type `nht paper "
        "verify-bounds`\n"
    )
    cli.parse(["paper", "verify-bounds", "--quick"])
    cli.parse(["run", "tiny"])
    assert capsys.readouterr().err == ""


def test_the_old_python_name_warns_and_is_the_new_one():
    import nht_jax

    with pytest.warns(DeprecationWarning, match="nht_jax.make_optimizer is the old spelling of nht_jax.make_optimiser"):
        old = nht_jax.make_optimizer
    assert old is nht_jax.make_optimiser
    assert "make_optimizer" not in nht_jax.__all__


def test_the_commands_that_train_or_evaluate_switch_the_compile_cache_on():
    """The old COMPILING set, now each command's `compiles`: `nht watch`, `import`, `export`, `report`, `bound`,
    `presets` and `cache` compile nothing."""
    compiling = {spelling for spelling, c in spellings(cli.GROUPS).items() if c.compiles}
    assert compiling == {
        "run",
        "analyze",
        "paper figs",
        "paper reproduce",
        "paper verify-bounds",
        "tool bench",
        "tool find-lambda",
    }


def test_nothing_at_all_is_nht_run_of_the_default_preset():
    args = cli.parse([])
    assert args.command_spelling == "run" and chosen_preset(args) == "default"


@pytest.fixture
def no_training(monkeypatch):
    """run_sweep replaced: the configuration it would train is kept, and nothing trains (None: as a process other
    than 0 of several, so `nht run` draws nothing either)."""
    seen = []

    def run_sweep(config, out, **kwargs):
        seen.append(config)

    monkeypatch.setattr("nht_jax.training.sweep.run_sweep", run_sweep)
    return seen


@pytest.mark.parametrize(
    "argv,right",
    [
        (["run", "default", "--steps", "100"], "--set train.steps=100"),
        (["run", "--steps", "100", "default"], "--set train.steps=100"),
        (["run", "tiny", "--seed", "1"], "--set 'grid.seed=[1]'"),
        (["run", "tiny", "--lambda", "0.1"], "--set 'grid.weight_decay=[0.1]'"),
        (["run", "tiny", "--wd=0.1,1.0"], "--set 'grid.weight_decay=[0.1, 1.0]'"),
        (["run", "tiny", "--lr", "0.01"], "--set 'grid.learning_rate=[0.01]'"),
        (["run", "tiny", "--log-every", "5"], "--set train.log_every=5"),
        (["tool", "find-lambda", "tiny", "--steps", "50"], "--set train.steps=50"),
        (["tool", "bench", "--seed", "3"], "--set 'grid.seed=[3]'"),
        (["run", "tiny", "train.steps=100"], "--set train.steps=100"),
        (["run", "tiny", "seed=0,1"], "--set 'grid.seed=[0, 1]'"),
        (["run", "tiny", "--set", "grid.seed=0,1"], "--set 'grid.seed=[0, 1]'"),
        (["run", "tiny", "--set", "grid.weight_decay=0.1, 1.0"], "--set 'grid.weight_decay=[0.1, 1.0]'"),
        (["run", "tiny", "--set", "lambda=0.1"], "--set 'grid.weight_decay=[0.1]'"),
        # the forms of issue 33, as a new user types them
        (["run", "--seed", "3"], "--set 'grid.seed=[3]'"),
        (["run", "--lambda", "0.1"], "--set 'grid.weight_decay=[0.1]'"),
        (["run", "default", "--set", "grid.weight_decay=0.1,1.0"], "--set 'grid.weight_decay=[0.1, 1.0]'"),
        (["run", "default", "--set", "grid.lambda=0.1,1.0"], "--set 'grid.weight_decay=[0.1, 1.0]'"),
    ],
)
def test_a_wrong_form_is_one_line_naming_the_right_one_before_training(argv, right, tmp_path, capsys, no_training):
    out = tmp_path / "out"
    assert cli.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nht: error: ") and err.count("\n") == 1 and right in err, err
    assert no_training == [] and not out.exists()


@pytest.mark.parametrize(
    "option,key",
    [
        ("--steps", "train.steps"),
        ("--batch-size", "train.batch_size"),
        ("--log_every", "train.log_every"),
        ("--chunk-logs", "execution.chunk_logs"),
        ("--fit-threshold", "analysis.fit_threshold"),
        ("--decay-on", "optim.decay_on"),
        ("--LR", "grid.learning_rate"),
        ("--eta", "grid.learning_rate"),
        ("--Lambda", "grid.weight_decay"),
        ("--λ", "grid.weight_decay"),
        ("--random-seed", "grid.seed"),
        ("--frac-train", "grid.train_fraction"),
        ("--width", "grid.width"),
        ("--stpes", None),
        ("--hidden", None),
        ("--bogus", None),
    ],
)
def test_an_option_names_the_setting_it_stands_for(option, key):
    """`hints.setting_of`, by hand: a setting of each engine section (dashes read as underscores), a grid axis by any
    of its names in any case, and nothing for a misspelling, a setting-named alias of the width (`--hidden` is
    model.hidden, no engine section's) or a word that is no setting, which argparse then answers."""
    assert hints.setting_of(option) == key


def test_a_misspelt_option_beside_a_setting_is_named_apart():
    """`--steps 100 --stpes 5`: the hint writes the one it knows and names the misspelt one as no option either."""
    argv = ["run", "tiny", "--steps", "100", "--stpes", "5"]
    assert hints.wrong_form("run", argv, ["--steps", "100", "--stpes", "5"]) == (
        "`nht run` takes settings with --set, not as --steps: write --set train.steps=100 (--stpes: not an option "
        "either; `nht run --help` lists them)"
    )


@pytest.mark.parametrize(
    "setting,hint",
    [
        ("train.stpes=100", "unknown key 'train.stpes'. Did you mean 'steps'?"),
        ("trian.steps=100", "unknown key 'trian'. Did you mean 'train'?"),
        ("execution.chunk_log=1", "unknown key 'execution.chunk_log'. Did you mean 'chunk_logs'?"),
        ("execution.chunk_second=1", "unknown key 'execution.chunk_second'. Did you mean 'chunk_seconds'?"),
        (
            "analysis.transition_treshold=0.9",
            "unknown key 'analysis.transition_treshold'. Did you mean 'transition_threshold'?",
        ),
        ("optim.decay_onn=weights", "unknown key 'optim.decay_onn'. Did you mean 'decay_on'?"),
        ("model.hiden=[8]", "unknown key 'model.hiden'. Did you mean 'hidden'?"),
    ],
)
def test_a_misspelt_set_key_is_told_the_closest_key_of_its_section(setting, hint, capsys, no_training):
    """`nht run --set` and `nht_jax.load(section={key: …})` give one line with the closest key of the section
    (docs/guides/run.md: `unknown key 'train.stpes'. Did you mean 'steps'?`), where several keys are close
    (chunk_logs, chunk_seconds; fit_threshold, transition_threshold)."""
    assert cli.main(["run", "tiny", "--set", setting]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"nht: error: {hint} Known keys: ") and err.count("\n") == 1, err
    section, _, rest = setting.partition(".")
    key, _, value = rest.partition("=")
    with pytest.raises(ConfigError) as error:
        nht_jax.load("tiny", **{section: {key: 1}})
    assert str(error.value).startswith(hint)
    assert no_training == []


def test_an_unknown_option_that_is_no_setting_is_argparse_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["run", "tiny", "--bogus", "1"])
    assert stop.value.code == 2 and "unrecognized arguments: --bogus" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["merge", "a", "--out", ""],
        ["export", "a", "--tensorboard", "--out", ""],
        ["export", "a", "--tensorboard", "--out", " "],
        ["run", "tiny", "--out", ""],
        ["submit", "tiny", "--shards", "2", "--executor", "local", "--out", ""],
        ["import", "logs.csv", "--out", ""],
        ["report", ""],
    ],
)
def test_an_empty_folder_name_is_refused_before_anything_is_written(argv, tmp_path, monkeypatch, capsys):
    """Issue 46 item 4: `--out ""` was Path(""), the current folder: `nht merge` and `nht export` wrote results and a
    .lock there. Now it is argparse's one error line, and the folder stays empty."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2 and "an empty folder name" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "setting,axis,value",
    [
        ("grid.lambda=[0.1]", "weight_decay", (0.1,)),
        ("grid.wd=[0.2, 0.4]", "weight_decay", (0.2, 0.4)),
        ("grid.λ=0.3", "weight_decay", (0.3,)),
        ("grid.lr=[0.001]", "learning_rate", (0.001,)),
        ("grid.eta=[0.002]", "learning_rate", (0.002,)),
        ("grid.wd=[0.1]", "weight_decay", (0.1,)),
        ("grid.lr=[1e-3]", "learning_rate", (0.001,)),
    ],
)
def test_the_grid_s_other_names_resolve_in_the_configuration(setting, axis, value, no_training, tmp_path):
    assert experiment.load("tiny", [setting]).grid[axis] == value
    assert cli.main(["run", "tiny", "--set", setting, "--out", str(tmp_path / "out"), "--quiet"]) == 0
    (config,) = no_training
    assert config.grid[axis] == value
    assert experiment.to_dict(config) == experiment.to_dict(experiment.load("tiny", [f"grid.{axis}={list(value)}"]))


def test_a_file_s_grid_names_its_axes_and_is_told_the_axis_of_an_other_name(tmp_path):
    """Files stay canonical (config.toml, digests): `lambda = …` in a [grid] table names the axis to write."""
    from nht_jax.base.errors import ConfigError

    path = tmp_path / "mine.toml"
    path.write_text('[task]\nname = "modular"\n[grid]\nlambda = [0.1]\n')
    with pytest.raises(
        ConfigError, match="another name of the axis weight_decay: in a .grid. table write weight_decay"
    ):
        experiment.load(str(path))


def test_the_width_s_other_names_are_settings_and_not_renamed(capsys):
    assert cli.main(["run", "tiny", "--set", "grid.hidden=[8, 16]"]) == 2
    assert "sweep it as grid.width" in capsys.readouterr().err


def test_the_import_s_set_takes_the_grid_s_other_names(tmp_path):
    """`nht import --set grid.lr=…` (an axis the logs lack) as the import's own column names do."""
    logs = tmp_path / "logs.csv"
    logs.write_text("step,wd,train_acc,test_acc,norm_sq\n0,0.1,0.1,0.1,5.0\n10,0.1,1.0,0.5,4.0\n")
    res = import_logs.import_logs(logs, tmp_path / "res", overrides=["grid.lr=1e-3"])["results"]
    assert res.axes["learning_rate"].tolist() == [0.001] and res.axes["weight_decay"].tolist() == [0.1]


def test_one_alias_table_for_the_import_and_for_set():
    assert import_logs.HPARAM_ALIASES is aliases.HPARAM_ALIASES
    assert import_logs.HPARAM_NAMES["lambda"] == "weight_decay" == aliases.grid_key("lambda")
    assert aliases.grid_key("lr") == "learning_rate" and aliases.grid_key("wd") == "weight_decay"


def test_the_preset_may_be_given_as_an_option(no_training, tmp_path, capsys):
    assert chosen_preset(cli.parse(["run", "--preset", "default"])) == "default"
    assert chosen_preset(cli.parse(["run", "--preset", "tiny"])) == "tiny"
    assert chosen_preset(cli.parse(["tool", "find-lambda", "--preset", "tiny"])) == "tiny"
    assert cli.main(["run", "--preset", "tiny", "--out", str(tmp_path / "a"), "--quiet"]) == 0
    assert no_training[0].name == "tiny"
    assert cli.main(["run", "tiny", "--preset", "default"]) == 2
    assert "two presets given" in capsys.readouterr().err
    assert cli.main(["tool", "find-lambda"]) == 2
    assert "nht tool find-lambda PRESET" in capsys.readouterr().err


HARNESS = """
import json


def main(preset="default", runs=16, steps=600, out=None, log_every=50, ways=(), torch_threads=None, overrides=(),
         main_steps=None):
    from benchmarks import sibling  # the harness's own imports resolve in its checkout
    print(json.dumps(dict(preset=preset, runs=runs, steps=steps, out=str(out), log_every=log_every, ways=list(ways),
                          torch_threads=torch_threads, overrides=list(overrides), main_steps=main_steps,
                          sibling=sibling.NAME)))
    return {}
"""


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A source checkout holding a stand-in benchmarks/harness.py that prints the arguments it got."""
    root = tmp_path / "clone"
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "__init__.py").write_text("")  # a package, as in the repository
    (root / "benchmarks" / "harness.py").write_text(HARNESS)
    (root / "benchmarks" / "sibling.py").write_text("NAME = 'sibling'\n")
    monkeypatch.setattr(tool, "harness_roots", lambda: (tmp_path / "installed", root))
    monkeypatch.delitem(sys.modules, "benchmarks", raising=False)
    monkeypatch.delitem(sys.modules, "benchmarks.harness", raising=False)
    monkeypatch.delitem(sys.modules, "benchmarks.sibling", raising=False)
    return root


def test_bench_runs_the_harness_of_the_checkout_with_the_same_arguments(checkout, capsys):
    args = ["--preset", "tiny", "--runs", "3", "--steps", "8", "--ways", "grid, loop", "--set", "train.log_every=2"]
    assert cli.main(["tool", "bench", *args]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got == {
        "preset": "tiny",
        "runs": 3,
        "steps": 8,
        "out": "None",
        "log_every": 50,
        "ways": ["grid", "loop"],
        "torch_threads": None,
        "overrides": ["train.log_every=2"],
        "main_steps": None,
        "sibling": "sibling",
    }
    assert cli.main(["bench", *args]) == 0
    assert json.loads(capsys.readouterr().out) == got
    assert str(checkout) not in sys.path


def test_bench_without_a_checkout_says_to_run_it_from_a_clone(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tool, "harness_roots", lambda: (tmp_path,))
    assert cli.main(["tool", "bench"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "clone" in err and "benchmarks/harness.py" in err


def test_the_harness_is_looked_for_beside_the_package_then_in_the_current_directory(tmp_path, monkeypatch):
    import nht_jax

    monkeypatch.chdir(tmp_path)
    assert tool.harness_roots() == (Path(nht_jax.__file__).resolve().parent.parent, tmp_path)
    (tmp_path / "benchmarks").mkdir()
    assert tool.find_harness([tmp_path / "none", tmp_path]) is None
    (tmp_path / "benchmarks" / "harness.py").write_text("")
    assert tool.find_harness([tmp_path / "none", tmp_path]) == tmp_path
