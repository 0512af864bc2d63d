"""TernGrad's codec on a GPU, charged from its memory traffic when its rates are not measured.

The codec's kernels are element-wise: each element's few operations take far less time than moving
its bytes, so each phase runs at the GPU's memory bandwidth B times an achieved efficiency eta:

    rate = eta x B / bytes per element                                 elements/s

Bytes read and written per ternarized element, per phase, for fused kernels doing what the trainer's
codec does (trainers/sync/terngrad.py: the scalers, ``encode_codes``/``encode_packed``, the
integer sum, ``_decode``'s multiply and in-place divide); a counter-based random stream reads nothing:
    encode     the scaler's max reads the fp32 gradient (4), ternarizing reads it again (4) and writes
               the code: 1 byte (levels: int8 levels) or 2 bits (ps, allgather: packed)   9 | 8.25
    decode     per received copy: read its 2-bit code (0.25), read and write the int32 sum (8): 8.25;
               levels receives the sum itself from the allreduce: 0 (the conversion reads it)
    convert    read the sum (1 byte for levels' int8, 4 for an int32 sum), write the fp32 gradient (4),
               divide it by p in place (read and write 8)                                13 | 16
eta: the share of the memory bandwidth a copy kernel reaches, MEMORY_EFFICIENCY.

A floor, not the cost of every implementation: on an H200 (docs/compute.md) a copy reached 0.84 of B, but
torch.compile's codec kernels took 1.3-4.2x these charges (their in-kernel random draws are bound by
arithmetic) and eager PyTorch's 1.2-13x.
"""

from __future__ import annotations

import math

from .specs import TERNGRAD_ALLGATHER, TERNGRAD_LEVELS, TERNGRAD_PS

# A memory-copy kernel reaches 785 GB/s on a V100 SXM2 (900 GB/s peak: 0.872) and 1536 GB/s on an A100
# 80GB (2039 GB/s: 0.753), github.com/AnjaliSandip/FastIceFlo output/EffectiveMemoryThroughput.md
# (scripts/memcopy.cu); the mean of the two, 0.81, is used for every GPU.
MEMORY_EFFICIENCY = 0.81
ENCODE_BYTES = {TERNGRAD_LEVELS: 9.0, TERNGRAD_PS: 8.25, TERNGRAD_ALLGATHER: 8.25}
DECODE_BYTES = {TERNGRAD_LEVELS: 0.0, TERNGRAD_PS: 8.25, TERNGRAD_ALLGATHER: 8.25}
CONVERT_BYTES = {TERNGRAD_LEVELS: 13.0, TERNGRAD_PS: 16.0, TERNGRAD_ALLGATHER: 16.0}


def memory_rate(memory_Bps: float, bytes_per_element: float, efficiency: float = MEMORY_EFFICIENCY) -> float:
    """Elements per second of a phase moving ``bytes_per_element`` bytes at efficiency x memory_Bps
    (bytes/s); inf when it moves none."""
    if bytes_per_element == 0:
        return math.inf
    return efficiency * memory_Bps / bytes_per_element


def codec_rates(memory_Bps: float, exchange: str) -> tuple[float, float, float]:
    """(encode, decode per copy, convert) rates in elements/s of the TernGrad codec for ``exchange``
    (levels, ps, allgather) on a GPU of memory bandwidth ``memory_Bps`` bytes/s."""
    return (memory_rate(memory_Bps, ENCODE_BYTES[exchange]), memory_rate(memory_Bps, DECODE_BYTES[exchange]),
            memory_rate(memory_Bps, CONVERT_BYTES[exchange]))
