"""Wall time of predicting every preset workload x cluster x strategy for GPUs 1..512.

Each strategy runs as `perfmodel predict` runs it on a GPU preset: NCCL's allreduce, overlap from the
gradient bucket schedule; the GPU counts a strategy cannot run are left out as the command skips them.

Prints the vectorized sweep's total time and, side by side in the same run, the time of the same
predictions made one GPU count at a time (the ratio is what the vectorization buys).
Usage: python benchmarks/predict_sweep.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from perfmodel import presets
from perfmodel.scaling import predict, unrunnable
from perfmodel.specs import STRATEGIES, Strategy


def valid_gpus(strategy: Strategy, cluster) -> np.ndarray:
    """1..512, less the counts the strategy cannot run on the cluster (perfmodel.scaling.unrunnable)."""
    w = np.arange(1, 513)
    for bad in unrunnable(w, cluster, strategy).values():
        w = w[~np.isin(w, bad)]
    return w


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    workloads = [presets.load_workload(n) for n in presets.workload_names()]
    clusters = [presets.load_cluster(n) for n in presets.cluster_names()]
    strategies = [Strategy(s, allreduce="nccl") for s in STRATEGIES]
    cases = [(wl, cl, st, valid_gpus(st, cl)) for wl in workloads for cl in clusters for st in strategies]
    points = sum(len(g) for *_, g in cases)

    best_vec = float("inf")
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for wl, cl, st, gpus in cases:
            predict(wl, cl, st, gpus, scaling="weak", batch=32)
        best_vec = min(best_vec, time.perf_counter() - t0)
    t0 = time.perf_counter()
    for wl, cl, st, gpus in cases[: max(1, len(cases) // 8)]:
        for w in gpus:
            predict(wl, cl, st, [int(w)], scaling="weak", batch=32)
    scalar_part = time.perf_counter() - t0
    scalar = scalar_part * len(cases) / max(1, len(cases) // 8)

    print(f"{len(workloads)} workloads x {len(clusters)} clusters x {len(STRATEGIES)} strategies = "
          f"{len(cases)} sweeps, {points} predictions (GPUs 1..512)")
    print(f"vectorized: {best_vec * 1e3:.1f} ms total (best of {args.repeats}), {best_vec / len(cases) * 1e3:.2f} ms per sweep")
    print(f"one GPU count at a time (extrapolated from 1/8 of the sweeps): {scalar:.2f} s")
    print(f"ratio scalar / vectorized: {scalar / best_vec:.0f}x")


if __name__ == "__main__":
    main()
