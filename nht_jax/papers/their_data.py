"""Our analyses on the clamp-law paper's per-seed files: do our fits give their α on their runs?

`python -m nht_jax.papers.their_data CLONE [--out FILE] [--n-bootstrap N]` reads a clone of
ClevixLab/critical-norm-grokking (nht_jax.results.followup_npz: T_grok per seed of every cell) and prints, as a
Markdown table (and FILE as CSV), the shared α (the paper's estimator, `cells.fit_rho`), α per p and the dense α by
our own delay-law line fit (`nht_jax.analysis.fits.fit_line`) over single seeds, and α₂ of the transformer without
LayerNorm, each beside the paper's number. Seeds that did not grok are left out, as the papers do. Numbers only;
nothing of theirs is copied into the project.

Each estimate and what it found: docs/papers/follow-up-data.md, "Our fits on their data"."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from nht_jax.base.errors import ConfigError
from nht_jax.papers.cells import fit_rho
from nht_jax.results.followup_npz import SeedCell, read_tree

RHOS = (0.85, 1.0, 1.15)


def shared_cells(cells: list[SeedCell]) -> list[SeedCell]:
    """pscan's clamp cells at ρ ∈ RHOS of the moduli whose every such cell groks in more than half its seeds."""
    pick = [
        c for c in cells if c.experiment == "pscan" and c.arm == "clamp" and any(np.isclose(c.rho, r) for r in RHOS)
    ]
    ok = [
        p
        for p in sorted({c.p for c in pick})
        if sum(2 * c.grokked.size > len(c.t_grok) for c in pick if c.p == p) == len(RHOS)
    ]
    return [c for c in pick if c.p in ok]


def shared_alpha(cells: list[SeedCell], n_bootstrap: int, seed: int = 0) -> dict:
    """The shared α and R² of the medians, and the percentile interval over seed resamples within cells.

    Args:
        cells: the cells fitted.
        n_bootstrap: seed resamples.
        seed: the bootstrap's random seed.

    Returns:
        {quantity, value (α), lo, hi, r2, cells, seeds, over}.
    """

    def fit(samples):
        return fit_rho([c.rho for c in cells], np.log([np.median(s) for s in samples]), [c.p for c in cells])

    alpha, r2 = fit([c.grokked for c in cells])
    rng = np.random.default_rng(seed)
    draws = [fit([rng.choice(c.grokked, c.grokked.size) for c in cells])[0] for _ in range(n_bootstrap)]
    lo, hi = np.percentile(draws, [2.5, 97.5]) if draws else (np.nan, np.nan)
    return {
        "quantity": "shared α (medians, per-p intercepts)",
        "value": alpha,
        "lo": float(lo),
        "hi": float(hi),
        "r2": r2,
        "cells": len(cells),
        "seeds": sum(c.grokked.size for c in cells),
        "over": "p ∈ {" + ", ".join(str(p) for p in sorted({c.p for c in cells})) + "}",
    }


def per_seed_fit(cells: list[SeedCell], label: str, n_bootstrap: int) -> dict:
    """Our line fit of log T_grok on ρ over the single grokked seeds of `cells`, seed-cluster bootstrap."""
    from nht_jax.analysis.fits import FitOptions, fit_line

    x, y, groups = [], [], []
    for c in cells:
        for s, t in enumerate(c.t_grok):
            if t > 0:
                x.append(c.rho), y.append(np.log(t)), groups.append(s)
    stats = fit_line(x, y, groups, FitOptions(n_bootstrap=n_bootstrap))
    return {
        "quantity": label,
        "value": stats.slope,
        "lo": stats.slope_ci[0],
        "hi": stats.slope_ci[1],
        "r2": stats.r2,
        "cells": len(cells),
        "seeds": len(x),
        "over": "ρ ∈ {" + ", ".join(f"{c.rho:g}" for c in sorted(cells, key=lambda c: c.rho)) + "}",
    }


def analyses(cells: list[SeedCell], n_bootstrap: int = 3000) -> list[dict]:
    """Every row the module docstring lists."""
    shared = shared_cells(cells)
    if not shared:
        raise ConfigError("no pscan cells at ρ 0.85, 1, 1.15 that grok: is this a clone of critical-norm-grokking?")
    out = [shared_alpha(shared, n_bootstrap)]
    out += [
        per_seed_fit([c for c in shared if c.p == p], f"α at p = {p} (single seeds)", n_bootstrap)
        for p in sorted({c.p for c in shared})
    ]
    for experiment, label, rhos in (
        ("denserho", "dense α, p = 59 (single seeds)", None),
        ("tfnoln_long", "α₂, transformer without LayerNorm (single seeds)", RHOS),
    ):
        chosen = [
            c
            for c in cells
            if c.experiment == experiment
            and c.arm == "clamp"
            and (rhos is None or any(np.isclose(c.rho, r) for r in rhos))
        ]
        if chosen:
            out.append(per_seed_fit(chosen, label, n_bootstrap))
    return out


def main(argv=None) -> int:
    import argparse

    from nht_jax.analysis.tables import csv_text, markdown_table
    from nht_jax.base.atomic import atomic_write_text

    parser = argparse.ArgumentParser(
        prog="python -m nht_jax.papers.their_data", description="Our fits on the clamp-law paper's per-seed files."
    )
    parser.add_argument("clone", help="a clone of ClevixLab/critical-norm-grokking")
    parser.add_argument("--out", help="also write the table as CSV here")
    parser.add_argument("--n-bootstrap", type=int, default=3000, help="resamples per interval (default 3000)")
    args = parser.parse_args(argv)
    try:
        if args.n_bootstrap < 0:
            raise ConfigError(f"--n-bootstrap must be ≥ 0, got {args.n_bootstrap}")
        table = analyses(read_tree(Path(args.clone), ("pscan", "denserho", "tfnoln_long")), args.n_bootstrap)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(markdown_table(table))
    if args.out:
        atomic_write_text(Path(args.out), csv_text(table))
    return 0


__all__ = ["shared_alpha"]


if __name__ == "__main__":
    sys.exit(main())
