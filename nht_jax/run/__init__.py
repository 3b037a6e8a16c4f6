"""The run layer: sweeps into results directories (sweep), the directories themselves (results), benchmarks,
and `nht run` on several processes (launch)."""
