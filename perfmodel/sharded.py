"""Sharded data parallelism: ZeRO stages 1-3 (Rajbhandari et al., SC20) and PyTorch FSDP FULL_SHARD.

n: the gradient (= parameter) bytes in the wire format; W GPUs; K micro-batches per step (accumulate);
t_m = t_compute / K, of which BACKWARD_SHARE is backward and the rest forward; e = overlap_efficiency.
A reduce-scatter and an all-gather of n bytes are each one half of a ring allreduce: (W-1) steps of
n / W bytes on the slowest ring link, RS(n) = AG(n) = collectives.cluster_allgather(n / W).
Per step:
    zero1   reduce-scatter the gradients once (bucketed, overlapped with the last backward), all-gather
            the updated parameters once after the optimizer step (exposed):
                t_comm = RS + AG, hidden = e min(RS, BACKWARD_SHARE t_m); bytes 2 (W-1)/W n
    zero2   the same, but the gradients are reduce-scattered after every micro-batch (each rank keeps
            only its shard): t_comm = K RS + AG, hidden = e K min(RS, BACKWARD_SHARE t_m);
            bytes (K + 1) (W-1)/W n
    zero3   parameters are sharded too: every micro-batch all-gathers them for the forward and again for
    fsdp    the backward, and reduce-scatters the gradients: t_comm = K (2 AG + RS); with prefetch (the next
            layer's gather while the current one computes) hidden = e K (min(AG, (1 - BACKWARD_SHARE) t_m)
            + min(AG + RS, BACKWARD_SHARE t_m)), without it hidden = e K min(RS, BACKWARD_SHARE t_m);
            bytes 3 K (W-1)/W n (the ZeRO paper's 1.5x of data parallelism's 2 (W-1)/W n at K = 1).
FSDP FULL_SHARD moves what ZeRO-3 moves; the two differ in the settings `perfmodel plan` prints.
"""

from __future__ import annotations

import numpy as np

from . import collectives as coll
from .compression import dense_bytes
from .overlap import BACKWARD_SHARE
from .overlap_causes import overlap_inputs
from .specs import Cluster, Strategy, Workload


def reduce_scatter_seconds(n: float, w: np.ndarray, cluster: Cluster) -> np.ndarray:
    """Seconds of a ring reduce-scatter of n bytes over W GPUs: (W-1) steps of n/W bytes."""
    return coll.cluster_allgather(n / np.maximum(w, 1.0), w, cluster)


def all_gather_seconds(n: float, w: np.ndarray, cluster: Cluster) -> np.ndarray:
    """Seconds of a ring all-gather that leaves n bytes on every GPU: (W-1) steps of n/W bytes."""
    return coll.cluster_allgather(n / np.maximum(w, 1.0), w, cluster)


def collective_counts(name: str, k: int) -> tuple[int, int]:
    """(all-gathers, reduce-scatters) of the whole gradient per step with K micro-batches."""
    return {"zero1": (1, 1), "zero2": (1, k), "zero3": (2 * k, k), "fsdp": (2 * k, k)}[name]


def sharded_bytes(name: str, n: float, w, k: int = 1) -> np.ndarray:
    """Bytes one GPU sends per step: (all-gathers + reduce-scatters) x (W-1)/W n."""
    w = np.asarray(w, dtype=float)
    ag, rs = collective_counts(name, k)
    return (ag + rs) * (w - 1) / w * n


def sharded_comm(workload: Workload, cluster: Cluster, strategy: Strategy, w: np.ndarray, t_comp: np.ndarray):
    """(t_comm, bytes per GPU, extra columns, waited-for workers) of a sharded strategy; extra carries
    t_own_hidden_s, the seconds hidden behind compute (perfmodel.scaling.predict uses it as t_hidden_s)."""
    k = int(getattr(workload, "accumulate", 1) or 1)
    n = dense_bytes(workload, strategy.wire)
    ag1, rs1 = all_gather_seconds(n, w, cluster), reduce_scatter_seconds(n, w, cluster)
    n_ag, n_rs = collective_counts(strategy.name, k)
    t = n_ag * ag1 + n_rs * rs1
    t_m = t_comp / k
    backward = BACKWARD_SHARE * t_m
    if strategy.name in ("zero3", "fsdp") and strategy.zero_prefetch:
        hidden = k * (np.minimum(ag1, (1.0 - BACKWARD_SHARE) * t_m) + np.minimum(ag1 + rs1, backward))
    else:
        hidden = (1 if strategy.name == "zero1" else k) * np.minimum(rs1, backward)
    # the share of the ideal overlap realized: an explicit efficiency, else what the collective's slowdown
    # while backprop runs leaves of it (perfmodel.overlap_causes: 0.21 either way by default)
    _, mu, kept = overlap_inputs(strategy, cluster)
    extra = {"t_own_hidden_s": kept * max(0.0, 1.0 - mu) * hidden,
             "allgathers": np.full_like(w, n_ag), "reduce_scatters": np.full_like(w, n_rs)}
    return t, sharded_bytes(strategy.name, n, w, k), extra, w
