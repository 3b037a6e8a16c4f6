"""The forecast's options, declared once (docs/guides/monitor.md, docs/guides/live.md, docs/guides/forecast.md).

The forecast of T_transition lives in `nht_jax.measure.forecast` (the window fit, the diagnosis, V̂_post and the
pilots, the first-passage law, its calibration and held-out score); its options live here, in one type,
`ForecastSettings` (with its parts `WindowFit`, `RecentWindow`, `Pilots`), that every user of the forecast carries:
the live table (`nht_jax.training.live.LiveOptions`; in a sweep `live.forecast`), the forecast scores
(`nht_jax.analysis.forecast.ForecastOptions`), the forecast at T_fit (`nht_jax.analysis.tfit_forecast.TfitOptions`),
the delay predictor and the diagnosis (`PredictorOptions`, `MonitorOptions`). Each field is declared once, here;
the spellings users type (`--set forecast.window_logs=…`, `--set live.forecast.v_post=…`,
`diagnose(window_logs=…)`) are those fields' names.

Each field, its default and meaning, and the package's parts: docs/guides/forecast.md, "Where the code lives"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from nht_jax.base.errors import ConfigError

V_POST_RULES = ("pilot", "pilot-trend", "floor")
"""V̂_post's rules (`nht_jax.measure.forecast.v_post`)."""


@dataclass(frozen=True)
class WindowFit:
    """The window of the log-linear fit of V (module docstring)."""

    peak_drop: float = 0.1
    window_logs: int = 10
    window_steps: float = 0.0
    min_points: int = 3

    def window_length(self, steps) -> float:
        """W in steps: `window_steps`, or when 0, `window_logs` times the smallest logged interval."""
        return self.window_steps if self.window_steps > 0 else self.window_logs * float(np.min(np.diff(steps)))


@dataclass(frozen=True)
class RecentWindow(WindowFit):
    """The monitor's window on the run so far (module docstring)."""

    window: Literal["recent", "after_peak"] = "recent"
    flat_tolerance: float = 0.01


@dataclass(frozen=True)
class Pilots:
    """Which runs of the grid may serve a run as pilots (module docstring)."""

    pilot_free_axes: tuple[str, ...] = ("weight_decay", "seed")


def check_v_post_rule(rule: str, trend_weight: float, where: str, extra: tuple[str, ...] = ()) -> None:
    """ConfigError unless `rule` is one of V_POST_RULES (or `extra`) and 0 ≤ trend_weight ≤ 1."""
    rules = (*V_POST_RULES, *extra)
    if rule not in rules:
        raise ConfigError(f"{where}v_post = {rule!r} must be one of {', '.join(rules)}")
    if not (0.0 <= trend_weight <= 1.0):
        raise ConfigError(
            f"{where}trend_weight = {trend_weight!r} must lie in [0, 1] (0: the nearest λ's V, "
            f"1: the full local power law)"
        )


@dataclass(frozen=True)
class ForecastSettings(RecentWindow, Pilots):
    """The one options type of the forecast (module docstring: each field)."""

    interval: float = 0.9
    v_post: str = "pilot"
    trend_weight: float = 0.5
    v_post_interval: bool = True
    kappa: Literal["calibrated", "run", "fixed"] = "calibrated"
    kappa_fixed: float = 0.21
    kappa_pool: Literal["all", "cell", "level", "model"] = "all"
    v_star_weight: float = 1.0

    def check(self, where: str, extra_v_post: tuple[str, ...] = ()) -> None:
        """ConfigError naming the first invalid field, each prefixed with `where` (e.g. "live.forecast.");
        `extra_v_post`: V̂_post rules a user of the options adds (the replay's "oracle")."""
        if self.window not in ("recent", "after_peak"):
            raise ConfigError(f"{where}window = {self.window!r} must be recent or after_peak")
        if not 0.0 < self.peak_drop < 1.0:
            raise ConfigError(f"{where}peak_drop = {self.peak_drop!r} must lie strictly between 0 and 1")
        if self.min_points < 3:
            raise ConfigError(f"{where}min_points = {self.min_points!r} must be ≥ 3 (a rate and its error)")
        if self.window_logs < 1 or self.window_steps < 0:
            raise ConfigError(
                f"{where}window_logs must be ≥ 1 and window_steps ≥ 0 (0: window_logs logged "
                f"intervals), got {self.window_logs!r}, {self.window_steps!r}"
            )
        if self.flat_tolerance < 0:
            raise ConfigError(f"{where}flat_tolerance = {self.flat_tolerance!r} must be ≥ 0")
        check_v_post_rule(self.v_post, self.trend_weight, where, extra_v_post)
        if self.kappa not in ("calibrated", "run", "fixed"):
            raise ConfigError(f"{where}kappa = {self.kappa!r} must be calibrated, run or fixed")
        if not (self.kappa_fixed > 0 and np.isfinite(self.kappa_fixed)):
            raise ConfigError(f"{where}kappa_fixed = {self.kappa_fixed!r} must be a finite positive number")
        if self.kappa_pool not in ("all", "cell", "level", "model"):
            raise ConfigError(f"{where}kappa_pool = {self.kappa_pool!r} must be all, cell, level or model")
        if not 0.0 <= self.v_star_weight <= 1.0:
            raise ConfigError(f"{where}v_star_weight = {self.v_star_weight!r} must lie in [0, 1]")
        if not 0.0 < self.interval < 1.0:
            raise ConfigError(f"{where}interval = {self.interval!r} must lie strictly between 0 and 1")
        if "weight_decay" not in self.pilot_free_axes:
            raise ConfigError(f"{where}pilot_free_axes must contain weight_decay")


__all__ = ["ForecastSettings", "Pilots", "RecentWindow", "WindowFit"]
