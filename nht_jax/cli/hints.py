"""Wrong forms answered with the right one, in one line: a command whose --set takes configuration KEY=VALUE
(`nht run`, `nht tool find-lambda`, `nht tool bench`, `nht import`) given a setting as an option of its own —
`--steps 100`, `--seed 1`, `--lambda 0.1`, `--batch-size=64` — or as a bare word (`train.steps=100`, `steps=100`)
is told `--set train.steps=100`, `--set 'grid.seed=[1]'`, `--set 'grid.weight_decay=[0.1]'`, `--set
train.batch_size=64` instead of argparse's "unrecognized arguments". A name is a grid axis when it is one of the axes or their other names
(`nht_jax.base.aliases`, the table `--set grid.lambda` and `nht import` read), else the setting of that name of the
one [optim], [train], [execution] or [analysis] section that has it; any other option is left to argparse."""

from __future__ import annotations

import shlex

from nht_jax.base.aliases import HPARAM_ALIASES, grid_key
from nht_jax.base.schema import list_text


def is_option(token: str) -> bool:
    """'--steps' or '-x', not a negative number ('-1', '-0.5')."""
    if not token.startswith("-") or token == "-":
        return False
    try:
        float(token)
    except ValueError:
        return True
    return False


def setting_of(option: str) -> str | None:
    """The configuration key an option's name stands for: '--steps' → 'train.steps', '--seed' → 'grid.seed',
    '--lambda' → 'grid.weight_decay', '--log-every' → 'train.log_every', '--stop-rule' → 'stop.rule'; None when
    none or several."""
    name = option.lstrip("-").replace("-", "_")
    axis = grid_key(name)
    if axis in HPARAM_ALIASES:
        return f"grid.{axis}"
    from nht_jax.base.schema import field_names
    from nht_jax.config.tables import moved_path
    from nht_jax.experiment import ENGINE_SECTIONS

    owners = [section for section, cls in ENGINE_SECTIONS.items() if name in field_names(cls)]
    if len(owners) == 1:
        return f"{owners[0]}.{name}"
    new = moved_path(("execution", name))  # an old spelling: '--stop-rule' → 'stop.rule'
    return ".".join(new) if new and not owners else None


def set_form(key: str, value: str | None) -> str:
    """The --set a wrong option means, quoted for a shell: grid axes take a list."""
    value = "VALUE" if value is None else value
    return "--set " + shlex.quote(f"{key}={list_text(value) if key.startswith('grid.') else value}")


def bare_settings(extras: list[str]) -> list[tuple[str, str, str]]:
    """(word, key, value) of each stray `KEY=VALUE` word (Hydra's spelling: `train.steps=100`, `steps=100`) whose
    key is a setting: a dotted key as written, a bare one as `setting_of` reads it."""
    found = []
    for word in extras:
        key, has_value, value = word.partition("=")
        if is_option(word) or not has_value or not key:
            continue
        meant = key if "." in key else setting_of(key)
        if meant:
            found.append((word, meant, value))
    return found


def unknown_options(argv: list[str], extras: list[str]) -> list[tuple[str, str | None]]:
    """(option, its value) for each option argparse did not know, read off the command line itself (argparse gives
    an unknown option's value to a positional): `--steps=100`, or `--steps 100` with the next word as the value."""
    found, start = [], 0
    for token in (t for t in extras if is_option(t)):
        option, has_value, value = token.partition("=")
        try:
            at = argv.index(token, start)
        except ValueError:
            continue
        start = at + 1
        if not has_value:
            following = argv[at + 1] if at + 1 < len(argv) else None
            value = following if following is not None and not is_option(following) else None
        found.append((option, value))
    return found


def wrong_form(spelling: str, argv: list[str], extras: list[str]) -> str | None:
    """The one line for a command line whose unknown options are settings (None when no unknown option is one)."""
    options = unknown_options(argv, extras)
    meant = [(option, setting_of(option), value) for option, value in options]
    known = [(option, key, value) for option, key, value in meant if key] + bare_settings(extras)
    if not known:
        return None
    names = ", ".join(option for option, _, _ in known)
    line = (
        f"`nht {spelling}` takes settings with --set, not as {names}: "
        f"write {' '.join(set_form(key, value) for _, key, value in known)}"
    )
    others = [option for option, key, _ in meant if not key]
    if others:
        line += f" ({', '.join(others)}: not an option either; `nht {spelling} --help` lists them)"
    return line


__all__ = []
