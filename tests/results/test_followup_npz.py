"""The reader of the follow-up papers' per-seed files (nht_jax/results/followup_npz.py), on small files written here in
their on-disk format (the keys and layout of ClevixLab/critical-norm-grokking and ClevixLab/grokking-logit-scale; a
few rows of our own, not their data)."""

import numpy as np
import pytest

from nht_jax.base.errors import ConfigError
from nht_jax.results.followup_npz import read_cell, read_tree


def write_clamp_cell(path, t_grok, rho=1.0, lr=1e-3, arm="clamp", wc_key="wc", p=59, **extra):
    """A cell file as their clamp runners write it: per-seed scalars, hyperparameters as 0-d arrays, trajectories
    on a geometric step grid (ignored by the reader)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    steps = np.unique(np.round(np.geomspace(1, 5000, 40)).astype(np.int64))
    seeds = len(t_grok)
    np.savez(
        path,
        steps=steps,
        p=np.int64(p),
        alpha=np.float32(0.4),
        lam=np.float32(1.0),
        lr=np.float32(lr),
        arm=np.array(arm),
        rho=np.float32(rho),
        **{wc_key: np.float32(54.6)},
        t_int=np.int64(500),
        T_grok_per_seed=np.asarray(t_grok, np.int64),
        T_mem_per_seed=np.full(seeds, 152, np.int64),
        test_acc=np.zeros((seeds, steps.size), np.float32),
        **extra,
    )


def test_a_clamp_cell_reads_its_seeds_and_hyperparameters(tmp_path):
    root = tmp_path / "clone"
    write_clamp_cell(root / "data" / "efflr" / "metrics" / "a_rho0.85.npz", [1200, 1000, -1, 1100], rho=0.85, lr=8e-3)
    (cell,) = read_tree(root)
    assert (cell.experiment, cell.p, cell.arm, cell.path) == ("efflr", 59, "clamp", "data/efflr/metrics/a_rho0.85.npz")
    assert cell.rho == pytest.approx(0.85) and cell.lr == pytest.approx(8e-3) and cell.wd == 1.0
    assert cell.tau == 1.0 and cell.t_fork == 0 and cell.wc == pytest.approx(54.6)
    assert cell.t_grok == (1200, 1000, -1, 1100)
    np.testing.assert_array_equal(cell.grokked, [1200, 1000, 1100])  # ≤ 0: did not grok
    assert cell.key == ("efflr", 59, "clamp", 0.85, cell.lr, 1.0, 1.0)


def test_a_fork_cell_counts_its_delay_from_the_fork_and_weights_files_are_skipped(tmp_path):
    """The logit-scale layout: metrics/<experiment>/<file>.npz, float64 hyperparameters, a t_fork, wc_used, τ."""
    root = tmp_path / "clone"
    folder = root / "metrics" / "samestate"
    folder.mkdir(parents=True)
    np.savez(
        folder / "p59_clamp_same.npz",
        arm=np.array("clamp_same"),
        p=np.int64(59),
        rho=np.float64(1.15),
        t_fork=np.int64(800),
        lr=np.float64(1e-3),
        lam=np.float64(1.0),
        T_grok_per_seed=np.array([8800, 8000, 7600], np.int64),
        steps=np.array([801.0, 1000.0], np.float32),
    )
    np.savez(folder / "p59_clamp_same_weights.npz", W1=np.zeros((2, 2)))
    write_clamp_cell(
        root / "metrics" / "collapse" / "x_tau1.30.npz", [3000, 3100], wc_key="wc_used", tau=np.float64(1.3)
    )
    cells = read_tree(root)
    assert [c.experiment for c in cells] == ["collapse", "samestate"]
    assert cells[0].tau == pytest.approx(1.3) and cells[0].wc == pytest.approx(54.6)
    np.testing.assert_array_equal(cells[1].delays, [8000, 7200, 6800])
    assert [c.experiment for c in read_tree(root, ["samestate"])] == ["samestate"]


def test_files_that_are_no_cell_fail_in_one_line(tmp_path):
    bad = tmp_path / "data" / "x" / "metrics" / "no_tgrok.npz"
    bad.parent.mkdir(parents=True)
    np.savez(bad, p=np.int64(59), arm=np.array("clamp"))
    with pytest.raises(ConfigError, match="no_tgrok.npz: no 'T_grok_per_seed'"):
        read_tree(tmp_path)
    bad.write_text("not a zip")
    with pytest.raises(ConfigError, match="not a readable .npz"):
        read_cell(bad)
    with pytest.raises(ConfigError, match="no such folder"):
        read_tree(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="no per-seed cell file"):
        read_tree(tmp_path, ["other"])


def test_the_norm_at_each_seeds_grokking_step_is_read_between_logs_and_its_mean_is_the_cells_w_c(tmp_path):
    """Logged at steps 0, 100, 400 with ‖θ‖ falling 60 → 50 → 40 (seed 0) and 70 → 64 → 52 (seed 1): seed 0 groks
    at 250 (halfway 100 → 400: 45), seed 1 at 100 (64, on a log), seeds 2 and 3 never (−1, and 0, their files' other
    mark of a seed that did not grok: NaN, not the norm at step 0); W_c = (45 + 64) / 2 = 54.5."""
    steps = np.array([0, 100, 400])
    norm = np.array([[60, 50, 40], [70, 64, 52], [80, 70, 60], [90, 80, 70]], np.float32)
    path = tmp_path / "efflr" / "metrics" / "c.npz"
    path.parent.mkdir(parents=True)
    np.savez(
        path,
        steps=steps,
        weight_norm=norm,
        T_grok_per_seed=np.array([250, 100, -1, 0]),
        p=np.int64(59),
        arm=np.array("none"),
    )
    cell = read_cell(path)
    assert cell.norm_at_grok[:2] == pytest.approx((45.0, 64.0)) and np.isnan(cell.norm_at_grok[2:]).all()
    assert cell.critical_norm == pytest.approx(54.5)
    # No trajectory, or one of another shape: no norm, W_c NaN.
    write_clamp_cell(tmp_path / "x" / "a.npz", [1200, 1000])
    bad = tmp_path / "y" / "b.npz"
    bad.parent.mkdir()
    np.savez(
        bad,
        steps=steps,
        weight_norm=norm[:2, :2],
        T_grok_per_seed=np.array([250, 100]),
        p=np.int64(59),
        arm=np.array("none"),
    )
    for other in (read_cell(tmp_path / "x" / "a.npz"), read_cell(bad)):
        assert other.norm_at_grok == () and np.isnan(other.critical_norm)
