"""`nht tool find-lambda PRESET`: the weak→intermediate and intermediate→strong boundaries in λ, and the λ with the
shortest delay, to a stated factor, by rounds of small vectorised sweeps instead of one dense grid.

Each round is one ordinary sweep of the preset with `grid.weight_decay` replaced by the round's λ, into
OUT/round-NN; after each, every run so far is pooled and the three targets are estimated per slice
(`nht_jax.analysis.fits.regime_boundaries`, the median delay), and λ are proposed where a target is not yet known
to the factor, until none is proposed, `max_rounds`, or the budget is spent. Finished rounds are read back on a
rerun (OUT/round-NN/find_lambda_round.json). The training is injected (`RoundRunner`): the command passes the
sweep (`nht_jax.training.sweep.run_sweep`), the tests a known regime function.

The algorithm, every choice and where to change it, the dense reference and resuming:
docs/guides/find-lambda.md; what it measured: docs/findings/find-lambda.md."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from nht_jax import experiment
from nht_jax.analysis import fits
from nht_jax.analysis.tables import csv_text, fmt, markdown_table
from nht_jax.base.atomic import atomic_write_text
from nht_jax.base.errors import check
from nht_jax.engine import grid as grid_lib

AXIS = "weight_decay"
ROUND_FILE = "find_lambda_round.json"
BOUNDARIES = tuple(name for name, _ in fits.TRANSITIONS)
SHORTEST = "shortest delay"


@dataclass(frozen=True)
class SearchOptions:
    """The search's choices (module docstring).

    factor: the width a target must reach, hi / lo (> 1). coarse: λ of the first round, log-spaced over `span`.
    span: (lo, hi) of the search, default the preset grid's positive λ extent. budget: run·steps at most (None:
    the dense reference's). points: λ per refined gap (1 = bisection). extend: coarse steps the search may go past
    each end of `span`. max_rounds: rounds at most. digits: significant digits of every λ tried. refine_delay:
    whether the shortest delay asks for λ too (False: it is reported from the λ the boundaries bring).
    weak_below_delay: fit weak→intermediate on the λ up to the shortest delay only (module docstring).
    """

    factor: float = 1.5
    coarse: int = 5
    span: tuple[float, float] | None = None
    budget: float | None = None
    points: int = 1
    extend: int = 2
    max_rounds: int = 12
    digits: int = 3
    refine_delay: bool = True
    weak_below_delay: bool = True

    def __post_init__(self):
        check(self.factor > 1, f"--factor must be > 1 (the width hi/lo a boundary must reach), got {self.factor}")
        check(self.coarse >= 3, f"--coarse must be ≥ 3 λ (two boundaries need three regimes), got {self.coarse}")
        check(
            self.span is None or (len(self.span) == 2 and 0 < self.span[0] < self.span[1]),
            f"--span must be two λ with 0 < LO < HI, got {self.span}",
        )
        check(self.budget is None or self.budget > 0, f"--budget must be > 0 run·steps, got {self.budget}")
        check(self.points >= 1, f"--points must be ≥ 1, got {self.points}")
        check(self.extend >= 0, f"--extend must be ≥ 0, got {self.extend}")
        check(self.max_rounds >= 1, f"--max-rounds must be ≥ 1, got {self.max_rounds}")
        check(1 <= self.digits <= 8, f"--digits must lie in 1..8, got {self.digits}")


class RoundRunner(NamedTuple):
    """How a round is trained and read back. train(config, folder) → summary rows (trains, or resumes a killed
    round); load(folder) → the summary rows of a finished round. Rows as `nht_jax.measure.summaries.summarize`'s."""

    train: Callable
    load: Callable


class Target(NamedTuple):
    """One thing searched for in one slice: status "known", "refining", "unresolved: …", "not in range: …" or the
    fit's own status; value and interval (lo, hi) in λ; proposals: the λ it asks for next."""

    slice: tuple
    name: str
    status: str
    value: float = math.nan
    interval: tuple = (math.nan, math.nan)
    method: str = ""
    proposals: tuple = ()

    @property
    def width(self) -> float:
        lo, hi = self.interval
        return hi / lo if lo > 0 and np.isfinite(hi) else math.nan

    def as_row(self) -> dict:
        return {
            "slice": fits.slice_text(self.slice),
            "target": self.name,
            "status": self.status,
            "lambda": self.value,
            "lo": self.interval[0],
            "hi": self.interval[1],
            "width": self.width,
            "method": self.method,
        }


@dataclass
class Round:
    """One round: its λ, its runs and run·steps, whether it was read back, and the targets after it."""

    index: int
    lambdas: tuple
    runs: int
    run_steps: int
    reused: bool
    rows: list = field(repr=False, default_factory=list)
    targets: list = field(default_factory=list)


@dataclass
class Search:
    """A finished search: rounds, final targets, why it stopped, its cost and the dense reference's."""

    preset: str
    options: SearchOptions
    rounds: list
    targets: list
    stopped: str
    budget: float
    runs_per_lambda: int
    steps: int

    @property
    def tested(self) -> np.ndarray:
        return np.unique(np.concatenate([r.lambdas for r in self.rounds]))

    @property
    def runs(self) -> int:
        return sum(r.runs for r in self.rounds)

    @property
    def run_steps(self) -> int:
        return sum(r.run_steps for r in self.rounds)

    def dense(self) -> dict:
        """The dense reference over the tested range: its λ count, runs and run·steps."""
        n = dense_count(self.tested.min(), self.tested.max(), self.options.factor)
        return {"lambdas": n, "runs": n * self.runs_per_lambda, "run_steps": n * self.runs_per_lambda * self.steps}


# ----------------------------------------------------------------------------- λ arithmetic


def rounded(value: float, digits: int) -> float:
    """value to `digits` significant digits."""
    return float(f"{value:.{digits}g}")


def log_points(lo: float, hi: float, n: int) -> np.ndarray:
    """The n points strictly inside (lo, hi) cutting it into n + 1 equal parts in log λ."""
    return np.geomspace(lo, hi, n + 2)[1:-1]


def coarse_grid(span: tuple[float, float], n: int, digits: int) -> tuple[float, ...]:
    """n λ log-spaced from span[0] to span[1] (both included), rounded."""
    return tuple(sorted({rounded(x, digits) for x in np.geomspace(*span, n)}))


def dense_count(lo: float, hi: float, factor: float) -> int:
    """λ of a log grid from lo to hi whose neighbours are at most `factor` apart: ⌈log(hi/lo) / log factor⌉ + 1."""
    return int(math.ceil(math.log(hi / lo) / math.log(factor) - 1e-9)) + 1


def merged(candidates, tested: np.ndarray, factor: float, digits: int) -> tuple[float, ...]:
    """Candidates rounded, in order, dropping one near a tested λ or one kept before it.

    Args:
        candidates: the λ candidates.
        tested: the λ tested so far.
        factor: a candidate within factor^(1/4) of another is dropped.
        digits: significant digits kept.

    Returns:
        The λ kept.
    """
    tolerance = math.log(factor) / 4
    kept: list[float] = []
    for value in candidates:
        value = rounded(value, digits)
        near = [*tested, *kept]
        if not near or np.min(np.abs(np.log(near) - math.log(value))) >= tolerance:
            kept.append(value)
    return tuple(kept)


# ----------------------------------------------------------------------------- the targets


def cut(a: float, b: float, options: SearchOptions) -> list[float]:
    """`options.points` points cutting the gap (a, b) into equal parts in log λ, fewer where the parts would come
    closer than factor^(1/4) (`merged` would drop them); at least one."""
    room = int(math.log(b / a) / (math.log(options.factor) / 4) + 1e-9) - 1
    return [float(p) for p in log_points(a, b, max(1, min(options.points, room)))]


def gaps(tested: np.ndarray) -> list[tuple[float, float]]:
    """Adjacent pairs of the sorted tested λ."""
    return list(zip(tested[:-1], tested[1:]))


def refine_gaps(interval: tuple, tested: np.ndarray, options: SearchOptions) -> list[float]:
    """Points cutting every gap between tested λ that overlaps the open interval and is wider than √factor."""
    lo, hi = interval
    out: list[float] = []
    for a, b in gaps(tested):
        if a < hi and b > lo and b / a > math.sqrt(options.factor):
            out += cut(a, b, options)
    return out


def bracket(tested: np.ndarray, value: float) -> tuple[float, float]:
    """The nearest tested λ at or below value and at or above it."""
    below, above = tested[tested <= value], tested[tested >= value]
    return float(below.max()), float(above.min())


def boundary_target(
    boundary: fits.Boundary, tested: np.ndarray, limits: tuple[float, float], step: float, options: SearchOptions
) -> Target:
    """The state of one boundary of one slice and the λ it asks for (module docstring)."""
    base = {"slice": boundary.slice, "name": boundary.transition, "method": boundary.method}
    if boundary.status.startswith("no boundary in range"):
        below = (np.isfinite(boundary.value) and boundary.value < tested.min()) or (
            not np.isfinite(boundary.value) and boundary.fractions and boundary.fractions[0] > 0.5
        )
        beyond = tested.min() / step if below else tested.max() * step
        inside = limits[0] * (1 - 1e-6) <= beyond <= limits[1] * (1 + 1e-6)
        side = "below" if below else "above"
        if not inside:
            return Target(
                status=f"not in range: {side} every λ tried, the search's limit", value=boundary.value, **base
            )
        return Target(status=f"refining: {side} every λ tried", value=boundary.value, proposals=(beyond,), **base)
    if not boundary.ok:
        return Target(status=boundary.status, **base)
    interval = boundary.ci if np.all(np.isfinite(boundary.ci)) else bracket(tested, boundary.value)
    width = interval[1] / interval[0]
    if width <= options.factor:
        return Target(status="known", value=boundary.value, interval=interval, **base)
    proposals = tuple(refine_gaps(interval, tested, options))
    status = (
        "refining"
        if proposals
        else (
            f"unresolved: regimes mixed over ×{width:.3g} although the tried λ are "
            f"≤ ×{math.sqrt(options.factor):.3g} apart (more seeds would narrow it)"
        )
    )
    return Target(status=status, value=boundary.value, interval=interval, proposals=proposals, **base)


def shortest_set(lam: np.ndarray, delay: np.ndarray, usable: np.ndarray) -> tuple[float, float] | None:
    """(smallest, largest) λ of S, the tied λ of the shortest median delay among the usable runs; None without any."""
    if not usable.any():
        return None
    columns = np.unique(lam[usable])
    medians = np.array([np.median(delay[usable & (lam == c)]) for c in columns])
    best = columns[medians == medians.min()]
    return float(best.min()), float(best.max())


def delay_target(
    label: tuple, lam: np.ndarray, delay: np.ndarray, usable: np.ndarray, tested: np.ndarray, options: SearchOptions
) -> Target:
    """The λ with the shortest median delay among the usable runs of one slice, its interval and the λ it asks
    for (module docstring)."""
    base = {"slice": label, "name": SHORTEST, "method": "median delay per λ"}
    found = shortest_set(lam, delay, usable)
    if found is None:
        return Target(status="no run with a delay (no intermediate run)", **base)
    lo_s, hi_s = found
    lo = float(tested[tested < lo_s].max()) if (tested < lo_s).any() else lo_s
    hi = float(tested[tested > hi_s].min()) if (tested > hi_s).any() else hi_s
    value = float(math.sqrt(lo_s * hi_s))
    wide = [(a, b) for a, b in ((lo, lo_s), (hi_s, hi)) if b / a > math.sqrt(options.factor)]
    if not wide:
        return Target(status="known", value=value, interval=(lo, hi), **base)
    if not options.refine_delay:
        return Target(status="not refined (--boundaries-only)", value=value, interval=(lo, hi), **base)
    proposals = tuple(p for a, b in wide for p in cut(a, b, options))
    return Target(status="refining", value=value, interval=(lo, hi), proposals=proposals, **base)


def below_shortest(
    boundary: fits.Boundary, table: fits.RunTable, positions: np.ndarray, top: float, fit_options: fits.FitOptions
) -> fits.Boundary:
    """The weak→intermediate boundary fitted again on the slice's runs at λ ≤ top (the shortest delay's largest
    λ), with the same fit (`fits.find_boundary`)."""
    rank, reasons = fits.regime_ranks(table, AXIS, fit_options, log=True)
    keep = positions[(reasons[positions] == "") & (table.axes[AXIS][positions] <= top)]
    estimate = fits.find_boundary(table.axes[AXIS][keep], rank[keep] >= 1, fit_options, log=True)
    return dataclasses.replace(boundary, runs=tuple(int(r) for r in table.run[keep]), **estimate._asdict())


def targets_of(
    rows: list[dict], limits: tuple[float, float], step: float, options: SearchOptions, fit_options: fits.FitOptions
) -> list[Target]:
    """Every target of every slice from the pooled summary rows of the rounds so far."""
    table = fits.run_table(rows)
    lam = table.axes[AXIS]
    boundaries = fits.regime_boundaries(table, AXIS, fit_options, log=True)
    usable = np.isin(table.regime, fit_options.regimes) & ~table.diverged & np.isfinite(table.delay) & (table.delay > 0)
    out = []
    for label, positions in fits.slices(table, AXIS):
        tested = np.unique(lam[positions])
        mask = np.zeros(table.size, bool)
        mask[positions] = True
        shortest = shortest_set(lam, table.delay, usable & mask)
        for boundary in boundaries:
            if boundary.slice != label:
                continue
            if boundary.transition == BOUNDARIES[0] and options.weak_below_delay and shortest is not None:
                boundary = below_shortest(boundary, table, positions, shortest[1], fit_options)
            out.append(boundary_target(boundary, tested, limits, step, options))
        out.append(delay_target(label, lam, table.delay, usable & mask, tested, options))
    return out


def next_lambdas(targets: list[Target], tested: np.ndarray, options: SearchOptions) -> tuple[float, ...]:
    """The pooled proposals, boundaries before the shortest delay and wider intervals first, merged."""

    def priority(target: Target):
        return (target.name == SHORTEST, -(target.width if np.isfinite(target.width) else math.inf))

    candidates = [p for t in sorted(targets, key=priority) for p in t.proposals]
    return merged(candidates, tested, options.factor, options.digits)


# ----------------------------------------------------------------------------- configuration and rounds


def base_config(preset: str, overrides=(), scale: str | None = None) -> experiment.Config:
    """The preset as the search trains it, refused when λ is not a plain grid axis."""
    config = experiment.load(preset, overrides, scale)
    check(AXIS in config.axes, f"{preset} has no weight-decay axis (grid.{AXIS}): find-lambda searches along λ")
    for group in config.zipped:
        check(
            AXIS not in group,
            f"{preset} pairs grid.{AXIS} with {', '.join(a for a in group if a != AXIS)} "
            f"(zipped or random axes): find-lambda needs λ as an axis of its own",
        )
    return config


def default_span(config: experiment.Config, preset: str) -> tuple[float, float]:
    """The positive extent of the preset's λ grid; refused with one value or none positive."""
    values = sorted({float(v) for v in np.atleast_1d(config.grid.get(AXIS, ())) if float(v) > 0})
    check(
        len(values) >= 2,
        f"{preset}'s grid has {len(values)} positive λ ({config.grid.get(AXIS)}), no range to "
        f"search: give one with --span LO HI",
    )
    return values[0], values[-1]


def round_config(preset: str, overrides, scale, lambdas) -> experiment.Config:
    text = ", ".join(repr(float(v)) for v in lambdas)
    return experiment.load(preset, [*overrides, f"grid.{AXIS}=[{text}]"], scale)


def read_round(folder: Path) -> dict | None:
    """A finished round's record ({"lambdas", "digest"}), None when the round has not finished."""
    try:
        record = json.loads((folder / ROUND_FILE).read_text())
        return {"lambdas": tuple(float(v) for v in record["lambdas"]), "digest": str(record["digest"])}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def play_round(index: int, lambdas, folder: Path, preset: str, overrides, scale, runner: RoundRunner) -> Round:
    """Round `index` over `lambdas` in `folder`: read back when it has finished, else trained."""
    record = read_round(folder)
    if record is not None:
        lambdas = record["lambdas"]
    config = round_config(preset, overrides, scale, lambdas)
    digest = experiment.digest(config)
    runs = grid_lib.num_runs(config.runs())
    if record is not None:
        check(
            record["digest"] == digest,
            f"'{folder}' holds a round trained with other settings (preset, --scale or --set changed): use "
            f"another --out, or delete the folder",
        )
        rows = runner.load(folder)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        rows = runner.train(config, folder)
        atomic_write_text(folder / ROUND_FILE, json.dumps({"lambdas": list(lambdas), "digest": digest}))
    return Round(index, tuple(lambdas), runs, runs * config.train.steps, record is not None, list(rows))


def pooled(rounds: list[Round]) -> list[dict]:
    """Every round's rows, renumbered, λ snapped to the round's own values (a summary holds them to 6 digits, a
    float32 grid to 7)."""
    rows = []
    for r in rounds:
        asked = np.log(r.lambdas)
        for row in r.rows:
            nearest = r.lambdas[int(np.abs(asked - math.log(float(row[AXIS]))).argmin())]
            rows.append({**row, "run": len(rows), AXIS: nearest})
    return rows


def find_lambda(
    preset: str,
    out: Path,
    runner: RoundRunner,
    options: SearchOptions = SearchOptions(),
    overrides=(),
    scale: str | None = None,
    fit_options: fits.FitOptions = fits.FitOptions(),
    echo: Callable[[str], None] = print,
) -> Search:
    """The search of the module docstring, rounds in out/round-NN; writes out/find_lambda.md and .csv (after every
    round, so a killed search leaves its report so far).

    Args:
        preset: the preset (or TOML file) searched.
        out: the folder of the search.
        runner: how a round is trained and read back.
        options: the search's options.
        overrides: `--set` overrides of the preset.
        scale: the preset's scale, or None.
        fit_options: the options of the regime fits.
        echo: where the progress lines go.

    Returns:
        The Search.
    """
    config = base_config(preset, overrides, scale)
    span = options.span or default_span(config, preset)
    coarse = coarse_grid(span, options.coarse, options.digits)
    runs_per_lambda = grid_lib.num_runs(round_config(preset, overrides, scale, coarse).runs()) // len(coarse)
    steps = config.train.steps
    step = (span[1] / span[0]) ** (1 / (options.coarse - 1))
    limits = (span[0] / step**options.extend, span[1] * step**options.extend)
    budget = options.budget or dense_count(*span, options.factor) * runs_per_lambda * steps
    cost = runs_per_lambda * steps
    check(
        len(coarse) * cost <= budget,
        f"the budget ({budget:,.0f} run·steps) is smaller than the first round "
        f"({len(coarse)} λ × {runs_per_lambda} runs × {steps} steps = "
        f"{len(coarse) * cost:,} run·steps): raise --budget or lower --coarse",
    )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rounds: list[Round] = []
    lambdas, stopped = coarse, ""
    search = Search(preset, options, rounds, [], "", budget, runs_per_lambda, steps)
    while True:
        spent = sum(r.run_steps for r in rounds)
        affordable = int((budget - spent) // cost)
        if len(lambdas) > affordable:
            lambdas = lambdas[:affordable]
            if not lambdas:
                stopped = f"budget spent: the next λ needs {cost:,} run·steps, {budget - spent:,.0f} left"
                break
        index = len(rounds) + 1
        current = play_round(index, lambdas, out / f"round-{index:02d}", preset, overrides, scale, runner)
        rounds.append(current)
        tested = np.unique(np.concatenate([r.lambdas for r in rounds]))
        current.targets = targets_of(pooled(rounds), limits, step, options, fit_options)
        search.targets = current.targets
        echo(round_text(current, search))
        write_report(search, out)
        lambdas = next_lambdas(current.targets, tested, options)
        if not lambdas:
            stopped = "every target known or unresolvable"
            break
        if len(rounds) >= options.max_rounds:
            stopped = f"max_rounds ({options.max_rounds}) reached"
            break
    search.stopped = stopped
    write_report(search, out)
    echo(final_text(search))
    return search


# ----------------------------------------------------------------------------- what is printed and written


def regimes_text(rows: list[dict], lambdas) -> str:
    """ "λ: regime ×n, …" for each λ of the round."""
    parts = []
    for value in lambdas:
        regimes = [row["regime"] for row in rows if math.isclose(float(row[AXIS]), value, rel_tol=1e-5)]
        counts = {r: regimes.count(r) for r in dict.fromkeys(regimes)}
        parts.append(f"{value:g}: " + ", ".join(f"{r} ×{n}" for r, n in counts.items()))
    return "; ".join(parts)


def target_text(target: Target) -> str:
    interval = (
        f" [{fmt(target.interval[0])}, {fmt(target.interval[1])}] ×{fmt(target.width)}"
        if np.isfinite(target.width)
        else ""
    )
    return f"{target.name} {fmt(target.value)}{interval} ({target.status})"


def round_text(current: Round, search: Search) -> str:
    how = "read back" if current.reused else "trained"
    lines = [
        f"round {current.index} ({how}): λ = {', '.join(f'{v:g}' for v in current.lambdas)} — {current.runs} runs, "
        f"{current.run_steps:,} run·steps; so far {search.runs} runs, {search.run_steps:,} of "
        f"{search.budget:,.0f} run·steps",
        f"  regimes  {regimes_text(current.rows, current.lambdas)}",
    ]
    for label in dict.fromkeys(t.slice for t in current.targets):
        lines.append(
            f"  {fits.slice_text(label)}: " + "; ".join(target_text(t) for t in current.targets if t.slice == label)
        )
    return "\n".join(lines)


def cost_rows(search: Search) -> list[dict]:
    dense = search.dense()
    return [
        {"grid": "find-lambda", "lambdas": len(search.tested), "runs": search.runs, "run·steps": search.run_steps},
        {
            "grid": f"dense (ratio ≤ {search.options.factor:g} over {search.tested.min():g}–{search.tested.max():g})",
            "lambdas": dense["lambdas"],
            "runs": dense["runs"],
            "run·steps": dense["run_steps"],
        },
    ]


def final_text(search: Search) -> str:
    dense = search.dense()
    return (
        f"stopped: {search.stopped}\n"
        + markdown_table([t.as_row() for t in search.targets])
        + f"used {search.runs} runs, {search.run_steps:,} run·steps in {len(search.rounds)} round(s); the dense "
        f"grid with the same width: {dense['lambdas']} λ, {dense['runs']} runs, {dense['run_steps']:,} run·steps"
    )


def report_markdown(search: Search) -> str:
    o = search.options
    rounds = [
        {
            "round": r.index,
            "λ": ", ".join(f"{v:g}" for v in r.lambdas),
            "runs": r.runs,
            "run·steps": r.run_steps,
            "how": "read back" if r.reused else "trained",
            "regimes": regimes_text(r.rows, r.lambdas),
        }
        for r in search.rounds
    ]
    return "\n".join(
        [
            f"# find-lambda: {search.preset}\n",
            f"factor {o.factor:g}, coarse {o.coarse}, span {o.span or 'the preset grid'}, points {o.points}, extend "
            f"{o.extend}, max_rounds {o.max_rounds}, digits {o.digits}, refine_delay {o.refine_delay}, weak_below_delay "
            f"{o.weak_below_delay}; budget {search.budget:,.0f} run·steps; "
            f"{search.runs_per_lambda} runs per λ × {search.steps} steps.\n",
            f"Stopped: {search.stopped or 'still running'}.\n",
            "## Targets\n",
            markdown_table([t.as_row() for t in search.targets]),
            "## Rounds\n",
            markdown_table(rounds),
            "## Cost against the dense grid\n",
            markdown_table(cost_rows(search)),
        ]
    )


def write_report(search: Search, out: Path) -> None:
    atomic_write_text(out / "find_lambda.md", report_markdown(search))
    atomic_write_text(out / "find_lambda.csv", csv_text([t.as_row() for t in search.targets]))


__all__ = ["RoundRunner", "find_lambda", "merged"]
