"""Test loss and accuracy of an asynchronous run's central parameters."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from trainers.config import AsyncConfig
from trainers.asynchronous.data_streams import crop_size
from trainers.asynchronous.flat_model import FlatModel, NullModel
from trainers.batching import batches, crop_flip
from trainers.data import Dataset

__all__ = ["evaluate"]


@torch.no_grad()
def evaluate(fm: FlatModel | NullModel, params: Tensor, test: Dataset | None, cfg: AsyncConfig,
             train: Dataset | None = None, batch: int = 500, calibration_batches: int = 20) -> dict[str, float]:
    """Test loss and accuracy (fraction) of ``params``.

    Models with batch norm first re-estimate the running statistics at ``params`` from
    ``calibration_batches`` fixed training batches (cumulative average, train mode), since the
    asynchronous workers' running statistics are not part of the central parameters.
    """
    if test is None or isinstance(fm, NullModel):
        return {"test_loss": math.nan, "test_acc": math.nan}
    fm.load(params)
    model = fm.model
    crop = crop_size(cfg, test)
    if fm.has_batchnorm and train is not None:
        bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        saved = [m.momentum for m in bns]
        for m in bns:
            m.reset_running_stats()
            m.momentum = None
        model.train()
        idx = np.random.default_rng([cfg.seed, 11]).permutation(len(train))[:batch * calibration_batches]
        for x, _ in batches(train, idx, batch):
            model((crop_flip(x, crop) if crop else x).to(fm.device))
        for m, mom in zip(bns, saved):
            m.momentum = mom
    model.eval()
    n = len(test) if cfg.eval_limit is None else min(cfg.eval_limit, len(test))
    total_loss, correct = 0.0, 0
    for x, y in batches(test, np.arange(n), batch):
        out = model((crop_flip(x, crop) if crop else x).to(fm.device))
        y = y.to(fm.device)
        total_loss += float(torch.nn.functional.cross_entropy(out, y, reduction="sum"))
        correct += int((out.argmax(1) == y).sum())
    model.train()
    return {"test_loss": total_loss / n, "test_acc": correct / n}


# --------------------------------------------------------------------------- command line
