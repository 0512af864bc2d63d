"""The overlap term's inputs per setting: the framework's bucketing and launch policy, and how much
compute and collective slow each other when both run (perfmodel.overlap computes the schedule).

Framework policy (FRAMEWORK_POLICY; Strategy.bucket_mb, first_bucket_mb, cycle_time_s):
    pytorch-ddp  buckets of bucket_cap_mb = 25 MiB, the first one (the last layers' gradients) closed
                 at 1 MiB so communication starts early: torch.nn.parallel.DistributedDataParallel,
                 bucket_cap_mb=25 and torch.distributed._DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024
                 (torch/nn/parallel/distributed.py, torch/distributed/distributed_c10d.py); launched
                 as soon as a bucket is ready (autograd hooks): no cycle.
    horovod      the fusion buffer HOROVOD_FUSION_THRESHOLD = 64 MiB and the background loop's
                 HOROVOD_CYCLE_TIME = 5 ms (both before v0.21; 128 MiB and 1 ms from v0.21, Horovod
                 CHANGELOG v0.21.0, PR #2468): each bucket waits half a cycle on average.
    tf-replicated, tf-replicated-nccl
                 one collective per gradient tensor, started when the graph has produced it
                 (tf_cnn_benchmarks variable_update=replicated with its default gradient_repacking=0:
                 no packing of tensors): a bucket per tensor (TENSOR_BUCKET_MB), no cycle.
    others       perfmodel's default 25 MiB buckets, no cycle.

Interference (Strategy.overlap_compute_slowdown sigma, overlap_comm_slowdown mu; perfmodel.overlap):
given on the command line (``--overlap-slowdown SIGMA[,MU]``, e.g. from timing a step alone, the
collective alone and both at once on one node: sigma = step with / step alone - 1, mu = collective
with / collective alone - 1) or, by default on a GPU, CONCURRENT_SLOWDOWN for both: Agrawal et al.,
"Optimizing ML Concurrent Computation and Communication with GPU DMA Engines" (arXiv 2412.14335,
2024), measured that concurrent GEMMs and collectives realize on average 21% of the ideal overlap
gain; for a pair of equal alone-times t that is a concurrent run of (2 - 0.21) t, each kernel slowed
by sigma = mu = 0.79. With this symmetric slowdown a collective entirely inside backprop costs 0.79 of
its time (the old constant, 0.21 hidden), one that outlasts backprop or starts after it is charged by
the schedule itself. CPU ranks (a cluster without a GPU) keep the old constant (OVERLAP_EFFICIENCY on
the ideal schedule) until a profile measures their slowdowns.
--overlap-efficiency E (Strategy.overlap_efficiency) overrides all of it: E times the ideal schedule's
hidden seconds, as before.
"""

from __future__ import annotations

from .specs import OVERLAP_EFFICIENCY, Cluster, SpecError, Strategy

CONCURRENT_SLOWDOWN = 1.0 - OVERLAP_EFFICIENCY  # 0.79: Agrawal et al. 2024, 21% of the ideal gain realized
TENSOR_BUCKET_MB = 1e-9  # smaller than any tensor: one bucket per tensor
HOROVOD_CYCLE_S = 5e-3
HOROVOD_FUSION_MB = 64.0

FRAMEWORK_POLICY: dict[str, dict[str, float]] = {
    "pytorch-ddp": {"bucket_mb": 25.0, "first_bucket_mb": 1.0, "cycle_time_s": 0.0},
    "horovod": {"bucket_mb": HOROVOD_FUSION_MB, "first_bucket_mb": 0.0, "cycle_time_s": HOROVOD_CYCLE_S},
    "tf-replicated": {"bucket_mb": TENSOR_BUCKET_MB, "first_bucket_mb": 0.0, "cycle_time_s": 0.0},
    "default": {"bucket_mb": 25.0, "first_bucket_mb": 0.0, "cycle_time_s": 0.0},
}


def overlap_inputs(strategy: Strategy, cluster: Cluster) -> tuple[float, float, float]:
    """(sigma, mu, share of the schedule's hidden seconds kept) for ``strategy`` on ``cluster``: the
    explicit overlap_efficiency on the ideal schedule; else the given slowdowns; else, on a GPU,
    CONCURRENT_SLOWDOWN for both; else (CPU ranks) OVERLAP_EFFICIENCY on the ideal schedule."""
    if strategy.overlap_efficiency is not None:
        return 0.0, 0.0, float(strategy.overlap_efficiency)
    sigma, mu = strategy.overlap_compute_slowdown, strategy.overlap_comm_slowdown
    if sigma is not None or mu is not None:
        return float(sigma or 0.0), float(mu if mu is not None else sigma or 0.0), 1.0
    if cluster.peak_flops:
        return CONCURRENT_SLOWDOWN, CONCURRENT_SLOWDOWN, 1.0
    return 0.0, 0.0, OVERLAP_EFFICIENCY


def parse_slowdown(text: str | None) -> tuple[float | None, float | None]:
    """--overlap-slowdown "SIGMA" or "SIGMA,MU" as (sigma, mu), mu = sigma when not given; (None, None)
    for None. Numbers >= 0 and finite, else SpecError."""
    if text is None:
        return None, None
    try:
        vals = [float(v) for v in text.split(",")]
    except ValueError:
        vals = []
    if not 1 <= len(vals) <= 2 or not all(0 <= v < float("inf") for v in vals):
        raise SpecError(f"--overlap-slowdown takes SIGMA or SIGMA,MU, numbers >= 0, got {text!r}")
    return vals[0], vals[-1]
