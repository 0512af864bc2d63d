"""The profile file's records: a versioned record of one machine's compute and communication times.

``perfmodel profile`` writes it and ``perfmodel predict --profile`` reads it (perfmodel.lab.profile.profile_file:
``save_profile``, atomic; ``load_profile``); perfmodel.lab.profile.to_specs turns it into the model's specs.
Units are in the field names: ``_s`` seconds, ``_bytes`` bytes, ``_Bps`` bytes per second.
Imports numpy and scipy (through ``fit``) only: no torch, no mpi4py.

Layout (SCHEMA_VERSION 1)::

    {"schema_version": 1, "created": ISO time, "command": argv,
     "machine": {hostname, cpu_model, cpu_cores, torch_version, mpi_library, gpu_name, gpu_topology, ...},
     "model":   {name, origin, input_shape, num_classes, tensor_names, tensor_sizes, bytes_per_element},
     "compute": {device, key, threads, warmup, repeats, rows: [{batch, forward, backward, step, total}],
                 fit: {intercept, slope, ...}, copy: {nbytes, d2h, h2d} | null, host_link: fit | null},
     "comm":    [{ranks, backend, library, hosts, wall_s,
                  ops: {allreduce: {sizes_bytes, median_s, p25_s, p75_s, min_s, max_s, iters,
                                    algbw_Bps, busbw_Bps, fit: {alpha_s, beta_s_per_byte, segments}}}}]}
"""

from __future__ import annotations

import math
import re
import typing
from dataclasses import dataclass, field

from .fit import AffineFit, AlphaBetaFit
from .overlap_record import OverlapTiming

__all__ = ["SCHEMA_VERSION", "ProfileError", "Machine", "ModelInfo", "Stats", "ComputeRow", "CopyTimes", "ComputeProfile",
           "OpProfile", "OverlapTiming", "ConcurrentCompute", "KernelLoad", "CommProfile", "Profile", "BUSBW_FACTORS",
           "BLOCK_OPS", "PS_ROUNDS", "op_blocks", "COMM_OPS", "BACKENDS", "FIT_STATS", "TIMINGS", "device_key"]

SCHEMA_VERSION = 1


class ProfileError(ValueError):
    """A profile file is missing, malformed, from another schema version, or lacks what is asked of it."""


def _busbw_allreduce(p: int) -> float:
    return 2.0 * (p - 1) / p


# Bus bandwidth = algorithm bandwidth (bytes / seconds) times this factor of the rank count, as
# nccl-tests defines it (doc/PERFORMANCE.md): it makes numbers comparable with the link's peak.
BUSBW_FACTORS: dict[str, typing.Callable[[int], float]] = {
    "pingpong": lambda p: 1.0,  # one-way time of a message between two ranks (nccl-tests sendrecv)
    "allreduce": _busbw_allreduce,
    "iallreduce": _busbw_allreduce,  # MPI_Iallreduce + MPI_Wait back to back (DASO's non-blocking sync)
    # the same on one rank per node (each host's first rank; the others wait at the barrier): DASO's
    # global group, p = the nodes (CommProfile.nodes); timed only where some node runs several ranks
    "global_iallreduce": _busbw_allreduce,
    "bcast": lambda p: 1.0,
    "reduce": lambda p: 1.0,
    # OSU's convention: the size is one rank's block (allgather) or one block to each peer (alltoall);
    # nccl-tests' busbw = (total bytes / t) (p-1)/p with total = p x the block, i.e. (p-1) x block / t
    "allgather": lambda p: float(p - 1),
    "alltoall": lambda p: float(p - 1),
    # a parameter server's exchange (rank 0 serves the p-1 others, PS_ROUNDS pushes and pulls of n
    # bytes each): the bytes the server receives, p-1 workers x PS_ROUNDS x n, over t
    "ps": lambda p: float((p - 1) * PS_ROUNDS),
}
#: Pushes (and pulls) each worker makes in one timed call of the "ps" operation: enough for the
#: server's incoming and outgoing traffic to overlap as in training, few enough to stay cheap.
PS_ROUNDS = 2


def op_blocks(op: str, ranks: int) -> int:
    """Blocks of n bytes that one call of a ``BLOCK_OPS`` operation on ``ranks`` ranks takes in turn,
    t = blocks (alpha + n beta): p-1 for the ring Allgather and the pairwise Alltoall (one block per
    step); for "ps" (p-1) PS_ROUNDS + 1 from 2 workers on, whose server receives one push while it
    sends the previous pull (full duplex), so that only the first push and the last pull are not
    overlapped, and 2 PS_ROUNDS for one worker, whose pushes and pulls alternate."""
    if op not in BLOCK_OPS:
        raise ValueError(f"no block form for {op!r}; block operations: {', '.join(BLOCK_OPS)}")
    if op == "ps":
        return 2 * PS_ROUNDS if ranks == 2 else (ranks - 1) * PS_ROUNDS + 1
    return ranks - 1


#: Operations a call of which takes op_blocks(op, p) blocks in turn: t = blocks (alpha + n beta) for
#: a block of n bytes (perfmodel.collectives.cluster_allgather/alltoall, ps_exchange's server).
BLOCK_OPS: tuple[str, ...] = ("allgather", "alltoall", "ps")
COMM_OPS: tuple[str, ...] = tuple(BUSBW_FACTORS)
BACKENDS: tuple[str, ...] = ("mpi", "nccl", "gloo")
FIT_STATS: tuple[str, ...] = ("median", "p25", "min")
#: How a communication benchmark timed its calls (perfmodel.lab.profile.comm): each after a barrier, or in a row.
TIMINGS: tuple[str, ...] = ("barrier", "back-to-back")


def device_key(name: str) -> str:
    """Key for a compute device in Workload.compute: "cpu", or the GPU name without vendor words.

    "NVIDIA GeForce GTX 1080" -> "gtx1080", "Tesla P100-PCIE-16GB" -> "p100pcie16gb",
    "NVIDIA H200" -> "h200".
    """
    words = [w for w in re.split(r"\s+", name.strip().lower()) if w not in ("nvidia", "geforce", "tesla")]
    key = re.sub(r"[^a-z0-9]", "", "".join(words))
    return key or "cpu"


# ---------------------------------------------------------------- records


@dataclass(frozen=True)
class Machine:
    """Where the profile was taken. cpu_cores: logical CPUs; cpu_affinity: those this process may use."""

    hostname: str
    platform: str
    python: str
    cpu_model: str
    cpu_cores: int
    cpu_affinity: int
    torch_version: str = ""
    torch_threads: int = 0
    mpi_library: str = ""
    mpi4py_version: str = ""
    mpiexec_version: str = ""
    gpu_name: str = ""
    gpu_count: int = 0
    cuda_version: str = ""
    nccl_version: str = ""
    gpu_topology: str = ""  # what `nvidia-smi topo -m` printed (two or more GPUs; gpu_layout)

    def __post_init__(self) -> None:
        if self.cpu_cores < 1 or self.cpu_affinity < 1:
            raise ValueError(f"cpu_cores and cpu_affinity must be >= 1, got {self.cpu_cores}, {self.cpu_affinity}")
        if self.gpu_count < 0:
            raise ValueError(f"gpu_count must be >= 0, got {self.gpu_count}")


@dataclass(frozen=True)
class ModelInfo:
    """The profiled network. origin: "workload" (trainers.models) or "module" (module:callable)."""

    name: str
    origin: str
    input_shape: tuple[int, ...]
    num_classes: int
    tensor_names: tuple[str, ...]
    tensor_sizes: tuple[int, ...]
    bytes_per_element: int = 4

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("model name must not be empty")
        if self.origin not in ("workload", "module"):
            raise ValueError(f"model origin must be 'workload' or 'module', got {self.origin!r}")
        if not self.tensor_sizes or any(n < 1 for n in self.tensor_sizes):
            raise ValueError("model tensor_sizes must be a non-empty list of positive integers")
        if len(self.tensor_names) != len(self.tensor_sizes):
            raise ValueError(f"model has {len(self.tensor_names)} tensor_names for {len(self.tensor_sizes)} tensor_sizes")
        if self.num_classes < 1 or any(d < 1 for d in self.input_shape):
            raise ValueError("model num_classes and input_shape must be positive")

    @property
    def parameters(self) -> int:
        """Trainable parameters."""
        return int(sum(self.tensor_sizes))

    @property
    def gradient_bytes(self) -> int:
        """Bytes of one gradient copy."""
        return self.parameters * self.bytes_per_element

    @property
    def classifier_tensors(self) -> int:
        """Trailing tensors that belong to the last module (e.g. fc3.weight, fc3.bias -> 2)."""
        owner = [n.rsplit(".", 1)[0] if "." in n else n for n in self.tensor_names]
        k = 1
        while k < len(owner) and owner[-k - 1] == owner[-1]:
            k += 1
        return k


@dataclass(frozen=True)
class Stats:
    """Summary of repeated timings, seconds: median and spread (quartiles, extremes)."""

    median_s: float
    p25_s: float
    p75_s: float
    min_s: float
    max_s: float
    n: int

    def __post_init__(self) -> None:
        vals = (self.min_s, self.p25_s, self.median_s, self.p75_s, self.max_s)
        if any(not math.isfinite(v) or v < 0 for v in vals):
            raise ValueError(f"timings must be finite and >= 0, got {vals}")
        if not all(a <= b * (1 + 1e-12) + 1e-15 for a, b in zip(vals, vals[1:])):
            raise ValueError(f"timings must satisfy min <= p25 <= median <= p75 <= max, got {vals}")
        if self.n < 1:
            raise ValueError(f"timing count n must be >= 1, got {self.n}")

    @classmethod
    def of(cls, samples) -> "Stats":
        """Stats of a sequence of seconds."""
        import numpy as np

        a = np.asarray(samples, dtype=float)
        if a.size == 0:
            raise ValueError("no samples")
        q25, q50, q75 = np.percentile(a, [25, 50, 75])
        return cls(float(q50), float(q25), float(q75), float(a.min()), float(a.max()), int(a.size))


@dataclass(frozen=True)
class ComputeRow:
    """One batch size: forward (incl. loss), backward, optimizer step, and the whole step."""

    batch: int
    forward: Stats
    backward: Stats
    step: Stats
    total: Stats

    def __post_init__(self) -> None:
        if self.batch < 1 or not self.total.median_s > 0:
            raise ValueError(f"batch must be >= 1 and its total time > 0, got {self.batch} and {self.total.median_s}")


@dataclass(frozen=True)
class CopyTimes:
    """Device<->host copies of a gradient-sized buffer (``nbytes``): d2h is the paper's t_cg."""

    nbytes: int
    d2h: Stats
    h2d: Stats


@dataclass(frozen=True)
class CodecTimes:
    """TernGrad's worker-side cost for the model's gradient, as the MPI trainer runs it (CPU/GPU time).

    encode: scalers, stochastic ternarization and 2-bit packing of ``elements`` ternary elements, once
    per step. decode: unpacking and summing ``workers`` workers' packed gradients (an Allgather
    exchange decodes every worker's copy), then ``convert``: the conversion of the summed codes to the
    float mean s x sum / p written into the gradient, once per step whatever the number of copies
    (trainers.sync.terngrad ``_decode``; part of decode; None in profiles made before it was timed,
    whose decode spreads it over the copies). aggregate: the sharded parameter-server exchange's work
    on one rank at ``workers`` ranks besides its two collectives (trainers.compress.ps_shard_sum and
    ps_unpack_sums: the sum of the workers' 2-bit shards packed at ceil(log2(2W+1)) bits, then every
    rank's sums unpacked), over ``aggregate_elements`` = workers x shard elements; None in profiles
    made before it was timed.
    sync_wait_s: where the codec was timed on ``workers`` ranks at once, the seconds each
    synchronization point between its phases costs beyond its collective's own time: the mean over
    ranks and rounds of the exchange that follows the encoding and of the one that follows the
    decoding, each called in the codec's loop as the trainer calls it, less the same exchange timed on
    its own after a barrier before the loop (the wait for the slowest rank's work since the previous
    collective and, on ranks that share cores, the scheduling of the collective's hops;
    Strategy.sync_wait_s). None: timed on one process, or in profiles made before it was measured.
    """

    elements: int
    encode: Stats
    decode: Stats
    workers: int
    convert: Stats | None = None
    aggregate: Stats | None = None
    aggregate_elements: int = 0
    sync_wait_s: float | None = None

    def __post_init__(self) -> None:
        if (self.aggregate is None) != (self.aggregate_elements == 0) or self.aggregate_elements < 0:
            raise ValueError("aggregate and aggregate_elements (> 0) go together")
        if self.sync_wait_s is not None and not (math.isfinite(self.sync_wait_s) and self.sync_wait_s >= 0):
            raise ValueError(f"sync_wait_s must be finite and >= 0, got {self.sync_wait_s!r}")

    def rates(self) -> tuple[float, float, float, float]:
        """(encode, decode, convert, aggregate) in elements per second; decode per worker's copy, without
        the conversion where it was timed; convert and aggregate 0 (not measured) where they were not."""
        agg = self.aggregate_elements / self.aggregate.median_s if self.aggregate is not None else 0.0
        if self.convert is None:
            return (self.elements / self.encode.median_s, self.workers * self.elements / self.decode.median_s,
                    0.0, agg)
        unpack = max(self.decode.median_s - self.convert.median_s, 1e-9)
        return (self.elements / self.encode.median_s, self.workers * self.elements / unpack,
                self.elements / self.convert.median_s, agg)


@dataclass(frozen=True)
class ComputeProfile:
    """t_c(b) measurements on one device, their fit and (GPU) the host copy time."""

    device: str
    key: str
    device_name: str
    threads: int
    warmup: int
    repeats: int
    optimizer: str
    rows: tuple[ComputeRow, ...]
    fit: AffineFit
    copy: CopyTimes | None = None
    host_link: AlphaBetaFit | None = None
    codec: CodecTimes | None = None

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"compute device must be 'cpu' or 'cuda', got {self.device!r}")
        if not self.rows:
            raise ValueError("compute rows must not be empty")
        batches = [r.batch for r in self.rows]
        if batches != sorted(set(batches)):
            raise ValueError(f"compute batches must be strictly increasing, got {batches}")
        if self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")

    @property
    def t_cg(self) -> float:
        """Seconds to copy the gradient device -> host (0 on CPU)."""
        return self.copy.d2h.median_s if self.copy is not None else 0.0


@dataclass(frozen=True)
class OpProfile:
    """One communication operation over message sizes: medians, spread, bandwidths and the fit.

    Times are per operation, the slowest rank's, over ``repeats`` runs of ``iters`` calls, each call
    after a barrier (``timing`` "barrier") or all back to back ("back-to-back", what profiles written
    before the option measured); pingpong times are one way (round trip / 2). algbw = bytes / median
    time; busbw = algbw * BUSBW_FACTORS[op]. ``fit`` is fitted to the ``fit_stat`` column ("median",
    "p25" or "min").
    """

    op: str
    sizes_bytes: tuple[int, ...]
    median_s: tuple[float, ...]
    p25_s: tuple[float, ...]
    p75_s: tuple[float, ...]
    min_s: tuple[float, ...]
    max_s: tuple[float, ...]
    iters: tuple[int, ...]
    repeats: int
    algbw_Bps: tuple[float, ...]
    busbw_Bps: tuple[float, ...]
    fit: AlphaBetaFit
    fit_stat: str = "median"
    timing: str = "back-to-back"

    def __post_init__(self) -> None:
        if self.timing not in TIMINGS:
            raise ValueError(f"timing must be one of {', '.join(TIMINGS)}, got {self.timing!r}")
        if self.fit_stat not in FIT_STATS:
            raise ValueError(f"fit_stat must be one of {', '.join(FIT_STATS)}, got {self.fit_stat!r}")
        if self.op not in BUSBW_FACTORS:
            raise ValueError(f"unknown op {self.op!r}; choose from {', '.join(COMM_OPS)}")
        n = len(self.sizes_bytes)
        if n == 0:
            raise ValueError(f"{self.op}: sizes_bytes must not be empty")
        for name in ("median_s", "p25_s", "p75_s", "min_s", "max_s", "iters", "algbw_Bps", "busbw_Bps"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{self.op}: {name} has {len(getattr(self, name))} values for {n} sizes")
        if list(self.sizes_bytes) != sorted(set(self.sizes_bytes)) or self.sizes_bytes[0] < 1:
            raise ValueError(f"{self.op}: sizes_bytes must be positive and strictly increasing")
        if not all(math.isfinite(t) and t > 0 for t in self.median_s + self.p25_s + self.p75_s + self.min_s + self.max_s):
            raise ValueError(f"{self.op}: times must be finite and > 0 (a time of 0 is not a measurement)")

    def times(self, stat: str | None = None) -> tuple[float, ...]:
        """The per-size times of one statistic (default: the fitted one)."""
        stat = stat or self.fit_stat
        if stat not in FIT_STATS:
            raise ValueError(f"stat must be one of {', '.join(FIT_STATS)}, got {stat!r}")
        return getattr(self, f"{stat}_s")

    def latency_from(self, min_bytes: float) -> float:
        """Small-message latency (seconds) of the messages of at least ``min_bytes``: the fit's intercept
        (``AlphaBetaFit.latency_s``), refitted (the ``fit_stat`` column) to those sizes alone where smaller
        ones were measured. A ring's latency: Open MPI's ring Allreduce runs recursive doubling below
        one element per rank (ompi/mca/coll/base/coll_base_allreduce.c), and a fit through those sizes
        may start with a segment of that algorithm (4 emulated nodes at 250 Mbit/s: 8 B in 0.07 ms,
        16 B to 4 KiB in 0.19 ms, and an intercept of 0)."""
        from .fit import fit_alpha_beta

        col = getattr(self, f"{self.fit_stat}_s")
        keep = [(n, t) for n, t in zip(self.sizes_bytes, col) if n >= min_bytes]
        if len(keep) == len(self.sizes_bytes) or len(keep) < 2:
            return self.fit.latency_s
        return fit_alpha_beta([n for n, _ in keep], [t for _, t in keep]).latency_s

    def time_at(self, nbytes: float) -> float:
        """Seconds for a message of ``nbytes`` as measured: the fitted column (``fit_stat``) interpolated
        linearly between the two measured sizes around nbytes (exact for an alpha-beta line between
        them; the measured time itself at a measured size), the piecewise fit outside the measured
        sizes. The fit may miss a size by up to its tolerance (15%, perfmodel.lab.profile.fit): on the
        emulated links the ring Iallreduce of 233 KB took 15.9 ms by its neighbours, 11.8 ms by the fit."""
        import numpy as np

        n = float(nbytes)
        if not n > 0:
            raise ValueError(f"nbytes must be > 0, got {nbytes!r}")
        if self.sizes_bytes[0] <= n <= self.sizes_bytes[-1]:
            return float(np.interp(n, np.asarray(self.sizes_bytes, dtype=float), np.asarray(self.times())))
        return float(self.fit.time(n))

    def stats(self, i: int) -> Stats:
        """The timing summary at size index i."""
        return Stats(self.median_s[i], self.p25_s[i], self.p75_s[i], self.min_s[i], self.max_s[i],
                     self.repeats)


@dataclass(frozen=True)
class ConcurrentCompute:
    """The training step timed on every rank of a multi-rank run at once, as a synchronous job runs it.

    For each batch size (``batches``): ``mean_s``, the mean over ranks and steps of one rank's step
    time; ``max_s``, the mean over steps of the slowest rank's (the step a synchronous exchange waits
    for); ``cv``, the coefficient of variation between the ranks of one round (root mean square over
    rounds of their standard deviation, over the mean: a slow spell of the whole machine slows every
    rank of a round alike and makes no rank wait, so the spread across rounds is left out).
    Each of ``repeats`` rounds starts all ranks together after a barrier and takes the batch sizes in
    turn. Ranks that share cores, memory bandwidth or a GPU slow each other here as in a real run,
    and the spread measures the straggler wait (perfmodel.stragglers) on this machine.

    After an exchange: ``after_mean_s[i][j]`` is the same mean at ``batches[j]`` when all ranks ran an
    MPI Allreduce of ``after_bytes[i]`` bytes between the barrier and the step, as a data-parallel
    trainer computes between two exchanges. The step meets caches emptied by the kernel's copies of the
    message and a core woken from the wait: on 2 emulated nodes at 100 Mbit/s LeNet's step at batch 8
    took 3.06 ms after the barrier alone and 3.96 / 4.72 ms after a ring Allreduce of 233 KB / 1.72 MB
    (docs/model.md).
    ``codec``: TernGrad's codec timed on all ranks at once, each encoding after a step in the trainer's
    order (the scalers, their Allreduce untimed, the ternarizing), each decoding after an Allreduce of the
    packed codes. ``overlap``: backprop and an Allreduce of the gradient alone and together (None: not timed).
    """

    batches: tuple[int, ...]
    mean_s: tuple[float, ...]
    max_s: tuple[float, ...]
    cv: tuple[float, ...]
    repeats: int
    threads: int = 1
    after_bytes: tuple[int, ...] = ()
    after_mean_s: tuple[tuple[float, ...], ...] = ()
    codec: CodecTimes | None = None
    overlap: OverlapTiming | None = None

    def __post_init__(self) -> None:
        n = len(self.batches)
        if n == 0 or list(self.batches) != sorted(set(self.batches)) or self.batches[0] < 1:
            raise ValueError("batches must be positive and strictly increasing")
        for name in ("mean_s", "max_s", "cv"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} has {len(getattr(self, name))} values for {n} batch sizes")
        if any(not (math.isfinite(t) and t > 0) for t in self.mean_s):
            raise ValueError("mean_s must be finite and > 0")
        if any(mx < m * (1 - 1e-9) for m, mx in zip(self.mean_s, self.max_s)):
            raise ValueError("max_s must be >= mean_s (the slowest rank's mean is at least the mean)")
        if any(not (math.isfinite(c) and c >= 0) for c in self.cv):
            raise ValueError("cv must be finite and >= 0")
        if self.repeats < 3:
            raise ValueError(f"repeats must be >= 3, got {self.repeats}")
        if list(self.after_bytes) != sorted(set(self.after_bytes)) or any(b < 1 for b in self.after_bytes):
            raise ValueError("after_bytes must be positive and strictly increasing")
        if len(self.after_mean_s) != len(self.after_bytes) or any(len(r) != n for r in self.after_mean_s):
            raise ValueError(f"after_mean_s must hold {n} values for each of the {len(self.after_bytes)} "
                             f"after_bytes sizes")
        if any(not (math.isfinite(t) and t > 0) for r in self.after_mean_s for t in r):
            raise ValueError("after_mean_s must be finite and > 0")

    def after(self, batch: int, nbytes: float) -> float:
        """Mean step (seconds) at ``batch`` right after an Allreduce of ``nbytes`` bytes: linear in the
        bytes between the measured sizes (0 bytes: ``mean_s``, the step after the barrier alone), the
        largest size's time beyond it (the caches are cold once a message has swept
        them). ``mean_s`` when no size was measured or nbytes <= 0."""
        import numpy as np

        base = self.at(batch)[0]
        if not self.after_bytes or nbytes <= 0:
            return base
        xs = [0.0, *map(float, self.after_bytes)]
        ys = [base] + [_in_batch(self.batches, r, batch) for r in self.after_mean_s]
        return float(np.interp(nbytes, xs, ys))

    def at(self, batch: int) -> tuple[float, float, float]:
        """(mean_s, max_s, cv) at ``batch``, linear in the batch between measured sizes (the end
        segments' lines beyond them, times never below 0)."""
        mean, mx, cv = (_in_batch(self.batches, ys, batch) for ys in (self.mean_s, self.max_s, self.cv))
        return mean, max(mean, mx), cv


def _in_batch(batches: tuple[int, ...], ys: tuple[float, ...], batch: int) -> float:
    """ys (one per batch size) at ``batch``: linear between measured sizes, the end segments' lines
    beyond them, never below 0."""
    import numpy as np

    if len(batches) == 1:
        return float(ys[0])
    b = np.asarray(batches, dtype=float)
    i = int(np.clip(np.searchsorted(b, batch), 1, len(b) - 1))
    x0, x1, y0, y1 = b[i - 1], b[i], ys[i - 1], ys[i]
    return max(0.0, float(y0 + (y1 - y0) * (batch - x0) / (x1 - x0)))


@dataclass(frozen=True)
class KernelLoad:
    """The CPU time the operating system's network work takes per byte sent between two hosts.

    Measured on a two-host run (`perfmodel profile --link`): /proc/stat's irq and softirq time of the
    whole host (what the kernel does for the network outside any process: the receive path, the traffic
    shaper's dequeue, the transmit completions) while the two ranks exchange ``bytes_sent`` bytes with
    blocking MPI Sendrecv for ``busy_wall_s`` seconds, less the same counters over ``idle_wall_s``
    seconds in which both ranks sleep. The ranks' own system time (the socket copies in their MPI calls,
    MPI's polling) belongs to the ranks and is recorded (``busy_sys_s``) but not charged. On a real
    cluster this is the host's own load; on emulated nodes that share one machine's cores it is load on
    the cores every rank computes on (perfmodel.lab.profile.predictor, the kernel's share of the cores).
    """

    bytes_sent: float
    busy_wall_s: float
    busy_kernel_s: float
    idle_wall_s: float
    idle_kernel_s: float
    busy_sys_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("bytes_sent", "busy_wall_s", "idle_wall_s"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be > 0 and finite, got {v!r}")
        for name in ("busy_kernel_s", "idle_kernel_s", "busy_sys_s"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be >= 0 and finite, got {v!r}")

    @property
    def s_per_byte(self) -> float:
        """Kernel CPU seconds per byte sent between the hosts: the busy counters less the idle ones
        (scaled to the busy window), over the bytes; never below 0."""
        extra = self.busy_kernel_s - self.idle_kernel_s * self.busy_wall_s / self.idle_wall_s
        return max(extra, 0.0) / self.bytes_sent


@dataclass(frozen=True)
class CommProfile:
    """Communication measured with ``ranks`` processes; ops is empty for one rank (nothing moves).

    load_avg: the host's 1-minute load average before and after the measurement (other jobs sharing
    the CPUs inflate and scatter the times; compare with Machine.cpu_cores). launch: the mpiexec
    command line (binding included). compute: the model's training step timed on all ranks at once
    (``ConcurrentCompute``; None when no model was profiled or for NCCL/gloo runs). kernel_load: the
    kernel's network CPU time per byte between the run's two hosts (``KernelLoad``; `perfmodel profile
    --link`; None elsewhere).
    """

    ranks: int
    backend: str
    library: str
    hosts: tuple[str, ...]
    wall_s: float
    ops: dict[str, OpProfile] = field(default_factory=dict)
    load_avg: tuple[float, ...] = ()
    launch: str = ""
    compute: ConcurrentCompute | None = None
    kernel_load: KernelLoad | None = None

    @property
    def nodes(self) -> int:
        """Hosts the ranks ran on (at least 1): the group size of "global_iallreduce"."""
        return max(1, len(set(self.hosts)))

    def __post_init__(self) -> None:
        if self.ranks < 1:
            raise ValueError(f"ranks must be >= 1, got {self.ranks}")
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r}; choose from {', '.join(BACKENDS)}")
        for name, op in self.ops.items():
            if name != op.op:
                raise ValueError(f"ops key {name!r} holds op {op.op!r}")
        if self.ranks == 1 and self.ops:
            raise ValueError("a one-rank communication profile has no ops")
        if "global_iallreduce" in self.ops and not 2 <= self.nodes < self.ranks:
            raise ValueError(f"global_iallreduce runs on one rank per node: it needs 2 or more nodes with "
                             f"several ranks on some, got {self.ranks} ranks on {self.nodes} host(s)")


@dataclass(frozen=True)
class Profile:
    """Everything one ``perfmodel profile`` run measured."""

    schema_version: int
    created: str
    command: str
    machine: Machine
    model: ModelInfo | None = None
    compute: ComputeProfile | None = None
    comm: tuple[CommProfile, ...] = ()

    def __post_init__(self) -> None:
        if self.schema_version != SCHEMA_VERSION:
            raise ValueError(f"schema version {self.schema_version}, this perfmodel reads version {SCHEMA_VERSION}")

    def comm_for(self, backend: str = "mpi", ranks: int | None = None) -> CommProfile | None:
        """The comm profile of ``backend`` at ``ranks`` (default: the most ranks measured, >= 2)."""
        runs = [c for c in self.comm if c.backend == backend and c.ops]
        if ranks is not None:
            runs = [c for c in runs if c.ranks == ranks]
        return max(runs, key=lambda c: c.ranks) if runs else None
