"""What every TernGrad exchange object (trainers.exchanges) shares: the ternary gradients in flat
float32 buckets, their layout (which tensors each bucket holds), and the decoding of the integer sums
into the mean, s * sum / W, on every rank alike.

An exchange runs in ``parts`` (levels: one per gradient bucket; ps and allgather: one buffer), each
``encode`` (codes from the shared scalers and the rank's counter-based stream), ``exchange`` (the
collectives; returns the part's bytes on the wire) then ``decode``, in that order, part after part.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from trainers.comm import FlatBuckets

__all__ = ["Exchange"]


class Exchange:
    """Base of the exchange objects. comm: mpi4py-style communicator (MPI, or BufferComm over another
    backend); shapes: the ternary tensors' shapes, in order; key: this rank's stream key;
    bucket_bytes: the gradient bucket cap (bytes; used by exchanges with ``bucketed``); lane_bits: the
    levels exchange's lane width (perfmodel.wire.levels_lane_bits), ignored by the others."""

    name: ClassVar[str]
    bucketed: ClassVar[bool] = False  # True: SSGD's gradient buckets; False: one flat buffer

    def __init__(self, comm: Any, shapes: Sequence[torch.Size | tuple[int, ...]], *, key: int,
                 bucket_bytes: int, lane_bits: int) -> None:
        self.comm = comm
        self.world = int(comm.Get_size())
        self.key = int(key)
        self.sizes = [math.prod(s) for s in shapes]
        self.elements = sum(self.sizes)
        cap = bucket_bytes if self.bucketed else 4 * max(self.elements, 1)
        self.grads = FlatBuckets([torch.zeros(s) for s in shapes], cap) if shapes else None
        self.views: list[torch.Tensor] = self.grads.views if self.grads is not None else []
        self.buckets: list[torch.Tensor] = self.grads.buckets if self.grads is not None else []
        # per part: first tensor index, segment starts inside the bucket, first element overall
        self.groups: list[tuple[int, np.ndarray, int]] = []
        first, at = 0, 0
        for b in self.buckets:
            count, n, starts = 0, 0, [0]
            while first + count < len(self.sizes) and n + self.sizes[first + count] <= b.numel():
                n += self.sizes[first + count]
                starts.append(n)
                count += 1
            self.groups.append((first, np.asarray(starts, dtype=np.int64), at))
            first, at = first + count, at + n
        self.part_bytes: list[float] = []  # set by each exchange: bytes sent per part (perfmodel.wire)

    @property
    def parts(self) -> int:
        """Parts of one step's exchange (gradient buckets; 0 without ternary tensors)."""
        return len(self.groups)

    def wire_bytes(self) -> float:
        """Bytes this rank sends per step in the codes' exchange (the scalers not included)."""
        return float(sum(self.part_bytes))

    def encode(self, part: int, shared: np.ndarray, counter: int) -> None:
        """Codes of part ``part``'s gradients from the shared scalers (one per ternary tensor, all of
        them) and the stream position ``counter`` (elements drawn before this step)."""
        raise NotImplementedError

    def exchange(self, part: int) -> float:
        """The part's collectives; the bytes this rank sent."""
        raise NotImplementedError

    def decode(self, part: int, shared: np.ndarray) -> None:
        """The part's gradient views <- the mean s * sum / W of the exchanged codes."""
        raise NotImplementedError

    def _decode_sums(self, part: int, sums: torch.Tensor, shared: np.ndarray) -> None:
        """Gradient views of ``part`` <- float32(sum) * s / W (the same operations on every rank)."""
        first, starts, _ = self.groups[part]
        p = float(np.float32(self.world))
        for k in range(len(starts) - 1):
            view = self.views[first + k]
            a, b = int(starts[k]), int(starts[k + 1])
            torch.mul(sums[a:b].view(view.shape), float(shared[first + k]), out=view)
            view.div_(p)
