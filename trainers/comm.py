"""MPI helpers for the synchronous trainers: fused flat buffers, DASO sub-communicators, bf16 sums,
non-blocking allreduce, user-defined reduction operations, bytes on the wire, abort on error.
TernGrad's exchanges are objects of their own (trainers.exchanges).

Importing this module does not import mpi4py (so it never initializes MPI); each function that needs MPI
imports it. All tensors are CPU tensors; MPI reads and writes their memory through numpy views.

Example (under ``mpiexec -n 4``)::

    from mpi4py import MPI
    from trainers import comm
    with comm.abort_on_error():
        buckets = comm.FlatBuckets([p.grad for p in model.parameters()])
        buckets.allreduce_mean(MPI.COMM_WORLD)         # views now hold the mean gradient
        buckets.copy_out([p.grad for p in model.parameters()])
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from perfmodel.wire import alltoall_bytes, ring_allgather_bytes, ring_allreduce_bytes

if TYPE_CHECKING:  # pragma: no cover
    from mpi4py import MPI

__all__ = [
    "DEFAULT_BUCKET_BYTES",
    "BF16_UNIT_ROUNDOFF",
    "FlatBuckets",
    "IallreduceHandle",
    "abort_on_error",
    "alltoall_bytes",
    "allreduce_bf16_mean",
    "allreduce_max",
    "bf16_bits_to_f32",
    "f32_to_bf16_bits",
    "iallreduce_start",
    "node_groups",
    "ring_allgather_bytes",
    "ring_allreduce_bytes",
    "user_op",
]

DEFAULT_BUCKET_BYTES = 25 * 2**20
"""Bucket cap in bytes (25 MiB, PyTorch DDP's default ``bucket_cap_mb``)."""

BF16_UNIT_ROUNDOFF = 2.0**-8
"""Relative rounding error bound of float32 -> bfloat16 round-to-nearest-even (8 significand bits)."""


def _mpi() -> Any:
    from mpi4py import MPI

    return MPI


def _np_view(t: torch.Tensor) -> np.ndarray:
    """Numpy array sharing t's memory (t must be a contiguous CPU tensor)."""
    if t.device.type != "cpu" or not t.is_contiguous():
        raise ValueError("tensor must be a contiguous CPU tensor")
    return t.detach().numpy()


# ---------------------------------------------------------------------------------------------- buckets


class FlatBuckets:
    """Tensors fused into flat float32 buckets of at most ``bucket_bytes`` bytes each.

    Tensors are placed in the given order; a bucket is closed when the next tensor would overflow it.
    A single tensor larger than ``bucket_bytes`` gets a bucket of its own (tensors are never split).
    ``views[i]`` is a view of bucket memory with the shape of ``tensors[i]``; construction copies the
    tensors' values in. ``bind_grads`` makes the views the parameters' ``.grad`` so that backward
    accumulates straight into the buckets (then zero grads with ``set_to_none=False``).
    """

    def __init__(self, tensors: Sequence[torch.Tensor], bucket_bytes: int = DEFAULT_BUCKET_BYTES) -> None:
        if isinstance(bucket_bytes, bool) or not isinstance(bucket_bytes, int) or bucket_bytes < 4:
            raise ValueError(f"bucket_bytes must be an int >= 4 (one float32), got {bucket_bytes!r}")
        for i, t in enumerate(tensors):
            if not t.is_floating_point() or t.device.type != "cpu":
                raise ValueError(f"tensor {i} must be a floating-point CPU tensor, got {t.dtype} on {t.device}")
        self.bucket_bytes = bucket_bytes
        self.shapes: list[torch.Size] = [t.shape for t in tensors]
        cap = bucket_bytes // 4
        groups: list[list[int]] = []
        fill = cap  # forces a new bucket for the first tensor
        for i, t in enumerate(tensors):
            n = t.numel()
            if not groups or fill + n > cap:
                groups.append([])
                fill = 0
            groups[-1].append(i)
            fill += n
        self.bucket_of: list[int] = [0] * len(tensors)
        self.buckets: list[torch.Tensor] = []
        self.views: list[torch.Tensor] = [torch.empty(0)] * len(tensors)
        for b, members in enumerate(groups):
            flat = torch.empty(sum(tensors[i].numel() for i in members), dtype=torch.float32)
            offset = 0
            for i in members:
                n = tensors[i].numel()
                self.views[i] = flat[offset:offset + n].view(self.shapes[i])
                self.bucket_of[i] = b
                offset += n
            self.buckets.append(flat)
        self.copy_in(tensors)

    @property
    def nbytes(self) -> int:
        """Total bytes of all buckets."""
        return sum(b.numel() * 4 for b in self.buckets)

    def _check(self, tensors: Sequence[torch.Tensor]) -> None:
        if len(tensors) != len(self.shapes):
            raise ValueError(f"expected {len(self.shapes)} tensors, got {len(tensors)}")
        for i, (t, shape) in enumerate(zip(tensors, self.shapes)):
            if t.shape != shape:
                raise ValueError(f"tensor {i} has shape {tuple(t.shape)}, buckets hold {tuple(shape)}")

    def copy_in(self, tensors: Sequence[torch.Tensor]) -> None:
        """Copy the tensors' values into the buckets (cast to float32)."""
        self._check(tensors)
        with torch.no_grad():
            for v, t in zip(self.views, tensors):
                if v.data_ptr() != t.data_ptr():
                    v.copy_(t)

    def copy_out(self, tensors: Sequence[torch.Tensor]) -> None:
        """Copy the buckets' values back into the tensors."""
        self._check(tensors)
        with torch.no_grad():
            for v, t in zip(self.views, tensors):
                if v.data_ptr() != t.data_ptr():
                    t.copy_(v)

    def bind_grads(self, params: Sequence[torch.Tensor]) -> None:
        """Set ``p.grad`` to the bucket views (float32 parameters only): backward then fills the buckets."""
        self._check(params)
        for p, v in zip(params, self.views):
            if p.dtype != torch.float32:
                raise ValueError(f"bind_grads needs float32 parameters, got {p.dtype}")
            p.grad = v

    def allreduce_mean(self, comm: MPI.Comm) -> None:
        """Average the buckets over all ranks of comm, in place (one Allreduce(SUM) per bucket, then /size)."""
        MPI = _mpi()
        size = comm.Get_size()
        for flat in self.buckets:
            if flat.numel():
                comm.Allreduce(MPI.IN_PLACE, _np_view(flat), op=MPI.SUM)
                flat.div_(size)


# ------------------------------------------------------------------------------------ sub-communicators


def node_groups(comm: MPI.Comm, ranks_per_node: int) -> tuple[MPI.Comm, MPI.Comm]:
    """(local, global) communicators for DASO with ``ranks_per_node`` consecutive ranks per (pretend) node.

    local: the ranks of this rank's node, node = rank // ranks_per_node, ordered by rank.
    global: the ranks with the same position rank % ranks_per_node on every node, ordered by node.
    The caller frees both (``Free()``) when done.
    """
    size = comm.Get_size()
    if isinstance(ranks_per_node, bool) or not isinstance(ranks_per_node, int) or ranks_per_node < 1:
        raise ValueError(f"ranks_per_node must be an int >= 1, got {ranks_per_node!r}")
    if size % ranks_per_node:
        raise ValueError(f"world size {size} is not divisible by ranks_per_node={ranks_per_node}")
    rank = comm.Get_rank()
    local = comm.Split(color=rank // ranks_per_node, key=rank)
    global_ = comm.Split(color=rank % ranks_per_node, key=rank)
    return local, global_


# ---------------------------------------------------------------------------------------------- bf16


def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """uint16 bfloat16 bit patterns of float32 values, round to nearest even (NaN stays NaN)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((bits + (((bits >> 16) & 1) + np.uint32(0x7FFF))) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), rounded)


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """Float32 values of uint16 bfloat16 bit patterns (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _bf16_sum(inbuf: Any, inoutbuf: Any, datatype: Any) -> None:
    """MPI user op: inout <- bf16(float32(in) + float32(inout)), element-wise on uint16 bit patterns."""
    a = np.frombuffer(inbuf, dtype=np.uint16)
    b = np.frombuffer(inoutbuf, dtype=np.uint16)
    b[...] = f32_to_bf16_bits(bf16_bits_to_f32(a) + bf16_bits_to_f32(b))


@functools.cache
def user_op(fn: Callable[[Any, Any, Any], None]) -> Any:
    """``fn`` (inbuf, inoutbuf, datatype) as a commutative MPI.Op, created once per process (freed by
    MPI_Finalize)."""
    return _mpi().Op.Create(fn, commute=True)


def _bf16_op(comm: MPI.Comm, bits: np.ndarray) -> np.ndarray:
    out = np.empty_like(bits)
    comm.Allreduce(bits, out, op=user_op(_bf16_sum))
    return bf16_bits_to_f32(out)


def _bf16_allgather(comm: MPI.Comm, bits: np.ndarray) -> np.ndarray:
    gathered = np.empty((comm.Get_size(), bits.size), dtype=np.uint16)
    comm.Allgather(bits, gathered)
    return bf16_bits_to_f32(gathered).sum(axis=0, dtype=np.float32)


_BF16_METHODS: dict[str, Callable[[Any, np.ndarray], np.ndarray]] = {
    "op": _bf16_op,
    "allgather": _bf16_allgather,
}


def allreduce_bf16_mean(comm: MPI.Comm, x: torch.Tensor, method: str = "op") -> torch.Tensor:
    """Mean of x over comm's ranks, sent as bfloat16 (2 bytes per element); float32 result, x's shape.

    Each rank rounds x to bf16 (relative error <= u = 2**-8). Methods:

    - ``"op"``: Allreduce of the uint16 bit patterns with a user-defined MPI.Op that adds two bf16
      operands in float32 and rounds the sum back to bf16. Traffic is that of an allreduce of n*2 bytes,
      but every partial sum is rounded: |result - mean| <= ((1+u')**p - 1) * sum_i |x_i| / p with
      u' = u + 2**-23 (double rounding), p ranks. Ranks agree bit for bit when the MPI library reduces
      in the same order on every rank (true of Open MPI's algorithms; not promised by the standard).
    - ``"allgather"``: Allgather of the bit patterns, then a float32 sum in rank order on every rank:
      only the input rounding remains, |result - mean| <= (u + p*2**-23) * sum_i |x_i| / p, and ranks
      agree bit for bit by construction. Each rank receives (p-1)*n*2 bytes, so use it for small groups.
    """
    if method not in _BF16_METHODS:
        raise ValueError(f"method must be one of {sorted(_BF16_METHODS)}, got {method!r}")
    if not x.is_floating_point() or x.device.type != "cpu":
        raise ValueError(f"x must be a floating-point CPU tensor, got {x.dtype} on {x.device}")
    bits = x.detach().to(torch.bfloat16).reshape(-1).view(torch.int16).numpy().view(np.uint16).copy()
    total = _BF16_METHODS[method](comm, bits)
    return torch.from_numpy(total / np.float32(comm.Get_size())).view(x.shape)


# ---------------------------------------------------------------------------------- non-blocking, max


@dataclass
class IallreduceHandle:
    """A Iallreduce(SUM) in flight; keeps both buffers alive until ``wait``."""

    request: Any
    send: np.ndarray
    recv: np.ndarray
    shape: torch.Size

    def test(self) -> bool:
        """True once the reduction has completed (does not block)."""
        return bool(self.request.Test())

    def wait(self) -> torch.Tensor:
        """Block until done; the element-wise sum over ranks, shaped like the input."""
        self.request.Wait()
        return torch.from_numpy(self.recv).view(self.shape)


def iallreduce_start(comm: MPI.Comm, x: torch.Tensor) -> IallreduceHandle:
    """Start a non-blocking sum of x over comm (x's float32/float64 dtype, full precision).

    x is copied at the call, so the caller may keep changing x while the reduction is in flight.
    """
    MPI = _mpi()
    if x.dtype not in (torch.float32, torch.float64) or x.device.type != "cpu":
        raise ValueError(f"x must be a float32 or float64 CPU tensor, got {x.dtype} on {x.device}")
    send = x.detach().reshape(-1).numpy().copy()
    recv = np.empty_like(send)
    request = comm.Iallreduce(send, recv, op=MPI.SUM)
    return IallreduceHandle(request, send, recv, x.shape)


def allreduce_max(comm: MPI.Comm, values: np.ndarray) -> np.ndarray:
    """Element-wise maximum over comm's ranks of a small array (e.g. TernGrad scalers); a new array."""
    MPI = _mpi()
    send = np.ascontiguousarray(values)
    if send.dtype.kind not in "fiu":
        raise ValueError(f"values must be a numeric array, got dtype {send.dtype}")
    out = np.empty_like(send)
    comm.Allreduce(send, out, op=MPI.MAX)
    return out


# ------------------------------------------------------------------------------------ bytes on the wire
#
# ring_allreduce_bytes, ring_allgather_bytes, alltoall_bytes: perfmodel.wire's, imported above.
# "Bytes per step" (the run log's bytes_sent, the model's bytes_per_gpu): the bytes one rank sends
# per step on the wire, counting each collective as the algorithm the model charges for it --
# Allreduce as a ring (reduce-scatter then allgather: 2(p-1)/p of the buffer), Allgather as a ring
# ((p-1) blocks), Alltoall pairwise ((p-1) blocks) -- over the gradient data and TernGrad's scalers;
# the 4-byte loss the trainers fuse into a bucket is not counted. One rank sends nothing.


# ------------------------------------------------------------------------------------------------ abort


class abort_on_error(contextlib.ContextDecorator):
    """Turn an exception on any rank into one line on stderr and ``comm.Abort``, so the job never hangs.

    Use as ``with abort_on_error(): ...``, as a decorator ``@abort_on_error()``, or install it as
    ``sys.excepthook`` with ``abort_on_error().install()``. The line reads
    ``[rank R/P] ExcType: message (file:line)``. Exit code: ``exit_code`` for exceptions; a
    ``SystemExit`` with a non-zero integer code aborts with that code (so "bad input -> status 2" holds
    under mpiexec); ``SystemExit(0)``/``SystemExit(None)`` pass through untouched.
    ``comm`` defaults to MPI.COMM_WORLD, looked up when an error happens.
    """

    def __init__(self, comm: MPI.Comm | None = None, exit_code: int = 1) -> None:
        if isinstance(exit_code, bool) or not isinstance(exit_code, int) or not 1 <= exit_code <= 255:
            raise ValueError(f"exit_code must be an int in 1..255, got {exit_code!r}")
        self.comm = comm
        self.exit_code = exit_code

    def __enter__(self) -> abort_on_error:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if exc_type is not None:
            self.handle(exc_type, exc, tb)
        return False

    def install(self) -> None:
        """Make this object ``sys.excepthook`` (for exceptions nobody catches)."""
        sys.excepthook = self.handle

    def handle(self, exc_type: type[BaseException], exc: BaseException | None,
               tb: TracebackType | None) -> None:
        """Print the one line and abort the communicator (returns only for SystemExit(0 or None))."""
        code = self.exit_code
        if issubclass(exc_type, SystemExit):
            exit_code = getattr(exc, "code", None)
            if exit_code is None or exit_code == 0:
                return
            code = exit_code if isinstance(exit_code, int) and 1 <= exit_code <= 255 else self.exit_code
        comm = self.comm if self.comm is not None else _mpi().COMM_WORLD
        frames = traceback.extract_tb(tb) if tb is not None else []
        where = f" ({os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
        message = " ".join(str(exc).split()) if exc is not None else ""
        sys.stderr.write(f"[rank {comm.Get_rank()}/{comm.Get_size()}] {exc_type.__name__}: {message}{where}\n")
        sys.stderr.flush()
        comm.Abort(code)
