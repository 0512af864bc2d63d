"""Wall time of `perfmodel predict` and `perfmodel plan` as a user runs them: a fresh interpreter each time.

Side by side in one run: the floor any such command pays (a fresh interpreter importing numpy), what
importing scipy.special as well costs (the straggler term's gamma CDF came from it before
perfmodel.gamma_cdf), and what scipy.stats and scipy.integrate would add (what the term imported before
it called scipy.special.gammainc). Prints the median of each over --repeats runs, then the commands'
medians as multiples of the floor.

Every command runs with bytecode caching on (PYTHONDONTWRITEBYTECODE removed from its environment), after
one warm-up round that is not counted: an installed package has its .pyc files, where
PYTHONDONTWRITEBYTECODE=1 in a shell (as on the project's build machines) makes an editable install
compile perfmodel's sources on every start.
Usage: python benchmarks/cli_start.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

FLOOR = "floor: import numpy"
COMMANDS = {
    FLOOR: [sys.executable, "-c", "import numpy"],
    "import numpy, scipy.special": [sys.executable, "-c", "import numpy, scipy.special"],
    "with scipy.stats, scipy.integrate": [sys.executable, "-c",
                                          "import numpy, scipy.special, scipy.stats, scipy.integrate"],
    "perfmodel predict (defaults)": [sys.executable, "-m", "perfmodel.cli", "predict"],
    "perfmodel predict --stragglers heterogeneous": [sys.executable, "-m", "perfmodel.cli", "predict",
                                                     "--stragglers", "heterogeneous"],
    "perfmodel plan resnet50 juwels-booster": [sys.executable, "-m", "perfmodel.cli", "plan", "--workload",
                                               "resnet50", "--cluster", "juwels-booster", "--epochs", "90",
                                               "--dataset-size", "1281167"],
}
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall_s(cmd: list[str]) -> float:
    """Seconds one run of ``cmd`` takes, start to exit."""
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    for cmd in COMMANDS.values():  # warm-up: writes the .pyc files an installed package ships with
        wall_s(cmd)
    times = {name: [] for name in COMMANDS}
    for _ in range(args.repeats):  # interleaved, so that a busy spell on the machine hits every command
        for name, cmd in COMMANDS.items():
            times[name].append(wall_s(cmd))
    med = {name: statistics.median(t) for name, t in times.items()}
    floor = med[FLOOR]
    for name, m in med.items():
        print(f"{name:42s} median {m:6.3f} s   {m / floor:4.2f}x the floor")


if __name__ == "__main__":
    main()
