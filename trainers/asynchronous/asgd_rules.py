"""The plain ASGD family of master rules: ASGD, NAG-ASGD (Barkai Alg. 2), Staleness-Aware (Alg. 3 and
5), Zhang's n-softsync (eq. 2-3) and Gap-Aware (Alg. 4)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from trainers.asynchronous.master_rule import MasterRule
from trainers.asynchronous.rule_hypers import BaseHyper, GAHyper, MomentumHyper, SAHyper, Segments, SoftSyncHyper
from trainers.errors import TrainerError

__all__ = ["ASGD", "NAGASGD", "StalenessAware", "SoftSync", "GapAware"]

def _momentum_direction(v: Tensor, g: Tensor, gamma: float, nesterov: bool) -> Tensor:
    """v <- gamma*v + g (in place); return the step direction: g + gamma*v (NAG) or v."""
    v.mul_(gamma).add_(g)
    return g.add(v, alpha=gamma) if nesterov else v


class ASGD(MasterRule):
    """ASGD without momentum: theta <- theta - eta*g."""

    name = "asgd"
    Hyper = BaseHyper

    def _update(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> bool:
        self._theta.add_(g, alpha=-self._lr)
        return True


class NAGASGD(MasterRule):
    """NAG-ASGD: v <- gamma*v + g; theta <- theta - eta*(g + gamma*v) (nesterov=False: eta*v)."""

    name = "nag-asgd"
    Hyper = MomentumHyper

    def __init__(self, params: Tensor, n_workers: int, hyper: MomentumHyper, segments: Segments | None = None) -> None:
        super().__init__(params, n_workers, hyper, segments)
        self._v = torch.zeros_like(self._theta)

    def _update(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> bool:
        h = self.hyper
        self._theta.add_(_momentum_direction(self._v, g, h.momentum, h.nesterov), alpha=-self._lr)
        return True


class StalenessAware(NAGASGD):
    """SA with delay d = tau + 1. variant "step" (Alg. 3): v <- gamma*v + g, step (eta/d)*dir;
    variant "gradient" (Alg. 5): v <- gamma*v + g/d, step eta*dir. dir is NAG's g' + gamma*v."""

    name = "sa"
    Hyper = SAHyper

    def _update(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> bool:
        h = self.hyper
        d = tau + 1
        if h.variant == "step":
            self._theta.add_(_momentum_direction(self._v, g, h.momentum, h.nesterov), alpha=-self._lr / d)
        else:
            self._theta.add_(_momentum_direction(self._v, g / d, h.momentum, h.nesterov), alpha=-self._lr)
        return True


class SoftSync(MasterRule):
    """Zhang et al.'s n-softsync (eq. 2-3), c = floor(N / n) gradients per weight update.

    Each arriving gradient is scaled by alpha(tau)/eta0 (1/tau for tau > 0, else 1; 1 when
    modulate=False) and buffered; the worker gets the current parameters at once. When c are in:
    u = (1/c) * sum, v <- mu*v + u, theta <- theta - eta*v (v = u when momentum = 0), clock + 1.
    tau is measured when the gradient arrives; the clock does not move while the buffer fills, so
    it equals the staleness at the update.
    """

    name = "softsync"
    Hyper = SoftSyncHyper

    def __init__(self, params: Tensor, n_workers: int, hyper: SoftSyncHyper, segments: Segments | None = None) -> None:
        n = n_workers if hyper.n is None else hyper.n
        if n > n_workers:
            raise TrainerError(f"n must be in 1..n_workers={n_workers}, got {n}")
        super().__init__(params, n_workers, hyper, segments)
        self.n = n
        self.c = n_workers // n
        self._buffer = torch.zeros_like(self._theta)
        self._buffered = 0
        self._v = torch.zeros_like(self._theta)

    def _update(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> bool:
        scale = 1.0 / tau if (self.hyper.modulate and tau > 0) else 1.0
        self._buffer.add_(g, alpha=scale)
        self._buffered += 1
        if self._buffered < self.c:
            return False
        u = self._buffer.div_(self.c)
        self._v.mul_(self.hyper.momentum).add_(u)
        self._theta.add_(self._v, alpha=-self._lr)
        self._buffer.zero_()
        self._buffered = 0
        return True

    @property
    def stats(self) -> dict[str, Any]:
        out = super().stats
        out.update({"c": self.c, "buffered": self._buffered})
        return out


class GapAware(NAGASGD):
    """GA (Alg. 4, with NAG): u = gamma*v + g feeds C (Alg. 14); G from theta - theta_sent;
    v <- gamma*v + g/G; theta <- theta - eta*(g/G + gamma*v)."""

    name = "ga"
    Hyper = GAHyper
    uses_gap = True

    def __init__(self, params: Tensor, n_workers: int, hyper: GAHyper, segments: Segments | None = None) -> None:
        super().__init__(params, n_workers, hyper, segments)
        self._meter = self._make_meter(hyper)

    def _update(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> bool:
        h = self.hyper
        self._meter.observe(self._v.mul(h.momentum).add_(g), self._lr)
        gap = self._meter.gap(self._theta - stale.to(self._theta))
        self._theta.add_(_momentum_direction(self._v, g / gap, h.momentum, h.nesterov), alpha=-self._lr)
        return True
