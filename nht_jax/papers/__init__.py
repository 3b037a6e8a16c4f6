"""The papers' experiments: their figures, claims, our measures of them, the scorecard and `nht paper reproduce`.
With the command line, the only package that trains (it calls `nht_jax.training.sweep.run_sweep`)."""
