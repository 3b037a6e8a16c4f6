"""Other codebases' logs in: `nht import LOGS --out DIR` writes a results folder (`nht_jax.results.folder`) of domain
"imported" (`nht_jax.domains.imported`) that `nht analyze`, `nht report` and `nht paper bound` read like one `nht run`
wrote. docs/guides/import.md is the user's page; the contract in short:

Sources (`sources.read_logs`, chosen by what LOGS is):
    long CSV / JSON lines   one row per (run, step, metric): columns run (optional), step, metric, value, and every
                            other column a hyperparameter (constant within a run)
    wide CSV / JSON lines   one row per (run, step): run (optional), step, then a column per metric; the columns
                            named like an axis (`HPARAM_ALIASES`) or `hparam/<name>` are hyperparameters
    TensorBoard folder      one run per folder holding event files; every scalar tag a metric (but summary/…, the
                            summary columns `nht export` adds, recomputed here); hyperparameters from the hparams
                            plugin when the run has it, else from the folder name `[<index>_]axis=value,axis=value`
                            (what `nht export` names its runs: `nht_jax.results.export.run_names`); the subfolder that
                            `SummaryWriter.add_hparams` writes in a run gives that run's hyperparameters
                            (`tensorboard_events.is_hparams_session`), and is no run
    Lightning folder        one run per CSVLogger `metrics.csv` (`<name>/version_N/`): its split rows (training
                            and validation metrics of one step on separate rows) merged by step, its steps + 1
                            (`lightning.LIGHTNING_STEP_OFFSET`), its hyperparameters from `hparams.yaml` beside it
    Without a run column, each distinct combination of hyperparameters is one run.
Names: hyperparameters and metrics are matched case-insensitively against `HPARAM_ALIASES`
(`nht_jax.base.aliases`, the table `--set grid.lambda=…` reads too) and `runs.METRIC_ALIASES`
(the logs' `lambda`, `lr`, `val_acc`, `param_norm_sq` … become the axes and metrics nht knows); `runs.SQUARED_ALIASES`
(‖θ‖, not squared) become norm_sq by squaring, with a note; `renames` and `ignored` come first (--rename OLD=NEW,
--ignore NAME). A name that reads as a norm is never taken as ‖θ‖²: renaming it to norm_sq is refused
(`runs.named_like_a_norm`), and a missing norm_sq names the logged norms and the rename that squares one.
Other metric names are kept as logged. A hyperparameter that is no axis is dropped when it is the same in every run
(kept in meta.json as "constant_hparams") and refused when it varies.
Steps (`steps.shared_steps`): the results hold one step vector for every run and metric. "exact" (default) refuses logs
whose runs or metrics were logged at different steps; "common" keeps the steps at which every run logged every
metric (dropping a metric some run never logged); an integer K keeps, of those, the multiples of K. The kept steps
must be evenly spaced multiples of their spacing k (train.log_every = k, train.steps = the last). Nothing is
interpolated: an imported value is one the other codebase logged.
Values: numbers (nan / inf allowed: a diverged run); an empty cell (or JSON null) is "not logged". Stored as
float64. `finite` is computed when the logs lack it: ‖θ‖² (and train_loss when logged) finite and below
train.divergence_norm (`engine.metrics.VOCABULARY`).
Grid (`grid.grid_of`): the runs' values on each axis, sorted; a product grid when the runs are every combination,
else one zipped group of the varied axes (an irregular grid). Runs are stored in the grid's order. η and λ
(`write.REQUIRED_AXES`) come from the logs or `--set grid.AXIS=VALUE`, never from a default; other axes the logs do not
name take their defaults or `--set`. An alias, `grid.lambda`, names its axis.
Bad input (missing file, no step column, a non-number, a (run, step, metric) twice, …) is a ConfigError naming the
file, the line or tag and the column, and the fix.
Modules, lowest first: runs (the run as read, names, values) → tables, lightning, tensorboard_events (the
readers) → sources (which reader) → steps, grid → write (the folder, `import_logs`).
"""

from nht_jax.results.import_logs.runs import parse_names
from nht_jax.results.import_logs.steps import parse_steps_policy
from nht_jax.results.import_logs.write import import_logs

# reachable here too, not public: the tests check the shared aliases and read a table's rows
from nht_jax.results.import_logs.runs import HPARAM_ALIASES as HPARAM_ALIASES, HPARAM_NAMES as HPARAM_NAMES
from nht_jax.results.import_logs.tables import read_rows as read_rows

__all__ = ["import_logs", "parse_names", "parse_steps_policy"]
