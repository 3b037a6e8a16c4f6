"""The bottom layer: errors, generic configuration coercion, atomic files, shipped presets. Imports nothing
else of nht_jax."""
