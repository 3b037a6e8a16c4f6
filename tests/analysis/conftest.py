"""Shared by the analysis tests: a results folder written from constructed metrics through the sweep's own writers."""

from nht_jax import experiment
from nht_jax.results import folder as results
from nht_jax.measure import stopping
from nht_jax.measure import summaries


def write_results_folder(out, steps, metrics, runs, config):
    """config.toml, trajectories.npz, summary.csv (by nht_jax.measure.summaries) and meta.json in `out`, as `nht run`
    writes them, from per-run `metrics` {name: (runs, logs)} at the logged `steps`; returns `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.toml").write_text(experiment.to_toml(config))
    results.write_trajectories(out, steps, metrics, runs, config)
    results.write_summary(out, summaries.summarize(steps, metrics, runs, config))
    results.write_meta(out, {"config_digest": stopping.results_digest(config)})
    return out
