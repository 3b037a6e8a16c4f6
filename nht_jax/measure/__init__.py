"""Measurement on a run's logged history (NumPy, no training, no files): summaries and regimes (`summaries`), the
stop rules (`stopping`) and the forecast of T_transition (`forecast`). Below both the sweep and the analyses, so
neither needs the other."""
