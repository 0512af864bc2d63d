"""One asynchronous worker's deterministic streams: its batches (:class:`BatchStream`), its batch times
(:class:`DelaySchedule`, the gamma CVB model of perfmodel.stragglers) and the seed of its k-th gradient
(:func:`step_seed`), each a fixed function of (seed, worker, k) so that the simulator and the MPI
parameter server see the same data whatever order the workers run in. Times are seconds.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from perfmodel.stragglers import CVB
from trainers.config import NO_MODEL, AsyncConfig
from trainers.batching import crop_flip, shard_indices
from trainers.data import Dataset, load_dataset
from trainers.synthetic_data import synthetic
from trainers.errors import TrainerError

__all__ = ["step_seed", "load_data", "BatchStream", "DelaySchedule", "crop_size"]


def step_seed(seed: int, worker: int, k: int) -> int:
    """The torch seed of worker ``worker``'s k-th gradient (dropout, augmentation): a fixed
    function of (seed, worker, k), so it does not depend on the order in which workers run."""
    return ((int(seed) * 1_000_003 + int(worker)) * 1_000_003 + int(k)) % (2**63)


def load_data(cfg: AsyncConfig, *, test: bool = True) -> tuple[Dataset | None, Dataset | None]:
    """(train, test) datasets of the configuration (test None when ``test`` is False);
    (None, None) for model "none". Synthetic: synthetic_n training and synthetic_n // 4 test images."""
    if cfg.model == NO_MODEL:
        return None, None
    if cfg.dataset == "synthetic":
        train = synthetic(cfg.model, n=cfg.synthetic_n, seed=cfg.seed, train=True)
        held_out = synthetic(cfg.model, n=max(cfg.synthetic_n // 4, 1), seed=cfg.seed, train=False) if test else None
        return train, held_out
    train = load_dataset(cfg.dataset, cfg.data_root, train=True)
    return train, load_dataset(cfg.dataset, cfg.data_root, train=False) if test else None


class BatchStream:
    """Worker ``worker``'s endless, deterministic sequence of batches.

    data="shard": epoch e is ``shard_indices(n, worker, N, seed, e)`` cut into batches (the last
    one may be smaller). data="replicate": epoch e is worker's own permutation of all n images
    (numpy default_rng([seed, 7, worker, e])). ``next()`` returns the batch and advances;
    ``k`` is the number of batches handed out so far.
    """

    def __init__(self, dataset: Dataset, cfg: AsyncConfig, worker: int) -> None:
        self.dataset = dataset
        self.cfg = cfg
        self.worker = worker
        self.n = len(dataset)
        if cfg.data == "shard" and self.n < cfg.workers:
            raise TrainerError(f"the training set has {self.n} images, fewer than workers={cfg.workers}")
        per = self.n // cfg.workers if cfg.data == "shard" else self.n
        self.batches_per_epoch = -(-per // cfg.batch)
        self.k = 0
        self._epoch = -1
        self._indices = np.empty(0, dtype=np.int64)
        self._crop = crop_size(cfg, dataset)

    def _epoch_indices(self, epoch: int) -> np.ndarray:
        if self.cfg.data == "shard":
            return shard_indices(self.n, self.worker, self.cfg.workers, self.cfg.seed, epoch)
        return np.random.default_rng([self.cfg.seed, 7, self.worker, epoch]).permutation(self.n)

    def next(self) -> tuple[Tensor, Tensor]:
        """The next batch (x float32 (B, C, H, W), y int64 (B,)), augmented if configured."""
        epoch, j = divmod(self.k, self.batches_per_epoch)
        if epoch != self._epoch:
            self._indices = self._epoch_indices(epoch)
            self._epoch = epoch
        idx = torch.from_numpy(self._indices[j * self.cfg.batch:(j + 1) * self.cfg.batch])
        x, y = self.dataset[idx]
        if self._crop is not None or self.cfg.augment:
            gen = None
            if self.cfg.augment:
                gen = torch.Generator().manual_seed(step_seed(self.cfg.seed, self.worker, self.k))
            size = self._crop if self._crop is not None else x.shape[-1]
            pad = 4 if (self.cfg.augment and self._crop is None) else 0
            x = crop_flip(x, size, pad=pad, generator=gen, flip=self.cfg.augment)
        self.k += 1
        return x, y


def crop_size(cfg: AsyncConfig, dataset: Dataset) -> int | None:
    """Crop to the model's input size when the images are larger (CifarNet's 24x24)."""
    if cfg.model == NO_MODEL:
        return None
    from trainers.models import input_shape

    want = input_shape(cfg.model)[-1]
    return want if dataset.images.shape[-1] > want else None


class DelaySchedule:
    """Per-batch execution times of N workers from the gamma CVB model, deterministic by seed.

    One numpy Generator (default_rng([seed, 0xDE1A])) draws the machine means once
    (CVB.machine_means) and then the task times in chunks of ``chunk`` rows of N
    (CVB.task_times); ``time(worker, k)`` is row k, column worker, so a worker's k-th batch time
    does not depend on the order in which workers run. delays="none": every time is delay_mean.
    """

    def __init__(self, cfg: AsyncConfig, chunk: int = 1024) -> None:
        self.workers = cfg.workers
        self.mean = float(cfg.delay_mean)
        self.kind = cfg.delays
        self.chunk = int(chunk)
        self.model = None if cfg.delays == "none" else CVB.named(cfg.delays, self.mean)
        self._rng = np.random.default_rng([cfg.seed, 0xDE1A])
        self.means = (np.full(self.workers, self.mean) if self.model is None
                      else self.model.machine_means(self.workers, self._rng))
        self._chunks: list[np.ndarray] = []

    def _ensure(self, rows: int) -> None:
        while len(self._chunks) * self.chunk < rows:
            if self.model is None:
                block = np.full((self.chunk, self.workers), self.mean)
            else:
                block = self.model.task_times(self.means, self._rng, size=self.chunk)
            self._chunks.append(np.ascontiguousarray(block, dtype=np.float64))

    def time(self, worker: int, k: int) -> float:
        """Seconds of worker's k-th batch (k >= 0)."""
        self._ensure(k + 1)
        return float(self._chunks[k // self.chunk][k % self.chunk, worker])

    def rows(self, stop: int) -> np.ndarray:
        """Rows 0..stop-1 as a (stop, N) array (row k: every worker's k-th batch time)."""
        self._ensure(stop)
        return np.concatenate(self._chunks)[:stop] if stop else np.empty((0, self.workers))
