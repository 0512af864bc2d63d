"""The collective interface every gradient exchange uses, whatever moves the bytes (MPI, gloo, NCCL).

A :class:`Collectives` object is one group of ranks with a device. Its operations work in place on
contiguous tensors of that device (or of the CPU), in the group's rank order:

    allreduce(t, op)          t <- op over ranks of t; op "sum", "mean" (floating point only) or "max"
    allreduce_async(t, op)    the same, non-blocking: a :class:`Handle` whose wait() completes it
    allgather(t)              a new tensor (size, *t.shape): row r is rank r's t
    alltoall(t)               a new tensor like t: chunk r (of size equal chunks) comes from rank r's chunk
                              of this rank
    broadcast(t, root)        t <- root's t (root: rank in this group)
    split(color)              the sub-group of the ranks passing the same color, members in rank order
    barrier(), close()

Element types: floating point (float32, float64; float16/bfloat16 travel as float32 where the backend
has no native sum for them) and integers (int8, int16, int32, int64: level sums such as TernGrad's;
int16 travels as int32 on gloo and NCCL, which have no int16). A widened type is summed once in the
wide type and rounded back once, so it never loses more than the final cast. Integer sums wrap as
two's complement in the wire type, like C integer arithmetic: the caller picks a type the sum fits.

Control plane: every object also carries ``comm``, an mpi4py communicator of the same ranks in the same
order (MPI stays the launcher and the place for small Python-object exchanges, e.g. agreeing on an
error), whatever backend moves the gradients.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["OPS", "Collectives", "Handle", "check_tensor", "wire_dtype"]

OPS = ("sum", "mean", "max")
"""Reduction operations of :meth:`Collectives.allreduce`."""

_INT_TYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def check_tensor(t: torch.Tensor, op: str | None = None) -> None:
    """ValueError unless t is a contiguous int or floating tensor and op (when given) suits its type."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"expected a torch.Tensor, got {type(t).__name__}")
    if not t.is_contiguous():
        raise ValueError("collectives work on contiguous tensors (flat buffers)")
    if not (t.is_floating_point() or t.dtype in _INT_TYPES):
        raise ValueError(f"unsupported element type {t.dtype}")
    if op is not None:
        if op not in OPS:
            raise ValueError(f"op must be one of {', '.join(OPS)}, got {op!r}")
        if op == "mean" and not t.is_floating_point():
            raise ValueError(f"op 'mean' needs a floating-point tensor, got {t.dtype}")


def wire_dtype(dtype: torch.dtype, native: tuple[torch.dtype, ...]) -> torch.dtype:
    """The type a tensor of ``dtype`` travels as on a backend with the ``native`` sum types.

    float16/bfloat16 -> float32 and int8/int16 -> int32 when the backend lacks them; others unchanged."""
    if dtype in native:
        return dtype
    if dtype.is_floating_point:
        return torch.float32
    if dtype in (torch.int8, torch.int16, torch.uint8):
        return torch.int32
    return dtype


class Handle:
    """A non-blocking collective in flight.

    ``wait()`` blocks until the result is in the tensor given at the start (idempotent); ``test()`` says
    whether it has completed without blocking (and drives progress where the backend needs it, as
    MPI's non-blocking collectives do). ``completed_at`` is the ``time.perf_counter()`` at which completion
    was first seen: the backend's own completion callback where it has one (gloo), otherwise the test()
    or wait() that saw it; ``started_at`` is when the operation was started. On CUDA a backend may also
    give ``start_event`` and ``end_event`` (``torch.cuda.Event`` with timing around the collective on the
    device; None otherwise): their ``elapsed_time`` is the device's own time, free of host syncs.
    """

    start_event: Any = None
    end_event: Any = None

    def __init__(self, started_at: float, finish: Callable[[], None] | None = None) -> None:
        self.started_at = started_at
        self.completed_at: float | None = None
        self._finish = finish
        self._finished = False

    def _done(self) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def _block(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _mark(self) -> None:
        if self.completed_at is None:
            self.completed_at = time.perf_counter()

    def test(self) -> bool:
        """True once the collective has completed (never blocks)."""
        if self._finished:
            return True
        done = self._done()
        if done:
            self._mark()
        return done

    def wait(self) -> None:
        """Block until the result is in place (copy-back from staging buffers and mean division done)."""
        if self._finished:
            return
        self._block()
        self._mark()
        if self._finish is not None:
            self._finish()
        self._finished = True


class Collectives(ABC):
    """One group of ranks and the device its tensors live on (see the module docstring).

    Attributes: ``name`` (backend: "mpi", "gloo", "nccl"), ``rank`` and ``size`` (in this group),
    ``device`` (torch.device of the tensors this rank reduces), ``comm`` (mpi4py communicator of the
    same ranks), ``library`` (what moves the bytes, with its version).
    """

    name: str
    rank: int
    size: int
    device: torch.device
    comm: Any
    library: str

    @abstractmethod
    def allreduce(self, t: torch.Tensor, op: str = "sum") -> None:
        """t <- op over all ranks of t, in place."""

    @abstractmethod
    def allreduce_async(self, t: torch.Tensor, op: str = "sum") -> Handle:
        """Start t <- op over ranks; t must stay alive and untouched until the handle's wait()."""

    @abstractmethod
    def allgather(self, t: torch.Tensor) -> torch.Tensor:
        """A new tensor of shape (size, *t.shape) on t's device; row r holds rank r's t."""

    @abstractmethod
    def alltoall(self, t: torch.Tensor) -> torch.Tensor:
        """A new tensor like t (numel divisible by size): its r-th of size equal chunks is rank r's chunk
        number ``self.rank``."""

    @abstractmethod
    def broadcast(self, t: torch.Tensor, root: int = 0) -> None:
        """t <- rank root's t, in place (root is a rank of this group)."""

    @abstractmethod
    def split(self, color: int) -> Collectives:
        """The group of the ranks that pass the same color (called by every rank of this group)."""

    def barrier(self) -> None:
        """Wait for every rank of the group (over the MPI control plane)."""
        self.comm.Barrier()

    def close(self) -> None:
        """Release what this object created (sub-communicators, process groups)."""

    def _check_root(self, root: int) -> None:
        if isinstance(root, bool) or not isinstance(root, int) or not 0 <= root < self.size:
            raise ValueError(f"root must be a rank in 0..{self.size - 1}, got {root!r}")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} rank {self.rank}/{self.size} on {self.device}>"
