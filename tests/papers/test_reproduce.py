"""`nht reproduce` on a real, tiny sweep: the toy-linear part trained through the CLI at a test-only size, then
judged again (reused, not retrained) with a planted claim that its measured number cannot meet."""

import csv
import json

import pytest

from nht_jax import cli, experiment
from nht_jax.analysis.analyze import options_from
from nht_jax.base import presets
from nht_jax.base.errors import ConfigError
from nht_jax.papers import claims as claims_lib
from nht_jax.papers import measures
from nht_jax.papers import reproduce as repro
from nht_jax.papers.scorecard import AGREES, DISAGREES, UNJUDGED

from .conftest import copy_presets

# η = 0.3: λ 2.15e-3, 1e-2, 2.15e-2 transition at ⌈log 100 / (−2 log(1 − 2ηλ))⌉ ≤ 2,000 steps, and 0.05
# never fits;
# η = 0.1 and 0.2 add weak runs, and every λ ≤ 0.0215 has three η for the 1/η fits.
TINY = """[scale.quick]
train.steps = 2000
grid.weight_decay = [2.15e-3, 1e-2, 2.15e-2, 0.05]
grid.learning_rate = [0.1, 0.2, 0.3]
analyze.fits.n_bootstrap = 20
"""


@pytest.fixture(scope="module")
def tiny_presets(tmp_path_factory):
    """The shipped presets with toy-linear's [scale.quick] replaced by the test-only TINY size."""
    return copy_presets(tmp_path_factory.mktemp("presets"), {"toy-linear": TINY})


def read_scorecard(out):
    with open(out / "scorecard.csv", newline="") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory, tiny_presets):
    """`nht reproduce --quick --only toy-linear`, toy-linear's quick scale read from the presets' copy (TINY)."""
    out = tmp_path_factory.mktemp("reproduce")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(presets, "presets_dir", lambda: tiny_presets)
        code = cli.main(["paper", "reproduce", "--quick", "--only", "toy-linear", "--out", str(out)])
    return out, code


def test_every_claim_has_a_verdict_and_the_exact_model_agrees(reproduced):
    out, code = reproduced
    assert code == 0
    rows = read_scorecard(out)
    assert list(rows) == [c.id for c in claims_lib.CLAIMS]
    assert {r["verdict"] for r in rows.values()} <= {AGREES, DISAGREES, UNJUDGED}
    # On the exactly solvable model ν = 1 and three regimes hold; the number is read from nht analyze's CSVs.
    assert rows["toy.nu"]["verdict"] == AGREES and "ν = 0.9" in rows["toy.nu"]["ours"]
    assert rows["toy.P2"]["verdict"] == AGREES and rows["toy.eta"]["verdict"] == AGREES
    # Parts that did not run and claims that need data or an accelerator are unjudged, with the reason.
    assert rows["cifar.S"]["verdict"] == UNJUDGED and "border-digits not run" in rows["cifar.S"]["note"]
    assert rows["celeba"]["verdict"] == UNJUDGED and "nht run celeba" in rows["celeba"]["note"]
    text = (out / "reproduce.md").read_text()
    assert "## Disagreements with the papers" in text and "## Not checked here" in text
    assert "`nht run companion-exact`" in text
    figures = [line for line in text.splitlines() if line.startswith("![")]
    assert "![toy-linear: phase_diagram](toy-linear-quick/phase_diagram.png)" in figures
    for line in figures:
        assert (out / line.split("](")[1].rstrip(")")).exists(), line


def test_a_rerun_reuses_the_part_and_a_planted_disagreement_shows(reproduced, tiny_presets, monkeypatch):
    out, _ = reproduced
    monkeypatch.setattr(presets, "presets_dir", lambda: tiny_presets)
    folder = out / "toy-linear-quick"
    made = json.loads((folder / repro.PART_RECORD).read_text())
    assert made["scale"] == "quick" and made["overrides"][0] == "train.steps=2000"
    trained = (folder / "meta.json").stat().st_mtime
    planted = (
        claims_lib.Claim(
            "planted.nu",
            "test",
            "a tolerance ν cannot meet",
            "ν = 5",
            ("toy-linear",),
            measures.power_law_exponents(),
            claims_lib.within(4.5, 5.5),
        ),
        claims_lib.Claim(
            "planted.P3",
            "test",
            "P3 has no accuracy to judge here",
            "✓",
            ("toy-linear",),
            measures.prediction("P3"),
            claims_lib.verdict_is("✓"),
        ),
    )
    rows, outcomes = repro.reproduce(
        out, quick=True, only=["toy-linear"], claims=claims_lib.CLAIMS + planted, progress=False
    )
    assert [o.status for o in outcomes] == ["reused"]
    assert (folder / "meta.json").stat().st_mtime == trained
    assert json.loads((folder / repro.PART_RECORD).read_text()) == made
    card = read_scorecard(out)
    assert rows[-2].verdict == DISAGREES and card["planted.nu"]["verdict"] == DISAGREES
    assert card["planted.P3"]["verdict"] == UNJUDGED and card["planted.P3"]["note"].startswith("n.a.")
    disagreements = (out / "reproduce.md").read_text().split("## Disagreements with the papers")[1].split("\n## ")[0]
    assert "`planted.nu`" in disagreements and "`toy.nu`" not in disagreements
    # P3 and P4 are n.a. on the toy domain (no accuracy, no head): a count they could still reach is not judged.
    with open(folder / "predictions.csv", newline="") as f:
        verdicts = [row["verdict"] for row in csv.DictReader(f)]
    held, undecided = verdicts.count("✓"), verdicts.count("n.a.")
    assert undecided == 2
    with pytest.raises(measures.NotMeasured, match="could still be"):
        measures.predictions_held(held + undecided)(folder)
    assert measures.predictions_held(held + undecided + 1)(folder).value == held
    # A missing analysis is redone from the finished sweep, which is not trained again: its record keeps the
    # training's time and dates the analysis beside it.
    (folder / "predictions.csv").unlink()
    _, outcomes = repro.reproduce(out, quick=True, only=["toy-linear"], progress=False)
    assert [o.status for o in outcomes] == ["re-analysed"] and (folder / "predictions.csv").exists()
    assert (folder / "meta.json").stat().st_mtime == trained
    again = json.loads((folder / repro.PART_RECORD).read_text())
    assert {k: again[k] for k in made} == made and again["analysed_s"] > 0 and outcomes[0].made_s == made["made_s"]


def test_results_of_another_configuration_stop_before_training(tmp_path, tiny_results, capsys):
    """The report fixture's tiny sweep where the default part would go: refused, naming the folder."""
    import shutil

    target = repro.folder_of(tmp_path, "default", "quick")
    shutil.copytree(tiny_results.path, target)
    before = sorted(p.name for p in target.iterdir())
    assert cli.main(["paper", "reproduce", "--quick", "--only", "default", "--out", str(tmp_path)]) == 2
    assert "holds results of another configuration" in capsys.readouterr().err
    assert sorted(p.name for p in target.iterdir()) == before
    assert not (tmp_path / "reproduce.md").exists()


def test_bad_parts_and_sizes_fail_before_anything_is_written(tmp_path, monkeypatch, capsys):
    out = tmp_path / "never"
    assert cli.main(["paper", "reproduce", "--only", "toy-linaer", "--out", str(out)]) == 2
    assert "unknown part(s) toy-linaer" in capsys.readouterr().err and not out.exists()
    for text, needle in (
        (
            "[scale.quick]\ntrain.stepz = 10\n",
            "part toy-linear: toy-linear at scale 'quick' \\(train.stepz=10\\): unknown key 'train.stepz'",
        ),
        (
            "[scale.quick]\nanalyze.fits.n_bootstrapp = 10\n",
            "part toy-linear: the analyze options of \\[scale.quick\\] .*n_bootstrapp",
        ),
    ):
        monkeypatch.setattr(
            presets, "presets_dir", lambda text=text: copy_presets(tmp_path / "presets", {"toy-linear": text})
        )
        with pytest.raises(ConfigError, match=needle):
            repro.reproduce(out, quick=True, only=["toy-linear"], progress=False)
        assert not out.exists()


def test_the_claims_table_is_well_formed_and_every_part_has_its_sizes(tmp_path):
    claims_lib.check_table(claims_lib.CLAIMS, repro.PARTS)
    sweeps = [p for p in repro.PARTS.values() if p.preset]
    assert all(presets.QUICK in experiment.scales(p.preset) for p in sweeps)  # --quick reduces every part
    for scale, preset_scale in repro.PRESET_SCALE.items():  # every part loads at its scale (nothing trains)
        plans = repro.plan(tmp_path, scale, repro.select(None))
        assert [p.part.key for p in plans] == list(repro.PARTS)
        for p in [p for p in plans if p.part.preset]:
            expected = preset_scale if preset_scale in experiment.scales(p.part.preset) else None
            loaded = repro.redirected(p.part, experiment.load(p.part.preset, scale=expected), tmp_path, scale)[0]
            assert p.scale == expected and p.config == loaded, p.part.key
    companion = repro.plan(tmp_path, "full", repro.select(["companion-exact-cpu"]))[0].config
    assert tuple(companion.grid["weight_decay"]) == claims_lib.COMPANION_CPU_LAMBDAS
    broken = claims_lib.CLAIMS + (claims_lib.Claim("celeba", "x", "y", "z", elsewhere="cmd"),)
    with pytest.raises(Exception, match="used twice: celeba"):
        claims_lib.check_table(broken, repro.PARTS)


def test_reproduce_reads_each_parts_size_from_its_preset(tmp_path, monkeypatch):
    """Edit a preset's [scale.reproduce] and [scale.quick]: the plan trains and analyses exactly that; a preset
    without the scale runs as shipped."""
    sizes = {
        "border-digits": "[scale.reproduce]\ngrid.seed = [7]\n[scale.quick]\ntrain.steps = 40\n"
        "analyze.fits.n_bootstrap = 17\n"
    }
    monkeypatch.setattr(presets, "presets_dir", lambda: copy_presets(tmp_path / "presets", sizes))
    full = repro.plan(tmp_path, "full", repro.select(["border-digits", "sparse-parity"]))
    assert [(p.part.key, p.scale, p.overrides) for p in full] == [
        ("border-digits", "reproduce", ("grid.seed=[7]",)),
        ("sparse-parity", None, ()),
    ]
    assert full[1].config == experiment.load("sparse-parity") and full[0].config.grid["seed"] == (7,)
    assert full[0].analysis == options_from(())  # [scale.reproduce] has no analyze options: the defaults
    quick = repro.plan(tmp_path, "quick", repro.select(["border-digits"]))[0]
    assert quick.config.train.steps == 40 and quick.config.grid["seed"] == (0, 1)
    assert quick.analysis.fits.n_bootstrap == 17 and quick.overrides == ("train.steps=40",)
    assert repro.scale_text(quick) == "quick: `train.steps=40`"
