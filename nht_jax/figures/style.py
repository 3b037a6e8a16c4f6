"""What every figure of a results directory shares: figures made without pyplot (`subplots`), atomic PNG saving,
regime colours and letters, the majority regime of a cell, axis labels and the criteria text of titles.

No global state: every figure is a `matplotlib.figure.Figure` of its own, never registered with pyplot, and saved
to PNG by its own canvas, so importing or drawing never switches the backend of the process (a Jupyter kernel's
inline plots keep working) and nothing has to be closed."""

from __future__ import annotations

import collections
import contextlib
import contextvars
import dataclasses
import io
import textwrap
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import LogFormatter, MaxNLocator

from nht_jax.base.atomic import atomic_write_bytes
from nht_jax.base.errors import check
from nht_jax.config.schedule import LogSchedule
from nht_jax.measure.summaries import REGIMES

REGIME_COLOURS = {
    "weak": "#4c72b0",
    "intermediate": "#55a868",
    "structured": "#8172b2",
    "strong": "#c44e52",
    "diverged": "#7f7f7f",
}
REGIME_LETTERS = {"weak": "W", "intermediate": "I", "structured": "S", "strong": "X", "diverged": "D"}


def subplots(nrows: int = 1, ncols: int = 1, *, figsize=None, layout=None, **grid) -> tuple[Figure, object]:
    """`matplotlib.pyplot.subplots` without pyplot: (a new `Figure`, its axes as `Figure.subplots` returns them).
    figsize and layout go to the Figure, the rest (squeeze, sharex, …) to `Figure.subplots`."""
    fig = Figure(figsize=figsize, layout=layout)
    return fig, fig.subplots(nrows, ncols, **grid)


def save(fig, path: Path, tight: bool = True) -> None:
    """Write the figure atomically in the formats of the figure-output setting (`write_figure`).

    Args:
        fig: the matplotlib Figure.
        path: the file (its suffix replaced per format).
        tight: cropped to its content (one more rendering).
    """
    write_figure(fig, path, tight)


def majority_regime(rows: list[dict]) -> str:
    counts = collections.Counter(r["regime"] for r in rows)
    return max(REGIMES, key=lambda r: (counts[r], -REGIMES.index(r)))


def axis_label(res, name: str) -> str:
    """The human label of a grid axis of the results: `LABELS`, else the axis's own label, else `label(name)`.

    Args:
        res: the results.
        name: the axis's name.

    Returns:
        The label.
    """
    axis = res.config.axes.get(name)
    return LABELS.get(name) or (axis.label.replace("_", " ") if axis else label(name))


SIGNS = {"above": "≥", "below": "≤"}


def criteria_text(res) -> str:
    """The fit and transition criteria in words (`label`), for captions."""
    a = res.config.analysis
    fit = label(a.fit_metric)
    origin = res.config.fork.origin_text() if res.config.fork else ""  # a fork: its origin on a line of its own
    return (
        f"{fit} {SIGNS[a.fit_direction]} {a.fit_threshold:g} fits, "
        f"{label(a.transition_metric)} {SIGNS[a.transition_direction]} {a.transition_threshold:g} transitions"
        + (f"\n{origin}" if origin else "")
    )


STEP_AXES = ("auto", "log", "linear")
"""How figures draw step: "auto" (a log axis when the logging schedule is log-spaced, `LogSchedule.log_spaced`:
its intervals grow from segment to segment; linear otherwise), or always "log" or "linear"."""


def log_steps(res, step_axis: str = "auto") -> bool:
    """Whether step goes on a log axis (`STEP_AXES`)."""
    check(step_axis in STEP_AXES, f"step axis {step_axis!r} is not one of {', '.join(STEP_AXES)}")
    return step_axis == "log" or (step_axis == "auto" and LogSchedule.of(res.config.train).log_spaced)


def set_step_axis(ax, res, step_axis: str = "auto", fontsize=None) -> None:
    """Label the x axis "step", on a log axis when `log_steps`: symlog, linear below the first logged step after 0,
    so that step 0 (the initialisation) is drawn too."""
    if not log_steps(res, step_axis):
        ax.set_xlabel("step", fontsize=fontsize)
        return
    steps = np.asarray(res.steps, np.float64)
    ax.set_xscale("symlog", linthresh=float(steps[steps > 0].min()) if (steps > 0).any() else 1.0)
    ax.set_xlabel("step (log scale; linear below the first log)", fontsize=fontsize)


def cells(res, x_axis: str, y_axis: str | None) -> dict:
    """{(x index, y index): [summary rows]} pooling every other axis.

    Args:
        res: the results.
        x_axis: the axis along x.
        y_axis: the axis along y, or None (one row of cells).

    Returns:
        {(x index, y index): [summary rows]}.
    """
    xs = res.axes[x_axis]
    ys = res.axes[y_axis] if y_axis else None
    out = collections.defaultdict(list)
    for row in res.summary:
        i = int(abs(xs - row[x_axis]).argmin())
        j = int(abs(ys - row[y_axis]).argmin()) if y_axis else 0
        out[i, j].append(row)
    return out


__all__ = [
    "axis_label",
    "cells",
    "save",
    "FigureOutput",
    "LABELS",
    "MARKS",
    "MIN_FIT_POINTS",
    "PlainLogFormatter",
    "caption",
    "figure_output",
    "fit_drawable",
    "integer_ticks",
    "label",
    "mark_legend_handles",
    "output_names",
    "place_captions",
    "plain_number",
    "readable_ticks",
    "regime_handles",
    "run_marks",
    "span_without",
    "write_figure",
    "writing",
]


# ----------------------------------------------------------------------------- figures fit for a paper
# Every figure the project draws goes through `save` → `write_figure`: the output setting (formats, dpi), readable
# log ticks. What each figure calls itself: `label` (human axis labels), `caption` (the explanation under the axes,
# never in the title), `regime_handles` (legend entries of the regimes that occur), `fit_drawable` (no line fit
# over fewer than MIN_FIT_POINTS points), `run_marks` (T_fit / T_transition marks per run).

FORMATS = ("png", "pdf", "svg")
"""The formats a figure can be written in (`FigureOutput.formats`)."""


@dataclasses.dataclass(frozen=True)
class FigureOutput:
    """How figures are written: in each of `formats` (FORMATS; the file name's suffix replaced, so `x.png` is also
    written as `x.pdf`, `x.svg`), raster formats at `dpi` dots per inch (PDF and SVG are vector; dpi only sizes
    their embedded images). The default, PNG at 120 dpi, is what every command wrote before the setting existed."""

    formats: tuple[str, ...] = ("png",)
    dpi: int = 120
    captions: bool = False
    """Whether trajectories.png, whose legend explains it, also carries a caption under its axes (`nht report
    --captions`); a figure for a paper gets its caption from the paper."""

    def __post_init__(self):
        check(len(self.formats) > 0, "figure formats: give at least one of " + ", ".join(FORMATS))
        unknown = [f for f in self.formats if f not in FORMATS]
        check(
            not unknown,
            f"figure format {', '.join(map(repr, unknown))} is not one of {', '.join(FORMATS)} "
            f"(e.g. --format png,pdf,svg)",
        )
        check(
            isinstance(self.dpi, int) and 10 <= self.dpi <= 2400,
            f"figure dpi must be a whole number from 10 to 2400, got {self.dpi!r}",
        )


def figure_output(formats: str | None = None, dpi: int | None = None, captions: bool = False) -> FigureOutput:
    """The setting from the command line; None keeps the default. A bad format or dpi: ConfigError naming the allowed
    values.

    Args:
        formats: `--format png,pdf,svg`: comma separated, any order, repeats ignored.
        dpi: `--dpi N`.
        captions: `--captions`.

    Returns:
        The FigureOutput.
    """
    default = FigureOutput()
    names = (
        tuple(dict.fromkeys(f.strip().lower().lstrip(".") for f in formats.split(",") if f.strip()))
        if formats is not None
        else default.formats
    )
    return FigureOutput(names, default.dpi if dpi is None else dpi, bool(captions))


_OUTPUT: contextvars.ContextVar[FigureOutput] = contextvars.ContextVar("figure_output", default=FigureOutput())


@contextlib.contextmanager
def writing(output: FigureOutput):
    """Within the block, every figure saved (in this thread or task) is written as `output` says.

    Args:
        output: the figure-output setting.

    Yields:
        `output`.
    """
    token = _OUTPUT.set(output)
    try:
        yield output
    finally:
        _OUTPUT.reset(token)


_NOTE: contextvars.ContextVar[str] = contextvars.ContextVar("figure_note", default="")


@contextlib.contextmanager
def noting(note: str):
    """Within the block, every figure saved carries `note` at the end of its title (its suptitle, or a suptitle of
    its own): "partial: step 40 of 80" on the figures of an unfinished sweep (`nht report --partial`)."""
    token = _NOTE.set(note)
    try:
        yield
    finally:
        _NOTE.reset(token)


def add_note(fig) -> None:
    """The note in force (`noting`) appended to the figure's title (its suptitle, else its first panel's title); nothing
    without one."""
    note = _NOTE.get()
    if not note:
        return
    title = fig.get_suptitle()
    titled = [ax for ax in fig.axes if ax.get_title()]
    if title or not titled:
        fig.suptitle(f"{title} ({note})" if title else f"({note})", fontsize=10)
    else:  # a figure titled per panel: the first panel's title says it (a suptitle would sit on top of it)
        titled[0].set_title(f"{titled[0].get_title()}\n({note})", fontsize=titled[0].title.get_fontsize())


def current_output() -> FigureOutput:
    """The figure-output setting in force (`writing`; FigureOutput() outside any block)."""
    return _OUTPUT.get()


def output_names(names) -> list[str]:
    """The files written for figures named `names` (e.g. "trajectories.png") under the setting in force: one per
    format, the suffix replaced; other names (tables) unchanged.

    Args:
        names: the figures' file names.

    Returns:
        The file names written.
    """
    formats = current_output().formats
    out = []
    for name in names:
        stem, dot, suffix = str(name).rpartition(".")
        out += [f"{stem}.{f}" for f in formats] if dot and suffix == "png" else [str(name)]
    return out


def write_figure(fig, path: Path, tight: bool = True) -> list[Path]:
    """Make the ticks readable (`readable_ticks`), then write `fig` atomically once per format of the setting in force
    (`current_output`).

    Args:
        fig: the matplotlib Figure.
        path: the file, its suffix replaced per format.
        tight: cropped to its content (one more rendering).

    Returns:
        The paths written.
    """
    output = current_output()
    add_note(fig)
    readable_ticks(fig)
    place_captions(fig)
    written = []
    for fmt in output.formats:
        target = Path(path).with_suffix(f".{fmt}")
        buffer = io.BytesIO()
        fig.savefig(
            buffer, format=fmt, dpi=output.dpi, bbox_inches="tight" if tight else None, metadata=UNDATED.get(fmt)
        )  # no date: the same figure gives the same bytes
        atomic_write_bytes(target, buffer.getvalue())
        written.append(target)
    return written


UNDATED = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}
"""The metadata that leaves the creation date out of vector files."""


def plain_number(x: float) -> str:
    """A tick value as a reader writes it: 1,000 / 2,500 / 0.05; powers of ten beyond 10⁶ or under 10⁻⁴ as 10ⁿ
    (mathtext), other extremes with 2 significant digits ("3e-05"). Never a mantissa times a power of ten.

    Args:
        x: the tick value.

    Returns:
        The label.
    """
    x = float(x)
    if x == 0 or not np.isfinite(x):
        return f"{x:g}"
    sign, x = ("−" if x < 0 else ""), abs(x)
    exponent = np.log10(x)
    if (x >= 1e7 or x < 1e-4) and np.isclose(exponent, round(exponent)):
        return f"{sign}$\\mathdefault{{10^{{{int(round(exponent))}}}}}$"
    if x >= 1e7 or x < 1e-4:
        return sign + f"{x:.2g}"
    if x >= 1:
        return sign + (f"{x:,.0f}" if np.isclose(x, round(x)) else f"{x:,.3g}")
    return sign + f"{float(f'{x:.3g}'):g}"


class PlainLogFormatter(LogFormatter):
    """matplotlib's LogFormatter (which ticks to label: the decades, and the minor ticks when the axis spans few
    decades) with plain numbers (`plain_number`) instead of "2×10³" or "1e+04"."""

    def _num_to_string(self, x, vmin, vmax):
        return plain_number(x)

    def __call__(self, x, pos=None):
        text = super().__call__(x, pos)
        return ("−" + text) if text and x < 0 and not text.startswith("−") else text


def readable_ticks(fig) -> None:
    """On every log or symmetric-log axis of `fig` whose tick labels matplotlib chooses (a LogFormatter; labels set
    by hand stay): plain numbers (`PlainLogFormatter`); minor ticks labelled only when the axis spans less than
    about one decade.

    Args:
        fig: the matplotlib Figure.
    """
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() not in ("log", "symlog"):
                continue
            # matplotlib's own log labels (LogFormatter and its SciNotation kind) only: labels set by hand stay
            if isinstance(axis.get_major_formatter(), LogFormatter):
                axis.set_major_formatter(PlainLogFormatter(labelOnlyBase=False))
            if isinstance(axis.get_minor_formatter(), LogFormatter):
                axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))


def integer_ticks(axis) -> None:
    """Whole-number ticks on an axis of counts (runs, seeds).

    Args:
        axis: a matplotlib Axis (ax.xaxis or ax.yaxis).
    """
    axis.set_major_locator(MaxNLocator(integer=True))


LABELS = {
    "weight_decay": "weight decay λ",
    "learning_rate": "learning rate η",
    "seed": "seed",
    "rho": "border correlation ρ",
    "train_fraction": "training fraction",
    "width": "width",
    "hidden": "width",
    "batch_size": "batch size",
    "T_fit": "$T_\\mathrm{fit}$ (steps)",
    "T_transition": "$T_\\mathrm{transition}$ (steps)",
    "delay": "delay $T_\\mathrm{transition} - T_\\mathrm{fit}$ (steps)",
    "delay_from_start": "$T_\\mathrm{transition}$ from the run's start (steps)",
    "norm_sq": "‖θ‖² (all parameters)",
    "weight_norm_sq": "‖W‖² (weights)",
    "head_norm_sq": "head ‖θ‖²",
    "train_acc": "train accuracy",
    "test_acc": "test accuracy",
    "clean_acc": "clean accuracy",
    "worst_group_acc": "worst-group accuracy",
    "weighted_avg_acc": "training-weighted accuracy",
    "train_loss": "train loss",
    "test_loss": "test loss",
    "test_rel_loss": "test relative loss",
    "train_rel_loss": "train relative loss",
    "border_reliance": "border reliance",
    "grad_norm": "gradient norm",
    "logit_scale": "logit scale",
    "clamp_rho": "clamp strength ρ",
    "clamp_norm": "clamp norm",
    "temperature": "temperature τ",
    "injection_scale": "injection scale s",
    "probe_gain": "probe gain",
    "v_ratio": "$V_\\mathrm{sc} / V_\\mathrm{st}$",
    "log_norm_ratio": "log($V_\\mathrm{mem} / V_\\mathrm{post}$)",
    "step": "step",
    "epoch": "epoch",
    "regime": "regime",
    "head_to_first_ratio": "head / first-layer ‖θ‖²",
    "head_first_ratio": "head / first-layer ratio",
    "total_norm": "total norm",
    "head_norm": "head norm",
}
"""Column, axis and metric names → the words a figure shows (`label`). Mathtext ($…$) writes subscripts."""


def label(name: str) -> str:
    """The human label of a column, grid axis or metric name: `LABELS`, else "final X" / "layer X" of a known X,
    else the name with its underscores as spaces (a figure never shows snake_case).

    Args:
        name: the name.

    Returns:
        The label.
    """
    if name in LABELS:
        return LABELS[name]
    if name.startswith("final_"):
        return "final " + label(name[len("final_") :])
    if name.startswith("layer_norm_sq/"):
        return f"‖θ‖² of {name.split('/', 1)[1].replace('_', ' ')}"
    return name.replace("_", " ")


def unit_free(text: str) -> str:
    """A label without its trailing "(…)" unit, for use inside a sentence."""
    return text.rsplit(" (", 1)[0] if text.endswith(")") else text


def caption(fig, text: str, fontsize: float = 8) -> None:
    """The figure's explanation, wrapped to its width, under the axes (a cropped save keeps it). Titles stay short;
    what a reader needs to read the figure goes here. Drawn with gid "caption" (the tests find it).

    Args:
        fig: the matplotlib Figure.
        text: the explanation; its newlines start paragraphs.
        fontsize: in points.
    """
    chars = max(40, int(fig.get_figwidth() * 72 / (0.52 * fontsize)))
    body = "\n".join(textwrap.fill(part, chars) for part in text.split("\n") if part)
    fig.text(0.01, 0.0, body, ha="left", va="top", fontsize=fontsize, gid="caption", wrap=False)


def place_captions(fig, gap_in: float = 0.08) -> None:
    """Move the captions (`caption`) just under everything else the figure draws (axes, their labels, legends
    outside them), whatever the layout did: one extra rendering, only for a figure with a caption.

    Args:
        fig: the matplotlib Figure.
        gap_in: the gap between the lowest thing drawn and the captions, in inches.
    """
    captions = [t for t in fig.texts if t.get_gid() == "caption"]
    if not captions:
        return
    for t in captions:
        t.set_visible(False)
    # a Figure made without pyplot has a canvas that cannot draw: give it matplotlib's raster one
    canvas = fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)
    renderer = canvas.get_renderer()
    with renderer._draw_disabled():  # the layout and every extent, no pixels: what a cropped save measures with
        fig.draw(renderer)
    box = fig.get_tightbbox(renderer)  # inches, captions hidden
    for t in captions:
        t.set_visible(True)
        t.set_position((max(box.x0, 0.0) / fig.get_figwidth(), (box.y0 - gap_in) / fig.get_figheight()))


def regime_handles(regimes) -> list[Patch]:
    """Legend patches of the regimes that occur in `regimes` (any iterable of regime names), in REGIMES order.

    Args:
        regimes: regime names, any iterable.

    Returns:
        One Patch per regime present.
    """
    present = set(regimes)
    return [Patch(color=REGIME_COLOURS[r], label=r) for r in REGIMES if r in present]


MIN_FIT_POINTS = 4
"""No fitted line is drawn through fewer distinct x values than this: the points are drawn, and the caption says
"too few points for a fit". Two or three points make any R² look good."""


def fit_drawable(x) -> bool:
    """Whether a fitted line may be drawn through points at `x` (at least MIN_FIT_POINTS distinct finite values).

    Args:
        x: the points' x values.

    Returns:
        True when one may.
    """
    x = np.asarray(x, float)
    return len(np.unique(x[np.isfinite(x)])) >= MIN_FIT_POINTS


MARKS = {"T_fit": dict(y=(0.0, 0.06), ls="-"), "T_transition": dict(y=(0.94, 1.0), ls="-")}
"""The per-run time marks of the trajectory figures: short vertical ticks in the run's colour, T_fit along the
bottom edge of the axes, T_transition along the top edge (axes fraction)."""


def run_marks(ax, steps_of: dict[str, float], colour, lw: float = 1.6) -> None:
    """Draw `MARKS` for one run (NaN: not reached, nothing drawn). Each mark is a Line2D with gid "T_fit" /
    "T_transition" (the tests find them).

    Args:
        ax: the matplotlib Axes.
        steps_of: {"T_fit": step, "T_transition": step}.
        colour: the run's colour.
        lw: the line width, in points.
    """
    transform = ax.get_xaxis_transform()  # x in data, y in axes fraction
    for key, step in steps_of.items():
        if key in MARKS and np.isfinite(step):
            ax.plot(
                [step, step],
                MARKS[key]["y"],
                color=colour,
                lw=lw,
                transform=transform,
                gid=key,
                solid_capstyle="butt",
                clip_on=False,
            )


def mark_legend_handles() -> list[Line2D]:
    """Legend proxies explaining `run_marks`.

    Returns:
        One Line2D per mark.
    """
    return [
        Line2D([], [], color="0.3", marker="|", ls="none", ms=9, gid=key, label=text)
        for key, text in (
            ("T_fit", "$T_\\mathrm{fit}$ (ticks at the bottom)"),
            ("T_transition", "$T_\\mathrm{transition}$ (ticks at the top)"),
        )
    ]


def span_without(values, identity: float | None, log: bool, pad: float = 0.08) -> tuple[float, float]:
    """x limits that span the values and leave out `identity` when it lies outside them (an intervention's identity
    is drawn as a baseline line, not a tick).

    Args:
        values: the x values drawn.
        identity: the intervention's identity value, or None.
        log: a log axis (the padding multiplicative, values ≤ 0 left out).
        pad: the padding, a fraction of the values' range.

    Returns:
        (low, high).
    """
    values = np.asarray([v for v in values if np.isfinite(v) and (v > 0 or not log) and v != identity], float)
    if not values.size:
        return (0.0, 1.0)
    low, high = float(values.min()), float(values.max())
    if log:
        ratio = (high / low) ** pad if high > low else 1.3
        return low / ratio, high * ratio
    margin = (high - low) * pad if high > low else max(abs(low) * 0.2, 0.5)
    return low - margin, high + margin
