"""`nht analyze`: the analyses of a finished results folder (the six predictions, delay-law fits and boundaries,
the separation score, layer order, the delay predictor, structure against accuracy, the emergence conjecture),
each reading only results. Each is one module ending with its record (`record.Analysis`) and one line in
`registry.ANALYSES`; `analyze` runs them in that order; the bootstrapping ones share `bootstrap.BootstrapOptions`
and the reports that are tables share `tables.Tabular`."""
