"""The local optimizers of the synchronous trainers (``trainers run --optimizer``), by name.

Each entry builds a torch optimizer from the parameters and a trainers.config.SyncConfig (lr, momentum,
nesterov, weight_decay). This table is the one list of the names: ``trainers run`` reads its keys
without importing torch (the builders import it when called).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["OPTIMIZERS"]


def _sgd(params: list[Any], cfg: Any) -> Any:
    import torch

    return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay,
                           nesterov=cfg.nesterov)


def _adam(params: list[Any], cfg: Any) -> Any:
    import torch

    return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)


OPTIMIZERS: dict[str, Callable[[list[Any], Any], Any]] = {"sgd": _sgd, "adam": _adam}
"""Name -> builder(params, cfg) -> torch.optim.Optimizer."""
