"""Sharding, batching and augmentation of a dataset (trainers.data.Dataset) for data-parallel ranks.

Example::

    >>> idx = shard_indices(len(ds), rank=0, world=4, seed=1, epoch=0)
    >>> for x, y in batches(ds, idx, 64): ...   # x float32 normalised (B, 1, 28, 28), y int64
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import torch

from trainers.data import Dataset

__all__ = ["shard_indices", "batches", "crop_flip"]


def shard_indices(n: int, rank: int, world: int, seed: int, epoch: int) -> np.ndarray:
    """This rank's sample indices for one epoch: a permutation of range(n) seeded by
    (seed, epoch), cut into `world` equal shards of n // world (the remainder is dropped so
    that every rank runs the same number of steps). Returns int64 indices."""
    for arg, value in (("n", n), ("rank", rank), ("world", world), ("seed", seed),
                       ("epoch", epoch)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{arg} must be a non-negative int, got {value!r}")
    if world < 1:
        raise ValueError(f"world must be >= 1, got {world}")
    if not rank < world:
        raise ValueError(f"rank must be in 0..{world - 1}, got {rank}")
    if n < world:
        raise ValueError(f"n ({n}) must be >= world ({world}) so every rank gets a sample")
    per = n // world
    perm = np.random.default_rng([int(seed), int(epoch)]).permutation(n)
    return perm[rank * per:(rank + 1) * per].astype(np.int64)


def batches(dataset: Dataset, indices: Sequence[int] | np.ndarray | torch.Tensor,
            batch_size: int, drop_last: bool = False
            ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield (x float32 normalised (B, C, H, W), y int64 (B,)) over `indices` in order."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    idx = torch.as_tensor(np.asarray(indices), dtype=torch.int64)
    if idx.dim() != 1:
        raise ValueError(f"indices must be one-dimensional, got shape {tuple(idx.shape)}")
    stop = len(idx) - (len(idx) % batch_size if drop_last else 0)
    for start in range(0, stop, batch_size):
        yield dataset[idx[start:start + batch_size]]


def crop_flip(x: torch.Tensor, size: int, *, pad: int = 0,
              generator: torch.Generator | None = None, flip: bool = False) -> torch.Tensor:
    """Crop a batch (B, C, H, W) to size x size pixels: the centre without a generator, else a
    random window per image (after zero-padding by `pad` pixels), with a random horizontal
    flip per image when flip is True. E.g. CifarNet's 24x24 crops, ResNet's pad-4 crops."""
    if x.dim() != 4:
        raise ValueError(f"x must be (B, C, H, W), got shape {tuple(x.shape)}")
    if pad < 0:
        raise ValueError(f"pad must be >= 0, got {pad}")
    if pad:
        x = torch.nn.functional.pad(x, (pad, pad, pad, pad))
    b, c, h, w = x.shape
    if not 1 <= size <= min(h, w):
        raise ValueError(f"size must be in 1..{min(h, w)}, got {size}")
    if generator is None:
        top, left = (h - size) // 2, (w - size) // 2
        out = x[:, :, top:top + size, left:left + size]
        return out.flip(-1) if flip else out
    top = torch.randint(0, h - size + 1, (b,), generator=generator)
    left = torch.randint(0, w - size + 1, (b,), generator=generator)
    ar = torch.arange(size)
    rows = (top[:, None] + ar)[:, None, :, None]
    cols = (left[:, None] + ar)[:, None, None, :]
    out = x[torch.arange(b)[:, None, None, None], torch.arange(c)[None, :, None, None], rows, cols]
    if flip:
        mask = torch.rand(b, generator=generator) < 0.5
        out[mask] = out[mask].flip(-1)
    return out
