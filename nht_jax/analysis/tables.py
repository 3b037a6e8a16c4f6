"""Tables of the analyses: Markdown for reports, CSV like summary.csv (NaN as an empty cell), and `Tabular`, the
one place a report that is a table gets its CSV file and its Markdown table from its rows."""

from __future__ import annotations

import csv
import io

import numpy as np

from nht_jax.results.folder import csv_value


def fmt(value) -> str:
    """A number to 3 significant digits, NaN or None as "–".

    Args:
        value: the number, or None.

    Returns:
        The text.
    """
    return "–" if value is None or not np.isfinite(value) else f"{value:.3g}"


def cell(value) -> str:
    """A Markdown cell: floats to 4 significant digits, NaN as "–", pipes escaped.

    Args:
        value: the value.

    Returns:
        The cell's text.
    """
    if isinstance(value, (float, np.floating)):
        return "–" if np.isnan(value) else f"{value:.4g}"
    return str(value).replace("|", "\\|")


def markdown_table(rows: list[dict], columns: list[str] | None = None) -> str:
    """A Markdown table of dict rows: floats to 4 significant digits, NaN as "–".

    Args:
        rows: the rows.
        columns: the columns (None: the first row's keys).

    Returns:
        The Markdown, "(no rows)" without rows.
    """
    if not rows:
        return "(no rows)\n"
    columns = columns or list(rows[0])

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def csv_text(rows: list[dict]) -> str:
    """CSV of dict rows (columns: every key, in order of first appearance), cells as in summary.csv
    (`nht_jax.results.folder.csv_value`: NaN as an empty cell).

    Args:
        rows: the rows.

    Returns:
        The CSV text, "" without rows.
    """
    if not rows:
        return ""
    buffer = io.StringIO()
    columns = list(dict.fromkeys(k for row in rows for k in row))
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_value(v) for k, v in row.items()})
    return buffer.getvalue()


class Tabular:
    """A report that is one table, one dict per row: it defines `rows()` and gets `csv()` (every column, cells as
    in summary.csv) and `table()` (Markdown, the columns of `shown()`, every column when None).

    The default `rows()` is one row per run: the run's leading columns `self.info[i]` (`series.run_info`) beside
    the fields of its NamedTuple `self.runs[i]`.
    """

    def rows(self) -> list[dict]:
        return [{**info, **run._asdict()} for info, run in zip(self.info, self.runs)]

    def shown(self) -> list[str] | None:
        return None

    def csv(self) -> str:
        return csv_text(self.rows())

    def table(self) -> str:
        return markdown_table(self.rows(), self.shown())


__all__ = ["Tabular", "cell", "csv_text", "fmt", "markdown_table"]
