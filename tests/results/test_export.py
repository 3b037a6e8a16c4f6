"""Results out (`nht_jax.results.export`), checked by reading back what was written, on real tiny results folders: the
`finished` product grid, a zipped (irregular) grid and a static-axis grid. xarray: every value at its labelled
coordinates, dims, the irregular grid as a `run` dimension, a netCDF round trip; pandas: the long table equals the
arrays; TensorBoard: the event files parsed with TensorBoard's own reader (scalars, hparams); W&B: the offline run
folders' transaction logs parsed with W&B's protobufs (config, history, summary); a missing extra is one line; the
CLI, its lock and a read-only folder."""

import dataclasses
import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.results import export as ex
from nht_jax.results.folder import load_results

from ..conftest import TINY, unless_installed

pytestmark = unless_installed("xarray", extra="xarray")  # the test extra installs it; a bare install skips


@pytest.fixture(scope="module")
def zipped(tmp_path_factory):
    """An irregular grid: weight decay and learning rate paired (2 runs)."""
    out = tmp_path_factory.mktemp("export") / "zipped"
    assert (
        main(
            [
                "run",
                *TINY,
                "--set",
                "grid.learning_rate=[0.01, 0.003]",
                "--set",
                'grid.zip=[["weight_decay", "learning_rate"]]',
                "--out",
                str(out),
                "--quiet",
                "--no-figures",
            ]
        )
        == 0
    )
    return out


@pytest.fixture(scope="module")
def static(tmp_path_factory):
    """A static axis: two MLP widths, one compiled bucket each (4 runs)."""
    out = tmp_path_factory.mktemp("export") / "static"
    assert main(["run", *TINY, "--set", "grid.width=[8, 16]", "--out", str(out), "--quiet", "--no-figures"]) == 0
    return out


@pytest.fixture(params=["finished", "zipped", "static"])
def results(request):
    return load_results(request.getfixturevalue(request.param))


def run_coordinates(res, i) -> dict:
    """Run i's configured axis values, from config.toml's axes (independent of `export.configured_values`)."""
    return {axis: res.axes[axis][np.argmin(np.abs(res.axes[axis] - float(res.hparams[axis][i])))] for axis in res.axes}


# ----------------------------------------------------------------------------- xarray and pandas


def test_every_metric_value_sits_at_its_runs_coordinates(results):
    ds = results.to_xarray(squeeze=False)  # every axis a dimension, so every run is a point of it
    for i in range(results.num_runs):
        where = run_coordinates(results, i)
        point = ds.sel(**where) if results.grid_kind == "product" else ds.sel(run=i)
        assert int(point.run) == i
        for axis, value in where.items():
            assert point[axis].item() == value
        for name, trajectory in results.metrics.items():
            family, _, member = name.partition("/")
            got = point[family].sel({ex.FAMILY_DIMS[family]: member}) if member else point[name]
            np.testing.assert_array_equal(got.values, trajectory[i])
        for column, value in results.summary[i].items():
            if column not in ("run", *results.axes):
                np.testing.assert_equal(point[column].item(), value)
    np.testing.assert_array_equal(ds.step.values, results.steps)
    assert ds.attrs["config_digest"] == results.meta["config_digest"]


def test_dims_and_labels(finished, zipped, static):
    product = load_results(finished).to_xarray(squeeze=False)
    assert product.test_acc.dims == (*load_results(finished).axes, "step")
    squeezed = load_results(finished).to_xarray()  # the default: the one-value axes become scalar coordinates
    varied = [axis for axis, values in load_results(finished).axes.items() if len(values) > 1]
    assert squeezed.test_acc.dims == (*varied, "step") and varied == ["weight_decay"]
    assert squeezed.seed.item() == 0 and squeezed.layer_norm_sq.dims[-2:] == ("layer", "step")
    assert list(product.weight_decay.values) == [0.01, 1.0]  # the configured values, not float32's 0.0099999998
    assert product.layer_norm_sq.dims[-2:] == ("layer", "step") and list(product.layer.values) == ["embed", "head"]
    irregular = load_results(zipped).to_xarray()
    assert irregular.test_acc.dims == ("run", "step") and irregular.attrs["grid_kind"] == "irregular"
    assert irregular.learning_rate.dims == ("run",) and list(irregular.learning_rate.values) == [0.01, 0.003]
    assert list(load_results(static).to_xarray().width.values) == [8, 16]


def test_a_one_member_family_and_a_one_log_step_keep_their_dimensions(finished):
    """docs/guides/export.md: the default squeeze drops the one-value grid axes, but "the member dimensions of a
    metric family (`layer`) and `step` are never dropped": a family left with one member (`layer_norm_sq/head`
    alone) keeps `layer` of length 1, and results of one logged step keep `step` of length 1."""
    full = load_results(finished)
    metrics = {k: v[:, :1] for k, v in full.metrics.items() if k != "layer_norm_sq/embed"}
    res = dataclasses.replace(full, steps=full.steps[:1], metrics=metrics)
    ds = res.to_xarray()
    assert ds.layer_norm_sq.dims == ("weight_decay", "layer", "step") and list(ds.layer.values) == ["head"]
    assert ds.test_acc.dims == ("weight_decay", "step") and list(ds.step.values) == [0]
    np.testing.assert_array_equal(ds.layer_norm_sq.sel(layer="head").values, metrics["layer_norm_sq/head"])
    assert "seed" not in ds.dims and ds.seed.item() == 0  # a one-value axis: dropped, kept as a coordinate


def test_a_diverged_value_stays_nan(folder):
    res = load_results(folder)
    res.metrics["test_acc"][1, -1] = np.nan
    assert np.isnan(res.to_xarray().test_acc.sel(weight_decay=1.0).values[..., -1]).all()
    long, _ = res.to_pandas()
    row = long[(long.run == 1) & (long.metric == "test_acc") & (long.step == res.steps[-1])]
    assert len(row) == 1 and np.isnan(row.value.item())


def test_netcdf_round_trip(zipped, tmp_path):
    import xarray as xr

    ds = load_results(zipped).to_xarray()
    ds.to_netcdf(tmp_path / "grid.nc")
    with xr.open_dataset(tmp_path / "grid.nc") as back:
        xr.testing.assert_identical(ds, back.load())


def test_pandas_long_format_equals_the_arrays(results):
    long, summary = results.to_pandas()
    assert list(long.columns) == ["run", *results.axes, "step", "metric", "value"]
    assert len(long) == results.num_runs * len(results.metrics) * len(results.steps)
    for (run, metric), rows in long.groupby(["run", "metric"], sort=False):
        np.testing.assert_array_equal(rows.step.values, results.steps)
        np.testing.assert_array_equal(rows.value.values, results.metrics[metric][run])
        for axis, value in run_coordinates(results, run).items():
            assert (rows[axis] == value).all()
    assert list(summary.columns) == list(results.summary[0])
    for row, expected in zip(summary.to_dict("records"), results.summary):
        for column, value in expected.items():
            np.testing.assert_equal(row[column], value)


@pytest.mark.parametrize("module, call", [("xarray", "to_xarray"), ("pandas", "to_pandas")])
def test_a_missing_extra_is_one_line(module, call, finished, monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now raises ImportError
    with pytest.raises(
        ConfigError,
        match=rf"needs the optional package {module}, which is not installed: "
        rf"pip install 'nht_jax\[xarray\]'",
    ):
        getattr(load_results(finished), call)()


def test_a_missing_writer_is_one_line_and_writes_nothing(finished, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "wandb", None)
    assert main(["export", str(finished), "--wandb", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'nht_jax[wandb]'" in err
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- TensorBoard


def training_times(res) -> np.ndarray:
    """When the training logged each step, read here from progress.log's chunk lines independently of
    `nht_jax.results.wall_times`: the first chunk line at or past the step (step 0: the "started" line); the
    fixtures train one chunk sequence (one run slice, no bucket, no resume), for which the two rules agree."""
    import datetime
    import re

    stamps = []
    for line in (res.path / "progress.log").read_text().splitlines():
        stamp, _, text = line.partition("  ")
        if text.startswith("started ") and not stamps:
            stamps.append((0, datetime.datetime.fromisoformat(stamp).timestamp()))
        elif found := re.match(r"step (\d+)/", text):
            stamps.append((int(found.group(1)), datetime.datetime.fromisoformat(stamp).timestamp()))
    return np.asarray([next(t for s, t in stamps if s >= step) for step in res.steps])


def numeric_summary(res) -> list[str]:
    return [c for c, v in ex.summary_columns(res).items() if v.dtype.kind in "biuf"]


def read_events(folder: Path):
    """TensorBoard's own reader on one run folder."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    events.Reload()
    return events


def hparams_of(events) -> tuple[dict, list]:
    """(the run's hparams {name: value}, the hparams metrics' tags) from the hparams plugin's data."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    content = events.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    experiment = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"])
    values = {k: v.number_value for k, v in start.session_start_info.hparams.items()}
    return values, [m.name.tag for m in experiment.experiment.metric_infos]


@pytest.mark.parametrize("grid", ["finished", "static"])
def test_event_files_read_back(grid, request, tmp_path):
    res = load_results(request.getfixturevalue(grid))
    folders = ex.write_tensorboard(res, tmp_path / "tb")
    assert [f.name for f in folders] == ex.run_names(res) and len(set(ex.run_names(res))) == res.num_runs
    times = training_times(res)
    for i, folder in enumerate(folders):
        events = read_events(folder)
        assert sorted(events.Tags()["scalars"]) == sorted(
            [*map(ex.tracker_name, res.metrics), *(f"summary/{c}" for c in numeric_summary(res))]
        )
        for name, trajectory in res.metrics.items():
            scalars = events.Scalars(ex.tracker_name(name))
            assert [s.step for s in scalars] == list(res.steps)
            np.testing.assert_array_equal([s.value for s in scalars], trajectory[i].astype(np.float32))
            np.testing.assert_allclose([s.wall_time for s in scalars], times, rtol=0, atol=1e-3)
        final = events.Scalars("summary/final_test_acc")
        assert [s.step for s in final] == [res.steps[-1]]
        assert final[0].value == pytest.approx(res.summary[i]["final_test_acc"])
        values, metrics = hparams_of(events)
        assert values == pytest.approx({axis: float(v) for axis, v in run_coordinates(res, i).items()})
        assert metrics == [f"summary/{c}" for c in ex.HPARAM_METRICS]


def test_run_names_label_the_varied_axes(static):
    assert ex.run_names(load_results(static)) == [
        "0_width=8,weight_decay=0.01",
        "1_width=8,weight_decay=1",
        "2_width=16,weight_decay=0.01",
        "3_width=16,weight_decay=1",
    ]


# ----------------------------------------------------------------------------- W&B


def wandb_records(path: Path):
    """The records of a .wandb transaction log: W&B's 7-byte header, then LevelDB-log chunks (32 KiB blocks, each
    chunk a 7-byte header: crc32c, length, type 1 full / 2 first / 3 middle / 4 last), each record a protobuf
    `Record`. W&B ≥ 0.20 reads these in Go only, so the test reads them here with W&B's own protobufs."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:7] == b":W&B\xe1\xbe\x00"
    pos, parts = 7, []
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a chunk header is padding
            pos += 32768 - pos % 32768
            continue
        length, kind = struct.unpack("<HB", data[pos + 4 : pos + 7])
        parts.append(data[pos + 7 : pos + 7 + length])
        pos += 7 + length
        if kind in (1, 4):
            yield wandb_internal_pb2.Record.FromString(b"".join(parts))
            parts = []


def read_wandb_run(folder: Path) -> tuple[dict, dict, dict]:
    """(config, history {key: [values by step]} with "_step", summary) of one offline run folder, whose log must be
    complete: its header record first, its exit record last (what `wandb sync` needs)."""
    (log,) = folder.glob("run-*.wandb")
    records = list(wandb_records(log))
    assert [r.WhichOneof("record_type") for r in records[:1] + records[-1:]] == ["header", "exit"], log.stat()
    config, history, summary = {}, {}, {}
    for record in records:
        kind = record.WhichOneof("record_type")
        if kind in ("run", "config"):  # the config at init, then any update W&B sends later
            updates = (record.run.config if kind == "run" else record.config).update
            config.update({u.key: json.loads(u.value_json) for u in updates if u.key != "_wandb"})
        elif kind == "history":
            for item in record.history.item:
                history.setdefault(item.key or "/".join(item.nested_key), []).append(json.loads(item.value_json))
        elif kind == "summary":
            summary.update({u.key or "/".join(u.nested_key): json.loads(u.value_json) for u in record.summary.update})
    return config, history, summary


@pytest.mark.parametrize("grid", ["finished", "zipped"])
def test_offline_wandb_runs_read_back(grid, request, tmp_path):
    res = load_results(request.getfixturevalue(grid))
    folders = ex.write_wandb(res, tmp_path)
    digest = res.meta["config_digest"]
    assert [f.parent for f in folders] == [tmp_path / "wandb"] * res.num_runs
    for i, folder in enumerate(folders):
        assert folder.name.startswith("offline-run-") and folder.name.endswith(f"-{digest}-{i}")
        config, history, summary = read_wandb_run(folder)
        assert config["config_digest"] == digest and config["run"] == i and config["preset"] == "tiny"
        assert config["nht_export"] == {"wall_time": "progress.log", "partial": False}
        np.testing.assert_allclose(history["_timestamp"], training_times(res), rtol=0, atol=1e-3)
        assert {axis: config[axis] for axis in res.axes} == pytest.approx(run_coordinates(res, i))
        assert config["nht"]["train"]["steps"] == res.config.train.steps
        assert history["_step"] == list(res.steps)
        assert set(history) == {"_step", "_timestamp", "_runtime", *map(ex.tracker_name, res.metrics)}
        for name, trajectory in res.metrics.items():
            np.testing.assert_array_equal(np.asarray(history[ex.tracker_name(name)], np.float32), trajectory[i])
        assert summary["regime"] == res.summary[i]["regime"]
        assert summary["final_test_acc"] == pytest.approx(res.summary[i]["final_test_acc"])


def test_wandb_export_refuses_beside_an_active_run_and_leaves_it_running(finished, tmp_path):
    wandb = pytest.importorskip("wandb")
    own = wandb.init(dir=str(tmp_path / "own"), mode="offline", project="mine", settings=ex.wandb_settings(wandb))
    try:
        with pytest.raises(ConfigError, match="a W&B run .* is active in this process; finish it"):
            ex.write_wandb(load_results(finished), tmp_path / "out")
        assert wandb.run is own and not (tmp_path / "out" / "wandb").exists()
        own.log({"still": 1.0})  # not finished by the export
    finally:
        own.finish()
        wandb.teardown()


# ----------------------------------------------------------------------------- nht export


def test_cli_writes_inside_the_folder_and_replaces_an_earlier_export(folder, capsys):
    for attempt in range(2):
        if attempt:  # a run of an earlier export (say of another grid) that this export does not write
            (folder / "tensorboard" / "9_stale").mkdir()
            (folder / "tensorboard" / "9_stale" / "events.out.tfevents.0.host").write_bytes(b"")
        assert main(["export", str(folder), "--tensorboard"]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"written: 2 runs in {folder / 'tensorboard'}; view: tensorboard --logdir")
        runs = sorted(p for p in (folder / "tensorboard").iterdir() if p.is_dir())
        assert [p.name for p in runs] == ex.run_names(load_results(folder))
        assert all(len(list(p.glob("events.out.tfevents.*"))) == 1 for p in runs)  # replaced, not appended
    marker = json.loads((folder / "tensorboard" / ex.MARKER).read_text())
    assert marker["finished"] and marker["runs"] == 2
    load_results(folder)  # the results folder is still complete


def test_cli_refuses_a_foreign_folder_and_a_damaged_one(folder, tmp_path, capsys):
    (tmp_path / "mine" / "tensorboard").mkdir(parents=True)
    (tmp_path / "mine" / "tensorboard" / "notes.txt").write_text("keep me")
    assert main(["export", str(folder), "--tensorboard", "--out", str(tmp_path / "mine")]) == 2
    assert "holds files that `nht export` did not write" in capsys.readouterr().err
    assert (tmp_path / "mine" / "tensorboard" / "notes.txt").read_text() == "keep me"
    (folder / "summary.csv").write_text("damaged")
    assert main(["export", str(folder), "--tensorboard", "--out", str(tmp_path / "elsewhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"nht: error: '{folder}' holds damaged results: summary.csv") and err.count("\n") == 1
    assert not (tmp_path / "elsewhere").exists()


def test_a_read_only_folder_exports_with_out_only(folder, tmp_path, monkeypatch, capsys):
    import errno
    import os

    from nht_jax.results import lock

    real = os.open

    def read_only(path, flags, *args, **kwargs):  # the results folder's .lock cannot be opened for writing
        if str(path) == str(folder / lock.LOCK_NAME) and flags & (os.O_RDWR | os.O_WRONLY):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    assert main(["export", str(folder), "--tensorboard"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"nht: error: cannot write results to '{folder}': Read-only file system. "
        f"Choose a writable folder with --out DIR.\n"
    )
    assert not (folder / "tensorboard").exists()
    assert main(["export", str(folder), "--tensorboard", "--out", str(tmp_path / "out")]) == 0  # no lock taken
    assert len(list((tmp_path / "out" / "tensorboard").iterdir())) == 3  # two runs and the marker


def test_cli_wandb(folder, tmp_path, capsys):
    assert main(["export", str(folder), "--wandb", "--out", str(tmp_path), "--project", "grok"]) == 0
    assert f"wandb sync '{tmp_path / 'wandb'}'/offline-run-*" in capsys.readouterr().out
    runs = sorted((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 2 and not (folder / "wandb").exists()
    (log,) = runs[0].glob("run-*.wandb")
    (run,) = [r.run for r in wandb_records(log) if r.WhichOneof("record_type") == "run"]
    assert run.project == "grok" and run.display_name == ex.run_names(load_results(folder))[0]


@pytest.mark.parametrize(
    "project, said",
    [
        (
            "a/b c",
            "--project 'a/b c': a W&B project name cannot hold / \\ # ? % : (found /). For a team's project "
            "(ENTITY/PROJECT), export with --project 'b c' and upload with wandb sync --entity 'a'.",
        ),
        ("50%:x", "--project '50%:x': a W&B project name cannot hold / \\ # ? % : (found % :)."),
        ("", "--project is empty: name the W&B project (e.g. --project nht)"),
        ("p" * 129, "--project: a W&B project name has at most 128 characters, this one 129"),
    ],
)
def test_a_project_w_and_b_refuses_is_one_line_before_anything_is_written(project, said, folder, capsys):
    """Issue 46 item 4: W&B's own refusal was a traceback after the export folder was claimed."""
    assert main(["export", str(folder), "--wandb", "--project", project]) == 2
    assert capsys.readouterr().err == f"nht: error: {said}\n"
    assert not (folder / "wandb").exists()


def test_the_python_export_refuses_such_a_project_before_claiming_its_folder(finished, tmp_path):
    """The same check inside `export.export`, for callers that skip the command line: one ConfigError line before
    OUT/wandb is claimed (W&B's own refusal came after it, as a traceback)."""
    pytest.importorskip("wandb")
    with pytest.raises(ConfigError, match=r"^--project 'a/b c': a W&B project name cannot hold") as refused:
        ex.export(load_results(finished), "wandb", tmp_path, project="a/b c")
    assert "\n" not in str(refused.value) and list(tmp_path.iterdir()) == []


def test_a_missing_folder_is_refused_without_creating_it(tmp_path, capsys):
    assert main(["export", str(tmp_path / "missing"), "--tensorboard"]) == 2
    assert "holds no results" in capsys.readouterr().err
    assert not (tmp_path / "missing").exists()


# ----------------------------------------------------------------------------- sections and the training's times

KNOWN_METRICS = (
    "train_loss",
    "train_acc",
    "test_loss",
    "test_acc",
    "norm_sq",
    "weight_norm_sq",
    "head_norm_sq",
    "layer_norm_sq/Dense_0",
    "finite",
    "relative_train_loss",
    "grad_norm",
    "minibatch_grad_norm",
    "null_norm_sq",
    "worst_group_acc",
    "weighted_avg_acc",
    "coloured_acc",
    "conflicting_acc",
    "clean_loss",
    "clean_acc",
    "group_acc/0",
    "logit_scale",
    "effective_logit_scale",
    "shortcut_reliance",
    "fourier_concentration",
    "epoch",
)


def test_every_metric_has_a_section_and_its_name_comes_back():
    from nht_jax.engine.metrics import VOCABULARY

    names = [*KNOWN_METRICS, *(m.replace("<layer>", "head") for m in VOCABULARY)]
    for name in names:
        tag = ex.tracker_name(name)
        assert tag.partition("/")[0] in ex.TRACKER_GROUPS and ex.metric_of_tracker_name(tag) == name, (name, tag)
    assert [
        ex.tracker_name(m)
        for m in (
            "train_loss",
            "test_acc",
            "norm_sq",
            "layer_norm_sq/Dense_0",
            "finite",
            "worst_group_acc",
            "logit_scale",
        )
    ] == [
        "train/loss",
        "test/acc",
        "norm/norm_sq",
        "norm/layer_norm_sq/Dense_0",
        "status/finite",
        "eval/worst_group_acc",
        "other/logit_scale",
    ]
    assert ex.metric_of_tracker_name("loss") is None and ex.metric_of_tracker_name("val/acc") is None


def test_the_dashboards_do_not_list_finite_first(finished):
    """Both dashboards sort by name: flat names put `finite` first; in sections the norms lead, status/finite
    comes after them and train/… and test/… stay together."""
    metrics = load_results(finished).metrics
    assert sorted(metrics)[0] == "finite"  # the problem, as it was
    tags = sorted(map(ex.tracker_name, metrics))
    assert tags[0].startswith("norm/") and tags.index("status/finite") > tags.index("norm/norm_sq")
    assert [t.partition("/")[0] for t in tags] == sorted(t.partition("/")[0] for t in tags)


PROGRESS = """\
2026-12-03T10:00:00+00:00  started nht run x: 4 runs × 40 steps, log every 10, …; pid 1 on vm
2026-12-03T10:00:05+00:00  step 20/40 (50.0%)  2 runs (run slice 1/2)  chunk 2 logs in 4.00 s (compiling)  10 run·steps/s
2026-12-03T10:00:06+00:00  live at step 20: 2 runs: …
2026-12-03T10:00:09+00:00  step 40/40 (100.0%)  2 runs (run slice 1/2)  chunk 2 logs in 3.00 s  10 run·steps/s
2026-12-03T10:00:10+00:00  run slice 1/2 done (runs 0–1)
2026-12-03T10:00:20+00:00  step 40/40 (100.0%)  2 runs (run slice 2/2)  chunk 4 logs in 9.00 s  10 run·steps/s
2026-12-03T10:00:21+00:00  stopped (KeyboardInterrupt) at step 40 of 40 in run slice 2/2
2026-12-03T10:01:00+00:00  started nht run x: 4 runs × 40 steps, …; pid 2 on vm
2026-12-03T10:01:00+00:00  resumed at step 20 of 40 from checkpoint.npz
2026-12-03T10:01:30+00:00  step 40/40 (100.0%)  2 runs (run slice 1/2)  chunk 2 logs in 3.00 s  10 run·steps/s
"""


def test_the_times_of_the_logged_steps_follow_progress_log():
    """The rule of `nht_jax.results.wall_times`: step 0 at the first start; a chunk line dates the steps since the
    previous line of its run slice; the first run slice to log a step dates it; a resume forgets the steps after its
    checkpoint (they are logged again)."""
    from nht_jax.results.wall_times import log_wall_times

    start = 1796292000.0  # 2026-12-03T10:00:00Z
    times = log_wall_times(PROGRESS, [0, 10, 20, 30, 40])
    np.testing.assert_array_equal(times - start, [0, 5, 5, 90, 90])
    assert np.isnan(log_wall_times("not a log\n", [0, 10])).all()
