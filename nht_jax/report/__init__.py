"""The report layer: per-run summaries and regimes (analysis), and the figures of a results directory."""
