"""The engine: how *a* run trains and how a grid of runs executes. It imports no domain.

loop      Trainer and the nested-scan loop (`assemble_trainer`)
step      the gradient step: gradients → optax update built from traced η, λ
optim     optimisers, their weight-decay conventions, γ_eff
grid      the grid as a dict of named axes (common axes here, domain axes declared by domains)
executor  the execution plan (lax.map / vmap / shard_map) and `GridRun`, the one grid orchestration
distributed  several processes (jax.distributed): joining, gathering to every process, process 0's decisions
metrics   shared metrics (norms, per-layer norms, divergence) and their vocabulary
noise     gradient-noise and sharpness estimators (recorded on request)
settings  OptimConfig, TrainConfig (change results), ExecutionConfig (does not)
"""
