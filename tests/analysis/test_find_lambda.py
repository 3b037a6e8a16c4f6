"""`nht find-lambda`: the search on a known regime function (a stub round runner: λ < a weak, a ≤ λ < b
intermediate with delay 100/λ, λ ≥ b strong), its budget, its resume, bad input, and one end-to-end run of the
command on the tiny preset."""

import json
import math
import os
import subprocess
import sys

import pytest

from nht_jax.analysis import find_lambda as fl
from nht_jax.base.errors import ConfigError
from nht_jax.results.folder import csv_value, parse_cell

SPAN = (1e-3, 10.0)


class KnownRegimes:
    """A round runner whose regimes are a step function of λ (and η: a = a0 · 0.01/η), delay 100/λ to 50 steps."""

    def __init__(self, a=0.05, b=1.3, mixed=()):
        self.a, self.b, self.mixed, self.trained = a, b, mixed, []

    def regime(self, lam, eta, seed):
        a = self.a * 0.01 / eta
        if any(lo <= lam < hi for lo, hi in self.mixed):
            return "weak" if seed % 2 else "intermediate"
        return "weak" if lam < a else "intermediate" if lam < self.b else "strong"

    def rows(self, config):
        runs = config.runs()
        out = []
        for i in range(len(runs["weight_decay"])):
            lam, eta, seed = (float(runs[k][i]) for k in ("weight_decay", "learning_rate", "seed"))
            regime = self.regime(lam, eta, int(seed))
            t_fit = math.nan if regime == "strong" else 100.0
            t_transition = 100.0 + 50 * max(1, round(2 / lam)) if regime == "intermediate" else math.nan
            row = {
                "run": i,
                "weight_decay": lam,
                "learning_rate": eta,
                "seed": int(seed),
                "regime": regime,
                "T_fit": t_fit,
                "T_transition": t_transition,
                "diverged": False,
            }
            out.append({k: parse_cell(csv_value(v)) for k, v in row.items()})  # as summary.csv holds it
        return out

    def train(self, config, folder):
        folder.mkdir(parents=True, exist_ok=True)
        rows = self.rows(config)
        (folder / "rows.json").write_text(json.dumps(rows))
        self.trained.append(folder.name)
        return rows

    @staticmethod
    def load(folder):
        return json.loads((folder / "rows.json").read_text())

    @property
    def runner(self):
        return fl.RoundRunner(self.train, self.load)


def search(tmp_path, known=None, overrides=(), **options):
    known = known or KnownRegimes()
    options = {"span": SPAN, **options}
    return known, fl.find_lambda(
        "tiny", tmp_path, known.runner, fl.SearchOptions(**options), overrides, echo=lambda text: None
    )


def target(result, name, slice_label=()):
    return next(t for t in result.targets if t.name == name and t.slice == slice_label)


def test_finds_both_boundaries_within_the_factor_with_fewer_runs_than_the_dense_grid(tmp_path):
    known, result = search(tmp_path)
    for name, truth in (("weak→intermediate", known.a), ("intermediate→strong", known.b)):
        found = target(result, name)
        assert found.status == "known", found
        assert found.interval[0] <= truth <= found.interval[1] and found.width <= 1.5, found
    shortest = target(result, fl.SHORTEST)
    assert shortest.status == "known" and shortest.value < known.b <= shortest.interval[1], shortest
    assert result.stopped == "every target known or unresolvable"
    dense = result.dense()
    assert dense["lambdas"] == fl.dense_count(result.tested.min(), result.tested.max(), 1.5)
    assert result.runs < dense["runs"] and result.run_steps < dense["run_steps"]
    assert result.runs == 2 * len(result.tested)  # tiny: 2 seeds per λ
    assert (tmp_path / "find_lambda.md").read_text().count("| known |") == 3
    assert "weak→intermediate" in (tmp_path / "find_lambda.csv").read_text()


def test_more_points_per_gap_take_fewer_rounds(tmp_path):
    _, one = search(tmp_path / "one", budget=1e6)
    _, two = search(tmp_path / "two", points=2, budget=1e6)
    assert len(two.rounds) < len(one.rounds)
    assert all(t.status == "known" for t in two.targets)


def test_boundaries_only_leaves_the_shortest_delay_to_the_lambda_they_bring(tmp_path):
    known, both = search(tmp_path / "both")
    _, only = search(tmp_path / "only", refine_delay=False)
    for name, truth in (("weak→intermediate", known.a), ("intermediate→strong", known.b)):
        found = target(only, name)
        assert found.status == "known" and found.interval[0] <= truth <= found.interval[1] and found.width <= 1.5
    assert only.runs < both.runs
    assert target(only, fl.SHORTEST).status in ("known", "not refined (--boundaries-only)")


def test_a_boundary_outside_the_span_is_found_by_extending_it(tmp_path):
    known, result = search(tmp_path, KnownRegimes(a=3e-4), extend=2)
    found = target(result, "weak→intermediate")
    assert found.status == "known" and found.interval[0] <= 3e-4 <= found.interval[1]
    assert result.tested.min() < SPAN[0]
    _, capped = search(tmp_path / "capped", KnownRegimes(a=3e-4), extend=0)
    assert target(capped, "weak→intermediate").status.startswith("not in range")


def test_every_slice_of_the_other_axes_gets_its_own_boundaries(tmp_path):
    known, result = search(tmp_path, overrides=["grid.learning_rate=[0.005, 0.02]"])
    for eta in (0.005, 0.02):
        found = target(result, "weak→intermediate", (("learning_rate", eta),))
        assert found.status == "known" and found.interval[0] <= known.a * 0.01 / eta <= found.interval[1]


def test_mixed_regimes_end_unresolved_instead_of_refining_forever(tmp_path):
    _, result = search(tmp_path, KnownRegimes(mixed=[(0.02, 0.12)]), budget=1e6)
    found = target(result, "weak→intermediate")
    assert found.status.startswith("unresolved") and not found.proposals
    assert found.interval[0] < 0.12 and found.interval[1] > 0.02  # the mixed band
    assert result.stopped == "every target known or unresolvable" and len(result.rounds) < 12


def test_a_weak_band_near_the_strong_edge_does_not_pull_the_weak_boundary(tmp_path):
    """Runs that fit but outgrow the budget just below b (weak again) are no weak side of weak→intermediate."""

    class WeakAgain(KnownRegimes):
        def regime(self, lam, eta, seed):
            return "weak" if 0.9 <= lam < self.b else super().regime(lam, eta, seed)

    known, result = search(tmp_path, WeakAgain(), budget=1e6)
    found = target(result, "weak→intermediate")
    assert found.status == "known" and found.interval[0] <= known.a <= found.interval[1] and found.width <= 1.5
    _, everywhere = search(tmp_path / "everywhere", WeakAgain(), budget=1e6, weak_below_delay=False)
    pulled = target(everywhere, "weak→intermediate")
    assert not (pulled.status == "known" and pulled.interval[0] <= known.a <= pulled.interval[1])


def test_stops_when_the_budget_is_spent(tmp_path):
    per_lambda = 2 * 300  # tiny: 2 seeds × 300 steps
    known, result = search(tmp_path, budget=7 * per_lambda)
    assert result.stopped.startswith("budget spent") and result.run_steps <= 7 * per_lambda
    assert len(result.tested) == 7
    with pytest.raises(ConfigError, match="smaller than the first round"):
        search(tmp_path / "small", budget=4 * per_lambda)


def test_resumes_by_reading_back_finished_rounds(tmp_path):
    known, first = search(tmp_path, budget=9 * 600)
    assert first.stopped.startswith("budget spent")
    trained_before = list(known.trained)
    again = KnownRegimes()
    _, second = search(tmp_path, again)  # default budget: continues where the budget stopped it
    assert again.trained and set(again.trained).isdisjoint(trained_before)
    assert [r.reused for r in second.rounds[: len(first.rounds)]] == [True] * len(first.rounds)
    _, fresh = search(tmp_path / "fresh")
    assert second.targets == fresh.targets and second.run_steps == fresh.run_steps
    rerun = KnownRegimes()
    search(tmp_path, rerun)
    assert rerun.trained == []


def test_a_killed_search_resumes_from_its_finished_rounds(tmp_path):
    class Killed(KnownRegimes):
        def train(self, config, folder):
            if len(self.trained) == 2:
                raise KeyboardInterrupt
            return super().train(config, folder)

    with pytest.raises(KeyboardInterrupt):
        search(tmp_path, Killed())
    assert len(list(tmp_path.glob("round-*/" + fl.ROUND_FILE))) == 2
    resumed = KnownRegimes()
    _, result = search(tmp_path, resumed)
    assert resumed.trained[0] == "round-03" and [r.reused for r in result.rounds[:2]] == [True, True]


def test_a_round_trained_with_other_settings_is_refused(tmp_path):
    search(tmp_path, budget=5 * 600)
    with pytest.raises(ConfigError, match="trained with other settings"):
        search(tmp_path, overrides=["train.steps=200"], budget=5 * 400)


@pytest.mark.parametrize(
    "preset,options,needle",
    [
        ("critical-norm", {}, "no range to search: give one with --span"),
        ("tiny", {"factor": 1.0}, "--factor must be > 1"),
        ("tiny", {"factor": 0.5}, "--factor must be > 1"),
        ("tiny", {"coarse": 2}, "--coarse must be ≥ 3"),
        ("tiny", {"span": (1.0, 0.1)}, "--span must be two λ"),
    ],
)
def test_bad_input_is_refused(tmp_path, preset, options, needle):
    with pytest.raises(ConfigError, match=needle):
        fl.find_lambda(preset, tmp_path, KnownRegimes().runner, fl.SearchOptions(**options), echo=lambda t: None)


def test_the_command_on_the_tiny_preset(tmp_path, capsys):
    """End to end: one coarse round trained through the sweep, stopped by the budget (the command in a process of
    its own); then read back and refused a bad option (in this process: the same `main`, without a second import
    of JAX)."""
    from nht_jax.cli import main

    out = tmp_path / "search"
    arguments = [
        "tool",
        "find-lambda",
        "tiny",
        "--set",
        "grid.seed=[0]",
        "--set",
        "train.steps=60",
        "--set",
        "train.log_every=20",
        "--set",
        "model.hidden=[16]",
        "--coarse",
        "3",
        "--budget",
        "200",
        "--out",
        str(out),
        "--quiet",
    ]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    first = subprocess.run(
        [sys.executable, "-m", "nht_jax.cli", *arguments], capture_output=True, text=True, timeout=600, env=env
    )
    assert first.returncode == 0, first.stderr
    assert "round 1 (trained): λ = 0.01, 0.1, 1" in first.stdout and "budget spent" in first.stdout
    assert (out / "round-01" / "summary.csv").exists() and (out / "find_lambda.csv").exists()
    assert "## Cost against the dense grid" in (out / "find_lambda.md").read_text()
    assert main(arguments) == 0
    second = capsys.readouterr()
    assert "round 1 (read back)" in second.out, second.err
    assert main([*arguments, "--factor", "1"]) == 2
    bad = capsys.readouterr().err
    assert "--factor must be > 1" in bad and "Traceback" not in bad
