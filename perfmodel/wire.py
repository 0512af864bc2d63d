"""Bytes on the wire of TernGrad's exchanges: the one copy of the formulas the trainer's exchange objects
(trainers.exchanges) count their bytes with and the model (perfmodel.compression, scaling,
profile.predictor, validate) charges.

Codes: a ternary value t in {-1, 0, 1} travels as t + 1 in 2 bits, four per byte, so a tensor of n
elements packs into ceil(n / 4) bytes (``packed_nbytes``). With scaler sharing, the sum of W workers'
codes lies in -W..W: 2W + 1 levels, ceil(log2(2W + 1)) bits once offset to 0..2W (``aggregate_bits``).

Per exchange, for n ternary elements on W ranks (names: perfmodel.specs.TERNGRAD_EXCHANGES):
    levels     Allreduce of the integer sum in lanes of b = levels_lane_bits(W, user_ops) bits:
               n b / 8 bytes (``levels_bytes``), sent as a ring: 2 (W-1)/W of them per rank;
    ps         servers sharded over the ranks, s = ps_shard_elems(n, W) = ceil(n / W) rounded up to a
               multiple of 8 (at least 8, so both packings end on a byte): push = Alltoall of s / 4
               bytes to each peer, pull = Allgather of s ceil(log2(2W + 1)) / 8 bytes per rank
               (``ps_blocks``); (W - 1)(push + pull) bytes sent per rank (``ps_sent_bytes``);
    allgather  Allgather of every rank's packed codes, sum_k ceil(n_k / 4) bytes: (W - 1) times those
               bytes sent per rank (``allgather_sent_bytes``; does not scale).
Counting conventions (the run log's bytes_sent, the model's bytes_per_gpu): bytes one rank sends per
step, an Allreduce counted as a ring (``ring_allreduce_bytes``), an Allgather as a ring
(``ring_allgather_bytes``), an Alltoall pairwise (``alltoall_bytes``). One rank sends nothing.

Every function takes an int (the trainer: an exact int result where the formula is integral) or a
numpy array of rank counts (the model's sweep: floats). Pure numpy: no torch, no MPI.
"""

from __future__ import annotations

import numpy as np

from .specs import SpecError

__all__ = ["SCALER_BYTES", "aggregate_bits", "allgather_sent_bytes", "alltoall_bytes", "level_bytes",
           "levels_bytes", "levels_lane_bits", "packed_nbytes", "ps_blocks", "ps_sent_bytes", "ps_shard_elems",
           "ring_allgather_bytes", "ring_allreduce_bytes"]

SCALER_BYTES = 4
"""Bytes of one TernGrad scaler on the wire (float32)."""


def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def packed_nbytes(n: int) -> int:
    """Bytes of n ternary codes packed 2 bits each, four per byte: ceil(n / 4)."""
    if not _is_int(n) or n < 0:
        raise SpecError(f"n must be an int >= 0, got {n!r}")
    return (int(n) + 3) // 4


def aggregate_bits(workers: int | float | np.ndarray) -> int | np.ndarray:
    """Bits per element of the sum of ``workers`` ternary codes offset to 0..2W: ceil(log2(2W + 1)).
    An int for an int (exactly: the bit length of 2W), a float array otherwise."""
    if _is_int(workers):
        if workers < 1:
            raise SpecError(f"workers must be >= 1, got {workers!r}")
        return int(2 * int(workers)).bit_length()
    p = np.asarray(workers, dtype=float)
    return np.ceil(np.log2(2 * p + 1))


def levels_lane_bits(world: int | np.ndarray, user_ops: bool) -> int | np.ndarray:
    """Bits per element of the levels exchange's integer sum of ``world`` ternary codes (-W..W).

    With user-defined reduction operations (``user_ops``), 4 for 2 <= W <= 7: a 4-bit two's-complement
    lane holds -W..W when 2W+1 <= 16, partial sums wrapping modulo 16 (trainers.level_lanes). Otherwise
    (and at W = 1, where nothing is sent and packing would be wasted work) the smallest native signed
    integer: 8 up to 127 workers, 16 up to 32767, else 32. An int for an int ``world``, a float array
    for an array (the model's sweep)."""
    w = np.asarray(world)
    if w.size and np.any(w < 1):
        raise SpecError(f"world must be >= 1, got {world!r}")
    bits = np.where(w <= 127, 8, np.where(w <= 32767, 16, 32))
    if user_ops:
        bits = np.where((w >= 2) & (2 * w + 1 <= 16), 4, bits)
    return int(bits) if bits.ndim == 0 else bits.astype(float)


def level_bytes(workers: float | np.ndarray) -> np.ndarray:
    """Bytes per element of the levels exchange in native integer lanes: the smallest signed integer
    holding -W..W (1 up to 127 workers, 2 up to 32767, else 4)."""
    return np.asarray(levels_lane_bits(np.asarray(workers, dtype=float), False), dtype=float) / 8.0


def levels_bytes(elems: float, lane_bits: int | np.ndarray) -> float | np.ndarray:
    """Bytes the levels exchange allreduces: ``elems`` integer sums of ``lane_bits`` bits each."""
    return elems * lane_bits / 8.0


def ps_shard_elems(elems: int, workers: int | float | np.ndarray) -> int | np.ndarray:
    """Elements each rank serves in the sharded parameter-server exchange of ``elems`` elements:
    ceil(elems / W) rounded up to a multiple of 8 (at least 8). An int for an int W, floats otherwise."""
    if _is_int(workers) and _is_int(elems):
        return -(-max(-(-int(elems) // int(workers)), 1) // 8) * 8
    p = np.asarray(workers, dtype=float)
    return np.ceil(np.maximum(np.ceil(elems / p), 1.0) / 8.0) * 8.0


def ps_blocks(elems: int, workers: int | float | np.ndarray) -> tuple:
    """(push, pull) bytes of the ps exchange: push = one shard's 2-bit codes, sent to each peer by the
    Alltoall (shard / 4); pull = one shard's sum at aggregate_bits(W) bits, each rank's block of the
    Allgather (shard bits / 8). Ints for an int W, floats otherwise."""
    shard = ps_shard_elems(elems, workers)
    if _is_int(shard):
        return shard // 4, shard * aggregate_bits(int(workers)) // 8
    return shard / 4.0, shard * aggregate_bits(workers) / 8.0


def ps_sent_bytes(elems: int, workers: int | float | np.ndarray) -> float | np.ndarray:
    """Bytes one rank sends in the ps exchange: (W - 1)(push + pull)."""
    push, pull = ps_blocks(elems, workers)
    return (np.asarray(workers, dtype=float) - 1) * (push + pull) if not _is_int(workers) \
        else float((workers - 1) * (push + pull))


def allgather_sent_bytes(packed_bytes: float, workers: int | float | np.ndarray) -> float | np.ndarray:
    """Bytes one rank sends in the allgather exchange of ``packed_bytes`` packed codes per rank: (W - 1)
    times them (a ring Allgather)."""
    return ring_allgather_bytes(packed_bytes, workers)


def ring_allreduce_bytes(nbytes: float, p: int | float | np.ndarray) -> float | np.ndarray:
    """Bytes one rank sends in a ring allreduce of an nbytes buffer over p ranks: 2(p-1)/p nbytes."""
    if _is_int(p) or isinstance(p, float):
        return 2.0 * (p - 1) / p * nbytes if p > 1 else 0.0
    return 2 * (p - 1) / p * nbytes


def ring_allgather_bytes(nbytes_each: float, p: int | float | np.ndarray) -> float | np.ndarray:
    """Bytes one rank sends in a ring allgather of nbytes_each per rank: (p-1) nbytes_each."""
    if _is_int(p) or isinstance(p, float):
        return float((p - 1) * nbytes_each)
    return (p - 1) * nbytes_each


def alltoall_bytes(nbytes_per_peer: float, p: int | float | np.ndarray) -> float | np.ndarray:
    """Bytes one rank sends in an alltoall of nbytes_per_peer to every other rank: (p-1) nbytes_per_peer."""
    return ring_allgather_bytes(nbytes_per_peer, p)
