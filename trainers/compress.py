"""TernGrad (Wen et al. 2017): per-tensor scalers, stochastic ternarization, 2-bit packing.

No MPI here: this module turns float gradients into ternary tensors and back. The exchange over MPI
(scaler sharing with allreduce(max), allgather of packed bytes) lives in ``trainers.comm``.

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

SCALER_BYTES = 4
"""Bytes of one scaler on the wire (float32)."""

FP32_BYTES = 4
"""Bytes of one float32 gradient element on the wire."""

_SHIFTS = (0, 2, 4, 6)


def scaler(g: torch.Tensor, clip: float | None = 2.5) -> float:
    """Scaler s of one gradient tensor (same unit as g).

    ``clip=None``: s = max|g|. Otherwise s = clip * std(g), std the population standard deviation of the
    whole tensor with its mean removed; ternarizing with this s clips every |g_k| >= s to sign(g_k)*s.
    A constant tensor has std 0 and nothing to clip: then s = max|g| (the authors' code would return 0
    and zero the tensor's gradient). An empty or all-zero tensor gives 0.0.
    """
    if clip is not None and not (math.isfinite(clip) and clip > 0):
        raise ValueError(f"clip must be None or a finite number > 0, got {clip!r}")
    if g.numel() == 0:
        return 0.0
    flat = g.detach().reshape(-1).to(torch.float64)
    amax = float(flat.abs().max())
    if clip is None:
        return amax
    s = clip * float(flat.std(correction=0))
    return s if s > 0.0 else amax


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


def packed_nbytes(n: int) -> int:
    """Bytes of n ternary values packed 4 per byte (ceil(n / 4))."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return (n + 3) // 4


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
