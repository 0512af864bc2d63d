"""Every paper's headline claims decided on its results tables: ``python -m reproduce.headlines``.

Reads results/<paper>/*.csv (it starts no run: each claim names the command that remakes its rows),
decides each claim on its readings (reproduce.verdicts: a 95% Student-t interval over seeds against the
claim's acceptance range), writes each verdict into the ``verdict`` column of the rows it read, and
prints one Markdown table (or CSV with --format csv): per claim, the published figure, what one seed
contributes, our mean and interval, the acceptance range, the verdict, the scale and the command.
--no-write prints without touching the tables. Bad input is one line and exit status 2.
"""

from __future__ import annotations

import csv
import io
import math
import sys
from pathlib import Path
from typing import Callable

from perfmodel.cli_guard import OneLineExitParser
from reproduce import barkai2020, coquelin2021, hermans2018, wen2017, zhang2016
from reproduce.common import ReproduceError, default_results_dir
from reproduce.verdicts import Verdict, write_verdicts

PAPERS: dict[str, Callable[[Path], list[Verdict]]] = {
    "zhang2016": zhang2016.headlines, "wen2017": wen2017.headlines, "barkai2020": barkai2020.headlines,
    "hermans2018": hermans2018.headlines, "coquelin2021": coquelin2021.headlines,
}
COLUMNS = ("paper", "claim", "published", "reading", "ours (mean [95% interval])", "accepted", "verdict", "scale",
           "command")


def _num(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.2f}"


def row_of(v: Verdict) -> dict[str, str]:
    """One claim as table cells."""
    iv, c = v.interval, v.claim
    ours = f"{_num(iv.mean)} [{_num(iv.lo)}, {_num(iv.hi)}], {iv.k} {c.over}" if iv.k > 1 else \
        f"{_num(iv.mean)}, one reading: no interval"
    accepted = f"[{'-inf' if c.lo is None else _num(c.lo)}, {'inf' if c.hi is None else _num(c.hi)}]: {c.acceptance}"
    return dict(zip(COLUMNS, (c.paper, c.claim, c.published, c.reading, ours, accepted, v.verdict, c.scale,
                              f"`{c.command}`")))


def decide_all(results: Path, papers: list[str]) -> list[Verdict]:
    """Every claim of ``papers`` decided on the tables under ``results``; ReproduceError in one line for
    a claim with no reading (its table lacks one side's rows)."""
    verdicts = [v for p in papers for v in PAPERS[p](results)]
    for v in verdicts:
        if not v.readings:
            raise ReproduceError(f"{v.claim.paper}: claim {v.claim.claim!r} has no reading in "
                                 f"{Path(results) / v.table}; rerun {v.claim.command}")
    return verdicts


def markdown(verdicts: list[Verdict]) -> str:
    rows = [row_of(v) for v in verdicts]
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(r[c].replace("|", "/") for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = OneLineExitParser(prog="python -m reproduce.headlines", description=__doc__.splitlines()[0])
    p.add_argument("--results", default=None, help="results folder (default: the checkout's results/)")
    p.add_argument("--papers", default=",".join(PAPERS), help=f"comma list (default all: {', '.join(PAPERS)})")
    p.add_argument("--format", choices=("md", "csv"), default="md")
    p.add_argument("--no-write", action="store_true", help="print only; leave the tables' verdict column")
    args = p.parse_args(argv)
    results = Path(args.results) if args.results else default_results_dir("small")
    papers = [x.strip() for x in args.papers.split(",") if x.strip()]
    try:
        unknown = [x for x in papers if x not in PAPERS]
        if unknown or not papers:
            raise ValueError(f"unknown paper(s) {', '.join(unknown) or '(none given)'}; "
                             f"choose from {', '.join(PAPERS)}")
        verdicts = decide_all(results, papers)
        if not args.no_write:
            write_verdicts(results, verdicts)
    except (ValueError, OSError, KeyError) as e:
        print(f"reproduce/headlines: error: {e}", file=sys.stderr)
        return 2
    if args.format == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(row_of(v) for v in verdicts)
        print(buf.getvalue(), end="")
    else:
        print(markdown(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
