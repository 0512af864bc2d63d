"""Error tables of the overlap term on the published runs: from its causes, none, the old constant.

    python -m reproduce.overlap_tables [--runs data/published/runs.csv] [--halves dev,held-out]

For every row of data/published/runs.csv, the prediction of reproduce.published with the overlap
charged three ways (reproduce.published.OVERLAP_MODES): "causes" (perfmodel's default: each
framework's bucketing and launch policy, the slowdown of compute and collective when both run,
perfmodel.overlap_causes), "none" (no overlap) and "old" (the constant 0.21 on the ideal schedule);
all other effects as reproduce.published applies them. Prints Markdown tables of the median absolute
error (and the signed median) per half (reproduce.halves), inside one node and across nodes, then per
source family (the ``source`` column) and half. docs/overlap.md holds its output.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from perfmodel.cli_guard import OneLineExitParser

from .halves import HALVES, half
from .published import OVERLAP_MODES, RUNS, PublishedError, error_pct, load_runs, predict_row


def errors(rows: list[dict], mode: str) -> list[tuple[dict, float]]:
    """(row, signed error in percent) for every expressible row with the overlap charged as ``mode``."""
    out = []
    for r in rows:
        o = predict_row(r, mode=mode)
        if o.predicted is not None:
            out.append((r, error_pct(o.predicted, r["samples_per_s"])))
    return out


def cell(errs: list[float]) -> str:
    """"median |error| (signed median, n)" of a list of signed errors in percent."""
    if not errs:
        return "-"
    e = np.asarray(errs)
    return f"{np.median(np.abs(e)):.1f}% ({np.median(e):+.1f}%, {len(e)})"


def tables(rows: list[dict], halves: tuple[str, ...] = HALVES) -> str:
    """The Markdown tables (module docstring)."""
    by_mode = {m: errors(rows, m) for m in OVERLAP_MODES}
    regimes = (("all", lambda r: True), ("one node", lambda r: r["nodes"] == 1),
               ("across nodes", lambda r: r["nodes"] > 1))
    lines = ["| half | rows | " + " | ".join(f"{m}: {name}" for m in OVERLAP_MODES for name, _ in regimes[2:])
             + " | " + " | ".join(f"{m}: all" for m in OVERLAP_MODES) + " |"]
    lines.append("|---" * (2 + 2 * len(OVERLAP_MODES)) + "|")
    for h in halves:
        n = sum(1 for r, _ in by_mode["causes"] if half(r) == h)
        across = [cell([e for r, e in by_mode[m] if half(r) == h and r["nodes"] > 1]) for m in OVERLAP_MODES]
        whole = [cell([e for r, e in by_mode[m] if half(r) == h]) for m in OVERLAP_MODES]
        lines.append(f"| {h} | {n} | " + " | ".join(across) + " | " + " | ".join(whole) + " |")
    lines += ["", "| source family | half | regime | " + " | ".join(OVERLAP_MODES) + " |",
              "|---" * (3 + len(OVERLAP_MODES)) + "|"]
    for src in sorted({r["source"] for r in rows}):
        for h in halves:
            for name, sel in regimes[1:]:
                cells = [cell([e for r, e in by_mode[m] if r["source"] == src and half(r) == h and sel(r)])
                         for m in OVERLAP_MODES]
                if cells[0] != "-":
                    lines.append(f"| {src} | {h} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineExitParser(prog="python -m reproduce.overlap_tables", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, default=RUNS, help="published runs CSV (default: %(default)s)")
    ap.add_argument("--halves", default=",".join(HALVES), help="which halves to tabulate (default: both)")
    args = ap.parse_args(argv)
    halves = tuple(h.strip() for h in args.halves.split(",") if h.strip())
    if not halves or any(h not in HALVES for h in halves):
        print(f"overlap_tables: error: --halves takes {' and/or '.join(HALVES)}, got {args.halves!r}", file=sys.stderr)
        return 2
    try:
        rows = load_runs(args.runs)
    except PublishedError as e:
        print(f"overlap_tables: error: {e}", file=sys.stderr)
        return 2
    print("median |error| (signed median, rows); modes: " + ", ".join(OVERLAP_MODES))
    print(tables(rows, halves))
    return 0


if __name__ == "__main__":
    sys.exit(main())
