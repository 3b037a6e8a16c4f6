"""[fork]: a grid whose every run starts from a snapshot of one run of another results folder.

    [fork]
    from = "runs/out/tiny-snap"        # a finished sweep that kept snapshots (`nht_jax.training.snapshots`)
    select = {weight_decay = 1.0}      # which of its runs: those with these grid values …
    step = "fit"                       # … at their T_fit, or at a snapshotted step (an integer)

Each forked run takes the source run that matches `select` and has its own seed. `prepare` checks everything
before anything is built (refusing, saying what exists) and fills in the origin, which then belongs to config.toml
and the digest; `forked_trainer` starts each run from the source state whole, with the optimiser's and the slot
entries' states carried over where they match. A fork whose grid and settings are the source's continues the
source run bit for bit.

What a fork carries over, what it refuses and how its steps count: docs/guides/forks.md, "Forks"."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nht_jax import experiment
from nht_jax.base.errors import ConfigError
from nht_jax.engine import slots
from nht_jax.engine.loop import Trainer, advance_through
from nht_jax.config.sections import OptimConfig, TrainConfig
from nht_jax.engine.step import CountedState, make_updater
from nht_jax.experiment import Config, ForkConfig
from nht_jax.results import folder as results
from nht_jax.training import snapshots

LISTED = 12
"""Source runs listed at most in a refusal."""


class ForkStart(NamedTuple):
    """What the forked runs start from: per forked seed (`seeds`, S) the source run's state leaves (S, …), and the
    source's optimiser settings and one run's grid values (to rebuild its optimiser state's layout)."""

    seeds: np.ndarray
    leaves: list
    optim: OptimConfig
    train: TrainConfig
    hparams: dict
    origin: dict

    def describe(self) -> dict:
        """meta.json's "fork"."""
        return self.origin


def prepare(config: Config) -> tuple[Config, ForkStart | None]:
    """(config with [fork] resolved, what its runs start from); (config, None) without a [fork]. ConfigError for
    every refusal of the module docstring."""
    f = config.fork
    if f is None:
        return config, None
    folder = Path(f.from_).expanduser().resolve()
    where = f"fork.from = '{f.from_}'"
    check = results.check_source_folder(
        folder,
        where,
        "name the folder of a finished sweep that kept snapshots "
        "(execution.snapshot_steps or execution.snapshot_at_fit)",
        "finish its sweep (run the same nht run command again) before forking from it",
    )
    source = check.config
    refuse_other_model(where, source, config)
    kind = snapshots.kind_of_step(f.step)
    snaps = read_snapshots(where, folder, check.meta)
    if kind not in snaps.kinds:
        raise ConfigError(
            f"{where} has no snapshot at {step_words(f.step)}; it kept {kinds_words(snaps)}. Choose "
            f"one of those for fork.step, or run the source again with it in execution.snapshot_steps"
        )
    source_runs = source.runs()
    unknown = [a for a in f.select if a not in source_runs]
    if unknown:
        raise ConfigError(
            f"fork.select names {unknown}, which the source grid does not have; its axes: {list(source_runs)}"
        )
    matching = select_rows(source_runs, f.select)
    chosen = [
        one_source(where, kind, f, source_runs, snaps, matching, seed)
        for seed in sorted(set(int(s) for s in config.runs()["seed"]))
    ]
    sources = tuple(
        {"run": int(r), "seed": int(source_runs["seed"][r]), "step": int(snaps.step[kind][r])} for r in chosen
    )
    digest = check.meta["config_digest"]
    if f.source_digest and (f.source_digest, list(f.sources)) != (digest, list(sources)):
        raise ConfigError(
            f"{where}: this configuration names source digest {f.source_digest} and runs "
            f"{list(f.sources)}, but the folder now holds digest {digest} and runs {list(sources)}; "
            f"remove fork.source_digest and fork.sources to fork from what it holds now"
        )
    resolved = ForkConfig(str(folder), dict(f.select), f.step, digest, sources)
    config = experiment.revised(config, fork=resolved)
    first = {k: v[chosen[0]].item() for k, v in source_runs.items()}
    origin = {
        "from": str(folder),
        "select": dict(f.select),
        "step": f.step,
        "source_digest": digest,
        "sources": [dict(s, values={k: v[s["run"]].item() for k, v in source_runs.items()}) for s in sources],
    }
    start = ForkStart(
        np.asarray([s["seed"] for s in sources], np.uint32),
        snaps.state_rows(kind, chosen),
        source.optim,
        source.train,
        first,
        origin,
    )
    return config, start


def refuse_other_model(where: str, source: Config, config: Config) -> None:
    """The fork trains the source's task and model with the source's optimiser family."""
    mine, theirs = experiment.to_dict(config), experiment.to_dict(source)
    for section in ("task", "model"):
        if mine[section] != theirs[section]:
            raise ConfigError(
                f"{where} trains [{section}] {theirs[section]}, this configuration [{section}] "
                f"{mine[section]}; a fork continues the source's runs, so make [{section}] the "
                f"source's"
            )
    if config.optim.name != source.optim.name:
        raise ConfigError(
            f"{where} trains with optim.name = {source.optim.name!r}, this configuration with "
            f"{config.optim.name!r}; a fork carries the optimiser's state over, so use "
            f"optim.name = {source.optim.name!r}"
        )


def read_snapshots(where: str, folder: Path, meta: dict) -> snapshots.Snapshots:
    if not (meta.get("snapshots") and snapshots.SNAPSHOTS in meta.get("files", {})):
        raise ConfigError(
            f"{where} holds no snapshots: its sweep ran without execution.snapshot_steps or "
            f"execution.snapshot_at_fit. Run it again with one of them (e.g. --set "
            f"execution.snapshot_at_fit=true --overwrite) to fork from it"
        )
    snaps = snapshots.read(folder / snapshots.SNAPSHOTS)
    if snaps.digest != meta["config_digest"]:
        raise ConfigError(
            f"{where}: its snapshots.npz belongs to another configuration than its results; run "
            f"the source sweep again with --overwrite"
        )
    wrong = after_stop(snaps, stopped_steps(folder, snaps.num_runs))
    if wrong:
        raise ConfigError(
            f"{where}: its snapshots.npz holds {wrong}, after the run's stopped_step (a stop rule "
            f"discards those steps, so no fork may start there); run the source sweep again with "
            f"--overwrite"
        )
    return snaps


def stopped_steps(folder: Path, num_runs: int) -> np.ndarray:
    """The source runs' stopped_step from its trajectories.npz (NaN: trained the budget, or no stop rule)."""
    with np.load(folder / "trajectories.npz", allow_pickle=False) as data:
        return data["stopped_step"] if "stopped_step" in data.files else np.full(num_runs, np.nan)


def after_stop(snaps: snapshots.Snapshots, stopped: np.ndarray) -> str:
    """The first snapshot taken after its run's stopped_step, in words ("" if none)."""
    limit = np.where(np.isnan(stopped), np.inf, stopped)
    for kind in snaps.kinds:
        late = np.flatnonzero(snaps.taken[kind] & (snaps.step[kind] > limit))
        if late.size:
            r = int(late[0])
            return f"snapshot {kind} of run {r} at step {int(snaps.step[kind][r])}, stopped at step {stopped[r]:g}"
    return ""


def select_rows(runs: dict, select: dict) -> np.ndarray:
    """The source runs whose grid values equal `select`'s (floats to 1e-6 relative, as `Results.select`)."""
    keep = np.ones(len(runs["seed"]), bool)
    for name, value in select.items():
        keep &= np.isclose(np.asarray(runs[name], float), float(value), rtol=1e-6, atol=0)
    return np.flatnonzero(keep)


def one_source(where: str, kind: str, f: ForkConfig, runs: dict, snaps, matching: np.ndarray, seed: int) -> int:
    """The one source run of seed `seed` among `matching` that has snapshot `kind`; ConfigError listing what
    exists otherwise."""
    of_seed = [r for r in matching if int(runs["seed"][r]) == seed]
    with_it = [r for r in of_seed if snaps.taken[kind][r]]
    if len(with_it) == 1:
        return with_it[0]
    chosen = f"fork.select = {f.select}" if f.select else "every source run (fork.select is empty)"
    if not of_seed:
        problem = f"no source run of {chosen} has seed {seed}"
    elif not with_it:
        problem = f"the source run(s) {of_seed} of {chosen} with seed {seed} have no snapshot at {step_words(f.step)}"
    else:
        problem = (
            f"{len(with_it)} source runs of {chosen} have seed {seed} (runs {with_it}); add the axes that "
            f"tell them apart to fork.select"
        )
    listed = matching if len(matching) else np.arange(len(runs["seed"]))
    lines = [describe_run(r, runs, snaps) for r in listed[:LISTED]]
    more = f"\n  … and {len(listed) - LISTED} more" if len(listed) > LISTED else ""
    raise ConfigError(
        f"{where}: {problem}; each forked run needs exactly one. "
        f"{'The runs fork.select matches' if len(matching) else 'Its runs'}:\n  " + "\n  ".join(lines) + more
    )


def describe_run(r: int, runs: dict, snaps) -> str:
    values = ", ".join(f"{k} = {np.asarray(v)[r].item():g}" for k, v in runs.items())
    taken = [
        f"{k} at step {int(snaps.step[k][r])}" if k == snapshots.FIT else k for k in snaps.kinds if snaps.taken[k][r]
    ]
    return f"run {r} ({values}): snapshots {', '.join(taken) or 'none'}"


def step_words(step) -> str:
    return 'T_fit (step = "fit")' if step == snapshots.FIT else f"step {step}"


def kinds_words(snaps) -> str:
    return ", ".join(f"{k} ({int(snaps.taken[k].sum())} of {snaps.num_runs} runs)" for k in snaps.kinds)


# ----------------------------------------------------------------------------- the forked state


def optimiser_parts(state, optim: OptimConfig) -> tuple[tuple, Any]:
    """(the `before` entries' states, the optimiser's own state) of an updater state (`nht_jax.engine.step`):
    chain(*before, tx) or tx alone, inside `CountedState` when a constraint counts updates."""
    inner = state.optimiser if slots.uses_step(optim.after) else state
    return (tuple(inner[:-1]), inner[-1]) if optim.before else ((), inner)


def same_layout(a, b) -> bool:
    shapes = lambda t: [(x.shape, x.dtype) for x in jax.tree.leaves(t)]  # noqa: E731
    return jax.tree.structure(a) == jax.tree.structure(b) and shapes(a) == shapes(b)


def carry_optimiser(fresh, source, source_optim: OptimConfig, optim: OptimConfig):
    """The forked updater state: the source's optimiser state; each `before` entry's state the source's entry of
    that name (the first not yet used) when its layout matches, else fresh; a fresh update count."""
    fresh_entries, fresh_tx = optimiser_parts(fresh, optim)
    source_entries, source_tx = optimiser_parts(source, source_optim)
    if not same_layout(fresh_tx, source_tx):
        raise ConfigError(
            f"the source's optimiser state does not fit this configuration's ({optim.name}, "
            f"decay_on = {optim.decay_on!r}, lr_schedule): make [optim] and train.lr_schedule the "
            f"source's, or change only its slots"
        )
    unused = list(zip([e.name for e in source_optim.before], source_entries))
    entries = []
    for entry, state in zip(optim.before, fresh_entries):
        match = next((i for i, (name, s) in enumerate(unused) if name == entry.name and same_layout(s, state)), None)
        entries.append(state if match is None else unused.pop(match)[1])
    inner = (*entries, source_tx) if optim.before else source_tx
    return CountedState(inner, fresh.count) if slots.uses_step(optim.after) else inner


def forked_trainer(trainer: Trainer, config: Config, start: ForkStart) -> Trainer:
    """`trainer` whose runs start from `start`: each run the source state of its seed (module docstring)."""
    source_updater = make_updater(start.optim, start.train)
    source_hparams = {k: jnp.asarray(v) for k, v in start.hparams.items()}

    def init(hparams: dict, key=None):
        fresh = trainer.init(hparams, key)
        layout = fresh._replace(opt_state=source_updater.init(source_hparams, fresh.params))  # traced, unused
        structure = jax.tree.structure(layout)
        if structure.num_leaves != len(start.leaves):
            raise ConfigError(
                f"the snapshots of fork.from = '{config.fork.from_}' hold {len(start.leaves)} state "
                f"leaves, this model's state {structure.num_leaves}: fork from a sweep of this "
                f"[task] and [model]"
            )
        row = jnp.argmax(jnp.asarray(start.seeds) == hparams["seed"])
        source = jax.tree.unflatten(structure, [jnp.asarray(x)[row] for x in start.leaves])
        return source._replace(opt_state=carry_optimiser(fresh.opt_state, source.opt_state, start.optim, config.optim))

    def train(hparams: dict, key=None):
        state = init(hparams, key)
        first = trainer.evaluate(state, hparams)
        state, rest = advance_through(trainer.advance, trainer.schedule, state, hparams, 0, trainer.num_logs)
        return state, jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, rest)

    return trainer._replace(init=init, train=train)


__all__ = []
