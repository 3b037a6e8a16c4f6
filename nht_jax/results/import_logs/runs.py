"""One run as read, and how the logs' names and values become nht's: the model every reader fills (the package
docstring's Names and Values)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from nht_jax.base.aliases import HPARAM_ALIASES, lookup
from nht_jax.base.errors import ConfigError, check
from nht_jax.results import folder as results
from nht_jax.results.export import metric_of_tracker_name

HPARAM_PREFIX = "hparam/"

METRIC_ALIASES = {
    "train_acc": ("train_acc", "train_accuracy", "train/acc", "train/accuracy", "acc/train", "accuracy/train"),
    "test_acc": (
        "test_acc",
        "test_accuracy",
        "val_acc",
        "val_accuracy",
        "valid_acc",
        "eval_acc",
        "test/acc",
        "test/accuracy",
        "val/acc",
        "val/accuracy",
        "acc/test",
        "acc/val",
        "accuracy/test",
        "accuracy/val",
    ),
    "train_loss": ("train_loss", "train/loss", "loss/train", "loss"),
    "test_loss": ("test_loss", "val_loss", "valid_loss", "eval_loss", "test/loss", "val/loss", "loss/test", "loss/val"),
    "norm_sq": (
        "norm_sq",
        "param_norm_sq",
        "params_norm_sq",
        "parameter_norm_sq",
        "weight_norm_squared",
        "l2_norm_sq",
        "theta_norm_sq",
        "norm_squared",
    ),
}
"""Metric → the logged names (lower case) that mean it; any other metric name is kept as logged."""

SQUARED_ALIASES = ("param_norm", "params_norm", "parameter_norm", "l2_norm", "theta_norm")
"""Logged names of ‖θ‖ (not squared): imported as norm_sq = value²."""


HPARAM_NAMES, METRIC_NAMES = lookup(HPARAM_ALIASES), lookup(METRIC_ALIASES)


@dataclass
class Run:
    """One run as read: its hyperparameters {name: value} and its series {metric: {step: value}}; `where` says where
    it was first seen (for messages)."""

    where: str
    hparams: dict = field(default_factory=dict)
    series: dict = field(default_factory=dict)
    squared: set = field(default_factory=set)
    """The logged names of ‖θ‖ this run's norm_sq was squared from (said in a note)."""
    sessions: dict = field(default_factory=dict)
    """The add_hparams subfolders that gave this run's hyperparameters: {folder: the metric_dict tags left out}."""


@dataclass(frozen=True)
class Names:
    """How logged names become nht's: `renames` {logged: new} first, `ignored` names dropped, then the aliases."""

    renames: dict = field(default_factory=dict)
    ignored: frozenset = frozenset()

    def raw(self, name: str) -> str | None:
        name = self.renames.get(name, name).strip()
        return None if name in self.ignored or name.lower() in self.ignored else name

    def hparam(self, name: str) -> str:
        """The axis a hyperparameter name means, else the name itself (an unknown hyperparameter)."""
        bare = name[len(HPARAM_PREFIX) :] if name.lower().startswith(HPARAM_PREFIX) else name
        return HPARAM_NAMES.get(bare.lower(), bare)

    def metric(self, name: str) -> tuple[str, bool]:
        """(nht's metric name, whether the logged value is ‖θ‖ and must be squared). A name under a section of
        `nht export` (`train/…`, `norm/…`, `status/finite`, …) that is no alias is the metric it stands for
        (`export.metric_of_tracker_name`), so an export imports back as it was."""
        low = name.lower()
        if low in SQUARED_ALIASES:
            return "norm_sq", True
        return METRIC_NAMES.get(low) or metric_of_tracker_name(name) or name, False


def named_like_a_norm(name: str) -> bool:
    """Whether a logged name reads as a norm ‖·‖ rather than its square: its last part (after / or .) ends in
    "norm" (`weights/l2_norm`, `param_norm`, `grad_norm`; not `norm_sq`, `param_norm_squared`)."""
    return re.split(r"[/.]", name.strip().lower())[-1].endswith("norm")


def parse_names(renames=(), ignored=()) -> Names:
    """`Names` from --rename OLD=NEW and --ignore NAME arguments. A name that reads as a norm renamed to norm_sq
    (‖θ‖²) is refused: it would be taken as the square it is not (rename it to param_norm to square it)."""
    table = {}
    for text in renames:
        old, sep, new = text.partition("=")
        check(
            sep and old.strip() and new.strip(),
            f"--rename expects OLD=NEW (e.g. --rename val_top1=test_acc), got {text!r}",
        )
        old, new = old.strip(), new.strip()
        check(
            not (new.lower() == "norm_sq" and named_like_a_norm(old)),
            f"--rename {old}=norm_sq: '{old}' is named like a norm ‖θ‖, but norm_sq is ‖θ‖², the squared norm. "
            f"Pass --rename {old}=param_norm to import its square (norm_sq = value²), or --rename "
            f"{old}=param_norm_sq if it already holds ‖θ‖²",
        )
        table[old] = new
    return Names(table, frozenset(ignored) | frozenset(n.lower() for n in ignored))


# ----------------------------------------------------------------------------- values


def number(text, where: str, column: str) -> float | None:
    """A logged value: None when not logged (empty cell, JSON null), else a float (nan / inf allowed).

    Args:
        text: the logged cell (a text, a number or None).
        where: the row's place in the logs, for error messages.
        column: the column's name, for error messages.

    Returns:
        The value, or None.
    """
    if text is None or (isinstance(text, str) and text.strip() == ""):
        return None
    if isinstance(text, bool):
        return float(text)
    try:
        return float(text)
    except (TypeError, ValueError):
        raise ConfigError(
            f"{where}, column '{column}': {text!r} is not a number. Log numbers (nan for a diverged "
            f"value; an empty cell for one not logged), or drop the column with --ignore "
            f"{column}"
        ) from None


def step_of(text, where: str, column: str) -> int:
    value = number(text, where, column)
    check(
        value is not None and math.isfinite(value) and value >= 0 and float(value).is_integer(),
        f"{where}, column '{column}': step {text!r} is not a whole number ≥ 0; every row needs its step",
    )
    return int(value)


def hparam_value(text, where: str, column: str):
    """A hyperparameter cell: a number when it reads as one (an int when integral text), else the text."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return text
    return results.number_or_text("" if text is None else str(text).strip())


def add_hparams(run: Run, values: dict, where: str) -> None:
    """Record a row's hyperparameters in its run; a value that changes within the run is refused.

    Args:
        run: the run.
        values: {hyperparameter: value} of the row.
        where: the row's place in the logs, for error messages.
    """
    for name, value in values.items():
        before = run.hparams.setdefault(name, value)
        if before != value and not (
            isinstance(before, float) and isinstance(value, float) and math.isnan(before) and math.isnan(value)
        ):
            raise ConfigError(
                f"{where}, column '{name}': {value!r}, but {run.where} gave this run {before!r}: a "
                f"hyperparameter is constant within a run. Give each run its own run id, or drop the "
                f"column with --ignore {name}"
            )


def add_value(run: Run, metric: str, step: int, value: float, where: str, squared_from: str | None = None) -> None:
    """Record one logged value; `squared_from`: the logged name of ‖θ‖ whose square this norm_sq value is."""
    series = run.series.setdefault(metric, {})
    if step in series:
        raise ConfigError(
            f"{where}: run {run_label(run)} logged {metric} at step {step} twice (first {series[step][1]}). "
            f"Keep one value per (run, step, metric): remove the repeat, or give the runs distinct "
            f"run ids"
        )
    series[step] = (value * value if squared_from else value, where)
    if squared_from:
        run.squared.add(squared_from)


def run_label(run: Run) -> str:
    return run.hparams.get("__id__", run.where)


def shifted(runs: dict[str, Run], offset: int) -> dict[str, Run]:
    """The runs with `offset` added to every logged step (a step made negative is refused)."""
    for run in runs.values():
        for metric, series in run.series.items():
            moved = {}
            for step, (value, where) in series.items():
                check(step + offset >= 0, f"{where}: step {step} with --step-offset {offset} is negative")
                moved[step + offset] = (value, where)
            run.series[metric] = moved
    return runs


__all__ = ["Names", "Run", "add_hparams", "number"]
