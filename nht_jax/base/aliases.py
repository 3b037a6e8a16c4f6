"""Other names of the grid axes: the one table that both reading another codebase's logs (`nht import`: a logged
`lambda`, `lr` or `wd` column) and `--set grid.NAME=…` (`nht_jax.base.schema.parse_override`) use, so that
`--set grid.lambda=[0.1]` means `--set grid.weight_decay=[0.1]` wherever a logged `lambda` means weight_decay."""

from __future__ import annotations

HPARAM_ALIASES = {
    "weight_decay": ("weight_decay", "lambda", "lam", "wd", "λ"),
    "learning_rate": ("learning_rate", "lr", "eta", "η"),
    "seed": ("seed", "random_seed"),
    "init_scale": ("init_scale",),
    "train_fraction": ("train_fraction", "frac_train", "train_frac", "training_fraction"),
    "rho": ("rho", "ρ"),
    "width": ("width", "hidden", "hidden_size", "d_model"),
    "temperature": ("temperature", "tau", "τ"),
    "null_sq": ("null_sq",),
    "row_offset": ("row_offset",),
    "sigma2": ("sigma2", "sigma_sq"),
}
"""Axis → the hyperparameter names (lower case) that mean it."""

SETTING_NAMED_AXES = ("width",)
"""Axes whose other names are themselves settings (`model.hidden`, `model.d_model`): in logs they mean the axis,
but `--set grid.hidden=…` is not renamed (the configuration explains which grid key sweeps that setting)."""


def lookup(aliases: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """{name: axis} for every name of every axis."""
    return {alias: name for name, names in aliases.items() for alias in names}


GRID_KEY_ALIASES = {
    alias: axis for alias, axis in lookup(HPARAM_ALIASES).items() if alias != axis and axis not in SETTING_NAMED_AXES
}
"""The other names `--set grid.NAME=…` accepts, as {alias: axis}: `lambda`, `wd` → weight_decay, `lr` →
learning_rate, …"""


def grid_key(name: str) -> str:
    """The grid key an override names: an alias (any case) becomes its axis; any other name is kept as given."""
    return GRID_KEY_ALIASES.get(name.lower(), name)


__all__ = []
