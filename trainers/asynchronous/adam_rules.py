"""The Adam family of master rules: Adam on the master (Barkai Alg. 9), Adam-SA (Alg. 10) and Adam-GA
(Alg. 11)."""

from __future__ import annotations

import torch
from torch import Tensor

from trainers.asynchronous.master_rule import MasterRule
from trainers.asynchronous.rule_hypers import AdamGAHyper, AdamHyper, Segments

__all__ = ["Adam", "AdamStalenessAware", "AdamGapAware"]

class Adam(MasterRule):
    """Adam on the master (Alg. 9): m <- b1*m + (1-b1)*g'; s <- b2*s + (1-b2)*g^2;
    theta <- theta - eta * (m/(1-b1^k)) / (sqrt(s/(1-b2^k)) + eps). g' = g, g/d or g/G."""

    name = "adam"
    Hyper = AdamHyper

    def __init__(self, params: Tensor, n_workers: int, hyper: AdamHyper, segments: Segments | None = None) -> None:
        super().__init__(params, n_workers, hyper, segments)
        self._m = torch.zeros_like(self._theta)
        self._s = torch.zeros_like(self._theta)
        self._k = 0

    def _first_moment_input(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> Tensor:
        return g

    def _update(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> bool:
        b1, b2 = self.hyper.betas
        self._k += 1
        self._s.mul_(b2).addcmul_(g, g, value=1.0 - b2)
        g1 = self._first_moment_input(worker, g, tau, stale)
        self._m.mul_(b1).add_(g1, alpha=1.0 - b1)
        self._theta.sub_(self._direction(self._m), alpha=self._lr)
        return True

    def _direction(self, m: Tensor) -> Tensor:
        b1, b2 = self.hyper.betas
        m_hat = m / (1.0 - b1**self._k)
        s_hat = self._s / (1.0 - b2**self._k)
        return m_hat / (s_hat.sqrt() + self.hyper.eps)


class AdamStalenessAware(Adam):
    """Adam-SA (Alg. 10): g/d, d = tau + 1, enters the first moment only."""

    name = "adam-sa"

    def _first_moment_input(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> Tensor:
        return g / (tau + 1)


class AdamGapAware(Adam):
    """Adam-GA (Alg. 11): g/G enters the first moment only.

    The paper does not say what Alg. 14's "update step" is for Adam; here it is Adam's
    unpenalized step direction u = m^'/(sqrt(s^) + eps) with m' = b1*m + (1-b1)*g, so C ~ eta_max
    (one Adam step moves each parameter about eta) and G ~ 1 + (distance in steps).
    """

    name = "adam-ga"
    Hyper = AdamGAHyper
    uses_gap = True

    def __init__(self, params: Tensor, n_workers: int, hyper: AdamGAHyper, segments: Segments | None = None) -> None:
        super().__init__(params, n_workers, hyper, segments)
        self._meter = self._make_meter(hyper)

    def _first_moment_input(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> Tensor:
        b1 = self.hyper.betas[0]
        self._meter.observe(self._direction(self._m.mul(b1).add_(g, alpha=1.0 - b1)), self._lr)
        return g / self._meter.gap(self._theta - stale.to(self._theta))
