"""The forecast of T_transition, in one home: pure numpy on a run's logged history (no training, no files, no JAX),
below the sweep, the live table, the monitor, the delay predictor and the analyses that score it
(docs/guides/forecast.md, docs/guides/live.md, docs/guides/monitor.md).

    options       `ForecastSettings`, the one options type (window, interval, pilots, V̂_post rule, κ), declared once
    window        the log-linear window fit of V, Algorithm 1's extrapolation, the first contracting peak, the floor
    diagnosis     `diagnose`: where one run stands (fitted, the norm's trend, the head signal) and Algorithm 1's forecast
    v_post        V̂_post / V★ from the runs of the grid that have transitioned (the pilots)
    first_passage the first-passage law T − T_mem = log(V_mem / V★) / (κ·g): the forecast at T_fit
    kappa_model   κ(λ, η) = e^a·λ^b·η^c fitted on the calibration runs' κ, with a seed-bootstrap interval
    heldout       κ and V★ calibrated on some runs, the forecast made for others, scored on seeds it never saw

Who uses it: `nht_jax.diagnose` (any training loop), the live table between chunks (`nht_jax.training.live`), the
delay predictor (`nht_jax.analysis.predictor`), the live forecast's replay (`nht_jax.analysis.forecast`) and the
held-out forecast at T_fit (`nht_jax.analysis.tfit_forecast`). The decay-only contraction g of each run comes from
the optimiser (`nht_jax.engine.optim.declared_contraction`) and is passed in: this package imports nothing but
`nht_jax.base` and numpy (scipy inside the functions that need it).
"""

from nht_jax.forecast.options import ForecastSettings

__all__ = ["ForecastSettings"]
