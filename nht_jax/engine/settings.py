"""The engine's own settings: the optimiser family, the loop (both change results) and the execution plan
(which does not: resuming or re-running with another strategy or device count is the same experiment)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nht_jax.base.errors import check
from nht_jax.base.schema import plain
from nht_jax.engine.schedule import LogSchedule, LogSegment, validate_schedule
from nht_jax.forecast.options import ForecastSettings


class SlotEntryHint:
    """Type hint of one entry of an [optim] slot: read from TOML by the slot registry (`nht_jax.engine.slots`),
    which returns that entry's own settings dataclass."""

    slot = ""

    @classmethod
    def from_toml(cls, where: str, value):
        # imported here: the registry builds optax transformations, so it loads JAX
        from nht_jax.engine import slots

        return slots.read_entry(cls.slot, where, value)


class GradientSlotEntry(SlotEntryHint):
    slot = "before"


class ConstraintSlotEntry(SlotEntryHint):
    slot = "after"


@dataclass(frozen=True)
class OptimConfig:
    """Optimiser family; η and λ come from the grid. Conventions (per step, θ the parameters):

    adamw          θ ← θ(1 − ηλ) − η·m̂/(√v̂ + ε)                (decoupled, optax.adamw)
    sgd            θ ← θ − η(∇L + 2λθ)                          (the theory's ℓ2 penalty λ‖θ‖²)
    sgdw           θ ← θ(1 − ηλ) − η∇L                          (decoupled)
    sgd_momentum   m ← βm + ∇L + 2λθ;  θ ← θ − ηm               (ℓ2 penalty through momentum)
    sgdw_momentum  m ← βm + ∇L;        θ ← θ(1 − ηλ) − ηm       (decoupled)

    decay_on: "weights" decays only parameters with ≥ 2 dimensions (kernels, embeddings),
    not biases or LayerNorm scales; "all" decays everything.

    before: gradient transformations applied, in order, to the raw loss gradient before the optimiser;
    after: constraints applied, in order, to θ after the update (`nht_jax.engine.slots`: the registry, the
    built-ins and how each changes the contraction of ‖θ‖²). Each entry is a name or a table with its name and
    options, e.g. before = [{name = "clip_by_global_norm", max_norm = 1.0}]. Both empty by default; while empty
    they are left out of the results digest (`digest_table`).
    """

    name: Literal["adamw", "sgd", "sgdw", "sgd_momentum", "sgdw_momentum"] = "adamw"
    b1: float = 0.9
    b2: float = 0.98
    eps: float = 1e-8
    momentum: float = 0.9
    nesterov: bool = False
    decay_on: Literal["weights", "all"] = "weights"
    before: tuple[GradientSlotEntry, ...] = ()
    after: tuple[ConstraintSlotEntry, ...] = ()


DIGEST_OMITS_DEFAULT = {
    "optim": {"before": [], "after": []},
    "train": {"loss": "default", "log_schedule": []},
    "execution": {
        "snapshot_steps": [],
        "snapshot_at_fit": False,
        "live": True,
        "live_forecast": plain(ForecastSettings()),
        "live_every_s": 0.0,
        "live_calibration": "",
    },
    "model": {"block_positions": "all"},
}
"""Keys added after results digests existed, by section, with their default: left out of config.toml and of the
digest while at that default, so a configuration that does not use them keeps the digest (and the finished results
folders) it had before they existed."""


def digest_table(section: str, table: dict) -> dict:
    """A section's table as config.toml and the results digest see it: `DIGEST_OMITS_DEFAULT` keys dropped while
    at their default (an empty slot list, the domain's own loss)."""
    omitted = DIGEST_OMITS_DEFAULT.get(section, {})

    def at_default(key, value) -> bool:
        default = omitted[key]
        return list(value) == default if isinstance(value, (list, tuple)) else value == default

    return {k: v for k, v in table.items() if not (k in omitted and at_default(k, v))}


@dataclass(frozen=True)
class TrainConfig:
    """The loop: settings that change results.

    batch_size 0 means full batch. Metrics are recorded at step 0 and every `log_every` steps; `steps` must be
    a multiple of `log_every`. `log_schedule` (`nht_jax.engine.schedule`), when set, replaces `log_every` (which
    is then not used): segments [[until, every], …] (or tables {until, every}), "every `every` steps up to step
    `until`", increasing, each segment's length a multiple of its every, the last until = `steps`; e.g.
    [[500, 5], [5000, 50]] logs every 5 steps to step 500, then every 50. Empty (default): every `log_every`
    steps, and left out of the results digest. `divergence_norm`: a run whose ‖θ‖² reaches it is flagged diverged (`finite` = 0).
    `record_grad_noise` also records, at every logged step, "grad_noise_var" (σ² = E‖g_B − g‖² from
    `noise_samples` minibatches of `noise_batch_size` rows, 0 = the training batch size) and "sharpness"
    (a lower bound on the loss smoothness L); see `nht_jax.engine.noise`. Used by `nht paper bound` (domains that
    support it). `lr_schedule`: "constant" uses η at every step; "cosine" uses η_t = η·(1 + cos(π·t/steps))/2
    (optax.cosine_decay_schedule; decoupled weight decay is scaled by η_t too, as in PyTorch's AdamW).
    `eval_batch_size`: domains that evaluate in chunks (images) use chunks of this many examples.
    `loss`: "default" is the domain's own loss (softmax cross-entropy for the classification domains, the squared
    error of the toy regressions); a domain may offer others (`Domain.losses`: the token domains also train on
    "cross_entropy" (the default, named), "mse" and "stablemax"), and any other domain refuses a value but "default".
    `batch_sampling` (token domains): "without_replacement" (default) draws each step's `batch_size` rows without
    replacement within the step; "with_replacement" draws them independently and uniformly from the run's
    train rows (duplicates possible; PyTorch's `randint` / `RandomSampler(replacement=True)`), and then draws
    `batch_size` rows even when the train set is smaller. Steps are independent under both.
    """

    steps: int = 6000
    batch_size: int = 0
    log_every: int = 50
    divergence_norm: float = 1e12
    record_grad_noise: bool = False
    noise_batch_size: int = 0
    noise_samples: int = 4
    lr_schedule: Literal["constant", "cosine"] = "constant"
    eval_batch_size: int = 1024
    batch_sampling: Literal["without_replacement", "with_replacement"] = "without_replacement"
    loss: str = "default"
    log_schedule: tuple[LogSegment, ...] = ()


@dataclass(frozen=True)
class ExecutionConfig:
    """How a grid runs. Every key but the stop rule never changes a result, so [execution] is left out of the
    results digest (`experiment.digest`); the stop rule, which does change the trajectories of the runs it stops,
    is folded into the digest of a sweep when set (`nht_jax.measure.stopping.results_digest`).

    `strategy`: "auto" (sequential on CPU, vmap elsewhere), "map" (runs one after another inside one compiled
    program, `runs_per_batch` at a time vectorised), "vmap" (all runs of a device at once). `shard` spreads the
    run axis over local devices ("auto": when there are several). A *chunk* is the steps between two moments where
    the progress bar and progress.log advance, checkpoints are written and stop rules are checked: `chunk_logs` ≥ 1
    makes every chunk one compiled call of exactly that many log intervals; 0 (default) sizes chunks by measured
    time, to about `chunk_seconds` each (at least one log interval; see `nht_jax.training.chunks`).
    `checkpoint_every_s`: seconds between atomic checkpoints.

    `memory_cap_gib`: the memory (GiB = 2³⁰ bytes, per device) a *run slice* may use: the run axis is cut into run
    slices that fit it, trained one after another (each chunk by chunk) into the same results
    (`nht_jax.engine.memory`). 0 (default): 90 % of the limit the device reports, or half the host's RAM where it
    reports none (CPU).

    `stop_rule`: when a run leaves the compiled batch, checked between chunks (`nht_jax.measure.stopping`): "none"
    (default: every run trains the full budget), "transition" (`stop_margin_steps` after its T_transition, as
    defined by [analysis]), "diverged" (at the first non-finite log), "transition_or_diverged". A stopped run's
    metrics after its `stopped_step` hold their value at that step. Unlike the other keys this changes results.

    Snapshots (`nht_jax.training.snapshots`): `snapshot_steps` lists logged steps (of `train.log_every` or
    `train.log_schedule`) at which every run's whole state is kept; `snapshot_at_fit` keeps each run's state at its
    T_fit ([analysis]). They are written to snapshots.npz beside the results (what `[fork]` starts from) and never
    change a trajectory; while unset they are left out of config.toml (`DIGEST_OMITS_DEFAULT`).

    `live`: the live table between chunks (`nht_jax.training.live`: live.csv, live_history.csv, live.png and a
    progress.log line per chunk); false turns it off. It never changes a result; left out of config.toml while on.
    `live_forecast`: the live forecast's options, a table of `nht_jax.forecast.options.ForecastSettings` fields (the
    window, the interval's level, the pilots, the V̂_post rule `v_post` and its `trend_weight`, κ for the forecast
    at T_fit), e.g. `--set execution.live_forecast.v_post=pilot-trend`; left out of config.toml at its defaults.
    The spellings before 2026-12-03, `live_v_post` and `live_trend_weight`, are read as its `v_post` and
    `trend_weight` (`OLD_SPELLINGS`). `live_calibration`: a finished results folder (a pilot sweep of the same
    task) whose transitioned runs calibrate the live law's κ and V★ beside the grid's own, so that a run has a
    forecast at its T_fit before any run of the grid has transitioned; empty (default): none; left out of
    config.toml while empty. `live_every_s`: the least seconds between two updates of the live table
    (0, the default: after every chunk, i.e. about every `chunk_seconds`); the first chunk's and the last are always
    shown. Left out of config.toml at its default.
    """

    strategy: Literal["auto", "map", "vmap"] = "auto"
    runs_per_batch: int = 1
    shard: Literal["auto", "on", "off"] = "auto"
    chunk_logs: int = 0
    chunk_seconds: float = 5.0
    checkpoint_every_s: float = 30.0
    memory_cap_gib: float = 0.0
    stop_rule: Literal["none", "transition", "diverged", "transition_or_diverged"] = "none"
    stop_margin_steps: int = 2000
    snapshot_steps: tuple[int, ...] = ()
    snapshot_at_fit: bool = False
    live: bool = True
    live_forecast: ForecastSettings = ForecastSettings()
    live_calibration: str = ""
    live_every_s: float = 0.0


def validate_optim(o: OptimConfig) -> None:
    check(
        0 <= o.b1 < 1 and 0 <= o.b2 < 1 and 0 <= o.momentum < 1,
        f"optim.b1, optim.b2 and optim.momentum must lie in [0, 1), got {o.b1}, {o.b2}, {o.momentum}",
    )
    check(o.eps > 0, f"optim.eps must be > 0, got {o.eps}")
    if o.before or o.after:
        from nht_jax.engine import slots

        slots.check_entries("before", o.before)
        slots.check_entries("after", o.after)


def validate_train(t: TrainConfig) -> None:
    check(
        t.steps > 0 and t.log_every > 0,
        f"train.steps and train.log_every must be positive, got {t.steps}, {t.log_every}",
    )
    if t.log_schedule:
        validate_schedule(t.log_schedule, t.steps)
    else:
        check(
            t.steps % t.log_every == 0, f"train.steps ({t.steps}) must be a multiple of train.log_every ({t.log_every})"
        )
    check(t.batch_size >= 0, f"train.batch_size must be ≥ 0 (0 = full batch), got {t.batch_size}")
    check(
        t.noise_batch_size >= 0 and t.noise_samples >= 1,
        f"train.noise_batch_size must be ≥ 0 and train.noise_samples ≥ 1, got {t.noise_batch_size}, {t.noise_samples}",
    )
    check(t.eval_batch_size >= 1, f"train.eval_batch_size must be ≥ 1, got {t.eval_batch_size}")
    check(t.divergence_norm > 0, f"train.divergence_norm must be > 0, got {t.divergence_norm}")


def validate_execution(e: ExecutionConfig) -> None:
    check(e.runs_per_batch >= 1, f"execution.runs_per_batch must be ≥ 1, got {e.runs_per_batch}")
    check(e.chunk_logs >= 0, f"execution.chunk_logs must be ≥ 1 (or 0: chunks sized by time), got {e.chunk_logs}")
    check(e.chunk_seconds > 0, f"execution.chunk_seconds must be > 0, got {e.chunk_seconds}")
    check(e.checkpoint_every_s >= 0, f"execution.checkpoint_every_s must be ≥ 0, got {e.checkpoint_every_s}")
    check(
        e.memory_cap_gib >= 0,
        f"execution.memory_cap_gib must be ≥ 0 (0 = what the device allows), got {e.memory_cap_gib}",
    )
    check(e.stop_margin_steps >= 0, f"execution.stop_margin_steps must be ≥ 0, got {e.stop_margin_steps}")
    check(e.live_every_s >= 0, f"execution.live_every_s must be ≥ 0 (0: after every chunk), got {e.live_every_s}")
    e.live_forecast.check("execution.live_forecast.")


OLD_SPELLINGS = {
    "execution": {"live_v_post": ("live_forecast", "v_post"), "live_trend_weight": ("live_forecast", "trend_weight")}
}
"""Keys of config.toml and --set renamed since, by section: {old key: (table, key)}; read as their new place."""


def new_spellings(section: str, table: dict) -> dict:
    """`table` with its `OLD_SPELLINGS` moved to where they live now (the new spelling wins when both are given)."""
    moved = {k: v for k, v in table.items() if k not in OLD_SPELLINGS.get(section, {})}
    for old, (inner, key) in OLD_SPELLINGS.get(section, {}).items():
        if old in table:
            nested = moved.get(inner, {})
            if isinstance(nested, dict):
                moved[inner] = {key: table[old], **nested}
    return moved


def validate_snapshots(e: ExecutionConfig, t: TrainConfig) -> None:
    """Snapshot steps are distinct logged steps of the budget."""
    schedule = LogSchedule.of(t)
    bad = [n for n in e.snapshot_steps if not schedule.is_logged(n)]
    check(
        not bad,
        f"execution.snapshot_steps = {list(e.snapshot_steps)}: {bad} are not logged steps; choose "
        + (
            f"multiples of train.log_every = {t.log_every} from 0 to train.steps = {t.steps}"
            if not t.log_schedule
            else f"steps train.log_schedule logs ({LogSchedule.of(t).describe()})"
        ),
    )
    check(
        len(set(e.snapshot_steps)) == len(e.snapshot_steps),
        f"execution.snapshot_steps = {list(e.snapshot_steps)} repeats a step; list each step once",
    )
