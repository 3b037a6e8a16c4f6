"""The options every bootstrapping analysis shares: which runs it pools and how it resamples them.

One dataclass, one spelling (`regimes`, `n_bootstrap`, `confidence`, `seed`), inherited by the options of fits,
separation, layers, predictor and emergence, so `nht analyze --set SECTION.n_bootstrap=…` means the same in every
section. What is resampled is each analysis's own choice. Below MIN_DISTINCT_RESAMPLES (40) distinct resamples
an interval is an artefact of a handful of points, and `interval_text` shows n.a. with the count. The spellings
before this class, `n_boot` and `pool_regimes`, are refused with the new name (`RENAMED`, `renamed_error`).

The options, distinct resamples and why 40: docs/methods/analysis.md, "Pooling and resampling, shared"."""

from __future__ import annotations

import math
from dataclasses import dataclass

from nht_jax.base.errors import ConfigError, check
from nht_jax.measure.summaries import REGIMES

RENAMED = {"n_boot": "n_bootstrap", "pool_regimes": "regimes"}
"""Old option names → their one spelling now."""


@dataclass(frozen=True)
class BootstrapOptions:
    """The pooled runs and their percentile bootstrap (module docstring). Subclasses may change the defaults."""

    regimes: tuple[str, ...] = ("intermediate",)
    n_bootstrap: int = 1000
    confidence: float = 0.95
    seed: int = 0

    def __post_init__(self):
        check(
            not isinstance(self.regimes, str) and set(self.regimes) <= set(REGIMES),
            f"regimes must be a list of {list(REGIMES)}, got {self.regimes!r}",
        )
        check(self.n_bootstrap >= 0, f"n_bootstrap must be ≥ 0, got {self.n_bootstrap}")
        check(0 < self.confidence < 1, f"confidence must lie in (0, 1), got {self.confidence}")


MIN_DISTINCT_RESAMPLES = 40
"""The fewest distinct resamples (`distinct_resamples`) with which an interval is shown (module docstring)."""


def distinct_resamples(clusters: int) -> int:
    """C(2n − 1, n): how many different resamples a bootstrap drawing n of n clusters with replacement has.

    Args:
        clusters: n, the clusters.

    Returns:
        The count, 0 without clusters.
    """
    return math.comb(2 * clusters - 1, clusters) if clusters > 0 else 0


def interval_text(lo: float, hi: float, clusters: int, unit: str = "seeds", fmt=lambda x: f"{x:.3g}") -> str:
    """ "[lo, hi] (126 distinct resamples over 5 seeds)", or "[n.a.: 3 distinct resamples over 2 seeds, < 40]" when
    there are too few (module docstring), or "[no interval]" when lo or hi is not finite."""
    distinct = distinct_resamples(clusters)
    over = f"{distinct:,} distinct resamples over {clusters} {unit}"
    if distinct < MIN_DISTINCT_RESAMPLES:
        return f"[n.a.: {over}, < {MIN_DISTINCT_RESAMPLES}]"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "[no interval]"
    return f"[{fmt(lo)}, {fmt(hi)}] ({over})"


def renamed_error(section: str, key: str) -> ConfigError | None:
    """The error for an old spelling `section.key` (None when `key` is not one)."""
    if key not in RENAMED:
        return None
    new = RENAMED[key]
    return ConfigError(
        f"'{section}.{key}' was renamed '{section}.{new}' (one spelling in every analysis that "
        f"bootstraps, nht_jax.analysis.bootstrap): use --set {section}.{new}=…"
    )


__all__ = ["MIN_DISTINCT_RESAMPLES", "BootstrapOptions", "distinct_resamples"]
