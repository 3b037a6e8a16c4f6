"""The run layer: sweeps into results folders (sweep), the folders themselves (results), per-run summaries and
regimes (summaries), the folder lock, stopping rules, benchmarks, and `nht run` on several processes (launch).
It imports nothing above it and draws nothing."""
