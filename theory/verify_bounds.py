"""Check every claim of theory/*.md on the exact toy models; prints [OK] / [!!] with the tolerance used.

    .venv/bin/python theory/verify_bounds.py [--quick]      (same as `nht verify-bounds`)

Exit status 1 when any claim fails. Float64 throughout; about 10 s on 2 CPU cores.
"""

import argparse
import sys

from nht_jax.theory.verify import main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer Monte-Carlo seeds for the noisy model")
    sys.exit(main(quick=parser.parse_args().quick))
