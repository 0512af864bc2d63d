"""A learnable synthetic dataset shaped like a model's input, deterministic by its seed.

Each class has a fixed random template; an image is 0.6 * template + 0.4 * uniform noise, stored as
uint8 (a trainers.data.Dataset), so a network can learn it and the normalised pixels have mean 0 and std 1.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

from trainers.data import Dataset, DatasetInfo

__all__ = ["synthetic"]

# pixel = 0.6 * template + 0.4 * noise, both U(0, 1): mean 0.5, std sqrt((0.36 + 0.16) / 12).
_SYN_WEIGHT = 0.6
_SYN_MEAN = 0.5
_SYN_STD = math.sqrt((_SYN_WEIGHT ** 2 + (1 - _SYN_WEIGHT) ** 2) / 12.0)


def synthetic(model: str | Sequence[int], n: int = 1024, num_classes: int | None = None,
              seed: int = 0, train: bool = True) -> Dataset:
    """A learnable synthetic dataset shaped like `model`'s input, deterministic by `seed`.

    model: a registered model name (shape and class count from trainers.models) or a
    (C, H, W) shape. Each class has a fixed random template (shared by the train and test
    splits of one seed); an image is 0.6 * template + 0.4 * uniform noise, stored as uint8, so
    a network can learn it and the normalised pixels have mean 0 and std 1.
    """
    if isinstance(model, str):
        from trainers.models import MODELS, input_shape  # lazy: keeps the import graph flat
        shape = input_shape(model)
        if num_classes is None:
            num_classes = MODELS[model].num_classes
    else:
        shape = tuple(int(v) for v in model)
        if len(shape) != 3 or min(shape) < 1:
            raise ValueError(f"model must be a model name or a (C, H, W) shape, got {model!r}")
        num_classes = 10 if num_classes is None else num_classes
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"num_classes must be an int >= 2, got {num_classes!r}")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    rng = np.random.default_rng([seed, 1 if train else 2])
    try:
        labels = rng.integers(0, num_classes, size=n)
        noise = rng.random((n, *shape), dtype=np.float32)
    except (MemoryError, ValueError) as exc:  # more than this machine holds, or than numpy can index
        raise ValueError(f"synthetic dataset of n={n} images of {'x'.join(map(str, shape))}: its "
                         f"{n * math.prod(shape) * 4:.3g} bytes of pixels cannot be made here "
                         f"({' '.join(str(exc).split())})") from None
    pixels = (1 - _SYN_WEIGHT) * noise
    for k in np.unique(labels):  # class k's template depends on (seed, k) only
        template = np.random.default_rng([seed, 0, int(k)]).random(shape, dtype=np.float32)
        pixels[labels == k] += _SYN_WEIGHT * template
    images = np.rint(pixels * 255.0).astype(np.uint8)
    info = DatasetInfo(name="synthetic", split="train" if train else "test", n=n, official_n=n,
                       subset=False, num_classes=num_classes, shape=shape,
                       path=f"synthetic(seed={seed})", checksum="synthetic",
                       classes=tuple(str(i) for i in range(num_classes)))
    c = shape[0]
    return Dataset(torch.from_numpy(images), torch.from_numpy(labels.astype(np.int64)),
                   (_SYN_MEAN,) * c, (_SYN_STD,) * c, info)
