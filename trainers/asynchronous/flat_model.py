"""The model of an asynchronous run as one flat float32 vector (:class:`FlatModel`, or
:class:`NullModel` for the staleness-only mode), and the rule objects a run builds from its
configuration: the master rule, a worker's rescaling and the learning-rate schedule.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from trainers.config import NO_MODEL, AsyncConfig
from trainers.asynchronous.gem import make_worker
from trainers.asynchronous.master_rule import MasterRule
from trainers.asynchronous.masters import hyper_names, make_rule
from trainers.errors import TrainerError
from trainers.schedules import LRSchedule

__all__ = ["FlatModel", "NullModel", "build_model_for", "build_rule", "build_worker_rule", "build_schedule"]


def build_model_for(cfg: AsyncConfig) -> torch.nn.Module:
    """The configuration's network with the run's initial weights (torch.manual_seed(seed))."""
    from trainers.models import build_model

    torch.manual_seed(cfg.seed)
    return build_model(cfg.model)


class FlatModel:
    """A model whose parameters and gradients are views of two flat float32 vectors.

    ``gradient(params, x, y, seed)`` copies ``params`` into the model (one copy), runs forward and
    backward in train mode under ``torch.manual_seed(seed)`` and returns (flat gradient, loss).
    The returned gradient is the live buffer: the next call overwrites it. Memory beyond the
    model is two vectors, so a simulator holds only its workers' flat parameters. On a GPU
    (``device``) the model and its two vectors live there; ``params`` come from and the gradient goes
    back to the CPU (one copy each way per gradient), where the master rules keep their vectors.
    """

    def __init__(self, model: torch.nn.Module, device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)
        self.model = model.to(self.device)
        params = [p for p in model.parameters() if p.requires_grad]
        self.segments = tuple((name, p.numel()) for name, p in model.named_parameters() if p.requires_grad)
        self.numel = sum(p.numel() for p in params)
        self.flat = torch.empty(self.numel, dtype=torch.float32, device=self.device)
        self.flat_grad = torch.zeros(self.numel, dtype=torch.float32, device=self.device)
        offset = 0
        for p in params:
            n = p.numel()
            self.flat[offset:offset + n].copy_(p.detach().reshape(-1))
            p.data = self.flat[offset:offset + n].view_as(p)
            p.grad = self.flat_grad[offset:offset + n].view_as(p)
            offset += n
        self.initial = self.flat.cpu().clone()
        self.has_batchnorm = any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())

    @classmethod
    def build(cls, cfg: AsyncConfig, device: torch.device | str = "cpu") -> FlatModel | NullModel:
        """FlatModel of cfg.model with the run's initial weights on ``device``, or NullModel for model "none"."""
        return NullModel() if cfg.model == NO_MODEL else cls(build_model_for(cfg), device)

    def load(self, params: Tensor) -> None:
        """Copy a flat parameter vector into the model."""
        self.flat.copy_(params)

    def gradient(self, params: Tensor, x: Tensor, y: Tensor, seed: int) -> tuple[Tensor, float]:
        """Mean cross-entropy gradient on (x, y) at ``params`` (flat float32) and the loss."""
        self.flat.copy_(params)
        self.flat_grad.zero_()
        self.model.train()
        torch.manual_seed(seed)
        loss = torch.nn.functional.cross_entropy(self.model(x.to(self.device)), y.to(self.device))
        loss.backward()
        grad = self.flat_grad if self.device.type == "cpu" else self.flat_grad.cpu()
        return grad, float(loss.detach())


class NullModel:
    """The staleness-only stand-in: one zero parameter, zero gradients, loss 0, no cost."""

    numel = 1
    segments = (("none", 1),)
    has_batchnorm = False

    def __init__(self) -> None:
        self.initial = torch.zeros(1)
        self.flat_grad = torch.zeros(1)

    def load(self, params: Tensor) -> None:
        pass

    def gradient(self, params: Tensor, x: Any, y: Any, seed: int) -> tuple[Tensor, float]:
        return self.flat_grad, 0.0


def build_rule(cfg: AsyncConfig, params: Tensor, segments: tuple | None = None) -> MasterRule:
    """The master rule of cfg.algo on ``params`` (copied), with every configuration field the
    rule's Hyper dataclass has (lr, momentum, nesterov, weight_decay, n, gap, modulate)."""
    spec = cfg.spec
    allowed = hyper_names(spec.master)
    values = {"lr": cfg.lr, "momentum": cfg.momentum, "nesterov": cfg.nesterov,
              "weight_decay": cfg.weight_decay, "n": cfg.n, "gap": cfg.gap, "modulate": cfg.modulate}
    hyper = {k: v for k, v in values.items() if k in allowed}
    try:
        return make_rule(spec.master, params, cfg.workers, segments=segments if cfg.gap == "layer" else None, **hyper)
    except ValueError as exc:
        raise TrainerError(str(exc)) from None


def build_worker_rule(cfg: AsyncConfig) -> Any:
    """One worker's rescaling state (GEMWorker, DownpourWorker, ...) or None for master-side rules."""
    name = cfg.spec.worker
    if name is None:
        return None
    if name == "gem":
        return make_worker("gem", code=cfg.gem_code, momentum=cfg.momentum, kappa=cfg.kappa)
    return make_worker(name)


def build_schedule(cfg: AsyncConfig) -> LRSchedule:
    """Warm-up from lr/N over lr_warmup_epochs, then x lr_gamma at each of lr_milestones."""
    return LRSchedule(base_lr=cfg.lr, n_workers=cfg.workers, warmup_epochs=cfg.lr_warmup_epochs,
                      milestones=cfg.lr_milestones, gamma=cfg.lr_gamma)
