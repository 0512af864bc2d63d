"""``python -m trainers``: the ``trainers`` command (trainers.run)."""

import sys

from trainers.run import main

sys.exit(main())
