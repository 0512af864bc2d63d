"""Where the model misses across nodes: its error by the exposed share of the step and by network.

    python -m reproduce.published_exposure [--runs FILE ...]

Predicts every row across nodes of the given runs files (default: runs.csv and every judged family's,
reproduce.published_judged.JUDGED) with the current model, as reproduce.published does, and groups the
rows by the share of the predicted step that is not compute, (t_iter - t_compute) / t_iter: the exposed
exchange with its launch waits and bucket copies. Per group: rows, median absolute and signed error of
the model and the linear guess's median absolute error (percent). A second table groups the same rows
by network fabric (the runs file's column, RDMA or TCP as the source states). A development diagnostic
(docs/validation.md, "Before a third round"): it reads no frozen prediction and judges nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from perfmodel.cli_guard import OneLineExitParser
from perfmodel.scaling import predict
from perfmodel.specs import SpecError
from reproduce import published as pub

EXPOSED_EDGES = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)  # bins of the exposed share (left-open, right-closed)


def default_runs() -> list[Path]:
    """runs.csv and the runs file of every judged family."""
    from reproduce.published_judged import JUDGED
    return [pub.RUNS] + [pub.RUNS.parent / f"{f}_runs.csv" for f in JUDGED]


def exposed_rows(paths: list[Path]) -> list[dict]:
    """Each expressible row across nodes: network, exposed share of the predicted step, model and linear
    errors (percent)."""
    out = []
    for path in paths:
        for r in pub.load_runs(path):
            if r["nodes"] < 2 or pub.predict_row(r).predicted is None:
                continue
            p = predict(pub.build_workload(r), pub.build_cluster(r), pub.build_strategy(r), [r["gpus"]],
                        scaling="weak", batch=r["batch_per_gpu"])
            t_iter, t_comp = float(p.t_iter_s[0]), float(p.t_compute_s[0])
            out.append(dict(file=path.name, network=r["network"], exposed=(t_iter - t_comp) / t_iter,
                            error=pub.error_pct(float(p.throughput[0]), r["samples_per_s"]),
                            linear=pub.error_pct(r["single_gpu_samples_per_s"] * r["gpus"], r["samples_per_s"])))
    return out


def _line(label: str, group: list[dict]) -> str:
    err, lin = np.array([g["error"] for g in group]), np.array([g["linear"] for g in group])
    return (f"  {label:22s} {len(group):5d}  {np.median(np.abs(err)):6.1f}%  {np.median(err):+6.1f}%  "
            f"{np.median(np.abs(lin)):7.1f}%")


def report(rows: list[dict]) -> str:
    """Both tables as text."""
    head = f"  {'':22s} {'rows':>5s}  {'model':>7s} {'signed':>7s}  {'linear':>7s}"
    lines = ["rows across nodes by the exposed share of the predicted step:", head]
    for lo, hi in zip(EXPOSED_EDGES, EXPOSED_EDGES[1:]):
        group = [x for x in rows if (lo < x["exposed"] <= hi) or (lo == 0.0 and x["exposed"] <= 0.0)]
        if group:
            lines.append(_line(f"({lo:g}, {hi:g}]", group))
    lines += ["by network:", head]
    for net in sorted({x["network"] for x in rows}):
        lines.append(_line(net, [x for x in rows if x["network"] == net]))
    lines.append(_line("all", rows))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = OneLineExitParser(prog="python -m reproduce.published_exposure", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=Path, nargs="+", default=None, help="runs files (default: runs.csv and the judged)")
    args = p.parse_args(argv)
    try:
        rows = exposed_rows(args.runs or default_runs())
    except (pub.PublishedError, SpecError) as e:
        print(f"published_exposure: error: {e}", file=sys.stderr)
        return 2
    if not rows:
        print("published_exposure: error: no expressible row across nodes", file=sys.stderr)
        return 2
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
