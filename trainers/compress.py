"""TernGrad (Wen et al. 2017): per-tensor scalers, stochastic ternarization, 2-bit packing.

No MPI here: this module turns float gradients into ternary tensors and back. Scaler sharing (allreduce(max))
lives in ``trainers.comm``, the exchanges of the codes (integer level allreduce, sharded parameter
server, allgather of packed bytes) in ``trainers.exchanges``. Two encoders: ``ternarize`` (torch, a torch.Generator; the
reference) and the trainer's fused ``encode_codes`` / ``encode_packed`` (one pass, numba, a
counter-based splitmix64 stream; section "fused encode" below), with ``pack_bits`` for the
ceil(log2(2p+1))-bit sums the parameter server sends back.

Wire format (the authors' code): each ternary value ``t`` in {-1, 0, 1} is stored as ``t + 1`` in
{0, 1, 2}, two bits each, four values per byte, the first value in the lowest two bits; the last
byte of a tensor is padded with code 1 (value 0). One float32 scaler travels per ternary tensor.

Example::

    codec = TernGradCodec()
    plan = codec.plan(named_grads)                      # True = ternary, False = float32
    local = codec.scalers([g for _, g in named_grads], plan)
    shared = local                                      # over MPI: comm.allreduce_max(comm, local)
    enc = codec.encode([g for _, g in named_grads], plan, shared, torch.Generator().manual_seed(0))
    dec = codec.decode(enc, plan, shared)               # s * t for ternary tensors
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from perfmodel.wire import aggregate_bits as level_bits  # ceil(log2(2W+1)) bits of a sum of W codes
from perfmodel.wire import SCALER_BYTES, levels_lane_bits, packed_nbytes  # ceil(n / 4) bytes of n packed codes
from trainers.validators import FLOAT32_MAX

__all__ = [
    "TernGradCodec",
    "dequantize",
    "pack2bit",
    "packed_nbytes",
    "scaler",
    "ternarize",
    "ternary_counts",
    "ternary_mean",
    "unpack2bit",
]


FP32_BYTES = 4
"""Bytes of one float32 gradient element on the wire."""

_SHIFTS = (0, 2, 4, 6)


def scaler(g: torch.Tensor, clip: float | None = 2.5) -> float:
    """Scaler s of one gradient tensor (same unit as g).

    ``clip=None``: s = max|g|. Otherwise s = clip * std(g), std the population standard deviation of the
    whole tensor with its mean removed; ternarizing with this s clips every |g_k| >= s to sign(g_k)*s.
    A constant tensor has std 0 and nothing to clip: then s = max|g| (the authors' code would return 0
    and zero the tensor's gradient). An empty or all-zero tensor gives 0.0. The scaler travels as a
    float32: a clip * std beyond the largest float32 is that largest float32 (such a scaler clips nothing).
    """
    if clip is not None and not (math.isfinite(clip) and clip > 0):
        raise ValueError(f"clip must be None or a finite number > 0, got {clip!r}")
    if g.numel() == 0:
        return 0.0
    flat = g.detach().reshape(-1)
    if _numba is not None and flat.dtype == torch.float32 and flat.device.type == "cpu":
        amax, std = _moments_nb(flat.contiguous().numpy())  # one float64 pass each for mean, spread
    else:
        flat = flat.to(torch.float64)
        amax, std = float(flat.abs().max()), float(flat.std(correction=0))
    if clip is None:
        return float(amax)
    s = min(clip * float(std), FLOAT32_MAX)  # --tern-clip 1e300 made it inf, and the exchange refused it
    return s if s > 0.0 else float(amax)


def ternarize(g: torch.Tensor, s: float, generator: torch.Generator) -> torch.Tensor:
    """Stochastic ternarization: int8 tensor t in {-1, 0, 1}, shape of g; s*t estimates g.

    t_k = sign(g_k) * b_k with b_k ~ Bernoulli(min(|g_k| / s, 1)), drawn from ``generator`` (which must
    live on g's device). E[s*t_k] = g_k where |g_k| <= s; where |g_k| >= s, t_k = sign(g_k) always.
    ``s == 0`` gives all zeros (valid only when g is all zero, as any shared scaler >= the local one).
    """
    if not (math.isfinite(s) and s >= 0):
        raise ValueError(f"s must be a finite number >= 0, got {s!r}")
    if not g.is_floating_point():
        raise ValueError(f"g must be a floating-point tensor, got dtype {g.dtype}")
    g = g.detach()
    if s == 0.0:
        if bool((g != 0).any()):
            raise ValueError("s == 0 but g has non-zero elements; pass a scaler >= scaler(g)")
        return torch.zeros(g.shape, dtype=torch.int8, device=g.device)
    gf = g.to(torch.float32)
    p = (gf.abs() / s).clamp_(max=1.0)
    u = torch.rand(g.shape, generator=generator, dtype=torch.float32, device=g.device)
    keep = u < p  # u in [0, 1): P(keep) = p, and p = 1 always keeps
    return (torch.sign(gf) * keep).to(torch.int8)


def dequantize(t: torch.Tensor, s: float) -> torch.Tensor:
    """Float32 tensor s * t of a ternary tensor t."""
    return t.to(torch.float32) * s


def ternary_counts(ternaries: Sequence[torch.Tensor] | torch.Tensor) -> torch.Tensor:
    """Element-wise integer sum (int32) of N ternary tensors: values in -N..N, so at most 2N+1 levels.

    Accepts a sequence of same-shape int8 tensors or one tensor stacked on dimension 0.
    """
    stacked = ternaries if isinstance(ternaries, torch.Tensor) else torch.stack(list(ternaries))
    if stacked.dtype != torch.int8:
        raise ValueError(f"ternary tensors must be int8, got {stacked.dtype}")
    return stacked.sum(dim=0, dtype=torch.int32)


def ternary_mean(ternaries: Sequence[torch.Tensor] | torch.Tensor, s: float) -> torch.Tensor:
    """Average s * t_i over N workers' ternary tensors sharing the scaler s (float32).

    The result takes values s * k / N, k in -N..N: at most 2N+1 levels. Every rank computing this from
    the same inputs gets bit-identical output (integer sum, then one multiply and one divide).
    """
    counts = ternary_counts(ternaries)
    n = ternaries.shape[0] if isinstance(ternaries, torch.Tensor) else len(ternaries)
    return counts.to(torch.float32) * s / n


def pack2bit(t: torch.Tensor) -> torch.Tensor:
    """Pack an int8 ternary tensor (any shape, flattened) into uint8, 4 values per byte."""
    if t.dtype != torch.int8:
        raise ValueError(f"t must be an int8 tensor, got {t.dtype}")
    flat = t.reshape(-1)
    if flat.numel() and bool(((flat < -1) | (flat > 1)).any()):
        raise ValueError("t must hold only -1, 0, 1")
    codes = (flat + 1).to(torch.uint8)
    pad = (-codes.numel()) % 4
    if pad:
        codes = torch.cat([codes, codes.new_ones(pad)])
    quads = codes.view(-1, 4)
    return quads[:, 0] | (quads[:, 1] << 2) | (quads[:, 2] << 4) | (quads[:, 3] << 6)


def unpack2bit(packed: torch.Tensor, n: int) -> torch.Tensor:
    """Inverse of pack2bit: 1-D int8 tensor of the first n values."""
    if packed.dtype != torch.uint8 or packed.dim() != 1:
        raise ValueError(f"packed must be a 1-D uint8 tensor, got {packed.dtype} with {packed.dim()} dims")
    if packed.numel() != packed_nbytes(n):
        raise ValueError(f"packed has {packed.numel()} bytes, n={n} needs {packed_nbytes(n)}")
    shifts = torch.tensor(_SHIFTS, dtype=torch.uint8, device=packed.device)
    codes = ((packed.unsqueeze(1) >> shifts) & 3).reshape(-1)[:n]
    if n and bool((codes == 3).any()):
        raise ValueError("packed data holds code 3, which is not a ternary value")
    return codes.to(torch.int8) - 1


def _layer_of(name: str) -> str:
    """Module path of a parameter name ('fc3.weight' -> 'fc3'); a name without a dot is its own layer."""
    head, _, _ = name.rpartition(".")
    return head or name


def _named_sizes(named: Mapping[str, int | torch.Tensor] | Sequence[tuple[str, int | torch.Tensor]]
                 ) -> list[tuple[str, int]]:
    items = list(named.items()) if isinstance(named, Mapping) else list(named)
    out = []
    for name, value in items:
        size = value.numel() if isinstance(value, torch.Tensor) else int(value)
        if size < 0:
            raise ValueError(f"tensor {name!r} has negative size {size}")
        out.append((str(name), size))
    return out


@dataclass(frozen=True)
class TernGradCodec:
    """Which tensors travel ternary, and how many bytes one worker sends per iteration.

    clip: gradient clipping factor c (s = c * std), or None for s = max|g|. The paper uses 2.5.
    min_tensor_elems: tensors with fewer elements travel as float32 (authors' ``size_to_binarize``,
        default 1 = ternarize every tensor).
    keep_last_layer_fp32: the tensors of the last layer (all names sharing the module path of the
        last name, e.g. 'fc.weight' and 'fc.bias') travel as float32, as the paper advises.
    """

    clip: float | None = 2.5
    min_tensor_elems: int = 1
    keep_last_layer_fp32: bool = True

    def __post_init__(self) -> None:
        if self.clip is not None and (isinstance(self.clip, bool) or not isinstance(self.clip, (int, float))
                                      or not math.isfinite(self.clip) or self.clip <= 0):
            raise ValueError(f"clip must be None or a finite number > 0 (paper: 2.5), got {self.clip!r}")
        if isinstance(self.min_tensor_elems, bool) or not isinstance(self.min_tensor_elems, int) \
                or self.min_tensor_elems < 1:
            raise ValueError(f"min_tensor_elems must be an int >= 1, got {self.min_tensor_elems!r}")
        if not isinstance(self.keep_last_layer_fp32, bool):
            raise ValueError(f"keep_last_layer_fp32 must be True or False, got {self.keep_last_layer_fp32!r}")

    def plan(self, named: Mapping[str, int | torch.Tensor] | Sequence[tuple[str, int | torch.Tensor]]
             ) -> tuple[bool, ...]:
        """Per tensor, in order: True = ternary, False = float32. Values are tensors or element counts."""
        sizes = _named_sizes(named)
        last = _layer_of(sizes[-1][0]) if sizes and self.keep_last_layer_fp32 else None
        return tuple(n >= self.min_tensor_elems and _layer_of(name) != last for name, n in sizes)

    def wire_bytes(self, named: Mapping[str, int | torch.Tensor] | Sequence[tuple[str, int | torch.Tensor]]
                   ) -> int:
        """Bytes one worker sends per iteration: ceil(n/4) + 4 per ternary tensor, 4n per float32 tensor."""
        sizes = _named_sizes(named)
        return sum(packed_nbytes(n) + SCALER_BYTES if tern else FP32_BYTES * n
                   for (_, n), tern in zip(sizes, self.plan(sizes)))

    def scalers(self, grads: Sequence[torch.Tensor], plan: Sequence[bool]) -> np.ndarray:
        """Local float32 scalers, one per tensor (0 for float32 tensors); share them with a max-allreduce."""
        _check_len(grads, plan)
        return np.array([scaler(g, self.clip) if tern else 0.0 for g, tern in zip(grads, plan)],
                        dtype=np.float32)

    def encode(self, grads: Sequence[torch.Tensor], plan: Sequence[bool], shared: Sequence[float],
               generator: torch.Generator) -> list[torch.Tensor]:
        """Ternary int8 tensors where plan is True (with the shared scalers), float32 copies elsewhere."""
        _check_len(grads, plan, shared)
        return [ternarize(g, float(s), generator) if tern else g.detach().to(torch.float32)
                for g, tern, s in zip(grads, plan, shared)]

    def decode(self, encoded: Sequence[torch.Tensor], plan: Sequence[bool], shared: Sequence[float]
               ) -> list[torch.Tensor]:
        """Float32 gradients back from encode's output: s * t for ternary tensors."""
        _check_len(encoded, plan, shared)
        return [dequantize(e, float(s)) if tern else e for e, tern, s in zip(encoded, plan, shared)]


def _check_len(*seqs: Sequence) -> None:
    lengths = {len(s) for s in seqs}
    if len(lengths) != 1:
        raise ValueError(f"gradients, plan and scalers must have the same length, got {sorted(lengths)}")


# ------------------------------------------------------------------ fused encode, counter-based stream
#
# The fast path the trainer uses. Element i of a stream keyed ``key`` gets the 64-bit random word
# splitmix64(key + (counter + i + 1) * 0x9E3779B97F4A7C15) (Steele, Lea and Flood 2014, the seeding
# generator of java.util.SplittableRandom; counter-based, so a step's draws depend only on the key, the
# step's first counter and the element's index). Its top 53 bits r are uniform on 0..2**53-1, and the
# element is kept when r < |g| * (2**53 / s) (float64): P(keep) = min(|g|/s, 1) up to the threshold's
# rounding (relative 2**-52) and the 2**-53 grid, so E[s t] = g within about 2**-52 |g| + 2**-53 s per
# element (the torch path above draws float32 uniforms: 2**-24). The loop has no branch, so LLVM
# vectorizes it. The numba kernels and the numpy reference compute the same words and the same codes,
# bit for bit; without numba the numpy reference runs.

GOLDEN = 0x9E3779B97F4A7C15
"""splitmix64's Weyl increment (2**64 / golden ratio, odd)."""

_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_TWO53 = 2.0**53


def _thresholds(scalers: np.ndarray) -> np.ndarray:
    """2**53 / s per segment (0 for s == 0: nothing is kept)."""
    s = np.asarray(scalers, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(s > 0, _TWO53 / np.where(s > 0, s, 1.0), 0.0)


def _splitmix_np(words: np.ndarray) -> np.ndarray:
    """splitmix64's output mix of uint64 words (numpy, wrapping arithmetic)."""
    z = words.copy()
    z ^= z >> np.uint64(30)
    z *= np.uint64(_M1)
    z ^= z >> np.uint64(27)
    z *= np.uint64(_M2)
    z ^= z >> np.uint64(31)
    return z


def _codes_np(g: np.ndarray, starts: np.ndarray, scalers: np.ndarray, key: int, counter: int) -> np.ndarray:
    """Reference encode (numpy): int8 codes in {-1, 0, 1} of the flat float32 g, segment k = g[starts[k]:
    starts[k+1]] with scaler scalers[k] (0 only for an all-zero segment)."""
    idx = np.arange(g.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        words = np.uint64(key) + (np.uint64(counter) + idx + np.uint64(1)) * np.uint64(GOLDEN)
        r = (_splitmix_np(words) >> np.uint64(11)).astype(np.float64)
    scale = np.repeat(_thresholds(scalers), np.diff(starts))
    keep = r < np.abs(g.astype(np.float64)) * scale
    return (keep.astype(np.int8) * ((g > 0).astype(np.int8) - (g < 0).astype(np.int8))).astype(np.int8)


try:  # the fused kernels; numpy's reference above when numba is missing
    import numba as _numba
except ImportError:  # pragma: no cover - numba is a dependency of the trainers
    _numba = None

if _numba is not None:
    _u64, _u32, _i8 = _numba.uint64, _numba.uint32, _numba.int8

    @_numba.njit(cache=True, nogil=True)
    def _pack_bits_nb(v, bits, out):  # little-endian bit stream; out zeroed, len(v) * bits / 8 bytes
        acc = _u64(0)
        filled = 0
        j = 0
        for i in range(v.size):
            acc |= _u64(v[i]) << _u64(filled)
            filled += bits
            while filled >= 8:
                out[j] = acc & _u64(0xFF)
                acc >>= _u64(8)
                filled -= 8
                j += 1
        if filled > 0 and j < out.size:
            out[j] = acc & _u64(0xFF)

    @_numba.njit(cache=True, nogil=True)
    def _unpack_bits_nb(packed, bits, n, out):
        mask = (_u64(1) << _u64(bits)) - _u64(1)
        acc = _u64(0)
        have = 0
        j = 0
        for i in range(n):
            while have < bits:
                acc |= _u64(packed[j]) << _u64(have)
                have += 8
                j += 1
            out[i] = acc & mask
            acc >>= _u64(bits)
            have -= bits

    @_numba.njit(cache=True, nogil=True)
    def _codes_nb(g, scale, key, first, out):  # pragma: no cover - compiled
        # element i draws word first + i + 1; range(g.size) keeps i >= 0, so the loop vectorizes
        for i in range(g.size):
            z = _u64(key) + (_u64(first) + _u64(i) + _u64(1)) * _u64(GOLDEN)
            z = (z ^ (z >> _u64(30))) * _u64(_M1)
            z = (z ^ (z >> _u64(27))) * _u64(_M2)
            z = z ^ (z >> _u64(31))
            x = g[i]
            keep = _numba.float64(z >> _u64(11)) < abs(_numba.float64(x)) * scale
            out[i] = _i8(keep) * (_i8(x > 0) - _i8(x < 0))

    @_numba.njit(cache=True, nogil=True)
    def _encode_codes_nb(g, starts, scales, key, counter, out):  # pragma: no cover - compiled
        for k in range(scales.size):
            lo, hi = starts[k], starts[k + 1]
            _codes_nb(g[lo:hi], scales[k], key, _u64(counter) + _u64(lo), out[lo:hi])

    @_numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
    def _moments_nb(g):  # pragma: no cover - compiled
        # (max |g|, population std of g) with float64 accumulators: the mean first, then the spread;
        # reassociated (vectorized) sums: the summation order differs from torch's, not the precision.
        # max |g| as the largest float32 bit pattern with the sign bit cleared (same order for
        # non-NaN floats; an integer max vectorizes, a float max with NaN rules does not)
        bits = g.view(np.uint32)
        top = _u32(0)
        total = 0.0
        for i in range(g.size):
            total += _numba.float64(g[i])
            b = bits[i] & _u32(0x7FFFFFFF)
            top = b if b > top else top
        mean = total / g.size
        sq = 0.0
        for i in range(g.size):
            d = _numba.float64(g[i]) - mean
            sq += d * d
        amax = np.array([top], dtype=np.uint32).view(np.float32)[0]
        return _numba.float64(amax), np.sqrt(sq / g.size)

    @_numba.njit(cache=True, nogil=True)
    def _pack_nb(codes, n, out):  # pragma: no cover - compiled
        full = n // 4
        for j in range(full):
            b = 4 * j
            out[j] = (_u32(codes[b] + 1) | (_u32(codes[b + 1] + 1) << 2) | (_u32(codes[b + 2] + 1) << 4)
                      | (_u32(codes[b + 3] + 1) << 6))
        for j in range(full, out.size):
            byte = _u32(0)
            for lane in range(4):
                i = 4 * j + lane
                byte |= _u32(codes[i] + 1 if i < n else 1) << (2 * lane)
            out[j] = byte

    @_numba.njit(cache=True, nogil=True)
    def _unpack_sum_nb(packed, rows, n, out):  # pragma: no cover - compiled
        # out[i] += sum over r of (2-bit code i of row r) - 1
        for r in range(rows):
            for i in range(n):
                out[i] += ((packed[r, i >> 2] >> ((i & 3) << 1)) & 3) - 1


def _check_flat(g: np.ndarray, starts: np.ndarray, scalers: np.ndarray) -> None:
    if g.dtype != np.float32 or g.ndim != 1:
        raise ValueError(f"g must be a 1-D float32 array, got {g.dtype} with {g.ndim} dims")
    if starts.ndim != 1 or len(starts) != len(scalers) + 1 or starts[0] != 0 or starts[-1] != g.size \
            or np.any(np.diff(starts) < 0):
        raise ValueError("starts must rise from 0 to g.size with one segment per scaler")
    if not np.all(np.isfinite(scalers)) or np.any(scalers < 0):
        raise ValueError("scalers must be finite and >= 0")


def encode_codes(g: np.ndarray, starts: np.ndarray, scalers: np.ndarray, key: int, counter: int,
                 out: np.ndarray | None = None, *, fused: bool = True) -> np.ndarray:
    """Stochastic ternary codes t in {-1, 0, 1} of a flat float32 gradient, in one pass.

    g: 1-D float32; segment k = g[starts[k]:starts[k+1]] (one tensor) uses the shared scaler
    scalers[k] (same unit as g). key, counter: the random stream (element i draws word counter+i+1;
    advance counter by g.size per call). out: int8 or int16 array of g.size (e.g. the integer
    allreduce buffer), written in place; a new int8 array when None. fused=False runs the numpy
    reference (same codes bit for bit).
    """
    starts = np.asarray(starts, dtype=np.int64)
    scalers = np.asarray(scalers, dtype=np.float64)
    _check_flat(g, starts, scalers)
    if out is None:
        out = np.empty(g.size, dtype=np.int8)
    if out.dtype not in (np.int8, np.int16, np.int32) or out.shape != (g.size,):
        raise ValueError(f"out must be a 1-D int8/int16/int32 array of {g.size}, got {out.dtype} {out.shape}")
    if fused and _numba is not None:
        _encode_codes_nb(g, starts, _thresholds(scalers), np.uint64(key), np.uint64(counter), out)
    else:
        out[:] = _codes_np(g, starts, scalers, key, counter)
    return out


def encode_packed(g: np.ndarray, starts: np.ndarray, scalers: np.ndarray, key: int, counter: int,
                  out: np.ndarray | None = None, scratch: np.ndarray | None = None, *,
                  fused: bool = True) -> np.ndarray:
    """encode_codes packed 2 bits per value (pack2bit's wire format): the same codes.

    out: uint8 array of at least ceil(g.size / 4) bytes (bytes past the data hold padding code 1, value 0).
    scratch: int8 array of g.size for the codes before packing (allocated when None; keep one per
    exchange to avoid the allocation).
    """
    starts = np.asarray(starts, dtype=np.int64)
    scalers = np.asarray(scalers, dtype=np.float64)
    _check_flat(g, starts, scalers)
    if out is None:
        out = np.empty(packed_nbytes(g.size), dtype=np.uint8)
    if out.dtype != np.uint8 or out.ndim != 1 or out.size < packed_nbytes(g.size):
        raise ValueError(f"out must be a 1-D uint8 array of >= {packed_nbytes(g.size)} bytes")
    if fused and _numba is not None:
        codes = encode_codes(g, starts, scalers, key, counter,
                             scratch if scratch is not None else np.empty(g.size, dtype=np.int8))
        _pack_nb(codes, g.size, out)
    else:
        codes = torch.from_numpy(_codes_np(g, starts, scalers, key, counter))
        out[:packed_nbytes(g.size)] = pack2bit(codes).numpy()
        out[packed_nbytes(g.size):] = 0x55
    return out


def unpack_sum(packed: np.ndarray, n: int, out: np.ndarray) -> np.ndarray:
    """Add the ternary values of every row of a (rows, >= ceil(n/4)) uint8 array of 2-bit codes into out
    (int16 or wider, n elements), in place: the integer sum over rows of each element's value."""
    if packed.dtype != np.uint8 or packed.ndim != 2 or packed.shape[1] < packed_nbytes(n):
        raise ValueError(f"packed must be (rows, >= {packed_nbytes(n)}) uint8")
    if out.shape != (n,) or out.dtype not in (np.int16, np.int32, np.int64):
        raise ValueError(f"out must be a 1-D int16/int32/int64 array of {n}")
    if _numba is not None:
        _unpack_sum_nb(packed, packed.shape[0], n, out)
    else:
        for row in packed:
            out += unpack2bit(torch.from_numpy(np.ascontiguousarray(row[:packed_nbytes(n)])), n).numpy()
    return out


def level_dtype(workers: int) -> np.dtype:
    """Smallest signed integer type holding -W..W: int8 up to 127 workers, int16 up to 32767, then int32."""
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    if workers > np.iinfo(np.int32).max:
        raise ValueError(f"{workers} workers do not fit a 32-bit level sum")
    return np.dtype(f"int{levels_lane_bits(int(workers), False)}")  # perfmodel.wire's native lanes


def pack_bits(values: np.ndarray, bits: int, *, fused: bool = True) -> np.ndarray:
    """Pack non-negative integers < 2**bits at ``bits`` bits each, little-endian bit order (value i
    takes bits [i*bits, (i+1)*bits) of the byte stream); len(values) * bits must be a multiple of 8.
    fused=False runs the numpy bit-plane reference (same bytes); the numba kernel makes one pass."""
    v = np.asarray(values)
    if not 1 <= bits <= 32 or (v.size * bits) % 8:
        raise ValueError(f"bits must be 1..32 and len(values) * bits a multiple of 8, got {bits}, {v.size}")
    if v.size and (v.min() < 0 or int(v.max()) >= 1 << bits):
        raise ValueError(f"values must lie in 0..{(1 << bits) - 1}")
    if fused and _numba is not None and bits <= 24:
        out = np.zeros(v.size * bits // 8, dtype=np.uint8)
        _pack_bits_nb(np.ascontiguousarray(v, dtype=np.int64), bits, out)
        return out
    planes = (v.astype(np.uint32)[:, None] >> np.arange(bits, dtype=np.uint32)) & np.uint32(1)
    return np.packbits(planes.astype(np.uint8).reshape(-1), bitorder="little")


def ps_shard_sum(recv: np.ndarray, shard: int, workers: int) -> np.ndarray:
    """The sharded parameter server's sum on one rank (trainers.exchanges.ps): the ``workers``
    2-bit packed shards in the rows of recv ((workers, shard / 4) uint8) summed, offset by workers to
    0..2W and packed at level_bits(workers) bits (uint8, shard * bits / 8 bytes)."""
    mine = np.zeros(shard, dtype=np.int32)
    unpack_sum(recv, shard, mine)
    return pack_bits(mine + workers, level_bits(workers))


def ps_unpack_sums(gathered: np.ndarray, shard: int, workers: int, out: np.ndarray) -> np.ndarray:
    """The sharded parameter server's last step on every rank: each rank's packed sums (the rows of
    gathered, ps_shard_sum's output) unpacked into out (int32, workers * shard), less the offset."""
    bits = level_bits(workers)
    for r in range(workers):
        out[r * shard:(r + 1) * shard] = unpack_bits(gathered[r], bits, shard) - workers
    return out


def unpack_bits(packed: np.ndarray, bits: int, n: int, *, fused: bool = True) -> np.ndarray:
    """Inverse of pack_bits: the first n values (int32). fused=False runs the numpy reference."""
    if packed.dtype != np.uint8 or packed.size * 8 < n * bits:
        raise ValueError(f"packed must be uint8 with >= {n * bits} bits")
    if fused and _numba is not None and bits <= 24:
        out = np.empty(n, dtype=np.int32)
        _unpack_bits_nb(np.ascontiguousarray(packed), bits, n, out)
        return out
    planes = np.unpackbits(packed, count=n * bits, bitorder="little").reshape(n, bits).astype(np.int32)
    return planes @ (np.int32(1) << np.arange(bits, dtype=np.int32))
