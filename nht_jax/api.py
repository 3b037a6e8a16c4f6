"""The Python API, what `import nht_jax` offers: a configuration from keywords (`load`), a sweep from Python
(`sweep`), results that analyse themselves (`Results.analyze`) and the single-run function (`make_train`).

Everything here goes through the code of the commands: `load(..., train={"steps": 1000})` is
`nht run --set train.steps=1000`, `sweep` is `nht run` (`nht_jax.training.sweep.run_sweep`),
`Results.analyze(fits={...})` is `nht analyze --set fits.…`: the same overrides, checks and ConfigError lines, and
analysis options with one spelling everywhere. A sweep without a folder (`sweep(..., out=None)`) trains into a
temporary folder that is read back into memory and removed before `sweep` returns.

Examples and the spellings: docs/guides/run.md, "In Python"."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.base.schema import keyword_overrides
from nht_jax.training import live
from nht_jax.results import folder as results_folder

SECTIONS = experiment.SECTIONS + experiment.OPTIONAL_SECTIONS


def load(preset_or_config="default", overrides=(), scale: str | None = None, **settings) -> experiment.Config:
    """A validated configuration: a preset, a TOML file or a Config, with settings overridden.

    Resolved exactly as `nht run PRESET --scale SCALE --set …` resolves it: the scale's settings first, then the
    overrides, each checked where its section is built; a mistake is one ConfigError line naming the setting.

    Args:
        preset_or_config: a shipped preset's name (`nht presets` lists them), a TOML file's path, or a Config.
        overrides: `--set` texts, e.g. `["train.steps=1000"]` (applied before the keyword settings).
        scale: a `[scale.NAME]` table of the preset to apply first (not with a Config).
        **settings: one dict per section, e.g. `grid={"weight_decay": [0.05, 0.72], "seed": 0}`,
            `train={"steps": 1000}`, `optim={"after": [{"name": "norm_clamp"}]}`; also `name="..."`.

    Returns:
        nht_jax.Config: the configuration.

    Raises:
        ConfigError: an unknown section, key or value, with what exists.

    Examples:
        >>> config = nht_jax.load("default", grid={"weight_decay": [0.05, 0.72], "seed": 0},
        ...                       train={"steps": 500})
        >>> config.grid["weight_decay"], config.train.steps
        ((0.05, 0.72), 500)
    """
    items = [*overrides, *keyword_overrides(settings, SECTIONS)]
    if isinstance(preset_or_config, experiment.Config):
        if scale is not None:
            raise ConfigError(
                "scale= applies to a preset or a TOML file, not to a Config: load the "
                "preset with its scale, or pass the scale's settings as overrides"
            )
        return experiment.with_overrides(preset_or_config, items)
    return experiment.load(str(preset_or_config), items, scale)


def sweep(
    preset_or_config="default",
    out=None,
    *,
    scale: str | None = None,
    progress: bool = True,
    overwrite: bool = False,
    **settings,
) -> Results:
    """Train every run of a grid, as `nht run` does, and return its results.

    Args:
        preset_or_config: a preset's name, a TOML file's path or a Config (see `load`).
        out: the results folder to write (resumed when it holds this configuration's unfinished results, returned
            as it is when it holds them finished); None trains in memory and writes nothing (module docstring).
        scale: a `[scale.NAME]` table of the preset to apply first.
        progress: show the progress bar (on stderr).
        overwrite: replace the results of another configuration in `out` (as `nht run --overwrite`).
        **settings: settings by section, e.g. `grid={"weight_decay": [0.05, 0.72]}`, `train={"steps": 1000}`
            (see `load`).

    Returns:
        Results: the sweep's results (`path` is None for a sweep in memory).

    Raises:
        ConfigError: a bad setting, a configuration too large for this machine, a folder holding another
            configuration's results, or one another thread or process is writing; before anything trains.
        KeyboardInterrupt: Ctrl-C (from the main thread): the training stopped at its next boundary with a
            checkpoint; the line says where, and the same call with the same `out` resumes there.

    Examples:
        >>> res = nht_jax.sweep("default", grid={"weight_decay": [0.05, 0.72], "seed": 0},
        ...                     train={"steps": 500}, progress=False)
        >>> [row["regime"] for row in res.summary]
        ['weak', 'intermediate']
    """
    from nht_jax.training.sweep import run_sweep  # loads JAX

    config = load(preset_or_config, scale=scale, **settings)
    if out is not None:
        with stopping_on_ctrl_c(f"the same call (out={str(out)!r}) resumes from the checkpoint"):
            trained = run_sweep(config, Path(out), progress=progress, overwrite=overwrite)
        return None if trained is None else Results.of(trained)
    with (
        tempfile.TemporaryDirectory(prefix="nht-sweep-") as folder,
        stopping_on_ctrl_c("the sweep was in memory, so nothing is kept: pass out=DIR for a folder that resumes"),
    ):
        trained = run_sweep(config, Path(folder) / config.name, progress=progress)
        return None if trained is None else Results.of(trained, in_memory=True)


@contextlib.contextmanager
def stopping_on_ctrl_c(resume: str):
    """Ctrl-C (SIGINT, or SIGTERM, SIGHUP) while `sweep` trains, called from the main thread: the training stops at
    its next boundary between compiled calls with a checkpoint, as `nht run` does (`nht_jax.training.signals`;
    Python's own KeyboardInterrupt, raised wherever the main thread is, can land inside JAX's C++ code and
    leaves no checkpoint), then raises KeyboardInterrupt whose one line says where it stopped and `resume`. From
    another thread nothing is installed (signals reach the main thread only)."""
    from nht_jax.training.signals import Stopped, signal_name, stop_on_signals

    with stop_on_signals() as stops:
        try:
            yield
        except Stopped as e:
            where = e.text.partition("; run the same command again")[0]  # (the command's words; here `resume`)
            raise KeyboardInterrupt(f"{where}; {resume}") from None
    if stops.received:  # after the last compiled call: the results were written
        raise KeyboardInterrupt(
            f"{signal_name(stops.received[0])} received after the last compiled call: the "
            f"results are complete; {resume}"
        )


def load_results(path, allow_imports=(), partial: bool = False) -> Results:
    """Read a results folder (written by `nht run`, `nht_jax.sweep` or `nht import`).

    Args:
        path: the folder.
        allow_imports: modules outside the package its config.toml may name and that may be imported to read it
            (installed plugins need none).
        partial: an unfinished sweep's folder (stopped before its end) gives what it has logged so far, with
            `Results.partial` = (steps logged, steps planned); without it such a folder is an error saying how to
            resume.

    Returns:
        Results: the folder's results.

    Raises:
        ConfigError: the folder is missing, unfinished or damaged (the line says which file and what to do).

    Examples:
        >>> res = nht_jax.load_results("runs/out/default")
        >>> res.to_xarray().final_test_acc
    """
    return Results.of(results_folder.load_results(path, allow_imports, partial=partial))


def make_train(config, data=None):
    """The pure single-run function of a configuration.

    Args:
        config: a Config without static grid axes (`load`).
        data: the domain's data (loaded from the configuration when None).

    Returns:
        train(hparams, key=None) -> (state, metrics): one run trained for `train.steps` steps; hparams is one
        run's grid values ({axis: scalar}), key defaults to PRNGKey(hparams["seed"]). It is a pure JAX function:
        `jax.jit(jax.vmap(train))(config.runs())` trains the whole grid.

    Examples:
        >>> config = nht_jax.load("default", grid={"weight_decay": 0.72, "seed": 0})
        >>> train = nht_jax.make_train(config)
        >>> state, metrics = train({k: v[0] for k, v in config.runs().items()})
    """
    return experiment.build_trainer(config, data).train


class Results(results_folder.Results):
    """The results of a sweep (`nht_jax.results.folder.Results`) that can also analyse themselves.

    Returned by `nht_jax.sweep` and `nht_jax.load_results`; every attribute and method of a results folder's
    `Results` (`to_xarray`, `to_pandas`, `select`, `as_grid`), plus `analyze`. Runs are in grid order:
    `summary[i]`, `metrics[name][i]` and `hparams[axis][i]` are run i.

    Attributes:
        path: the results folder, or None for a sweep in memory.
        config: the fully resolved configuration (`nht_jax.Config`).
        steps: (logs,) the logged steps.
        metrics: {name: (runs, logs) array} every recorded metric (`layer_norm_sq/head`: a family's member).
        hparams: {axis: (runs,) array} each run's grid value.
        axes: {axis: values} the grid's axes as configured.
        summary: one dict per run: the axes, `regime`, `T_fit`, `T_transition`, `delay`, …
        meta: how and where the sweep ran (meta.json).
        stopped_step: (runs,) where each run stopped with an `stop.rule` (NaN: never), else None.

    Examples:
        >>> res = nht_jax.sweep("default", grid={"weight_decay": [0.05, 0.72], "seed": 0},
        ...                     train={"steps": 500}, progress=False)
        >>> res.to_xarray().test_acc.dims
        ('weight_decay', 'step')
        >>> res.analyze().table("predictions.csv")
    """

    @classmethod
    def of(cls, res: results_folder.Results, in_memory: bool = False) -> "Results":
        """These results as `Results` (the same arrays, not copied); in_memory: to outlive their folder (path None,
        no manifest of files in meta, the folder's live_history.csv kept as `live_history`)."""
        fields = {f.name: getattr(res, f.name) for f in dataclasses.fields(res)}
        if in_memory:  # what the analyses read from the folder besides the results: the live forecasts
            fields.update(
                path=None,
                meta={k: v for k, v in res.meta.items() if k != "files"},
                live_history=live.read_csv(res.path / live.LIVE_HISTORY),
            )
        return cls(**fields)

    def analyze(self, write: bool = False, **options) -> Analysis:
        """Every analysis of `nht analyze` on these results.

        Args:
            write: also write what `nht analyze` writes (analysis.md, the tables, the figures) into the results
                folder, under its lock; needs a folder (not a sweep in memory). Without it nothing is written.
            **options: options by analysis, the same names as `nht analyze --set NAME.KEY=VALUE`, e.g.
                `fits={"n_bootstrap": 200}`.

        Returns:
            Analysis: the reports, analysis.md's text and the tables.

        Raises:
            ConfigError: an unknown analysis or option, or write=True without a folder.

        Examples:
            >>> report = res.analyze(fits={"n_bootstrap": 200})
            >>> print(report.markdown)
            >>> report.table("predictions.csv")
        """
        from nht_jax.analysis import analyze as analysis

        chosen = analysis.keyword_options(options)
        if not write:
            return Analysis.of(analysis.compose(self, chosen))
        if self.path is None:
            raise ConfigError(
                "analyze(write=True) writes into the results folder, and these results "
                "were trained in memory: run nht_jax.sweep(..., out=FOLDER) to keep them, "
                "or analyze without write=True"
            )
        return Analysis.of(analysis.analyze(self.path, chosen))


@dataclass(frozen=True)
class Analysis:
    """What `Results.analyze` returns: each analysis's report and the text `nht analyze` writes.

    Attributes:
        reports: {analysis name: its report}; None where an analysis does not apply to these results.
        markdown: analysis.md's text (a Jupyter cell shows it rendered).
        tables: {file name: CSV text} of the tables `nht analyze` writes (predictions.csv, delay_fits.csv, …).
        summary: the lines `nht analyze` prints.
        written: the files written into the folder (empty unless `analyze(write=True)`).

    Examples:
        >>> report = res.analyze()
        >>> report.reports["predictions"]
        >>> report.table("predictions.csv")
    """

    reports: dict
    markdown: str
    tables: dict
    summary: str
    written: tuple = ()

    @classmethod
    def of(cls, composed: dict) -> "Analysis":
        """From `nht_jax.analysis.analyze.compose`'s dict."""
        extra = {"results", "markdown", "summary", "tables", "applied", "written"}
        return cls(
            reports={k: v for k, v in composed.items() if k not in extra},
            markdown=composed["markdown"],
            tables=dict(composed["tables"]),
            summary="\n".join(composed["summary"]),
            written=tuple(composed.get("written", ())),
        )

    def table(self, name: str):
        """One table as a pandas DataFrame (needs the `xarray` extra, which installs pandas).

        Args:
            name: its file name, e.g. "predictions.csv" (`tables` lists them).

        Returns:
            pandas.DataFrame.
        """
        from nht_jax.results.export import require

        if name not in self.tables:
            raise ConfigError(f"no table {name!r} in this analysis; its tables: {', '.join(self.tables) or 'none'}")
        return require("pandas", "Analysis.table()").read_csv(io.StringIO(self.tables[name]))

    def _repr_markdown_(self) -> str:
        return self.markdown


__all__ = ["Analysis", "Results", "load", "load_results", "make_train", "sweep"]
