"""Pure measurement on a run's logged history (NumPy, no training, no files): summaries and regimes, the window fit
and its extrapolation (diagnosis), V̂_post rules, stop rules and the results digest. Below both the sweep and the
analyses, so neither needs the other."""
