"""The configuration's sections, one floor at the bottom of the package (above `nht_jax.base` only): each a frozen,
typed dataclass checked by its own `validate_*` when a configuration is built (`nht_jax.experiment`).

    sections   [optim], [train], [execution], [live], [stop], [analysis], [fork] and their checks
    forecast   `ForecastSettings`, the forecast's options ([live] forecast, [forecast_tfit] of the analyses)
    schedule   the logging schedule ([train] log_every / log_schedule) as the steps it logs
    tables     a section as config.toml and the digest see it; the old spellings read into their new places
"""
