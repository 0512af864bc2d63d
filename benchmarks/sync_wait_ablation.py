"""A validation table's step errors with and without TernGrad's synchronization points' wait, side by side.

    python benchmarks/sync_wait_ablation.py                                  # results/validation/emulated.csv
    python benchmarks/sync_wait_ablation.py --table validate                 # the shared-memory table
    python benchmarks/sync_wait_ablation.py --dir OTHER/validation           # a remake made with --out OTHER

Each row of the table is validated again (``perfmodel validate``) on its own run log and profile, as
recorded, and once more on a copy of that profile without ``CodecTimes.sync_wait_s`` (as profiles made
before it was measured): the same runs and the same measured links, compute and codec, with and
without the term (docs/model.md section 5.2). Prints each row's step error both ways, then the median
and mean absolute step error, the steps within 5% and those predicted short, both ways, over all runs
and over the synchronous ones (the parameter server's have no codec).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def without_sync_wait(profile_path: Path, out: Path) -> Path:
    """A copy of the profile in which no codec timing carries a sync wait."""
    from perfmodel.lab.profile.profile_file import load_profile, save_profile

    prof = load_profile(profile_path)
    comm = tuple(dataclasses.replace(run, compute=dataclasses.replace(
        run.compute, codec=dataclasses.replace(run.compute.codec, sync_wait_s=None)))
        if run.compute is not None and run.compute.codec is not None else run for run in prof.comm)
    path = out / profile_path.name
    save_profile(dataclasses.replace(prof, comm=comm), path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=str(ROOT / "results" / "validation"),
                        help="the folder of the table, its profiles and runs/")
    parser.add_argument("--table", default="emulated", choices=("emulated", "validate"))
    args = parser.parse_args(argv)

    import numpy as np
    import pandas as pd

    from perfmodel.lab.validate import validate

    base = Path(args.dir)
    table = pd.read_csv(base / f"{args.table}.csv")
    errors = {"with": [], "without": []}
    print(f"{'run':45s} {'with':>8s} {'without':>8s}")
    with tempfile.TemporaryDirectory() as tmp:
        bare = {}
        for _, row in table.iterrows():
            profile = base / (row["profile"] if "profile" in row and isinstance(row["profile"], str)
                              else f"profile_{row['model']}_{row['scale']}.json")
            if profile not in bare:
                bare[profile] = without_sync_wait(profile, Path(tmp))
            skip = int(json.loads(row["settings"])["skip"])
            log = str(base / row["log"])
            ((w,), (wo,)) = (validate([log], [str(p)], skip=skip) for p in (profile, bare[profile]))
            errors["with"].append(w["step_error_pct"])
            errors["without"].append(wo["step_error_pct"])
            print(f"{Path(log).name:45s} {w['step_error_pct']:+7.1f}% {wo['step_error_pct']:+7.1f}%")
    sync = (table["algo"] != "asgd").to_numpy()  # the parameter server's rows have no codec
    for rows, which in ((np.ones_like(sync), "all runs"), (sync, "synchronous runs")):
        for name, e in errors.items():
            e = np.asarray(e)[rows]
            print(f"{which:16s} {name:8s} step: median |error| {np.median(np.abs(e)):.2f}%, mean "
                  f"{np.mean(np.abs(e)):.2f}%, {int((np.abs(e) <= 5).sum())} of {len(e)} within 5%, "
                  f"{int((e < 0).sum())} short")
    return 0


if __name__ == "__main__":
    sys.exit(main())
