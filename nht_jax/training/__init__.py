"""The training of a sweep: a grid trained into a results folder, bucket by bucket, run slice by run slice, chunk by chunk, with
hooks around the compiled program (checkpoints, the stop rule, snapshots, the live table, progress, signals); forks
from a stored state; `nht run` on several processes (launch); the live table read from elsewhere (watch).
It imports nothing above it and draws nothing."""
