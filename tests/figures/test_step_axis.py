"""Step on a log axis in the trajectory figures when the logging schedule is log-spaced (or when asked), with the
legend outside the curves."""

import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.figures import folder
from nht_jax.figures.style import log_steps
from nht_jax.results.folder import Results

LOG_SPACED = [[20, 5], [40, 10]]


def planted(config) -> Results:
    """Results of `config` with made-up trajectories at its logged steps (4 runs: 2 λ × 2 seeds)."""
    from nht_jax.config.schedule import LogSchedule

    steps = LogSchedule.of(config.train).steps
    runs = config.runs()
    n = len(runs["weight_decay"])
    rising = np.linspace(0.1, 1.0, steps.size)
    metrics = {
        "test_acc": np.tile(rising, (n, 1)),
        "train_acc": np.tile(rising, (n, 1)),
        "norm_sq": np.tile(1 + steps, (n, 1)).astype(float),
    }
    axes = {k: np.unique(v) for k, v in runs.items()}
    return Results(None, config, steps, metrics, runs, axes, [])


def test_auto_is_log_for_a_log_spaced_schedule_only(tiny_config):
    spaced, uniform = planted(tiny_config(log_schedule=LOG_SPACED)), planted(tiny_config())
    assert log_steps(spaced) and not log_steps(uniform)
    assert log_steps(uniform, "log") and not log_steps(spaced, "linear")
    shrinking = planted(tiny_config(log_schedule=[[20, 10], [40, 5]]))  # finer later: not log-spaced
    assert not log_steps(shrinking)
    with pytest.raises(ConfigError, match="not one of auto, log, linear"):
        log_steps(spaced, "logarithmic")


def test_trajectories_figure_axis_and_legend(tiny_config, tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr(folder, "save", lambda fig, path: drawn.append(fig))
    folder.draw_trajectories(planted(tiny_config(log_schedule=LOG_SPACED)), tmp_path / "t.png")
    folder.draw_trajectories(planted(tiny_config()), tmp_path / "u.png")
    folder.draw_trajectories(planted(tiny_config()), tmp_path / "l.png", step_axis="log")
    scales = [[ax.get_xscale() for ax in fig.axes] for fig in drawn]
    assert scales == [["symlog", "symlog"], ["linear", "linear"], ["symlog", "symlog"]]
    for fig in drawn:  # one legend, the right panel's, beside it (issue 46 item 7): none floating at the figure's edge
        assert not fig.legends and fig.axes[0].get_legend() is None and fig.axes[1].get_legend() is not None
        assert [t.get_text() for t in fig.axes[1].get_legend().get_texts()][:2] == ["λ=0.01", "λ=1"]
