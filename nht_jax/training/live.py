"""The live table of a sweep: between time chunks, every run's state and a forecast of its T_transition, written to
the results folder while it trains (docs/guides/live.md).

After each chunk (the sweep loop's `nht_jax.training.hooks.LiveTableHook`, one `LiveTable` per sweep or bucket), with
`live.enabled` on (the default; outside the results digest, and the table never touches a trajectory): per run its
state, V, the Algorithm-1 forecast with its V̂_post (`nht_jax.measure.forecast.diagnosis.diagnose`,
`nht_jax.measure.forecast.v_post`) and the first-passage law's forecast (`nht_jax.measure.forecast.heldout`).
Process 0 writes live.csv, live_history.csv and live.png (drawn by the callables registered with `drawing`: `nht
run` registers `nht_jax.figures.live.draw`) and one progress.log line per chunk. With static axes
(`nht_jax.training.buckets`) the table is that of the bucket in training.

Each column, the states, the pilots, the law, the files, the drawing's cadence and its cost: docs/guides/live.md."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from nht_jax.base.atomic import append_text, atomic_write_text
from nht_jax.base.errors import ConfigError
from nht_jax.experiment import AnalysisConfig
from nht_jax.measure.forecast import heldout
from nht_jax.measure.forecast import v_post as v_post_rules
from nht_jax.engine.optim import log_contraction
from nht_jax.measure import summaries
from nht_jax.results.folder import load_results
from nht_jax.measure.forecast.diagnosis import MonitorOptions, diagnose, monitor_options
from nht_jax.config.forecast import ForecastSettings

LIVE_CSV = "live.csv"
LIVE_HISTORY = "live_history.csv"
LIVE_PNG = "live.png"
STATES = (
    "waiting",
    "not fitted",
    "rising",
    "flat",
    "contracting",
    "peaked and contracting",
    "transitioned",
    "diverged",
)
CONTRACTING = ("contracting", "peaked and contracting")
COLUMNS = (
    "step",
    "state",
    "T_fit",
    "T_transition",
    "stopped_step",
    "peak_step",
    "T_hat",
    "T_lo",
    "T_hi",
    "V_post",
    "v_post_source",
    "pilots",
    "reason",
    "T_law",
    "T_law_lo",
    "T_law_hi",
    "kappa",
    "V_star",
    "law_reason",
)
HISTORY_COLUMNS = (
    "step",
    "run",
    "state",
    "T_fit",
    "T_transition",
    "T_hat",
    "T_lo",
    "T_hi",
    "v_post_source",
    "T_law",
    "T_law_lo",
    "T_law_hi",
)
LAW_COLUMNS = ("T_law", "T_law_lo", "T_law_hi", "kappa", "V_star", "law_reason")
"""The columns of the forecast by the law (since 2026-12-03): a live file written before has none, and is read."""


@dataclass(frozen=True)
class LiveOptions(ForecastSettings):
    """The live forecast's options: the forecast's one options type (`nht_jax.config.forecast.
    ForecastSettings`: the window, the interval's level, pilot_free_axes, the V̂_post rule `v_post` ("pilot" |
    "pilot-trend" | "floor"), `trend_weight`, `v_post_interval`), and figure_budget: the largest share of the wall
    time live.png's drawing may take. `monitor` is the diagnosis' options (`MonitorOptions`) they give. In a sweep
    they are `live.forecast`."""

    figure_budget: float = 0.002

    def __post_init__(self):
        self.check("live.")
        object.__setattr__(self, "_monitor", monitor_options(self, self.interval))

    @property
    def monitor(self) -> MonitorOptions:
        return self._monitor

    @classmethod
    def of(cls, settings: ForecastSettings) -> "LiveOptions":
        """The live options with every field of `settings` (a sweep's `live.forecast`)."""
        return cls(**{f.name: getattr(settings, f.name) for f in dataclasses.fields(ForecastSettings)})


# ----------------------------------------------------------------------------- the table, pure


def decayed_norm(decay_on: str, names) -> str:
    """V: "weight_norm_sq" when weight decay acts on weights only and it is recorded, else "norm_sq"."""
    return "weight_norm_sq" if decay_on == "weights" and "weight_norm_sq" in names else "norm_sq"


def pilot_v_post(
    hparams: dict, usable_t_fit: np.ndarray, histories: list, t_transition: np.ndarray, norm: str, options: LiveOptions
) -> list[v_post_rules.VPost]:
    """Every run's V̂_post by `options.v_post` (`nht_jax.measure.forecast.v_post`) from the usable runs (finite `usable_t_fit`:
    transitioned, not diverged), each read at its T_transition."""
    usable = np.isfinite(np.asarray(usable_t_fit, np.float64))
    at_t = np.array(
        [
            float(h[norm][int(np.searchsorted(h["steps"], t_transition[j]))]) if usable[j] else math.nan
            for j, h in enumerate(histories)
        ]
    )
    return v_post_rules.v_post_estimates(
        options.v_post, hparams, usable_t_fit, at_t, options.pilot_free_axes, options.trend_weight
    )


def monitor_for(estimate: v_post_rules.VPost, options: LiveOptions) -> MonitorOptions:
    """The diagnosis' options for a run with this V̂_post: its range in the interval when `v_post_interval`."""
    span = v_post_rules.interval_range(estimate) if options.v_post_interval else None
    return options.monitor if span is None else dataclasses.replace(options.monitor, v_post_range=span)


def summary_of(history: dict, rule: AnalysisConfig) -> dict:
    """`summaries.summarize_run` of a history {"steps": (n,), metric: (n,)}."""
    return summaries.summarize_run(history["steps"], {k: v for k, v in history.items() if k != "steps"}, rule)


def run_row(
    history: dict | None,
    rule: AnalysisConfig,
    norm: str,
    v_post: float | None,
    pilots: tuple,
    options: MonitorOptions,
    summary: dict | None = None,
) -> dict:
    """One run's row of the table from its history {"steps": (n,), metric: (n,)} (None: not started);
    `summary`: its `summary_of` when already computed. The law's columns are `law_columns`'."""
    row = {c: math.nan for c in COLUMNS} | {
        "v_post_source": "",
        "pilots": "",
        "reason": "",
        "state": "waiting",
        "law_reason": "",
    }
    if history is None:
        return row
    steps = history["steps"]
    s = summary if summary is not None else summary_of(history, rule)
    row.update(step=float(steps[-1]), T_fit=s["T_fit"], T_transition=s["T_transition"])
    if s["diverged"]:
        return row | {"state": "diverged", "reason": f"diverged at step {s['diverged_step']:g}"}
    if np.isfinite(s["T_transition"]):
        return row | {"state": "transitioned"}
    if not np.isfinite(s["T_fit"]):
        return row | {"state": "not fitted"}
    if steps.size < 2:
        return row | {"state": "flat", "reason": "one log"}
    d = diagnose(steps, history[norm], fitted_at=s["T_fit"], **{**vars(options), "v_post": v_post})
    f = d.forecast
    source = {"given": "pilot", "floor": "floor"}.get(f.v_post_source, "")
    return row | {
        "state": d.norm,
        "peak_step": d.peak_step,
        "T_hat": f.T_hat,
        "T_lo": f.T_lo,
        "T_hi": f.T_hi,
        "V_post": f.V_post,
        "v_post_source": source,
        "pilots": " ".join(map(str, pilots)) if source == "pilot" else "",
        "reason": f.reason,
    }


def pilot_calibration(folder, options: LiveOptions, config=None) -> heldout.Calibration:
    """The calibration of a finished results folder (`live.calibration`, a pilot sweep): κ and V★ of its
    transitioned runs, every seed, V its decayed parameters' norm, the interval's bounds from its own
    leave-one-seed-out errors. ConfigError (one line) when the folder is not a finished results folder, or, given
    the sweep's `config`, when the pilot trained another task or model (`pilot_mismatch`)."""
    res = load_results(folder)
    mismatch = pilot_mismatch(res.config, config) if config is not None else ""
    if mismatch:
        raise ConfigError(mismatch)
    runs = folder_runs(res, decayed_norm(res.config.optim.decay_on, res.metrics), options.pilot_free_axes)
    return heldout.calibrate(runs, tuple(sorted({float(s) for s in runs.seed})), options)


def pilot_mismatch(pilot, config) -> str:
    """Why a pilot sweep's configuration cannot calibrate `config`'s live law ("" when it can): κ and V★ are the
    norm's scale and contraction of one task and model, so a pilot of another ([task] or [model] differ; its grid,
    steps and optimiser may differ) would forecast another problem's norm."""
    from nht_jax import experiment

    theirs, ours = experiment.to_dict(pilot), experiment.to_dict(config)
    for section in ("task", "model"):
        if theirs.get(section) != ours.get(section):
            a, b = theirs.get(section, {}), ours.get(section, {})
            differ = ["name"] if a.get("name") != b.get("name") else sorted(k for k in {*a, *b} if a.get(k) != b.get(k))
            said = ", ".join(f"{k} {a.get(k)!r} there, {b.get(k)!r} here" for k in differ[:3])
            return (
                f"its runs ({pilot.name}) train another {section} than this sweep ({config.name}): {said}; a "
                f"pilot's κ and V★ belong to its own task and model. Give a pilot sweep of this {section}, or "
                f"leave live.calibration empty"
            )
    return ""


def folder_runs(res, norm: str, free_axes: tuple[str, ...]) -> heldout.Runs:
    """A finished folder's runs (`nht_jax.results.folder.Results`) as `heldout.Runs`: V = `norm`, NaN at every
    log of a run that ever left the finite range (the engine's "finite" metric, when recorded), T_fit and
    T_transition from its summary, g from its optimiser, cells by `free_axes`; no positives or negatives marked."""
    v = np.asarray(res.metrics[norm], np.float64).copy()
    if "finite" in res.metrics:
        v[~(np.asarray(res.metrics["finite"]) > 0).all(axis=1)] = np.nan
    n = res.num_runs
    none = np.zeros(n, bool)
    return heldout.Runs(
        np.asarray(res.steps, np.float64),
        v,
        np.asarray(res.hparams.get("seed", np.zeros(n)), np.float64),
        np.asarray(res.hparams["weight_decay"], np.float64),
        log_contraction(res.config.optim, res.hparams, n),
        heldout.cells(res.hparams, free_axes),
        np.array([float(r["T_fit"]) for r in res.summary]),
        np.array([float(r["T_transition"]) for r in res.summary]),
        none,
        none,
        np.broadcast_to(np.asarray(res.hparams.get("learning_rate", math.nan), np.float64), (n,)),
    )


def law_runs(histories: list, hparams: dict, norm: str, t_fit, t_tr, g, options: LiveOptions) -> heldout.Runs:
    """The histories so far as `heldout.Runs`: V on the longest history's steps, NaN after a run's last log (a run
    not started: all NaN)."""
    longest = max((h["steps"] for h in histories if h is not None), key=len)
    v = np.full((len(histories), longest.size), np.nan)
    for i, h in enumerate(histories):
        if h is not None:
            v[i, : h["steps"].size] = h[norm]
    n = len(histories)
    seed = np.asarray(hparams.get("seed", np.zeros(n)), np.float64)
    none = np.zeros(n, bool)
    return heldout.Runs(
        np.asarray(longest, np.float64),
        v,
        seed,
        np.asarray(hparams["weight_decay"], np.float64),
        np.asarray(g, np.float64),
        heldout.cells(hparams, options.pilot_free_axes),
        t_fit,
        t_tr,
        none,
        none,
        np.broadcast_to(np.asarray(hparams.get("learning_rate", math.nan), np.float64), (n,)),
    )


def law_columns(
    rows: list[dict],
    histories: list,
    hparams: dict,
    norm: str,
    t_fit,
    t_tr,
    g,
    options: LiveOptions,
    prior: heldout.Calibration | None = None,
) -> None:
    """Fill the law's columns of every fitted run that has not transitioned (module docstring): T_law, T_law_lo,
    T_law_hi, kappa, V_star, or law_reason. `g`: each run's −log(1 − γ_eff) (None: not known); `prior`: a pilot
    sweep's calibration (`pilot_calibration`) pooled with the grid's own."""
    fitted = [i for i, r in enumerate(rows) if r["state"] not in ("waiting", "not fitted", "transitioned", "diverged")]
    if not fitted:
        return
    if g is None:
        for i in fitted:
            rows[i]["law_reason"] = "no decay-only contraction g (γ_eff not given to the table)"
        return
    runs = law_runs(histories, hparams, norm, t_fit, t_tr, g, options)
    now = np.array([float(h["steps"][-1]) if h is not None else math.nan for h in histories])
    made = heldout.law_forecasts(runs, now, options, prior)
    for i in fitted:
        if i not in made:
            rows[i]["law_reason"] = "V not finite so far"
            continue
        f, lo, hi = made[i]
        rows[i].update(
            T_law=f.T_hat,
            T_law_lo=lo,
            T_law_hi=hi,
            kappa=f.kappa,
            V_star=f.v_star,
            law_reason=f.reason
            or ("" if np.isfinite(lo) else "no interval: too few transitioned runs of ≥ 2 seeds for its level"),
        )


def cached_summaries(histories: list, rule: AnalysisConfig, cache: dict | None) -> list:
    """Every run's `summary_of` (None: not started). `cache` {run: (logs, summary)}, kept between updates by the
    caller: a run whose history has as many logs as when it was summarized is not summarized again (a history only
    grows: its logs so far never change, and a stopped run's ends at its stopped step), the others are and
    replace their entry."""
    out = []
    for i, h in enumerate(histories):
        if h is None:
            out.append(None)
            continue
        logs = len(h["steps"])
        if cache is None or cache.get(i, (None,))[0] != logs:
            summary = summary_of(h, rule)
            if cache is None:
                out.append(summary)
                continue
            cache[i] = (logs, summary)
        out.append(cache[i][1])
    return out


def live_rows(
    histories: list,
    hparams: dict,
    rule: AnalysisConfig,
    norm: str,
    options: LiveOptions,
    stopped=None,
    cache: dict | None = None,
    g=None,
    prior: heldout.Calibration | None = None,
) -> list[dict]:
    """The table: one row per run (`run_row`), V̂_post from the pilots that have transitioned so far, the law's
    columns (`law_columns`, with each run's decay-only contraction `g`); `stopped`: each run's stopped step (NaN:
    training or trained its budget); `cache`: the summaries of an earlier update (`cached_summaries`); `prior`: a
    pilot sweep's calibration of the law (`pilot_calibration`)."""
    t_fit = np.full(len(histories), np.nan)
    t_tr = np.full(len(histories), np.nan)
    runs = cached_summaries(histories, rule, cache)
    for i, s in enumerate(runs):
        if s is not None and not s["diverged"]:
            t_fit[i], t_tr[i] = s["T_fit"], s["T_transition"]
    usable = np.where(np.isfinite(t_tr), t_fit, np.nan)
    posts = pilot_v_post(hparams, usable, histories, t_tr, norm, options)
    rows = []
    for i, h in enumerate(histories):
        p = posts[i]
        row = {
            "run": i,
            **{k: v[i].item() for k, v in hparams.items()},
            **run_row(h, rule, norm, p.value if p.pilots else None, p.pilots, monitor_for(p, options), runs[i]),
        }
        if stopped is not None:
            row["stopped_step"] = float(stopped[i])
        rows.append(row)
    law_columns(rows, histories, hparams, norm, t_fit, t_tr, g, options, prior)
    return rows


def counts(rows: list[dict]) -> dict:
    """fitted (T_fit so far, transitioned included), contracting (fitted, not yet transitioned, V contracting),
    transitioned, diverged, waiting, and the median forecast over the runs that have one.

    Args:
        rows: the live table's rows.

    Returns:
        {count name: count}, with "median_law" and the median forecast.
    """
    forecasts = [r["T_hat"] for r in rows if np.isfinite(r["T_hat"])]
    laws = [r["T_law"] for r in rows if np.isfinite(r.get("T_law", math.nan))]
    return {
        "law_forecasts": len(laws),
        "median_law": float(np.median(laws)) if laws else math.nan,
        "runs": len(rows),
        "fitted": sum(np.isfinite(r["T_fit"]) and r["state"] != "diverged" for r in rows),
        "contracting": sum(r["state"] in CONTRACTING for r in rows),
        "transitioned": sum(r["state"] == "transitioned" for r in rows),
        "diverged": sum(r["state"] == "diverged" for r in rows),
        "waiting": sum(r["state"] == "waiting" for r in rows),
        "forecasts": len(forecasts),
        "median_forecast": float(np.median(forecasts)) if forecasts else math.nan,
    }


def progress_line(step: float, rows: list[dict]) -> str:
    """The chunk's progress.log line (module docstring)."""
    c = counts(rows)
    waiting = f", {c['waiting']} waiting" if c["waiting"] else ""
    forecast = (
        f"median forecast T_transition {c['median_forecast']:.0f} ({c['forecasts']} runs)"
        if c["forecasts"]
        else "no forecast yet"
    )
    if c["law_forecasts"]:
        forecast += f"; by the law {c['median_law']:.0f} ({c['law_forecasts']} runs)"
    return (
        f"live at step {step:g}: {c['runs']} runs: {c['fitted']} fitted, {c['contracting']} contracting, "
        f"{c['transitioned']} transitioned, {c['diverged']} diverged{waiting}; {forecast}"
    )


def cell(v) -> str:
    if isinstance(v, (float, np.floating)):
        return "" if math.isnan(v) else f"{v:.6g}"
    return str(v)


def csv_text(rows: list[dict], columns) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: cell(v) for k, v in r.items()} for r in rows)
    return buffer.getvalue()


NUMERIC = frozenset(
    {
        "run",
        "step",
        "T_fit",
        "T_transition",
        "stopped_step",
        "peak_step",
        "T_hat",
        "T_lo",
        "T_hi",
        "V_post",
        "T_law",
        "T_law_lo",
        "T_law_hi",
        "kappa",
        "V_star",
    }
)
"""The live files' columns that hold numbers (an empty cell: none)."""


class LiveFileError(ConfigError):
    """A live file (live.csv, live_history.csv) that cannot be read: one line naming it; the results are intact."""


def damaged(path: Path, what: str) -> LiveFileError:
    path = Path(path)
    return LiveFileError(
        f"'{path}' is damaged ({what}); it is the sweep's live table, not its results (they are "
        f"intact). Delete it and run the command again (a running sweep writes live.csv anew at "
        f"its next chunk; without live_history.csv, live.png shows no forecasts)"
    )


def is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return text == ""


def read_csv(path: Path, columns=(), appended: bool = True) -> list[dict]:
    """A live file's rows; [] when it is missing. `LiveFileError` when the file is not UTF-8 text, has no header or one
    without `columns`, was cut short, or has a row of the wrong length or a non-number in a `NUMERIC` column.

    Args:
        path: the file.
        columns: the columns its header must hold.
        appended: the file is appended to (live_history.csv): a last line without its newline is a row being
            appended, left out; otherwise (live.csv, written atomically) such a file was cut short.

    Returns:
        One {column: value} per row.
    """
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return []
    except UnicodeDecodeError:
        raise damaged(path, "not UTF-8 text") from None
    if not text:
        raise damaged(path, "empty: not even its header")
    if not text.endswith("\n"):
        if not appended:
            raise damaged(path, "cut short: its last line has no end")
        text = text[: text.rfind("\n") + 1]
        if not text:
            raise damaged(path, "cut short inside its header")
    try:
        reader = csv.DictReader(io.StringIO(text))
        rows = list(reader)
    except csv.Error as e:
        raise damaged(path, f"not a CSV table: {e}") from None
    missing = [c for c in columns if c not in (reader.fieldnames or ())]
    if missing:
        raise damaged(path, f"its header lacks {', '.join(missing)}")
    for i, row in enumerate(rows, start=2):
        if None in row or None in row.values():
            raise damaged(path, f"line {i} has {len(reader.fieldnames)} cells expected, not as many")
        bad = [c for c in NUMERIC.intersection(row) if not is_number(row[c])]
        if bad:
            raise damaged(path, f"line {i}: {bad[0]} = {row[bad[0]]!r} is not a number")
    return rows


def read_table(folder: Path) -> list[dict]:
    """live.csv's rows (`read_csv`, every column of `COLUMNS` and run required but the law's, `LAW_COLUMNS`)."""
    return read_csv(Path(folder) / LIVE_CSV, ("run", *(c for c in COLUMNS if c not in LAW_COLUMNS)), appended=False)


def read_history(folder: Path) -> list[dict]:
    """live_history.csv's complete rows (`read_csv`, every column of `HISTORY_COLUMNS` required but the law's)."""
    return read_csv(Path(folder) / LIVE_HISTORY, tuple(c for c in HISTORY_COLUMNS if c not in LAW_COLUMNS))


# ----------------------------------------------------------------------------- during a sweep

_drawers: list[Callable[[Path], None]] = []


@contextlib.contextmanager
def drawing(draw: Callable[[Path], None]):
    """Within the block, every sweep's live table also calls draw(results folder) (live.png; `nht run` passes
    `nht_jax.figures.live.draw`).

    Args:
        draw: results folder → None, drawing it.
    """
    _drawers.append(draw)
    try:
        yield
    finally:
        _drawers.remove(draw)


def kept_history(path: Path, fresh: bool) -> str:
    """The text live_history.csv starts with: the header alone when `fresh`, else what a resumed sweep keeps of
    it: the file cut after its last complete line, or the header alone when the file is missing or its header is
    not ours (a write cut short by a full disk, a folder from another version)."""
    header = ",".join(HISTORY_COLUMNS) + "\n"
    try:
        text = "" if fresh else path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        text = ""
    return text[: text.rfind("\n") + 1] if text.startswith(header) else header


class LiveTable:
    """The live files of one sweep's training (module docstring); `g`: each run's −log(1 − γ_eff), for the law's
    forecast, `prior` a pilot sweep's calibration of it; `seconds` is the time spent diagnosing and writing, `draw_seconds` drawing."""

    def __init__(
        self,
        out: Path,
        fresh: bool,
        options: LiveOptions = LiveOptions(),
        g=None,
        prior: heldout.Calibration | None = None,
    ):
        self.out, self.options, self.g, self.prior = Path(out), options, g, prior
        self.seconds = self.draw_seconds = 0.0
        self.last_draw_end, self.last_draw_took = -math.inf, 0.0
        self.drawing_failed = ""
        self.summaries: dict = {}  # run → (logs, its summary) of the last update (`cached_summaries`)
        atomic_write_text(self.out / LIVE_HISTORY, kept_history(self.out / LIVE_HISTORY, fresh))

    def update(
        self, step: float, histories: list, stopped, hparams: dict, rule: AnalysisConfig, norm: str, log, final: bool
    ) -> list[dict]:
        tick = time.perf_counter()
        rows = live_rows(histories, hparams, rule, norm, self.options, stopped, self.summaries, self.g, self.prior)
        atomic_write_text(self.out / LIVE_CSV, csv_text(rows, ("run", *hparams, *COLUMNS)))
        history = csv_text([{**r, "step": step} for r in rows if r["state"] != "waiting"], HISTORY_COLUMNS)
        append_text(self.out / LIVE_HISTORY, history.split("\n", 1)[1])  # never through a symbolic link
        log.write(progress_line(step, rows))
        self.seconds += time.perf_counter() - tick
        if not self.drawing_failed:
            try:
                self.draw(final)
            except (ValueError, TypeError, KeyError, IndexError, RuntimeError) as e:  # a figure never ends a sweep
                self.drawing_failed = f"{type(e).__name__}: {e}"
                log.write(
                    f"live.png is not drawn for the rest of this sweep ({self.drawing_failed}); "
                    f"`nht report` draws it from live_history.csv afterwards"
                )
        return rows

    def draw(self, final: bool) -> None:
        now = time.perf_counter()
        if not _drawers or not (final or now - self.last_draw_end >= self.last_draw_took / self.options.figure_budget):
            return
        for draw in list(_drawers):
            draw(self.out)
        self.last_draw_end = time.perf_counter()
        self.last_draw_took = self.last_draw_end - now
        self.draw_seconds += self.last_draw_took


def slice_histories(training, s) -> tuple[list, np.ndarray]:
    """Of the sweep `training` (a `nht_jax.training.loop.Sweep`) on run slice `s`: every run's history so far: finished
    run slices whole (to their stopped step), the slice in training to its logs done (a stopped run to its stopped
    step), later slices None; and every run's stopped step (NaN: none).
    Steps: the training's logged steps."""
    steps = np.asarray(training.steps, np.float64)
    out = []

    def add(buffer: dict, stopped: np.ndarray, logs: int):
        for r in range(len(stopped)):
            n = logs + 1 if not np.isfinite(stopped[r]) else int(np.searchsorted(steps, stopped[r])) + 1
            out.append({"steps": steps[:n], **{k: np.asarray(v[r, :n]) for k, v in buffer.items()}})

    for buffer, stopped in zip(training.done_metrics, training.done_stopped):
        add(buffer, stopped, training.total_logs)
    add(s.buffer, s.stopped, s.logs_done)
    stopped = np.concatenate([*training.done_stopped, s.stopped])
    out += [None] * (training.num_runs - len(out))
    return out, np.concatenate([stopped, np.full(training.num_runs - stopped.size, np.nan)])


__all__ = ["LiveOptions", "counts", "drawing", "read_csv"]
