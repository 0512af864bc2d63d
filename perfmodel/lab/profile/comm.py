"""Communication micro-benchmarks: ping-pong, Allreduce, Iallreduce, Bcast, Reduce, Allgather, Alltoall
and a parameter server's push/pull exchange over message sizes.

Run under MPI, one process per rank; rank 0 writes a ``CommProfile`` as JSON::

    mpiexec -n 2 python -m perfmodel.lab.profile.comm --max-bytes 64Mi --out comm2.json

Method (close to OSU micro-benchmarks and nccl-tests): for every size, ``warmup`` untimed calls, then
``repeats`` timed runs of ``iters`` calls; a run's time per call is the slowest rank's (``MPI.Wtime``; for torch backends ``time.perf_counter`` after synchronising the device,
as nccl-tests does). ``iters`` adapts to the size so a run lasts about ``target_s`` (cheap small
messages are repeated many times, 64 MiB once); ``repeats`` shrinks (not below ``min_repeats``)
when a size would take longer than ``size_budget_s``. Reported: median, quartiles and extremes over
the runs, algorithm bandwidth bytes/time and bus bandwidth as nccl-tests defines it, and an
alpha-beta fit per operation.
Timing ``"barrier"`` (the default, as OSU's collective benchmarks do) starts every call after a barrier
and times the call alone, so each call begins with the ranks together and the links idle, as a
training step's collectives begin after its compute; ``"back-to-back"`` (nccl-tests) times ``iters``
calls in a row between two barriers, so a call may start while a slower rank still finishes the last.
Measured on 2026-11-23, 2 emulated nodes at 100 Mbit/s (perfmodel.lab.emulate), ring Allreduce of 1 MiB:
131 ms back to back, 88 ms wire time, and the trainer's one call per step at the wire time.
``extra_sizes`` adds sizes to single operations, so that each is also timed exactly at the messages a
job sends (the model reads a link at its message size, interpolating between measured sizes:
perfmodel.lab.profile.schema.OpProfile.time_at; interpolation cannot see a protocol switch between two
sizes: measured on 2026-11-23, 4 emulated nodes at 100 Mbit/s, the ring Iallreduce took 1.06x the wire
time up to 245760 B and 1.31x at 262144 B, where its blocks of n/4 reach Open MPI's TCP eager limit,
64 KiB, and go by rendezvous). Ping-pong times are one way (round trip / 2) between ranks 0 and 1.
Allgather and Alltoall sizes are OSU's: one rank's block (Allgather), the block each rank sends to each
rank (Alltoall). "global_iallreduce" is the Iallreduce on the first rank of each host while the
others wait at the barrier: DASO's global sync runs on one rank per node (trainers/sync/daso.py), whose
link is not the all-ranks ring's (measured on 2026-11-24, 2 emulated nodes x 2 ranks at 100 Mbit/s: 1.72
MB took 149.4 ms on one rank per node, where the 4-rank ring's link predicted 165 ms); it is timed only
where the hosts differ and some host runs several ranks. "ps" is
the exchange of trainers.asynchronous.ps: every rank but 0 pushes n bytes to rank 0 and waits for n
bytes back, ``PS_ROUNDS`` times; rank 0 receives from whoever comes first and answers with a
non-blocking send, so that it receives one push while the previous pull leaves (the size is one push;
perfmodel.lab.profile.schema.op_blocks inverts the time to the server's per exchange). Ranks should
each have a core of their own (``perfmodel profile`` starts mpiexec with ``--bind-to core`` when they
fit): two busy-polling ranks sharing a core time the scheduler, not the link.

With a model (``--workload`` or ``--model``) and ``--batch``, an MPI run first times the model's
training step on all its ranks at once (perfmodel.lab.profile.compute.concurrent_compute): the
CommProfile's ``compute``; with ``compute_after`` also right after an Allreduce of each of those sizes,
as a data-parallel trainer computes between two exchanges; then backprop and an Allreduce of the
gradient alone and together (perfmodel.lab.profile.overlap_timing: ``compute.overlap``, the slowdowns
the predictor charges to overlapped buckets on CPU ranks). With ``kernel_load_s`` a 2-rank MPI run
also measures the kernel's network CPU time per byte between its hosts (perfmodel.lab.profile.kernel_load).

Backends: "mpi" (mpi4py, float32 numpy buffers), "nccl" (torch.distributed on CUDA tensors, one GPU
per rank, chosen by the node-local rank) and "gloo" (torch.distributed on CPU tensors; it exercises the
torch path on machines without a GPU). The torch backends rendezvous over TCP with the address
(``MASTER_ADDR`` if set, else rank 0's host name resolved) and a free port that rank 0 broadcasts
through MPI (perfmodel.lab.profile.transports).

torch and mpi4py are imported inside functions only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable, Sequence

from .schema import BACKENDS, BUSBW_FACTORS, COMM_OPS, FIT_STATS, TIMINGS, CommProfile, OpProfile, ProfileError, Stats
from .transports import Transport, make_transport

__all__ = ["CommConfig", "int_list", "parse_size", "default_sizes", "plan_iterations", "summarize", "run_benchmarks", "main"]

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "ki": 2**10, "kib": 2**10, "m": 10**6, "mb": 10**6,
          "mi": 2**20, "mib": 2**20, "g": 10**9, "gb": 10**9, "gi": 2**30, "gib": 2**30}


def parse_size(text: str) -> int:
    """Bytes from "8", "4Ki", "64Mi", "1MiB", "2k" (k/M/G decimal, Ki/Mi/Gi binary)."""
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(text))
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _UNITS:
        raise ValueError(f"bad size {text!r}; use an integer with an optional unit like 8, 4Ki, 64Mi")
    return int(m.group(1)) * _UNITS[unit]


def default_sizes(min_bytes: int = 8, max_bytes: int = 64 * 2**20) -> list[int]:
    """Powers of two from min_bytes up to max_bytes (both rounded to powers of two, at least 4 B)."""
    if min_bytes < 1 or max_bytes < min_bytes:
        raise ValueError(f"need 1 <= min_bytes <= max_bytes, got {min_bytes}, {max_bytes}")
    lo = max(2, math.ceil(math.log2(min_bytes)))
    hi = math.floor(math.log2(max_bytes))
    if hi < lo:
        raise ValueError(f"no power of two between {min_bytes} and {max_bytes} bytes (at least 4)")
    return [2**k for k in range(lo, hi + 1)]


@dataclass(frozen=True)
class CommConfig:
    """What to measure and how hard. sizes in bytes (multiples of 4: float32 elements), seconds elsewhere."""

    sizes: tuple[int, ...]
    ops: tuple[str, ...] = COMM_OPS
    backend: str = "mpi"
    warmup: int = 3
    repeats: int = 15
    min_repeats: int = 5
    target_s: float = 0.001
    size_budget_s: float = 1.5
    max_iters: int = 10000
    fit_stat: str = "median"
    timing: str = "barrier"
    # the model's training step timed on all ranks at once (perfmodel.lab.profile.compute.concurrent_compute):
    # a trainers.models name or "module:callable" (with input_shape); None: not timed
    workload: str | None = None
    model: str | None = None
    input_shape: tuple[int, ...] | None = None
    batches: tuple[int, ...] = ()
    compute_warmup: int = 3
    compute_repeats: int = 10
    threads: int = 1
    # the concurrent step is also timed right after an Allreduce of each of these sizes (bytes)
    compute_after: tuple[int, ...] = ()
    # more sizes for single operations, timed besides ``sizes``: ((op, (bytes, ...)), ...)
    extra_sizes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # seconds of the kernel's network CPU measurement on a 2-rank run (perfmodel.lab.profile.kernel_load); 0: none
    kernel_load_s: float = 0.0

    def sizes_for(self, op: str) -> tuple[int, ...]:
        """The sizes (bytes) ``op`` is timed at: ``sizes`` and its extra sizes, increasing."""
        extra = [n for name, more in self.extra_sizes if name == op for n in more]
        return tuple(sorted(set(self.sizes) | set(extra)))

    def __post_init__(self) -> None:
        if self.workload and self.model:
            raise ValueError("give workload or model, not both")
        if (self.workload or self.model) and (not self.batches or min(self.batches) < 1):
            raise ValueError(f"timing the model needs positive batch sizes, got {self.batches}")
        if self.compute_warmup < 0 or self.compute_repeats < 3 or self.threads < 1:
            raise ValueError("need compute_warmup >= 0, compute_repeats >= 3 and threads >= 1")

        if self.fit_stat not in FIT_STATS:
            raise ValueError(f"fit_stat must be one of {', '.join(FIT_STATS)}, got {self.fit_stat!r}")
        if not self.sizes:
            raise ValueError("sizes must not be empty")
        for what, sizes in (("sizes", self.sizes), ("compute-after sizes", self.compute_after),
                            *(("extra sizes", more) for _, more in self.extra_sizes)):
            for s in sizes:
                if isinstance(s, bool) or not isinstance(s, int) or s < 4 or s % 4:
                    raise ValueError(f"{what} must be integers >= 4 and multiples of 4 bytes, got {s!r}")
        if list(self.sizes) != sorted(set(self.sizes)):
            raise ValueError(f"sizes must be strictly increasing, got {self.sizes}")
        for op, _ in self.extra_sizes:
            if op not in self.ops:
                raise ValueError(f"extra sizes for {op!r}, which is not among the timed ops ({', '.join(self.ops)})")
        if not self.ops:
            raise ValueError("ops must not be empty")
        for op in self.ops:
            if op not in COMM_OPS:
                raise ValueError(f"unknown op {op!r}; choose from {', '.join(COMM_OPS)}")
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r}; choose from {', '.join(BACKENDS)}")
        if self.warmup < 1:
            raise ValueError(f"warmup must be >= 1, got {self.warmup}")
        if not 3 <= self.min_repeats <= self.repeats:
            raise ValueError(f"need 3 <= min_repeats <= repeats, got {self.min_repeats}, {self.repeats}")
        if not self.target_s > 0 or not self.size_budget_s > 0:
            raise ValueError("target_s and size_budget_s must be > 0")
        if self.max_iters < 1:
            raise ValueError(f"max_iters must be >= 1, got {self.max_iters}")
        if not (math.isfinite(self.kernel_load_s) and self.kernel_load_s >= 0):
            raise ValueError(f"kernel_load_s must be >= 0 seconds, got {self.kernel_load_s!r}")
        if self.timing not in TIMINGS:
            raise ValueError(f"timing must be one of {', '.join(TIMINGS)}, got {self.timing!r}")


def plan_iterations(est_s: float, cfg: CommConfig) -> tuple[int, int]:
    """(iters per run, runs) for an operation estimated at est_s seconds per call."""
    est = max(est_s, 1e-9)
    iters = int(min(cfg.max_iters, max(1, round(cfg.target_s / est))))
    runs = int(max(cfg.min_repeats, min(cfg.repeats, cfg.size_budget_s // (iters * est))))
    return iters, runs


# ---------------------------------------------------------------- measuring


def _time_calls(t: Transport, fn: Callable[[], None], iters: int, timing: str = "barrier") -> float:
    """Slowest rank's seconds per call over ``iters`` calls: each started after a barrier and timed
    alone ("barrier"), or all back to back after one barrier ("back-to-back")."""
    if timing == "back-to-back":
        t.barrier()
        t0 = t.clock()
        for _ in range(iters):
            fn()
        t.sync()
        return t.max_all((t.clock() - t0) / iters)
    total = 0.0
    for _ in range(iters):
        t.barrier()
        t0 = t.clock()
        fn()
        t.sync()
        total += t.clock() - t0
    return t.max_all(total / iters)


def measure_op(t: Transport, op: str, nbytes: int, cfg: CommConfig) -> tuple[list[float], int]:
    """(seconds per call for each run, iters per run) of ``op`` on ``nbytes`` (one way for pingpong).

    Warm-up calls first, then a calibration that quadruples the calls per run until a run lasts
    ``target_s / 4``, keeping the fastest time per call seen (every rank takes the same decisions:
    the times are maxima over ranks).
    """
    fn = t.prepare(op, nbytes)
    t.barrier()
    for _ in range(cfg.warmup):
        fn()
    t.sync()
    iters, best = 1, float("inf")
    while True:
        per_call = _time_calls(t, fn, iters, cfg.timing)
        best = min(best, per_call)
        if per_call * iters >= cfg.target_s / 4 or iters >= cfg.max_iters:
            break
        iters = min(cfg.max_iters, iters * 4)
    iters, runs = plan_iterations(best, cfg)
    half = 0.5 if op == "pingpong" else 1.0
    samples = [half * _time_calls(t, fn, iters, cfg.timing) for _ in range(runs)]
    return samples, iters


def summarize(op: str, ranks: int, sizes: Sequence[int], samples: Sequence[Sequence[float]],
              iters: Sequence[int], fit_stat: str = "median", timing: str = "barrier"):
    """An ``OpProfile`` (schema) from per-size run times: stats, bandwidths and the alpha-beta fit of
    the ``fit_stat`` column."""
    from .fit import fit_alpha_beta
    stats = [Stats.of(s) for s in samples]
    med = [s.median_s for s in stats]
    algbw = [n / t for n, t in zip(sizes, med)]
    factor = BUSBW_FACTORS[op](ranks)
    fitted = [getattr(s, f"{fit_stat}_s") for s in stats]
    return OpProfile(op=op, sizes_bytes=tuple(int(n) for n in sizes), median_s=tuple(med),
                     p25_s=tuple(s.p25_s for s in stats), p75_s=tuple(s.p75_s for s in stats),
                     min_s=tuple(s.min_s for s in stats), max_s=tuple(s.max_s for s in stats),
                     iters=tuple(int(i) for i in iters), repeats=min(s.n for s in stats),
                     algbw_Bps=tuple(algbw), busbw_Bps=tuple(b * factor for b in algbw),
                     fit=fit_alpha_beta(sizes, fitted), fit_stat=fit_stat, timing=timing)


def run_benchmarks(cfg: CommConfig, *, progress: Callable[[str, int], None] | None = None):
    """Measure every op and size on the current MPI job; the ``CommProfile`` on rank 0, None elsewhere."""
    start = time.perf_counter()
    load_before = _load_avg()
    t = make_transport(cfg.backend)
    try:
        concurrent = None
        if (cfg.workload or cfg.model) and cfg.backend == "mpi" and t.size > 1:
            from .compute import concurrent_compute, load_callable_model, load_workload_model
            from .overlap_timing import time_overlap

            model, info = (load_workload_model(cfg.workload) if cfg.workload
                           else load_callable_model(cfg.model, cfg.input_shape))
            concurrent = concurrent_compute(t.comm, model, info.input_shape, info.num_classes, cfg.batches,
                                            warmup=cfg.compute_warmup, repeats=cfg.compute_repeats,
                                            threads=cfg.threads, after_bytes=cfg.compute_after)
            # backprop and the gradient's Allreduce alone and together (perfmodel.lab.profile.overlap_timing)
            overlap = time_overlap(t.comm, model, info.input_shape, info.num_classes, cfg.batches,
                                   warmup=cfg.compute_warmup, repeats=cfg.compute_repeats, threads=cfg.threads)
            if concurrent is not None:  # rank 0
                concurrent = replace(concurrent, overlap=overlap)
        ops = {}
        nodes = len(t.node_leaders())

        def timed(op: str) -> bool:  # one rank: nothing moves; DASO's global group: only where it
            # differs from all ranks (2 or more nodes, several ranks on some)
            return t.size > 1 and (op != "global_iallreduce" or 2 <= nodes < t.size)

        ops_to_run = [op for op in cfg.ops if timed(op)]
        for op in ops_to_run:
            per_size, iters = [], []
            sizes = cfg.sizes_for(op)
            for nbytes in sizes:
                s, i = measure_op(t, op, nbytes, cfg)
                per_size.append(s)
                iters.append(i)
                if progress is not None and t.rank == 0:
                    progress(op, nbytes)
            if t.rank == 0:
                ops[op] = summarize(op, nodes if op == "global_iallreduce" else t.size, sizes, per_size, iters,
                                    cfg.fit_stat, cfg.timing)
        kernel = None
        if cfg.kernel_load_s > 0 and cfg.backend == "mpi" and t.size == 2:
            from .kernel_load import measure_kernel_load

            kernel = measure_kernel_load(t.comm, cfg.kernel_load_s)
        hosts = t.hosts()
    finally:
        t.close()
    if t.rank != 0:
        return None
    return CommProfile(ranks=t.size, backend=cfg.backend, library=t.library, hosts=tuple(sorted(set(hosts))),
                       wall_s=time.perf_counter() - start, ops=ops,
                       load_avg=tuple(v for v in (load_before, _load_avg()) if v is not None), compute=concurrent,
                       kernel_load=kernel)


def _load_avg() -> float | None:
    """The 1-minute load average, None where the OS has none."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return None


# ---------------------------------------------------------------- command line (under mpiexec)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m perfmodel.lab.profile.comm",
                                description="Time ping-pong, Allreduce, Iallreduce, Bcast, Reduce, Allgather, Alltoall over "
                                            "message sizes (run under mpiexec).")
    p.add_argument("--out", required=True, help="JSON file rank 0 writes (a CommProfile)")
    p.add_argument("--sizes", help="comma-separated sizes (e.g. 8,1Ki,1Mi); default powers of two from --min-bytes to --max-bytes")
    p.add_argument("--min-bytes", default="8", help="smallest message (default 8)")
    p.add_argument("--max-bytes", default="64Mi", help="largest message (default 64Mi)")
    p.add_argument("--ops", default=",".join(COMM_OPS),
                   help="comma-separated operations")
    p.add_argument("--extra-sizes", action="append", default=[], metavar="OP=SIZE[,SIZE...]",
                   help="also time OP at these sizes (rounded up to whole float32 elements); repeatable")
    p.add_argument("--backend", default="mpi", help="mpi | nccl | gloo")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeats", type=int, default=15, help="timed runs per size (fewer, not below 5, for slow sizes)")
    p.add_argument("--target-ms", type=float, default=1.0, help="aim for runs of about this many ms")
    p.add_argument("--size-budget-s", type=float, default=1.5, help="at most about this long per size")
    p.add_argument("--fit-stat", default="median", help="statistic the alpha-beta fit uses: median | p25 | min")
    p.add_argument("--timing", default="barrier", choices=("barrier", "back-to-back"),
                   help="barrier: each call after a barrier, timed alone (default, OSU); back-to-back: nccl-tests")
    p.add_argument("--progress", action="store_true", help="rank 0 prints 'PROGRESS op bytes' lines")
    p.add_argument("--workload", help="also time this trainers.models network's training step on all ranks at once")
    p.add_argument("--model", help="... or this module:callable's (with --input-shape C,H,W)")
    p.add_argument("--input-shape", help="input shape for --model, e.g. 1,28,28")
    p.add_argument("--batch", default="", help="batch sizes of the concurrent compute timing, e.g. 8,16")
    p.add_argument("--compute-warmup", type=int, default=3, help="untimed rounds of the concurrent timing")
    p.add_argument("--compute-repeats", type=int, default=10, help="timed rounds of the concurrent timing")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads per rank while timing compute")
    p.add_argument("--compute-after", default="",
                   help="also time the concurrent step right after an Allreduce of each of these sizes, e.g. 1Mi")
    p.add_argument("--kernel-load", type=float, default=0.0, metavar="SECONDS",
                   help="2 ranks: also measure the kernel's network CPU time per byte (/proc/stat irq+softirq) "
                        "over this many seconds of Sendrecv and as many asleep (perfmodel.lab.profile.kernel_load)")
    return p


def config_from_args(args: argparse.Namespace) -> CommConfig:
    """A CommConfig from the parsed command line."""
    if args.sizes:
        sizes = sorted({parse_size(s) for s in args.sizes.split(",") if s.strip()})
    else:
        sizes = default_sizes(parse_size(args.min_bytes), parse_size(args.max_bytes))
    return CommConfig(sizes=tuple(sizes), ops=tuple(o.strip() for o in args.ops.split(",") if o.strip()),
                      backend=args.backend, warmup=args.warmup, repeats=args.repeats,
                      min_repeats=min(5, args.repeats),
                      target_s=args.target_ms / 1000.0, size_budget_s=args.size_budget_s,
                      fit_stat=args.fit_stat, timing=args.timing, workload=args.workload, model=args.model,
                      input_shape=tuple(int_list(args.input_shape, "input-shape")) if args.input_shape else None,
                      batches=tuple(sorted(set(int_list(args.batch, "batch")))) if args.batch else (),
                      compute_warmup=args.compute_warmup,
                      compute_repeats=args.compute_repeats, threads=args.threads,
                      compute_after=tuple(sorted({-(-max(parse_size(s), 4) // 4) * 4
                                                  for s in args.compute_after.split(",") if s.strip()})),
                      extra_sizes=parse_extra_sizes(args.extra_sizes), kernel_load_s=args.kernel_load)


def parse_extra_sizes(items: Sequence[str]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """((op, sizes), ...) from "OP=SIZE[,SIZE...]" items (sizes as parse_size reads them, rounded up to
    a multiple of 4 bytes: whole float32 elements); one entry per op, sizes merged and increasing."""
    merged: dict[str, set[int]] = {}
    for item in items:
        op, eq, sizes = str(item).partition("=")
        op = op.strip()
        if not eq or not op or not sizes.strip():
            raise ValueError(f"bad extra sizes {item!r}; use OP=SIZE[,SIZE...], e.g. iallreduce=233100,1Mi")
        if op not in COMM_OPS:
            raise ValueError(f"extra sizes for unknown op {op!r}; choose from {', '.join(COMM_OPS)}")
        merged.setdefault(op, set()).update(-(-max(parse_size(s), 4) // 4) * 4 for s in sizes.split(",") if s.strip())
    return tuple((op, tuple(sorted(v))) for op, v in merged.items())


def int_list(text: str, what: str) -> list[int]:
    """Positive integers from "a,b,c", in the given order (ProfileError naming option --``what``)."""
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ProfileError(f"--{what} must be comma-separated integers, got {text!r}") from None
    if not vals or any(v < 1 for v in vals):
        raise ProfileError(f"--{what} must be positive integers, got {text!r}")
    return vals


def _write_json(obj: Any, path: str) -> None:
    from ...fileio import atomic_write_text

    atomic_write_text(path, json.dumps(obj, indent=1, allow_nan=False))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point under mpiexec. Exit 2 on bad arguments; aborts the MPI job on a failure."""
    args = _parser().parse_args(argv)
    try:
        cfg = config_from_args(args)
    except ValueError as exc:
        print(f"perfmodel.lab.profile.comm: error: {exc}", file=sys.stderr)
        return 2

    def progress(op: str, nbytes: int) -> None:
        print(f"PROGRESS {op} {nbytes}", flush=True)

    try:
        result = run_benchmarks(cfg, progress=progress if args.progress else None)
        if result is not None:
            _write_json(asdict(result), args.out)
    except Exception as exc:  # one rank failing would leave the others waiting in a collective
        print(f"perfmodel.lab.profile.comm: error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        from mpi4py import MPI

        MPI.COMM_WORLD.Abort(1)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
