"""Theory module: the paper's bounds (docs/science.md §2) as functions, exact toy models, checks on runs.

    bounds        the Lyapunov upper bound, the lower bound, γ_eff conventions (pure NumPy)
    toy_models    exactly solvable models as engine Trainers, grids run by nht_jax.engine.executor
    (the gradient-noise and curvature estimators the engine records when asked are nht_jax.engine.noise)
    recorded      `nht paper bound DIR`: the bounds checked along recorded trajectories
    realised_rate the realised contraction rate: fit V_t = A·r^t + C after the norm peak
    verify        `nht paper verify-bounds`: every claim on the toy models, [OK] / [!!]

The statements and our conventions are written out in the manual's theory pages (docs/theory/).
This package imports only NumPy at import time; submodules import JAX where they need it.
"""
