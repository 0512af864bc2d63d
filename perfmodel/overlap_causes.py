"""The overlap term's inputs per setting: the framework's bucketing and launch policy, and how much
compute and collective slow each other when both run (perfmodel.overlap computes the schedule).

Framework policy (FRAMEWORK_POLICY; Strategy.bucket_mb, first_bucket_mb, cycle_time_s, and bucket_copies:
the gradient's copies into the buckets and back, charged by perfmodel.bucket_copy, whose docstring cites
them: 2 for DDP's default and Horovod's fusion buffer, 0 for a collective per tensor):
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
the ideal schedule) unless a profile measured their slowdowns (below; perfmodel.lab.profile.predictor
passes them as Strategy.overlap_compute_slowdown and overlap_comm_slowdown).
--overlap-efficiency E (Strategy.overlap_efficiency) overrides all of it: E times the ideal schedule's
hidden seconds, as before.

Measured slowdowns (solve_slowdowns; `perfmodel profile --workload` times them on CPU ranks,
perfmodel.lab.profile.overlap_timing): backprop alone takes a seconds, the collective alone c, and when
both start together backprop ends at a' and the collective at c'. Under perfmodel.overlap's model
(during the window W in which both run, backprop advances at 1/(1+sigma) and the collective at
1/(1+mu); whichever is left runs at full speed):
    the collective ends first (c' <= a'):  W = c',  mu = c'/c - 1,  a' = a + W sigma/(1+sigma)
                                            => sigma = (a' - a) / (c' - (a' - a))
    backprop ends first (a' < c'):         W = a',  sigma = a'/a - 1,  c' = W + c - W/(1+mu)
                                            => mu = W / (W + c - c') - 1
each clamped to [0, SLOWDOWN_MAX] (a collective that made no progress while backprop ran has
W + c - c' <= 0: mu = SLOWDOWN_MAX, i.e. nothing is hidden).
"""

from __future__ import annotations

from .specs import OVERLAP_EFFICIENCY, Cluster, SpecError, Strategy

CONCURRENT_SLOWDOWN = 1.0 - OVERLAP_EFFICIENCY  # 0.79: Agrawal et al. 2024, 21% of the ideal gain realized
TENSOR_BUCKET_MB = 1e-9  # smaller than any tensor: one bucket per tensor
HOROVOD_CYCLE_S = 5e-3
HOROVOD_FUSION_MB = 64.0

FRAMEWORK_POLICY: dict[str, dict[str, float]] = {
    "pytorch-ddp": {"bucket_mb": 25.0, "first_bucket_mb": 1.0, "cycle_time_s": 0.0, "bucket_copies": 2},
    "horovod": {"bucket_mb": HOROVOD_FUSION_MB, "first_bucket_mb": 0.0, "cycle_time_s": HOROVOD_CYCLE_S,
                "bucket_copies": 2},
    "tf-replicated": {"bucket_mb": TENSOR_BUCKET_MB, "first_bucket_mb": 0.0, "cycle_time_s": 0.0, "bucket_copies": 0},
    "default": {"bucket_mb": 25.0, "first_bucket_mb": 0.0, "cycle_time_s": 0.0, "bucket_copies": 2},
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


SLOWDOWN_MAX = 1e3  # a slowdown this large hides nothing: the concurrent party makes no progress


def solve_slowdowns(alone_compute_s: float, alone_comm_s: float, both_compute_s: float,
                    both_comm_s: float) -> tuple[float, float]:
    """(sigma, mu) from backprop alone, the collective alone, and the two end times (seconds from their
    common start) when both run together: the module docstring's inversion of perfmodel.overlap's
    concurrency model, each clamped to [0, SLOWDOWN_MAX]. Times must be > 0 and finite (SpecError)."""
    a, c, a2, c2 = (float(v) for v in (alone_compute_s, alone_comm_s, both_compute_s, both_comm_s))
    if not all(0 < v < float("inf") for v in (a, c, a2, c2)):
        raise SpecError(f"overlap timings must be > 0 and finite, got {a}, {c}, {a2}, {c2}")

    def clamp(v: float) -> float:
        return min(max(v, 0.0), SLOWDOWN_MAX)
    if c2 <= a2:  # the collective ends first: it ran concurrently all along
        lag = max(a2 - a, 0.0)
        sigma = SLOWDOWN_MAX if lag >= c2 else lag / (c2 - lag)
        return clamp(sigma), clamp(c2 / c - 1.0)
    done = a2 + c - c2  # collective-alone seconds of work done while backprop ran
    mu = SLOWDOWN_MAX if done <= 0 else a2 / done - 1.0
    return clamp(a2 / a - 1.0), clamp(mu)


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
