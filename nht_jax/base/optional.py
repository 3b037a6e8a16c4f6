"""Optional packages: those only an extra of pyproject.toml installs (`pip install -e .` gives what `nht run`
needs on the default preset and no more). A feature that needs one imports it through `require`, so that its
absence is one ConfigError line naming the extra to install, never an ImportError traceback."""

from __future__ import annotations

import importlib

from nht_jax.base.errors import ConfigError


def require(module: str, purpose: str, extra: str):
    """`module` imported, or a ConfigError saying which extra installs it: 'the border-digits images need the
    optional package sklearn, which is not installed: pip install 'nht_jax[data]' …'."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            f"{purpose} needs the optional package {module}, which is not installed: "
            f"pip install 'nht_jax[{extra}]' (in a checkout: pip install -e '.[{extra}]')"
        ) from None


__all__ = []
