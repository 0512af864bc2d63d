"""Deterministic per-rank inputs shared by the MPI scripts and the pytest side that checks them.

The pytest process regenerates every rank's inputs from the same seeds and computes the expected
results independently of the MPI code path.
"""

from __future__ import annotations

import numpy as np

BUCKET_SHAPES = [(3, 4), (17,), (5, 5, 2), (1,), (200,), (7, 3)]
BUCKET_BYTES = 64 * 4  # 64 float32 per bucket: forces several buckets and one oversized tensor
VECTOR_LEN = 1000
TERNGRAD_SHAPES = [("conv1.weight", (8, 3, 3, 3)), ("conv1.bias", (8,)), ("fc1.weight", (33, 17)),
                   ("fc1.bias", (33,)), ("fc2.weight", (10, 33)), ("fc2.bias", (10,))]
TERNGRAD_MIN_ELEMS = 9  # conv1.bias (8) stays float32, fc1.bias (33) is ternarized


def _rng(kind: int, rank: int) -> np.random.Generator:
    return np.random.default_rng([kind, rank])


def bucket_tensors(rank: int) -> list[np.ndarray]:
    """float32 arrays of BUCKET_SHAPES, magnitudes spread over 1e-3..1e3."""
    rng = _rng(1, rank)
    return [(rng.standard_normal(s) * 10.0 ** rng.uniform(-3, 3, s)).astype(np.float32) for s in BUCKET_SHAPES]


def vector(rank: int) -> np.ndarray:
    """float32 vector for the Iallreduce and bf16 checks."""
    return (_rng(2, rank).standard_normal(VECTOR_LEN) * 3.0).astype(np.float32)


def small_integers(rank: int) -> np.ndarray:
    """float32 integers in 0..9+rank: exactly representable in bf16, and so are their sums over <= 8 ranks."""
    return ((np.arange(VECTOR_LEN) % 10) + rank).astype(np.float32)


def terngrad_grads(rank: int) -> list[tuple[str, np.ndarray]]:
    """Named float32 gradients; a few outliers so that clipping at 2.5 std matters."""
    rng = _rng(3, rank)
    out = []
    for name, shape in TERNGRAD_SHAPES:
        g = rng.standard_normal(shape).astype(np.float32) * (1.0 + rank)
        g.reshape(-1)[0] *= 20.0
        out.append((name, g))
    return out


def terngrad_seed(rank: int) -> int:
    """Seed of the rank's torch.Generator for ternarization."""
    return 1000 + rank
