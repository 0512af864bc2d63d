"""Bytes on the wire and encode cost per gradient format: fp32, fp16, bf16, TernGrad.

TernGrad (Wen et al. 2017): each tensor sent as ternary values, 2 bits each (value+1 in {0,1,2}, four
per byte, as the authors' code packs them) plus one float32 scaler per tensor. Tensors with fewer than
``min_elems`` elements, and the classifier layer when ``fp32_last`` is set, travel in float32 (the
authors' code keeps both; so do the trainers by default). With scaler sharing the sum of p workers'
ternary tensors has at most 2p+1 levels, so a summed aggregate needs ceil(log2(2p+1)) bits per element
(the paper: "the server-to-worker communication reduces by a factor of 32/log2(1+2N)").

Per element on the wire, by exchange (trainers.sync.terngrad.TernGrad sends exactly these):
    levels     the integer sum in the smallest signed type holding -p..p: 1 byte up to 127 workers,
               2 up to 32767, then 4 (``level_bytes``), allreduced;
    ps         push 2 bits, pull ceil(log2(2p+1)) bits, over shards of ``ps_shard_elems`` elements
               (ceil(n/p) rounded up to 8, so both packings end on a byte);
    allgather  2 bits per element, ceil(n_k/4) bytes per tensor k, from every worker to every worker.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .specs import SpecError, Workload

SCALER_BYTES = 4
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


def aggregate_bits(workers: float | np.ndarray) -> np.ndarray:
    """Bits per element to carry the sum of p ternary tensors with shared scalers: ceil(log2(2p+1))."""
    p = np.asarray(workers, dtype=float)
    return np.ceil(np.log2(2 * p + 1))


def level_bytes(workers: float | np.ndarray) -> np.ndarray:
    """Bytes per element of the levels exchange: the smallest signed integer holding -p..p
    (1 up to 127 workers, 2 up to 32767, else 4)."""
    p = np.asarray(workers, dtype=float)
    return np.where(p <= 127, 1.0, np.where(p <= 32767, 2.0, 4.0))


def ps_shard_elems(elems: int, workers: float | np.ndarray) -> np.ndarray:
    """Elements each worker serves in the sharded parameter-server exchange: ceil(n/p) rounded up to a
    multiple of 8 (at least 8)."""
    p = np.asarray(workers, dtype=float)
    return np.ceil(np.maximum(np.ceil(elems / p), 1.0) / 8.0) * 8.0


def encode_seconds(elems: float, encode_elems_per_s: float) -> float:
    """Seconds to ternarize, pack and unpack ``elems`` elements at the given rate (0 rate means free)."""
    if encode_elems_per_s == 0 or np.isinf(encode_elems_per_s):
        return 0.0
    return elems / encode_elems_per_s


def compression_ratio(workload: Workload, min_elems: int = 1, fp32_last: bool = True) -> float:
    """fp32 bytes over one worker's packed TernGrad bytes."""
    split = ternary_split(workload, min_elems, fp32_last)
    return float(dense_bytes(workload) / terngrad_bytes(split))
