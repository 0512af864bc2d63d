"""TernGrad's levels exchange: the integer sum of the ternary codes by Allreduce, bucketed like SSGD.

Per bucket: encode_codes writes the codes in the smallest signed integer type holding -W..W
(trainers.compress.level_dtype); in 4-bit lanes (lane_bits 4: 2..7 ranks on MPI, trainers.level_lanes)
they are packed two per byte and summed by a user-defined MPI operation that adds lanes modulo 16,
else summed by Allreduce(SUM) on their integer type; every rank then decodes the same sums. Bytes per
step: a ring Allreduce of each bucket's codes, perfmodel.wire.ring_allreduce_bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from perfmodel.specs import TERNGRAD_LEVELS
from perfmodel.wire import ring_allreduce_bytes
from trainers.comm import user_op
from trainers.compress import encode_codes, level_dtype
from trainers.exchanges.base import Exchange
from trainers.level_lanes import lanes_nbytes, pack_lanes4, swar_add4, unpack_lanes4

__all__ = ["LevelsExchange", "allreduce_lanes4", "allreduce_levels"]


def allreduce_levels(comm: Any, codes: np.ndarray) -> float:
    """Sum integer ternary codes over comm's ranks in place (Allreduce SUM on codes' integer type, which
    must hold -W..W: trainers.compress.level_dtype(W)); returns the bytes sent (ring count)."""
    p = comm.Get_size()
    if codes.dtype.kind != "i" or np.iinfo(codes.dtype).max < p:
        raise ValueError(f"codes of dtype {codes.dtype} cannot hold sums of {p} ternary values")
    if p > 1 and codes.size:
        from mpi4py import MPI  # initializes MPI: only where a collective runs

        comm.Allreduce(MPI.IN_PLACE, codes, op=MPI.SUM)
    return ring_allreduce_bytes(codes.nbytes, p)


def _lanes4_sum(inbuf: Any, inoutbuf: Any, datatype: Any) -> None:
    """MPI user op: inout <- in + inout lane by lane (4-bit lanes, modulo 16; trainers.level_lanes)."""
    a = np.frombuffer(inbuf, dtype=np.uint8)
    b = np.frombuffer(inoutbuf, dtype=np.uint8)
    swar_add4(a, b, out=b)


def allreduce_lanes4(comm: Any, lanes: np.ndarray) -> float:
    """Sum 4-bit ternary-code lanes (trainers.level_lanes.pack_lanes4, two per byte) over comm's ranks
    in place with a user-defined MPI operation that adds lanes modulo 16 without carries between them;
    exact for 2..7 ranks (2W+1 <= 16: the sum in -W..W is the only value of its residue). The bytes
    travel as MPI.BYTE, so any segmentation (Open MPI's ring cuts at element = byte boundaries) keeps
    lanes whole. Returns the bytes sent (ring count of the packed buffer)."""
    p = comm.Get_size()
    if lanes.dtype != np.uint8 or lanes.ndim != 1:
        raise ValueError(f"lanes must be a 1-D uint8 array, got {lanes.dtype} with {lanes.ndim} dims")
    if 2 * p + 1 > 16:
        raise ValueError(f"4-bit lanes cannot hold sums of {p} ternary values (2W+1 > 16)")
    if p > 1 and lanes.size:
        from mpi4py import MPI  # initializes MPI: only where a collective runs

        comm.Allreduce(MPI.IN_PLACE, [lanes, MPI.BYTE], op=user_op(_lanes4_sum))
    return ring_allreduce_bytes(lanes.nbytes, p)


class LevelsExchange(Exchange):
    """Allreduce of the integer sum of the codes (allreduce_levels, or allreduce_lanes4 with
    lane_bits 4), one part per gradient bucket."""

    name = TERNGRAD_LEVELS
    bucketed = True

    def __init__(self, comm: Any, shapes: Sequence[torch.Size | tuple[int, ...]], *, key: int,
                 bucket_bytes: int, lane_bits: int) -> None:
        super().__init__(comm, shapes, key=key, bucket_bytes=bucket_bytes, lane_bits=lane_bits)
        self.dtype = level_dtype(self.world)
        self.codes = [np.empty(b.numel(), dtype=self.dtype) for b in self.buckets]
        self.lanes = [np.empty(lanes_nbytes(c.size), dtype=np.uint8) if lane_bits == 4 else None
                      for c in self.codes]
        self.part_bytes = [ring_allreduce_bytes((c if lanes is None else lanes).nbytes, self.world)
                           for c, lanes in zip(self.codes, self.lanes)]

    def encode(self, part: int, shared: np.ndarray, counter: int) -> None:
        first, starts, at = self.groups[part]
        codes, lanes = self.codes[part], self.lanes[part]
        encode_codes(self.buckets[part].numpy(), starts, shared[first:first + len(starts) - 1], self.key,
                     counter + at, codes)
        if lanes is not None:
            pack_lanes4(codes, lanes)

    def exchange(self, part: int) -> float:
        lanes = self.lanes[part]
        return allreduce_levels(self.comm, self.codes[part]) if lanes is None else allreduce_lanes4(self.comm, lanes)

    def decode(self, part: int, shared: np.ndarray) -> None:
        codes, lanes = self.codes[part], self.lanes[part]
        if lanes is not None:
            unpack_lanes4(lanes, codes.size, codes)
        self._decode_sums(part, torch.from_numpy(codes), shared)
