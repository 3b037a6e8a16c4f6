"""The forecast of T_transition: pure numpy on a run's logged history (no training, no files, no JAX), used by the
sweep's live table, the monitor, the delay predictor and the analyses that score it (docs/guides/forecast.md).

    window        the log-linear window fit of V, Algorithm 1's extrapolation, the first contracting peak, the floor
    diagnosis     `diagnose`: where one run stands (fitted, the norm's trend, the head signal) and Algorithm 1's forecast
    v_post        V̂_post / V★ from the runs of the grid that have transitioned (the pilots)
    first_passage the first-passage law T − T_mem = log(V_mem / V★) / (κ·g): the forecast at T_fit
    kappa_model   κ(λ, η) = e^a·λ^b·η^c fitted on the calibration runs' κ, with a seed-bootstrap interval
    heldout       κ and V★ calibrated on some runs, the forecast made for others, scored on seeds it never saw

Its options are one type, `nht_jax.config.forecast.ForecastSettings` ([live] forecast in a configuration). The
decay-only contraction g of each run comes from the optimiser (`nht_jax.engine.optim.declared_contraction`) and is
passed in.
"""
