"""Domain "imported": runs trained by another codebase, brought in by `nht import` (`nht_jax.results.import_logs`).

It trains nothing: it declares what the logs hold, so that `nht analyze`, `nht report` and `nht paper bound` read an
imported results folder like any other. Its [task] table names the source and the metrics found (`task.metrics`,
shared names once the importer mapped the aliases), its [model] is the stand-in "external" (free-text
`description`). ‖θ‖² (`norm_sq`) and `finite` are required; the headline metric is test accuracy. Axes: the common
ones and, where the logs vary or name them, those the built-in domains and analyses know (train_fraction, rho,
width, temperature, null_sq, row_offset, sigma2).

What each analysis needs, the contract and describing the training: docs/guides/import.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nht_jax.base.errors import ConfigError, check
from nht_jax.domains import Domain
from nht_jax.engine.grid import Axis, number_check, positive_int_check

REQUIRED = ("norm_sq", "finite")
"""Metrics every imported folder holds: the summary rows are computed from them."""

HEADLINE = "test_acc"


@dataclass(frozen=True)
class ImportedSettings:
    """[task] name = "imported": `source` (what was imported) and `metrics` (the metrics its runs logged)."""

    name: Literal["imported"] = "imported"
    source: str = ""
    metrics: tuple[str, ...] = ("train_acc", "test_acc", "norm_sq", "finite")


@dataclass(frozen=True)
class ExternalModelSettings:
    """[model] name = "external": the model another codebase trained (free-text `description`)."""

    name: Literal["external"] = "external"
    description: str = ""


def validate(config) -> None:
    missing = [name for name in REQUIRED if name not in config.task.metrics]
    check(
        not missing,
        f"task.metrics = {list(config.task.metrics)} lacks {', '.join(missing)}: an imported folder "
        f"holds ‖θ‖² (norm_sq) and the finite flag of every run (`nht import` adds finite)",
    )
    check(
        HEADLINE in config.task.metrics,
        f"task.metrics = {list(config.task.metrics)} lacks {HEADLINE}, the headline metric of imported runs; "
        f"log held-out accuracy as test_acc (aliases: docs/guides/import.md)",
    )
    check(
        len(set(config.task.metrics)) == len(config.task.metrics),
        f"task.metrics = {list(config.task.metrics)} repeats a name; list each metric once",
    )


def trains_nothing(config, data=None):
    raise ConfigError(
        "task 'imported' holds runs that another codebase trained (`nht import`): there is nothing "
        "to train. Analyse the folder with `nht analyze`, `nht report` or `nht paper bound`, or train a "
        "built-in domain with `nht run`."
    )


def summary(config) -> tuple[str, ...]:
    """Final values in each summary row: every held-out or other accuracy and loss but the training ones
    (`summarize_run` adds final_train_acc and final_train_loss itself)."""
    return tuple(
        name
        for name in config.task.metrics
        if name.endswith(("_acc", "_loss")) and name not in ("train_acc", "train_loss") and "/" not in name
    )


def non_negative(name: str):
    return number_check(name, lambda v: v >= 0, "must be ≥ 0")


AXES = {
    axis.name: axis
    for axis in (
        Axis(
            "train_fraction",
            (),
            "train fraction",
            optional=True,
            check=number_check("train_fraction", lambda v: 0 < v <= 1, "must lie in (0, 1]"),
            meaning="fraction of the examples used for training",
        ),
        Axis(
            "rho",
            (),
            "spurious correlation ρ",
            optional=True,
            check=number_check("rho", lambda v: 0 <= v <= 1, "must lie in [0, 1]"),
            meaning="ρ, how often the spurious feature agrees with the label",
        ),
        Axis(
            "width",
            (),
            "width",
            dtype="int32",
            log=True,
            optional=True,
            check=positive_int_check("width"),
            meaning="the model's width (hidden units), as the other codebase set it",
        ),
        Axis(
            "temperature",
            (),
            "output temperature τ",
            log=True,
            optional=True,
            identity=1.0,
            check=number_check("temperature", lambda v: v > 0, "must be > 0"),
            meaning="τ, the logits divided by τ (an intervention: 1 changes nothing)",
        ),
        Axis(
            "null_sq",
            (),
            "null-space offset ‖n_0‖²",
            log=True,
            optional=True,
            check=non_negative("null_sq"),
            meaning="‖n_0‖², the squared null-space offset of the start (the toy models)",
        ),
        Axis(
            "row_offset",
            (),
            "row-space offset",
            optional=True,
            check=number_check("row_offset", lambda v: True, "must be a number"),
            meaning="the row-space offset of the start (the toy models)",
        ),
        Axis(
            "sigma2",
            (),
            "noise σ²",
            optional=True,
            check=non_negative("sigma2"),
            meaning="σ², the variance of the noise added at every step (the toy models)",
        ),
    )
}

DOMAIN = Domain(
    name="imported",
    settings=ImportedSettings,
    models={"external": ExternalModelSettings},
    default_model="external",
    axes=AXES,
    metrics={},
    headline_metric=HEADLINE,
    validate=validate,
    load_data=trains_nothing,
    make_trainer=trains_nothing,
    recorded=lambda config: frozenset(config.task.metrics),
    summary=summary,
)
