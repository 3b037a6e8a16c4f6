"""The figures of a results folder (phase diagram, trajectories, the domain's extra figures) and their style."""
