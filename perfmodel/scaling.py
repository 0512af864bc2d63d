"""The throughput model: TernGrad's strong/weak scaling model generalized to every strategy.

One call predicts a whole sweep of GPU counts as numpy expressions (no Python loop over GPU counts).

Per iteration on W GPUs (docs/model.md sections 2 and 5):
    weak scaling  (per-GPU batch b):   T = A t_c(b) + t_comm - hidden + t_copy + o;       throughput = A W b / T
    strong scaling (total batch K):    T = A t_c(K/(W A)) + t_comm - hidden + t_copy + o;  throughput = K / T
A: micro-batches per exchange (the workload's ``accumulate``, 1 by default), whose optimizer step t_u
(the compute curve's ``update_s``, where it is known apart) is paid once: A t_c stands for
A (t_c - t_u) + t_u; t_copy: the copies of the gradient into the framework's buckets and back, and its
casts to a narrower wire and back, at the GPU's memory bandwidth, ssgd's and DASO's node-local DDP's
(``bucket_copies``, ``wire_cast``, perfmodel.bucket_copy; column t_copy_s, 0 on CPU ranks);
o: the framework's cost per multi-GPU step (``step_overhead_s``, 0 by default). A framework that
launches collectives from a periodic loop (``cycle_time_s`` = T, Horovod) starts each bucket T/2 after
it is ready on average; the last bucket's wait is part of t_comm and never hidden. Concurrent compute and
collective kernels slow each other: the schedule runs with the slowdowns perfmodel.overlap_causes gives
for the setting, or an explicit ``overlap_efficiency`` e keeps e of the ideal schedule's hidden seconds.
hidden follows from the gradient bucket schedule (perfmodel.overlap: buckets start their communication
when backprop has produced them, one after another on one stream, within the last micro-batch's
backward) for ssgd, sync-ps, byteps and
DASO's node-local allreduce (which HeAT runs with torch DDP), and is 0 for terngrad and asgd; a
constant ``overlap`` replaces it by overlap * min(t_comm, t_compute). With ``allreduce="paper"`` there
is no overlap unless a constant is given, and the strong form is the paper's exactly, T = (t_c(K) - t_cg) / W + t_comm, and t_cg (the GPU->CPU copy inside the profiled
t_c) is taken out of t_compute in both forms because the paper's t_comm counts that copy again.
On one GPU nothing is communicated and T = t_c(b) - t_cg.

Strategies:
    ssgd      allreduce of the gradient every step (fp32, fp16 or bf16 on the wire).
    terngrad  scaler sharing (allreduce of one float per tensor), the fp32 tensors' allreduce (the
              classifier layer by default, as the trainers), then the ternary codes as the trainer's
              exchange sends them (perfmodel.compression): levels = allreduce of the integer sum
              (1 byte per element up to 127 GPUs, 2 up to 32767; half a byte at 2..7 GPUs with
              terngrad_lanes "packed", MPI's 4-bit lanes); ps = alltoall of 2-bit shards
              plus allgather of ceil(log2(2W+1))-bit sums; allgather = every GPU's 2-bit codes to
              every GPU. The paper's form charges its parameter server: push 2 bits and pull
              log2(2W+1) bits per element on full-duplex links, so |theta| is the larger, the pull
              (scalers and fp32 tensors included). Encoding, the decoding of each copy received and
              the sum's conversion to the float mean (once) are computation (column t_compress_s),
              charged on every GPU count, one included: a 1-GPU TernGrad run still ternarizes; ps
              decodes twice, or, where measured (terngrad_ps_aggregate_elems_per_s), does its own
              work of W x shard elements: the shards' sum, its b-bit packing, the sums' unpacking.
              Each collective that follows the codec's own work (the codes' exchange, ps's
              Allgather after the shard's sum, the fp32 tensors' Allreduce after the decoding:
              compression.codec_sync_points) adds sync_wait_s to t_comm (column t_sync_wait_s):
              the slowest rank's lead and, on shared cores, the scheduling of the hops.
    daso      node-local gradient allreduce every batch (bucketed and overlapped with backprop, as torch
              DDP inside HeAT's DataParallelMultiGPU does); every B batches one GPU per node allreduces
              the parameters across nodes (bf16 and blocking when W=0; fp32 and non-blocking otherwise:
              its time, times daso_nonblocking_factor, is hidden behind the next W batches of compute
              with daso_progress "async", and paid in full with "wait"; where the cluster carries the
              link measured on that group itself, network_ops "global_iallreduce", the fp32 ring over
              the nodes on that link with no factor) and broadcasts them inside its node.
    asgd      parameter server: workers never wait for each other; a worker's iteration is its
              compute plus its own push/pull (and the server's update, ps_update_s / S); the servers'
              time per exchange (link, plus that update) caps the aggregate rate.
    sync-ps   synchronous parameter server: K servers (ps_servers) hold n/K each, on the worker nodes
              or on dedicated nodes (ps_placement); a node sums its GPUs first (ps_local_reduce) or
              every GPU pushes; push, then pull (collectives.sync_ps_exchange).
    zero1-3, fsdp  sharded data parallelism: reduce-scatter and all-gather per step (perfmodel.sharded).
    byteps    BytePS push-pull: intra-node reduce, then summation on the GPU machines and on
              ps_servers CPU machines (ps_placement "dedicated"; "colocated" means none), split as
              the BytePS paper's optimum (collectives.byteps_exchange).
Collectives for ssgd: every ``allreduce`` of perfmodel.collectives, ``nccl`` (NCCL's own ring/tree and
protocol choice by message size, perfmodel.nccl), ``ompi`` (the algorithm Open MPI 5.0's tuned rules
run for each GPU count and message size, perfmodel.ompi_tuned), ``reduce-broadcast``, each on device
buffers or staged through host memory (``staging="host"``; not nccl).
Stragglers (gamma CVB): synchronous strategies wait for the slowest of W (DASO's non-blocking phase:
of the g GPUs of a node); ASGD runs at the mean rate of its machines.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from . import collectives as coll
from .bucket_copy import bucket_copy_seconds
from .codec_memory import codec_rates
from .overlap import BACKWARD_SHARE, exposed_time, workload_buckets
from .overlap_causes import overlap_inputs
from .compression import (TernarySplit, codec_sync_points, dense_bytes, encode_seconds, ps_aggregate_seconds,
                          terngrad_bytes, ternary_split)
from .wire import allgather_sent_bytes, levels_bytes, levels_lane_bits, ps_blocks, ps_sent_bytes
from .ompi_tuned import per_model_algorithm
from .sharded import sharded_comm
from .specs import TERNGRAD_ALLGATHER, TERNGRAD_LEVELS, TERNGRAD_PS, Cluster, SpecError, Strategy, Workload
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
    server load, staleness;
    every strategy: t_hidden_s, the seconds of communication hidden behind backprop, and t_straggler_s,
    the part of t_compute_s that is the wait for the slowest worker, 0 without stragglers).
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


def needs_whole_nodes(strategy: Strategy) -> bool:
    """DASO, and the paper's and the hierarchical allreduce, need every node full (or one partial node)."""
    return strategy.name == "daso" or strategy.allreduce in ("paper", "hierarchical")


def unrunnable(gpus, cluster: Cluster, strategy: Strategy, *, scaling: str = "weak", batch: int = 32,
               accumulate: int = 1) -> dict[str, np.ndarray]:
    """GPU counts a strategy cannot run: {reason: the counts}, empty when all can run.

    Reasons: a count that splits a node where the strategy needs whole nodes; strong scaling with fewer
    than one sample per GPU per micro-batch (total batch < W x accumulate).
    """
    w = np.asarray(gpus, dtype=float).ravel()
    out: dict[str, np.ndarray] = {}
    g = cluster.gpus_per_node
    if needs_whole_nodes(strategy):
        bad = w[(w > g) & (w % g != 0)]
        if len(bad):
            why = "daso" if strategy.name == "daso" else f"allreduce {strategy.allreduce}"
            out[f"{why} needs whole nodes: not a multiple of {g} GPUs per node on {cluster.name}"] = bad
    if scaling == "strong":
        bad = w[batch < w * accumulate]
        if len(bad):
            k = f" x {accumulate} micro-batches" if accumulate > 1 else ""
            out[f"strong scaling with total batch {batch}: fewer than one sample per GPU{k}"] = bad
    return out


def check_gpu_counts(cluster: Cluster, gpus) -> None:
    """GPU counts beyond the cluster's nodes are an error (SpecError) unless it is open-ended (max_nodes None)."""
    if cluster.max_nodes is None:
        return
    limit = cluster.max_nodes * cluster.gpus_per_node
    over = [int(g) for g in np.asarray(gpus).ravel() if g > limit]
    if over:
        need = math.ceil(max(over) / cluster.gpus_per_node)
        raise SpecError(f"{max(over)} GPUs need {need} nodes of {cluster.gpus_per_node}; cluster {cluster.name} has "
                        f"{cluster.max_nodes} nodes ({limit} GPUs); give --nodes N to model a larger one")


def _check_gpus(gpus: np.ndarray, cluster: Cluster, strategy: Strategy, scaling: str, batch: int,
                accumulate: int) -> None:
    if gpus.ndim != 1 or len(gpus) == 0:
        raise SpecError("gpus must be a non-empty list of GPU counts")
    if np.any(gpus < 1) or np.any(gpus != np.floor(gpus)):
        raise SpecError(f"GPU counts must be positive integers, got {gpus[(gpus < 1) | (gpus != np.floor(gpus))][:3].tolist()}")
    check_gpu_counts(cluster, gpus)
    for why, bad in unrunnable(gpus, cluster, strategy, scaling=scaling, batch=batch, accumulate=accumulate).items():
        raise SpecError(f"{why} (at {int(bad[0])} GPUs)")


def predict(workload: Workload, cluster: Cluster, strategy: Strategy, gpus, *,
            scaling: str = "weak", batch: int = 32) -> Prediction:
    """Predict one strategy for every GPU count in ``gpus`` (1-D integers).

    batch: per-GPU micro-batch (weak scaling) or total batch per exchange (strong scaling), in samples.
    A count that runs part of one node uses the intra link's figure for that many GPUs where the link
    has one (``Cluster.intra_for``: a hybrid cube-mesh's GPUs 0..g-1 share fewer NVLinks).
    Raises SpecError for a count the strategy cannot run (see ``unrunnable``) or beyond the cluster's
    nodes.
    """
    w = np.asarray(gpus, dtype=float).ravel()
    if scaling not in SCALINGS:
        raise SpecError(f"unknown scaling {scaling!r}; choose strong or weak")
    if isinstance(batch, bool) or int(batch) != batch or batch < 1:
        raise SpecError(f"batch must be a positive integer, got {batch!r}")
    _check_gpus(w, cluster, strategy, scaling, batch, int(getattr(workload, "accumulate", 1) or 1))
    return _predict(workload, cluster, strategy, w, scaling, batch)


@functools.lru_cache(maxsize=256)
def _intra_groups(w_bytes: bytes, cluster: Cluster) -> tuple[tuple[np.ndarray, Cluster], ...]:
    """((indices into w, the cluster they run on), ...) for the counts w in ``w_bytes`` (float64): a count with
    its own intra figure (a part of one node, ``Cluster.intra_for``) apart, every other count on ``cluster``
    as it is. Read-only arrays; once per count list and cluster (a plan's candidates share them)."""
    w = np.frombuffer(w_bytes)
    out, rest = [], np.ones(len(w), dtype=bool)
    for g, _ in cluster.intra_partial():
        mask = w == g
        if mask.any():
            out.append((np.flatnonzero(mask), _partial_cluster(cluster, g)))
            rest &= ~mask
    if rest.any() or not out:
        out.append((np.flatnonzero(rest), cluster))
    for i, _ in out:
        i.setflags(write=False)
    return tuple(out)


def _stitch(groups: tuple[tuple[np.ndarray, Cluster], ...], w: np.ndarray, values: list) -> np.ndarray:
    """One value per intra group of ``w`` (``_intra_groups``' ``groups``; over the group's counts on the last
    axis, or one for all of them) as one array over the counts in the order of ``w``."""
    lead = next((np.shape(v)[:-1] for v, (i, _) in zip(values, groups) if np.shape(v)[-1:] == i.shape), ())
    out = np.empty(lead + w.shape, dtype=np.result_type(*values))
    for v, (i, _) in zip(values, groups):
        out[..., i] = v
    return out


def _comm(workload: Workload, cluster: Cluster, strategy: Strategy, w: np.ndarray, t_comp: np.ndarray) -> tuple:
    """The strategy's communication (``_STRATEGY_COMM``'s tuple) for every count in ``w``, each intra group
    (``_intra_groups``) on its own cluster: the groups' arrays, a bucket schedule's cost included, stitched
    back in the order of ``w``. Only the communication depends on the intra link, so the rest of a
    prediction runs once over all counts."""
    fn = _STRATEGY_COMM[strategy.name]
    groups = _intra_groups(w.tobytes(), cluster)
    if len(groups) == 1:
        return fn(workload, groups[0][1], strategy, w, t_comp)
    t_comp = np.broadcast_to(t_comp, w.shape)
    results = [fn(workload, c, strategy, w[i], t_comp[i]) for i, c in groups]
    stitch = functools.partial(_stitch, groups, w)
    first = results[0]
    out = [stitch([r[0] for r in results]), stitch([r[1] for r in results]),
           {k: stitch([r[2][k] for r in results]) for k in first[2]}, stitch([r[3] for r in results])]
    if len(first) > 4:  # the bucket schedule: (cost(nbytes[:, None]), replaced seconds, bytes per element)
        out.append((lambda nb: stitch([r[4][0](nb) for r in results]), stitch([r[4][1] for r in results]),
                    first[4][2]))
    return tuple(out)


def _sync_slowdown(w: np.ndarray, cluster: Cluster, workers: np.ndarray, model: CVB) -> np.ndarray:
    """stragglers.sync_slowdown of ``workers`` (aligned with ``w``), taken per intra group: its quadrature
    grid reaches past the largest count it is given, so a partial node's count keeps the figure it had
    when each group was predicted on its own. Read-only; once per count list (a plan's candidates share it)."""
    workers = np.broadcast_to(np.asarray(workers, dtype=float), w.shape)
    return _group_slowdown(w.tobytes(), cluster, workers.tobytes(), model)


@functools.lru_cache(maxsize=256)
def _group_slowdown(w_bytes: bytes, cluster: Cluster, workers_bytes: bytes, model: CVB) -> np.ndarray:
    """_sync_slowdown of the float64 counts and workers in ``w_bytes`` and ``workers_bytes``."""
    w, workers = np.frombuffer(w_bytes), np.frombuffer(workers_bytes)
    groups = _intra_groups(w_bytes, cluster)
    out = (sync_slowdown(workers, model) if len(groups) == 1 else
           _stitch(groups, w, [sync_slowdown(workers[i], model) for i, _ in groups]))
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=64)
def _partial_cluster(cluster: Cluster, gpus: int) -> Cluster:
    """``cluster`` with the intra link of a run on GPUs 0..gpus-1 (built once per cluster and count: a plan
    predicts thousands of candidates on one cluster)."""
    return cluster.with_link("intra", cluster.intra_for(gpus))


def _predict(workload: Workload, cluster: Cluster, strategy: Strategy, w: np.ndarray, scaling: str,
             batch: int) -> Prediction:
    """predict, its arguments already checked."""
    k = int(getattr(workload, "accumulate", 1) or 1)
    nodes, _ = coll.placement(w, cluster)
    curve, scale, source = workload.compute_for(cluster)
    copy_s = curve.copy_s * scale
    paper = strategy.allreduce == "paper"

    # compute per iteration: K micro-batches of b samples per GPU
    if scaling == "weak":
        b = np.full_like(w, float(batch))
        t_micro = curve(b) * scale - copy_s
        samples = w * batch * k
        single = curve(float(batch)) * scale - copy_s  # one GPU, one micro-batch
    else:
        b = batch / (w * k)
        if paper:
            t_micro = (curve(float(batch) / k) * scale - copy_s) / w
        else:
            t_micro = curve(b) * scale - copy_s
        samples = np.full_like(w, float(batch))
        single = curve(float(batch) / k) * scale - copy_s
    t_micro = np.maximum(t_micro, 0.0)
    update = curve.update_s * scale  # the optimizer step inside t_micro, paid once per exchange
    t_comp = k * t_micro - (k - 1) * np.minimum(update / w if scaling == "strong" and paper else update, t_micro)
    single = float(np.atleast_1d(single)[0])
    single = k * single - (k - 1) * min(update, single)  # one GPU, the whole step

    result = _comm(workload, cluster, strategy, w, t_comp)
    comm, nbytes, extra, straggle_over = result[:4]
    schedule = result[4] if len(result) > 4 else None

    t_even = t_comp
    population = 1.0  # one worker's mean rate in the workers' population, over the rate of a mean-time worker
    if strategy.straggler_cv > 0 or strategy.straggler_machine_cv > 0:
        model = straggler_model(strategy)
        if strategy.name == "asgd":
            population = async_speedup_factor(model)
            factor = 1.0 / population
        else:
            factor = _sync_slowdown(w, cluster, straggle_over, model)
        t_comp = t_comp * factor
        t_micro = t_micro * factor
    extra["t_straggler_s"] = t_comp - t_even  # the wait for the slowest worker, inside t_compute_s

    multi = w > 1
    comm = np.where(multi, comm, 0.0)
    nbytes = np.where(multi, nbytes, 0.0)
    wait = strategy.cycle_time_s / 2.0  # a periodic launch loop: each collective waits half a cycle on average
    if strategy.overlap is not None:
        hidden = strategy.overlap * np.minimum(comm, t_comp)
        comm = np.where(multi, comm + wait, 0.0)  # the last launch's wait is never hidden
    elif schedule is not None and not paper:
        cost, replaced, element_bytes = schedule
        buckets = workload_buckets(workload, element_bytes, strategy.bucket_mb, strategy.first_bucket_mb)
        sigma, mu, kept = overlap_inputs(strategy, cluster)
        total, exposed = exposed_time(buckets, BACKWARD_SHARE * t_micro, cost, start_delay=wait,
                                      compute_slowdown=sigma, comm_slowdown=mu)
        comm = np.where(multi, comm - replaced + total + wait, 0.0)  # the last bucket's wait is paid
        hidden = kept * np.where(multi, total + wait - exposed, 0.0)
    else:  # no schedule: no overlap, or the strategy's own (sharded: perfmodel.sharded)
        hidden = np.where(multi, extra.pop("t_own_hidden_s", np.zeros_like(w)), 0.0)
        comm = np.where(multi, comm + wait, 0.0)
    hidden = np.maximum(hidden, 0.0)  # a schedule's rounding leaves -1e-19 s where nothing is hidden
    extra["t_hidden_s"] = hidden
    overhead = np.where(multi, strategy.step_overhead_s, 0.0)
    t_iter = t_comp + comm - hidden + extra.get("t_compress_s", 0.0) + extra.get("t_copy_s", 0.0) + overhead
    throughput = samples / t_iter
    if strategy.name == "asgd":
        # the servers' links bound the aggregate rate; report the bandwidth they must sustain
        exchange_bytes = extra.pop("exchange_bytes")
        cap = extra.pop("server_exchanges_per_s")
        worker_rate = w / t_iter  # exchanges per second if the servers never queue
        rate = np.where(multi, np.minimum(worker_rate, cap), worker_rate)
        t_iter = w / rate
        throughput = samples / t_iter
        extra["server_bandwidth_Bps"] = np.where(multi, rate * exchange_bytes, 0.0)
        extra["server_utilization"] = np.where(multi, rate / cap, 0.0)
    # the speedup's one GPU comes from the same population: asynchronous workers of spread speeds each run at
    # E[1/t] (Jensen: above 1/E[t]), and so does one of them alone
    single_tp = (batch * k if scaling == "weak" else batch) / single * population
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

# An optional fifth element is the bucket schedule's input: (seconds to communicate a bucket of
# nbytes, as cost(nbytes[:, None]) -> (buckets, GPU counts); the part of t_comm the buckets replace;
# bytes per gradient element on the wire).

def _ssgd_comm(workload: Workload, cluster: Cluster, strategy: Strategy, w: np.ndarray, t_comp: np.ndarray):
    wire = "fp32" if strategy.allreduce == "paper" else strategy.wire
    n = dense_bytes(workload, wire)

    def cost(nb):
        return coll.cluster_allreduce(strategy.allreduce, nb, w, cluster, staging=strategy.staging)

    t = cost(n)
    sent = _allreduce_bytes(strategy.allreduce, n, w)
    element_bytes = n / workload.parameters
    extra = _host_note(cluster, strategy, w)
    if strategy.allreduce != "paper":  # the paper's measured t_comm holds its own copies
        extra.update(_bucket_copies(workload, cluster, strategy, element_bytes, w > 1))
    return t, sent, extra, w, (cost, t, element_bytes)


def _bucket_copies(workload: Workload, cluster: Cluster, strategy: Strategy, element_bytes: float,
                   where: np.ndarray) -> dict:
    """{"t_copy_s": seconds per step} of the gradient's copies into the buckets and back, and of its casts to a
    narrower wire and back, where ``where`` (perfmodel.bucket_copy), or {} when nothing is charged."""
    copy_s = bucket_copy_seconds(workload.parameters, element_bytes, strategy.bucket_copies, cluster.gpu_memory_Bps,
                                 cast=strategy.wire_cast)
    return {"t_copy_s": np.where(where, copy_s, 0.0)} if copy_s else {}


def _host_note(cluster: Cluster, strategy: Strategy, w: np.ndarray) -> dict:
    """Host staging uses the host memory bandwidth; say so in a column when it is the default."""
    if strategy.staging != "host":
        return {}
    bandwidth, _ = coll.host_memory_Bps(cluster)
    return {"host_memory_Bps": np.full_like(w, bandwidth)}


def _sync_ps_comm(workload: Workload, cluster: Cluster, strategy: Strategy, w: np.ndarray, t_comp: np.ndarray):
    n = dense_bytes(workload, strategy.wire)

    def cost(nb):
        return coll.sync_ps_exchange(nb, w, cluster, strategy.ps_servers, placement_kind=strategy.ps_placement,
                                     local_reduce=strategy.ps_local_reduce)

    t = cost(n)
    _, g = coll.placement(w, cluster)
    # a pusher sends n and receives n; with local reduction one GPU of g pushes for the node
    sent = (2 * n / g if strategy.ps_local_reduce else np.full_like(w, 2 * n))
    extra = {"ps_servers": np.full_like(w, strategy.ps_servers)}
    return t, sent, extra, w, (cost, t, n / workload.parameters)


def _byteps_comm(workload: Workload, cluster: Cluster, strategy: Strategy, w: np.ndarray, t_comp: np.ndarray):
    n = dense_bytes(workload, strategy.wire)
    cpus = strategy.ps_servers if strategy.ps_placement == "dedicated" else 0

    def cost(nb):
        return coll.byteps_exchange(nb, w, cluster, cpus)

    t = cost(n)
    m, g = coll.placement(w, cluster)
    share = np.where(cpus < m, 2 * m * (m - 1) / np.maximum(m * m + cpus * m - 2 * cpus, 1.0), 1.0)
    sent = 2 * (g - 1) / g * n + np.where(m > 1, share * n / g, 0.0)
    return t, sent, {"cpu_machines": np.full_like(w, cpus)}, w, (cost, t, n / workload.parameters)


def _allreduce_bytes(algorithm: str, n, w: np.ndarray) -> np.ndarray:
    """Bytes one rank sends in an allreduce of n bytes: n log2 p for the log-step forms (twice for tree),
    else the ring's 2(p-1)/p n (nccl's ring and tree both move about that much; reduce-broadcast and
    basic-linear: the mean over ranks of the root's 2(p-1) n and the others' 2 n, less the root's own
    copy); ompi: those of the algorithm Open MPI's tuned rules run for each (n, p)."""
    if algorithm == "ompi":
        return per_model_algorithm(_allreduce_bytes, n, w)
    if algorithm in ("tree", "recursive-doubling", "paper"):
        steps = np.ceil(np.log2(np.maximum(w, 1.0)))
        return (2 * steps if algorithm == "tree" else steps) * np.asarray(n, dtype=float)
    return 2 * (w - 1) / w * n


def _levels_codes(split: TernarySplit, strategy: Strategy, w: np.ndarray, cluster: Cluster):
    """levels: Allreduce of the integer sums (wire.levels_bytes in lanes of wire.levels_lane_bits)."""
    n = levels_bytes(split.ternary_elems, levels_lane_bits(w, strategy.terngrad_lanes == "packed"))
    return (coll.cluster_allreduce(strategy.allreduce, n, w, cluster),), _allreduce_bytes(strategy.allreduce, n, w)


def _ps_codes(split: TernarySplit, strategy: Strategy, w: np.ndarray, cluster: Cluster):
    """ps: Alltoall of 2-bit shards (push), Allgather of the shards' ceil(log2(2W+1))-bit sums (pull)."""
    push, pull = ps_blocks(split.ternary_elems, w)
    t = (coll.cluster_alltoall(push, w, cluster), coll.cluster_allgather(pull, w, cluster))
    return t, ps_sent_bytes(split.ternary_elems, w)


def _allgather_codes(split: TernarySplit, strategy: Strategy, w: np.ndarray, cluster: Cluster):
    """allgather: every rank's 2-bit packed codes to every rank."""
    return (coll.cluster_allgather(split.packed_bytes, w, cluster),), allgather_sent_bytes(split.packed_bytes, w)


#: per TernGrad exchange: (the seconds of each of the codes' collectives, bytes sent per rank), and the decodes of
#: the codes each rank does per step (levels: none, the Allreduce sums; ps: its shard's sum and the
#: gathered sums; allgather: every rank's copy)
_EXCHANGE_COMM = {TERNGRAD_LEVELS: _levels_codes, TERNGRAD_PS: _ps_codes, TERNGRAD_ALLGATHER: _allgather_codes}
_EXCHANGE_DECODES = {TERNGRAD_LEVELS: np.ones_like, TERNGRAD_PS: lambda w: np.full_like(w, 2.0),
                     TERNGRAD_ALLGATHER: lambda w: w}


def _terngrad_comm(workload: Workload, cluster: Cluster, strategy: Strategy, w: np.ndarray, t_comp: np.ndarray):
    split = ternary_split(workload, strategy.terngrad_min_elems, strategy.terngrad_fp32_last)
    scalers = 4.0 * split.ternary_tensors
    fp32 = 4.0 * split.fp32_elems
    exchange = strategy.terngrad_exchange
    # compression is computation: charged on every GPU count, never hidden behind backprop; a rate not
    # measured (0) is the GPU's memory traffic where the cluster knows its memory bandwidth (not in the
    # paper's own formula, allreduce "paper", which has no codec term)
    given = (strategy.terngrad_encode_elems_per_s, strategy.terngrad_decode_elems_per_s,
             strategy.terngrad_convert_elems_per_s)
    by_memory = (codec_rates(cluster.gpu_memory_Bps, exchange) if cluster.gpu_memory_Bps
                 and strategy.allreduce != "paper" else (0.0, 0.0, 0.0))
    rates = [r if r > 0 else m for r, m in zip(given, by_memory)]
    encode, decode_one, convert = (encode_seconds(split.ternary_elems, r) for r in rates)
    copies = _EXCHANGE_DECODES[exchange](w)
    aggregate = np.zeros_like(w)
    if exchange == TERNGRAD_PS and strategy.terngrad_ps_aggregate_elems_per_s > 0:  # measured: in place of 2 decodes
        copies = np.zeros_like(w)
        aggregate = ps_aggregate_seconds(split.ternary_elems, w, strategy.terngrad_ps_aggregate_elems_per_s)
    if strategy.allreduce == "paper":
        # the paper's parameter server: push one worker's 2-bit gradient, pull the sum at log2(2W+1)
        # bits per element ("reduces by a factor of 32/log2(1+2N)"). Appendix B charges one |theta|,
        # one direction of fp32's symmetric exchange; on full-duplex links push and pull travel at
        # once, so TernGrad's |theta| is the larger direction: the pull (the push for W = 1)
        n = terngrad_bytes(split, np.maximum(2.0, np.log2(2 * w + 1)))
        extra = {"t_compress_s": encode + np.ones_like(w) * decode_one + convert}
        return coll.paper_allreduce(n, w, cluster), n * np.log2(np.maximum(w, 1)), extra, w
    # each collective after the codec's own work waits for the slowest rank's (sync_wait_s per point)
    sync_wait = np.where(w > 1, codec_sync_points(split, exchange) * strategy.sync_wait_s, 0.0)
    extra = {"t_compress_s": encode + copies * decode_one + convert + aggregate, "t_sync_wait_s": sync_wait}
    alg = strategy.allreduce
    # scaler sharing (allreduce(max) of one float per ternary tensor) and the fp32 tensors' allreduce
    t = coll.cluster_allreduce(alg, scalers, w, cluster) + coll.cluster_allreduce(alg, fp32, w, cluster)
    sent = _allreduce_bytes(alg, scalers, w) + _allreduce_bytes(alg, fp32, w)
    t_codes, sent_codes = _EXCHANGE_COMM[exchange](split, strategy, w, cluster)
    for term in t_codes:  # in the exchange's order, as one sum
        t = t + term
    sent = sent + sent_codes
    return t + sync_wait, sent, extra, w


def _daso_comm(workload: Workload, cluster: Cluster, strategy: Strategy, w: np.ndarray, t_comp: np.ndarray):
    nodes, g = coll.placement(w, cluster)
    n32 = dense_bytes(workload, "fp32")
    local_cluster = cluster  # the local group is one node: placement(g) gives M = 1

    def local(nb):  # HeAT's DataParallelMultiGPU runs torch DDP inside the node: bucketed, overlapped
        return coll.cluster_allreduce(strategy.allreduce if strategy.allreduce != "paper" else "ring",
                                      nb, g, local_cluster)

    t_local = local(n32)
    blocking = strategy.daso_W == 0
    n_global = dense_bytes(workload, "bf16") if blocking else n32
    t_global = coll.ring_allreduce(n_global, nodes, cluster.network.alpha, cluster.network.beta)
    t_bcast = coll.tree_broadcast(n32, g, cluster.intra.alpha, cluster.intra.beta)
    if blocking:
        exposed = t_global
    else:  # the non-blocking sync, hidden behind W batches only if the network moves it meanwhile
        own = dict(cluster.network_ops).get("global_iallreduce")
        if own is None:  # a blocking Allreduce's link, scaled to the non-blocking one
            t_global = t_global * strategy.daso_nonblocking_factor
        else:  # the non-blocking Iallreduce measured on the global group (one rank per node) itself
            t_global = coll.ring_allreduce(n_global, nodes, own.alpha, own.beta)
        hidden = strategy.daso_W * t_comp if strategy.daso_progress == "async" else 0.0
        exposed = np.maximum(t_global - hidden, 0.0)
    t = t_local + (exposed + np.where(nodes > 1, t_bcast, 0.0)) / strategy.daso_B
    t = np.where(nodes > 1, t, t_local)
    sent = 2 * (g - 1) / g * n32 + np.where(nodes > 1, 2 * (nodes - 1) / nodes * n_global / strategy.daso_B
                                            / g, 0.0)
    extra = {"t_global_sync_s": np.where(nodes > 1, t_global, 0.0), "daso_B": np.full_like(w, strategy.daso_B),
             "daso_W": np.full_like(w, strategy.daso_W)}
    extra.update(_bucket_copies(workload, cluster, strategy, 4.0, g > 1))  # the node-local DDP's buckets
    return t, sent, extra, (w if blocking else g), (local, t_local, 4.0)


def _asgd_comm(workload: Workload, cluster: Cluster, strategy: Strategy, w: np.ndarray, t_comp: np.ndarray):
    n = dense_bytes(workload, "fp32")
    worker, server = coll.ps_exchange(n, w, cluster, strategy.ps_servers)
    update = strategy.ps_update_s / strategy.ps_servers  # each server applies its share of the push
    worker, server = worker + update, server + update
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
    "sync-ps": _sync_ps_comm,
    "byteps": _byteps_comm,
    "zero1": sharded_comm,
    "zero2": sharded_comm,
    "zero3": sharded_comm,
    "fsdp": sharded_comm,
}
