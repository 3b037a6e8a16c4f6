"""The sizes of `nht reproduce`'s parts and of `nht figs`' sources are the presets' own scales, and resolve to
exactly the configurations the tables they replaced (reproduce.SIZES, paper_figures.SOURCES' quick / reduced
overrides, the starting code's) gave: the same Config as those `--set` lines, the same results digest (so
finished results folders are reused), the same `nht analyze` options."""

import pytest

from nht_jax import experiment
from nht_jax.analysis.analyze import options_from
from nht_jax.papers import paper_figures as pf
from nht_jax.papers import reproduce as repro
from nht_jax.measure.stopping import results_digest

# (command, its scale, part or figure source): (results_digest, the `--set` lines of the table it replaced),
# recorded with the starting code (its SIZES and SOURCES). A default changed on purpose changes digests: then
# record the new ones (and say so: finished results folders of the old ones are no longer reused).
RECORDED = {
    # five seeds on purpose on 2026-12-03 (issue 30: P4–P6 rest on ≥ 5 seeds); before: e71ec6602c2664c9, as shipped
    # 2026-12-06 on purpose (issue 44: logs every 2 steps to step 600 for P4); before: 1b86bbba36d1bbea
    ("reproduce", "full", "default"): (
        "d206c3e070a33d18",
        ("grid.seed=[0, 1, 2, 3, 4]", "train.log_schedule=[[600, 2], [5000, 50]]"),
    ),
    ("reproduce", "full", "toy-linear"): ("504bdb64d0c19ef8", ()),
    # five seeds on purpose on 2026-12-03 (issue 30); before: 89446d6e20a6d7ee, grid.seed=[0]
    # 2026-12-06 on purpose (issue 45: task.train_size in the digest, the aligned_acc metric recorded); before: 45ca5fee5df7f21f
    ("reproduce", "full", "border-digits"): ("3a17620b323cd57c", ("grid.seed=[0, 1, 2, 3, 4]",)),
    ("reproduce", "full", "companion-exact-cpu"): (
        "96fa0ec9b96cece8",
        (
            "grid.weight_decay=[0.5, 1.0]",
            "train.steps=4000",
            "stop.rule=transition",
            "stop.margin_steps=200",
        ),
    ),
    ("reproduce", "full", "sparse-parity"): ("78c07a50e81fdd54", ()),
    # five seeds on purpose on 2026-12-06 (issue 44: eta.nu and digits.log_ratio rest on ≥ 5 seeds), before any run at
    # this scale; before: 586fc1a400bb2142 and 0dd6e056874d1e7f, grid.seed=[0]
    ("reproduce", "full", "phase-lambda-eta"): ("4e24b1bd9d8c7d4e", ("grid.seed=[0, 1, 2, 3, 4]",)),
    ("reproduce", "full", "digits-grokking"): ("70e3ba46747de083", ("grid.seed=[0, 1, 2, 3, 4]",)),
    # 2026-12-06 on purpose (issue 44: logs every 2 steps to step 600 for P4); before: a1e52ce313b1a8ca
    ("reproduce", "quick", "default"): (
        "50ed27b1421cb9a4",
        (
            "train.steps=3000",
            "train.log_schedule=[[600, 2], [3000, 50]]",
            "grid.seed=[0]",
            "grid.weight_decay=[0.001, 0.01, 0.1, 0.3, 1.0, 3.0, 10.0]",
        ),
    ),
    ("reproduce", "quick", "toy-linear"): ("2a283fa9c57fd5db", ("grid.learning_rate=[0.03, 0.1, 0.3]",)),
    # 2026-12-06 on purpose (issue 45: task.train_size in the digest, the aligned_acc metric recorded); before: 1a20e76e31192e3e
    ("reproduce", "quick", "border-digits"): (
        "67a6a3ecf9cff541",
        (
            "grid.weight_decay=[0.01, 0.16, 2.5]",
            "grid.seed=[0]",
            "grid.rho=[0.5, 0.9, 0.98, 1.0]",
            "task.eval_train_size=128",
        ),
    ),
    ("reproduce", "quick", "companion-exact-cpu"): (
        "6007d46bec02014f",
        (
            "grid.weight_decay=[1.0]",
            "grid.seed=[0]",
            "train.steps=2400",
            "stop.rule=transition",
            "stop.margin_steps=200",
        ),
    ),
    ("reproduce", "quick", "sparse-parity"): ("1fe8abeea1944dbe", ("grid.seed=[0]",)),
    ("reproduce", "quick", "phase-lambda-eta"): (
        "09d319cda2aac78a",
        ("grid.seed=[0]", "grid.learning_rate=[2.5e-3, 1e-2]"),
    ),
    ("reproduce", "quick", "digits-grokking"): (
        "de86f9035961b79a",
        ("grid.seed=[0]", "grid.init_scale=[1.0, 10.0]", "train.steps=3000"),
    ),
    ("reproduce", "full", "critical-norm"): ("5b5fe8e01d898aec", ()),
    ("reproduce", "quick", "critical-norm"): ("4502a7c4c74371ad", ("train.steps=3000", "grid.seed=[2]")),
    # λ 0.01 → 0.1 on purpose on 2026-12-03 (issue 30: the MSE arm shares λ with critical-norm-ce); before:
    # 8470bcedf190e1dc and dd4ab2a65e6660e9
    ("reproduce", "full", "critical-norm-mse"): ("ae3b79049b43b95d", ()),
    ("reproduce", "quick", "critical-norm-mse"): ("10c7b94fce1ee7c0", ("train.steps=3000", "grid.seed=[2]")),
    ("reproduce", "full", "critical-norm-ce"): ("bb0045a03925f4de", ()),  # recorded when the part was added
    ("reproduce", "quick", "critical-norm-ce"): ("f0675a7de47e5666", ("train.steps=3000", "grid.seed=[2]")),
    # recorded when the parts were added (2026-12-03, docs/papers/follow-up-data.md)
    ("reproduce", "full", "critical-norm-p59"): ("be44fa1f0af5930b", ()),
    ("reproduce", "quick", "critical-norm-p59"): ("4a571c64ce45c742", ("train.steps=2000",)),
    ("reproduce", "full", "batch-noise"): ("16d95ad9695b53ce", ()),
    ("reproduce", "quick", "batch-noise"): ("2308fa0099a97e54", ("train.log_every=50",)),
    ("figs", "plain", "default"): ("e71ec6602c2664c9", ()),  # the grid changed on purpose on 2026-12-02
    # 2026-12-06 on purpose (issue 44: logs every 2 steps to step 600 for P4); before: a1e52ce313b1a8ca
    ("figs", "quick", "default"): (
        "50ed27b1421cb9a4",
        (
            "train.steps=3000",
            "train.log_schedule=[[600, 2], [3000, 50]]",
            "grid.seed=[0]",
            "grid.weight_decay=[0.001, 0.01, 0.1, 0.3, 1.0, 3.0, 10.0]",
        ),
    ),
    # 2026-12-06 on purpose (issue 45: task.train_size in the digest, the aligned_acc metric recorded); before: 16baeb78acd6bbaa
    ("figs", "plain", "border-digits"): ("970e3ee941220ba2", ()),
    # 2026-12-06 on purpose (issue 45: task.train_size in the digest, the aligned_acc metric recorded); before: 1a20e76e31192e3e
    ("figs", "quick", "border-digits"): (
        "67a6a3ecf9cff541",
        (
            "grid.weight_decay=[0.01, 0.16, 2.5]",
            "grid.seed=[0]",
            "grid.rho=[0.5, 0.9, 0.98, 1.0]",
            "task.eval_train_size=128",
        ),
    ),
    # 2026-12-06 on purpose (issue 45: task.train_size in the digest, the aligned_acc metric recorded); before: ea52b436a19a38ac
    ("figs", "plain", "celeba"): (
        "f184ddbb172155bb",
        (
            "train.steps=3000",
            "train.log_every=150",
            "grid.seed=[0]",
            "task.eval_train_size=1024",
            "task.eval_test_size=4096",
        ),
    ),
    # 2026-12-06 on purpose (issue 45: task.train_size in the digest, the aligned_acc metric recorded); before: 3873308e8dc2c03c
    ("figs", "quick", "celeba"): (
        "faeed38dbb399140",
        (
            "train.steps=600",
            "train.log_every=60",
            "grid.seed=[0]",
            "task.eval_train_size=512",
            "task.eval_test_size=2048",
        ),
    ),
    ("figs", "plain", "toy-linear"): ("504bdb64d0c19ef8", ()),
    ("figs", "quick", "toy-linear"): ("504bdb64d0c19ef8", ()),
}
RECORDED_ANALYZE = {
    key: ("fits.n_bootstrap=200",)
    for key in RECORDED
    if key[:2] == ("reproduce", "quick")
    and key[2]
    not in (
        "companion-exact-cpu",
        "critical-norm",
        "critical-norm-mse",
        "critical-norm-ce",
        "critical-norm-p59",
        "batch-noise",
    )
}
"""`nht analyze` options of reproduce's parts in the starting code's table (every other part: none)."""


def resolved(command: str, scale: str, key: str, out):
    """(Config, analysis options) the new code trains for that entry, from the presets' scales."""
    if command == "reproduce":
        plan = repro.plan(out, scale, repro.select([key]))[0]
        return plan.config, plan.analysis
    source = pf.SOURCES[key]
    return experiment.load(source.preset, scale=pf.scale_of(source, scale == "quick")), None


def test_every_part_and_source_is_recorded():
    """Parts that read other parts (their digest names the output folder) are checked in test_intervention_parts."""
    parts = {
        ("reproduce", scale, key)
        for scale in repro.PRESET_SCALE
        for key, p in repro.PARTS.items()
        if p.preset and not p.sources
    }
    sources = {("figs", scale, key) for scale in ("plain", "quick") for key in pf.SOURCES}
    assert set(RECORDED) == parts | sources


@pytest.mark.parametrize("entry", sorted(RECORDED), ids="-".join)
def test_sizes_resolve_to_the_configurations_they_replaced(entry, tmp_path):
    command, scale, key = entry
    digest, overrides = RECORDED[entry]
    config, analysis = resolved(command, scale, key, tmp_path)
    preset = repro.PARTS[key].preset if command == "reproduce" else pf.SOURCES[key].preset
    assert config == experiment.load(preset, list(overrides))
    assert results_digest(config) == digest
    if command == "reproduce":
        assert analysis == options_from(RECORDED_ANALYZE.get(entry, ()))
