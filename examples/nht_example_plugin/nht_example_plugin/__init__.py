"""An example plugin of nht_jax: the domain "digit_sum", the model "sum_mlp" and the preset "example-digit-sum",
registered through the entry points in pyproject.toml (README.md)."""

from importlib import resources

DIGIT_SUM_PRESET = resources.files(__name__) / "presets" / "example-digit-sum.toml"
"""The preset's TOML file: the entry point of group nht_jax.presets names this attribute."""
