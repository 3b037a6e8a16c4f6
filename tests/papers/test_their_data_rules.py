"""their_data's re-analysis of the clamp-law paper's per-seed data (nht_jax/papers/their_data.py) pinned by known
answers: which cells the shared fit keeps, the least squares with one intercept per modulus against a slow
within-group estimator written here, the bootstrap over seeds replayed draw by draw, the medians over the seeds
that grokked, the single-seed fits' inputs and the command's table. Hand-made SeedCells, asymmetric (mean ≠
median, first ≠ last, exactly half grokked ≠ more than half); nothing trains."""

import csv
import math

import numpy as np
import pytest

from nht_jax.analysis.fits import FitOptions, fit_line
from nht_jax.base.errors import ConfigError
from nht_jax.papers import their_data as td
from nht_jax.results.followup_npz import SeedCell


def cell(t_grok, p=59, rho=1.0, experiment="pscan", arm="clamp"):
    return SeedCell(
        experiment,
        f"data/{experiment}/metrics/p{p}_{arm}_{rho}.npz",
        p,
        arm,
        rho,
        1e-3,
        1.0,
        1.0,
        0,
        54.6,
        tuple(t_grok),
    )


def law(p, a, times_at):
    """Three pscan clamp cells of modulus p at ρ 0.85, 1, 1.15 (times_at: ρ → per-seed T_grok)."""
    return [cell(times_at[rho], p=p, rho=rho) for rho in td.RHOS]


# ----------------------------------------------------------------------------- the slow reference


def slow_within_fit(rho, log_t, groups):
    """α of log T = a_g + α·ρ by the within-group estimator Σ(ρ−ρ̄_g)(y−ȳ_g) / Σ(ρ−ρ̄_g)², and R² of log T about
    its overall mean, by plain loops."""
    num = den = 0.0
    for g in set(groups):
        xs = [r for r, h in zip(rho, groups) if h == g]
        ys = [y for y, h in zip(log_t, groups) if h == g]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        num += sum((x - mx) * (y - my) for x, y in zip(xs, ys))
        den += sum((x - mx) ** 2 for x in xs)
    alpha = num / den
    intercept = {
        g: (sum(y for y, h in zip(log_t, groups) if h == g) - alpha * sum(r for r, h in zip(rho, groups) if h == g))
        / groups.count(g)
        for g in set(groups)
    }
    mean = sum(log_t) / len(log_t)
    ss_res = sum((y - intercept[g] - alpha * r) ** 2 for r, y, g in zip(rho, log_t, groups))
    return alpha, 1 - ss_res / sum((y - mean) ** 2 for y in log_t)


def slow_median(values):
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def slow_percentile(values, q):
    """numpy's default (linear) percentile, by hand."""
    s = sorted(values)
    k = (len(s) - 1) * q / 100
    lo = math.floor(k)
    return s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (k - lo)


def grokked(c):
    return [t for t in c.t_grok if t > 0]


def slow_shared_alpha(cells, n_bootstrap, seed):
    """The point fit on the medians of the grokked seeds, then each draw resampling every cell's grokked seeds
    with replacement (one numpy generator seeded `seed`, cells in order)."""
    rho, groups = [c.rho for c in cells], [c.p for c in cells]
    alpha, r2 = slow_within_fit(rho, [math.log(slow_median(grokked(c))) for c in cells], groups)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_bootstrap):
        samples = [list(rng.choice(np.array(grokked(c), float), len(grokked(c)))) for c in cells]
        draws.append(slow_within_fit(rho, [math.log(slow_median(s)) for s in samples], groups)[0])
    if not draws:
        return alpha, r2, math.nan, math.nan
    return alpha, r2, slow_percentile(draws, 2.5), slow_percentile(draws, 97.5)


# ----------------------------------------------------------------------------- which cells the shared fit keeps


def test_the_shared_fit_keeps_the_moduli_whose_three_cells_grok_in_more_than_half_their_seeds():
    """p = 41: every cell 3 of 4 grokked (kept). p = 31: its ρ = 1.15 cell exactly 2 of 4 (half: dropped). p = 53: no
    ρ = 1.15 cell (dropped). ρ = 1.3, a free arm, a denserho cell and a ρ written 0.8500001 are sorted out."""
    good = [cell([100, 200, -1, 300], p=41, rho=r) for r in (0.8500001, 1.0, 1.15)]
    half = [
        cell([100, 200, 300, 400], p=31, rho=0.85),
        cell([100, 200, 300, 400], p=31, rho=1.0),
        cell([100, -1, 300, 0], p=31, rho=1.15),
    ]
    missing = [cell([100, 200], p=53, rho=0.85), cell([100, 200], p=53, rho=1.0)]
    others = [
        cell([1, 2], p=41, rho=1.3),
        cell([1, 2], p=41, rho=1.0, arm="none"),
        cell([1, 2], p=41, rho=1.0, experiment="denserho"),
    ]
    assert td.shared_cells(half + good + missing + others) == good
    assert td.shared_cells(half + missing) == []
    half[2] = cell([100, 200, 300, 0], p=31, rho=1.15)  # 3 of 4: now more than half
    assert td.shared_cells(half + good) == half + good


# ----------------------------------------------------------------------------- the shared α


def three_moduli():
    """log median T = a_p + 7·ρ roughly, with seeds whose mean ≠ median and a seed that did not grok."""
    return (
        law(41, 1.0, {0.85: [400, 380, 9000, -1], 1.0: [1500, 1100, 1200], 1.15: [3100, 3600, 2900, 40000]})
        + law(59, 2.0, {0.85: [1000, 1400, 900], 1.0: [3000, -1, 3500, 2500], 1.15: [9000, 12000, 8000]})
        + law(71, 0.5, {0.85: [200, 210, 190, 5000, -1], 1.0: [600, 700], 1.15: [2100, 1500, 1800]})
    )


def test_the_shared_alpha_and_its_interval_are_the_slow_fit_and_the_replayed_bootstrap():
    cells = three_moduli()
    row = td.shared_alpha(cells, 40)
    alpha, r2, lo, hi = slow_shared_alpha(cells, 40, 0)
    assert row["value"] == pytest.approx(alpha, rel=1e-10) and row["r2"] == pytest.approx(r2, rel=1e-10)
    assert (row["lo"], row["hi"]) == pytest.approx((lo, hi), rel=1e-10) and lo < alpha < hi
    assert row["quantity"] == "shared α (medians, per-p intercepts)" and row["over"] == "p ∈ {41, 59, 71}"
    assert (row["cells"], row["seeds"]) == (9, 28)  # 31 seeds, 3 of them never grokked
    other = td.shared_alpha(cells, 40, seed=5)
    assert (other["lo"], other["hi"]) == pytest.approx(slow_shared_alpha(cells, 40, 5)[2:], rel=1e-10)
    assert other["lo"] != row["lo"] and other["value"] == row["value"]


def test_the_shared_alpha_is_of_the_medians_not_the_means_and_without_draws_has_no_interval():
    """Medians exactly e^{7ρ}·e^{a_p} (each cell's mean far off): α = 7 and R² = 1 whatever the outliers; no draws:
    NaN bounds."""
    e = np.exp
    cells = [
        cell([e(a + 7 * r) / 2, e(a + 7 * r), e(a + 7 * r) * 50], p=p, rho=r)
        for p, a in ((41, 1.0), (59, 3.0))
        for r in td.RHOS
    ]
    row = td.shared_alpha(cells, 0)
    assert row["value"] == pytest.approx(7.0, rel=1e-9) and row["r2"] == pytest.approx(1.0, abs=1e-12)
    assert math.isnan(row["lo"]) and math.isnan(row["hi"])


# ----------------------------------------------------------------------------- the single-seed fits


def test_a_single_seed_fit_is_over_the_grokked_seeds_grouped_by_their_index(monkeypatch):
    """Seed 1 of ρ = 1 did not grok (−1) and seed 2 of ρ = 0.85 stopped at 0: the others go to the line fit with
    their seed index as the bootstrap's cluster, log T on ρ."""
    seen = {}

    def spy(x, y, groups, options):
        seen.update(x=list(x), y=list(y), groups=list(groups), n=options.n_bootstrap)
        return fit_line(x, y, groups, options)

    monkeypatch.setattr("nht_jax.analysis.fits.fit_line", spy)
    cells = [cell([1000, -1, 3000], rho=1.0), cell([400, 500, 0, 700], rho=0.85)]
    row = td.per_seed_fit(cells, "a label", 17)
    assert seen == {
        "x": [1.0, 1.0, 0.85, 0.85, 0.85],
        "y": list(np.log([1000, 3000, 400, 500, 700])),
        "groups": [0, 2, 0, 1, 3],
        "n": 17,
    }
    assert (row["quantity"], row["cells"], row["seeds"], row["over"]) == ("a label", 2, 5, "ρ ∈ {0.85, 1}")


def test_a_single_seed_fit_gives_the_least_squares_slope_and_its_bootstrap_interval_in_order():
    cells = [
        cell([400, 900, 500, -1], rho=0.85),
        cell([1200, 1000, 2500], rho=1.0),
        cell([3000, 9000, 4000, 3500], rho=1.15),
    ]
    row = td.per_seed_fit(cells, "x", 60)
    x = [0.85] * 3 + [1.0] * 3 + [1.15] * 4
    y = list(np.log([400, 900, 500, 1200, 1000, 2500, 3000, 9000, 4000, 3500]))
    mx, my = sum(x) / len(x), sum(y) / len(y)
    slope = sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)
    residual = sum((b - my - slope * (a - mx)) ** 2 for a, b in zip(x, y))
    assert row["value"] == pytest.approx(slope, rel=1e-10)
    assert row["r2"] == pytest.approx(1 - residual / sum((b - my) ** 2 for b in y), rel=1e-10)
    stats = fit_line(x, y, [0, 1, 2, 0, 1, 2, 0, 1, 2, 3], FitOptions(n_bootstrap=60))
    assert (row["lo"], row["hi"]) == stats.slope_ci and row["lo"] < row["value"] < row["hi"]
    assert row["over"] == "ρ ∈ {0.85, 1, 1.15}" and row["seeds"] == 10
    # a seed that grokked at step 1 is a grokked seed (log T = 0); −1 and 0 are the files' "did not grok"
    edge = td.per_seed_fit([cell([1, 400, -1, 0], rho=0.85), cell([1200, 1000], rho=1.0)], "x", 0)
    assert edge["seeds"] == 4


# ----------------------------------------------------------------------------- the table's rows


def test_the_table_is_shared_then_each_modulus_then_dense_then_the_transformer(monkeypatch):
    """analyses picks each row's cells: per p the shared cells of that p (sorted p); dense: every denserho clamp cell;
    α₂: the tfnoln_long clamp cells at ρ 0.85, 1, 1.15 only (not 1.2, not the free arm)."""
    calls = []
    monkeypatch.setattr(td, "shared_alpha", lambda cells, n: calls.append(("shared", cells, n)) or {"q": "shared"})
    monkeypatch.setattr(td, "per_seed_fit", lambda cells, label, n: calls.append((label, cells, n)) or {"q": label})
    shared = law(71, 0, dict.fromkeys(td.RHOS, [5, 6])) + law(41, 0, dict.fromkeys(td.RHOS, [5, 6]))
    dense = [cell([1], rho=r, experiment="denserho") for r in (0.9, 1.25)]
    tf = [cell([1], rho=r, experiment="tfnoln_long") for r in (0.85, 1.0, 1.15, 1.2)]
    free = [cell([1], experiment="denserho", arm="none"), cell([1], experiment="tfnoln_long", arm="none")]
    rows = td.analyses(shared + dense + tf + free, n_bootstrap=9)
    assert [r["q"] for r in rows] == [
        "shared",
        "α at p = 41 (single seeds)",
        "α at p = 71 (single seeds)",
        "dense α, p = 59 (single seeds)",
        "α₂, transformer without LayerNorm (single seeds)",
    ]
    assert [c[1] for c in calls] == [shared, shared[3:], shared[:3], dense, tf[:3]]
    assert {c[2] for c in calls} == {9}
    calls.clear()
    assert [r["q"] for r in td.analyses(shared[3:], n_bootstrap=9)][-1] == "α at p = 41 (single seeds)"
    with pytest.raises(ConfigError, match="no pscan cells at ρ 0.85, 1, 1.15 that grok"):
        td.analyses(dense + tf)


def test_the_command_prints_the_table_writes_its_csv_and_refuses_a_negative_count(tmp_path, monkeypatch, capsys):
    read = []
    cells = three_moduli()
    monkeypatch.setattr(td, "read_tree", lambda root, experiments: read.append((root, experiments)) or cells)
    asked = []
    real = td.analyses
    monkeypatch.setattr(td, "analyses", lambda cells, n: asked.append(n) or real(cells, n))
    assert td.main(["clone", "--out", str(tmp_path / "t.csv"), "--n-bootstrap", "7"]) == 0
    assert read == [(tmp_path.__class__("clone"), ("pscan", "denserho", "tfnoln_long"))] and asked == [7]
    with open(tmp_path / "t.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert [r["quantity"] for r in table] == [r["quantity"] for r in real(cells, 7)] and len(table) == 4
    assert float(table[0]["value"]) == pytest.approx(slow_shared_alpha(cells, 0, 0)[0], rel=1e-6)
    assert "shared α (medians, per-p intercepts)" in capsys.readouterr().out
    assert td.main(["clone"]) == 0 and asked[-1] == 3000
    assert td.main(["clone", "--n-bootstrap", "-1"]) == 2
    assert "error: --n-bootstrap must be ≥ 0, got -1" in capsys.readouterr().err
    assert td.main(["clone", "--n-bootstrap", "0"]) == 0
