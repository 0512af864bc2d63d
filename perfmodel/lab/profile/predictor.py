"""One predictor from a profile: the path behind both `perfmodel predict --profile` and `perfmodel validate`.

`perfmodel validate` reads a run's configuration, turns it into the `perfmodel predict` command that
describes it (perfmodel.lab.validate.predict_command) and runs that command's code, so the validated number
is the number a user gets. For each strategy and GPU count W this module turns the profile, the link
and the cluster description (``Layout``) into the specs perfmodel.scaling.predict takes:

- Placement: M = ceil(W / g) nodes of g ranks (``Layout.gpus_per_node``). The ranks that compute at
  once on one machine's cores, k: g on real nodes, every rank where the nodes share one machine
  (``Layout.nodes_per_host`` 0: emulated nodes, or a profile's own ranks on this machine); asgd counts
  its W workers (the server mostly waits).
- Compute: the training step timed on k ranks at once (the profile's MPI run at k ranks,
  perfmodel.lab.profile.schema.ConcurrentCompute): its mean, its spread as the stragglers' CV
  (Strategy.straggler_cv), and, where timed, the step right after an Allreduce of the bytes the
  strategy sends (``after_exchange_bytes``: a trainer computes between two exchanges, with the caches
  the exchange left). Where the profile has no run at k ranks: the one-process step stretched by
  max(1, k x threads / cores), the share of a core each rank gets (a note says so when k is beyond
  every rank count the profile timed at once). With a link that timed the step on its two ranks after
  exchanges over it (`perfmodel profile --link --workload`), the step after the job's exchange is the
  k-rank step times that link's slowdown, after(b, n) / at(b) at the n bytes each rank sends: an
  exchange over the network (the kernel's TCP copies and interrupts on the same cores) slows the next
  step more than one through shared memory (2 emulated nodes at 100 Mbit/s, LeNet at batch 8: 4.95 ms
  after a barrier, 6.50 ms after an Allreduce of 1.72 MB; on one machine through shared memory 4.65
  and 4.69 ms).
- The kernel's share of the cores: where the link profile measured the kernel's network CPU time per
  byte (kappa, perfmodel.lab.profile.kernel_load; or ``Layout.kernel_s_per_byte``), CPU ranks get the
  cores less kappa x the bytes per second that cross the links of the nodes sharing their machine
  (beyond what the link's own step-after-exchange holds), and compute and codec stretch by
  perfmodel.lab.profile.kernel_share's f, solved at the predicted step. On emulated nodes every node's
  traffic lands on the same cores (2 emulated nodes, 2026-11-26: 8.6-12.8 ms of irq + softirq per MB).
- Network: the link source's MPI run at the job's rank count where measured, else its largest
  (``--link-from``: a `perfmodel profile --link` file, nccl-tests or OSU output; else the profile
  itself), read at the message the exchange sends (``exchange_message``), inverted through the ring
  formula over that run's ranks; Allgather, Alltoall, the parameter server's exchange and DASO's
  global Iallreduce on their own measured links at their blocks (``exchange_blocks``,
  ``global_sync_message``). Intra-node: the profile's MPI run at g ranks (one node) when g > 1.
- TernGrad: the codec's rates and the wait at each synchronization point after its work
  (Strategy.sync_wait_s) from the codec loop timed on the k ranks at once; else the one-process rates
  divided by the same core share.
- asgd: the profile's optimizer step moves from the worker's compute to the server (ps_update_s): the
  server applies the update while its worker waits.
- DASO: progress "wait" on CPU ranks, "async" on GPUs; the non-blocking factor from the link source.
- Overlap: where the profile timed backprop and the gradient's Allreduce alone and together
  (perfmodel.lab.profile.overlap_timing; the link's run when the job spans nodes, else the run at k
  ranks, else the run at the most ranks, with a note), the measured slowdowns (sigma, mu) at the nearest timed batch replace the CPU ranks' constant
  (perfmodel.overlap_causes): Strategy.overlap_compute_slowdown and overlap_comm_slowdown. Not with
  --overlap, --overlap-efficiency or --overlap-slowdown.

A field the user set on the command line (``fixed``) is never replaced. Every point that reads beyond
what the profile or the link measured adds a note (``Point.notes``: what was measured; ``profiled_records``
names the GPU counts it applies to, one line per note).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ...compression import ternary_split
from ...scaling import Prediction, predict
from ...specs import (TERNGRAD_ALLGATHER, TERNGRAD_LEVELS, TERNGRAD_PS, Cluster, ComputeTime, Link, SpecError, Strategy,
                     Workload)
from ...wire import aggregate_bits, levels_lane_bits, ps_shard_elems
from .schema import ConcurrentCompute, ModelInfo, OverlapTiming, Profile, ProfileError
from .to_specs import nonblocking_factor, optimizer_step_s, profile_cluster, profile_links, profile_workload

__all__ = ["Layout", "Point", "predict_point", "exchange_message", "exchange_blocks", "global_sync_message",
           "read_sizes", "after_exchange_bytes", "optimizer_step_s", "FIXABLE"]

#: Strategy fields the predictor fills from the profile unless the command line set them.
FIXABLE = ("straggler_cv", "sync_wait_s", "codec", "ps_update_s", "daso_progress", "daso_nonblocking_factor",
           "overlap_slowdown")


@dataclass(frozen=True)
class Layout:
    """How the job's ranks sit on machines: the CPU side of the cluster description.

    gpus_per_node: ranks per node (g, >= 1). nodes_per_host: nodes that share one machine's cores (0:
    all of them, as emulated nodes on one host or a profile's ranks on this machine; 1: real nodes).
    cores: CPU cores of one machine (None: the profile's machine's). kernel_s_per_byte: the kernel's
    network CPU seconds per byte sent between nodes (None: the link profile's measurement, if any;
    perfmodel.lab.profile.kernel_share)."""

    gpus_per_node: int = 1
    nodes_per_host: int = 0
    cores: int | None = None
    kernel_s_per_byte: float | None = None

    def __post_init__(self) -> None:
        for name, low in (("gpus_per_node", 1), ("nodes_per_host", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise SpecError(f"{name} must be an integer >= {low}, got {v!r}")
        if self.cores is not None and (isinstance(self.cores, bool) or not isinstance(self.cores, int)
                                       or self.cores < 1):
            raise SpecError(f"cores must be an integer >= 1, got {self.cores!r}")
        k = self.kernel_s_per_byte
        if k is not None and (isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k)
                              or k < 0):
            raise SpecError(f"kernel_s_per_byte must be >= 0 and finite, got {k!r}")

    def computing(self, ranks: int, per_node: int) -> int:
        """Ranks that compute at once on one machine's cores, of ``ranks`` computing ranks placed
        ``per_node`` to a node."""
        if self.nodes_per_host == 0:
            return ranks
        return min(ranks, per_node * self.nodes_per_host)


@dataclass(frozen=True)
class Point:
    """One strategy at one GPU count: the specs the model was given and its prediction."""

    workload: Workload
    cluster: Cluster
    strategy: Strategy
    prediction: Prediction
    computing_ranks: int
    notes: tuple[str, ...] = ()


# ---------------------------------------------------------------- what each exchange sends


def exchange_message(strategy: Strategy, ranks: int, model: Workload | ModelInfo) -> tuple[str, float]:
    """The profiled operation whose fit is the network link of ``strategy`` at ``ranks`` ranks, and the
    bytes of the message its exchange sends (the link's bandwidth is read at that size). SSGD and
    TernGrad: the "iallreduce" fit (the same ring as the blocking Allreduce, timed one call at a time;
    SSGD's overlapped buckets run it; on the emulated links the blocking ring timed the same way ran
    1.4-1.6x slower than the wire at some sizes where the trainers' own blocking Allreduce ran at the
    wire), SSGD at one bucket, TernGrad at its codes' size (levels: lanes of levels_lane_bits; ps and
    allgather: 2-bit packed). DASO: the "allreduce" fit at the fp32 gradient. asgd: the one-way
    "pingpong" at the fp32 gradient (point-to-point Send/Recv)."""
    grad = 4.0 * sum(model.tensor_sizes)
    if strategy.name == "asgd":
        return "pingpong", grad
    if strategy.name == "ssgd":
        return "iallreduce", min(grad, float(strategy.bucket_mb) * 2**20)
    if strategy.name == "terngrad":
        split = ternary_split(model, strategy.terngrad_min_elems, strategy.terngrad_fp32_last)
        if strategy.terngrad_exchange == TERNGRAD_LEVELS:
            bits = levels_lane_bits(ranks, strategy.terngrad_lanes == "packed")
            return "iallreduce", split.ternary_elems * float(bits) / 8
        return "iallreduce", float(split.packed_bytes)
    return "allreduce", grad


def exchange_blocks(strategy: Strategy, ranks: int, model: Workload | ModelInfo) -> dict[str, float]:
    """The Allgather and Alltoall a TernGrad exchange calls, each with its block (bytes one rank sends in
    one step: perfmodel.lab.profile.schema.BLOCK_OPS), so that the model charges them on their own measured
    links (Cluster.network_ops): the Allgather exchange, every rank's 2-bit codes; the ps exchange, an
    Alltoall of 2-bit shards, then an Allgather of the ceil(log2(2W+1))-bit sums of one shard. {} for
    the other strategies and for one rank."""
    if strategy.name != "terngrad" or ranks < 2:
        return {}
    split = ternary_split(model, strategy.terngrad_min_elems, strategy.terngrad_fp32_last)
    if strategy.terngrad_exchange == TERNGRAD_ALLGATHER:
        return {"allgather": float(split.packed_bytes)}
    if strategy.terngrad_exchange == TERNGRAD_PS:
        shard = float(ps_shard_elems(split.ternary_elems, ranks))
        return {"alltoall": shard / 4.0, "allgather": shard * float(aggregate_bits(ranks)) / 8.0}
    return {}


def global_sync_message(strategy: Strategy, ranks: int, per_node: int, model: Workload | ModelInfo) -> dict[str, float]:
    """DASO's cycling-phase global sync with several ranks per node: {"global_iallreduce": the fp32
    parameters' bytes}, the Iallreduce one rank of each node runs (trainers/sync/daso.py), charged on
    the link measured on that group where the link source has it. {} otherwise."""
    if strategy.name != "daso" or per_node < 2 or ranks // per_node < 2:
        return {}
    return {"global_iallreduce": 4.0 * sum(model.tensor_sizes)}


def read_sizes(strategy: Strategy, ranks: int, per_node: int, model: Workload | ModelInfo) -> dict[str, float]:
    """The message size (bytes) at which the predictor reads each profiled operation for ``strategy`` at
    ``ranks`` ranks (asgd: the server and its workers): the network link's operation, the blocks of its
    Allgather and Alltoall, DASO's Iallreduce at the gradient's bytes (its non-blocking factor) and its
    global group's, the parameter server's push ("ps": the fp32 gradient). Timing the operations at
    exactly these sizes (`perfmodel profile --extra-sizes`) leaves nothing to interpolate; they follow
    from the model and the layout alone, so they can be chosen before any run."""
    if strategy.name == "asgd":
        return {"ps": 4.0 * sum(model.tensor_sizes)}  # the fp32 gradient pushed
    if ranks < 2:
        return {}
    op, nbytes = exchange_message(strategy, ranks, model)
    sizes = {op: nbytes, **exchange_blocks(strategy, ranks, model),
             **global_sync_message(strategy, ranks, per_node, model)}
    if strategy.name == "daso":
        sizes["iallreduce"] = nbytes
    return sizes


def after_exchange_bytes(sent_bytes: float, ranks: int) -> float:
    """The Allreduce message (bytes) whose ring sends ``sent_bytes`` from each of ``ranks`` ranks,
    sent p / (2 (p - 1)): where the profile's step after an Allreduce (ConcurrentCompute.after) is read
    for a strategy that sends sent_bytes per rank and step. 0 for one rank."""
    return sent_bytes * ranks / (2.0 * (ranks - 1)) if ranks > 1 else 0.0


# ---------------------------------------------------------------- compute


def _scaled(ct: ComputeTime, factor: float, less_s: float = 0.0) -> ComputeTime:
    """ct times ``factor``, less ``less_s`` seconds per step (never below 1 us); ``less_s`` comes off the
    optimizer step first (update_s: the parameter server's worker does not apply the update)."""
    if factor == 1.0 and less_s == 0.0:
        return ct
    update = max(ct.update_s * factor - less_s, 0.0)
    if ct.kind == "linear":
        return replace(ct, t0_s=max(ct.t0_s * factor - less_s, 0.0), t1_s=ct.t1_s * factor, update_s=update)
    return replace(ct, times_s=tuple(max(t * factor - less_s, 1e-6) for t in ct.times_s), update_s=update)


def _slowed_once(after_s: float, plain_s: float, micro: int) -> float:
    """Mean seconds per micro-batch of a step of ``micro`` whose first follows an exchange (``after_s``)
    and the rest do not (``plain_s``): the exchange's slowdown falls on one of them."""
    return (after_s + (micro - 1) * plain_s) / micro


def _concurrent(profile: Profile, k: int) -> ConcurrentCompute | None:
    """The training step timed on k ranks at once (the profile's MPI run at k ranks), None if not timed."""
    if k < 2:
        return None
    run = profile.comm_for("mpi", ranks=k)
    return run.compute if run is not None else None


def _link_after(link: Profile | None) -> ConcurrentCompute | None:
    """The step timed on the link's two ranks (one per node) after a barrier and after exchanges over
    the link (`perfmodel profile --link --workload`): None without a link or where it was not timed."""
    if link is None:
        return None
    run = link.comm_for("mpi", ranks=2)
    conc = run.compute if run is not None else None
    return conc if conc is not None and conc.after_bytes else None


def _overlap_timing(profile: Profile, link: Profile | None, k: int, gpus: int,
                    per_node: int) -> tuple[OverlapTiming | None, int]:
    """Backprop and the gradient's Allreduce timed alone and together (perfmodel.lab.profile.overlap_timing)
    and on how many ranks at once: the link's run when the job spans nodes and the link timed it, else
    the profile's run at the k ranks that share the machine, else its run at the most ranks that timed
    it; (None, 0) where none did."""
    def timed(run) -> OverlapTiming | None:
        return run.compute.overlap if run is not None and run.compute is not None else None
    over_link = timed(link.comm_for("mpi", ranks=2)) if link is not None and math.ceil(gpus / per_node) > 1 else None
    if over_link is not None:
        return over_link, 2
    runs = sorted((c for c in profile.comm if c.backend == "mpi" and timed(c) is not None), key=lambda c: c.ranks)
    exact = [c for c in runs if c.ranks == k]
    run = exact[0] if exact else (runs[-1] if runs else None)
    return (timed(run), run.ranks) if run is not None else (None, 0)


def _concurrent_counts(profile: Profile) -> list[int]:
    return sorted(c.ranks for c in profile.comm if c.backend == "mpi" and c.compute is not None)


# ---------------------------------------------------------------- one point


def predict_point(profile: Profile, strategy: Strategy, gpus: int, batch: int, layout: Layout, *,
                  link: Profile | None = None, workload: Workload | None = None,
                  fixed: frozenset[str] = frozenset(), scaling: str = "weak",
                  edit: Callable[[Cluster], Cluster] | None = None, accumulate: int = 1) -> Point:
    """Predict ``strategy`` at ``gpus`` GPUs (asgd: workers) from ``profile`` (one machine's compute,
    codecs and collectives) and ``link`` (the network between nodes; None: the profile's own MPI runs).

    workload: a workload the user named (its compute is then its own, and the profile gives only the
    links); None: the profiled model. fixed: Strategy fields (FIXABLE) the user set, left as given.
    edit: the command line's link overrides, applied to the cluster last. accumulate: micro-batches of
    ``batch`` per exchange for the profiled model (a named workload carries its own)."""
    if profile.model is None or profile.compute is None:
        raise ProfileError("the profile has no compute measurements of a model; rerun `perfmodel profile` "
                           "with --workload")
    src = link if link is not None else profile
    notes: list[str] = []
    ps = strategy.name == "asgd"
    per_node = 1 if ps else min(gpus, layout.gpus_per_node)
    model = profile.model
    # the network link, read at the exchange's own message on the link source's run at the job's ranks
    mpi_ranks = gpus + 1 if ps else gpus
    cluster_kw: dict = {}
    if mpi_ranks > 1:
        op, nbytes = exchange_message(strategy, gpus, model)
        exact = src.comm_for("mpi", ranks=mpi_ranks)
        measured = exact or src.comm_for("mpi")
        if measured is None:
            raise ProfileError("the link has no MPI communication measured between 2 or more ranks")
        if op not in measured.ops:
            if op == "pingpong":
                raise ProfileError(f"asgd needs a point-to-point link (pingpong; osu_latency); the link "
                                   f"source has {', '.join(sorted(measured.ops))}")
            op = "allreduce" if "allreduce" in measured.ops else op
        op_bytes = read_sizes(strategy, gpus, per_node, model) if ps else \
            {**exchange_blocks(strategy, gpus, model), **global_sync_message(strategy, gpus, per_node, model)}
        nodes = math.ceil(gpus / per_node) + (1 if ps else 0)
        if exact is None or (link is not None and measured.nodes < min(nodes, mpi_ranks)):
            notes.append(f"network: measured at {measured.ranks} ranks on {measured.nodes} host(s); the model's "
                         f"collectives extrapolate it to")
        base = profile_cluster(src, ranks=mpi_ranks, network_from=op, nbytes=nbytes, op_bytes=op_bytes)
        cluster_kw = dict(network=base.network, network_ops=base.network_ops, source=base.source)
        net = base.network
    else:
        net = profile_links(src)["network"] if src.comm_for("mpi") is not None else None
        if net is None:
            raise ProfileError("the profile has no communication measured with 2 or more ranks; rerun "
                               "`perfmodel profile` with --ranks 1,2")
        cluster_kw = dict(network=net, source=f"{profile.machine.hostname}")
    own = profile_links(profile) if profile.comm_for("mpi") is not None else {}  # NCCL intra, GPU host copy
    intra = own.get("intra", net)
    if per_node > 1 and "intra" not in own and profile.comm_for("mpi", ranks=per_node) is not None:
        intra = profile_links(profile, ranks=per_node)["network"]  # the profile's run on one node's ranks
    # compute: the step timed on the k ranks that share the machine's cores at once
    from_profile = workload is None
    wl = workload if workload is not None else replace(profile_workload(profile), accumulate=accumulate)
    micro = wl.accumulate  # the step after an exchange is the first of these micro-batches
    gpu = next(iter(wl.compute))
    k = layout.computing(gpus, per_node)
    cores = layout.cores or profile.machine.cpu_affinity or os.cpu_count() or 1
    threads = profile.compute.threads
    # CPU ranks share the machine's cores; GPU ranks each have their own GPU (one per rank)
    share = max(1.0, k * threads / cores) if profile.compute.device == "cpu" else 1.0
    conc = _concurrent(profile, k) if from_profile else None
    apply_s = optimizer_step_s(profile) if ps and from_profile and "ps_update_s" not in fixed else None
    fields: dict = {}
    if from_profile:
        if conc is not None:
            wl = replace(wl, compute={gpu: ComputeTime.table(dict(zip(conc.batches, conc.mean_s)),
                                                             source=f"training step on {k} ranks at once",
                                                             update_s=optimizer_step_s(profile) * share)})
            if "straggler_cv" not in fixed:
                # the ranks' spread in one micro-batch's step: scheduling jitter, independent between
                # micro-batches (not a slow chip), so a step of A micro-batches has CV / sqrt(A)
                fields["straggler_cv"] = conc.at(batch)[2] / math.sqrt(micro)
        else:
            timed = _concurrent_counts(profile)
            if k > 1 and share > 1.0 and (not timed or k > max(timed)):
                notes.append(f"compute: the profile timed at most {max(timed) if timed else 1} rank(s) at once on "
                             f"{cores} cores; the one-process step is stretched by ranks x threads / cores for")
            wl = replace(wl, compute={gpu: _scaled(wl.compute[gpu], share)})
        if apply_s:  # the server applies the update while its worker waits
            wl = replace(wl, compute={gpu: _scaled(wl.compute[gpu], 1.0, apply_s)})
            fields["ps_update_s"] = apply_s
        codec = profile.compute.codec
        if "codec" not in fixed and strategy.name == "terngrad":
            if conc is not None and conc.codec is not None:
                rates = conc.codec.rates()
                if "sync_wait_s" not in fixed:
                    fields["sync_wait_s"] = conc.codec.sync_wait_s or 0.0
            elif codec is not None:
                rates = tuple(r / share for r in codec.rates())
            else:
                rates = (0.0, 0.0, 0.0, 0.0)
            fields.update(terngrad_encode_elems_per_s=rates[0], terngrad_decode_elems_per_s=rates[1],
                          terngrad_convert_elems_per_s=rates[2], terngrad_ps_aggregate_elems_per_s=rates[3])
    on_cpu = profile.compute.device == "cpu"  # the overlap timing is the CPU step's (overlap_timing)
    measured, on_ranks = _overlap_timing(profile, link, k, gpus, per_node) if from_profile and on_cpu else (None, 0)
    if measured is not None and "overlap_slowdown" not in fixed and strategy.overlap is None \
            and strategy.overlap_efficiency is None:
        sigma, mu = measured.slowdowns(batch)
        fields.update(overlap_compute_slowdown=sigma, overlap_comm_slowdown=mu)
        near = min(measured.batches, key=lambda b: (abs(b - batch), b))
        if near != batch or (link is None and on_ranks != k):
            notes.append(f"overlap: the slowdowns (sigma {sigma:.2f}, mu {mu:.2f}) were timed at batch {near} on "
                         f"{on_ranks} ranks at once; used at batch {batch} for")
    if strategy.name == "daso":
        if "daso_progress" not in fixed:
            fields["daso_progress"] = "wait" if profile.compute.device == "cpu" else "async"
        factor = nonblocking_factor(src, nbytes=float(model.gradient_bytes))
        if factor is not None and "daso_nonblocking_factor" not in fixed:
            fields["daso_nonblocking_factor"] = factor
    strat = replace(strategy, **fields)
    cl = Cluster(name="local" if link is None else "profiled", gpus_per_node=per_node, intra=intra,
                 host=own.get("host", _free_host()), gpu=gpu, **cluster_kw)
    if edit is not None:
        cl = edit(cl)
    # an exchange that crosses the network (the job spans 2 or more nodes) slows the step after it as the link's did
    after = _link_after(link) if from_profile and gpus > 1 and math.ceil(gpus / per_node) > 1 else None
    try:
        p = predict(wl, cl, strat, [gpus], scaling=scaling, batch=batch)
        sent = float(p.bytes_per_gpu[0])
        if after is not None:  # what an exchange over the link does to the step that follows it
            base = wl.compute[gpu]
            batches = after.batches
            wl = replace(wl, compute={gpu: ComputeTime.table(
                {b: _slowed_once(float(base(float(b))) * after.after(b, sent) / after.at(b)[0], float(base(float(b))),
                                 micro) for b in batches}, update_s=base.update_s,
                source=f"training step on {k} ranks at once, times the link's slowdown after an exchange "
                       f"that sends {sent:.0f} B per rank"
                       + (f" (on 1 of {micro} micro-batches)" if micro > 1 else ""))})
            p = predict(wl, cl, strat, [gpus], scaling=scaling, batch=batch)
        elif conc is not None and conc.after_bytes and gpus > 1:
            nbytes_after = after_exchange_bytes(sent, gpus)
            plain = wl.compute[gpu]
            wl = replace(wl, compute={gpu: ComputeTime.table(
                {b: _slowed_once(conc.after(b, nbytes_after), float(plain(float(b))), micro)
                 for b in conc.batches}, update_s=plain.update_s,
                source=f"training step on {k} ranks at once after an Allreduce of {nbytes_after:.0f} B"
                       + (f" (on 1 of {micro} micro-batches)" if micro > 1 else ""))})
            p = predict(wl, cl, strat, [gpus], scaling=scaling, batch=batch)
        kappa = _kernel_s_per_byte(layout, link)
        nodes = math.ceil(gpus / per_node)
        if kappa and nodes > 1 and from_profile and profile.compute.device == "cpu":
            wl, strat, p = _with_kernel_load(wl, strat, cl, p, kappa, k, threads, cores, nodes, layout,
                                             after is not None, gpu, scaling, batch, notes)
    except SpecError as e:
        raise ProfileError(str(e)) from None
    return Point(wl, cl, strat, p, k, tuple(notes))


def _kernel_s_per_byte(layout: Layout, link: Profile | None) -> float:
    """The kernel's network CPU seconds per byte: the layout's, else the link profile's 2-rank run's
    measurement (perfmodel.lab.profile.kernel_load), else 0 (not charged)."""
    if layout.kernel_s_per_byte is not None:
        return float(layout.kernel_s_per_byte)
    run = link.comm_for("mpi", ranks=2) if link is not None else None
    return run.kernel_load.s_per_byte if run is not None and run.kernel_load is not None else 0.0


def _with_kernel_load(wl: Workload, strat: Strategy, cl: Cluster, p: Prediction, kappa: float, k: int,
                      threads: int, cores: int, nodes: int, layout: Layout, link_after: bool, gpu: str,
                      scaling: str, batch: int, notes: list[str]) -> tuple[Workload, Strategy, Prediction]:
    """Compute (and TernGrad's codec) stretched by the kernel's share of the cores
    (perfmodel.lab.profile.kernel_share): f solves f = stretch(kappa x S / T(f))."""
    from scipy.optimize import brentq

    from .kernel_share import MAX_LOAD_SHARE, core_stretch, host_link_bytes

    base = wl.compute[gpu]
    rates = {n: getattr(strat, n) for n in ("terngrad_encode_elems_per_s", "terngrad_decode_elems_per_s",
                                            "terngrad_convert_elems_per_s", "terngrad_ps_aggregate_elems_per_s")}
    source = f"{base.source}, stretched by the kernel's network load on the cores"

    def at(f: float) -> tuple[Workload, Strategy, Prediction]:
        w = replace(wl, compute={gpu: replace(_scaled(base, f), source=source)})
        s = replace(strat, **{n: (v / f if v else v) for n, v in rates.items()}) if strat.name == "terngrad" else strat
        return w, s, predict(w, cl, s, [int(p.gpus[0])], scaling=scaling, batch=batch)

    def stretch(pred: Prediction) -> tuple[float, float]:
        load = kappa * host_link_bytes(float(pred.bytes_per_gpu[0]), nodes, layout.nodes_per_host,
                                       link_after=link_after) / float(pred.t_iter_s[0])
        return core_stretch(k, threads, cores, load)[0], load

    top = stretch(p)[0]
    if top <= 1.0:
        return wl, strat, p
    f = brentq(lambda x: stretch(at(x)[2])[0] - x, 1.0, top, xtol=1e-12, rtol=1e-12)
    w, s, pred = at(f)
    load = stretch(pred)[1]
    if load > MAX_LOAD_SHARE * cores:
        notes.append(f"compute: the links' kernel work would take {load:.2f} of {cores} cores; capped at "
                     f"{MAX_LOAD_SHARE:g} of them for")
    return w, s, pred


def _free_host() -> Link:
    return Link(latency_s=0.0, bandwidth_Bps=float("inf"), source="CPU ranks: no device->host copy")


def profiled_records(profile: Profile, strategies: list[Strategy], gpus: list[int], batch: int, layout: Layout, *,
                     link: Profile | None = None, workload: Workload | None = None,
                     fixed: frozenset[str] = frozenset(), scaling: str = "weak",
                     edit: Callable[[Cluster], Cluster] | None = None,
                     accumulate: int = 1) -> tuple[list[dict], list[str], list[Point]]:
    """Records (perfmodel.scaling.Prediction.records) of every strategy at every GPU count it can run,
    each predicted on its own by ``predict_point``; speedup and efficiency are over the strategy's
    one-GPU point (the one-process step). Returns (records, notes, points); notes name the skipped
    counts and every extrapolation once."""
    from ...scaling import unrunnable

    records: list[dict] = []
    notes: list[str] = []
    points: list[Point] = []
    beyond: dict[str, list[int]] = {}
    w = np.asarray(gpus)
    for strategy in strategies:
        probe = Cluster(name="layout", gpus_per_node=layout.gpus_per_node, intra=_free_host(),
                        host=_free_host(), network=_free_host())
        keep = np.ones(len(w), bool)
        acc = workload.accumulate if workload is not None else accumulate
        for why, bad in unrunnable(w, probe, strategy, scaling=scaling, batch=batch, accumulate=acc).items():
            keep &= ~np.isin(w, bad)
            notes.append(f"skipped {strategy.name} at {', '.join(str(int(x)) for x in bad)} GPUs: {why}")
        one = None
        for count in w[keep]:
            pt = predict_point(profile, strategy, int(count), batch, layout, link=link, workload=workload,
                               fixed=fixed, scaling=scaling, edit=edit, accumulate=accumulate)
            if one is None:
                one = pt if int(count) == 1 else predict_point(profile, strategy, 1, batch, layout, link=link,
                                                               workload=workload, fixed=fixed, scaling=scaling,
                                                               edit=edit, accumulate=accumulate)
            (rec,) = pt.prediction.records()
            single = float(one.prediction.throughput[0])
            rec["speedup"] = rec["throughput"] / single
            rec["efficiency"] = rec["speedup"] / int(count)
            rec["computing_ranks"] = pt.computing_ranks
            records.append(rec)
            points.append(pt)
            for n in pt.notes:
                beyond.setdefault(n, []).append(int(count))
    if not records:
        raise ProfileError("nothing to predict: " + "; ".join(dict.fromkeys(n.split(": ", 1)[1] for n in notes)))
    for note, counts in beyond.items():
        counts = sorted(set(counts))
        notes.append(f"{note} {', '.join(map(str, counts))} GPU{'s' if counts != [1] else ''}")
    return records, notes, points
