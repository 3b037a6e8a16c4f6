"""Every section of a configuration but [task], [model] and [grid] (the domain's and the grid's own): [optim] and
[train], which change results; [execution], [live] and [stop], which say how the grid runs, what the live table
shows and when a run leaves the batch; [analysis], the definitions; [fork], where the runs start. Each a frozen
dataclass with its `validate_*`, called once as a configuration is built (`nht_jax.experiment.validate`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

from nht_jax.base.errors import check
from nht_jax.base.schema import unknown_key
from nht_jax.config.forecast import ForecastSettings
from nht_jax.config.schedule import LogSchedule, LogSegment, validate_schedule


class SlotEntryHint:
    """Type hint of one entry of an [optim] slot. The entries are read from TOML by the slot registry
    (`nht_jax.engine.slots.read_entry`, called by `nht_jax.experiment` before [optim] is built), which returns that
    entry's own settings dataclass; this hint takes such a value as it is, and its slot is checked with the
    configuration (`experiment.validate`)."""

    slot = ""

    @classmethod
    def from_toml(cls, where: str, value):
        check(
            dataclasses.is_dataclass(value) and not isinstance(value, type),
            f"{where}: {value!r} is not a read entry of the '{cls.slot}' slot; build configurations with "
            f"nht_jax.load or nht_jax.experiment.from_dict, which read each entry through the slot registry",
        )
        return value


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
    they are left out of the results digest (`nht_jax.config.tables.digest_table`).
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


@dataclass(frozen=True)
class TrainConfig:
    """The loop: settings that change results.

    batch_size 0 means full batch. Metrics are recorded at step 0 and every `log_every` steps; `steps` must be
    a multiple of `log_every`. `log_schedule` (`nht_jax.config.schedule`), when set, replaces `log_every` (which
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
    """How a grid runs. No key here changes a result, so [execution] is left out of the results digest
    (`experiment.digest`): resuming or re-running with another strategy or device count is the same experiment.

    `strategy`: "auto" (sequential on CPU, vmap elsewhere), "map" (runs one after another inside one compiled
    program, `runs_per_batch` at a time vectorised), "vmap" (all runs of a device at once). `shard` spreads the
    run axis over local devices ("auto": when there are several). A *chunk* is the steps between two moments where
    the progress bar and progress.log advance, checkpoints are written and the stop rule is checked: `chunk_logs` ≥ 1
    makes every chunk one compiled call of exactly that many log intervals; 0 (default) sizes chunks by measured
    time, to about `chunk_seconds` each (at least one log interval; see `nht_jax.training.chunks`).
    `checkpoint_every_s`: seconds between atomic checkpoints.

    `memory_cap_gib`: the memory (GiB = 2³⁰ bytes, per device) a *run slice* may use: the run axis is cut into run
    slices that fit it, trained one after another (each chunk by chunk) into the same results
    (`nht_jax.engine.memory`). 0 (default): 90 % of the limit the device reports, or half the host's RAM where it
    reports none (CPU).

    Snapshots (`nht_jax.training.snapshots`): `snapshot_steps` lists logged steps (of `train.log_every` or
    `train.log_schedule`) at which every run's whole state is kept; `snapshot_at_fit` keeps each run's state at its
    T_fit ([analysis]). They are written to snapshots.npz beside the results (what `[fork]` starts from) and never
    change a trajectory; while unset they are left out of config.toml (`nht_jax.config.tables`).
    """

    strategy: Literal["auto", "map", "vmap"] = "auto"
    runs_per_batch: int = 1
    shard: Literal["auto", "on", "off"] = "auto"
    chunk_logs: int = 0
    chunk_seconds: float = 5.0
    checkpoint_every_s: float = 30.0
    memory_cap_gib: float = 0.0
    snapshot_steps: tuple[int, ...] = ()
    snapshot_at_fit: bool = False


@dataclass(frozen=True)
class LiveConfig:
    """[live]: the live table between chunks (`nht_jax.training.live`: live.csv, live_history.csv, live.png and a
    progress.log line per chunk). It never changes a result, so [live] is outside the results digest, and left out
    of config.toml while every key is at its default.

    `enabled`: false turns the table off. `every_s`: the least seconds between two updates (0, the default: after
    every chunk, i.e. about every `execution.chunk_seconds`); the first chunk's and the last are always shown.
    `forecast`: the live forecast's options, a table of `ForecastSettings` fields (the window, the interval's level,
    the pilots, the V̂_post rule `v_post` and its `trend_weight`, κ for the forecast at T_fit), e.g.
    `--set live.forecast.v_post=pilot-trend`. `calibration`: a finished results folder (a pilot sweep of the same
    task) whose transitioned runs calibrate the live law's κ and V★ beside the grid's own, so that a run has a
    forecast at its T_fit before any run of the grid has transitioned; empty (default): none.
    """

    enabled: bool = True
    every_s: float = 0.0
    forecast: ForecastSettings = ForecastSettings()
    calibration: str = ""


@dataclass(frozen=True)
class StopConfig:
    """[stop]: when a run leaves the compiled batch, checked by the loop between chunks (`nht_jax.measure.stopping`).

    `rule`: "none" (default: every run trains the full budget), "transition" (`margin_steps` after its
    T_transition, as defined by [analysis]), "diverged" (at the first non-finite log), "transition_or_diverged".
    A stopped run's metrics after its `stopped_step` hold their value at that step. This changes the trajectories
    of the runs it stops, so a rule other than "none" is folded into the results digest
    (`nht_jax.measure.stopping.results_digest`); "none" leaves the digest as it was before stop rules existed.
    """

    rule: Literal["none", "transition", "diverged", "transition_or_diverged"] = "none"
    margin_steps: int = 2000


def validate_optim(o: OptimConfig) -> None:
    check(
        0 <= o.b1 < 1 and 0 <= o.b2 < 1 and 0 <= o.momentum < 1,
        f"optim.b1, optim.b2 and optim.momentum must lie in [0, 1), got {o.b1}, {o.b2}, {o.momentum}",
    )
    check(o.eps > 0, f"optim.eps must be > 0, got {o.eps}")


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


def validate_live(live: LiveConfig) -> None:
    check(live.every_s >= 0, f"live.every_s must be ≥ 0 (0: after every chunk), got {live.every_s}")
    live.forecast.check("live.forecast.")


def validate_stop(stop: StopConfig) -> None:
    check(stop.margin_steps >= 0, f"stop.margin_steps must be ≥ 0, got {stop.margin_steps}")


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


@dataclass(frozen=True)
class AnalysisConfig:
    """Definitions used by the analysis (our choices where the papers are silent).

    T_fit: first logged step at which `fit_metric` is ≥ fit_threshold (`fit_direction` = "above": train accuracy
    ≥ 0.99 by default) or ≤ it ("below": e.g. the toy domains' relative training loss).
    T_transition: first logged step at or after T_fit at which the metric `transition_metric` (empty = the
    domain's headline metric, filled in at load) is ≥ transition_threshold (`transition_direction` = "above",
    e.g. test accuracy) or ≤ transition_threshold ("below", e.g. shortcut reliance falling to one half: our
    definition of T for the vision domains, docs/science.md §3 leaves it open).
    transition_persists: when true, T_transition is the first logged step ≥ T_fit from which the criterion
    holds at every later log (a momentary crossing by a noisy metric does not count); when false (default),
    the first logged step at which it holds.
    A domain may set its own defaults for these keys (`Domain.analysis_defaults`: the toy regression domains fit
    on a loss, not an accuracy); a preset's [analysis] table overrides them.
    regime_rule "accuracy": strong = never fits; weak = fits, no transition within the budget; structured =
    fits and the transition criterion already holds at T_fit (no delay at log resolution); intermediate = fits,
    then transitions later. regime_rule "norm": strong = never fits; intermediate = ‖θ‖² falls by more than
    `norm_decay_fraction` of its peak after the peak; weak = otherwise; this rule has no "structured".
    Paper's names for the (λ, ρ) diagram: weak ↔ shortcut-dominated, intermediate ↔ transition,
    structured ↔ structured, strong ↔ suppressed.
    """

    fit_metric: str = "train_acc"
    fit_direction: Literal["above", "below"] = "above"
    fit_threshold: float = 0.99
    transition_threshold: float = 0.99
    transition_metric: str = ""
    transition_direction: Literal["above", "below"] = "above"
    transition_persists: bool = False
    regime_rule: Literal["accuracy", "norm"] = "accuracy"
    norm_decay_fraction: float = 0.1


FORK_KEYS = ("from", "select", "step", "source_digest", "sources")


@dataclass(frozen=True)
class ForkConfig:
    """[fork]: every run starts from a snapshot of one run of another results folder (`nht_jax.training.fork`).

    from: the source results folder; select: {axis: value} choosing the source runs (each forked run takes the
    one of them with its own seed); step: "fit" (each source run's state at its T_fit) or a snapshotted step.
    source_digest and sources are filled in by `nht run` before training (the source's results digest, and per
    forked seed {run, seed, step}: the source run and the step of its snapshot), so config.toml and the digest
    name the origin; given in a file, they must agree with the folder.
    """

    from_: str
    select: dict = field(default_factory=dict)
    step: str | int = "fit"
    source_digest: str = ""
    sources: tuple = ()

    def origin_text(self) -> str:
        """One line naming the origin, for figures."""
        runs = ", ".join(str(s["run"]) for s in self.sources)
        select = ", ".join(f"{k} = {v:g}" for k, v in self.select.items())
        at = "T_fit" if self.step == "fit" else f"step {self.step}"
        return (
            f"forked from {self.from_.rstrip('/').split('/')[-1]} at {at} of run(s) {runs}"
            f"{f' ({select})' if select else ''}, source digest {self.source_digest}"
        )

    def as_table(self) -> dict:
        table = {"from": self.from_, "select": dict(self.select), "step": self.step}
        if self.source_digest:
            table["source_digest"] = self.source_digest
            table["sources"] = [dict(s) for s in self.sources]
        return table


def read_fork(table) -> ForkConfig | None:
    """[fork] as a ForkConfig (None when absent), its keys checked."""
    if table is None:
        return None
    check(isinstance(table, dict), f"[fork] must be a table, got {table!r}")
    for key in table:
        if key not in FORK_KEYS:
            raise unknown_key("fork.", key, list(FORK_KEYS))
    source = table.get("from")
    check(
        isinstance(source, str) and source.strip() != "",
        f'fork.from must name a results folder (a path), got {source!r}; e.g. [fork] from = "runs/out/tiny"',
    )
    select = table.get("select", {})
    check(
        isinstance(select, dict)
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in select.values()),
        f"fork.select must be a table of axis = number (e.g. {{weight_decay = 0.19}}), got {select!r}",
    )
    step = table.get("step", "fit")
    check(
        step == "fit" or (isinstance(step, int) and not isinstance(step, bool) and step >= 0),
        f'fork.step must be "fit" or a snapshotted step (an integer ≥ 0), got {step!r}',
    )
    sources = table.get("sources", [])
    check(
        isinstance(sources, list) and all(isinstance(x, dict) and set(x) == {"run", "seed", "step"} for x in sources),
        f"fork.sources is written by nht run (a list of {{run, seed, step}}); got {sources!r}: remove it",
    )
    digest_ = table.get("source_digest", "")
    check(isinstance(digest_, str), f"fork.source_digest is written by nht run (a string); got {digest_!r}")
    return ForkConfig(source, dict(select), step, digest_, tuple(dict(x) for x in sources))
