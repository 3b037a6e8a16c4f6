"""The grid sharded over two (forced) host devices equals the unsharded grid."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def test_sharded_grid_matches_single_device():
    script = textwrap.dedent("""
        import jax, numpy as np, sys
        sys.path.insert(0, TESTS)
        from conftest import tiny_config
        from nht_jax.executor import plan, run_grid
        from nht_jax.grid import expand
        from nht_jax.train import make_trainer
        assert jax.local_device_count() == 2
        out = {}
        for shard in ("on", "off"):
            config = tiny_config(shard=shard)
            config = config.__class__(**{**config.__dict__, "grid": config.grid.__class__(
                weight_decay=(0.01, 0.1, 1.0), learning_rate=(1e-2,), seed=(0,), train_fraction=(0.5,))})
            assert plan(config.train, 3).devices == (2 if shard == "on" else 1)
            out[shard] = run_grid(make_trainer(config), expand(config.grid), config.train)["norm_sq"]
        np.testing.assert_allclose(out["on"], out["off"], rtol=1e-5)
        print("sharded OK", out["on"].shape)
    """).replace("TESTS", repr(str(Path(__file__).parent)))
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "sharded OK (3, 5)" in result.stdout
