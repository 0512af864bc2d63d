"""TernGrad's ps exchange: the paper's parameter server, sharded over the ranks (rank k serves
elements [k s, (k+1) s), s = perfmodel.wire.ps_shard_elems).

push: Alltoall of the 2-bit packed shards (encode_packed of the flat codes, padding code 1);
aggregate: each rank sums its shard of the W workers' codes and packs the sum, offset by W to 0..2W,
at ceil(log2(2W+1)) bits (trainers.compress.ps_shard_sum); pull: Allgather of the packed sums;
unpack: every rank unpacks all sums (ps_unpack_sums). Bytes per step: perfmodel.wire.ps_sent_bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from perfmodel.specs import TERNGRAD_PS
from perfmodel.wire import aggregate_bits, ps_blocks, ps_sent_bytes, ps_shard_elems
from trainers.compress import encode_packed, ps_shard_sum, ps_unpack_sums
from trainers.exchanges.base import Exchange

__all__ = ["PsExchange"]


class PsExchange(Exchange):
    """The sharded parameter server: one part (the flat gradient); ``exchange`` is push, aggregate,
    pull, unpack (the profiler times aggregate + pull + unpack apart)."""

    name = TERNGRAD_PS

    def __init__(self, comm: Any, shapes: Sequence[torch.Size | tuple[int, ...]], *, key: int,
                 bucket_bytes: int, lane_bits: int) -> None:
        super().__init__(comm, shapes, key=key, bucket_bytes=bucket_bytes, lane_bits=lane_bits)
        p = self.world
        self.shard = ps_shard_elems(self.elements, p)
        self.bits = aggregate_bits(p)
        push, pull = ps_blocks(self.elements, p)
        self.send = np.empty(p * push, dtype=np.uint8)
        self.recv = np.empty((p, push), dtype=np.uint8)
        self.mine = np.empty(pull, dtype=np.uint8)
        self.gathered = np.empty((p, pull), dtype=np.uint8)
        self.sums = np.empty(p * self.shard, dtype=np.int32)
        self.scratch = np.empty(self.elements, dtype=np.int8)
        self.part_bytes = [ps_sent_bytes(self.elements, p)] * self.parts

    def encode(self, part: int, shared: np.ndarray, counter: int) -> None:
        encode_packed(self.buckets[0].numpy(), self.groups[0][1], shared, self.key, counter, self.send,
                      self.scratch)

    def push(self) -> None:
        """Alltoall of the packed shards: row r of recv <- rank r's codes of this rank's shard."""
        self.comm.Alltoall(self.send, self.recv)

    def aggregate(self) -> None:
        """This rank's shard: the W rows summed, offset to 0..2W, packed at ``bits`` bits."""
        self.mine[:] = ps_shard_sum(self.recv, self.shard, self.world)

    def pull(self) -> None:
        """Allgather of every rank's packed shard sums."""
        self.comm.Allgather(self.mine, self.gathered)

    def unpack(self) -> None:
        """All shards' sums, less the offset, into ``sums`` (int32, W shards)."""
        ps_unpack_sums(self.gathered, self.shard, self.world, self.sums)

    def exchange(self, part: int) -> float:
        self.push()
        self.aggregate()
        self.pull()
        self.unpack()
        return self.part_bytes[part]

    def decode(self, part: int, shared: np.ndarray) -> None:
        self._decode_sums(part, torch.from_numpy(self.sums[:self.elements]), shared)
