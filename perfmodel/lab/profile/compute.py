"""Compute hooks: time forward, backward and optimizer step of a torch.nn.Module over batch sizes.

``profile_compute(model, input_shape, num_classes, batches)`` trains on random inputs and labels
(cross-entropy, SGD with momentum 0.9), ``warmup`` untimed steps then ``repeats`` timed steps per batch
size, and returns a ``ComputeProfile``: per batch the median, quartiles and extremes of each phase,
the fit t_c(b) = t0 + t1 b of the step medians, and on a GPU the device<->host copy of a
gradient-sized buffer (the TernGrad model's t_cg) plus an alpha-beta fit of device->host copies.

Timing: on CPU ``time.perf_counter`` around each phase, with the torch thread count recorded. On CUDA
four ``torch.cuda.Event``s per step recorded on the current stream around the phases; the host waits
on the last one before reading ``elapsed_time``, so each step is timed on the GPU's own clock and
steps do not overlap. Inputs are created on the device beforehand (no data loading in the timing).
``concurrent_compute`` times the same step on every rank of an MPI run at once (run by
perfmodel.lab.profile.comm): what ranks sharing a machine's cores and memory cost each other, and the
spread a synchronous step waits for.

torch is imported inside functions only.
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Callable, Sequence

from ...wire import packed_nbytes
from .schema import CodecTimes, ComputeProfile, ComputeRow, CopyTimes, ModelInfo, ProfileError, Stats, device_key

__all__ = ["resolve_device", "profile_compute", "concurrent_compute", "time_copies", "model_info", "load_workload_model",
           "load_callable_model", "torch_environment", "grads_into"]


def resolve_device(device: str = "auto") -> str:
    """"cpu" or "cuda": "auto" picks CUDA when torch sees a GPU."""
    import torch

    if device not in ("auto", "cpu", "cuda"):
        raise ProfileError(f"device must be auto, cpu or cuda, got {device!r}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ProfileError("device cuda asked for, but torch sees no CUDA GPU")
    return device


def model_info(model: Any, *, name: str, origin: str, input_shape: Sequence[int], num_classes: int) -> ModelInfo:
    """ModelInfo of a torch module: its trainable tensors in order, float32 (4 bytes) each element."""
    named = [(n, int(p.numel())) for n, p in model.named_parameters() if p.requires_grad]
    if not named:
        raise ProfileError(f"model {name} has no trainable parameters")
    return ModelInfo(name=name, origin=origin, input_shape=tuple(int(d) for d in input_shape),
                     num_classes=int(num_classes), tensor_names=tuple(n for n, _ in named),
                     tensor_sizes=tuple(s for _, s in named), bytes_per_element=4)


def load_workload_model(name: str) -> tuple[Any, ModelInfo]:
    """(model, info) for a network of trainers.models by name."""
    try:
        models = importlib.import_module("trainers.models")
    except ImportError as exc:
        raise ProfileError(f"cannot import trainers.models ({exc}); use --model module:callable") from None
    if name not in models.MODELS:
        raise ProfileError(f"unknown workload {name!r}; choose from {', '.join(sorted(models.MODELS))}")
    model = models.build_model(name)
    return model, model_info(model, name=name, origin="workload", input_shape=models.input_shape(name),
                             num_classes=models.MODELS[name].num_classes)


def load_callable_model(spec: str, input_shape: Sequence[int] | None) -> tuple[Any, ModelInfo]:
    """(model, info) from "package.module:callable" returning an nn.Module; classes = output width."""
    import torch

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ProfileError(f"--model must look like package.module:callable, got {spec!r}")
    if not input_shape:
        raise ProfileError("--model needs --input-shape (e.g. 1,28,28: channels,height,width)")
    try:
        factory = importlib.import_module(module_name)
        for part in attr.split("."):
            factory = getattr(factory, part)
    except (ImportError, AttributeError) as exc:
        raise ProfileError(f"cannot load --model {spec}: {exc}") from None
    if not callable(factory):
        raise ProfileError(f"--model {spec} is not callable")
    model = factory()
    if not isinstance(model, torch.nn.Module):
        raise ProfileError(f"--model {spec} returned {type(model).__name__}, not a torch.nn.Module")
    with torch.no_grad():
        was_training = model.training
        model.eval()
        try:
            out = model(torch.zeros(2, *input_shape))
        except Exception as exc:  # a wrong --input-shape surfaces here
            raise ProfileError(f"--model {spec} fails on input shape {tuple(input_shape)}: "
                               f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
        model.train(was_training)
    if out.dim() != 2 or out.shape[0] != 2:
        raise ProfileError(f"--model {spec} must output (batch, classes) logits, got shape {tuple(out.shape)}")
    return model, model_info(model, name=spec, origin="module", input_shape=input_shape,
                             num_classes=int(out.shape[1]))


def torch_environment() -> dict[str, Any]:
    """torch version, thread count and the GPU (name, count, CUDA and NCCL versions) if any."""
    import torch

    env: dict[str, Any] = {"torch_version": torch.__version__, "torch_threads": torch.get_num_threads(),
                           "gpu_name": "", "gpu_count": 0, "cuda_version": "", "nccl_version": ""}
    if torch.cuda.is_available():
        env["gpu_name"] = torch.cuda.get_device_name(0)
        env["gpu_count"] = torch.cuda.device_count()
        env["cuda_version"] = torch.version.cuda or ""
        try:
            v = torch.cuda.nccl.version()
            env["nccl_version"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        except Exception:  # torch built without NCCL
            env["nccl_version"] = ""
    return env


class _CpuClock:
    """Phase marks with perf_counter; elapsed() gives seconds between consecutive marks."""

    def __init__(self, marks: int) -> None:
        self.t = [0.0] * marks

    def mark(self, i: int) -> None:
        self.t[i] = time.perf_counter()

    def elapsed(self) -> list[float]:
        return [b - a for a, b in zip(self.t, self.t[1:])]


class _CudaClock:
    """Phase marks with CUDA events on the current stream; elapsed() waits for the last one."""

    def __init__(self, marks: int) -> None:
        import torch

        self.ev = [torch.cuda.Event(enable_timing=True) for _ in range(marks)]

    def mark(self, i: int) -> None:
        self.ev[i].record()

    def elapsed(self) -> list[float]:
        self.ev[-1].synchronize()
        return [a.elapsed_time(b) / 1000.0 for a, b in zip(self.ev, self.ev[1:])]


def _training(model: Any, input_shape: Sequence[int], num_classes: int, batches: Sequence[int], dev: str,
              lr: float):
    """What every timing here trains: the model in train mode on ``dev``, SGD (momentum 0.9), cross-entropy,
    one random batch of inputs and labels per batch size, and ``step(b)``: one untimed training step at
    batch size b (waited for on CUDA).

    The gradients are kept between steps (zeroed, not freed), as a data-parallel trainer keeps them:
    trainers.grad_buckets binds each .grad to a view of a fused bucket, as torch DDP's
    gradient_as_bucket_view does (DDP without it copies each gradient into its bucket), so backward adds
    into them: one more kernel per parameter than a step that starts without gradients, a measurable
    part of a launch-bound GPU step. On CUDA the step runs with the trainers' numerics
    (trainers.device.set_numerics: TF32 off, cuDNN deterministic without autotuning), whose backward
    convolutions are slower than cuDNN's default choice (ResNet-20 at batch 256 on an H200, 2026-11-26:
    the profile's step 10.2-10.3 ms with cuDNN's defaults, 12.6 ms with the trainer's numerics; the
    trainer's own step 12.7-12.9 ms)."""
    import torch

    if dev == "cuda":
        from trainers.device import set_numerics

        set_numerics()
    model = model.to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    inputs = {b: (torch.randn(b, *input_shape, device=dev), torch.randint(0, num_classes, (b,), device=dev))
              for b in batches}

    def step(b: int) -> None:
        x, y = inputs[b]
        loss_fn(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=False)  # kept: backward adds into them (docstring)
        if dev == "cuda":
            torch.cuda.synchronize()

    return model, opt, loss_fn, inputs, step


def profile_compute(model: Any, input_shape: Sequence[int], num_classes: int, batches: Sequence[int], *,
                    warmup: int = 3, repeats: int = 10, device: str = "auto", threads: int | None = None,
                    lr: float = 1e-3, seed: int = 0, progress: Callable[[int], None] | None = None) -> ComputeProfile:
    """Time one SGD step of ``model`` at each batch size, the sizes taken in turn (warmup rounds, then
    repeats rounds); seconds per phase (forward incl. loss, backward, optimizer step incl. zero_grad)
    and per step. ``threads`` sets torch's CPU thread count
    (None keeps it); the count used is recorded. ``progress(batch)`` is called after each batch size.
    """
    import torch

    from .fit import fit_affine

    if warmup < 0 or repeats < 3:
        raise ProfileError(f"need warmup >= 0 and repeats >= 3, got {warmup}, {repeats}")
    bs = sorted({int(b) for b in batches})
    if len(bs) < 2 or bs[0] < 1:
        raise ProfileError(f"need at least 2 distinct positive batch sizes to fit t_c(b), got {list(batches)}")
    dev = resolve_device(device)
    if threads is not None:
        if threads < 1:
            raise ProfileError(f"threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    model, opt, loss_fn, inputs, one_step = _training(model, input_shape, num_classes, bs, dev, lr)
    clock = (_CudaClock if dev == "cuda" else _CpuClock)(4)
    samples: dict[int, list[list[float]]] = {b: [] for b in bs}
    # round-robin over the batch sizes: a slow spell of the machine (another job, a clock change) then
    # slows every size alike instead of bending the t_c(b) line through the sizes timed during it
    for it in range(warmup + repeats):
        for b in bs:
            x, y = inputs[b]
            clock.mark(0)
            loss = loss_fn(model(x), y)
            clock.mark(1)
            loss.backward()
            clock.mark(2)
            opt.step()
            opt.zero_grad(set_to_none=False)  # kept gradients, as in _training
            clock.mark(3)
            phases = clock.elapsed()  # on CUDA this waits for the step: steps never overlap
            if it >= warmup:
                samples[b].append(phases)
    rows = []
    for b in bs:
        fwd, bwd, stp = zip(*samples[b])
        rows.append(ComputeRow(batch=b, forward=Stats.of(fwd), backward=Stats.of(bwd), step=Stats.of(stp),
                               total=Stats.of([sum(s) for s in samples[b]])))
        if progress is not None:
            progress(b)
    fit = fit_affine([r.batch for r in rows], [r.total.median_s for r in rows])
    copy = host_link = None
    if dev == "cuda":
        nbytes = 4 * sum(p.numel() for p in model.parameters() if p.requires_grad)
        copy, host_link = time_copies(nbytes, warmup=max(warmup, 2), repeats=repeats)
        name = torch.cuda.get_device_name()
    else:
        name = _cpu_model()
    # the smallest batch's forward and backward, untimed, into the gradients of each timed codec round
    # (on a GPU the gradients are on the device, and the codec works on host memory: a step, and
    # random gradients in host memory)
    trained = [(k, p) for k, p in model.named_parameters() if p.requires_grad]
    on_cpu = dev == "cpu"
    codec = time_terngrad_codec([(k, p.numel()) for k, p in trained], repeats=repeats,
                                between=_backward(model, opt, loss_fn, inputs[bs[0]]) if on_cpu
                                else lambda: one_step(bs[0]),
                                params=[p for _, p in trained] if on_cpu else None)
    return ComputeProfile(device=dev, key=device_key(name) if dev == "cuda" else "cpu", device_name=name,
                          threads=torch.get_num_threads(), warmup=warmup, repeats=repeats,
                          optimizer=f"SGD(lr={lr}, momentum=0.9), CrossEntropyLoss"
                          + (", TF32 off, cuDNN deterministic" if dev == "cuda" else ""), rows=tuple(rows),
                          fit=fit, copy=copy, host_link=host_link, codec=codec)


def ranks_training(comm: Any, model: Any, input_shape: Sequence[int], num_classes: int, batches: Sequence[int],
                   warmup: int, repeats: int, threads: int | None, seed: int, lr: float):
    """What every timing on all ranks of an MPI run at once starts with: the rounds and batch sizes checked
    (ProfileError), torch's thread count set (None keeps it), a seed per rank, and the CPU ``_training``
    set-up. Returns (sorted batch sizes, _training's (model, opt, loss_fn, inputs, step))."""
    import torch

    if warmup < 0 or repeats < 3:
        raise ProfileError(f"need warmup >= 0 and repeats >= 3, got {warmup}, {repeats}")
    bs = sorted({int(b) for b in batches})
    if not bs or bs[0] < 1:
        raise ProfileError(f"batch sizes must be positive, got {list(batches)}")
    if threads is not None:
        torch.set_num_threads(threads)
    torch.manual_seed(seed + comm.Get_rank())
    return bs, _training(model, input_shape, num_classes, bs, "cpu", lr)


def concurrent_compute(comm: Any, model: Any, input_shape: Sequence[int], num_classes: int,
                       batches: Sequence[int], *, warmup: int = 3, repeats: int = 10, threads: int | None = 1,
                       lr: float = 1e-3, seed: int = 0, after_bytes: Sequence[int] = ()):
    """Time one SGD step of ``model`` (CPU) on every rank of the mpi4py communicator ``comm`` at once:
    ``warmup`` then ``repeats`` rounds, each starting all ranks together after a barrier and taking the
    batch sizes in turn. Returns a ``ConcurrentCompute`` (seconds) on rank 0, None elsewhere: per
    batch the mean step time of one rank, the mean of the slowest rank's and the coefficient of
    variation between the ranks of a round (the root mean square over rounds of their standard
    deviation, over the mean). ``after_bytes``: each round also times the step right after an
    Allreduce of each of these sizes (bytes, float32 sums; ``ConcurrentCompute.after_mean_s``): a
    data-parallel trainer's compute between two exchanges (one step's optimizer step, the next one's
    forward and backward) all follows an exchange. Then TernGrad's codec is timed on all ranks at once
    as the MPI trainer meets it (``time_terngrad_codec``, rank 0's times): after a training step the
    scalers, the Allreduce of the scalers (4 bytes per tensor, untimed) and the ternarizing, the
    decoding right after an Allreduce of the 2-bit packed codes, and what that Allreduce costs in the
    codec's loop beyond its time after a barrier (``CodecTimes.sync_wait_s``)."""
    import numpy as np
    import torch

    from .schema import ConcurrentCompute

    if any(int(n) < 1 for n in after_bytes):
        raise ProfileError(f"after_bytes must be positive, got {list(after_bytes)}")
    after = sorted({-(-int(n) // 4) * 4 for n in after_bytes})  # whole float32 elements
    bs, (model, opt, loss_fn, inputs, step) = ranks_training(comm, model, input_shape, num_classes, batches,
                                                             warmup, repeats, threads, seed, lr)
    buffers = [(np.ones(n // 4, dtype=np.float32), np.empty(n // 4, dtype=np.float32)) for n in after]
    times = np.empty((1 + len(after), repeats, len(bs)))  # (none, each size) x rounds x batches
    for it in range(warmup + repeats):
        for k in range(1 + len(after)):  # each round: the batch sizes after the barrier alone, then after each size
            for j, b in enumerate(bs):
                comm.Barrier()
                if k:
                    comm.Allreduce(*buffers[k - 1])
                t0 = time.perf_counter()
                step(b)
                if it >= warmup:
                    times[k, it - warmup, j] = time.perf_counter() - t0
    trained = [(k, p) for k, p in model.named_parameters() if p.requires_grad]
    named = [(k, p.numel()) for k, p in trained]
    codec = time_terngrad_codec(named, repeats=repeats, workers=comm.Get_size(), seed=seed,
                                between=_backward(model, opt, loss_fn, inputs[bs[0]]),
                                after_scalers=_allreduce_of(comm, 4 * len(named)),
                                before_decode=_allreduce_of(comm, _packed_bytes(named)),
                                params=[p for _, p in trained], barrier=comm.Barrier,
                                mean_over_ranks=lambda x: comm.allreduce(x) / comm.Get_size())
    every = comm.gather(times, root=0)
    if comm.Get_rank() != 0:
        return None
    t_all = np.stack(every, axis=1)  # (none, after...) x ranks x repeats x batches
    t = t_all[0]
    mean = t.mean(axis=(0, 1))
    # the spread between the ranks of one round: a slow spell of the whole machine slows every rank
    # of that round alike and makes nobody wait, so the variance across rounds is left out
    within = np.sqrt(t.var(axis=0).mean(axis=0))
    return ConcurrentCompute(batches=tuple(bs), mean_s=tuple(float(v) for v in mean),
                             max_s=tuple(float(v) for v in t.max(axis=0).mean(axis=0)),
                             cv=tuple(float(v) for v in within / mean), repeats=repeats,
                             threads=torch.get_num_threads(), after_bytes=tuple(after),
                             after_mean_s=tuple(tuple(float(v) for v in a.mean(axis=(0, 1))) for a in t_all[1:]),
                             codec=codec)


def _packed_bytes(named_sizes: Sequence[tuple[str, int]]) -> int:
    """Bytes of the 2-bit packed codes of the tensors TernGrad ternarizes (perfmodel.wire), at least 4."""
    try:
        from trainers.compress import TernGradCodec
    except ImportError:
        return 4
    plan = TernGradCodec().plan(list(named_sizes))
    return max(4, -(-packed_nbytes(sum(n for (_, n), t in zip(named_sizes, plan) if t)) // 4) * 4)


def _backward(model: Any, opt: Any, loss_fn: Any, batch: tuple[Any, Any]) -> Callable[[], None]:
    """A callable that zeroes the gradients in place (views stay views) and runs the forward and
    backward of ``batch`` (inputs, labels): a trainer's compute up to its gradients."""

    def run() -> None:
        opt.zero_grad(set_to_none=False)
        x, y = batch
        loss_fn(model(x), y).backward()

    return run


def grads_into(buffer: Any, params: Sequence[Any]) -> None:
    """Make the parameters' gradients views of one flat float32 tensor, in their order (as the trainers'
    gradient buckets do), so that backward writes into ``buffer``; it must hold their elements."""
    at = 0
    for p in params:
        p.grad = buffer[at:at + p.numel()].view_as(p)
        at += p.numel()


def _allreduce_of(comm: Any, nbytes: int) -> Callable[[], None]:
    """A callable that runs an Allreduce of ``nbytes`` (float32) on ``comm``."""
    import numpy as np

    send, recv = np.ones(nbytes // 4, dtype=np.float32), np.empty(nbytes // 4, dtype=np.float32)
    return lambda: comm.Allreduce(send, recv)


class _Loopback:
    """mpi4py-style Allgather and Alltoall of ``workers`` ranks that all send what this rank sends: the
    receive buffers as the exchange objects' collectives would leave them, without the network."""

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def Get_size(self) -> int:  # noqa: N802 - mpi4py's names
        return self.workers

    def Get_rank(self) -> int:  # noqa: N802
        return 0

    def Allgather(self, send: Any, recv: Any) -> None:  # noqa: N802
        recv[...] = send.reshape(1, -1)

    def Alltoall(self, send: Any, recv: Any) -> None:  # noqa: N802
        recv[...] = send.reshape(self.workers, -1)[0]


def time_terngrad_codec(named_sizes: Sequence[tuple[str, int]], *, repeats: int = 10, workers: int = 4,
                        seed: int = 0, between: Callable[[], Any] | None = None,
                        after_scalers: Callable[[], Any] | None = None,
                        before_decode: Callable[[], Any] | None = None,
                        params: Sequence[Any] | None = None, barrier: Callable[[], Any] | None = None,
                        mean_over_ranks: Callable[[float], float] | None = None) -> CodecTimes | None:
    """Time the MPI trainer's TernGrad path on gradients of these tensor sizes with the trainer's own
    exchange objects (trainers.exchanges, the trainer's codec defaults: 2.5-sigma clipping, last layer in
    fp32): encode = scalers + the allgather exchange's ``encode`` (the fused counter-based
    ternarize-and-pack of each tensor); decode = its ``sum_copies`` of ``workers`` packed copies and its
    ``decode`` to the float mean, s * sum / p, in the gradient buffer; convert = that ``decode`` alone,
    timed apart (a multiply by s and a divide by p per tensor, once per step however many copies). The
    objects' collectives run on a stand-in for the ranks (every rank sends this rank's codes), untimed. The
    trainers' codec runs on host memory (numba or numpy), on CPU and GPU runs alike. ``between`` (e.g.
    one training step) runs untimed before each timed round, so that the codec meets the caches as a
    training step leaves them, as in the trainer (in a bare loop its buffers stay cached: LeNet's
    encoding took 0.24 ms there and 0.5-0.6 ms after each step, its one-copy decoding 0.15 and 0.41 ms,
    on this project's 2-core machine). ``params``: the model's parameters, in the order of
    named_sizes; the ternarized ones get their gradients as views of the codec's one buffer, as the
    trainers' gradient buckets do, so that ``between`` (then a forward and backward) writes the
    gradients the codec reads, still in the caches as in the trainer; without, random gradients in a
    buffer of its own (from the second round on, the mean the first decoded into it). The encoding is timed in the trainer's order: the scalers right after
    ``between``, then ``after_scalers`` untimed (e.g. the scalers' Allreduce), then the ternarizing and
    packing. (On 2 emulated nodes LeNet's encoding took 0.72 ms so, 1.02 ms on a buffer of its own
    after a whole training step, and 1.55 ms with the scalers also timed after their Allreduce, as an
    earlier version did; the trainer's own sequence took about 0.85 ms.)
    ``before_decode`` (e.g. the exchange) runs untimed between
    the encoding and the decoding of each round, as the trainer decodes right after its exchange.
    aggregate = the ps exchange's own work on one rank of ``workers`` (its ``aggregate``: the sum of the
    workers' shards, packed; ``pull`` and ``unpack`` of every rank's packed sums), timed after
    ``before_decode`` too: the ps exchange's sum follows its Alltoall.
    ``barrier`` and ``mean_over_ranks`` (a Barrier of the ranks, and the mean of a number over them),
    with ``before_decode``: the synchronization points' cost, ``CodecTimes.sync_wait_s``. Before the
    codec's rounds, ``before_decode`` is timed on its own after ``barrier``, round after round, as
    ``perfmodel profile`` times a link; the sync wait is the mean of its two calls inside the codec's
    loop (after the encoding, after the decoding: each waits for the slowest rank's work since the
    previous collective, then for its peers to be scheduled) less that time, averaged over the ranks
    (never below 0). The reference is taken on an otherwise idle loop on purpose: inside the codec's
    loop even a call right after a barrier is slow where ranks share cores (on 4 emulated nodes on
    this project's 2 cores, an 8-byte Allreduce took 1.0-1.9 ms there as a mean over the ranks, 0.04-0.06
    ms on its own: they leave the barrier as unevenly as their work; benchmarks/sync_point_cost.py).
    None when the trainers package is absent."""
    try:
        import numpy as np
        import torch

        from trainers.compress import TernGradCodec
        from trainers.exchanges.allgather import AllgatherExchange
        from trainers.exchanges.ps import PsExchange
    except ImportError:
        return None
    codec = TernGradCodec()
    plan = codec.plan(list(named_sizes))
    sizes = [n for (_, n), t in zip(named_sizes, plan) if t]
    if not sizes:
        return None
    # the trainer's exchange objects, on a stand-in for the ranks that leaves in each receive buffer
    # what the collectives would if every rank sent this rank's codes (their cost is before_decode's)
    loop = _Loopback(workers)
    shapes = [(n,) for n in sizes]
    gather = AllgatherExchange(loop, shapes, key=seed, bucket_bytes=4 * sum(sizes), lane_bits=8)
    ps = PsExchange(loop, shapes, key=seed, bucket_bytes=4 * sum(sizes), lane_bits=8)
    bucket = gather.buckets[0]  # one buffer, as the trainers' gradient buckets
    if params is not None:  # backward writes into the buffer
        grads_into(bucket, [p for p, t in zip(params, plan) if t])
    else:
        bucket.copy_(torch.randn(bucket.numel(), generator=torch.Generator().manual_seed(seed)) * 1e-2)
    grads = gather.views
    n = bucket.numel()
    common = min(gather.send.size, ps.send.size)
    sync = before_decode is not None and barrier is not None and mean_over_ranks is not None
    in_loop, after_barrier = [], []  # the exchange's calls: between the codec's phases, after a barrier
    for it in range(repeats + 2 if sync else 0):  # its own time, as perfmodel profile's links time it
        barrier()
        t0 = time.perf_counter()
        before_decode()
        if it >= 2:
            after_barrier.append(time.perf_counter() - t0)
    enc_t, dec_t, conv_t, agg_t = [], [], [], []
    for it in range(repeats + 2):
        if between is not None:
            between()
        t0 = time.perf_counter()
        shared = codec.scalers(grads, [True] * len(grads))
        t0b = time.perf_counter()
        if after_scalers is not None:
            after_scalers()
        t0c = time.perf_counter()
        gather.encode(0, shared, it * n)
        t1 = time.perf_counter()
        gather.gather()  # what its Allgather leaves: W copies
        t1a = time.perf_counter()
        if before_decode is not None:
            before_decode()
        t1b = time.perf_counter()
        gather.sum_copies()
        t1c = time.perf_counter()
        gather.decode(0, shared)  # the conversion to the mean, into the gradients, as the trainer's
        t2 = time.perf_counter()
        ps.send[:common] = gather.send[:common]  # this round's codes
        ps.push()  # what its Alltoall leaves
        t2a = time.perf_counter()
        if before_decode is not None:  # the ps exchange's sum follows its Alltoall
            before_decode()
        t3 = time.perf_counter()
        ps.aggregate()
        ps.pull()  # what its Allgather leaves
        ps.unpack()
        t4 = time.perf_counter()
        if it >= 2:
            enc_t.append((t0b - t0) + (t1 - t0c))
            dec_t.append(t2 - t1b)
            conv_t.append(t2 - t1c)
            agg_t.append(t4 - t3)
            if sync:
                in_loop += [t1b - t1a, t3 - t2a]
    wait = None
    if sync:  # every rank's excess, averaged over the ranks (a collective: every rank calls it)
        wait = max(0.0, float(mean_over_ranks(float(np.mean(in_loop) - np.mean(after_barrier)))))
    shard = ps.shard
    return CodecTimes(elements=int(n), encode=Stats.of(enc_t), decode=Stats.of(dec_t), workers=workers,
                      convert=Stats.of(conv_t), aggregate=Stats.of(agg_t), aggregate_elements=int(workers * shard),
                      sync_wait_s=wait)


def time_copies(nbytes: int, *, warmup: int = 2, repeats: int = 10):
    """(CopyTimes of ``nbytes`` device<->pinned host, alpha-beta fit of device->host copies 4 KiB..)."""
    import torch

    from .fit import fit_alpha_beta

    def copy_stats(n: int) -> tuple[Stats, Stats]:
        elems = max(n // 4, 1)
        dev = torch.empty(elems, dtype=torch.float32, device="cuda")
        host = torch.empty(elems, dtype=torch.float32, pin_memory=True)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        out = []
        for dst, src in ((host, dev), (dev, host)):
            ts = []
            for it in range(warmup + repeats):
                start.record()
                dst.copy_(src, non_blocking=True)
                end.record()
                end.synchronize()
                if it >= warmup:
                    ts.append(start.elapsed_time(end) / 1000.0)
            out.append(Stats.of(ts))
        return out[0], out[1]

    torch.cuda.synchronize()
    d2h, h2d = copy_stats(nbytes)
    sizes = [2**k for k in range(12, 27, 2)]  # 4 KiB .. 64 MiB
    if nbytes > sizes[-1]:
        sizes.append(int(nbytes))
    d2h_times = [copy_stats(n)[0].median_s for n in sizes]
    return CopyTimes(nbytes=int(nbytes), d2h=d2h, h2d=h2d), fit_alpha_beta(sizes, d2h_times)


def _cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (Linux), else platform.processor()."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"
