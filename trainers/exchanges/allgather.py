"""TernGrad's allgather exchange: every rank's 2-bit packed codes (ceil(n_k / 4) bytes per tensor k,
back to back) to every rank by Allgather, then each rank sums the W copies. Each rank receives W-1
copies: the bytes grow with the ranks (the exchange does not scale). Bytes per step:
perfmodel.wire.allgather_sent_bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from perfmodel.specs import TERNGRAD_ALLGATHER
from perfmodel.wire import allgather_sent_bytes, packed_nbytes
from trainers.compress import encode_packed, unpack_sum
from trainers.exchanges.base import Exchange

__all__ = ["AllgatherExchange"]


class AllgatherExchange(Exchange):
    """Allgather of the packed codes: one part (the flat gradient), each tensor packed on its own;
    ``exchange`` is gather then sum_copies (the profiler times sum_copies apart)."""

    name = TERNGRAD_ALLGATHER

    def __init__(self, comm: Any, shapes: Sequence[torch.Size | tuple[int, ...]], *, key: int,
                 bucket_bytes: int, lane_bits: int) -> None:
        super().__init__(comm, shapes, key=key, bucket_bytes=bucket_bytes, lane_bits=lane_bits)
        self.nbytes = [packed_nbytes(n) for n in self.sizes]
        self.send = np.empty(sum(self.nbytes), dtype=np.uint8)
        self.recv = np.empty((self.world, self.send.size), dtype=np.uint8)
        self.sums = np.empty(self.elements, dtype=np.int32)
        self.scratch = np.empty(max(self.sizes, default=0), dtype=np.int8)
        self.part_bytes = [allgather_sent_bytes(self.send.size, self.world)] * self.parts

    def encode(self, part: int, shared: np.ndarray, counter: int) -> None:
        flat, starts = self.buckets[0].numpy(), self.groups[0][1]
        lo = 0
        for k, (n, nb) in enumerate(zip(self.sizes, self.nbytes)):
            a, b = int(starts[k]), int(starts[k + 1])
            encode_packed(flat[a:b], np.array([0, n]), shared[k:k + 1], self.key, counter + a,
                          self.send[lo:lo + nb], self.scratch[:n])
            lo += nb

    def gather(self) -> None:
        """Allgather: row r of recv <- rank r's packed codes."""
        self.comm.Allgather(self.send, self.recv)

    def sum_copies(self) -> None:
        """``sums`` <- the sum over the W rows of recv, tensor by tensor."""
        self.sums[:] = 0
        lo, at = 0, 0
        for n, nb in zip(self.sizes, self.nbytes):
            unpack_sum(np.ascontiguousarray(self.recv[:, lo:lo + nb]), n, self.sums[at:at + n])
            lo, at = lo + nb, at + n

    def exchange(self, part: int) -> float:
        self.gather()
        self.sum_copies()
        return self.part_bytes[part]

    def decode(self, part: int, shared: np.ndarray) -> None:
        self._decode_sums(part, torch.from_numpy(self.sums), shared)
