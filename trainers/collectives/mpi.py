"""Collectives over MPI (mpi4py): Allreduce / Iallreduce / Allgather / Bcast on tensor memory.

CPU tensors are reduced in place through numpy views of their memory. CUDA tensors go to MPI directly
when the MPI library is CUDA-aware (:func:`cuda_aware`), after synchronizing the current stream (the
kernels that wrote them; never the whole device, whose other streams may hold collectives in flight);
otherwise they are host-staged: copied to a pinned CPU buffer kept per tensor (the same kind of copy
perfmodel.lab.profile times), reduced there and copied back (what Horovod does over a non-CUDA-aware MPI;
the model's ``--staging host``). float16/bfloat16 travel as float32 (MPI has no sum for them).

Non-blocking collectives on device memory: Open MPI documents CUDA-aware support for point-to-point
and *blocking* collectives only, so ``allreduce_async`` stages CUDA tensors through pinned host
buffers even on a CUDA-aware MPI, unless ``DSGD_MPI_CUDA_NONBLOCKING=1`` (:data:`NONBLOCKING_ENV`)
says the library handles device memory in ``MPI_Iallreduce`` too (:func:`device_memory_ok`).

Non-blocking allreduce is MPI_Iallreduce; Open MPI on CPUs moves it forward only inside MPI calls, so
its ``test()`` is what makes progress while backprop runs (trainers.grad_buckets polls it).
"""

from __future__ import annotations

import ctypes
import os
import time
from typing import Any

import torch

from trainers.collectives.base import Collectives, Handle, check_tensor, wire_dtype

__all__ = ["MPICollectives", "cuda_aware", "device_memory_ok", "CUDA_AWARE_ENV", "NONBLOCKING_ENV"]

CUDA_AWARE_ENV = "DSGD_MPI_CUDA_AWARE"
"""Environment variable that overrides the CUDA-awareness probe: 1 (pass device memory) or 0 (stage)."""

NONBLOCKING_ENV = "DSGD_MPI_CUDA_NONBLOCKING"
"""Environment variable: 1 passes device memory to non-blocking collectives on a CUDA-aware MPI."""


def device_memory_ok(cuda_aware_mpi: bool, blocking: bool, env: dict[str, str] | None = None) -> bool:
    """Whether MPI gets CUDA tensors' own memory (else pinned host staging): a CUDA-aware library, and
    for a non-blocking collective the user's opt-in (``DSGD_MPI_CUDA_NONBLOCKING=1``)."""
    env = os.environ if env is None else env
    if not cuda_aware_mpi:
        return False
    return blocking or env.get(NONBLOCKING_ENV, "").strip() == "1"


_NATIVE = (torch.float32, torch.float64, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
_LIBRARIES = ("libmpi.so.40", "libmpi.so.12", "libmpi.so")  # Open MPI, MPICH ABI, unversioned


def _mpi() -> Any:
    from mpi4py import MPI

    return MPI


def cuda_aware() -> bool:
    """Whether the MPI library reads and writes CUDA device memory.

    ``DSGD_MPI_CUDA_AWARE`` (0/1) decides when set; otherwise mpi4py's ``MPI.Query_cuda_support`` if it
    has one, else the MPI extension ``MPIX_Query_cuda_support()`` looked up in the loaded libmpi (Open
    MPI's mpi-ext.h; it reports run-time support). Without either: False (stage through the host).
    """
    env = os.environ.get(CUDA_AWARE_ENV)
    if env is not None:
        return env.strip() not in ("", "0", "false", "no")
    MPI = _mpi()
    query = getattr(MPI, "Query_cuda_support", None)
    if query is not None:
        return bool(query())
    for name in _LIBRARIES:
        try:
            fn = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL).MPIX_Query_cuda_support
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_int
        return bool(fn())
    return False


_MPI_OPS = {"sum": "SUM", "mean": "SUM", "max": "MAX"}


class _Buffer:
    """What MPI reads and writes for tensor t: t's own memory, or a CPU/wide copy written back at the end
    (``staging``: a cache of pinned host buffers by (tensor address, numel, type), reused step after step)."""

    def __init__(self, t: torch.Tensor, device_ok: bool, staging: dict | None = None) -> None:
        self.t = t
        wire = wire_dtype(t.dtype, _NATIVE)
        on_host = t.device.type == "cpu"
        if on_host or device_ok:
            self.work = t if wire == t.dtype else t.to(wire)
        else:  # host staging through pinned memory
            key = (t.data_ptr(), t.numel(), wire)
            host = None if staging is None else staging.get(key)
            if host is None:
                host = torch.empty(t.shape, dtype=wire, pin_memory=torch.cuda.is_available())
                if staging is not None:
                    if len(staging) >= 64:  # temporaries of blocking calls: keep the cache bounded
                        staging.clear()  # (buffers in flight stay alive through their _Buffer)
                    staging[key] = host
            self.work = host.view(t.shape)
            self.work.copy_(t, non_blocking=True)
        if t.device.type == "cuda":  # MPI reads the memory outside torch's streams: the writers must be done
            torch.cuda.current_stream(t.device).synchronize()
        self.copied = self.work.data_ptr() != t.data_ptr()

    def mpi(self) -> Any:
        if self.work.device.type == "cpu":
            return self.work.detach().numpy()
        return self.work  # CUDA-aware MPI: mpi4py takes __cuda_array_interface__

    def finish(self, divide_by: int | None) -> None:
        if self.copied:
            self.t.copy_(self.work if divide_by is None else self.work / divide_by)
        elif divide_by is not None:
            self.t.div_(divide_by)


class _MPIHandle(Handle):
    def __init__(self, request: Any, buf: _Buffer, divide_by: int | None) -> None:
        super().__init__(time.perf_counter(), lambda: buf.finish(divide_by))
        self.request = request
        self.buf = buf  # keeps the buffer alive while MPI owns it

    def _done(self) -> bool:
        return bool(self.request.Test())

    def _block(self) -> None:
        self.request.Wait()


class MPICollectives(Collectives):
    """Collectives on an mpi4py communicator (``comm``) for tensors on ``device``."""

    name = "mpi"

    def __init__(self, comm: Any, device: torch.device | str = "cpu", *, owns_comm: bool = False) -> None:
        MPI = _mpi()
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.device = torch.device(device)
        self.cuda_aware = self.device.type == "cuda" and cuda_aware()
        self.nonblocking_on_device = device_memory_ok(self.cuda_aware, blocking=False)
        self._staging: dict = {}
        first = MPI.Get_library_version().strip().splitlines()[0]
        self.library = " ".join(first.split(",")[0].split())
        if self.device.type == "cuda":
            self.library += " (CUDA-aware)" if self.cuda_aware else " (host-staged)"
        self._owns = owns_comm

    def _op(self, op: str) -> Any:
        return getattr(_mpi(), _MPI_OPS[op])

    def allreduce(self, t: torch.Tensor, op: str = "sum") -> None:
        check_tensor(t, op)
        if not t.numel():
            return
        buf = _Buffer(t, self.cuda_aware, self._staging)
        self.comm.Allreduce(_mpi().IN_PLACE, buf.mpi(), op=self._op(op))
        buf.finish(self.size if op == "mean" else None)

    def allreduce_async(self, t: torch.Tensor, op: str = "sum") -> Handle:
        check_tensor(t, op)
        buf = _Buffer(t, self.nonblocking_on_device, self._staging)
        request = self.comm.Iallreduce(_mpi().IN_PLACE, buf.mpi(), op=self._op(op))
        return _MPIHandle(request, buf, self.size if op == "mean" else None)

    def allgather(self, t: torch.Tensor) -> torch.Tensor:
        check_tensor(t)
        buf = _Buffer(t, self.cuda_aware, self._staging)
        out = torch.empty((self.size, *t.shape), dtype=buf.work.dtype, device=buf.work.device)
        if out.device.type == "cpu":
            self.comm.Allgather(buf.mpi(), out.numpy())
        else:
            self.comm.Allgather(buf.mpi(), out)
        return out.to(t.device, t.dtype)

    def alltoall(self, t: torch.Tensor) -> torch.Tensor:
        check_tensor(t)
        if t.numel() % self.size:
            raise ValueError(f"alltoall needs a numel divisible by {self.size}, got {t.numel()}")
        buf = _Buffer(t, self.cuda_aware, self._staging)
        out = torch.empty_like(buf.work)
        if out.device.type == "cpu":
            self.comm.Alltoall(buf.mpi(), out.numpy())
        else:
            self.comm.Alltoall(buf.mpi(), out)
        return out.to(t.device, t.dtype)

    def broadcast(self, t: torch.Tensor, root: int = 0) -> None:
        check_tensor(t)
        self._check_root(root)
        buf = _Buffer(t, self.cuda_aware, self._staging)
        self.comm.Bcast(buf.mpi(), root=root)
        buf.finish(None)

    def split(self, color: int) -> MPICollectives:
        return MPICollectives(self.comm.Split(color=int(color), key=self.rank), self.device, owns_comm=True)

    def close(self) -> None:
        if self._owns:
            self.comm.Free()
            self._owns = False
