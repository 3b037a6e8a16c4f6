"""The results folder: its format and reader (folder), the lock, export to xarray / pandas / TensorBoard / W&B, and
other codebases' logs imported as a folder. Checkpoints are part of the folder format (`folder.Checkpoint`)."""
