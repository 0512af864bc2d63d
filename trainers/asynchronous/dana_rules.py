"""The DANA family of master rules: DANA (Barkai Alg. 6), DANA-SA (Alg. 7) and DANA-GA (Alg. 8)."""

from __future__ import annotations

import torch
from torch import Tensor

from trainers.asynchronous.master_rule import MasterRule
from trainers.asynchronous.rule_hypers import DANAGAHyper, DANAHyper, Segments

__all__ = ["DANA", "DANAStalenessAware", "DANAGapAware"]

class DANA(MasterRule):
    """DANA (Alg. 6): v_i <- gamma*v_i + g'; theta <- theta - eta*v_i; worker i is sent the
    look-ahead theta - eta*gamma*sum_j v_j. Here g' = g (DANA), g/d (DANA-SA), g/G (DANA-GA)."""

    name = "dana"
    Hyper = DANAHyper

    def __init__(self, params: Tensor, n_workers: int, hyper: DANAHyper, segments: Segments | None = None) -> None:
        super().__init__(params, n_workers, hyper, segments)
        self._v = torch.zeros((n_workers, self._theta.numel()), dtype=self._theta.dtype, device=self._theta.device)
        self._vsum = torch.zeros_like(self._theta)

    def _penalized(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> Tensor:
        return g

    def _update(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> bool:
        gamma = self.hyper.momentum
        g = self._penalized(worker, g, tau, stale)
        v = self._v[worker]
        # sum_j v_j changes by v_new - v_old = (gamma - 1)*v_old + g
        self._vsum.add_(v, alpha=gamma - 1.0).add_(g)
        v.mul_(gamma).add_(g)
        self._theta.add_(v, alpha=-self._lr)
        return True

    def _outgoing(self, worker: int) -> Tensor:
        return self._theta.add(self._vsum, alpha=-self._lr * self.hyper.momentum)


class DANAStalenessAware(DANA):
    """DANA-SA (Alg. 7): g/d, d = tau + 1, into the worker's momentum."""

    name = "dana-sa"

    def _penalized(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> Tensor:
        return g / (tau + 1)


class DANAGapAware(DANA):
    """DANA-GA (Alg. 8): u = gamma*v_i + g feeds C; G from theta - (look-ahead sent to i); g/G."""

    name = "dana-ga"
    Hyper = DANAGAHyper
    uses_gap = True

    def __init__(self, params: Tensor, n_workers: int, hyper: DANAGAHyper, segments: Segments | None = None) -> None:
        super().__init__(params, n_workers, hyper, segments)
        self._meter = self._make_meter(hyper)

    def _penalized(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> Tensor:
        self._meter.observe(self._v[worker].mul(self.hyper.momentum).add_(g), self._lr)
        return g / self._meter.gap(self._theta - stale.to(self._theta))
