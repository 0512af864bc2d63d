"""`dsgd-reproduce <paper> [options]` (or `python -m reproduce <paper> ...`): run one paper's script.

Every option after the paper's name goes to that script (`dsgd-reproduce wen2017 --help`).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from perfmodel.cli_guard import OneLineExitParser
from perfmodel.fileio import package_version
from reproduce import SCRIPTS


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    p = OneLineExitParser(
        prog="dsgd-reproduce", description=__doc__.splitlines()[0],
        epilog="papers: " + "; ".join(f"{k}: {v}" for k, v in SCRIPTS.items()))
    p.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    p.add_argument("paper", choices=list(SCRIPTS), help="which script to run")
    p.add_argument("options", nargs=argparse.REMAINDER, help="the script's own options (--scale, --out, ...)")
    if not argv:
        print("dsgd-reproduce: error: name a paper: " + ", ".join(SCRIPTS), file=sys.stderr)
        return 2
    if argv[0] in SCRIPTS:  # the rest goes to the script untouched, --help included
        paper, rest = argv[0], argv[1:]
    else:
        args = p.parse_args(argv)  # exits 2 with one line on an unknown paper; --help, --version
        paper, rest = args.paper, args.options
    sys.argv[0] = f"dsgd-reproduce {paper}"
    return int(importlib.import_module(f"reproduce.{paper}").main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
