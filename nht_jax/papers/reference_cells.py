"""The follow-up papers' per-cell medians, as a cited reference table (reference_cells.csv beside this file).

Each row is one configuration cell of the authors' published per-seed data: the median over the seeds that
grokked of their T_grok, the same of the delay for a forked cell, the seed counts, and the source: repository,
commit and file path, computed by `cells_of` from their files (`nht_jax.results.followup_npz`); the files
themselves are not part of this project. `python -m nht_jax.papers.reference_cells CLONE …` recomputes the table
from clones of their repositories at the commits recorded (and refuses a clone at another commit).

The papers, repositories, commits and experiments tabled: docs/papers/follow-up-data.md, "Provenance of the
reference table"."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

from nht_jax.base.errors import ConfigError

TABLE = Path(__file__).with_name("reference_cells.csv")

CLAMP_PAPER = "clamp-law"
LOGIT_PAPER = "logit-scale"
SOURCES = {
    CLAMP_PAPER: (
        "ClevixLab/critical-norm-grokking",
        "96587b96058796d1592a5b7a256d9d01c30237ba",
        ("efflr", "pscan", "denserho", "tfnoln_long"),
    ),
    LOGIT_PAPER: (
        "ClevixLab/grokking-logit-scale",
        "e29d08d1c154dfa4eb2744bac39bba6eef13221b",
        ("samestate", "collapse"),
    ),
}
"""paper → (repository, commit read, experiments tabled)."""

COLUMNS = (
    "paper",
    "experiment",
    "p",
    "arm",
    "rho",
    "lr",
    "wd",
    "tau",
    "t_fork",
    "wc",
    "seeds",
    "grokked",
    "median_T_grok",
    "median_delay",
    "repository",
    "commit",
    "path",
    "norm_at_grok",
)


class ReferenceCell(NamedTuple):
    """One row of the table. median_T_grok / median_delay: NaN when no seed grokked."""

    paper: str
    experiment: str
    p: int
    arm: str
    rho: float
    lr: float
    wd: float
    tau: float
    t_fork: int
    wc: float
    seeds: int
    grokked: int
    median_T_grok: float
    median_delay: float
    repository: str
    commit: str
    path: str
    norm_at_grok: float = float("nan")
    """The mean ‖θ‖ at T_grok over the seeds that grokked (the cell's own W_c; NaN where not logged)."""

    @property
    def source(self) -> str:
        """repository@commit:path, the citation of this cell."""
        return f"{self.repository}@{self.commit[:7]}:{self.path}"


def cell_row(cell, paper: str) -> ReferenceCell:
    """The reference row of one `followup_npz.SeedCell`: medians over the seeds that grokked."""
    repository, commit, _ = SOURCES[paper]
    grokked = cell.grokked
    return ReferenceCell(
        paper,
        cell.experiment,
        cell.p,
        cell.arm,
        round(cell.rho, 4),
        cell.lr,
        cell.wd,
        round(cell.tau, 4),
        cell.t_fork,
        round(cell.wc, 4),
        len(cell.t_grok),
        int(grokked.size),
        float(np.median(grokked)) if grokked.size else float("nan"),
        float(np.median(cell.delays)) if grokked.size else float("nan"),
        repository,
        commit,
        cell.path,
        round(cell.critical_norm, 4),
    )


def cells_of(root, paper: str) -> list[ReferenceCell]:
    """The reference rows of a clone (or a folder in their layout) of a paper's repository: its tabled experiments'
    cells.

    Args:
        root: the clone's folder.
        paper: the paper, a key of SOURCES.

    Returns:
        The ReferenceCells.
    """
    from nht_jax.results.followup_npz import read_tree

    return [cell_row(c, paper) for c in read_tree(root, SOURCES[paper][2])]


def table_text(rows: list[ReferenceCell]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in rows:
        writer.writerow(
            ["" if isinstance(v, float) and np.isnan(v) else (f"{v:g}" if isinstance(v, float) else v) for v in r]
        )
    return out.getvalue()


def parse(text: str) -> list[ReferenceCell]:
    """Rows of a table in `table_text`'s format."""
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise ConfigError(f"reference table columns {reader.fieldnames}, expected {list(COLUMNS)}")
    floats = {"rho", "lr", "wd", "tau", "wc", "median_T_grok", "median_delay", "norm_at_grok"}
    ints = {"p", "t_fork", "seeds", "grokked"}
    return [
        ReferenceCell(
            **{
                k: (float(v) if v != "" else float("nan")) if k in floats else int(v) if k in ints else v
                for k, v in row.items()
            }
        )
        for row in reader
    ]


def load(path: Path = TABLE) -> list[ReferenceCell]:
    """The shipped reference table.

    Args:
        path: the table's file.

    Returns:
        The ReferenceCells.
    """
    return parse(Path(path).read_text(encoding="utf-8"))


def find(
    rows: list[ReferenceCell],
    experiment: str,
    p: int,
    arm: str,
    rho: float | None = None,
    lr: float | None = None,
    tau: float | None = None,
) -> ReferenceCell:
    """The one row of `experiment` at p, arm (and ρ, η, τ where given); ConfigError when none or several."""
    hits = [
        r
        for r in rows
        if r.experiment == experiment
        and r.p == p
        and r.arm == arm
        and (rho is None or np.isclose(r.rho, rho))
        and (lr is None or np.isclose(r.lr, lr))
        and (tau is None or np.isclose(r.tau, tau))
    ]
    if len(hits) != 1:
        raise ConfigError(f"{len(hits)} reference cells for {experiment} p={p} {arm} ρ={rho} η={lr} τ={tau}")
    return hits[0]


def clone_commit(root: Path) -> str | None:
    """The commit a git clone is at (None when `root` is no git work tree)."""
    try:
        return subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main(argv=None) -> int:
    """`python -m nht_jax.papers.reference_cells CLAMP_CLONE LOGIT_CLONE [--out FILE]`: recompute the table from
    clones of the two repositories at the cited commits (FILE defaults to the shipped table)."""
    import argparse

    from nht_jax.base.atomic import atomic_write_text

    parser = argparse.ArgumentParser(prog="python -m nht_jax.papers.reference_cells", description=main.__doc__)
    parser.add_argument("clamp_clone", help="a clone of ClevixLab/critical-norm-grokking")
    parser.add_argument("logit_clone", help="a clone of ClevixLab/grokking-logit-scale")
    parser.add_argument("--out", default=str(TABLE), help="where to write the table (default: the shipped one)")
    args = parser.parse_args(argv)
    try:
        rows = []
        for paper, root in ((CLAMP_PAPER, Path(args.clamp_clone)), (LOGIT_PAPER, Path(args.logit_clone))):
            at = clone_commit(root)
            if at is not None and at != SOURCES[paper][1]:
                raise ConfigError(
                    f"{root} is at commit {at}, the table cites {SOURCES[paper][1]}: check out that "
                    f"commit (or change SOURCES after reading the new data)"
                )
            rows += cells_of(root, paper)
        atomic_write_text(Path(args.out), table_text(rows))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"{len(rows)} cells → {args.out}")
    return 0


__all__ = ["cells_of", "load"]


if __name__ == "__main__":
    sys.exit(main())
