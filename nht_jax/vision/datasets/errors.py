"""Errors of the vision loaders: one clear message each (all are `ConfigError`, a ValueError)."""

from __future__ import annotations

from nht_jax.base.errors import ConfigError


class DataNotFoundError(ConfigError):
    """The data set is not on this machine; the message names the place searched and how to get it."""


class CorruptDataError(ConfigError):
    """A source file exists but cannot be decoded or has the wrong layout; the message names it."""
