"""mpi4py's buffer calls on top of any :class:`~trainers.collectives.base.Collectives` group.

The MPI exchanges of trainers.comm (FlatBuckets.allreduce_mean, allreduce_max) and TernGrad's
exchange objects (trainers.exchanges: levels, ps, allgather) call ``comm.Allreduce``, ``comm.Allgather`` and
``comm.Alltoall`` on numpy arrays. :class:`BufferComm` gives them those calls -- with mpi4py's
signatures, ``MPI.IN_PLACE`` and the ``MPI.SUM``/``MPI.MAX`` operations -- carried out by a collectives
group (gloo on CPU ranks), so every exchange runs unchanged on every backend. The arrays are CPU numpy
arrays; the group's tensors are views of their memory (no copies beyond what the backend makes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from trainers.collectives.base import Collectives

__all__ = ["BufferComm"]


class BufferComm:
    """``Get_rank``/``Get_size``/``Allreduce``/``Allgather``/``Alltoall``/``Barrier`` of ``coll``'s ranks."""

    def __init__(self, coll: Collectives) -> None:
        self.coll = coll

    def Get_rank(self) -> int:  # noqa: N802 - mpi4py's names
        return self.coll.rank

    def Get_size(self) -> int:  # noqa: N802
        return self.coll.size

    def Barrier(self) -> None:  # noqa: N802
        self.coll.barrier()

    def Allreduce(self, sendbuf: Any, recvbuf: np.ndarray, op: Any = None) -> None:  # noqa: N802
        """recvbuf <- op over ranks of sendbuf (or of recvbuf itself with ``MPI.IN_PLACE``)."""
        from mpi4py import MPI

        if sendbuf is not MPI.IN_PLACE and sendbuf is not None:
            np.copyto(recvbuf, np.asarray(sendbuf).reshape(recvbuf.shape))
        if op is None or op == MPI.SUM:
            name = "sum"
        elif op == MPI.MAX:
            name = "max"
        else:
            raise ValueError(f"BufferComm.Allreduce supports MPI.SUM and MPI.MAX, got {op!r}")
        self.coll.allreduce(torch.from_numpy(_contiguous(recvbuf)), name)

    def Allgather(self, sendbuf: np.ndarray, recvbuf: np.ndarray) -> None:  # noqa: N802
        """recvbuf (size x len(sendbuf) elements) <- every rank's sendbuf, in rank order."""
        out = self.coll.allgather(torch.from_numpy(np.ascontiguousarray(sendbuf).reshape(-1)))
        np.copyto(recvbuf, out.numpy().reshape(recvbuf.shape))

    def Alltoall(self, sendbuf: np.ndarray, recvbuf: np.ndarray) -> None:  # noqa: N802
        """recvbuf's r-th equal chunk <- rank r's chunk number Get_rank() of its sendbuf."""
        out = self.coll.alltoall(torch.from_numpy(np.ascontiguousarray(sendbuf).reshape(-1)))
        np.copyto(recvbuf, out.numpy().reshape(recvbuf.shape))


def _contiguous(a: np.ndarray) -> np.ndarray:
    if not a.flags.c_contiguous:
        raise ValueError("BufferComm works on contiguous arrays")
    return a
