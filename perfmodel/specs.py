"""Specs the model consumes: links, clusters, workloads and strategies.

Every spec is a frozen dataclass validated on creation; a bad value raises ``SpecError`` naming the
field, the value and what is allowed. Units are in the field names: ``_s`` seconds, ``_Bps`` bytes per
second, ``_bytes`` bytes, ``_flops`` floating-point operations per second.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np


class SpecError(ValueError):
    """A spec value is malformed or out of range."""


def _positive(name: str, value: float, *, allow_zero: bool = False, allow_inf: bool = False) -> None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SpecError(f"{name} must be a number, got {value!r}") from None
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise SpecError(f"{name} must be finite, got {value!r}")
    if v < 0 or (v == 0 and not allow_zero):
        raise SpecError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")


def is_capability(value: object) -> bool:
    """Whether ``value`` is a CUDA compute capability as text, "major.minor" ("9.0", "12.0")."""
    return isinstance(value, str) and re.fullmatch(r"\d{1,2}\.\d{1,2}", value) is not None


def _positive_int(name: str, value: int, *, allow_zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < (0 if allow_zero else 1):
        raise SpecError(f"{name} must be a {'non-negative' if allow_zero else 'positive'} integer, got {value!r}")


@dataclass(frozen=True)
class Link:
    """A point-to-point link in the alpha-beta model: sending n bytes takes latency_s + n / bandwidth_Bps."""

    latency_s: float
    bandwidth_Bps: float
    source: str = ""
    #: an intra link whose bandwidth depends on how many GPUs of a node of ``node_gpus`` run (a hybrid
    #: cube-mesh: GPUs 0..g-1 share fewer NVLinks): (g, bytes/s) pairs; 0 bytes/s: no ring over this link
    partial_Bps: tuple[tuple[int, float], ...] = ()
    node_gpus: int = 0

    def __post_init__(self) -> None:
        _positive("latency_s", self.latency_s, allow_zero=True)
        _positive("bandwidth_Bps", self.bandwidth_Bps, allow_inf=True)
        try:
            pairs = tuple((int(g), float(b)) for g, b in self.partial_Bps)
        except (TypeError, ValueError):
            raise SpecError(f"link partial_Bps must be (GPUs, bytes/s) pairs, got {self.partial_Bps!r}") from None
        object.__setattr__(self, "partial_Bps", pairs)
        if pairs:
            _positive_int("node_gpus", self.node_gpus)
            for g, b in pairs:
                if not 2 <= g < self.node_gpus:
                    raise SpecError(f"link partial_Bps: GPU count {g} must be 2..{self.node_gpus - 1}")
                _positive(f"link partial_Bps[{g}]", b, allow_zero=True)

    @property
    def alpha(self) -> float:
        """Latency, seconds per message."""
        return float(self.latency_s)

    @property
    def beta(self) -> float:
        """Inverse bandwidth, seconds per byte."""
        return 1.0 / float(self.bandwidth_Bps)

    def time(self, nbytes: float | np.ndarray) -> float | np.ndarray:
        """Seconds to send ``nbytes`` bytes over this link once."""
        return self.alpha + np.asarray(nbytes, dtype=float) * self.beta


#: Collectives a cluster may carry a network link of their own for (Cluster.network_ops).
#: "global_iallreduce": DASO's non-blocking global sync on one rank per node (perfmodel.scaling).
NETWORK_OPS: tuple[str, ...] = ("allgather", "alltoall", "ps", "global_iallreduce")


@dataclass(frozen=True)
class Cluster:
    """A homogeneous GPU cluster: nodes of ``gpus_per_node`` GPUs.

    intra: GPU-GPU link inside a node (NVLink, PCIe switch); host: GPU-CPU link (PCIe) a copy to host
    memory crosses; network: the link between nodes, per node (the NIC, or the sum of a node's NICs).
    max_nodes: nodes the cluster has (None: open-ended). host_memory_Bps: a node's host (CPU) memory
    bandwidth, bytes/s, for host-staged reductions (None: unknown). nics: how many NICs ``network``
    sums (``network`` is already the per-node total; the model never divides it, only the command
    line's ``--nics K`` rescales the per-NIC figure network / nics). network_ops: (operation, Link)
    pairs, the network link one collective measured on its own (``NETWORK_OPS``: a profile's or
    nccl-tests' Allgather and Alltoall, inverted through their p-1 step forms), which that collective's
    steps between nodes use instead of ``network`` (``network_for``); empty: ``network`` for all.
    gpu, peak_flops, gpu_tf32_flops, gpu_tensor_flops, gpu_memory_Bps, gpu_memory_bytes: the GPU's
    name, its fp32, dense TF32 and fp16/bf16 peaks (FLOP/s), memory bandwidth (bytes/s) and size
    (bytes), from its gpus.toml preset, an inline [gpu] table or the command line; None: unknown.
    gpu_compute_capability: an NVIDIA GPU's CUDA compute capability ("9.0") where the GPU was described
    with one (an inline table, --gpu-capability); None: gpu_memory.toml's for a preset, else unknown.
    """

    name: str
    gpus_per_node: int
    intra: Link
    host: Link
    network: Link
    gpu: str = ""
    peak_flops: float | None = None
    max_nodes: int | None = None
    host_memory_Bps: float | None = None
    source: str = ""
    nics: int = 1
    network_ops: tuple[tuple[str, Link], ...] = ()
    gpu_tf32_flops: float | None = None
    gpu_tensor_flops: float | None = None
    gpu_memory_Bps: float | None = None
    gpu_memory_bytes: float | None = None
    gpu_compute_capability: str | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise SpecError("cluster name must not be empty")
        if self.gpu_compute_capability is not None and not is_capability(self.gpu_compute_capability):
            raise SpecError(f"cluster gpu_compute_capability must be text like \"9.0\", got "
                            f"{self.gpu_compute_capability!r}")
        pairs = tuple(self.network_ops.items()) if isinstance(self.network_ops, dict) else self.network_ops
        try:
            pairs = tuple((str(op), link) for op, link in pairs)
        except (TypeError, ValueError):
            raise SpecError(f"cluster network_ops must be (operation, Link) pairs, got {self.network_ops!r}") from None
        for op, link in pairs:
            if op not in NETWORK_OPS:
                raise SpecError(f"cluster network_ops: unknown operation {op!r}; choose from {', '.join(NETWORK_OPS)}")
            if not isinstance(link, Link):
                raise SpecError(f"cluster network_ops[{op!r}] must be a Link, got {link!r}")
        if len({op for op, _ in pairs}) != len(pairs):
            raise SpecError(f"cluster network_ops names an operation twice: {[op for op, _ in pairs]}")
        object.__setattr__(self, "network_ops", pairs)
        _positive_int("gpus_per_node", self.gpus_per_node)
        for f in ("intra", "host", "network"):
            if not isinstance(getattr(self, f), Link):
                raise SpecError(f"cluster {f} must be a Link, got {getattr(self, f)!r}")
        if self.peak_flops is not None:
            _positive("peak_flops", self.peak_flops)
        for f in ("gpu_tf32_flops", "gpu_tensor_flops", "gpu_memory_Bps", "gpu_memory_bytes"):
            if getattr(self, f) is not None:
                _positive(f, getattr(self, f))
        if self.max_nodes is not None:
            _positive_int("max_nodes", self.max_nodes)
        if self.host_memory_Bps is not None:
            _positive("host_memory_Bps", self.host_memory_Bps)
        _positive_int("nics", self.nics)

    def intra_partial(self) -> tuple[tuple[int, float], ...]:
        """The intra link's (GPUs, bytes/s) figures for a run on GPUs 0..g-1 of a node, where the link
        describes nodes of this size (``Link.node_gpus``); () elsewhere."""
        return self.intra.partial_Bps if self.intra.node_gpus == self.gpus_per_node else ()

    def intra_for(self, gpus: int) -> Link:
        """The intra link of a node that runs ``gpus`` of its GPUs (GPUs 0..gpus-1): the link's own figure
        for a whole node or a link without a partial table; the table's figure for ``gpus``, where the
        link is described for nodes of this size; the host link where those GPUs have no ring on it."""
        link = self.intra
        table = dict(self.intra_partial())
        if gpus not in table:
            return link
        why = f"{gpus} of a node's {link.node_gpus} GPUs"
        if table[gpus] == 0:
            return Link(self.host.latency_s, self.host.bandwidth_Bps,
                        f"{why} have no ring on the intra link; the host link carries it: {self.host.source}")
        return Link(link.latency_s, table[gpus], f"{why}: {link.source}")

    def network_for(self, op: str) -> Link:
        """The network link of operation ``op`` (``NETWORK_OPS``): its own from ``network_ops`` when
        measured, else ``network``."""
        return dict(self.network_ops).get(op, self.network)

    def with_link(self, which: str, link: Link) -> "Cluster":
        """A copy of this cluster with one link ("intra", "host" or "network") replaced."""
        if which not in ("intra", "host", "network"):
            raise SpecError(f"link must be one of intra, host, network, got {which!r}")
        from dataclasses import replace

        return replace(self, **{which: link})


@dataclass(frozen=True)
class ComputeTime:
    """Time to train one mini-batch on one GPU (forward, backward, update) as a function of batch size.

    kind "linear": t(b) = t0_s + t1_s * b (a fit). kind "table": measured (batch, seconds) points,
    interpolated linearly in b and extrapolated with the slope of the last two points (the first two
    below the table). ``copy_s`` is the GPU-to-CPU copy time included in t (the TernGrad model's t_cg).
    ``update_s`` is the optimizer step included in t, paid once per update: with gradient accumulation
    (A micro-batches per exchange) a step computes A (t(b) - update_s) + update_s (0: not known apart,
    every micro-batch pays its t).
    """

    kind: str
    t0_s: float = 0.0
    t1_s: float = 0.0
    batches: tuple[int, ...] = ()
    times_s: tuple[float, ...] = ()
    copy_s: float = 0.0
    source: str = ""
    update_s: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ("linear", "table"):
            raise SpecError(f"compute kind must be 'linear' or 'table', got {self.kind!r}")
        _positive("copy_s", self.copy_s, allow_zero=True)
        _positive("update_s", self.update_s, allow_zero=True)
        if self.kind == "linear":
            _positive("t0_s", self.t0_s, allow_zero=True)
            _positive("t1_s", self.t1_s)
        else:
            if len(self.batches) != len(self.times_s) or len(self.batches) < 1:
                raise SpecError("compute table needs equally many batches and times_s, at least one")
            for b in self.batches:
                _positive_int("compute table batch", b)
            for t in self.times_s:
                _positive("compute table time", t)
            if list(self.batches) != sorted(set(self.batches)):
                raise SpecError(f"compute table batches must be strictly increasing, got {self.batches}")

    @classmethod
    def table(cls, points: dict[int, float], copy_s: float = 0.0, source: str = "",
              update_s: float = 0.0) -> "ComputeTime":
        """A table from {batch: seconds}."""
        items = sorted(points.items())
        return cls("table", batches=tuple(int(b) for b, _ in items),
                   times_s=tuple(float(t) for _, t in items), copy_s=copy_s, source=source, update_s=update_s)

    def __call__(self, batch: float | np.ndarray) -> np.ndarray:
        """Seconds per mini-batch of ``batch`` samples (vectorized)."""
        b = np.asarray(batch, dtype=float)
        if self.kind == "linear":
            return self.t0_s + self.t1_s * b
        xs = np.asarray(self.batches, dtype=float)
        ys = np.asarray(self.times_s, dtype=float)
        if len(xs) == 1:  # one point: time proportional to batch
            return ys[0] * b / xs[0]
        t = np.interp(b, xs, ys)
        hi_slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        lo_slope = (ys[1] - ys[0]) / (xs[1] - xs[0])
        t = np.where(b > xs[-1], ys[-1] + hi_slope * (b - xs[-1]), t)
        t = np.where(b < xs[0], np.maximum(ys[0] + lo_slope * (b - xs[0]), ys[0] * b / xs[0]), t)
        return t


@dataclass(frozen=True)
class Workload:
    """A model to train: its parameter tensors and its per-GPU compute time.

    tensor_sizes: elements of each parameter tensor, in model order; tensor_names the same order.
    accumulate: micro-batches of the per-GPU batch computed per gradient exchange (gradient
    accumulation; 1 = exchange every mini-batch).
    tensor_flops: forward FLOPs per sample charged to each tensor (the layer's FLOPs on its weight, 0 on
    bias and norm tensors), aligned with tensor_sizes; empty when unknown.
    classifier_tensors: how many trailing tensors form the last (classifier) layer.
    compute: per-GPU compute time, keyed by GPU name (e.g. "gtx1080"), each with the GPU's peak FLOP/s
    it was measured on in ``compute_peak_flops`` when known (used to scale to an unmeasured GPU by the
    fp32 peak ratio, so only fp32 measurements carry one: a TF32 or mixed-precision time never does).
    """

    name: str
    tensor_sizes: tuple[int, ...]
    compute: dict[str, ComputeTime]
    tensor_names: tuple[str, ...] = ()
    classifier_tensors: int = 2
    bytes_per_element: int = 4
    compute_peak_flops: dict[str, float] = field(default_factory=dict)
    source: str = ""
    accumulate: int = 1
    tensor_flops: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not self.name:
            raise SpecError("workload name must not be empty")
        if len(self.tensor_sizes) == 0:
            raise SpecError(f"workload {self.name}: tensor_sizes must not be empty")
        for n in self.tensor_sizes:
            _positive_int(f"workload {self.name} tensor size", n)
        if self.tensor_names and len(self.tensor_names) != len(self.tensor_sizes):
            raise SpecError(f"workload {self.name}: {len(self.tensor_names)} tensor_names for "
                            f"{len(self.tensor_sizes)} tensor_sizes")
        if not 0 <= self.classifier_tensors <= len(self.tensor_sizes):
            raise SpecError(f"workload {self.name}: classifier_tensors must be in 0..{len(self.tensor_sizes)}")
        _positive_int("bytes_per_element", self.bytes_per_element)
        if not self.compute:
            raise SpecError(f"workload {self.name}: needs at least one compute time")
        for gpu, ct in self.compute.items():
            if not isinstance(ct, ComputeTime):
                raise SpecError(f"workload {self.name}: compute[{gpu!r}] must be a ComputeTime")
        for gpu, peak in self.compute_peak_flops.items():
            _positive(f"compute_peak_flops[{gpu}]", peak)
        _positive_int(f"workload {self.name} accumulate", self.accumulate)
        if self.tensor_flops and len(self.tensor_flops) != len(self.tensor_sizes):
            raise SpecError(f"workload {self.name}: {len(self.tensor_flops)} tensor_flops for "
                            f"{len(self.tensor_sizes)} tensor_sizes")
        for f in self.tensor_flops:
            _positive(f"workload {self.name} tensor flops", f, allow_zero=True)

    @property
    def parameters(self) -> int:
        """Number of trainable parameters."""
        return int(sum(self.tensor_sizes))

    @property
    def gradient_bytes(self) -> int:
        """Bytes of one full-precision gradient (or parameter) copy."""
        return self.parameters * self.bytes_per_element

    def compute_for(self, cluster: Cluster) -> tuple[ComputeTime, float, str]:
        """The compute time to use on ``cluster``'s GPU: (curve, scale factor, provenance).

        A measured curve for the GPU is used as is (scale 1). Otherwise the first measured curve whose
        GPU peak is known is scaled by peak_measured / peak_cluster (an estimate, said in provenance).
        """
        if cluster.gpu in self.compute:
            ct = self.compute[cluster.gpu]
            return ct, 1.0, ct.source or f"measured on {cluster.gpu}"
        if len(self.compute) == 1 and not cluster.gpu:
            (gpu, ct), = self.compute.items()
            return ct, 1.0, ct.source or f"measured on {gpu}"
        known = [g for g in self.compute if self.compute_peak_flops.get(g)]
        if cluster.peak_flops and known:
            # the measured GPU closest in peak FLOP/s, so the extrapolation is the shortest one
            gpu = min(known, key=lambda g: abs(math.log(self.compute_peak_flops[g] / cluster.peak_flops)))
            ct = self.compute[gpu]
            scale = self.compute_peak_flops[gpu] / cluster.peak_flops
            return ct, scale, f"scaled by peak FLOP/s from {gpu} x{scale:.3g} ({ct.source})"
        raise SpecError(f"workload {self.name} has no compute time for GPU {cluster.gpu!r} "
                        f"(measured: {', '.join(sorted(self.compute))}) and no peak FLOP/s to scale by; "
                        f"profile it with `perfmodel profile` and pass --profile")


STRATEGIES = ("ssgd", "terngrad", "daso", "asgd", "sync-ps", "byteps")
#: sharded data parallelism (perfmodel.sharded): ZeRO stages 1-3 and FSDP FULL_SHARD (= ZeRO-3's traffic)
SHARDED_STRATEGIES = ("zero1", "zero2", "zero3", "fsdp")
ALL_STRATEGIES = STRATEGIES + SHARDED_STRATEGIES
DASO_PROGRESS = ("async", "wait")
ALLREDUCE_ALGORITHMS = ("paper", "ring", "tree", "recursive-doubling", "rabenseifner", "hierarchical", "nccl",
                        "reduce-broadcast", "basic-linear", "ompi")
#: TernGrad's exchanges of the ternary codes, the names the trainer's registry (trainers.exchanges) and
#: every model-side table (perfmodel.wire, compression, codec_memory, scaling) are keyed by: levels
#: (integer allreduce), ps (sharded parameter server), allgather (every rank's packed codes)
TERNGRAD_LEVELS, TERNGRAD_PS, TERNGRAD_ALLGATHER = "levels", "ps", "allgather"
TERNGRAD_EXCHANGES = (TERNGRAD_LEVELS, TERNGRAD_PS, TERNGRAD_ALLGATHER)
#: The exchange a TernGrad run and a TernGrad prediction use unless told otherwise
DEFAULT_TERNGRAD_EXCHANGE = TERNGRAD_LEVELS
TERNGRAD_LANES = ("int8", "packed")
STAGINGS = ("device", "host")
PS_PLACEMENTS = ("colocated", "dedicated")
# how fp32 gradients reach a narrower wire and back (perfmodel.bucket_copy)
WIRE_CASTS = ("separate", "in-copy", "none")


# Share of the ideal overlap gain that concurrent compute and collective kernels realize: 21% on average
# over GEMM + collective pairs (Agrawal et al., arXiv 2412.14335, 2024; measured on AMD MI300X, applied to
# every GPU here). The default of Strategy.overlap_efficiency and of `perfmodel predict`.
OVERLAP_EFFICIENCY = 0.21


@dataclass(frozen=True)
class Strategy:
    """How gradients or parameters travel.

    name: ssgd | terngrad | daso | asgd | sync-ps | byteps, or a sharded one: zero1 | zero2 | zero3 | fsdp
    (perfmodel.sharded; zero_prefetch: stage 3 gathers the next layer's parameters while the current
    one computes, hiding the all-gathers behind compute).
    allreduce: collective algorithm for ssgd/terngrad and DASO's node-local step ("nccl": NCCL's own
    choice of ring or tree and protocol by message size, perfmodel.nccl; "ompi": the algorithm Open MPI
    5.0's tuned rules pick by communicator and message size, perfmodel.ompi_tuned; "reduce-broadcast":
    reduce to one device, or to the CPU with staging "host", then broadcast; "basic-linear": Open MPI's
    linear reduce to rank 0 and linear broadcast).
    overlap: None (default) computes the share of communication hidden behind backprop from the gradient
    bucket schedule (perfmodel.overlap) for ssgd, sync-ps, byteps and DASO's node-local allreduce (no
    overlap for terngrad and asgd, and for allreduce "paper", whose formula has none); a number in 0..1
    overrides it as a constant fraction of min(t_comm, t_compute).
    bucket_mb: gradient bucket size in MiB (PyTorch DDP bucket_cap_mb default 25; Horovod's fusion
    buffer, HOROVOD_FUSION_THRESHOLD, 64 MiB before v0.21, 128 MiB from v0.21).
    staging: "device" (collective on GPU buffers, CUDA-aware) or "host" (device-to-host copy, MPI
    reduction in host memory, host-to-device copy: MPI without CUDA awareness); applies to ssgd's
    allreduce (sync-ps and byteps always go through host memory).
    step_overhead_s: framework time added to every multi-GPU step, seconds (0 by default: the measured
    single-GPU step already holds the framework's own cost).
    overlap_efficiency: None (default) derives the overlap from its causes (perfmodel.overlap_causes:
    the bucket schedule with the slowdowns of compute and collective running at once); a number in
    0..1 is an explicit override: that share of the ideal schedule's hidden seconds (the old default
    was OVERLAP_EFFICIENCY = 0.21, Agrawal et al., arXiv 2412.14335, 2024).
    first_bucket_mb: the first bucket sent closes at this many MiB (PyTorch DDP: 1; 0 = bucket_mb).
    overlap_compute_slowdown / overlap_comm_slowdown: how much slower backprop (sigma) and a collective
    (mu) run while both run (0 = not at all; None = the setting's default, perfmodel.overlap_causes).
    cycle_time_s: the period of a framework's background communication loop, seconds (0 = a bucket's
    collective starts as soon as it is ready, as in PyTorch DDP and TensorFlow graphs). Horovod's thread
    wakes every HOROVOD_CYCLE_TIME (5 ms before v0.21, 1 ms from v0.21: Horovod CHANGELOG v0.21.0,
    PR #2468) and launches what is ready then, so a bucket waits cycle_time_s / 2 on average before
    its collective starts (perfmodel.overlap.exposed_time's start_delay).
    bucket_copies: copies of the gradient a framework makes per exchange, into its buckets and back (2: PyTorch
    DDP's default gradient_as_bucket_view=False, Horovod's fusion buffer; 0: gradients that are views into
    the buckets, or one collective per tensor); ssgd and DASO's node-local DDP on a GPU charge them at the
    GPU's memory bandwidth (perfmodel.bucket_copy).
    wire_cast: with a wire narrower than fp32, how the fp32 gradients get to it and back, charged with the
    copies (perfmodel.bucket_copy): "separate" casts (DDP's fp16/bf16 compress hooks, Horovod's
    Compression.fp16; the default), "in-copy" (the copies into the bucket and back convert), "none" (the
    gradients are already in the wire format: an fp16 model).
    wire: element format on the wire for ssgd, sync-ps and byteps ("fp32", "fp16", "bf16").
    terngrad_min_elems / terngrad_fp32_last: tensors smaller than the threshold, and the classifier
    layer when set, travel in fp32 (defaults: the trainers', 1 and True). terngrad_encode_elems_per_s:
    scalers+ternarize+pack rate, once per step; terngrad_decode_elems_per_s: unpack+sum rate per
    received copy (allgather decodes every worker's copy, levels one sum, ps the p shards it serves
    and the gathered sum); terngrad_convert_elems_per_s: the summed codes' conversion to the float
    mean s x sum / p, once per step; terngrad_ps_aggregate_elems_per_s: the ps exchange's work on each
    rank besides its collectives (sum of the W shards, packing at ceil(log2(2W+1)) bits, unpacking
    the W gathered sums), W x shard elements at this rate, in place of its two decodes (0: not
    measured, two decodes); elements per second; 0 means not measured: the GPU's memory traffic
    (perfmodel.codec_memory) where the cluster has its memory bandwidth, else free; inf is free. terngrad_exchange: the trainer's
    exchanges (trainers.exchanges; their bytes: perfmodel.wire): levels allreduces the integer sum (int8 up to 127 workers,
    then int16; in 4-bit lanes at 2..7 workers when terngrad_lanes is "packed", which needs a transport
    with user-defined reduction operations: MPI, not NCCL or gloo; perfmodel.wire.levels_lane_bits;
    terngrad_lanes "int8", the default, is what NCCL and gloo sum), ps pushes 2-bit shards (alltoall)
    and pulls ceil(log2(2p+1))-bit sums (allgather),
    allgather gathers every worker's 2-bit gradient (does not scale); with allreduce "paper" the
    paper's own parameter server is charged (|theta| = the pull, log2(2p+1) bits per element) and allgather
    is refused.
    daso_B: global sync every B batches; daso_W: batches the non-blocking global sync is overlapped with
    (0 = blocking, bf16 on the wire). daso_progress: "async" if the non-blocking sync moves while the
    GPUs compute (NCCL, RDMA: it costs only what W batches of compute do not hide), "wait" if it moves
    only inside the wait (MPI on CPU ranks without a progress thread: it is paid in full at the merge).
    daso_nonblocking_factor: the non-blocking sync's time over a blocking allreduce of the same bytes
    (perfmodel profile measures it as iallreduce / allreduce; 1 = as fast).
    ps_servers: parameter servers (asgd, sync-ps) or BytePS's CPU summation machines (byteps, with
    ps_placement "dedicated"). ps_placement: "colocated" (servers run on the worker nodes; for byteps:
    summation on the GPU machines only, no CPU machines) or "dedicated" (servers on their own nodes, each
    with one node network link). ps_local_reduce: sync-ps sums the GPUs of a node before the push
    (TensorFlow distributed_replicated, MXNet dist_device_sync) or every GPU pushes its own gradient.
    ps_update_s: seconds a parameter server spends applying one whole push (the optimizer step on all
    the parameters) before it answers; asgd adds ps_update_s / ps_servers to the worker's exchange and
    to each server's time per exchange (0 by default: the update hidden or free).
    straggler_cv: coefficient of variation of per-batch times (gamma CVB model, 0 = none);
    straggler_machine_cv: machine heterogeneity (0 homogeneous task noise only).
    sync_wait_s: seconds that each synchronization point of a step after its first costs beyond its
    collective's own time (terngrad: the codes' exchange after the encoding, the fp32 tensors'
    Allreduce after the decoding, perfmodel.compression.codec_sync_points): the wait for the slowest
    rank's work since the previous collective and, on ranks that share cores, the scheduling of the
    collective's hops. 0 by default (the straggler model's one wait per step, at the first collective);
    ``perfmodel profile`` measures it on CPU ranks (CodecTimes.sync_wait_s).
    """

    name: str
    allreduce: str = "ring"
    overlap: float | None = None
    wire: str = "fp32"
    terngrad_min_elems: int = 1
    terngrad_fp32_last: bool = True
    terngrad_encode_elems_per_s: float = 0.0
    terngrad_decode_elems_per_s: float = 0.0
    terngrad_convert_elems_per_s: float = 0.0
    terngrad_ps_aggregate_elems_per_s: float = 0.0
    terngrad_exchange: str = DEFAULT_TERNGRAD_EXCHANGE
    terngrad_lanes: str = "int8"
    daso_B: int = 4
    daso_W: int = 1
    daso_progress: str = "async"
    daso_nonblocking_factor: float = 1.0
    ps_servers: int = 1
    ps_update_s: float = 0.0
    straggler_cv: float = 0.0
    straggler_machine_cv: float = 0.0
    bucket_mb: float = 25.0
    staging: str = "device"
    step_overhead_s: float = 0.0
    cycle_time_s: float = 0.0
    overlap_efficiency: float | None = None
    ps_placement: str = "colocated"
    ps_local_reduce: bool = True
    sync_wait_s: float = 0.0
    zero_prefetch: bool = True
    first_bucket_mb: float = 0.0
    overlap_compute_slowdown: float | None = None
    overlap_comm_slowdown: float | None = None
    bucket_copies: int = 2
    wire_cast: str = "separate"

    def __post_init__(self) -> None:
        if self.name not in ALL_STRATEGIES:
            raise SpecError(f"unknown strategy {self.name!r}; choose from {', '.join(ALL_STRATEGIES)}")
        if self.allreduce not in ALLREDUCE_ALGORITHMS:
            raise SpecError(f"unknown allreduce {self.allreduce!r}; choose from {', '.join(ALLREDUCE_ALGORITHMS)}")
        if self.overlap is not None:
            _positive("overlap", self.overlap, allow_zero=True)
            if float(self.overlap) > 1.0:
                raise SpecError(f"overlap must be in [0, 1], got {self.overlap!r}")
        if self.wire not in ("fp32", "fp16", "bf16"):
            raise SpecError(f"wire must be fp32, fp16 or bf16, got {self.wire!r}")
        if self.terngrad_min_elems < 0:
            raise SpecError(f"terngrad_min_elems must be >= 0, got {self.terngrad_min_elems!r}")
        _positive("terngrad_encode_elems_per_s", self.terngrad_encode_elems_per_s, allow_zero=True,
                  allow_inf=True)
        _positive("terngrad_decode_elems_per_s", self.terngrad_decode_elems_per_s, allow_zero=True,
                  allow_inf=True)
        _positive("terngrad_convert_elems_per_s", self.terngrad_convert_elems_per_s, allow_zero=True,
                  allow_inf=True)
        _positive("terngrad_ps_aggregate_elems_per_s", self.terngrad_ps_aggregate_elems_per_s, allow_zero=True,
                  allow_inf=True)
        if self.terngrad_exchange not in TERNGRAD_EXCHANGES:
            raise SpecError(f"terngrad_exchange must be one of {', '.join(TERNGRAD_EXCHANGES)}, "
                            f"got {self.terngrad_exchange!r}")
        if self.terngrad_lanes not in TERNGRAD_LANES:
            raise SpecError(f"terngrad_lanes must be one of {', '.join(TERNGRAD_LANES)}, got {self.terngrad_lanes!r}")
        if self.name == "terngrad" and self.allreduce == "paper" and self.terngrad_exchange == TERNGRAD_ALLGATHER:
            raise SpecError("terngrad_exchange allgather cannot run on allreduce paper (the paper's form "
                            "charges its parameter server: push 2 bits, pull log2(2p+1) bits); use levels "
                            "or ps, or another allreduce")
        _positive_int("daso_B", self.daso_B)
        if isinstance(self.daso_W, bool) or self.daso_W < 0 or self.daso_W > self.daso_B:
            raise SpecError(f"daso_W must be in 0..daso_B={self.daso_B}, got {self.daso_W!r}")
        if self.daso_progress not in DASO_PROGRESS:
            raise SpecError(f"daso_progress must be one of {', '.join(DASO_PROGRESS)}, got {self.daso_progress!r}")
        _positive("daso_nonblocking_factor", self.daso_nonblocking_factor)
        _positive_int("ps_servers", self.ps_servers)
        _positive("ps_update_s", self.ps_update_s, allow_zero=True)
        _positive("straggler_cv", self.straggler_cv, allow_zero=True)
        _positive("straggler_machine_cv", self.straggler_machine_cv, allow_zero=True)
        _positive("sync_wait_s", self.sync_wait_s, allow_zero=True)
        _positive("bucket_mb", self.bucket_mb)
        if self.staging not in STAGINGS:
            raise SpecError(f"staging must be one of {', '.join(STAGINGS)}, got {self.staging!r}")
        if self.staging == "host" and self.allreduce in ("paper", "nccl"):
            raise SpecError(f"staging host is MPI on host buffers; allreduce {self.allreduce} "
                            + ("already counts the host copy" if self.allreduce == "paper" else "runs on the GPUs"))
        _positive("step_overhead_s", self.step_overhead_s, allow_zero=True)
        _positive("cycle_time_s", self.cycle_time_s, allow_zero=True)
        if self.overlap_efficiency is not None:
            _positive("overlap_efficiency", self.overlap_efficiency, allow_zero=True)
            if float(self.overlap_efficiency) > 1.0:
                raise SpecError(f"overlap_efficiency must be in [0, 1], got {self.overlap_efficiency!r}")
        _positive("first_bucket_mb", self.first_bucket_mb, allow_zero=True)
        _positive_int("bucket_copies", self.bucket_copies, allow_zero=True)
        for f in ("overlap_compute_slowdown", "overlap_comm_slowdown"):
            if getattr(self, f) is not None:
                _positive(f, getattr(self, f), allow_zero=True)
        if self.ps_placement not in PS_PLACEMENTS:
            raise SpecError(f"ps_placement must be one of {', '.join(PS_PLACEMENTS)}, got {self.ps_placement!r}")
        if not isinstance(self.ps_local_reduce, (bool, np.bool_)):
            raise SpecError(f"ps_local_reduce must be true or false, got {self.ps_local_reduce!r}")
        if self.wire_cast not in WIRE_CASTS:
            raise SpecError(f"wire_cast must be one of {', '.join(WIRE_CASTS)}, got {self.wire_cast!r}")
        if not isinstance(self.zero_prefetch, (bool, np.bool_)):
            raise SpecError(f"zero_prefetch must be true or false, got {self.zero_prefetch!r}")


def daso_strategy_fields(daso: dict | None) -> dict:
    """DASO's non-blocking sync as measured on a machine ({"progress": ..., "nonblocking_factor": ...},
    perfmodel.lab.profile.to_specs.profile_daso) as Strategy keyword arguments; a key it lacks keeps
    Strategy's default."""
    return {f"daso_{k}": v for k, v in (daso or {}).items()}
