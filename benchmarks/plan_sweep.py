"""Wall time of `perfmodel plan` over the whole model library on one preset cluster, GPUs 1..512.

Every library model gets the FLOP-based compute ESTIMATE (mixed precision) on the cluster's GPU, then the
plan's full search: every candidate strategy (perfmodel.plan.candidates: collectives x wire x bucket,
DASO, TernGrad levels/ps, sync-ps, BytePS, ASGD, ZeRO 1-3, FSDP) at 1, 2, 4, ... 512 GPUs, with memory per
GPU, ranked by time to train. The goal (issue 28) is under 2 s; the last line is the time.
Usage: python benchmarks/plan_sweep.py [--cluster dgx1-v100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

from perfmodel.library import model_names
from perfmodel.memory import default_optimizer, gpu_memory_bytes, load_activations
from perfmodel.plan import Constraints, PlanInput, candidates, rank, search, work_from
from perfmodel.presets import presets_dir
from perfmodel.stragglers import GPU_VARIABILITY_CV
from perfmodel.workload_input import ComputeOptions, resolve_workload
from perfmodel.cluster_input import resolve_cluster


def plan_library(cluster, models) -> int:
    """Plan every model; the number of rows searched."""
    capacity, _ = gpu_memory_bytes(cluster.gpu)
    cands = candidates(cluster, straggler_cv=GPU_VARIABILITY_CV)
    n = 0
    for wl in models:
        inp = PlanInput(work_from(samples=1e8), Constraints(gpus_max=512), load_activations(wl.name), capacity,
                        price=2.0, optimizer=default_optimizer(wl.name))
        rows = search(wl, cluster, cands, inp)
        rank([r for r in rows if not r["violates"]] or rows, "time")
        n += len(rows)
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cluster", default="dgx1-v100")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    cluster = resolve_cluster(args.cluster)
    models = [resolve_workload(m, cluster, ComputeOptions(estimate="mixed", batch=32))[0]
              for m in model_names(presets_dir())]
    best, rows = float("inf"), 0
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        rows = plan_library(cluster, models)
        best = min(best, time.perf_counter() - t0)
    print(f"{len(models)} library models on {cluster.name}, {len(candidates(cluster))} candidate strategies, "
          f"GPUs 1..512 (powers of two): {rows} plan rows, ranked")
    print(f"plan over the whole library: {best:.3f} s (best of {args.repeats}; goal < 2 s)")


if __name__ == "__main__":
    main()
