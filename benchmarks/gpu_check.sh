#!/usr/bin/env bash
# GPU smoke test and benchmark, for a lent accelerator machine whose image already has
# jax (CUDA), flax, optax, chex, matplotlib and tqdm. Runs from the repository root with
# PYTHONPATH instead of an install (the image's package versions are used as they are).
# Extra pure-Python dependencies may be carried in .gpu/ (e.g. tomli_w).
set -uo pipefail
export PYTHONPATH="$PWD:$PWD/.gpu" PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/gpu_out}"; mkdir -p "$OUT"
python3 -c "import jax, flax, optax; print('jax', jax.__version__, 'flax', flax.__version__, 'optax', optax.__version__, jax.devices())"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -m pytest -o addopts="--import-mode=importlib" -q -p no:cacheprovider tests/domains/test_tokens.py tests/engine tests/training/test_cli.py -k "not bad_input and not presets and not traceback" 2>&1 | tail -15
( time python3 -m nht_jax.cli run --out /tmp/default_gpu --quiet ) 2>&1 | tail -8
cp /tmp/default_gpu/summary.csv /tmp/default_gpu/meta.json /tmp/default_gpu/phase_diagram.png "$OUT"/ 2>/dev/null
python3 benchmarks/bench_grid.py --runs 16 --steps 600 --out "$OUT/bench_gpu16.md"
python3 benchmarks/bench_grid.py --runs 64 --steps 600 --out "$OUT/bench_gpu64.md"
