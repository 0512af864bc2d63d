"""Published runs across nodes predicted from the same scheme's run on one node (the one-node profile).

reproduce.published predicts every row from its single-GPU rate alone. A user who can run one node of
the cluster before the big job has more: the scheme's throughput on that node with all its GPUs. Here
every row across nodes that has such a row beside it (NODE_KEY: same source, system, GPU, network, framework,
scheme, model, per-GPU batch, precision, accumulation, data, wire format and overlap; the node row at
gpus = gpus_per_node, nodes = 1) is predicted by the same model with the framework's step overhead that
the node row measures (perfmodel.node_overhead: o = max(0, G b K / R_node - t_model(G))), the input that
`perfmodel predict --node-rate R_node` sets. Nothing is read from a row across nodes but its specs; the
node rows themselves are the profile and are not predicted here.

Prints, per half (reproduce.halves' column ``half``) over the rows across nodes that have a node row:
the median absolute and signed error from the single-GPU rate alone and from the node, the share of
rows inside the 80% band `perfmodel predict` prints around the node prediction (perfmodel.intervals),
then the pairs of reproduce.published_pairs across nodes ranked both ways, then the batch transfer:
the same rows predicted from a node run of the same scheme at another per-GPU batch (the nearest one),
which is what `perfmodel plan --node-rate` does for candidates whose batch differs from the measured one.

``--out DIR`` also writes DIR/node_predictions.csv, once (a folder holding one is refused): per row across
nodes, its node row and both predictions (samples/s), or why it has none; how a kept-apart family's rows
across nodes are judged from their one-node runs before anyone looks (docs/validation.md).

    python -m reproduce.published_node [--runs data/published/runs.csv] [--misses none|all] [--out DIR]
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace
from pathlib import Path

from perfmodel.cli_guard import OneLineExitParser
from perfmodel.intervals import load_bands
from perfmodel.node_overhead import node_step_overhead
from perfmodel.scaling import predict
from perfmodel.specs import SpecError
from reproduce.published import (RUNS, NotExpressible, Outcome, PublishedError, build_cluster, build_strategy,
                                 build_workload, load_runs, predict_row, write_csv_atomic)
from reproduce.published_pairs import groups, miss_line, pairs, tally

NODE_KEY = ("source", "system", "gpu", "network", "framework", "scheme", "model", "batch_per_gpu", "precision", "accumulate",
            "data", "grad_wire", "comm_overlap")
HALVES = ("dev", "held-out")
# both predictors' outcomes by row id: (from the one-node run, from the single-GPU rate), as outcomes() makes them
Predicted = tuple[dict[str, Outcome], dict[str, Outcome]]
#: NODE_KEY without the per-GPU batch: node runs of the same scheme at any batch
ANY_BATCH_KEY = tuple(k for k in NODE_KEY if k != "batch_per_gpu")
NODE_FILE = "node_predictions.csv"
NODE_COLUMNS = ("id", "half", "gpus", "nodes", "node_id", "measured", "predicted_node", "predicted_single_gpu",
                "reason")


def node_rows(rows: list[dict]) -> dict[tuple, dict]:
    """NODE_KEY -> the first row run on one whole node (nodes 1, gpus = gpus_per_node >= 2)."""
    out: dict[tuple, dict] = {}
    for r in rows:
        if r["nodes"] == 1 and r["gpus"] == r["gpus_per_node"] >= 2:
            out.setdefault(tuple(r[k] for k in NODE_KEY), r)
    return out


def overhead_of(node: dict) -> float:
    """Seconds per multi-GPU step that the node row took beyond the model's one-node step (>= 0)."""
    return node_step_overhead(build_workload(node), build_cluster(node), build_strategy(node),
                              node["batch_per_gpu"], node["samples_per_s"])


def predict_with_overhead(r: dict, node: dict) -> float:
    """Samples/s of row ``r`` with the step overhead that ``node`` (a one-node row) measures."""
    strategy = replace(build_strategy(r), step_overhead_s=overhead_of(node))
    p = predict(build_workload(r), build_cluster(r), strategy, [r["gpus"]], scaling="weak", batch=r["batch_per_gpu"])
    return float(p.throughput[0])


def predict_from_node(r: dict, nodes: dict[tuple, dict]) -> Outcome:
    """Samples/s of a row across nodes with its node row's step overhead; single-node rows and rows
    without a node row get no prediction (the reason says why)."""
    if r["nodes"] < 2:
        return Outcome(r, None, "one node: the node run is the profile, not a prediction")
    node = nodes.get(tuple(r[k] for k in NODE_KEY))
    if node is None:
        return Outcome(r, None, "no run of this scheme on one whole node beside it")
    try:
        return Outcome(r, predict_with_overhead(r, node))
    except (NotExpressible, SpecError) as e:
        return Outcome(r, None, str(e))


def nearest_other_batch(rows: list[dict]) -> dict[str, dict]:
    """Row id -> the node row (``node_rows``' rule) of the same ANY_BATCH_KEY at the per-GPU batch nearest
    to the row's own, other than its own (ties: the smaller batch), for the rows across nodes that have
    both such a node row and one at their own batch (so that both transfers are judged on the same rows)."""
    by_batch: dict[tuple, dict[int, dict]] = {}
    for node in node_rows(rows).values():
        by_batch.setdefault(tuple(node[k] for k in ANY_BATCH_KEY), {})[node["batch_per_gpu"]] = node
    out: dict[str, dict] = {}
    for r in rows:
        runs = by_batch.get(tuple(r[k] for k in ANY_BATCH_KEY), {})
        others = sorted(b for b in runs if b != r["batch_per_gpu"])
        if r["nodes"] > 1 and r["batch_per_gpu"] in runs and others:
            out[r["id"]] = runs[min(others, key=lambda b: (abs(b - r["batch_per_gpu"]), b))]
    return out


def batch_transfer(rows: list[dict], via: dict[str, Outcome],
                   alone: dict[str, Outcome]) -> dict[str, dict[str, list[float]]]:
    """Per half, over the rows ``nearest_other_batch`` covers: relative errors from the single-GPU rate,
    the node run at the row's own batch and the node run at the nearest other batch."""
    out = {h: {"single-GPU": [], "node, same batch": [], "node, other batch": []} for h in HALVES}
    for rid, node in nearest_other_batch(rows).items():
        r, same, gpu = via[rid].row, via[rid].predicted, alone[rid].predicted
        if same is None or gpu is None:
            continue
        try:
            other = predict_with_overhead(r, node)
        except (NotExpressible, SpecError):
            continue
        m = r["samples_per_s"]
        for name, value in (("single-GPU", gpu), ("node, same batch", same), ("node, other batch", other)):
            out[r["half"]][name].append(value / m - 1.0)
    return out


def outcomes(rows: list[dict]) -> Predicted:
    """Each row's prediction from its one-node run and from its single-GPU rate alone, by row id (the
    latter for rows across nodes only: the others have no node prediction to compare with)."""
    nodes = node_rows(rows)
    via = {r["id"]: predict_from_node(r, nodes) for r in rows}
    alone = {r["id"]: predict_row(r) if r["nodes"] > 1 else Outcome(r, None, "one node") for r in rows}
    return via, alone


def errors(rows: list[dict], via: dict[str, Outcome], alone: dict[str, Outcome]) -> dict[str, dict[str, list[float]]]:
    """Per half: the relative errors (predicted / measured - 1) of the rows that both predictors cover
    (``outcomes``), under "single-GPU" and "node"."""
    out = {h: {"single-GPU": [], "node": []} for h in HALVES}
    for r in rows:
        by_node, by_gpu = via[r["id"]].predicted, alone[r["id"]].predicted
        if by_node is None or by_gpu is None:
            continue
        out[r["half"]]["single-GPU"].append(by_gpu / r["samples_per_s"] - 1.0)
        out[r["half"]]["node"].append(by_node / r["samples_per_s"] - 1.0)
    return out


def band_coverage(rows: list[dict], via: dict[str, Outcome]) -> dict[str, tuple[int, int]]:
    """Per half: (rows whose measured rate lies inside the 80% band that `perfmodel predict` prints around
    the one-node prediction ``via``, rows). The bands (perfmodel.intervals) come from the single-GPU
    predictor's development residuals; this checks whether they still hold around the node predictor's
    numbers."""
    bands = load_bands()
    out = {h: [0, 0] for h in HALVES}
    for r in rows:
        p = via[r["id"]].predicted
        if p is None:
            continue
        b = bands.band_for(build_strategy(r).name, r["nodes"])
        out[r["half"]][0] += int(p * b.q_lo <= r["samples_per_s"] <= p * b.q_hi)
        out[r["half"]][1] += 1
    return {h: (n, d) for h, (n, d) in out.items()}


def node_records(rows: list[dict], predicted: Predicted | None = None) -> list[dict]:
    """NODE_COLUMNS per row across nodes: its node row's id, the measured rate and both predictions
    (samples/s; empty where there is none, with the reason). ``predicted``: outcomes(rows), made here if not given."""
    nodes, (via, alone) = node_rows(rows), predicted or outcomes(rows)
    out = []
    for r in rows:
        if r["nodes"] < 2:
            continue
        node = nodes.get(tuple(r[k] for k in NODE_KEY))
        v, a = via[r["id"]], alone[r["id"]]
        out.append({"id": r["id"], "half": r["half"], "gpus": r["gpus"], "nodes": r["nodes"],
                    "node_id": node["id"] if node else "", "measured": r["samples_per_s"],
                    "predicted_node": "" if v.predicted is None else f"{v.predicted:.6f}",
                    "predicted_single_gpu": "" if a.predicted is None else f"{a.predicted:.6f}",
                    "reason": v.reason or a.reason or ""})
    return out


def write_node_predictions(rows: list[dict], out: Path, predicted: Predicted | None = None) -> Path:
    """Write out/NODE_FILE (atomically) from ``rows`` (``predicted``: as node_records); PublishedError when out
    already holds one."""
    path = out / NODE_FILE
    if path.exists():
        raise PublishedError(f"{path} exists: a judgement is made once (docs/validation.md); give another --out")
    out.mkdir(parents=True, exist_ok=True)
    write_csv_atomic(path, node_records(rows, predicted), NODE_COLUMNS)
    return path


def _med(xs: list[float], signed: bool) -> str:
    if not xs:
        return "-"
    return f"{100 * statistics.median(xs):+.1f}%" if signed else f"{100 * statistics.median(map(abs, xs)):.1f}%"


def report(rows: list[dict], misses: str = "none", predicted: Predicted | None = None) -> str:
    """The error table and the pair table across nodes (``misses``: "all" lists the node predictor's;
    ``predicted``: outcomes(rows), made here if not given)."""
    via, alone = predicted or outcomes(rows)
    errs = errors(rows, via, alone)
    lines = ["rows across nodes with a one-node run beside them: median |error| (signed)",
             f"{'half':<10}{'rows':>5}  {'single-GPU rate':<18}{'one-node run':<18}"]
    for h in HALVES:
        by_gpu, by_node = (f"{_med(errs[h][k], False)} ({_med(errs[h][k], True)})" for k in ("single-GPU", "node"))
        lines.append(f"{h:<10}{len(errs[h]['node']):>5}  {by_gpu:<18}{by_node:<18}")
    cover = band_coverage(rows, via)
    lines.append("80% band (perfmodel.intervals) around the one-node predictions covers: " + ", ".join(
        f"{h} {n}/{d} ({100 * n / d:.1f}%)" for h, (n, d) in cover.items() if d))
    pairs_gpu = pairs(rows, lambda r: alone[r["id"]])  # rows on one node have no prediction: no pair
    pairs_node = pairs(rows, lambda r: via[r["id"]])
    lines += ["pairs across nodes ranked as measured (right; right or tie)",
              f"{'group':<15}{'pairs':>6}  {'single-GPU rate':<24}{'one-node run':<24}"]
    by_alone, by_via = groups(pairs_gpu), groups(pairs_node)
    for name in by_alone:
        cells = []
        for g in (by_alone[name], by_via[name]):
            t = tally(g)
            pct = f"{100 * t['right'] / t['pairs']:.1f}%" if t["pairs"] else "-"
            cells.append(f"{t['right']}/{t['pairs']} ({pct}); {t['right_or_tie']}")
        lines.append(f"{name:<15}{len(by_via[name]):>6}  {cells[0]:<24}{cells[1]:<24}")
    moved = batch_transfer(rows, via, alone)
    lines += ["batch transfer: rows across nodes with node runs at their own and at another per-GPU batch, "
              "median |error| (signed)",
              f"{'half':<10}{'rows':>5}  " + "".join(f"{k:<20}" for k in moved[HALVES[0]])]
    for h in HALVES:
        lines.append(f"{h:<10}{len(moved[h]['single-GPU']):>5}  " + "".join(
            f"{_med(v, False) + ' (' + _med(v, True) + ')':<20}" for v in moved[h].values()))
    if misses == "all":
        shown = [p for p in pairs_node if not p.right]
        lines.append(f"misses of the one-node predictor: {len(shown)}")
        lines += [miss_line(p) for p in shown]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = OneLineExitParser(prog="python -m reproduce.published_node", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, default=RUNS, help="published runs CSV (default: %(default)s)")
    ap.add_argument("--misses", choices=("none", "all"), default="none", help="list the one-node predictor's misses")
    ap.add_argument("--out", type=Path, default=None, help=f"also write OUT/{NODE_FILE}, once")
    args = ap.parse_args(argv)
    try:
        rows = load_runs(args.runs)
        predicted = outcomes(rows)  # both predictors, once for the file and the report
        written = None if args.out is None else write_node_predictions(rows, args.out, predicted)
        print(report(rows, args.misses, predicted))
        if written is not None:
            print(f"wrote {written}")
    except (PublishedError, SpecError) as e:
        print(f"published_node: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
