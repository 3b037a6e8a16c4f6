"""Other codebases' logs in (`nht import`, `nht_jax.results.import_logs`): logs written here by a plain optax loop (no
nht code: a tiny MLP trained with optax.adamw at two weight decays × two seeds) as wide CSV, long CSV, JSON lines
and TensorBoard event files (tensorboardX with the hparams plugin, and TensorBoard's own `tensorboard.summary.Writer`
with `lambda=…,seed=…` folder names) are imported, then `nht analyze` and `nht bound` report on them with the T_fit
the loop itself measured; `nht export` → `nht import` keeps a tiny folder's trajectories; the step policies, the
irregular grid and every refused input."""

import csv
import json
import shutil

import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.cli import main
from nht_jax.results import export as ex
from nht_jax.results import import_logs as il
from nht_jax.results.import_logs import lightning
from nht_jax.results.folder import load_results, read_summary

METRICS = ("train_acc", "test_acc", "norm_sq")
WEIGHT_DECAYS, SEEDS, STEPS, LOG_EVERY = (0.01, 1.0), (0, 1), 200, 10


def optax_loop():
    """Rows {run, lambda, lr, seed, step, train_acc, test_acc, norm_sq} of a plain JAX/optax training loop (no nht
    code), and the T_fit it measured per run id: the first logged step with train accuracy ≥ 0.99."""
    import jax
    import jax.numpy as jnp
    import optax

    rng = np.random.default_rng(123)
    x = rng.normal(size=(96, 8)).astype(np.float32)
    y = np.argmax(x @ rng.normal(size=(8, 3)), 1)
    xtr, ytr, xte, yte = x[:32], y[:32], x[32:], y[32:]

    def logits(p, x):
        return jnp.tanh(x @ p["w1"]) @ p["w2"]

    def loss(p):
        return optax.softmax_cross_entropy_with_integer_labels(logits(p, xtr), ytr).mean()

    @jax.jit
    def evaluate(p):
        acc = lambda x, y: jnp.mean(jnp.argmax(logits(p, x), 1) == y)  # noqa: E731
        return acc(xtr, ytr), acc(xte, yte), sum(jnp.sum(v**2) for v in jax.tree.leaves(p))

    rows, t_fit = [], {}
    for wd in WEIGHT_DECAYS:
        opt = optax.adamw(1e-2, weight_decay=wd)

        @jax.jit
        def update(p, s):
            updates, s = opt.update(jax.grad(loss)(p), s, p)
            return optax.apply_updates(p, updates), s

        for seed in SEEDS:
            k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
            p = {"w1": jax.random.normal(k1, (8, 32)) * 0.5, "w2": jax.random.normal(k2, (32, 3)) * 0.5}
            s, run = opt.init(p), f"wd{wd}-s{seed}"
            for t in range(STEPS + 1):
                if t % LOG_EVERY == 0:
                    train_acc, test_acc, norm_sq = map(float, evaluate(p))
                    rows.append(
                        {
                            "run": run,
                            "lambda": wd,
                            "lr": 1e-2,
                            "seed": seed,
                            "step": t,
                            "train_acc": train_acc,
                            "test_acc": test_acc,
                            "norm_sq": norm_sq,
                        }
                    )
                    if train_acc >= 0.99:
                        t_fit.setdefault(run, t)
                if t < STEPS:
                    p, s = update(p, s)
    return rows, t_fit


@pytest.fixture(scope="module")
def loop():
    return optax_loop()


def write_wide(rows, path, columns=("run", "lambda", "lr", "seed", "step", *METRICS)):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def long_rows(rows):
    return [
        {
            "run": r["run"],
            "lambda": r["lambda"],
            "lr": r["lr"],
            "seed": r["seed"],
            "step": r["step"],
            "metric": m,
            "value": r[m],
        }
        for r in rows
        for m in METRICS
    ]


@pytest.fixture(scope="module")
def wide_folder(loop, tmp_path_factory):
    base = tmp_path_factory.mktemp("import")
    assert main(["import", str(write_wide(loop[0], base / "logs.csv")), "--out", str(base / "res")]) == 0
    return base / "res"


def same_results(a, b):
    assert list(a.metrics) == list(b.metrics)
    np.testing.assert_array_equal(a.steps, b.steps)
    for name in a.metrics:
        np.testing.assert_array_equal(a.metrics[name], b.metrics[name], err_msg=name)
    assert {k: list(v) for k, v in a.hparams.items()} == {k: list(v) for k, v in b.hparams.items()}
    assert a.summary == b.summary or all(str(x) == str(y) for x, y in zip(a.summary, b.summary))


# ----------------------------------------------------------------------------- the optax loop's logs


def test_wide_csv_is_a_results_folder_with_the_loops_own_t_fit(loop, wide_folder, capsys):
    rows, t_fit = loop
    res = load_results(wide_folder)
    assert res.domain.name == "imported" and res.grid_kind == "product" and res.num_runs == 4
    assert res.config.grid["weight_decay"] == WEIGHT_DECAYS and res.config.grid["seed"] == SEEDS
    assert res.config.grid["learning_rate"] == (0.01,)
    assert (res.config.train.steps, res.config.train.log_every) == (STEPS, LOG_EVERY)
    assert list(res.metrics) == [*METRICS, "finite"] and (res.metrics["finite"] == 1).all()
    ids = res.meta["imported"]["run_ids"]
    assert ids == [f"wd{wd}-s{seed}" for wd in WEIGHT_DECAYS for seed in SEEDS]  # grid order
    for i, run in enumerate(ids):
        logged = [r for r in rows if r["run"] == run]
        np.testing.assert_array_equal(res.metrics["test_acc"][i], [r["test_acc"] for r in logged])
        assert res.summary[i]["T_fit"] == t_fit[run]
        assert res.summary[i]["final_test_acc"] == pytest.approx(logged[-1]["test_acc"], rel=1e-5)


def test_analyze_and_bound_report_on_the_imported_folder(loop, wide_folder, capsys):
    assert main(["analyze", str(wide_folder)]) == 0
    text = (wide_folder / "analysis.md").read_text()
    assert "domain imported" in text and "needs head_norm_sq" in text  # what is missing says n.a., nothing fails
    assert main(["paper", "bound", str(wide_folder)]) == 0
    with open(wide_folder / "bound_table.csv", newline="") as f:
        table = list(csv.DictReader(f))
    ids = load_results(wide_folder).meta["imported"]["run_ids"]
    assert [float(row["T_fit"]) for row in table] == [loop[1][run] for run in ids]
    assert {row["optimizer"] for row in table} == {"adamw"}
    assert main(["report", str(wide_folder)]) == 0
    assert (wide_folder / "trajectories.png").exists()


def test_long_csv_and_json_lines_give_the_same_folder(loop, wide_folder, tmp_path):
    longs = long_rows(loop[0])
    write_wide(longs, tmp_path / "long.csv", ("run", "lambda", "lr", "seed", "step", "metric", "value"))
    (tmp_path / "long.jsonl").write_text("".join(json.dumps(r) + "\n" for r in longs))
    (tmp_path / "wide.jsonl").write_text("".join(json.dumps(r) + "\n" for r in loop[0]))
    for name in ("long.csv", "long.jsonl", "wide.jsonl"):
        il.import_logs(tmp_path / name, tmp_path / name.replace(".", "_"))
        same_results(load_results(tmp_path / name.replace(".", "_")), load_results(wide_folder))


def test_rows_in_descending_step_order_file_each_value_under_its_own_step(loop, wide_folder, tmp_path):
    """Issue 29 item 6: a CSV written newest first (and its runs interleaved) gives the folder of the ordered one."""
    rows = sorted(loop[0], key=lambda r: (-r["step"], r["run"]))
    res = il.import_logs(write_wide(rows, tmp_path / "descending.csv"), tmp_path / "res")["results"]
    same_results(res, load_results(wide_folder))
    assert res.steps.tolist() == list(range(0, STEPS + 1, LOG_EVERY))
    first = next(r for r in loop[0] if r["run"] == "wd0.01-s0" and r["step"] == LOG_EVERY)
    assert res.metrics["test_acc"][0, 1] == first["test_acc"]


def test_event_files_of_both_writers_import(loop, wide_folder, tmp_path):
    """tensorboardX with the hparams plugin (folder names that say nothing), and TensorBoard's own writer with the
    hyperparameters in the folder names."""
    tbx = pytest.importorskip("tensorboardX")
    from tensorboard.summary import Writer
    from tensorboardX.summary import hparams

    runs = {}
    for r in loop[0]:
        runs.setdefault(r["run"], []).append(r)
    for i, (run, rows) in enumerate(runs.items()):
        wd, seed = rows[0]["lambda"], rows[0]["seed"]
        if i % 2:
            with tbx.SummaryWriter(str(tmp_path / "tb" / f"job{i}")) as writer:
                for r in rows:
                    for m in METRICS:
                        writer.add_scalar(m, r[m], r["step"])
                for part in hparams({"lambda": wd, "lr": 0.01, "seed": seed}, {}):
                    writer.file_writer.add_summary(part)
        else:
            writer = Writer(str(tmp_path / "tb" / f"lambda={wd},lr=0.01,seed={seed}"))
            for r in rows:
                for m in METRICS:
                    writer.add_scalar(m, r[m], step=r["step"])
            writer.close()
    res = il.import_logs(tmp_path / "tb", tmp_path / "res")["results"]
    assert res.meta["imported"]["run_ids"] == [
        "lambda=0.01,lr=0.01,seed=0",
        "job1",
        "lambda=1.0,lr=0.01,seed=0",
        "job3",
    ]
    reference = load_results(wide_folder)
    for name in METRICS:  # event files hold float32
        np.testing.assert_array_equal(res.metrics[name], reference.metrics[name].astype(np.float32))
    assert [row["T_fit"] for row in res.summary] == [row["T_fit"] for row in reference.summary]


def test_add_hparams_subfolder_is_the_runs_hyperparameters_not_another_run(loop, wide_folder, tmp_path, capsys):
    """Issue 29 item 10: `SummaryWriter.add_hparams` (tensorboardX's, as PyTorch's) writes the hyperparameters and
    its metric_dict into a timestamped subfolder of the run; it gives the run its hyperparameters, and is no run."""
    tbx = pytest.importorskip("tensorboardX")

    runs = {}
    for r in loop[0]:
        runs.setdefault(r["run"], []).append(r)
    for i, rows in enumerate(runs.values()):
        with tbx.SummaryWriter(str(tmp_path / "tb" / f"job{i}")) as writer:
            for r in rows:
                for m in METRICS:
                    writer.add_scalar(m, r[m], r["step"])
            writer.add_hparams(
                {"lambda": rows[0]["lambda"], "lr": 0.01, "seed": rows[0]["seed"]},
                {"hparam/final_test_acc": rows[-1]["test_acc"]},
            )
    sessions = [p for p in (tmp_path / "tb").glob("job*/*") if p.is_dir()]
    assert len(sessions) == 4 and all(float(p.name) > 0 for p in sessions)  # a timestamp, as the writer names it
    assert main(["import", str(tmp_path / "tb"), "--out", str(tmp_path / "res")]) == 0
    out = capsys.readouterr().out
    assert "note: the hyperparameters of 4 run(s) come from the subfolder SummaryWriter.add_hparams wrote" in out
    assert "metric_dict values (hparam/final_test_acc) are summaries, not imported" in out
    res, reference = load_results(tmp_path / "res"), load_results(wide_folder)
    assert res.meta["imported"]["run_ids"] == ["job0", "job1", "job2", "job3"] and res.num_runs == 4
    assert res.config.grid["weight_decay"] == WEIGHT_DECAYS and res.config.grid["seed"] == SEEDS
    for name in METRICS:
        np.testing.assert_array_equal(res.metrics[name], reference.metrics[name].astype(np.float32))


def write_lightning(loop_rows, root, epoch_steps=20, log_every=10):
    """The optax loop's runs as Lightning's CSVLogger writes them (`lightning.fabric.loggers.csv_logs`): one
    `lightning_logs/version_N` folder per run with `hparams.yaml` (`yaml.dump` of the hyperparameters) and
    `metrics.csv` (`csv.DictWriter`, the keys sorted, "\\r\\n" line ends); `step` is the index of the last batch
    (updates done − 1); the training metrics every `log_every` updates and the validation metrics at each epoch's
    end on a row of their own at the same step, both rows with the epoch."""
    yaml = pytest.importorskip("yaml")
    runs = {}
    for r in loop_rows:
        runs.setdefault(r["run"], []).append(r)
    for version, rows in enumerate(runs.values()):
        folder = root / "lightning_logs" / f"version_{version}"
        folder.mkdir(parents=True)
        with open(folder / "hparams.yaml", "w", newline="") as f:
            yaml.dump({"lr": rows[0]["lr"], "seed": rows[0]["seed"], "weight_decay": rows[0]["lambda"]}, f)
        logged = []
        for r in rows[1:]:
            t, epoch = r["step"], (r["step"] - 1) // epoch_steps
            if t % log_every == 0:
                logged.append(
                    {"train_acc": r["train_acc"], "param_norm_sq": r["norm_sq"], "epoch": epoch, "step": t - 1}
                )
            if t % epoch_steps == 0:
                logged.append({"val_acc": r["test_acc"], "epoch": epoch, "step": t - 1})
        with open(folder / "metrics.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=sorted(set().union(*logged)))
            writer.writeheader()
            writer.writerows(logged)
    return root / "lightning_logs"


def test_lightning_csvlogger_folders_import_without_hand_edits(loop, wide_folder, tmp_path, capsys, monkeypatch):
    """Issue 29 item 10: Lightning's CSVLogger (split rows at one step, an epoch column, a folder per version with
    its hparams.yaml) imports as it is: rows merged by step, steps + 1 (updates done), η and λ from hparams.yaml."""
    logs = write_lightning(loop[0], tmp_path)
    text = (logs / "version_0" / "metrics.csv").read_bytes().decode()
    assert text.startswith("epoch,param_norm_sq,step,train_acc,val_acc\r\n0,") and "\r\n0,,19,,0." in text
    out = str(tmp_path / "res")
    assert main(["import", str(logs), "--out", out]) == 2  # validation only at epoch ends: the steps differ
    assert "--steps common" in capsys.readouterr().err
    read = []
    monkeypatch.setattr(lightning, "read_rows", lambda path, real=lightning.read_rows: read.append(path) or real(path))
    assert main(["import", str(logs), "--out", out, "--steps", "common"]) == 0
    assert "note: Lightning's steps + 1" in capsys.readouterr().out
    assert sorted(read) == sorted(logs.glob("version_*/metrics.csv"))  # each file read once (the offset from them)
    res, reference = load_results(out), load_results(wide_folder)
    assert res.meta["imported"]["run_ids"] == [f"version_{i}" for i in range(4)]
    assert res.config.grid["weight_decay"] == WEIGHT_DECAYS and res.config.grid["learning_rate"] == (0.01,)
    assert res.steps.tolist() == list(range(20, STEPS + 1, 20)) and res.config.train.log_every == 20
    kept = np.isin(reference.steps, res.steps)
    for name in METRICS:
        np.testing.assert_array_equal(res.metrics[name], reference.metrics[name][:, kept], err_msg=name)
    np.testing.assert_array_equal(res.metrics["epoch"][0], (res.steps - 1) // 20)
    assert main(["import", str(logs), "--out", out, "--steps", "common", "--step-offset", "0", "--overwrite"]) == 2
    assert "not multiples of it" in capsys.readouterr().err  # as logged: 19, 39, … (the offset is what fixes it)


def test_lightning_steps_already_on_the_grid_are_kept_as_logged(loop, tmp_path, capsys):
    """Issue 46 item 6: a metrics.csv logged at steps 0, 50, 100, … (on its grid already; + 1 would give 1, 51, 101,
    which are no multiples of 50) imports as logged and says so; Lightning's own 49, 99, … still get + 1."""
    pytest.importorskip("yaml")
    folder = tmp_path / "lightning_logs" / "version_0"
    folder.mkdir(parents=True)
    (folder / "hparams.yaml").write_text("lr: 0.01\nweight_decay: 0.1\n")
    rows = [r for r in loop[0] if r["run"] == "wd0.01-s0" and r["step"] % 50 == 0]
    with open(folder / "metrics.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["epoch", "param_norm_sq", "step", "test_acc", "train_acc"])
        writer.writeheader()
        writer.writerows(
            {
                "epoch": 0,
                "param_norm_sq": r["norm_sq"],
                "step": r["step"],
                "test_acc": r["test_acc"],
                "train_acc": r["train_acc"],
            }
            for r in rows
        )
    logged = [r["step"] for r in rows]
    assert logged[:3] == [0, 50, 100]
    assert main(["import", str(tmp_path / "lightning_logs"), "--out", str(tmp_path / "res")]) == 0
    assert "note: Lightning's steps kept as logged (0, 50, 100, …)" in capsys.readouterr().out
    res = load_results(tmp_path / "res")
    assert res.steps.tolist() == logged and res.config.train.log_every == 50
    np.testing.assert_allclose(res.metrics["test_acc"][0], [r["test_acc"] for r in rows], rtol=1e-6)
    # Shifted by one (Lightning's own 49, 99, …): + 1 as before.
    rows_49 = [dict(r, step=r["step"] - 1) for r in rows[1:]]
    with open(folder / "metrics.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["epoch", "param_norm_sq", "step", "test_acc", "train_acc"])
        writer.writeheader()
        writer.writerows(
            {
                "epoch": 0,
                "param_norm_sq": r["norm_sq"],
                "step": r["step"],
                "test_acc": r["test_acc"],
                "train_acc": r["train_acc"],
            }
            for r in rows_49
        )
    assert main(["import", str(tmp_path / "lightning_logs"), "--out", str(tmp_path / "res2")]) == 0
    assert "note: Lightning's steps + 1" in capsys.readouterr().out
    assert load_results(tmp_path / "res2").steps.tolist() == logged[1:]


def test_a_csv_starting_with_a_byte_order_mark_reads_its_first_column(loop, tmp_path):
    """Issue 46 item 4: Excel's "CSV UTF-8" starts the file with U+FEFF; the first column is `run`, not '\\ufeffrun'."""
    path = write_wide(loop[0], tmp_path / "logs.csv")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    header, _ = il.read_rows(path)
    assert header[0] == "run"
    res = il.import_logs(path, tmp_path / "res")["results"]
    assert res.num_runs == 4


def test_export_then_import_keeps_the_trajectories(finished, tmp_path):
    pytest.importorskip("tensorboardX")
    original = load_results(finished)
    ex.write_tensorboard(original, tmp_path / "tb")
    back = il.import_logs(tmp_path / "tb", tmp_path / "res", overrides=["optim.decay_on=weights"])["results"]
    assert set(back.metrics) == set(original.metrics)
    np.testing.assert_array_equal(back.steps, original.steps)
    for name, values in original.metrics.items():
        np.testing.assert_array_equal(back.metrics[name], values, err_msg=name)
    assert {a: list(v) for a, v in ex.configured_values(back).items()} == {
        a: list(v) for a, v in ex.configured_values(original).items()
    }
    for mine, theirs in zip(back.summary, original.summary):
        for column in ("regime", "T_fit", "T_transition", "norm_at_fit", "norm_peak", "final_test_acc"):
            assert str(mine[column]) == str(theirs[column]), column


# ----------------------------------------------------------------------------- grids, steps, names


def test_a_missing_run_makes_an_irregular_grid(loop, tmp_path):
    rows = [r for r in loop[0] if r["run"] != "wd1.0-s1"]
    res = il.import_logs(write_wide(rows, tmp_path / "logs.csv"), tmp_path / "res")["results"]
    assert res.grid_kind == "irregular" and res.num_runs == 3
    assert res.config.zipped == (("weight_decay", "seed"),)
    values = ex.configured_values(res)
    assert [(float(w), int(s)) for w, s in zip(values["weight_decay"], values["seed"])] == [
        (0.01, 0),
        (0.01, 1),
        (1.0, 0),
    ]
    assert res.select(weight_decay=1.0, seed=0).tolist() == [2]


def test_step_policies(loop, tmp_path):
    rows = [r for r in loop[0] if not (r["run"] == "wd0.01-s0" and r["step"] == 50)]  # one run misses a log
    path = write_wide(rows, tmp_path / "logs.csv")
    with pytest.raises(ConfigError, match="differ at steps \\[50\\].*--steps common"):
        il.import_logs(path, tmp_path / "exact")
    with pytest.raises(ConfigError, match="not evenly spaced.*--steps K"):
        il.import_logs(path, tmp_path / "common", "common")
    res = il.import_logs(path, tmp_path / "k", 20)["results"]
    assert res.steps.tolist() == list(range(0, STEPS + 1, 20)) and res.config.train.log_every == 20
    assert "kept 11 of the 21 logged steps" in res.meta["imported"]["notes"][0]


def test_aliases_renames_ignores_and_the_squared_norm(loop, tmp_path, wide_folder):
    rows = [
        {
            "name": r["run"],
            "wd": r["lambda"],
            "eta": r["lr"],
            "seed": r["seed"],
            "global_step": r["step"],
            "Train_Accuracy": r["train_acc"],
            "top1": r["test_acc"],
            "param_norm": np.sqrt(r["norm_sq"]),
            "optimizer": "adamw",
            "notes": r["step"],
        }
        for r in loop[0]
    ]
    path = write_wide(rows, tmp_path / "logs.csv", list(rows[0]))
    with pytest.raises(ConfigError, match="column 'optimizer': 'adamw' is not a number.*--ignore optimizer"):
        il.import_logs(path, tmp_path / "res")  # a wide file's other columns are metrics
    with pytest.raises(ConfigError, match="logs no test_acc.*--rename YOURS=test_acc"):
        il.import_logs(path, tmp_path / "res", names=il.parse_names([], ["optimizer", "notes"]))
    names = il.parse_names(["top1=test_acc", "optimizer=hparam/optimizer"], ["notes"])
    res = il.import_logs(path, tmp_path / "res", names=names)["results"]
    assert list(res.metrics) == [*METRICS, "finite"] and res.config.grid["learning_rate"] == (0.01,)
    np.testing.assert_allclose(res.metrics["norm_sq"], load_results(wide_folder).metrics["norm_sq"], rtol=1e-6)
    assert res.meta["imported"]["constant_hparams"] == {"optimizer": "adamw"}


def test_axes_the_logs_lack_come_from_set_and_analysis_options_apply(loop, tmp_path):
    rows = [{k: v for k, v in r.items() if k != "lr"} for r in loop[0]]
    res = il.import_logs(
        write_wide(rows, tmp_path / "logs.csv", ("run", "lambda", "seed", "step", *METRICS)),
        tmp_path / "res",
        overrides=["grid.learning_rate=0.01", "analysis.fit_threshold=0.5", "optim.name=sgdw"],
    )["results"]
    assert res.config.grid["learning_rate"] == (0.01,) and res.config.optim.name == "sgdw"
    expected = [
        next(r["step"] for r in rows if r["run"] == run and r["train_acc"] >= 0.5)
        for run in res.meta["imported"]["run_ids"]
    ]
    assert [row["T_fit"] for row in res.summary] == expected


def test_a_norm_is_never_taken_as_its_square(loop, tmp_path, wide_folder, capsys):
    """Issue 29 item 10: ‖θ‖ logged as weights/l2_norm is no ‖θ‖²: without a rename the import names it and the
    rename that squares it; renaming it to norm_sq is refused; squaring it says so in a note."""
    rows = [
        {
            "run": r["run"],
            "lambda": r["lambda"],
            "lr": r["lr"],
            "seed": r["seed"],
            "step": r["step"],
            "train_acc": r["train_acc"],
            "test_acc": r["test_acc"],
            "weights/l2_norm": np.sqrt(r["norm_sq"]),
        }
        for r in loop[0]
    ]
    path = write_wide(rows, tmp_path / "logs.csv", list(rows[0]))
    out = str(tmp_path / "res")
    assert main(["import", str(path), "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "logs no norm_sq" in err
    assert "the logs hold weights/l2_norm, named like ‖θ‖: --rename weights/l2_norm=param_norm" in err
    assert main(["import", str(path), "--out", out, "--rename", "weights/l2_norm=norm_sq"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'weights/l2_norm' is named like a norm ‖θ‖, but norm_sq is ‖θ‖²" in err
    assert not (tmp_path / "res").exists()
    assert main(["import", str(path), "--out", out, "--rename", "weights/l2_norm=param_norm"]) == 0
    assert "note: norm_sq is the square of param_norm (logged as ‖θ‖, not squared)" in capsys.readouterr().out
    np.testing.assert_allclose(
        load_results(out).metrics["norm_sq"], load_results(wide_folder).metrics["norm_sq"], rtol=1e-6
    )


@pytest.mark.parametrize("axis, column", [("learning_rate", "lr"), ("weight_decay", "lambda")])
def test_a_learning_rate_or_weight_decay_not_logged_is_refused_never_assumed(axis, column, loop, tmp_path, capsys):
    """Issue 29 item 10: η or λ missing from the logs is one line naming --set grid.AXIS=VALUE (no default 1e-3)."""
    rows = [{k: v for k, v in r.items() if k != column} for r in loop[0]]
    if column == "lambda":  # the runs still differ: by their run ids, the seeds and (here) a tag per λ
        rows = [r for r in rows if r["run"].startswith("wd1.0")]
    path = write_wide(rows, tmp_path / "logs.csv", list(rows[0]))
    assert main(["import", str(path), "--out", str(tmp_path / "res")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the logs give no {axis}" in err and f"--set grid.{axis}=VALUE" in err, err
    assert not (tmp_path / "res").exists()
    given = {"learning_rate": "0.01", "weight_decay": "1.0"}[axis]
    assert main(["import", str(path), "--out", str(tmp_path / "res"), "--set", f"grid.{axis}={given}"]) == 0
    assert load_results(tmp_path / "res").config.grid[axis] == (float(given),)


def test_a_diverged_run_is_flagged(loop, tmp_path):
    rows = [dict(r, norm_sq=float("nan")) if r["run"] == "wd0.01-s1" and r["step"] >= 150 else r for r in loop[0]]
    res = il.import_logs(write_wide(rows, tmp_path / "logs.csv"), tmp_path / "res")["results"]
    assert [row["regime"] for row in res.summary][1] == "diverged"
    assert res.summary[1]["diverged_step"] == 150 and res.metrics["finite"][1, 15] == 0


# ----------------------------------------------------------------------------- refused input


def edit(rows, **change):
    """The rows with run wd0.01-s0's row of step 50 changed."""
    return [dict(r, **change) if (r["run"], r["step"]) == ("wd0.01-s0", 50) else r for r in rows]


REFUSED = {
    "no step column": (lambda rows: [{k: v for k, v in r.items() if k != "step"} for r in rows], "has no step column"),
    "a value that is no number": (
        lambda rows: edit(rows, test_acc="high"),
        r"line 7, column 'test_acc': 'high' is not a number",
    ),
    "a step that is no whole number": (lambda rows: edit(rows, step=2.5), r"line \d+, column 'step': step"),
    "a repeated (run, step, metric)": (lambda rows: rows + rows[3:4], "logged train_acc at step 30 twice"),
    "a hyperparameter changing within a run": (lambda rows: edit(rows, seed=7), "constant within a run"),
    "two runs with the same hyperparameters": (
        lambda rows: [dict(r, seed=0) for r in rows],
        "have the same hyperparameters.*a seed",
    ),
    "a varying hyperparameter that is no axis": (
        lambda rows: [{**r, "hparam/batch": r["seed"]} for r in rows],
        "'batch' varies across runs.*--rename",
    ),
    "uneven steps": (lambda rows: [r for r in rows if r["step"] not in (30, 40)], "not evenly spaced"),
    "steps that are not multiples of their spacing": (
        lambda rows: [dict(r, step=r["step"] + 5) for r in rows],
        "not multiples of it",
    ),
    # no norm at all: imported as not logged (tests/results/test_import_plain_tensorboard.py)
    "a seed that is no integer": (lambda rows: [dict(r, seed=r["seed"] + 0.5) for r in rows], "whole numbers"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_bad_logs_are_one_line_naming_the_file_and_the_fix(case, loop, tmp_path, capsys):
    change, message = REFUSED[case]
    rows = change([dict(r) for r in loop[0]])
    columns = list(dict.fromkeys(k for r in rows for k in r))
    path = write_wide(rows, tmp_path / "logs.csv", columns)
    assert main(["import", str(path), "--out", str(tmp_path / "res")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nht: error: ") and err.count("\n") == 1 and "Traceback" not in err
    import re

    assert re.search(message, err), err
    assert not (tmp_path / "res").exists()  # nothing written


def test_missing_logs_occupied_out_and_bad_options(loop, wide_folder, tmp_path, capsys):
    assert main(["import", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "res")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["import", str(tmp_path / "empty"), "--out", str(tmp_path / "res")]) == 2
    assert "holds no TensorBoard event files" in capsys.readouterr().err
    path = write_wide(loop[0], tmp_path / "logs.csv")
    assert main(["import", str(path), "--out", str(tmp_path / "res"), "--steps", "often"]) == 2
    assert "choose exact, common, or an integer" in capsys.readouterr().err
    assert main(["import", str(path), "--out", str(tmp_path / "res"), "--set", "grid.weight_decay=0.5"]) == 2
    assert "the logs give weight_decay itself" in capsys.readouterr().err
    assert main(["import", str(path), "--out", str(tmp_path / "res"), "--set", "optim.decay_on=weights"]) == 2
    assert "no weight_norm_sq" in capsys.readouterr().err
    assert main(["import", str(path), "--out", str(wide_folder)]) == 2
    assert "is not empty" in capsys.readouterr().err and load_results(wide_folder).num_runs == 4
    copy = tmp_path / "copy"
    assert main(["import", str(path), "--out", str(copy)]) == 0
    rows = [r for r in loop[0] if r["run"] != "wd1.0-s1"]
    assert main(["import", str(write_wide(rows, tmp_path / "fewer.csv")), "--out", str(copy), "--overwrite"]) == 0
    assert load_results(copy).num_runs == 3 and len(read_summary(copy / "summary.csv")) == 3


def test_after_a_full_disk_the_advised_rerun_is_accepted(loop, wide_folder, small_disk, capsys):
    """Issue 29 item 9: an import cut short by a full disk says "run the same command again"; that command is then
    accepted (the folder holds an unfinished import: config.toml of domain imported, no meta.json), while a folder
    holding anything else is still refused without --overwrite."""
    path = write_wide(loop[0], small_disk / "logs.csv")
    out = small_disk / "res"
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (shutil.disk_usage(small_disk).free - 12 * 1024))  # config.toml fits, the rest not
    command = ["import", str(path), "--out", str(out)]
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err and "run the same command again" in err, err
    assert (out / "config.toml").exists() and not (out / "meta.json").exists()
    filler.unlink()
    assert main(command) == 0
    same_results(load_results(out), load_results(wide_folder))
    (out / "meta.json").unlink()  # unfinished, but holding another file: not the import's to replace
    (out / "analysis.md").write_text("mine")
    assert main(command) == 2 and "is not empty" in capsys.readouterr().err
    assert (out / "analysis.md").read_text() == "mine"


def test_an_imported_folder_trains_nothing(wide_folder, tmp_path, capsys):
    assert main(["run", str(wide_folder / "config.toml"), "--out", str(tmp_path / "again"), "--quiet"]) == 2
    assert "there is nothing to train" in capsys.readouterr().err
