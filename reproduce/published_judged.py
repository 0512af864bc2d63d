"""The families of published runs judged once, read from their frozen predictions: one table.

Each family is a runs file of data/published kept apart from runs.csv, transcribed before the model
predicted it and predicted once; results/published_<family>/predictions.csv keeps that judgement
(docs/validation.md). This script reads those files and predicts nothing (unless ``--now``): per family,
its rows and rows across nodes, the median absolute and median signed error (percent) of the judged
predictions over all rows, in one node and across nodes, the linear guess's median absolute error (single-GPU
rate x GPUs) over all rows and across nodes, and how many measured rates lie inside the 80% band
(perfmodel.intervals, the committed bands) around the judged prediction; then all families pooled.
``--now`` adds the current model's median errors beside them.

The families of NODE_JUDGED were also judged, in the same step, from the one-node run of the same scheme
beside each row across nodes (reproduce.published_node, results/published_<family>/node_predictions.csv),
the number `perfmodel predict --node-rate` gives a user who ran one node: a second table compares the two
frozen predictors on those rows. A third counts the scheme pairs (reproduce.published_pairs) ranked as
measured by the frozen predictions, with its PAIR_KEY (same network) and with SAME_MACHINES_KEY (the same
machines, each scheme over its own fabric).

    python -m reproduce.published_judged [--now] [--bands TOML]

``--bands``: count the band columns against another bands file (a candidate declared before a round).
The one-node and pair tables come per round (NODE_ROUNDS).
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfmodel.cli_guard import OneLineExitParser
from perfmodel.intervals import Bands, load_bands
from perfmodel.specs import SpecError
from reproduce import published as pub
from reproduce.published_intervals import band_record, coverage
from reproduce.published_node import NODE_FILE
from reproduce.published_pairs import PAIR_KEY, SAME_MACHINES_KEY, Pair, pairs, tally

RESULTS = pub.ROOT / "results"
# family -> what it is and the model that judged it (docs/validation.md has each judgement's section)
JUDGED = {
    "pcie": "V100 PCIe nodes, HKBU ddl-benchmarks (judged before the bucket copies)",
    "lumi": "AMD MI250X on LUMI, CSC ml-benchmarks (judged before the bucket copies)",
    "fleetx": "PaddlePaddle FleetX, 1-4 nodes of 8 V100",
    "ebug": "TF 1.1 parameter servers on AWS K80",
    "lambda": "Lambda's HGX servers, one node",
    "dlenew": "DLE PyTorch BERT-large tables runs.csv lacks (19.07, 20.06)",
    "dleold": "DLE's first TensorFlow 2 EfficientNet tables (21.02)",
    "cloud": "NERSC's PyTorch benchmarks on Cori GPU nodes, 1-8 nodes of 8 V100",
    "byteps": "Horovod's README tables, 2017: TF parameter servers vs Horovod on 4-16 Pascal servers",
    "awsblog": "AWS's MXNet parameter-server table, 1-16 p2.16xlarge (K80)",
    "azure": "Azure Batch AI Horovod charts, Intel MPI over IB vs NCCL over TCP, 1-8 VMs of 4 GPUs",
    "paddle": "PaddlePaddle/Perf, Dec 2020: Paddle vs NGC TF, PyTorch, MXNet on 1-4 nodes of 8 V100",
    "oneflow": "OneFlow-Benchmark's FP32 reports, Aug 2020, on DLPerf's 1-4 nodes of 8 V100",
    "paddle2": "PaddlePaddle/Perf's 2.1 and 2.3 campaigns: Paddle vs NGC TF, PyTorch on 1-4 nodes of 8 V100",
    "dlperf2": "DLPerf's unmerged branches: OneFlow 0.4.0 and DeepSpeed BERT-base on 1-4 nodes of 8 V100",
    "dleconv": "DLE's older image-classification README tables, one DGX-1, DGX-2 or DGX A100",
    "schemes": "RaySGD's Horovod vs DDP on 1-8 p3dn.24xlarge (TCP assumed); PyTorch's DDP benchmark README",
    "charts": "DeepSpeed's 1-bit Adam blog (its Adam rows) and Bluefog's Horovod bars, read off the charts",
    "benchlogs": "A PyTorch DDP benchmark repo's JSON results: one 8-GPU V100 or A100 node",
    "threads": "Two GitHub issue threads: Horovod on p3.16xlarge, Horovod on V100 PCIe over RoCE",
    "chainermn": "ChainerMN's 2017 chart: ChainerMN, MXNet, CNTK, TensorFlow on 1-32 nodes of 4 TITAN X",
    "charts2": "Bagua's charts: BytePS, Horovod and DDP on 1-16 servers of 8 V100 over 100 and 10 Gb/s",
    "daint": "Sarus's Horovod figures on 2-128 Piz Daint nodes of one P100 (Aries at the page's MPI figure)",
    "lambda2": "Lambda's PyTorch tables, the rest: PCIe workstations and servers, SXM systems, one node",
    "logs": "ChainerMN's committed logs on 1-32 Azure VMs of 4 P100 over FDR (rates from timestamps)",
    "hvdissues": "Three GitHub issue threads: Horovod on 2 V100 nodes over IB, MXNet on p3.8xlarge, TF on p2.8xlarge",
    "repos": "tensorpack's benchmark tables: tensorpack and tf_cnn_benchmarks on one DGX-1 P100 or p3.16xlarge",
}

# the rounds whose families' rows across nodes were judged from their one-node runs too, in the same step
NODE_ROUNDS: dict[str, tuple[str, ...]] = {
    "second": ("byteps", "awsblog", "azure", "paddle", "oneflow"),
    "third": ("paddle2", "dlperf2", "dleconv", "schemes"),
    "fourth": ("charts", "benchlogs", "threads"),
    "fifth": ("chainermn", "charts2", "daint"),
    "sixth": ("lambda2", "logs"),
    "seventh": ("hvdissues", "repos"),
}
NODE_JUDGED: tuple[str, ...] = tuple(f for families in NODE_ROUNDS.values() for f in families)


@dataclass(frozen=True)
class Judged:
    """One row of a judged family: its runs.csv-style row and the frozen prediction (samples/s)."""

    family: str
    row: dict
    predicted: float

    @property
    def error_pct(self) -> float:
        """The judged prediction's error against the measured rate, percent (positive: predicted too fast)."""
        return pub.error_pct(self.predicted, self.row["samples_per_s"])

    @property
    def linear_error_pct(self) -> float:
        """The linear guess's error (single-GPU rate x GPUs), percent."""
        return pub.error_pct(self.row["single_gpu_samples_per_s"] * self.row["gpus"], self.row["samples_per_s"])


def runs_path(family: str) -> Path:
    """data/published/<family>_runs.csv."""
    return pub.ROOT / "data" / "published" / f"{family}_runs.csv"


def _frozen(path: Path, prediction: str, producer: str) -> dict[str, dict]:
    """The rows of a frozen predictions file by id, ``measured`` and the ``prediction`` column as floats (None
    where empty); PublishedError naming the file (and the ``producer`` that writes such files) when it cannot be
    read."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = {r["id"]: r for r in csv.DictReader(f)}
        for r in rows.values():
            r[prediction] = float(r[prediction]) if r[prediction] else None
            r["measured"] = float(r["measured"])
    except OSError as e:
        raise pub.PublishedError(f"{path}: {e.strerror}") from None
    except (KeyError, TypeError, ValueError, UnicodeDecodeError) as e:
        raise pub.PublishedError(f"{path}: not a predictions file of {producer} ({e})") from None
    return rows


def judged_rows(family: str) -> list[Judged]:
    """The family's expressible rows with their frozen predictions; PublishedError when the frozen file lacks a
    row of the runs file or its measured rate differs from the runs file's (the judgement is of other data)."""
    path = RESULTS / f"published_{family}" / "predictions.csv"
    frozen = _frozen(path, "predicted", "reproduce.published")
    out = []
    for r in pub.load_runs(runs_path(family)):
        f = frozen.get(r["id"])
        if f is None:
            raise pub.PublishedError(f"{path}: no row {r['id']} of {runs_path(family).name}")
        if f["measured"] != r["samples_per_s"]:
            raise pub.PublishedError(f"{path}: row {r['id']} measured {f['measured']:g}, the runs file "
                                     f"{r['samples_per_s']:g}")
        if f["predicted"] is not None:
            out.append(Judged(family, r, f["predicted"]))
    return out


def inside_band(rows: list[Judged], bands: Bands | None = None) -> int:
    """How many measured rates lie inside the 80% band (``bands``: the committed ones) around their judged
    prediction (reproduce.published_intervals.coverage over both halves)."""
    records, bands = [band_record(j.row, j.predicted) for j in rows], bands or load_bands()
    return sum(coverage(records, bands, half).get("all", (0, 0))[0] for half in ("dev", "held-out"))


def medians(errors: list[float]) -> str:
    """ "median |e| (median signed e)" in percent, "-" for no rows."""
    if not errors:
        return "-"
    return f"{np.median(np.abs(errors)):.1f}% ({np.median(errors):+.1f}%)"


def _abs_median(errors: list[float]) -> str:
    return f"{np.median(np.abs(errors)):.1f}%" if errors else "-"


def family_line(name: str, rows: list[Judged], bands: Bands, now: bool) -> str:
    """One line of the table: ``name``'s rows (a family, or several pooled)."""
    across = [j for j in rows if j.row["nodes"] > 1]
    text = (f"{name:8s} {len(rows):5d} {len(across):6d}  {medians([j.error_pct for j in rows]):16s} "
            f"{medians([j.error_pct for j in rows if j.row['nodes'] == 1]):16s} "
            f"{medians([j.error_pct for j in across]):16s} {_abs_median([j.linear_error_pct for j in rows]):>6s} "
            f"{_abs_median([j.linear_error_pct for j in across]):>6s}  {inside_band(rows, bands):3d}/{len(rows)}")
    if now:
        current = [pub.error_pct(pub.predict_row(j.row).predicted, j.row["samples_per_s"]) for j in rows]
        text += f"   {medians(current)}"
    return text


def report(families: list[str], now: bool = False, judged: dict[str, list[Judged]] | None = None,
           bands: Bands | None = None) -> str:
    """The table of ``families`` and their pool (``now``: with the current model's medians; ``judged``: their
    judged_rows, read here when not given; ``bands``: the committed ones when not given)."""
    bands = bands or load_bands()
    rows = judged or {f: judged_rows(f) for f in families}
    head = (f"{'family':8s} {'rows':>5s} {'across':>6s}  {'all':16s} {'one node':16s} {'across nodes':16s} "
            f"{'linear':>6s} {'(across)':>8s} band" + ("   current model" if now else ""))
    out = ["published runs judged once: median |error| (median signed) of the frozen predictions; the linear "
           "guess's median |error|", head]
    out += [family_line(f, rows[f], bands, now) for f in families]
    out.append(family_line("pooled", [j for f in families for j in rows[f]], bands, now))
    out += [f"  {f}: {JUDGED[f]}" for f in families]
    return "\n".join(out)


def node_judged(family: str, judged: list[Judged] | None = None) -> list[tuple[Judged, float]]:
    """The family's rows across nodes that have a frozen node prediction: (the row with its frozen single-GPU
    prediction, the frozen prediction from its one-node run, samples/s); PublishedError as judged_rows.
    ``judged``: the family's judged_rows, read here when not given."""
    path = RESULTS / f"published_{family}" / NODE_FILE
    by_id = {j.row["id"]: j for j in (judged if judged is not None else judged_rows(family))}
    out = []
    for rid, f in _frozen(path, "predicted_node", "reproduce.published_node").items():
        j = by_id.get(rid)
        if j is None or f["measured"] != j.row["samples_per_s"]:
            raise pub.PublishedError(f"{path}: row {rid} is not a judged row of {runs_path(family).name}")
        if f["predicted_node"] is not None:
            out.append((j, f["predicted_node"]))
    return out


def frozen_pairs(judged: list[Judged], key: tuple[str, ...] = PAIR_KEY,
                 predicted: dict[str, float] | None = None) -> list[Pair]:
    """The scheme pairs (reproduce.published_pairs, rows alike in ``key``) among judged rows, ranked by their
    frozen predictions, or by ``predicted`` (samples/s by row id: the node predictions) where given."""
    by_id = predicted if predicted is not None else {j.row["id"]: j.predicted for j in judged}
    return pairs([j.row for j in judged], lambda r: pub.Outcome(r, by_id.get(r["id"])), key)


def node_line(name: str, items: list[tuple[Judged, float]], bands: Bands) -> str:
    """One line of the node table: rows, both frozen predictors' medians, the linear guess's, band hits around the
    node prediction."""
    by_node = [Judged(j.family, j.row, p) for j, p in items]
    return (f"{name:8s} {len(items):5d}  {medians([j.error_pct for j, _ in items]):16s} "
            f"{medians([j.error_pct for j in by_node]):16s} {_abs_median([j.linear_error_pct for j, _ in items]):>6s}  "
            f"{inside_band(by_node, bands):3d}/{len(items)}")


def node_report(families: list[str], judged: dict[str, list[Judged]] | None = None,
                bands: Bands | None = None, nodes: dict[str, list[tuple[Judged, float]]] | None = None) -> str:
    """The rows across nodes of ``families`` judged from their one-node runs, per family and pooled (``judged``:
    their judged_rows, ``nodes``: their node_judged, each read here when not given; ``bands``: the committed ones
    when not given)."""
    judged, nodes = judged or {}, nodes or {}
    bands = bands or load_bands()
    items = {f: nodes[f] if f in nodes else node_judged(f, judged.get(f)) for f in families}
    out = ["rows across nodes with a one-node run beside them, both predictors frozen: median |error| (signed)",
           f"{'family':8s} {'rows':>5s}  {'single-GPU rate':16s} {'one-node run':16s} {'linear':>6s}  band"]
    out += [node_line(f, items[f], bands) for f in families]
    out.append(node_line("pooled", [i for f in families for i in items[f]], bands))
    return "\n".join(out)


def pair_report(families: list[str], judged: dict[str, list[Judged]] | None = None,
                nodes: dict[str, list[tuple[Judged, float]]] | None = None) -> str:
    """Scheme pairs of each family ranked by its frozen predictions, right (right or tie) / pairs: with PAIR_KEY
    over all rows, across nodes, and across nodes by the frozen node predictions; then the same three with
    SAME_MACHINES_KEY (``judged``: the families' judged_rows, ``nodes``: their node_judged, each read here when
    not given)."""
    judged, nodes = judged or {}, nodes or {}
    cols = "".join(f"{c:18s}" for c in ("all", "across nodes", "across, node runs"))
    out = ["scheme pairs ranked as measured by the frozen predictions: right (right or tie) / pairs",
           f"{'':10s}{'same network':54s}| same machines", f"{'family':10s}{cols}| {cols}".rstrip()]
    for f in families:
        rows = judged[f] if f in judged else judged_rows(f)
        items = nodes[f] if f in nodes else node_judged(f, rows) if f in NODE_JUDGED else []
        node = {j.row["id"]: p for j, p in items}
        cells = []
        for key in (PAIR_KEY, SAME_MACHINES_KEY):
            by_gpu = frozen_pairs(rows, key)
            for ps in (by_gpu, [p for p in by_gpu if p.a["nodes"] > 1], frozen_pairs(rows, key, node)):
                t = tally(ps)
                cells.append(f"{t['right']} ({t['right_or_tie']}) / {t['pairs']}")
        line = f"{f:10s}" + "".join(f"{c:18s}" for c in cells[:3]) + "| " + "".join(f"{c:18s}" for c in cells[3:])
        out.append(line.rstrip())
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Print the table; a missing or unreadable judgement is one line and exit status 2."""
    ap = OneLineExitParser(prog="python -m reproduce.published_judged", description=__doc__.split("\n\n")[0])
    ap.add_argument("--now", action="store_true", help="add the current model's median errors")
    ap.add_argument("--bands", type=Path, default=None, metavar="TOML",
                    help="count the band columns against these bands (default: data/presets/intervals.toml)")
    args = ap.parse_args(argv)
    try:
        bands = load_bands(args.bands)  # the committed bands without --bands; read once for every table
        judged = {f: judged_rows(f) for f in JUDGED}  # each frozen file read once
        nodes = {f: node_judged(f, judged[f]) for f in NODE_JUDGED}
        print(report(list(JUDGED), args.now, judged, bands))
        for name, families in NODE_ROUNDS.items():
            print(f"the {name} round:")
            print(node_report(list(families), judged, bands, nodes))
            print(pair_report(list(families), judged, nodes))
    except (pub.PublishedError, SpecError) as e:
        print(f"published_judged: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
