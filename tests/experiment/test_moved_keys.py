"""[execution] split into [execution], [live] and [stop] (2026-12-06): the old spellings are read where they live now,
silently in a file (config.toml of a finished folder must keep loading) and with a FutureWarning in a `--set`."""

import warnings

import pytest

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.cli.hints import setting_of
from nht_jax.config.tables import moved, moved_path
from nht_jax.measure import stopping

SHARED = """
name = "old"
[task]
name = "modular"
p = 31
[model]
name = "mlp"
hidden = [8]
[train]
steps = 40
log_every = 10
"""
GRID = """[grid]
weight_decay = [0.1, 1.0]
seed = [0]
"""

OLD_EXECUTION = (
    SHARED
    + """[execution]
chunk_logs = 2
stop_rule = "transition"
stop_margin_steps = 30
live = false
live_every_s = 7.5
live_calibration = "runs/out/pilot"
live_v_post = "pilot-trend"
[execution.live_forecast]
interval = 0.8
"""
    + GRID
)

NEW_SECTIONS = (
    SHARED
    + """[execution]
chunk_logs = 2
[stop]
rule = "transition"
margin_steps = 30
[live]
enabled = false
every_s = 7.5
calibration = "runs/out/pilot"
[live.forecast]
interval = 0.8
v_post = "pilot-trend"
"""
    + GRID
)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_file_with_the_old_execution_keys_loads_as_the_new_sections_silently(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a finished folder's config.toml is read without a warning
        old = experiment.load(write(tmp_path, "old.toml", OLD_EXECUTION))
    new = experiment.load(write(tmp_path, "new.toml", NEW_SECTIONS))
    assert old == new
    assert (old.stop.rule, old.stop.margin_steps) == ("transition", 30)
    assert (old.live.enabled, old.live.every_s, old.live.calibration) == (False, 7.5, "runs/out/pilot")
    assert (old.live.forecast.interval, old.live.forecast.v_post) == (0.8, "pilot-trend")
    assert old.execution.chunk_logs == 2
    text = experiment.to_toml(old)  # written in today's spelling only
    assert "[stop]" in text and "[live]" in text and "stop_rule" not in text and "live_every_s" not in text


def test_the_split_keeps_every_digest(tmp_path):
    """The same experiment spelled either way has one digest and one results digest; the stop rule is still folded
    into the results digest under the keys it had inside [execution] (finished folders and checkpoints resume)."""
    old = experiment.load(write(tmp_path, "old.toml", OLD_EXECUTION))
    new = experiment.load(write(tmp_path, "new.toml", NEW_SECTIONS))
    assert experiment.digest(old) == experiment.digest(new)
    assert stopping.results_digest(old) == stopping.results_digest(new) != experiment.digest(new)
    import hashlib
    import json

    by_hand = json.dumps({"digest": experiment.digest(new), "stop_rule": "transition", "stop_margin_steps": 30})
    assert stopping.results_digest(new) == hashlib.sha256(by_hand.encode()).hexdigest()[:16]


def test_an_old_set_warns_once_naming_the_new_key_and_still_applies():
    with pytest.warns(FutureWarning, match=r"execution\.stop_rule is now stop\.rule.*until nht_jax 0\.2"):
        config = experiment.load("tiny", ["execution.stop_rule=transition"])
    assert config.stop.rule == "transition"
    with pytest.warns(FutureWarning, match=r"execution\.live_every_s is now live\.every_s"):
        config = experiment.with_overrides(experiment.load("tiny"), ["execution.live_every_s=3"])
    assert config.live.every_s == 3.0
    with pytest.warns(FutureWarning, match=r"execution\.live_forecast\.kappa is now live\.forecast\.kappa"):
        config = experiment.load("tiny", [(["execution", "live_forecast", "kappa"], "run")])  # a keyword pair
    assert config.live.forecast.kappa == "run"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert experiment.load("tiny", ["stop.rule=diverged"]).stop.rule == "diverged"  # the new spelling: silent


def test_the_warning_names_the_users_line_however_deep_the_call():
    import nht_jax

    for load in (
        lambda: experiment.load("tiny", ["execution.stop_rule=transition"]),
        lambda: nht_jax.load("tiny", execution={"stop_rule": "transition"}),
        lambda: experiment.with_overrides(experiment.load("tiny"), ["execution.stop_rule=transition"]),
        lambda: experiment.load("default", ["execution.stop_rule=transition"], scale="quick"),
    ):
        with pytest.warns(FutureWarning, match="execution.stop_rule is now stop.rule") as record:
            load()
        assert [w.filename for w in record] == [__file__]


def test_one_setting_given_twice_with_two_values_is_refused_and_with_one_value_read(tmp_path):
    both = NEW_SECTIONS.replace("[execution]\n", '[execution]\nstop_rule = "diverged"\n')
    with pytest.raises(ConfigError, match=r"execution\.stop_rule = 'diverged' and stop\.rule = 'transition'"):
        experiment.load(write(tmp_path, "both.toml", both))
    same = NEW_SECTIONS.replace("[execution]\n", '[execution]\nstop_rule = "transition"\n')
    assert experiment.load(write(tmp_path, "same.toml", same)).stop.rule == "transition"


def test_a_set_in_the_new_spelling_wins_over_the_old_spelling_in_the_file(tmp_path):
    path = write(tmp_path, "old.toml", OLD_EXECUTION)
    assert experiment.load(path, ["stop.rule=diverged"]).stop.rule == "diverged"
    assert experiment.load(path, ["live.forecast.interval=0.5"]).live.forecast.interval == 0.5


def test_a_scale_written_with_the_old_spelling_applies_in_the_new_place(tmp_path):
    text = NEW_SECTIONS + "[scale.quick]\nexecution.stop_margin_steps = 50\nexecution.live = true\n"
    config = experiment.load(write(tmp_path, "scaled.toml", text), scale="quick")
    assert (config.stop.margin_steps, config.live.enabled) == (50, True)


def test_moved_paths_and_tables():
    assert moved_path(("execution", "stop_rule")) == ("stop", "rule")
    assert moved_path(["execution", "live_forecast", "v_post"]) == ("live", "forecast", "v_post")
    assert moved_path(("execution", "live_v_post")) == ("live", "forecast", "v_post")
    assert moved_path(("execution", "chunk_logs")) is None and moved_path(("stop", "rule")) is None
    data = {"execution": {"live": False, "chunk_logs": 3}, "live": {"every_s": 2.0}}
    assert moved(data) == {"execution": {"chunk_logs": 3}, "live": {"every_s": 2.0, "enabled": False}}
    assert data == {"execution": {"live": False, "chunk_logs": 3}, "live": {"every_s": 2.0}}  # a copy


def test_the_cli_hint_names_the_new_key_for_an_old_option():
    assert setting_of("--stop-rule") == "stop.rule"
    assert setting_of("--live") == "live.enabled"
    assert setting_of("--live-calibration") == "live.calibration"
    assert setting_of("--margin-steps") == "stop.margin_steps"
    assert setting_of("--chunk-logs") == "execution.chunk_logs"
