"""Bytes on the wire and encode cost per gradient format: fp32, fp16, bf16, TernGrad.

TernGrad (Wen et al. 2017): each tensor sent as ternary values, 2 bits each (value+1 in {0,1,2}, four
per byte, as the authors' code packs them) plus one float32 scaler per tensor. Tensors with fewer than
``min_elems`` elements, and the classifier layer when ``fp32_last`` is set, travel in float32 (the
authors' code keeps both; so do the trainers by default). With scaler sharing the sum of p workers'
ternary tensors has at most 2p+1 levels, so a summed aggregate needs ceil(log2(2p+1)) bits per element
(the paper: "the server-to-worker communication reduces by a factor of 32/log2(1+2N)").

Per element on the wire, by exchange (the formulas: perfmodel.wire, which the trainer's exchange
objects, trainers.exchanges, count their bytes with too):
    levels     the integer sum, allreduced, in lanes of ``wire.levels_lane_bits(p, user_ops)`` bits: 4
               bits (two elements per byte) for 2 <= p <= 7 when the transport has user-defined
               reduction operations (MPI: ``resolve_level_lanes``), else the smallest signed integer
               holding -p..p: 1 byte up to 127 workers, 2 up to 32767, then 4 (``wire.level_bytes``);
    ps         push 2 bits, pull ceil(log2(2p+1)) bits, over shards of ``wire.ps_shard_elems`` elements
               (ceil(n/p) rounded up to 8, so both packings end on a byte);
    allgather  2 bits per element, ceil(n_k/4) bytes per tensor k, from every worker to every worker.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .specs import TERNGRAD_ALLGATHER, TERNGRAD_LEVELS, TERNGRAD_PS, SpecError, Workload
from .wire import SCALER_BYTES, ps_shard_elems

_ELEMENT_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0}


def dense_bytes(workload: Workload, wire: str = "fp32") -> float:
    """Bytes of one full gradient in a dense format (fp32, fp16 or bf16)."""
    if wire not in _ELEMENT_BYTES:
        raise SpecError(f"unknown dense wire format {wire!r}; choose from {', '.join(_ELEMENT_BYTES)}")
    return workload.parameters * _ELEMENT_BYTES[wire]


@dataclass(frozen=True)
class TernarySplit:
    """Which elements of a workload travel ternary and which stay float32."""

    ternary_elems: int
    ternary_tensors: int
    fp32_elems: int
    packed_bytes: int = 0  # sum over ternary tensors of ceil(n_k / 4): one worker's 2-bit codes

    @property
    def elems(self) -> int:
        return self.ternary_elems + self.fp32_elems


def ternary_split(workload: Workload, min_elems: int = 1, fp32_last: bool = True) -> TernarySplit:
    """Split the workload's tensors into ternary and float32 ones (threshold ``min_elems`` elements;
    the defaults are the trainers': every tensor ternary except the classifier layer)."""
    sizes = np.asarray(workload.tensor_sizes, dtype=np.int64)
    ternary = sizes >= min_elems
    if fp32_last and workload.classifier_tensors:
        ternary[len(sizes) - workload.classifier_tensors:] = False
    return TernarySplit(int(sizes[ternary].sum()), int(ternary.sum()), int(sizes[~ternary].sum()),
                        int(((sizes[ternary] + 3) // 4).sum()))


def terngrad_bytes(split: TernarySplit, bits_per_elem: float | np.ndarray = 2.0) -> np.ndarray:
    """Bytes of one TernGrad gradient: ternary elements at ``bits_per_elem`` bits, one float scaler per
    ternary tensor, float32 for the rest. bits_per_elem 2 is one worker's packed gradient; an
    aggregate of p workers needs ``aggregate_bits(p)``."""
    bits = np.asarray(bits_per_elem, dtype=float)
    return (split.ternary_elems * bits / 8.0 + SCALER_BYTES * split.ternary_tensors
            + 4.0 * split.fp32_elems)


LEVEL_LANES = ("auto", "packed", "int8")
"""Lane choices of the levels exchange: packed (4-bit lanes where they hold the sum; needs user-defined
reduction operations), int8 (the smallest native integer type), auto (packed when the backend can)."""

USER_OP_BACKENDS = ("mpi",)
"""Transports with user-defined reduction operations (MPI_Op_create). gloo and NCCL reduce only their
native types, the smallest of which is one byte."""


def resolve_level_lanes(requested: str, backend: str) -> str:
    """The lanes ("packed" or "int8") the levels exchange uses on ``backend`` (mpi, gloo, nccl) when
    ``requested`` (auto, packed, int8): auto is packed on a backend with user-defined operations.
    SpecError for an unknown choice or packed on a backend without user operations."""
    if requested not in LEVEL_LANES:
        raise SpecError(f"unknown levels lanes {requested!r}; choose from {', '.join(LEVEL_LANES)}")
    user_ops = backend in USER_OP_BACKENDS
    if requested == "packed" and not user_ops:
        raise SpecError(f"packed levels lanes need user-defined reduction operations, which backend "
                        f"{backend!r} lacks (use int8 or auto)")
    if requested == "auto":
        return "packed" if user_ops else "int8"
    return requested


def ps_aggregate_seconds(ternary_elems: int, workers: float | np.ndarray, rate: float) -> np.ndarray:
    """Seconds of the sharded parameter-server exchange's work on one rank besides its collectives:
    workers x shard elements (wire.ps_shard_elems) at ``rate`` elements/s (the profile's
    CodecTimes.aggregate; 0: none)."""
    return np.asarray(encode_seconds(np.asarray(workers, dtype=float) * ps_shard_elems(ternary_elems, workers), rate),
                      dtype=float)


# Collectives of one step that follow the codec's own work, per exchange (trainers.sync.terngrad): the
# codes' exchange after the encoding (ps: its Alltoall, then its Allgather after the shard's sum) and,
# where some tensors stay fp32, their Allreduce after the decoding. The scalers' Allreduce, the step's
# first synchronization point, follows the training step's compute and is not counted here.
_EXCHANGE_SYNCS = {TERNGRAD_LEVELS: 1, TERNGRAD_ALLGATHER: 1, TERNGRAD_PS: 2}


def codec_sync_points(split: TernarySplit, exchange: str) -> int:
    """Synchronization points of a TernGrad step after its first (the scalers' Allreduce): each is a
    collective that every rank enters after codec work of its own (perfmodel.scaling charges
    Strategy.sync_wait_s at each)."""
    if exchange not in _EXCHANGE_SYNCS:
        raise SpecError(f"unknown TernGrad exchange {exchange!r}; choose from {', '.join(_EXCHANGE_SYNCS)}")
    return _EXCHANGE_SYNCS[exchange] + (1 if split.fp32_elems > 0 else 0)


def encode_seconds(elems: float, encode_elems_per_s: float) -> float:
    """Seconds to ternarize, pack and unpack ``elems`` elements at the given rate (0 rate means free)."""
    if encode_elems_per_s == 0 or np.isinf(encode_elems_per_s):
        return 0.0
    return elems / encode_elems_per_s


def compression_ratio(workload: Workload, min_elems: int = 1, fp32_last: bool = True) -> float:
    """fp32 bytes over one worker's packed TernGrad bytes."""
    split = ternary_split(workload, min_elems, fp32_last)
    return float(dense_bytes(workload) / terngrad_bytes(split))
