"""The families of published runs judged once, read from their frozen predictions: one table.

Each family is a runs file of data/published kept apart from runs.csv, transcribed before the model
predicted it and predicted once; results/published_<family>/predictions.csv keeps that judgement
(docs/validation.md). This script reads those files and predicts nothing (unless ``--now``): per family,
its rows and rows across nodes, the median absolute and median signed error (percent) of the judged
predictions, in one node and across nodes, the linear guess's median absolute error, and how many
measured rates lie inside the 80% band (perfmodel.intervals, the committed bands) around the judged
prediction; then all families pooled. ``--now`` adds the current model's median errors beside them.

    python -m reproduce.published_judged [--now]
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfmodel.cli_guard import OneLineExitParser
from perfmodel.intervals import load_bands, with_band
from reproduce import published as pub

RESULTS = pub.ROOT / "results"
# family -> what it is and the model that judged it (docs/validation.md has each judgement's section)
JUDGED = {
    "pcie": "V100 PCIe nodes, HKBU ddl-benchmarks (judged before the bucket copies)",
    "lumi": "AMD MI250X on LUMI, CSC ml-benchmarks (judged before the bucket copies)",
    "fleetx": "PaddlePaddle FleetX, 1-4 nodes of 8 V100",
    "ebug": "TF 1.1 parameter servers on AWS K80",
    "lambda": "Lambda's HGX servers, one node",
    "dlenew": "older DLE PyTorch BERT-large tables",
    "dleold": "DLE's first TensorFlow 2 EfficientNet tables (21.02)",
    "cloud": "NERSC's PyTorch benchmarks on Cori GPU nodes, 1-8 nodes of 8 V100",
}


@dataclass(frozen=True)
class Judged:
    """One row of a judged family: its runs.csv-style row and the frozen prediction (samples/s)."""

    family: str
    row: dict
    predicted: float

    @property
    def error_pct(self) -> float:
        return pub.error_pct(self.predicted, self.row["samples_per_s"])

    @property
    def linear_error_pct(self) -> float:
        return pub.error_pct(self.row["single_gpu_samples_per_s"] * self.row["gpus"], self.row["samples_per_s"])


def runs_path(family: str) -> Path:
    return pub.ROOT / "data" / "published" / f"{family}_runs.csv"


def judged_rows(family: str) -> list[Judged]:
    """The family's expressible rows with their frozen predictions (PublishedError if a file is missing)."""
    frozen_path = RESULTS / f"published_{family}" / "predictions.csv"
    try:
        with open(frozen_path, newline="") as f:
            frozen = {r["id"]: r["predicted"] for r in csv.DictReader(f)}
    except OSError as e:
        raise pub.PublishedError(f"{frozen_path}: {e.strerror}") from None
    return [Judged(family, r, float(frozen[r["id"]])) for r in pub.load_runs(runs_path(family))
            if frozen.get(r["id"])]


def inside_band(rows: list[Judged]) -> int:
    """How many measured rates lie inside the committed 80% band around their judged prediction."""
    bands, n = load_bands(), 0
    for j in rows:
        rec = with_band([{"strategy": pub.build_strategy(j.row).name, "gpus": j.row["gpus"],
                          "nodes": j.row["nodes"], "throughput": j.predicted}], bands)[0]
        n += rec["throughput_lo"] <= j.row["samples_per_s"] <= rec["throughput_hi"]
    return n


def medians(errors: list[float]) -> str:
    """ "median |e| (median signed e)" in percent, "-" for no rows."""
    if not errors:
        return "-"
    return f"{np.median(np.abs(errors)):.1f}% ({np.median(errors):+.1f}%)"


def line(name: str, rows: list[Judged], now: bool) -> str:
    errs = [j.error_pct for j in rows]
    one = [j.error_pct for j in rows if j.row["nodes"] == 1]
    across = [j.error_pct for j in rows if j.row["nodes"] > 1]
    linear = np.median(np.abs([j.linear_error_pct for j in rows]))
    text = (f"{name:8s} {len(rows):5d} {len(across):6d}  {medians(errs):16s} {medians(one):16s} "
            f"{medians(across):16s} {linear:5.1f}%  {inside_band(rows):3d}/{len(rows)}")
    if now:
        current = [pub.error_pct(pub.predict_row(j.row).predicted, j.row["samples_per_s"]) for j in rows]
        text += f"   {medians(current)}"
    return text


def report(families: list[str], now: bool = False) -> str:
    rows = {f: judged_rows(f) for f in families}
    head = (f"{'family':8s} {'rows':>5s} {'across':>6s}  {'all':16s} {'one node':16s} {'across nodes':16s} "
            f"{'linear':>6s}  band" + ("   current model" if now else ""))
    out = ["published runs judged once: median |error| (median signed) of the frozen predictions", head]
    out += [line(f, rows[f], now) for f in families]
    out.append(line("pooled", [j for f in families for j in rows[f]], now))
    out += [f"  {f}: {JUDGED[f]}" for f in families]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineExitParser(prog="python -m reproduce.published_judged", description=__doc__.split("\n\n")[0])
    ap.add_argument("--now", action="store_true", help="add the current model's median errors")
    args = ap.parse_args(argv)
    try:
        print(report(list(JUDGED), args.now))
    except pub.PublishedError as e:
        print(f"published_judged: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
