"""`nht analyze`: the analyses of a finished results folder (delay-law fits and boundaries, the six predictions,
the separation score, layer order, the delay predictor, the emergence conjecture), each reading only results."""
