"""Figures fit for a paper, checked on the drawn artists of every figure `nht report`, `nht analyze`, `nht figs` and
`nht bound` write from small planted folders (tests/figures/conftest.py):
- captions under the axes (trajectories.png: its legend instead, unless --captions), titles short (one line);
- legends list only the regimes that occur;
- an intervention's identity value is off the x axis, the baseline a horizontal line;
- intervals drawn (error bars or bands) wherever a title or caption promises them;
- no fitted line through fewer than 4 distinct x values, and the caption says so;
- axis labels without snake_case underscores (mathtext subscripts aside);
- log-axis tick labels without a mantissa times a power of ten ("1.275×10³");
- the trajectories carry each run's T_fit and T_transition, colour-matched;
- --format png,pdf,svg and --dpi on every figure command."""

from __future__ import annotations

import re
import struct

import matplotlib.colors as mcolors
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection, PolyCollection
from matplotlib.container import ErrorbarContainer

from nht_jax.cli import main
from nht_jax.figures import style
from nht_jax.figures.style import subplots
from nht_jax.papers import paper_figures as pf
from nht_jax.results.folder import load_results
from nht_jax.measure.summaries import REGIMES

from .conftest import record_figures, write_interventions, write_regimes

MANTISSA = re.compile(r"\d\s*(?:×|\\times)\s*10")
MAX_TITLE = 60


def analysed(folder, *extra):
    assert main(["report", str(folder), *extra]) == 0
    assert (
        main(
            [
                "analyze",
                str(folder),
                "--set",
                "interventions.n_bootstrap=100",
                "--set",
                "early_warning.n_bootstrap=100",
                "--set",
                "forecast.n_bootstrap=100",
                *extra,
            ]
        )
        == 0
    )


def plain(text: str) -> str:
    """Text without its mathtext ($…$: subscripts are not snake_case)."""
    return re.sub(r"\$[^$]*\$", "", text)


def visible_axes(fig):
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison]


def tick_texts(fig) -> list[str]:
    return [
        t.get_text()
        for ax in visible_axes(fig)
        for axis in (ax.xaxis, ax.yaxis)
        for t in axis.get_ticklabels(which="both")
    ]


def axis_labels(fig) -> list[str]:
    return [text for ax in visible_axes(fig) for text in (ax.get_xlabel(), ax.get_ylabel()) if text]


def titles(fig) -> list[str]:
    out = [ax.get_title() for ax in fig.axes if ax.get_title()]
    return out + ([fig._suptitle.get_text()] if fig._suptitle is not None else [])


def captions(fig) -> list:
    return [t for t in fig.texts if t.get_gid() == "caption"]


def legend_texts(fig) -> list[str]:
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    return [t.get_text() for legend in legends for t in legend.get_texts()]


def error_bars(ax) -> bool:
    """Error bars with a bar of some length."""
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer) and container.lines[2]:
            segments = [s for c in container.lines[2] for s in c.get_segments()]
            if any(np.ptp(np.asarray(s)[:, 1]) > 0 or np.ptp(np.asarray(s)[:, 0]) > 0 for s in segments):
                return True
    return False


def draws_intervals(ax) -> bool:
    """Error bars with a bar of some length, or a shaded band (fill_between, axhspan/axvspan)."""
    if error_bars(ax):
        return True
    bands = [c for c in ax.collections if isinstance(c, PolyCollection) and not isinstance(c, PathCollection)]
    return bool(bands) or any(p.get_alpha() is not None and p.get_alpha() < 1 for p in ax.patches)


def data_x(ax) -> np.ndarray:
    """The x of the points an axes draws: markers without lines (errorbar centres, plotted points) and scatters."""
    xs = [
        np.asarray(line.get_xdata(), float)
        for line in ax.lines
        if line.get_marker() not in (None, "None", "", " ") and line.get_linestyle() in ("None", "", " ")
    ]
    xs += [np.asarray(c.get_offsets(), float)[:, 0] for c in ax.collections if isinstance(c, PathCollection)]
    return np.concatenate(xs) if xs else np.zeros(0)


def fit_lines(ax) -> list:
    return [line for line in ax.lines if line.get_gid() == "fit"]


def check_rules(fig, name: str, regimes_present: set[str]) -> None:
    """Every rule of the module docstring that applies to any figure."""
    for text in tick_texts(fig):
        assert not MANTISSA.search(text), f"{name}: tick label {text!r}"
    for text in axis_labels(fig):
        assert "_" not in plain(text), f"{name}: axis label {text!r}"
    for text in titles(fig):
        assert "\n" not in text and len(plain(text)) <= MAX_TITLE, f"{name}: title {text!r}"
    for text in legend_texts(fig):
        assert text not in REGIMES or text in regimes_present, f"{name}: legend {text!r}, regimes {regimes_present}"
    words = " ".join([*titles(fig), *(c.get_text() for c in captions(fig))])
    if "interval" in words:
        assert any(draws_intervals(ax) for ax in visible_axes(fig)) or any(
            re.search(r"\[[^\]]+, [^\]]+\]", t) for t in legend_texts(fig)
        ), f"{name}: intervals promised, none drawn"
    for ax in visible_axes(fig):
        if fit_lines(ax):
            assert len(np.unique(data_x(ax))) >= 4, f"{name}: a line fit through < 4 points"
    for caption in captions(fig):  # under every axes
        canvas = FigureCanvasAgg(fig)  # a closed pyplot figure has lost its canvas
        canvas.draw()
        renderer = canvas.get_renderer()
        top = caption.get_window_extent(renderer).y1
        assert all(top <= ax.get_tightbbox(renderer).y0 + 1 for ax in visible_axes(fig)), f"{name}: caption"


def regimes_of(folder) -> set[str]:
    return {row["regime"] for row in load_results(folder).summary}


# ----------------------------------------------------------------------------- every figure of the commands


@pytest.fixture(scope="module")
def commands(tmp_path_factory):
    """{"regimes" | "interventions": (folder, the figures `nht report` then `nht analyze` wrote there)}, made once."""
    out = {}
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name, write in (("regimes", write_regimes), ("interventions", write_interventions)):
            folder = write(tmp_path_factory.mktemp("figures") / name)
            saved = record_figures(monkeypatch)
            analysed(folder)
            out[name] = folder, saved
    return out


def test_every_figure_of_report_and_analyze_follows_the_rules(commands):
    for folder, saved in commands.values():
        assert set(saved.names()) >= {
            "phase_diagram.png",
            "trajectories.png",
            "phase_boundaries.png",
            "delay_fits.png",
            "early_warning.png",
            "forecast.png",
        }
        for fig, path in saved.figures:
            check_rules(fig, path.name, regimes_of(folder))
            # trajectories.png: its legend explains it, a caption only with --captions (test_trajectories_live.py)
            assert captions(fig) or path.name == "trajectories.png", f"{path.name}: no caption under the axes"
    assert "interventions.png" in commands["interventions"][1].names()


def test_the_phase_legends_list_only_the_regimes_that_occur(commands):
    folder, saved = commands["regimes"]
    assert regimes_of(folder) == {"weak", "intermediate", "strong"}
    for name in ("phase_diagram.png", "phase_boundaries.png"):
        shown = [t for t in legend_texts(saved.by_name(name)) if t in REGIMES]
        assert shown == ["weak", "intermediate", "strong"], name


def test_interventions_identity_off_the_axis_baseline_a_line_intervals_and_fits(commands):
    fig = commands["interventions"][1].by_name("interventions.png")
    panels = {ax.get_xlabel(): ax for ax in visible_axes(fig)}
    assert set(panels) == {"temperature τ", "clamp strength ρ"}
    for label, identity, arms in (("temperature τ", 1.0, {2.0, 4.0}), ("clamp strength ρ", 0.0, {0.5, 1, 2, 3})):
        ax = panels[label]
        low, high = ax.get_xlim()
        assert not low <= identity <= high, (label, ax.get_xlim())
        assert set(np.round(ax.get_xticks(), 6)) == arms and set(data_x(ax)) == arms
        baseline = [line for line in ax.lines if line.get_label().startswith("baseline")]
        assert len(baseline) == 1 and np.ptp(baseline[0].get_ydata()) == 0  # a horizontal line
        assert error_bars(ax)  # the caption: "interval as bars"
    assert fit_lines(panels["clamp strength ρ"])  # four arms: the exponential law is drawn
    assert not fit_lines(panels["temperature τ"])  # τ = 1, 2, 4: three points, no line
    text = captions(fig)[0].get_text()
    assert "too few points for a fit" in text and "temperature τ: 3 strengths" in text and "interval" in text
    assert "intervals" not in fig._suptitle.get_text()


def test_trajectories_mark_each_runs_T_fit_and_T_transition_in_its_colour(commands):
    folder, saved = commands["regimes"]
    fig = saved.by_name("trajectories.png")
    res = load_results(folder)
    acc_ax, norm_ax = fig.axes
    for ax in (acc_ax, norm_ax):
        marks = {key: [line for line in ax.lines if line.get_gid() == key] for key in ("T_fit", "T_transition")}
        expected = {key: sorted(r[key] for r in res.summary if np.isfinite(r[key])) for key in marks}
        assert expected["T_fit"] == [200.0] * 4 and expected["T_transition"] == [600.0, 900.0]
        for key, lines in marks.items():
            assert sorted(line.get_xdata()[0] for line in lines) == expected[key]
        for line in marks["T_transition"]:  # the colour of its λ's curve: λ = 0.1's
            curve = next(c for c in acc_ax.lines if c.get_label() == "λ=0.1")
            assert mcolors.same_color(line.get_color(), curve.get_color())
    assert {"$T_\\mathrm{fit}$ (ticks at the bottom)", "$T_\\mathrm{transition}$ (ticks at the top)"} <= set(
        legend_texts(fig)
    )


def test_paper_and_bound_figures_follow_the_rules(regimes_folder, tmp_path, saved):
    from nht_jax.theory.recorded import bound_report

    for key in ("fig1", "fig4", "delay"):
        outcome = pf.make_figure(key, regimes_folder, tmp_path / f"{key}.png")
        assert outcome.status == "drawn", outcome.note
    bound_report(regimes_folder)
    for fig, path in saved.figures:
        check_rules(fig, path.name, regimes_of(regimes_folder))
        assert captions(fig), path.name
    assert [p.name for _, p in saved.figures] == ["fig1.png", "fig4.png", "delay.png", "bound.png"]


# ----------------------------------------------------------------------------- the rules' building blocks


def test_log_ticks_are_plain_numbers_where_matplotlib_writes_a_mantissa():
    fig, ax = subplots()
    ax.plot([1000, 2000], [1000, 2000])
    ax.set(xscale="log", yscale="log", ylim=(1000, 2000))
    fig.canvas.draw()
    assert any(MANTISSA.search(t) for t in tick_texts(fig))  # matplotlib's own labels: "2×10³" and the like
    style.readable_ticks(fig)
    fig.canvas.draw()
    texts = [t for t in tick_texts(fig) if t]
    assert texts and not any(MANTISSA.search(t) for t in texts)
    assert "2,000" in texts and "1,000" in texts
    fig, ax = subplots()  # labels set by hand on a log axis stay as they are
    ax.set(yscale="log", ylim=(10, 205), yticks=[16, 32, 64, 128], yticklabels=["16", "32", "64", "128"])
    style.readable_ticks(fig)
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["16", "32", "64", "128"]
    assert [style.plain_number(v) for v in (1275, 0.05, 1e-5, 2.5e7, 3)] == [
        "1,275",
        "0.05",
        "$\\mathdefault{10^{-5}}$",
        "2.5e+07",
        "3",
    ]


def test_labels_are_human_and_never_snake_case():
    assert style.label("weight_decay") == "weight decay λ" and style.label("learning_rate") == "learning rate η"
    assert style.label("T_transition") == "$T_\\mathrm{transition}$ (steps)"
    assert style.label("final_clean_acc") == "final clean accuracy"
    assert style.label("some_new_metric") == "some new metric"
    assert all("_" not in plain(text) for text in style.LABELS.values())


# ----------------------------------------------------------------------------- formats and resolution


def png_width(path) -> int:
    return struct.unpack(">I", path.read_bytes()[16:20])[0]


def test_every_figure_command_writes_pdf_and_svg_at_the_dpi_asked(regimes_folder, tmp_path, capsys):
    analysed(regimes_folder, "--format", "pdf,svg")
    for name in ("trajectories", "phase_diagram", "delay_fits", "early_warning", "forecast"):
        assert (regimes_folder / f"{name}.pdf").read_bytes()[:5] == b"%PDF-", name
        assert b"<svg" in (regimes_folder / f"{name}.svg").read_bytes()[:2000], name
        assert not (regimes_folder / f"{name}.png").exists(), name  # only the formats asked for
    assert "early_warning.svg" in capsys.readouterr().out  # the files written are the files listed
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "default").symlink_to(regimes_folder)
    for dpi in (60, 120):
        out = tmp_path / f"figs-{dpi}"
        assert (
            main(
                [
                    "paper",
                    "figs",
                    "--only",
                    "fig1",
                    "--results",
                    str(tmp_path / "root"),
                    "--no-run",
                    "--out",
                    str(out),
                    "--format",
                    "png,pdf,svg",
                    "--dpi",
                    str(dpi),
                ]
            )
            == 0
        )
        assert {p.suffix for p in out.glob("fig1_*")} == {".png", ".pdf", ".svg"}
    assert png_width(tmp_path / "figs-120" / "fig1_three_regimes.png") > 1.8 * png_width(
        tmp_path / "figs-60" / "fig1_three_regimes.png"
    )
    assert main(["report", str(regimes_folder), "--dpi", "60"]) == 0
    assert png_width(regimes_folder / "trajectories.png") < png_width(tmp_path / "figs-120" / "fig1_three_regimes.png")


@pytest.mark.parametrize("option", [["--format", "jpg"], ["--format", ","], ["--dpi", "0"]])
def test_a_bad_format_or_dpi_is_one_line(regimes_folder, option, capsys):
    assert main(["report", str(regimes_folder), *option]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("format" in err or "dpi" in err)
