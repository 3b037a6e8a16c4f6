"""The one error type shown to users as a message (exit code 2, no traceback)."""


class ConfigError(ValueError):
    """A configuration, data or results-folder problem, reported as one clear message saying how to fix it."""


def check(ok: bool, message: str) -> None:
    """Raise ConfigError(message) unless ok."""
    if not ok:
        raise ConfigError(message)
