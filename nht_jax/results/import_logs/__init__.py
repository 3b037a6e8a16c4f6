"""Other codebases' logs in: `nht import LOGS --out DIR` writes a results folder (`nht_jax.results.folder`) of domain
"imported" (`nht_jax.domains.imported`) that `nht analyze`, `nht report` and `nht paper bound` read like one `nht run`
wrote.

LOGS may be a long or wide CSV / JSON-lines file, a TensorBoard folder or Lightning CSVLogger folders
(`sources.read_logs`); hyperparameters and metrics are matched against `HPARAM_ALIASES` and `runs.METRIC_ALIASES`
(a norm is never taken as ‖θ‖²), the runs share one step vector (`steps.shared_steps`: "exact", "common" or K),
and their values on each axis make the grid (`grid.grid_of`). Bad input is a ConfigError naming the file, the
line or tag, the column and the fix. Modules, lowest first: runs (the run as read, names, values) → tables,
lightning, tensorboard_events (the readers) → sources (which reader) → steps, grid → write (the folder,
`import_logs`).

The contract (sources, names and aliases, steps, values, the grid, what each analysis needs): docs/guides/import.md."""

from nht_jax.results.import_logs.runs import parse_names
from nht_jax.results.import_logs.steps import parse_steps_policy
from nht_jax.results.import_logs.write import import_logs

# reachable here too, not public: the tests check the shared aliases and read a table's rows
from nht_jax.results.import_logs.runs import HPARAM_ALIASES as HPARAM_ALIASES, HPARAM_NAMES as HPARAM_NAMES
from nht_jax.results.import_logs.tables import read_rows as read_rows

__all__ = ["import_logs", "parse_names", "parse_steps_policy"]
