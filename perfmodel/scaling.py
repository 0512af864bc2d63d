"""The throughput model: TernGrad's strong/weak scaling model generalized to every strategy.

One call predicts a whole sweep of GPU counts as numpy expressions (no Python loop over GPU counts).

Per iteration on W GPUs (ALGORITHMS.md section 2):
    weak scaling  (per-GPU batch b):   T = t_compute(b) + t_comm - hidden;   throughput = W b / T
    strong scaling (total batch K):    T = t_compute(K/W) + t_comm - hidden; throughput = K / T
where hidden = overlap * min(t_comm, t_compute). With ``allreduce="paper"`` the strong form is the
paper's exactly, T = (t_c(K) - t_cg) / W + t_comm, and t_cg (the GPU->CPU copy inside the profiled
t_c) is taken out of t_compute in both forms because the paper's t_comm counts that copy again.
On one GPU nothing is communicated and T = t_c(b) - t_cg.

Strategies:
    ssgd      allreduce of the gradient every step (fp32, fp16 or bf16 on the wire).
    terngrad  scaler sharing (allreduce of one float per tensor), the fp32 tensors' allreduce (the
              classifier layer by default, as the trainers), then the ternary codes as the trainer's
              exchange sends them (perfmodel.compression): levels = allreduce of the integer sum
              (1 byte per element up to 127 GPUs, 2 up to 32767); ps = alltoall of 2-bit shards
              plus allgather of ceil(log2(2W+1))-bit sums; allgather = every GPU's 2-bit codes to
              every GPU. The paper's form charges its parameter server: push 2 bits and pull
              log2(2W+1) bits per element on full-duplex links, so |theta| is the larger, the pull
              (scalers and fp32 tensors included). Encoding and the decoding of each copy received are computation (column
              t_compress_s), charged on every GPU count, one included: a 1-GPU TernGrad run still
              ternarizes.
    daso      node-local gradient allreduce every batch; every B batches one GPU per node allreduces
              the parameters across nodes (bf16 and blocking when W=0; fp32 and non-blocking otherwise:
              its time, times daso_nonblocking_factor, is hidden behind the next W batches of compute
              with daso_progress "async", and paid in full with "wait") and broadcasts them inside
              its node.
    asgd      parameter server: workers never wait for each other; a worker's iteration is its
              compute plus its own push/pull; the servers' links cap the aggregate rate.
Stragglers (gamma CVB): synchronous strategies wait for the slowest of W (DASO's non-blocking phase:
of the g GPUs of a node); ASGD runs at the mean rate of its machines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import collectives as coll
from .compression import (aggregate_bits, dense_bytes, encode_seconds, level_bytes, ps_shard_elems,
                          terngrad_bytes, ternary_split)
from .specs import Cluster, SpecError, Strategy, Workload
from .stragglers import CVB, async_speedup_factor, sync_slowdown

SCALINGS = ("strong", "weak")
COLUMNS = ("strategy", "gpus", "nodes", "batch_per_gpu", "t_compute_s", "t_comm_s", "t_iter_s",
           "throughput", "speedup", "efficiency", "bytes_per_gpu")


@dataclass(frozen=True)
class Prediction:
    """A sweep over GPU counts for one strategy. Arrays are aligned with ``gpus``.

    t_compute_s: seconds of compute per iteration (stragglers included, TernGrad's encoding not: it
    is extra["t_compress_s"], added to t_iter_s); t_comm_s: seconds of
    communication per iteration (amortized for DASO, the worker's own exchange for ASGD), before
    overlap; t_iter_s: seconds per iteration; throughput: samples/s; bytes_per_gpu: bytes per step,
    the bytes one GPU sends per iteration on the wire with the algorithm its collectives use (ring
    allreduce 2(W-1)/W n, ring allgather and pairwise alltoall (W-1) blocks; the trainers' run logs
    count the same, see trainers.log), amortized over DASO's B; extra: strategy-specific columns (ASGD:
    server load, staleness).
    """

    strategy: str
    workload: str
    cluster: str
    scaling: str
    gpus: np.ndarray
    nodes: np.ndarray
    batch_per_gpu: np.ndarray
    t_compute_s: np.ndarray
    t_comm_s: np.ndarray
    t_iter_s: np.ndarray
    throughput: np.ndarray
    speedup: np.ndarray
    efficiency: np.ndarray
    bytes_per_gpu: np.ndarray
    compute_source: str
    extra: dict[str, np.ndarray]

    def records(self) -> list[dict]:
        """One dict per GPU count (plain Python numbers), the JSON/CSV rows."""
        out = []
        for i in range(len(self.gpus)):
            row = {"strategy": self.strategy, "workload": self.workload, "cluster": self.cluster,
                   "scaling": self.scaling, "gpus": int(self.gpus[i]), "nodes": int(self.nodes[i])}
            for name in COLUMNS[3:]:
                row[name] = float(getattr(self, name)[i])
            for name, arr in self.extra.items():
                row[name] = float(arr[i])
            out.append(row)
        return out


def _check_gpus(gpus: np.ndarray, cluster: Cluster, strategy: Strategy) -> None:
    if gpus.ndim != 1 or len(gpus) == 0:
        raise SpecError("gpus must be a non-empty list of GPU counts")
    if np.any(gpus < 1) or np.any(gpus != np.floor(gpus)):
        raise SpecError(f"GPU counts must be positive integers, got {gpus[(gpus < 1) | (gpus != np.floor(gpus))][:3].tolist()}")
    g = cluster.gpus_per_node
    needs_full_nodes = strategy.name == "daso" or strategy.allreduce in ("paper", "hierarchical")
    if needs_full_nodes:
        bad = gpus[(gpus > g) & (gpus % g != 0)]
        if len(bad):
            why = "daso" if strategy.name == "daso" else f"allreduce {strategy.allreduce}"
            raise SpecError(f"{why} needs whole nodes: {int(bad[0])} GPUs is not a multiple of "
                            f"{g} GPUs per node on {cluster.name}")


def predict(workload: Workload, cluster: Cluster, strategy: Strategy, gpus, *,
            scaling: str = "weak", batch: int = 32) -> Prediction:
    """Predict one strategy for every GPU count in ``gpus`` (1-D integers).

    batch: per-GPU batch (weak scaling) or total batch (strong scaling), in samples.
    """
    if scaling not in SCALINGS:
        raise SpecError(f"unknown scaling {scaling!r}; choose strong or weak")
    if isinstance(batch, bool) or int(batch) != batch or batch < 1:
        raise SpecError(f"batch must be a positive integer, got {batch!r}")
    w = np.asarray(gpus, dtype=float).ravel()
    _check_gpus(w, cluster, strategy)
    nodes, _ = coll.placement(w, cluster)
    curve, scale, source = workload.compute_for(cluster)
    copy_s = curve.copy_s * scale
    paper = strategy.allreduce == "paper"

    # compute per iteration
    if scaling == "weak":
        b = np.full_like(w, float(batch))
        t_comp = curve(b) * scale - copy_s
        samples = w * batch
    else:
        b = batch / w
        if paper:
            t_comp = (curve(float(batch)) * scale - copy_s) / w
        else:
            t_comp = curve(b) * scale - copy_s
        samples = np.full_like(w, float(batch))
    t_comp = np.maximum(t_comp, 0.0)
    single = float(np.atleast_1d(curve(float(batch)) * scale - copy_s)[0])  # one GPU, whole batch

    comm, nbytes, extra, straggle_over = _STRATEGY_COMM[strategy.name](workload, cluster, strategy, w, t_comp)

    if strategy.straggler_cv > 0 or strategy.straggler_machine_cv > 0:
        model = straggler_model(strategy)
        if strategy.name == "asgd":
            t_comp = t_comp / async_speedup_factor(model)
        else:
            t_comp = t_comp * sync_slowdown(straggle_over, model)

    comm = np.where(w > 1, comm, 0.0)
    nbytes = np.where(w > 1, nbytes, 0.0)
    hidden = strategy.overlap * np.minimum(comm, t_comp)
    t_iter = t_comp + comm - hidden + extra.get("t_compress_s", 0.0)
    throughput = samples / t_iter
    if strategy.name == "asgd":
        # the servers' links bound the aggregate rate; report the bandwidth they must sustain
        exchange_bytes = extra.pop("exchange_bytes")
        cap = extra.pop("server_exchanges_per_s")
        worker_rate = w / t_iter  # exchanges per second if the servers never queue
        rate = np.where(w > 1, np.minimum(worker_rate, cap), worker_rate)
        t_iter = w / rate
        throughput = samples / t_iter
        extra["server_bandwidth_Bps"] = np.where(w > 1, rate * exchange_bytes, 0.0)
        extra["server_utilization"] = np.where(w > 1, rate / cap, 0.0)
    single_tp = batch / single
    speedup = throughput / single_tp
    return Prediction(strategy.name, workload.name, cluster.name, scaling, w.astype(int), nodes.astype(int),
                      b, t_comp, comm, t_iter, throughput, speedup, speedup / w, nbytes, source, extra)


def straggler_model(strategy: Strategy) -> CVB:
    """The CVB model of a strategy's straggler options (mean 1).

    straggler_cv spreads one worker's batch times around its machine's mean; straggler_machine_cv
    spreads the machine means (heterogeneous workers). Without machine spread this is the CVB
    homogeneous algorithm, whose task spread is its V_mach; with it, the heterogeneous one.
    """
    if strategy.straggler_machine_cv > 0:
        return CVB(1.0, v_task=strategy.straggler_cv, v_mach=strategy.straggler_machine_cv, heterogeneous=True)
    return CVB(1.0, v_task=0.0, v_mach=strategy.straggler_cv, heterogeneous=False)


# ---------------------------------------------------------------- communication per strategy
# Each returns (t_comm seconds, bytes sent per GPU per iteration, extra columns, worker count the
# synchronous step waits for).

def _ssgd_comm(workload: Workload, cluster: Cluster, strategy: Strategy, w: np.ndarray, t_comp: np.ndarray):
    n = dense_bytes(workload, "fp32" if strategy.allreduce == "paper" else strategy.wire)
    t = coll.cluster_allreduce(strategy.allreduce, n, w, cluster)
    return t, _allreduce_bytes(strategy.allreduce, n, w), {}, w


def _allreduce_bytes(algorithm: str, n, w: np.ndarray) -> np.ndarray:
    """Bytes one rank sends in an allreduce of n bytes (ring-like 2(p-1)/p n; log-step forms n log2 p)."""
    if algorithm in ("ring", "rabenseifner", "hierarchical"):
        return 2 * (w - 1) / w * n
    steps = np.ceil(np.log2(np.maximum(w, 1.0)))
    return (2 * steps if algorithm == "tree" else steps) * np.asarray(n, dtype=float)


def _terngrad_comm(workload: Workload, cluster: Cluster, strategy: Strategy, w: np.ndarray, t_comp: np.ndarray):
    split = ternary_split(workload, strategy.terngrad_min_elems, strategy.terngrad_fp32_last)
    scalers = 4.0 * split.ternary_tensors
    fp32 = 4.0 * split.fp32_elems
    exchange = strategy.terngrad_exchange
    # compression is computation: charged on every GPU count, never hidden behind backprop
    encode = encode_seconds(split.ternary_elems, strategy.terngrad_encode_elems_per_s)
    decode_one = encode_seconds(split.ternary_elems, strategy.terngrad_decode_elems_per_s)
    copies = {"allgather": w, "ps": np.full_like(w, 2.0), "levels": np.ones_like(w)}[exchange]
    if strategy.allreduce == "paper":
        # the paper's parameter server: push one worker's 2-bit gradient, pull the sum at log2(2W+1)
        # bits per element ("reduces by a factor of 32/log2(1+2N)"). Appendix B charges one |theta|,
        # one direction of fp32's symmetric exchange; on full-duplex links push and pull travel at
        # once, so TernGrad's |theta| is the larger direction: the pull (the push for W = 1)
        n = terngrad_bytes(split, np.maximum(2.0, np.log2(2 * w + 1)))
        extra = {"t_compress_s": encode + np.ones_like(w) * decode_one}
        return coll.paper_allreduce(n, w, cluster), n * np.log2(np.maximum(w, 1)), extra, w
    extra = {"t_compress_s": encode + copies * decode_one}
    alg = strategy.allreduce
    # scaler sharing (allreduce(max) of one float per ternary tensor) and the fp32 tensors' allreduce
    t = coll.cluster_allreduce(alg, scalers, w, cluster) + coll.cluster_allreduce(alg, fp32, w, cluster)
    sent = _allreduce_bytes(alg, scalers, w) + _allreduce_bytes(alg, fp32, w)
    if exchange == "levels":
        n = split.ternary_elems * level_bytes(w)
        t = t + coll.cluster_allreduce(alg, n, w, cluster)
        sent = sent + _allreduce_bytes(alg, n, w)
    elif exchange == "ps":
        shard = ps_shard_elems(split.ternary_elems, w)
        push, pull = shard / 4.0, shard * aggregate_bits(w) / 8.0
        t = t + coll.cluster_alltoall(push, w, cluster) + coll.cluster_allgather(pull, w, cluster)
        sent = sent + (w - 1) * (push + pull)
    else:
        t = t + coll.cluster_allgather(split.packed_bytes, w, cluster)
        sent = sent + (w - 1) * split.packed_bytes
    return t, sent, extra, w


def _daso_comm(workload: Workload, cluster: Cluster, strategy: Strategy, w: np.ndarray, t_comp: np.ndarray):
    nodes, g = coll.placement(w, cluster)
    n32 = dense_bytes(workload, "fp32")
    local_cluster = cluster  # the local group is one node: placement(g) gives M = 1
    t_local = coll.cluster_allreduce(strategy.allreduce if strategy.allreduce != "paper" else "ring",
                                     n32, g, local_cluster)
    blocking = strategy.daso_W == 0
    n_global = dense_bytes(workload, "bf16") if blocking else n32
    t_global = coll.ring_allreduce(n_global, nodes, cluster.network.alpha, cluster.network.beta)
    t_bcast = coll.tree_broadcast(n32, g, cluster.intra.alpha, cluster.intra.beta)
    if blocking:
        exposed = t_global
    else:  # the non-blocking sync, hidden behind W batches only if the network moves it meanwhile
        t_global = t_global * strategy.daso_nonblocking_factor
        hidden = strategy.daso_W * t_comp if strategy.daso_progress == "async" else 0.0
        exposed = np.maximum(t_global - hidden, 0.0)
    t = t_local + (exposed + np.where(nodes > 1, t_bcast, 0.0)) / strategy.daso_B
    t = np.where(nodes > 1, t, t_local)
    sent = 2 * (g - 1) / g * n32 + np.where(nodes > 1, 2 * (nodes - 1) / nodes * n_global / strategy.daso_B
                                            / g, 0.0)
    extra = {"t_global_sync_s": np.where(nodes > 1, t_global, 0.0), "daso_B": np.full_like(w, strategy.daso_B),
             "daso_W": np.full_like(w, strategy.daso_W)}
    return t, sent, extra, (w if blocking else g)


def _asgd_comm(workload: Workload, cluster: Cluster, strategy: Strategy, w: np.ndarray, t_comp: np.ndarray):
    n = dense_bytes(workload, "fp32")
    worker, server = coll.ps_exchange(n, w, cluster, strategy.ps_servers)
    with np.errstate(divide="ignore"):  # infinite bandwidth: no cap
        cap = 1.0 / server
    extra = {"exchange_bytes": np.full_like(w, n),
             "server_exchanges_per_s": cap,
             "mean_staleness": w - 1}
    return worker, np.full_like(w, 2 * n), extra, w


_STRATEGY_COMM = {
    "ssgd": _ssgd_comm,
    "terngrad": _terngrad_comm,
    "daso": _daso_comm,
    "asgd": _asgd_comm,
}


def predict_many(workload: Workload, cluster: Cluster, strategies: list[Strategy], gpus, *,
                 scaling: str = "weak", batch: int = 32) -> list[Prediction]:
    """Predict several strategies over the same GPU counts."""
    return [predict(workload, cluster, s, gpus, scaling=scaling, batch=batch) for s in strategies]
