"""The options every bootstrapping analysis shares: which runs it pools and how it resamples them.

One dataclass, one spelling, inherited by the options of fits, separation, layers, predictor and emergence, so
`nht analyze --set SECTION.n_bootstrap=…` means the same in every section:

    regimes       the summary regimes (`nht_jax.measure.summaries.REGIMES`) whose runs enter the analysis's pooled
                  numbers: the fits' lines, the pooled medians of separation and layers, the predictor's MAPE,
                  the emergence ratios (default: intermediate, the runs with a transition after the fit)
    n_bootstrap   resamples of each percentile-bootstrap interval (0: no interval where the analysis allows it)
    confidence    the intervals' level c: the interval is the [(1 − c)/2, (1 + c)/2] quantiles of the resamples
    seed          the PRNG seed every interval starts from (each is reproducible on its own)

What is resampled (runs, seeds as clusters, runs within a grid value) is each analysis's own choice, stated in
its module. The spellings before this class, `n_boot` and `pool_regimes`, are refused with the new name
(`RENAMED`, `renamed_error`).
"""

from __future__ import annotations

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
        check(not isinstance(self.regimes, str) and set(self.regimes) <= set(REGIMES),
              f"regimes must be a list of {list(REGIMES)}, got {self.regimes!r}")
        check(self.n_bootstrap >= 0, f"n_bootstrap must be ≥ 0, got {self.n_bootstrap}")
        check(0 < self.confidence < 1, f"confidence must lie in (0, 1), got {self.confidence}")


def renamed_error(section: str, key: str) -> ConfigError | None:
    """The error for an old spelling `section.key` (None when `key` is not one)."""
    if key not in RENAMED:
        return None
    new = RENAMED[key]
    return ConfigError(f"'{section}.{key}' was renamed '{section}.{new}' (one spelling in every analysis that "
                       f"bootstraps, nht_jax.analysis.bootstrap): use --set {section}.{new}=…")


__all__ = ["RENAMED", "BootstrapOptions", "renamed_error"]
