"""`nht analyze DIR`: every registered analysis (nht_jax.analysis.registry) of any results directory of any domain.

The analyses run in registry order (the six predictions, the delay-law fits and boundaries, the separation score,
the layer order, the delay predictor, structure, emergence, interventions, …), each after the ones it needs, each
with its options (`--set NAME.KEY=VALUE`, `options_from`); one whose `run` returns None does not apply and writes
nothing. Writes into DIR, atomically: analysis.md (the whole report) and each analysis's tables and figures. With
--partial (an unfinished sweep) every table, figure and the report say so, and analysis_partial.json marks the
files as partial (`nht_jax.results.partial_analysis`).

The files it writes: docs/guides/analyse.md; the definitions: docs/methods/analysis.md; unfinished folders:
docs/guides/run.md."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from nht_jax.analysis import registry
from nht_jax.analysis.bootstrap import renamed_error
from nht_jax.analysis.record import Analysis, unmet_line
from nht_jax.base.atomic import atomic_write_text, remove_stale_temporaries
from nht_jax.base.errors import ConfigError, check
from nht_jax.base.schema import build, did_you_mean, parse_override, toml_value
from nht_jax.results import lock, partial_analysis
from nht_jax.results.folder import Results, load_results, partial_note
from nht_jax.figures.style import noting, output_names


class AnalyzeOptions(Mapping):
    """The options of the analyses by name (`options.fits` or `options["fits"]`); an analysis without an entry
    gets its defaults (`of`)."""

    def __init__(self, sections: Mapping | None = None):
        self._sections = dict(sections or {})

    def of(self, analysis: Analysis):
        """The options of `analysis`: its entry, else its defaults."""
        return self._sections[analysis.name] if analysis.name in self._sections else analysis.options()

    def __getitem__(self, name: str):
        if name in self._sections:
            return self._sections[name]
        if name in registry.ANALYSES:
            return registry.ANALYSES[name].options()
        raise KeyError(name)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no analysis '{name}'; registered: {', '.join(registry.ANALYSES)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*registry.ANALYSES, *self._sections]))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"AnalyzeOptions({self._sections!r})"


def parse_option(text: str, names) -> tuple[str, str, object]:
    """'name.key=value' → (analysis name, key, value parsed as TOML); an unknown analysis, a path that is not
    NAME.KEY or an old spelling of a bootstrap option fails with what exists."""
    key = text.split("=", 1)[0].strip()
    section = key.split(".")[0]
    if "=" in text and "." in key and section not in names:
        raise ConfigError(
            f"unknown analysis '{section}' in --set {text}.{did_you_mean(section, names)} "
            f"Analyses (the sections of --set): {', '.join(names)}"
        )
    path, value = parse_override(text, tuple(names))
    check(len(path) == 2, f"nht analyze --set expects NAME.KEY=VALUE (e.g. fits.n_bootstrap=200), got {text!r}")
    error = renamed_error(*path)
    if error is not None:
        raise error
    return path[0], path[1], value


def options_from(overrides=()) -> AnalyzeOptions:
    """AnalyzeOptions of every registered analysis from `name.key=value` strings; an unknown analysis or key, an
    old spelling and a bad value raise ConfigError with what exists."""
    tables: dict[str, dict] = {name: {} for name in registry.ANALYSES}
    for text in overrides:
        name, key, value = parse_option(text, list(registry.ANALYSES))
        tables[name][key] = value
    return built_options(tables)


def keyword_options(options: Mapping) -> AnalyzeOptions:
    """AnalyzeOptions from Python keywords {analysis name: {key: value}} (`Results.analyze(fits={"n_bootstrap":
    200})`, the same names as `--set fits.n_bootstrap=200` and a scale's `analyze.fits.n_bootstrap`): an unknown
    analysis, an old spelling, an unknown key and a bad value raise the ConfigError `options_from` raises."""
    names = list(registry.ANALYSES)
    tables: dict[str, dict] = {name: {} for name in names}
    for name, table in options.items():
        if name not in names:
            raise ConfigError(
                f"unknown analysis '{name}'.{did_you_mean(name, names)} Analyses (the option "
                f"sections): {', '.join(names)}"
            )
        check(
            isinstance(table, Mapping),
            f'{name}= expects a dict of its options, e.g. {name}={{"key": value}} '
            f"(as --set {name}.key=value), got {table!r}",
        )
        for key, value in table.items():
            error = renamed_error(name, key)
            if error is not None:
                raise error
            tables[name][key] = toml_value(value)
    return built_options(tables)


def built_options(tables: Mapping[str, Mapping]) -> AnalyzeOptions:
    """Each registered analysis's options built from its table ({} = its defaults); bad keys and values raise."""
    return AnalyzeOptions({name: build(a.options, tables.get(name, {}), name) for name, a in registry.ANALYSES.items()})


def analyze(path, options: AnalyzeOptions | None = None, partial: bool = False) -> dict:
    """Every registered analysis of the results directory `path`, written into it under its lock
    (nht_jax.results.lock).

    Args:
        path: the results folder.
        options: the analyses' options (None: the defaults).
        partial: analyse an unfinished sweep's folder on what it has logged so far, analysis.md and every figure
            marked (`nht_jax.results.folder`: unfinished folders).

    Returns:
        What `write_analysis` returns.
    """
    lock.raise_if_held(path, "nht analyze")
    res = load_results(path, partial=partial)
    with lock.hold(res.path, "nht analyze"):
        remove_stale_temporaries(res.path)  # a killed `nht analyze`'s half-written tables and figures
        with noting(partial_note(res)):
            return write_analysis(res, options)


def run_analyses(res: Results, options: AnalyzeOptions, analyses: tuple[Analysis, ...]) -> dict:
    """{name: report (None: does not apply)} of `analyses`, each run once, after the ones it needs."""
    by_name = {a.name: a for a in analyses}
    reports: dict = {}
    running: list[str] = []

    def run(a: Analysis):
        if a.name not in reports:
            check(a.name not in running, f"analyses need each other in a cycle: {' → '.join([*running, a.name])}")
            missing = [n for n in a.needs if n not in by_name]
            check(not missing, f"analysis {a.name} needs {', '.join(missing)}, which is not registered")
            running.append(a.name)
            needed = {n: run(by_name[n]) for n in a.needs}
            running.pop()
            reports[a.name] = None if a.unmet(res) else a.run(res, options.of(a), needed)
        return reports[a.name]

    for a in analyses:
        run(a)
    return {a.name: reports[a.name] for a in analyses}


def compose(res: Results, options: AnalyzeOptions | None = None) -> dict:
    """Every registered analysis of loaded results, nothing written (results in memory need no folder). Returns
    {"results", each analysis's name: its report (None: does not apply), "markdown": analysis.md's text,
    "summary": the parts `nht analyze` prints, "tables": {file name: CSV text} of the analyses that apply, in
    registry order, "applied": those analyses}."""
    options = AnalyzeOptions() if options is None else options
    analyses = registry.analyses()
    reports = run_analyses(res, options, analyses)
    applied = tuple(a for a in analyses if reports[a.name] is not None)
    header = f"# Analysis of {res.config.name} ({res.num_runs} runs, domain {res.domain.name})\n"
    if partial_note(res):  # an unfinished sweep read with --partial
        header += (
            f"\n> **{partial_note(res)}**: an unfinished sweep, analysed on what it has logged so far; "
            f"every number below may change when it finishes.\n"
        )
    unmet = [unmet_line(a, a.unmet(res)) for a in analyses if a.unmet(res)]
    if unmet:
        unmet = ["## Not run\n\n" + "\n".join(unmet) + "\n"]
    text = "\n".join([header, *(part for a in applied if (part := a.markdown(reports[a.name]))), *unmet])
    tables = {name: content for a in applied for name, content in a.tables(reports[a.name]).items()}
    if res.partial:  # every table carries the mark in its own columns (`nht_jax.results.partial_analysis`)
        tables = {name: partial_analysis.mark_csv(content, *res.partial) for name, content in tables.items()}
    summary = (header, *(part for a in applied if (part := a.summary(reports[a.name]))), *unmet)
    return {"results": res, **reports, "markdown": text, "summary": summary, "tables": tables, "applied": applied}


def write_analysis(res: Results, options: AnalyzeOptions | None = None) -> dict:
    """Run every registered analysis on loaded results (`compose`) and write analysis.md, then each analysis's
    tables, then its figures into res.path. Returns {"results", each analysis's name: its report (None: did not
    apply), "markdown": analysis.md's text, "summary": the parts `nht analyze` prints, "written": the files'
    names}, and compose's "tables" and "applied"."""
    composed = compose(res, options)
    had_partial = partial_analysis.marked(res.path) is not None
    if res.partial:  # the sidecar first: from here every analysis file of the folder counts as partial
        partial_analysis.begin_partial(res.path, *res.partial)
    atomic_write_text(res.path / "analysis.md", composed["markdown"])
    written = ["analysis.md"]
    for name, content in composed["tables"].items():
        atomic_write_text(res.path / name, content)
        written.append(name)
    for a in composed["applied"]:
        written += output_names(a.figures(res, composed[a.name], res.path))  # each figure in every format written
    finish = partial_analysis.finish_partial if res.partial else partial_analysis.finish_full
    finish(res.path, written, had_partial)  # an earlier partial analysis's files not replaced, then (full) its mark
    return {**composed, "written": tuple(written)}


__all__ = ["analyze"]
