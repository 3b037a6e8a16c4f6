"""`nht paper reproduce [--out DIR] [--quick] [--only PART …]`: the papers' experiments at a CPU scale, each claim of
nht_jax.papers.claims next to our number.

Each part (`PARTS`) is a shipped preset trained at its own scale (`PRESET_SCALE`) and analysed with `nht analyze`;
`verify-bounds` runs the theory's checks on the exact toy models. Parts that read other parts name them as
`sources` (run first, their references pointed at DIR: `redirect`). A rerun reuses finished parts, resumes
interrupted ones and redoes only a missing or stale analysis; a folder of another configuration stops the command.
Every claim is judged with its preregistered row, and under each alternative definition (`AlternativeFolders`) so
that a verdict that flips is shown fragile (nht_jax.papers.scorecard). Writes scorecard.csv and reproduce.md into
DIR, atomically.

The parts, their scales, the verdict words and what reproduce.md holds: docs/papers/reproduce.md; the claims:
docs/papers/claims.md."""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from nht_jax.base.atomic import atomic_write_text, remove_stale_temporaries
from nht_jax.base.errors import ConfigError
from nht_jax.base.presets import QUICK, REPRODUCE, Scale
from nht_jax.papers import claims as claims_lib
from nht_jax.papers import preregistered
from nht_jax.papers import scorecard
from nht_jax.papers.measures import NotMeasured
from nht_jax.analysis.tables import csv_text, markdown_table

DEFAULT_OUT = Path("runs/out/reproduce")
BOUNDS = "verify-bounds"
THEIR_DATA = "their-data"
NO_PRESET = {BOUNDS: "nht paper verify-bounds", THEIR_DATA: "the reference table"}
"""What the parts without a preset run, as the report names it."""
PART_RECORD = "reproduce_part.json"


# ----------------------------------------------------------------------------- the parts and their scales


@dataclass(frozen=True)
class Part:
    """key: the folder name and the --only name; preset: the shipped preset it trains (None: verify-bounds);
    what: which claims of the papers it measures, in words; sources: the parts whose folders its preset reads
    (`references`), which run before it and which --only brings along."""

    key: str
    preset: str | None
    what: str
    sources: tuple[str, ...] = ()


PARTS = {
    p.key: p
    for p in (
        Part(
            "default",
            "default",
            "modular arithmetic: the three regimes in λ, P1–P6, S, the delay law, the "
            "diagnostics of docs/science.md §5 and the delay predictor",
        ),
        Part("toy-linear", "toy-linear", "the delay laws T ∝ 1/λ and 1/η on the theory's exactly solvable model"),
        Part(BOUNDS, None, "the bounds of docs/science.md §2 on the exact toy models (`nht paper verify-bounds`)"),
        Part(
            "border-digits",
            "border-digits",
            "shortcut images: the CIFAR-10 claims (P1–P6, S) on offline digits with the same spurious border",
        ),
        Part(
            "companion-exact-cpu",
            "companion-exact-cpu",
            "the companion's transformer, its code's choices exactly, at two λ of its λ-sweep",
        ),
        Part("sparse-parity", "sparse-parity", "the control that should not grok"),
        Part("phase-lambda-eta", "phase-lambda-eta", "the delay law T ∝ 1/η on a (λ, η) grid of the grokking MLP"),
        Part(
            "digits-grokking",
            "digits-grokking",
            "grokking on real images through a large initialisation: the delay against log(V_fit/V_post)",
        ),
        Part(
            "critical-norm",
            "critical-norm",
            "free runs over learning rates × seeds: W_c (the ‖θ‖ at which they grok) "
            "and its spread; the W_c and fork source of the next parts",
        ),
        Part(
            "interventions",
            "interventions",
            "every intervention forked from one memorised state per seed: clamp, "
            "temperature, norm injection, Grokfast, ⊥Grad, row clipping against the "
            "baseline",
            ("critical-norm",),
        ),
        Part(
            "norm-clamp",
            "norm-clamp",
            "the norm pinned at ρ·W_c over ρ × η: T_grok ∝ exp(αρ), the held norm's "
            "range of delays against the learning rate's",
            ("critical-norm",),
        ),
        Part(
            "logit-temperature",
            "logit-temperature",
            "pinned norms × output temperatures under cross-entropy: the "
            "temperature slides the delay; the delay against the effective "
            "logit scale",
            ("critical-norm",),
        ),
        Part(
            "critical-norm-mse",
            "critical-norm-mse",
            "free runs under a squared error: the MSE W_c, the W_c source of the next part",
        ),
        Part(
            "logit-temperature-mse",
            "logit-temperature-mse",
            "pinned norms × temperatures under a squared error, the "
            "pins at the MSE W_c: the logit scale's effect should "
            "vanish",
            ("critical-norm-mse",),
        ),
        Part(
            "critical-norm-ce",
            "critical-norm-ce",
            "free cross-entropy runs at the MSE parts' λ = 0.1: the W_c source of the controlled cross-entropy arm",
        ),
        Part(
            "logit-temperature-ce",
            "logit-temperature-ce",
            "the MSE grid under cross-entropy (same λ, η, ρ of each loss's own W_c, τ): the control of the MSE claim",
            ("critical-norm-ce",),
        ),
        Part(
            THEIR_DATA,
            None,
            "the follow-up papers' per-seed medians (nht_jax/papers/reference_cells.csv): our fits "
            "and ratios on their data, nothing trained",
        ),
        Part(
            "critical-norm-p59",
            "critical-norm-p59",
            "the clamp-law paper's MLP at p = 59, η = 8e-3, free runs: W_c "
            "and the free cell against the authors' per-seed medians; the W_c "
            "source of clamp-p59",
        ),
        Part(
            "clamp-p59",
            "clamp-p59",
            "the clamp-law paper's clamp cells ρ ∈ {0.85, 1} at p = 59, η = 8e-3 against the authors' per-seed medians",
            ("critical-norm-p59",),
        ),
        Part(
            "clamp-p59-t500",
            "clamp-p59-t500",
            "the same clamp cells with the authors' protocol: forked from the free runs at step 500, then pinned",
            ("critical-norm-p59",),
        ),
        Part(
            "clamp-p59-abs",
            "clamp-p59-abs",
            "the same forked cells pinned at the authors' absolute norms ρ·54.6 (their W_c at η = 1e-3)",
            ("critical-norm-p59",),
        ),
        Part(
            "batch-noise",
            "batch-noise",
            "the delay against the batch size at fixed η·λ on the default task: this "
            "theory's flat line against an Arrhenius escape in the gradient noise",
        ),
    )
}
"""Every part, in the order they run (a part's sources before it)."""


PRESET_SCALE = {"full": REPRODUCE, "quick": QUICK}
"""The presets' scale each part trains at each scale of `nht paper reproduce` (--quick picks "quick"): the part's preset at
its `[scale.reproduce]` / `[scale.quick]` table, with that table's `analyze` options for `nht analyze`, or as shipped
when the preset has no such table. The sizes live in the presets (docs/configuration/scales.md); nothing here."""


def part_scale(part: Part, scale: str) -> Scale | None:
    """The preset scale part `part` trains at reproduce's `scale` (None: the preset as shipped)."""
    from nht_jax import experiment

    return experiment.scales(part.preset).get(PRESET_SCALE[scale])


def folder_of(out: Path, key: str, scale: str) -> Path:
    return Path(out) / (key if scale == "full" else f"{key}-{scale}")


# ----------------------------------------------------------------------------- parts that read other parts


def references(config) -> tuple[str, ...]:
    """The results folders a configuration reads: every norm clamp's `critical_from`, then `[fork]`'s `from`."""
    from nht_jax.engine.interventions import NormClamp

    clamps = [s.critical_from for s in config.optim.after if isinstance(s, NormClamp) and s.critical_from]
    return tuple(dict.fromkeys(clamps + ([config.fork.from_] if config.fork is not None else [])))


def source_of(part: Part, reference: str) -> str:
    """The source part a reference of `part`'s preset names: a folder called <source> or <source>-<one of its
    preset's scales> (where `nht run SOURCE [--scale NAME]` writes), for a source in `part.sources`."""
    from nht_jax import experiment

    name = Path(reference).name
    for key in part.sources:
        if name == key or (name.startswith(key + "-") and name[len(key) + 1 :] in experiment.scales(PARTS[key].preset)):
            return key
    raise ConfigError(
        f"its preset reads the results folder '{reference}', which is none of the "
        f"parts it names as sources ({', '.join(part.sources) or 'none'}); name the folder "
        f"runs/out/<source part>[-<scale>] and add that part to the part's sources"
    )


def redirect(config, folders: dict[str, str]):
    """`config` with each reference (`references`) replaced by folders[reference], checked as loaded
    (`experiment.revised`)."""
    import dataclasses

    from nht_jax import experiment
    from nht_jax.engine.interventions import NormClamp

    after = tuple(
        dataclasses.replace(s, critical_from=folders[s.critical_from])
        if isinstance(s, NormClamp) and s.critical_from
        else s
        for s in config.optim.after
    )
    fork = config.fork and dataclasses.replace(config.fork, from_=folders[config.fork.from_])
    return experiment.revised(config, optim=dataclasses.replace(config.optim, after=after), fork=fork)


def redirected(part: Part, config, out: Path, scale: str):
    """(config with its references pointed at the source parts' folders under `out`, {reference: folder})."""
    folders = {ref: str(folder_of(out, source_of(part, ref), scale)) for ref in references(config)}
    return (redirect(config, folders) if folders else config), folders


def source_digest_problem(p: "Plan", finished_sources: bool) -> str | None:
    """Why a finished dependent part's folder does not match its sources (None when it does): its digest names the
    values taken from them (W_c, the fork's origin), so it is compared after resolving them."""
    from nht_jax.measure.stopping import results_digest
    from nht_jax.training.sweep import resolve_references

    if not finished_sources:
        return "its source part(s) " + ", ".join(p.part.sources) + " are not finished, so it was made from others"
    digest = json.loads((p.folder / "meta.json").read_text()).get("config_digest")
    resolved, _, _ = resolve_references(p.config)
    return None if digest == results_digest(resolved) else "it was made from other results of its source part(s)"


# ----------------------------------------------------------------------------- before anything trains


class Plan(NamedTuple):
    part: Part
    folder: Path
    config: object  # the sweep's Config (None for verify-bounds), its references pointed at DIR's parts
    analysis: object  # AnalyzeOptions (None for verify-bounds)
    overrides: tuple[str, ...]  # the preset scale's settings as `--set` lines (() as shipped)
    scale: str | None = None  # the preset scale trained (None: as shipped)
    moved: tuple = ()  # (reference in the preset, the source part's folder it reads instead)


def select(only) -> list[Part]:
    """The parts named by --only and the sources they read, in PARTS order; an unknown name fails with the known.

    Args:
        only: the part keys (empty or None: every part).

    Returns:
        The Parts.
    """
    unknown = sorted(set(only or ()) - set(PARTS))
    if unknown:
        raise ConfigError(f"unknown part(s) {', '.join(unknown)} for --only; choose among {', '.join(PARTS)}")
    chosen = set(only or PARTS)
    chosen |= {s for key in chosen for s in PARTS[key].sources}
    return [p for p in PARTS.values() if p.key in chosen]


def finished(folder: Path) -> bool:
    """A sweep folder whose training finished (meta.json is written last)."""
    return (Path(folder) / "meta.json").exists() and (Path(folder) / "trajectories.npz").exists()


def plan(out: Path, scale: str, parts: list[Part]) -> list[Plan]:
    """Every selected part's configuration and folder, checked before any training: bad overrides, an analysis
    option that does not exist, a folder holding another configuration's results or locked by another process
    all fail here.

    Args:
        out: DIR, the folder of the reproduction.
        scale: "full" or "quick".
        parts: the parts selected.

    Returns:
        One Plan per part.
    """
    from nht_jax import experiment
    from nht_jax.analysis.analyze import options_from
    from nht_jax.results import lock
    from nht_jax.measure.stopping import results_digest

    plans = []
    for part in parts:
        folder = folder_of(out, part.key, scale)
        if part.preset is None:
            plans.append(Plan(part, folder, None, None, ()))
            continue
        try:
            size = part_scale(part, scale)
            config, moved = redirected(part, experiment.load(part.preset, scale=size and size.name), out, scale)
        except ConfigError as error:
            raise ConfigError(f"part {part.key}: {error}") from None
        try:
            analysis = options_from(size.analyze_overrides if size else ())
        except ConfigError as error:
            raise ConfigError(
                f"part {part.key}: the analyze options of [scale.{size.name}] of preset {part.preset} "
                f"({', '.join(size.analyze_overrides)}): {error}"
            ) from None
        p = Plan(
            part, folder, config, analysis, size.overrides if size else (), size and size.name, tuple(moved.items())
        )
        if (folder / "meta.json").exists():
            digest = json.loads((folder / "meta.json").read_text()).get("config_digest")
            if part.sources and finished(folder):
                problem = source_digest_problem(p, all(finished(folder_of(out, s, scale)) for s in part.sources))
                if problem:
                    raise ConfigError(
                        f"'{folder}' holds results of part {part.key} that do not match its sources "
                        f"under '{out}': {problem}. Delete that folder, or choose another --out."
                    )
            elif not part.sources and digest != results_digest(config):
                raise ConfigError(
                    f"'{folder}' holds results of another configuration than part {part.key} at scale "
                    f"'{scale}' (the preset or its [scale.{PRESET_SCALE[scale]}] table changed since). "
                    f"Delete that folder, or choose another --out."
                )
        lock.raise_if_held(folder, "nht paper reproduce")
        plans.append(p)
    return plans


# ----------------------------------------------------------------------------- temporaries of a killed command


def remove_stale_temporaries_of_parts(out: Path, plans: list[Plan]) -> list[Path]:
    """Remove the temporaries of atomic writes that a killed command left (`nht_jax.base.atomic`) in the folders
    below DIR: DIR/figures and the verify-bounds part's folder, which only `nht paper reproduce` writes (call this holding
    DIR's lock), and each sweep part's folder under that folder's own lock (a finished part is reused without
    `nht run` preparing its folder, yet gets reproduce_part.json and analyses written into it). DIR itself is
    `prepare_out_dir`'s. The paths removed."""
    from nht_jax.results import lock

    removed = []
    for folder in [Path(out) / "figures", *(p.folder for p in plans if p.part.preset is None)]:
        if folder.is_dir():
            removed += remove_stale_temporaries(folder)
    for p in plans:
        if p.part.preset is not None and p.folder.is_dir():
            with lock.hold(p.folder, "nht paper reproduce"):
                removed += remove_stale_temporaries(p.folder)
    return removed


# ----------------------------------------------------------------------------- running one part


class Outcome(NamedTuple):
    key: str
    folder: Path
    status: str  # "made", "re-analysed" (trained before), "reused", "FAILED: …"
    wall_s: float  # this invocation
    made_s: float  # wall time when the part was made (train + analysis), possibly by an earlier invocation
    cpu_s: float  # CPU time of this process (every thread) then: comparable across machine loads
    runs: str  # "16 runs × 6000 steps"

    @property
    def ok(self) -> bool:
        return not self.status.startswith("FAILED")


def analysis_stale(folder: Path) -> bool:
    """No analysis yet, or one older than the sweep's results."""
    predictions = Path(folder) / "predictions.csv"
    return not predictions.exists() or predictions.stat().st_mtime < (Path(folder) / "meta.json").stat().st_mtime


def read_record(folder: Path) -> dict:
    path = Path(folder) / PART_RECORD
    return json.loads(path.read_text()) if path.exists() else {}


def run_sweep_part(p: Plan, progress: bool) -> tuple[str, str]:
    """Train (or resume) and analyse one sweep part when needed; (what was done: "made" (trained), "re-analysed"
    (the finished sweep analysed again) or "" (nothing), "R runs × S steps")."""
    from nht_jax.analysis.analyze import analyze
    from nht_jax.figures.folder import redraw
    from nht_jax.training.sweep import run_sweep

    did = ""
    if not finished(p.folder):
        run_sweep(p.config, p.folder, progress=progress)
        redraw(p.folder)
        did = "made"
    if did or analysis_stale(p.folder):
        analyze(p.folder, p.analysis)
        did = did or "re-analysed"
    meta = json.loads((p.folder / "meta.json").read_text())
    return did, f"{meta['runs']} runs × {meta['steps']:,} steps"


def run_bounds_part(p: Plan, quick: bool) -> tuple[bool, str]:
    """nht paper verify-bounds into FOLDER/bounds.csv (one row per claim), unless it is there."""
    from nht_jax.theory.verify import run_all

    table = p.folder / "bounds.csv"
    if table.exists():
        return False, f"{len(table.read_text().splitlines()) - 1} claims"
    p.folder.mkdir(parents=True, exist_ok=True)
    checked = run_all(quick)
    atomic_write_text(
        table,
        csv_text([{"claim": c.text, "ok": c.ok, "measured": c.measured, "tolerance": c.tolerance} for c in checked]),
    )
    return True, f"{len(checked)} claims{' (quick Monte-Carlo)' if quick else ''}"


def run_their_data_part(p: Plan, quick: bool) -> tuple[bool, str]:
    """Our fits on the follow-up papers' medians into FOLDER/their_fits.csv (nht_jax.papers.cells); always redone
    (seconds), so it follows the shipped reference table."""
    from nht_jax.papers.cells import write_their_fits

    return True, f"{write_their_fits(p.folder)} quantities from the reference table"


def run_part(p: Plan, quick: bool, progress: bool) -> Outcome:
    """One part, timed; a ConfigError (data, lock, a failed analysis) marks it failed and the others go on."""
    start, cpu_start = time.perf_counter(), time.process_time()
    no_sweep = {BOUNDS: run_bounds_part, THEIR_DATA: run_their_data_part}
    try:
        did, runs = no_sweep[p.part.key](p, quick) if p.part.preset is None else run_sweep_part(p, progress)
    except ConfigError as error:
        return Outcome(
            p.part.key, p.folder, f"FAILED: {error}", time.perf_counter() - start, float("nan"), float("nan"), ""
        )
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    did = "made" if did is True else did or ""  # the parts without a sweep say True: made
    record = read_record(p.folder)
    if did == "re-analysed" and "made_s" in record:  # the training's time stays; the analysis is dated beside it
        record = {**record, "analysed_s": round(wall, 1), "analysed": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        atomic_write_text(p.folder / PART_RECORD, json.dumps(record, indent=2))
    elif did or "made_s" not in record:
        record = {
            "made_s": round(wall, 1),
            "cpu_s": round(cpu, 1),
            "runs": runs,
            "scale": p.scale,
            "overrides": list(p.overrides),
            "load_average": list(os.getloadavg()),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        atomic_write_text(p.folder / PART_RECORD, json.dumps(record, indent=2))
    return Outcome(
        p.part.key, p.folder, did or "reused", wall, record["made_s"], record.get("cpu_s", float("nan")), runs
    )


# ----------------------------------------------------------------------------- alternative definitions


class AlternativeFolders:
    """(part, "KEY=VALUE") → a folder holding the part's summary.csv recomputed under that definition
    (nht_jax.analysis.sensitivity.alternative_results) and every analysis table of it, made once under `root`:
    the trajectories, config and meta are linked or copied, the analyses run with the part's options but without
    bootstrap (the verdicts read point values) and without the predictions' own sensitivity."""

    def __init__(self, folders: dict[str, Path], options: dict, root: Path):
        self.folders, self.options, self.root = folders, options, Path(root)
        self.made: dict[tuple[str, str], Path] = {}

    def __call__(self, part: str, text: str) -> Path:
        if (part, text) not in self.made:
            try:
                self.made[part, text] = self.make(part, text)
            except ConfigError as error:
                raise NotMeasured(f"under {text}: {error}") from None
        return self.made[part, text]

    def make(self, part: str, text: str) -> Path:
        import dataclasses
        import shutil

        from nht_jax.analysis import registry, sensitivity
        from nht_jax.analysis.analyze import AnalyzeOptions, compose
        from nht_jax.results.folder import load_results, write_summary

        source = Path(self.folders[part])
        target = self.root / part / text.replace("=", "-")
        target.mkdir(parents=True, exist_ok=True)
        res = sensitivity.alternative_results(load_results(source), text)
        for name in ("trajectories.npz", "config.toml"):
            if not (target / name).exists():
                (target / name).symlink_to((source / name).resolve())
        shutil.copyfile(source / "meta.json", target / "meta.json")
        write_summary(target, res.summary)
        given = self.options.get(part) or AnalyzeOptions()
        sections = {a.name: sensitivity.without_bootstrap(given.of(a)) for a in registry.analyses()}
        sections["predictions"] = dataclasses.replace(sections["predictions"], alternatives=())
        composed = compose(dataclasses.replace(res, path=target), AnalyzeOptions(sections))
        for name, content in composed["tables"].items():
            atomic_write_text(target / name, content)
        return target


# ----------------------------------------------------------------------------- the paper's figures from the parts


def paper_figures(out: Path, folders: dict[str, Path]) -> list[tuple[str, Path, str]]:
    """Redraw every figure of docs/science.md §6 whose preset is a part that ran (into OUT/figures/); (key, png, note)."""
    from nht_jax.papers.paper_figures import FIGURES, make_figure

    drawn = []
    for key, figure in FIGURES.items():
        folder = folders.get(figure.source.preset)
        if folder is None:
            continue
        png = Path(out) / "figures" / figure.filename
        try:
            outcome = make_figure(key, folder, png, allow_run=False, progress=False)
            drawn.append((key, png, f"{outcome.status}: {outcome.note}"))
        except ConfigError as error:
            drawn.append((key, png, f"not drawn: {error}"))
    return drawn


# ----------------------------------------------------------------------------- the report


def machine_text() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{platform.node()}, {os.cpu_count()} CPU cores, {platform.machine()}, load average {load} (1, 5, 15 min)"


def load_when_made(folder: Path) -> str:
    load = read_record(folder).get("load_average")
    return f"{load[0]:.1f}, {load[2]:.1f}" if load else "–"


def scale_text(p: Plan) -> str:
    """ "as shipped", or "quick: `train.steps=3000`, …" (the preset scale and its settings), then the references
    pointed at other parts ("reads `DIR/critical-norm-quick` for `runs/out/critical-norm`")."""
    if p.scale is None:
        text = "as shipped" if p.part.preset else "–"
    else:
        text = f"{p.scale}: " + ", ".join(f"`{s}`" for s in p.overrides)
    return text + "".join(f"; reads `{new}` for `{old}`" for old, new in p.moved)


def parts_table(outcomes: list[Outcome], plans: list[Plan], out: Path) -> str:
    by_key = {p.part.key: p for p in plans}
    rows = [
        {
            "part": o.key,
            "preset": by_key[o.key].part.preset or NO_PRESET[o.key],
            "size (scale: --set)": scale_text(by_key[o.key]),
            "runs": o.runs,
            "status": o.status,
            "this run (s)": round(o.wall_s, 1),
            "made in (s)": o.made_s,
            "CPU (s)": o.cpu_s,
            "load then (1, 15 min)": load_when_made(o.folder),
            "folder": os.path.relpath(o.folder, out),
        }
        for o in outcomes
    ]
    return markdown_table(rows)


def disagreements(rows: list[scorecard.Row], verdict: str = scorecard.DISAGREES) -> list[str]:
    return [
        f"`{r.id}` — {r.claim}: the paper says {r.paper}, we measure {r.ours} (tolerance {r.tolerance}; "
        f"{r.source}){f'; {r.note}' if r.note else ''}"
        for r in rows
        if r.verdict == verdict
    ]


def part_section(o: Outcome, out: Path) -> str:
    part = PARTS[o.key]
    rel = os.path.relpath(o.folder, out)
    lines = [f"### {o.key}", "", f"{part.what}. Folder `{rel}/`; {o.runs}; {o.status}."]
    if not o.ok:
        return "\n".join(lines) + "\n"
    if part.key == THEIR_DATA:
        from nht_jax.papers.cells import THEIR_FITS

        table = (o.folder / THEIR_FITS).read_text(encoding="utf-8").splitlines()
        return "\n".join(lines + ["", "```", *table, "```"]) + "\n"
    if part.preset is None:
        import csv

        with open(o.folder / "bounds.csv", newline="") as f:
            lines += [
                "",
                *[
                    f"- [{'OK' if r['ok'] == 'True' else '!!'}] {r['claim']}: {r['measured']} "
                    f"(tolerance {r['tolerance']})"
                    for r in csv.DictReader(f)
                ],
            ]
        return "\n".join(lines) + "\n"
    lines += ["", f"The whole analysis: [{rel}/analysis.md]({rel}/analysis.md).", ""]
    lines += [f"![{o.key}: {png.stem}]({rel}/{png.name})" for png in sorted(o.folder.glob("*.png"))]
    return "\n".join(lines) + "\n"


def report_markdown(
    rows, outcomes, plans, figures, out: Path, scale: str, started: str, machine_start: str, total_s: float
) -> str:
    nu, lams = claims_lib.companion_table_exponent()
    not_here = [r for r in rows if not r.parts]
    made = sum(o.made_s for o in outcomes if o.ok)
    sections = [
        f"# nht paper reproduce ({scale} scale)",
        "",
        f"Started {started}; {total_s:.0f} s in all (the parts took {made:.0f} s of wall time when they were made, "
        f"possibly by earlier runs: see the table). Machine at the start: {machine_start}; at the end: "
        f"{machine_text()}.",
        "",
        f"**Scorecard: {scorecard.tally_text(rows)}** over {len(rows)} claims. The tolerances, their reasons, the "
        f"seeds each verdict needs and the alternative definitions are the preregistered table "
        f"(`nht_jax/papers/preregistered.toml`, docs/papers/claims.md). [OK] agrees, [!!] disagrees, [≠] misses a "
        f"number of another definition or experiment, [≡] a definition check (true by construction), [~] fragile "
        f"(flips under an alternative definition), [--] no number to judge or too few seeds (the note says why).",
        "",
        "## Parts",
        "",
        parts_table(outcomes, plans, out),
        "## Scorecard",
        "",
        scorecard.markdown(rows),
        "## Disagreements with the papers",
        "",
        *([f"- {line}" for line in disagreements(rows)] or ["None at this scale."]),
        "",
        "## Misses of a different definition or experiment ([≠])",
        "",
        *([f"- {line}" for line in disagreements(rows, scorecard.DIFFERENT)] or ["None at this scale."]),
        "",
        "## Fragile verdicts ([~]): they flip under another definition the papers leave open",
        "",
        *(
            [f"- `{r.id}`: {r.sensitivity} ({r.note})" for r in rows if r.verdict == scorecard.FRAGILE]
            or ["None at this scale."]
        ),
        "",
        "## Inconsistencies of the papers themselves (docs/science.md §7)",
        "",
        *[f"- {issue} — {ours}" for issue, ours in claims_lib.PAPER_INCONSISTENCIES],
        f"- The companion's own λ-sweep table gives T_grok ∝ λ^(−{nu:.2f}) over λ ∈ "
        f"{{{', '.join(f'{x:g}' for x in lams)}}} (least squares in log–log), not λ^(−1).",
        "",
        "## Not checked here",
        "",
        *[f"- `{r.id}` {r.claim} (paper: {r.paper}): {r.note}" for r in not_here],
        "",
        "## Parts and their figures",
        "",
        *[part_section(o, out) for o in outcomes],
    ]
    if figures:
        sections += ["## The paper's figures, redrawn from the parts", ""]
        for key, png, note in figures:
            sections += [f"- {key}: {note}", "", f"![{key}]({os.path.relpath(png, out)})", ""]
    return "\n".join(sections) + "\n"


# ----------------------------------------------------------------------------- the command


def reproduce(
    out: Path = DEFAULT_OUT, quick: bool = False, only=None, claims=claims_lib.CLAIMS, progress: bool = True, table=None
) -> tuple[list[scorecard.Row], list[Outcome]]:
    """Run (or reuse) the selected parts, judge every claim, print the scorecard and write DIR/scorecard.csv and
    DIR/reproduce.md. Each part's size is its preset's scale (`PRESET_SCALE`).

    Args:
        out: DIR, the folder of the reproduction.
        quick: the quick scale (--quick).
        only: the parts to run (--only; None: all).
        claims: the claims table, replacing the shipped one.
        progress: print the training's progress.
        table: the preregistered table (default: the shipped table, checked against the shipped claims; a claim it
            does not hold is judged as a prediction on any number of seeds, without alternatives).

    Returns:
        (the scorecard's rows, each part's Outcome).
    """
    import tempfile

    from nht_jax.results import lock
    from nht_jax.results.folder import prepare_out_dir

    scale = "quick" if quick else "full"
    claims_lib.check_table(claims, PARTS)
    if table is None:
        table = preregistered.load()
        preregistered.check(claims_lib.CLAIMS, table)
    plans = plan(out, scale, select(only))
    started, machine_start, start = time.strftime("%Y-%m-%d %H:%M:%S %z"), machine_text(), time.perf_counter()
    with lock.hold(out, "nht paper reproduce"):
        out = prepare_out_dir(out)  # under the lock: also removes a killed writer's temporaries in DIR
        remove_stale_temporaries_of_parts(out, plans)
        outcomes = []
        for p in plans:
            print(
                f"reproduce: part {p.part.key} ({p.part.preset or NO_PRESET[p.part.key]}"
                f"{f' at scale {p.scale}: ' + ', '.join(p.overrides) if p.scale else ''}) → {p.folder}",
                flush=True,
            )
            outcome = run_part(p, quick, progress)
            print(
                f"reproduce: part {p.part.key} {outcome.status} in {outcome.wall_s:.0f} s"
                f"{f' (made in {outcome.made_s:.0f} s)' if outcome.status != 'made' else ''}",
                flush=True,
            )
            outcomes.append(outcome)
        folders = {o.key: o.folder for o in outcomes if o.ok}
        absent = {o.key: o.status for o in outcomes if not o.ok}
        absent.update({k: "not run (--only)" for k in PARTS if k not in folders and k not in absent})
        with tempfile.TemporaryDirectory(prefix="nht-sensitivity-") as tmp:
            alternative = AlternativeFolders(folders, {p.part.key: p.analysis for p in plans}, Path(tmp))
            rows = scorecard.scorecard(claims, folders, absent, table, alternative)
        figures = paper_figures(out, {PARTS[k].preset: f for k, f in folders.items() if PARTS[k].preset})
        text = report_markdown(
            rows, outcomes, plans, figures, out, scale, started, machine_start, time.perf_counter() - start
        )
        atomic_write_text(out / "scorecard.csv", scorecard.csv(rows))
        atomic_write_text(out / "reproduce.md", text)
    print(scorecard.text_table(rows))
    print(
        f"\n{scorecard.tally_text(rows)} over {len(rows)} claims; wall time of each part when made: "
        + ", ".join(f"{o.key} {o.made_s:.0f} s" for o in outcomes if o.ok)
    )
    print(f"written: {out / 'reproduce.md'}, {out / 'scorecard.csv'}")
    return rows, outcomes


__all__ = ["plan", "reproduce", "select"]
