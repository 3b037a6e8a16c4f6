"""The one table helper: rows → CSV (like summary.csv) and Markdown, for every report that is a table."""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from nht_jax.analysis.tables import Tabular, csv_text, markdown_table


class Score(NamedTuple):
    S: float
    reason: str


@dataclass(frozen=True)
class Report(Tabular):
    runs: tuple
    info: tuple


@dataclass(frozen=True)
class Shown(Report):
    def shown(self):
        return ["run", "S"]


RUNS = (Score(0.51234567, ""), Score(np.nan, "no peak | flat"))
INFO = ({"run": 0, "weight_decay": 0.1, "regime": "intermediate"}, {"run": 1, "weight_decay": 1.0, "regime": "weak"})


def test_default_rows_are_each_runs_info_beside_its_fields():
    assert Report(RUNS, INFO).rows() == [
        {**INFO[0], "S": 0.51234567, "reason": ""},
        {**INFO[1], "S": RUNS[1].S, "reason": "no peak | flat"},
    ]


def test_csv_keeps_every_column_and_writes_nan_as_an_empty_cell():
    assert Report(RUNS, INFO).csv() == (
        "run,weight_decay,regime,S,reason\n0,0.1,intermediate,0.512346,\n1,1,weak,,no peak | flat\n"
    )
    assert csv_text([{"a": 1}, {"a": 2, "b": 3}]) == "a,b\n1,\n2,3\n" and csv_text([]) == ""


def test_markdown_shows_the_chosen_columns_nan_as_a_dash_and_escapes_pipes():
    assert Report(RUNS, INFO).table() == (
        "| run | weight_decay | regime | S | reason |\n|---|---|---|---|---|\n"
        "| 0 | 0.1 | intermediate | 0.5123 |  |\n"
        "| 1 | 1 | weak | – | no peak \\| flat |\n"
    )
    assert Shown(RUNS, INFO).table() == "| run | S |\n|---|---|\n| 0 | 0.5123 |\n| 1 | – |\n"
    assert Report((), ()).table() == markdown_table([]) == "(no rows)\n"
