"""The engine: how *a* run trains and how a grid of runs executes. It imports no domain.

loop      Trainer and the nested-scan loop (`assemble_trainer`)
step      the gradient step: gradients → optax update built from traced η, λ → constraints on θ
optim     optimisers as optax chains of primitives (a registry), their weight-decay conventions, γ_eff
slots     the two slots of the step (gradient transformations before, parameter constraints after), a registry
slot_entry   the record of one slot entry and how it reads an option a grid axis may give per run
interventions  the follow-up papers' interventions as slot entries (norm clamp, row clip, norm injection,
          Grokfast, ⊥Grad), each strength an optional grid axis with an identity value
contraction  the contraction of ‖θ‖² each optimiser and slot entry declares (γ_eff or "unknown" with a reason)
grid      the grid as a dict of named axes (common axes here, domain axes declared by domains)
executor  the execution plan (lax.map / vmap / shard_map) and `GridRun`, the one grid orchestration
distributed  several processes (jax.distributed): joining, gathering to every process, process 0's decisions
metrics   shared metrics (norms, per-layer norms, divergence) and their vocabulary
noise     gradient-noise and sharpness estimators (recorded on request)
settings  OptimConfig, TrainConfig (change results), ExecutionConfig (does not)
"""
