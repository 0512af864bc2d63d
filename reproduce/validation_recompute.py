"""Recompute a validation table's predictions from its committed run logs and profiles, nothing rerun.

    python -m reproduce.validation_recompute [--dir results/validation] [--table validate,emulated]

Each row is validated again (perfmodel.lab.validate) from its log (``log``, relative to the folder) and its
profile (``profile``, else ``profile_<model>_<scale>.json``) with the row's warm-up skip; the measured
columns stay, the predicted ones, their errors, the `perfmodel predict` command and its notes are
replaced; the table is rewritten atomically. The commands name the profiles relative to the checkout,
so that they run from the repository root (tests/test_predict_commands.py runs each of them).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pandas as pd

from perfmodel.cli_guard import OneLineExitParser
from perfmodel.fileio import atomic_path

ROOT = Path(__file__).resolve().parents[1]
PREDICTED = ("predicted_step_s", "predicted_compute_s", "predicted_comm_s", "predicted_compress_s",
             "predicted_throughput", "predicted_bytes_per_step", "step_error_pct", "throughput_error_pct",
             "compute_error_pct", "comm_error_pct", "compress_error_pct",
             "predict_command", "notes", "computing_ranks", "predicted_server_utilization")


def relative_to_root(path: Path) -> str:
    """``path`` relative to the checkout when inside it, else absolute."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path.resolve())


def recompute(base: Path, table: str) -> int:
    """Recompute ``base/<table>.csv`` in place; the number of rows."""
    from perfmodel.lab.validate import validate

    path = base / f"{table}.csv"
    frame = pd.read_csv(path, keep_default_na=False)
    rows = []
    for _, r in frame.iterrows():
        row = r.to_dict()
        name = r["profile"] if "profile" in r and r["profile"] else f"profile_{r['model']}_{r['scale']}.json"
        profile = base / name
        skip = int(json.loads(r["settings"])["skip"])
        (new,) = validate([str(base / r["log"])], [relative_to_root(profile)], skip=skip)
        for key in PREDICTED:
            if key in new:
                row[key] = new[key]
        row.pop("core_share", None)
        rows.append(row)
    out = pd.DataFrame(rows)
    with atomic_path(path, suffix=".tmp") as tmp:
        out.to_csv(tmp, index=False)
    return len(out)


def main(argv: list[str] | None = None) -> int:
    p = OneLineExitParser(prog="reproduce/validation_recompute.py", description=__doc__.splitlines()[0])
    p.add_argument("--dir", default=str(ROOT / "results" / "validation"), help="the tables' folder")
    p.add_argument("--table", default="validate,emulated", help="comma list of tables (default validate,emulated)")
    args = p.parse_args(argv)
    os.chdir(ROOT)  # the profiles are named relative to the checkout
    try:
        for table in (t.strip() for t in args.table.split(",") if t.strip()):
            print(f"{table}: {recompute(Path(args.dir).resolve(), table)} rows recomputed")
    except (ValueError, OSError) as e:
        print(f"reproduce/validation_recompute: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
