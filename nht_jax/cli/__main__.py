"""`python -m nht_jax.cli …`: the `nht` command (what `nht run --processes N` starts N times)."""

import sys

from nht_jax.cli import main

sys.exit(main())
