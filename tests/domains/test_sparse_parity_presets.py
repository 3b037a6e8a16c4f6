"""The two sparse-parity presets are one controlled comparison (docs/findings/sparse-parity.md): the control
(`sparse-parity`) is the grokking setup (`sparse-parity-groks`) with fewer training samples and a longer budget,
nothing else."""

from nht_jax import experiment
from nht_jax.domains.tokens import num_train

CONTROL, GROKS = "sparse-parity", "sparse-parity-groks"
MAY_DIFFER = {"train": {"steps", "log_every"}, "grid": {"train_fraction"}}


def training_samples(config) -> list[int]:
    return [int(num_train(config.task.parity_samples, f)) for f in config.grid["train_fraction"]]


def test_the_control_is_the_grokking_setup_with_fewer_samples_and_a_longer_budget():
    control, groks = experiment.load(CONTROL), experiment.load(GROKS)
    a, b = experiment.to_dict(control), experiment.to_dict(groks)
    for section in ("task", "model", "optim", "analysis", "train", "grid"):
        allowed = MAY_DIFFER.get(section, set())
        differing = {k for k in set(a[section]) | set(b[section]) if a[section].get(k) != b[section].get(k)}
        assert differing <= allowed, f"[{section}] {sorted(differing - allowed)} differ between {CONTROL} and {GROKS}"
    assert max(training_samples(control)) < min(training_samples(groks))
    assert control.train.steps > groks.train.steps
