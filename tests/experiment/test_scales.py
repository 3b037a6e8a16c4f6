"""Presets own their reduced sizes: `[scale.NAME]` tables applied by `experiment.load(..., scale=NAME)` and
`nht run PRESET --scale NAME`, never part of the resolved Config; bad scale tables and unknown scales fail with
a message listing what exists."""

import re

import pytest

from nht_jax import experiment
from nht_jax.base import presets
from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.experiment import load

SHIPPED_SCALES = [(name, scale) for name in sorted(presets.list_presets()) for scale in experiment.scales(name)]


def test_the_shipped_presets_use_only_the_documented_scale_names():
    assert SHIPPED_SCALES, "no shipped preset has a scale"
    assert {scale for _, scale in SHIPPED_SCALES} <= set(presets.SCALES)
    assert {"quick", "reproduce", "reduced"} == set(presets.SCALES)


@pytest.mark.parametrize("name, scale", SHIPPED_SCALES)
def test_a_scale_is_its_settings_applied_as_set_overrides(name, scale):
    """load(preset, scale=s) is the preset with s's settings as `--set` lines: same Config, same digest; the name
    stays the preset's, and nothing of the scale reaches the Config, its config.toml or the shipped digest."""
    size = experiment.scales(name)[scale]
    config = load(name, scale=scale)
    assert config == load(name, list(size.overrides))
    assert config.name == name and config != load(name)
    toml = experiment.to_toml(config)
    # no [scale.*] table (a `scale = …` line is norm_injection's s)
    assert "scale" not in experiment.to_dict(config) and not re.search(r"^\[+scale\b", toml, re.M)
    for section, table in size.settings.items():
        for key, value in table.items():  # each setting is in place, exactly
            resolved = config.grid[key] if section == "grid" else getattr(getattr(config, section), key)
            if key == "log_schedule":  # segments (until, every) as written
                resolved = [[segment.until, segment.every] for segment in resolved]
                assert resolved == value, f"{section}.{key}"
                continue
            assert resolved == (tuple(value) if isinstance(value, list) else value), f"{section}.{key}"


def test_scale_tables_leave_the_preset_itself_unchanged(tmp_path):
    """The same preset without its [scale] tables resolves to the same Config (hence digest)."""
    for name in {name for name, _ in SHIPPED_SCALES}:
        text = presets.preset_path(name).read_text()
        bare = tmp_path / f"{name}.toml"
        bare.write_text(text.split("\n[scale.")[0])
        assert "[scale." not in bare.read_text()
        assert load(str(bare)) == load(name) and experiment.digest(load(str(bare))) == experiment.digest(load(name))


def test_set_applies_after_the_scale():
    config = load("border-digits", ["grid.seed=[5]", "train.steps=80"], scale="quick")
    assert config.grid["seed"] == (5,) and config.train.steps == 80
    assert config.grid["weight_decay"] == (0.01, 0.16, 2.5) and config.task.eval_train_size == 128


def test_the_analyze_options_of_a_scale():
    quick = experiment.scales("default")["quick"]
    assert quick.analyze == {"fits": {"n_bootstrap": 200}}
    assert quick.analyze_overrides == ("fits.n_bootstrap=200",)
    assert "analyze" not in quick.settings and quick.overrides[0] == "train.steps=3000"


def test_unknown_scales_list_the_presets_scales():
    with pytest.raises(
        ConfigError,
        match=re.escape(
            "preset 'border-digits' has no scale 'quik'. Did you mean 'quick'? Its scales: quick, reproduce"
        ),
    ):
        load("border-digits", scale="quik")
    with pytest.raises(ConfigError, match="preset 'tiny' has no scales, so --scale quick cannot apply"):
        load("tiny", scale="quick")


def write(tmp_path, text: str):
    path = tmp_path / "mine.toml"
    path.write_text('[task]\nname = "modular"\np = 31\n[train]\nsteps = 300\nlog_every = 50\n' + text)
    return str(path)


def test_a_scale_of_your_own_preset(tmp_path):
    path = write(
        tmp_path,
        "[scale.small]\ntrain.steps = 100\ngrid.weight_decay.logspace = [0.01, 1.0, 3]\n"
        "[scale.quick]\ngrid.seed = [3]\n",
    )
    assert list(experiment.scales(path)) == ["small", "quick"]
    small = load(path, scale="small")
    assert small.train.steps == 100 and len(small.grid["weight_decay"]) == 3 and small.name == "mine"
    assert small.grid["weight_decay"][0] == pytest.approx(0.01) and load(path).train.steps == 300
    assert load(path, scale="quick").grid["seed"] == (3,)


def test_a_scale_sets_fork_keys(tmp_path):
    """[fork] is an optional section: a scale may set its keys as it sets any other (the fork is read, not
    followed, when the configuration loads)."""
    path = write(tmp_path, '[fork]\nfrom = "runs/out/tiny"\nstep = "fit"\n[scale.quick]\nfork.step = 20\n')
    assert load(path).fork.step == "fit" and load(path, scale="quick").fork.step == 20
    assert "fork.step=20" in experiment.scales(path)["quick"].overrides


@pytest.mark.parametrize(
    "text, needle",
    [
        ("[scale.quick]\ntrian.steps = 100\n", "scale.quick.trian'. Did you mean 'train'"),
        ('[scale.quick]\nname = "other"\n', "must hold dotted settings `section.key = value`"),
        ("[scale.quick]\ndescription.x = 1\n", "unknown key .*scale.quick.description"),
        (
            "[scale.quick]\ntrain.stepz = 100\n",
            "mine.toml at scale 'quick' \\(train.stepz=100\\): unknown key 'train.stepz'. Did you mean 'steps'",
        ),
        ("[scale.quick]\ntrain.steps = 110\n", "multiple of train.log_every"),
        ("[scale.quick]\nanalyze = 3\n", "\\[scale.quick.analyze\\] must hold dotted settings"),
        ("[scale]\nquick = 3\n", "\\[scale\\] must hold one table per scale"),
        ("[scale.Quick]\ntrain.steps = 100\n", "scale name 'Quick' must be lower-case"),
    ],
)
def test_bad_scale_tables_are_refused(tmp_path, text, needle):
    with pytest.raises(ConfigError, match=needle):
        load(write(tmp_path, text), scale="quick" if "Quick" not in text else None)


def test_a_scale_table_is_checked_even_when_not_used(tmp_path):
    with pytest.raises(ConfigError, match="scale.quick.trian"):
        load(write(tmp_path, "[scale.quick]\ntrian.steps = 100\n"))


def test_a_scale_never_enters_a_config_built_from_a_dict():
    with pytest.raises(ConfigError, match="unknown key 'scale'"):
        experiment.from_dict({"scale": {"quick": {"train": {"steps": 10}}}})


@pytest.mark.parametrize(
    "value",
    [
        3000,
        0.001,
        1e-05,
        2.5e-3,
        -2.0,
        float("inf"),
        True,
        "transition",
        'a"b é',
        [0.5, 0.9, 0.98, 1.0],
        [0],
        {"logspace": [0.001, 10.0, 8]},
        [[1, 2], ["x"]],
    ],
)
def test_toml_value_reads_back_as_the_same_value(value):
    from nht_jax.base.schema import parse_override

    assert parse_override(f"train.x={presets.toml_value(value)}", ["train"])[1] == value


def test_nht_presets_lists_each_presets_scales(capsys):
    assert main(["presets"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert re.match(r"border-digits +quick, reproduce +Spurious border", lines["border-digits"])
    assert re.match(r"celeba +quick, reduced +CelebA", lines["celeba"])
    assert re.match(r"tiny +– +Smoke test", lines["tiny"])
    assert lines["preset"].split() == ["preset", "scales", "description"]


def test_nht_run_at_a_scale_writes_preset_scale(tmp_path, monkeypatch, capsys):
    """`nht run FILE --scale small` trains the scale into runs/out/<name>-small; its config.toml is the Config
    at that scale, without the [scale] tables."""
    path = write(
        tmp_path, "[grid]\nweight_decay = [0.1]\nseed = [0]\n[scale.small]\ntrain.steps = 20\ntrain.log_every = 10\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["run", path, "--scale", "small", "--quiet"]) == 0
    out = tmp_path / "runs" / "out" / "mine-small"
    from nht_jax.results.folder import load_results

    res = load_results(out)
    assert res.config == load(path, scale="small") and res.config.train.steps == 20
    assert not re.search(r"^\[?scale\b", (out / "config.toml").read_text(), re.M)
    assert main(["run", path, "--scale", "big", "--quiet"]) == 2
    assert "has no scale 'big'" in capsys.readouterr().err
