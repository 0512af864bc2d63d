"""`python -m perfmodel ...`: the `perfmodel` command, for an environment where the package is on
PYTHONPATH but not installed (a lent GPU machine running benchmarks/gpu_checklist.sh)."""

import sys

from perfmodel.cli import main

sys.exit(main())
