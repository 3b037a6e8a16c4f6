"""Per-class border colours for the spurious-border task.

DEFAULT_PALETTE holds ten RGB colours in [0, 1], one per class, chosen so that every colour
differs from the mid-gray (0.5, 0.5, 0.5) of the shortcut evaluation set by at least 0.5 in some
channel (a border must stay visible on gray) and any two colours differ by at least 0.5 in some
channel:

    0 red (1, 0, 0)        1 green (0, 1, 0)     2 blue (0, 0, 1)      3 yellow (1, 1, 0)
    4 magenta (1, 0, 1)    5 cyan (0, 1, 1)      6 orange (1, 0.5, 0)  7 purple (0.5, 0, 1)
    8 white (1, 1, 1)      9 black (0, 0, 0)

A palette is any (K, 3) array of distinct rows in [0, 1]; row k is class k's colour. On uint8
images a colour c is painted as round(255 · c).
"""

from __future__ import annotations

import numpy as np

from nht_jax.base.errors import ConfigError

DEFAULT_PALETTE = np.array(
    [
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [1.0, 1.0, 0.0],
        [1.0, 0.0, 1.0],
        [0.0, 1.0, 1.0],
        [1.0, 0.5, 0.0],
        [0.5, 0.0, 1.0],
        [1.0, 1.0, 1.0],
        [0.0, 0.0, 0.0],
    ],
    dtype=np.float32,
)

GRAY = 0.5
"""Value of every pixel of the shortcut evaluation image (before its border is painted)."""


def class_palette(num_classes: int, palette=None) -> np.ndarray:
    """The (num_classes, 3) float32 palette: the first num_classes rows of `palette` (default DEFAULT_PALETTE).

    Raises ConfigError for fewer rows than classes, a shape other than (K, 3), values outside [0, 1]
    or two classes sharing a colour (the border would then not identify its class).
    """
    colours = DEFAULT_PALETTE if palette is None else np.asarray(palette, dtype=np.float32)
    if colours.ndim != 2 or colours.shape[1] != 3:
        raise ConfigError(f"border palette must have shape (num_classes, 3) (RGB in [0, 1]); got {colours.shape}")
    if num_classes < 2:
        raise ConfigError(f"a spurious border needs at least 2 classes; got num_classes={num_classes}")
    if colours.shape[0] < num_classes:
        raise ConfigError(
            f"border palette has {colours.shape[0]} colours but the task has {num_classes} classes; "
            "pass a palette with one RGB row per class"
        )
    colours = colours[:num_classes]
    if not np.all((colours >= 0.0) & (colours <= 1.0)):
        raise ConfigError("border palette colours must lie in [0, 1]")
    if len(np.unique(colours, axis=0)) != num_classes:
        raise ConfigError("border palette has two classes with the same colour")
    return colours
