"""trajectories.png and live.png fit for a paper (issue 46 item 7): the legend inside the figure and beside its
axes (attached to a panel, not floating at the figure's edge), every line named, no caption baked into the image
unless asked (`--captions`), live.png's panels spanning their data (x from 0 to the last forecast's step, y to the
largest forecast or measured T), each run's forecast line labelled with its grid values."""

import math

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg

from nht_jax.cli import main
from nht_jax.figures import live as live_figure
from nht_jax.training import live

from .conftest import record_figures


def captions(fig) -> list:
    return [t for t in fig.texts if t.get_gid() == "caption"]


def extent(artist, fig):
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return artist.get_window_extent(canvas.get_renderer())


def test_trajectories_name_every_line_beside_the_axes_without_a_caption(regimes_folder, monkeypatch):
    saved = record_figures(monkeypatch)
    assert main(["report", str(regimes_folder)]) == 0
    fig = saved.by_name("trajectories.png")
    acc_ax, norm_ax = fig.axes
    legend = norm_ax.get_legend()
    assert legend is not None and not fig.legends  # attached to the right panel
    texts = [t.get_text() for t in legend.get_texts()]
    assert texts[:3] == ["λ=0.01", "λ=0.1", "λ=1"] and {"test accuracy", "train accuracy"} <= set(texts)
    box, panel, whole = extent(legend, fig), extent(norm_ax, fig), fig.bbox
    assert box.x0 >= panel.x1 and box.x1 <= whole.x1 and box.y1 <= whole.y1  # beside the axes, inside the figure
    assert not captions(fig)
    assert main(["report", str(regimes_folder), "--captions"]) == 0
    asked = [f for f, path in saved.figures if path.name == "trajectories.png"][-1]
    assert "One colour per weight decay λ" in captions(asked)[0].get_text()


def write_live(folder, runs=3):
    """live_history.csv of `runs` runs forecast at steps 10–50 (run 0 transitions at 40), and live.csv naming
    their λ and seed."""
    history = [
        {
            "step": s,
            "run": r,
            "state": "transitioned" if (r == 0 and s >= 40) else "peaked and contracting",
            "T_fit": 10.0,
            "T_transition": 40.0 if (r == 0 and s >= 40) else math.nan,
            "T_hat": 60.0 + 20 * r - s / 5,
            "T_lo": 50.0 + 20 * r - s / 5,
            "T_hi": math.inf,
            "v_post_source": "pilot",
        }
        for s in (10.0, 20.0, 30.0, 40.0, 50.0)
        for r in range(runs)
    ]
    (folder / live.LIVE_HISTORY).write_text(live.csv_text(history, live.HISTORY_COLUMNS))
    table = [
        {
            "run": r,
            "weight_decay": [0.1, 0.3, 1.0][r % 3],
            "seed": r // 3,
            **{c: history[-runs + r].get(c, "") for c in live.COLUMNS},
        }
        for r in range(runs)
    ]
    (folder / live.LIVE_CSV).write_text(live.csv_text(table, ("run", "weight_decay", "seed", *live.COLUMNS)))


def test_live_png_spans_its_data_and_labels_each_run(tmp_path, monkeypatch):
    write_live(tmp_path)
    saved = record_figures(monkeypatch)
    live_figure.draw(tmp_path)
    fig = saved.figures[-1][0]
    states, forecasts = fig.axes
    assert forecasts.get_xlim() == (0.0, 50.0)  # the steps at which forecasts were made
    largest = max(60.0 + 20 * 2 - 10 / 5, 40.0)  # run 2's first forecast
    assert forecasts.get_ylim()[1] == np.float64(1.05 * largest)
    labels = [t.get_text() for t in forecasts.get_legend().get_texts()]
    assert labels[:3] == ["run 0: λ=0.1", "run 1: λ=0.3", "run 2: λ=1"]
    assert "T = step (below: overdue)" in labels and "measured $T_\\mathrm{transition}$" in labels
    box, panel = extent(forecasts.get_legend(), fig), extent(forecasts, fig)
    assert box.x0 >= panel.x1 and box.x1 <= fig.bbox.x1  # beside its panel, inside the image
    assert not captions(fig) and not fig.legends
