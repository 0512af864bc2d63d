"""4-bit lanes for TernGrad's levels exchange: pack ternary codes two per byte, add lanes without
carries between them (SWAR), unpack the lane sums (docs/algorithms.md, TernGrad).

No MPI here (the MPI operation that applies ``swar_add4`` is trainers.exchanges.levels.allreduce_lanes4).

The sum of W ternary codes lies in -W..W. A b-bit lane in two's complement holds it exactly when
2W+1 <= 2**b, even though partial sums may leave -2**(b-1)..2**(b-1)-1 on the way: addition modulo
2**b is associative and commutative, so whatever order the reduction takes, the final lane equals the
true sum modulo 2**b, and a value in -W..W is the only one of its residue class in the lane's range.
With b = 4 that holds up to W = 7 (perfmodel.wire.levels_lane_bits chooses the width).

Layout: element 2i takes the low nibble of byte i, element 2i+1 the high nibble; an odd count leaves
the last high nibble 0 (a zero code, so padding sums to 0). ``ceil(n / 2)`` bytes for n elements.

SWAR add of two bytes of 4-bit lanes (bits 0-2 of each lane summed, bit 3 from the XOR of the operands'
bit 3 and the carry into it, the carry out of the lane dropped):

    ((a & 0x77) + (b & 0x77)) ^ ((a ^ b) & 0x88)

The low sums are at most 7 + 7 = 14 < 16, so no carry crosses a lane; the same holds on 64-bit words
with the masks repeated (0x7777... + 0x7777... = 0xEEEE... < 2**64), which is what ``swar_add4`` uses
for the bulk of a buffer.
"""

from __future__ import annotations

import numpy as np

__all__ = ["lanes_nbytes", "pack_lanes4", "swar_add4", "unpack_lanes4"]

_LOW8, _HIGH8 = np.uint8(0x77), np.uint8(0x88)
_LOW64, _HIGH64 = np.uint64(0x7777_7777_7777_7777), np.uint64(0x8888_8888_8888_8888)


def _pair_table() -> np.ndarray:
    """Byte b of two lanes -> the two's-complement int8 values of its low and high nibble, as the
    bytes (low first) of a little-endian uint16."""
    b = np.arange(256)
    low, high = ((b & 0xF) ^ 8) - 8, ((b >> 4) ^ 8) - 8  # sign-extend 4 bits
    return ((low & 0xFF) | (high & 0xFF) << 8).astype("<u2")


_PAIRS = _pair_table()


def lanes_nbytes(n: int) -> int:
    """Bytes of n 4-bit lanes: ceil(n / 2)."""
    return (n + 1) // 2


def pack_lanes4(codes: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """4-bit two's-complement lanes of int8 values in -8..7 (ternary codes: -1..1), two per byte.

    codes: 1-D int8 array of n; out: uint8 array of lanes_nbytes(n) (a new one when None). Returns out."""
    if codes.dtype != np.int8 or codes.ndim != 1:
        raise ValueError(f"codes must be a 1-D int8 array, got {codes.dtype} with {codes.ndim} dims")
    n = codes.size
    if out is None:
        out = np.empty(lanes_nbytes(n), dtype=np.uint8)
    if out.dtype != np.uint8 or out.shape != (lanes_nbytes(n),):
        raise ValueError(f"out must be a 1-D uint8 array of {lanes_nbytes(n)}, got {out.dtype} {out.shape}")
    half = n // 2
    # a pair of codes as one little-endian 16-bit word: low nibbles of both bytes, the second moved
    # next to the first, the byte above dropped by the cast
    pair = codes[:2 * half].view("<u2") & np.uint16(0x0F0F)
    pair |= pair >> np.uint16(4)
    np.copyto(out[:half], pair, casting="unsafe")
    if n % 2:
        out[half] = codes.view(np.uint8)[n - 1] & 0x0F
    return out


def unpack_lanes4(lanes: np.ndarray, n: int, out: np.ndarray | None = None) -> np.ndarray:
    """Signed values (-8..7) of the first n 4-bit lanes, as int8 (a new array when out is None)."""
    if lanes.dtype != np.uint8 or lanes.ndim != 1 or lanes.size < lanes_nbytes(n):
        raise ValueError(f"lanes must be a 1-D uint8 array of >= {lanes_nbytes(n)} bytes")
    if out is None:
        out = np.empty(n, dtype=np.int8)
    if out.dtype != np.int8 or out.shape != (n,):
        raise ValueError(f"out must be a 1-D int8 array of {n}, got {out.dtype} {out.shape}")
    half = n // 2
    # one table look-up per byte gives both signed values as a little-endian 16-bit word
    np.take(_PAIRS, lanes[:half], out=out[:2 * half].view("<u2"))
    if n % 2:
        out[n - 1] = ((int(lanes[half]) & 0xF) ^ 8) - 8  # sign-extend the low nibble
    return out


def swar_add4(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Lane-wise sum modulo 16 of two uint8 arrays of 4-bit lanes (no carry crosses a lane); out may
    be a or b. Whole 8-byte words are added as uint64, the rest byte by byte."""
    if a.dtype != np.uint8 or b.dtype != np.uint8 or a.shape != b.shape or a.ndim != 1:
        raise ValueError("a and b must be 1-D uint8 arrays of one length")
    if out is None:
        out = np.empty_like(a)
    words = a.size // 8 * 8
    for x, y, z, low, high in ((a[:words], b[:words], out[:words], _LOW64, _HIGH64),
                               (a[words:], b[words:], out[words:], _LOW8, _HIGH8)):
        if z.size == 0:
            continue
        if low is _LOW64:
            x, y, z = x.view(np.uint64), y.view(np.uint64), z.view(np.uint64)
        t = np.bitwise_xor(x, y)
        t &= high
        np.add(x & low, y & low, out=z)
        z ^= t
    return out
