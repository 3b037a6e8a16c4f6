"""`nht tool new-plugin NAME` (also `nht tool new-plugin NAME`): the skeleton of a plugin package, ready to install and
to run. It writes DIR/NAME/:

    pyproject.toml              the distribution NAME, its entry points in the groups `nht_jax.base.plugins` reads:
                                a model (`nht_jax.models`: "<package>_mlp") and a preset (`nht_jax.presets`: NAME)
    <package>/__init__.py       PRESET, the path of the preset's TOML file (the preset entry point names it)
    <package>/models.py         MLP: a Flax module meeting the token domains' contract (docs/guides/plugins.md)
    <package>/presets/NAME.toml the preset: modular addition mod 31 with the plugin's model, 2 λ × 1 seed, 200 steps
    README.md                   how to install, run and change it

(package = NAME with "-" as "_"). `pip install -e DIR/NAME` then `nht run NAME` trains it; the model is the file to
replace with your own, the preset the file to change. A domain of your own is added the same way (an entry point
of group `nht_jax.domains`: docs/guides/plugins.md#a-domain). Every file is written atomically; an existing
non-empty DIR/NAME is refused, and nothing is written."""

from __future__ import annotations

import re
from pathlib import Path

from nht_jax.base.atomic import atomic_write_text
from nht_jax.base.errors import ConfigError
from nht_jax.base.plugins import MODELS, PRESETS

NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
"""A plugin's name: lower-case letters and digits, words joined by "-" (a distribution name whose package name,
"-" as "_", is a Python identifier)."""

PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
description = "A plugin of nht_jax: the model {model} and the preset {name}"
requires-python = ">=3.11"
dependencies = ["nht_jax"]

[project.entry-points."{models}"]
{model} = "{package}.models:MLP"

[project.entry-points."{presets}"]
{name} = "{package}:PRESET"

[tool.setuptools]
packages = ["{package}"]

[tool.setuptools.package-data]
{package} = ["presets/*.toml"]
"""

INIT = '''"""The nht_jax plugin {name}: the model "{model}" and the preset "{name}", registered through the entry points in
pyproject.toml (README.md)."""

from importlib import resources

PRESET = resources.files(__name__) / "presets" / "{name}.toml"
"""The preset's TOML file: the entry point of group {presets} names this attribute."""
'''

MODELS_PY = '''"""Model "{model}": a Flax module meeting the token domains' contract (docs/guides/plugins.md of nht_jax). The
trainer builds it as MLP(vocab_size=…, num_classes=…, n_ctx=…, **[model] settings) and calls it on int32 tokens
(batch, n_ctx), expecting logits (batch, num_classes); its other fields (width) are the [model] table's settings.
The top-level layer names are those the per-layer norms are recorded under; the output layer is named "head"."""

from __future__ import annotations

import flax.linen as nn


class MLP(nn.Module):
    """logits = head(relu(hidden(the tokens' embeddings, concatenated)))."""

    vocab_size: int
    num_classes: int
    n_ctx: int
    width: int = 32

    @nn.compact
    def __call__(self, tokens):
        x = nn.Embed(self.vocab_size, self.width, name="embed")(tokens)
        x = x.reshape(*tokens.shape[:-1], self.n_ctx * self.width)
        return nn.Dense(self.num_classes, name="head")(nn.relu(nn.Dense(self.width, name="hidden")(x)))
'''

PRESET = """name = "{name}"
description = "{name}: (a+b) mod 31 with the plugin's model {model}, 2 λ × 1 seed, 200 steps (seconds)"

[task]
name = "modular"
p = 31

[model]
name = "{model}"
width = 32

[optim]
name = "adamw"

[train]
steps = 200
log_every = 20

[grid]
weight_decay = [0.01, 1.0]
learning_rate = 1e-2
seed = [0]
train_fraction = 0.5
"""

README = """# {name}

A plugin of nht_jax, written by `nht tool new-plugin {name}`: the model `{model}` (`{package}/models.py`) and the preset
`{name}` (`{package}/presets/{name}.toml`), registered through the entry points in `pyproject.toml`.

    pip install -e .            # beside nht_jax, in the same environment
    nht presets                 # lists {name}, origin {name}
    nht run {name} --out runs/out/{name}
    nht analyze runs/out/{name}

Replace `MLP` with your own Flax module (the same constructor arguments and call; every other field is a `[model]`
setting), change the preset, and add a domain of your own with an entry point of group `nht_jax.domains`: the
plugins guide of nht_jax (docs/guides/plugins.md) says what each must provide.
"""


def skeleton_files(name: str) -> dict[str, str]:
    """{relative path: text} of the plugin package NAME (module docstring); a bad name: ConfigError."""
    if not NAME.match(name):
        raise ConfigError(
            f"a plugin name is lower-case letters and digits, words joined by '-' (e.g. my-plugin); got {name!r}"
        )
    package = name.replace("-", "_")
    values = {"name": name, "package": package, "model": f"{package}_mlp", "models": MODELS, "presets": PRESETS}
    return {
        "pyproject.toml": PYPROJECT.format(**values),
        f"{package}/__init__.py": INIT.format(**values),
        f"{package}/models.py": MODELS_PY.format(**values),
        f"{package}/presets/{name}.toml": PRESET.format(**values),
        "README.md": README.format(**values),
    }


def write_skeleton(name: str, where) -> Path:
    """Write the plugin package NAME into where/NAME (refused when that folder exists and is not empty); returns
    the folder."""
    files = skeleton_files(name)
    root = Path(where) / name
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ConfigError(f"'{root}' exists and is not empty: choose another NAME or --dir, or move it away")
    for relative, text in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, text)
    return root


__all__ = ["NAME"]
