"""The gap G of Gap-Aware rules (Barkai et al., Alg. 14): the distance between the parameters a worker
computed on and the master's, over the mean step size C, per parameter, per layer or globally."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from trainers.asynchronous.rule_hypers import GAP_MODES, Segments
from trainers.errors import TrainerError

__all__ = ["GapMeter"]

class GapMeter:
    """The gap G of Barkai et al. (Definition 1, eq. 12-13) with Alg. 14's C coefficient.

    ``observe(u, lr)`` feeds the unpenalized update step u (for momentum rules u = gamma*v + g):
    m <- beta*m + (1 - beta)*u^2, m^ = m / (1 - beta^k), and eta_max (fixed or the largest lr seen).
    ``gap(diff)`` with diff = theta - theta_stale returns G broadcastable to the parameters:

        parameter: G = |diff| / C + 1,           C = eta_max * (sqrt(m^) + eps)            (vector)
        layer:     G_p = ||diff_p|| / C_p + 1,   C_p = eta_max * (sqrt(sum_p m^) + eps)     (per segment)
        global:    G = ||diff|| / C + 1,         C = eta_max * (sqrt(sum m^) + eps)         (scalar)

    sqrt(sum m^) estimates the root mean square norm of one update, the layer/global analogue of
    the paper's per-parameter C.
    """

    def __init__(
        self,
        like: Tensor,
        mode: str,
        beta: float,
        eps: float,
        eta_max: float | None,
        segments: Segments | None,
    ) -> None:
        if mode not in GAP_MODES:
            raise TrainerError(f"gap must be one of {GAP_MODES}, got {mode!r}")
        if mode == "layer" and segments is None:
            raise TrainerError("gap='layer' needs segments=((name, numel), ...) describing the layers")
        self.mode = mode
        self.beta = beta
        self.eps = eps
        self.fixed_eta_max = eta_max
        self.eta_max = 0.0 if eta_max is None else float(eta_max)
        self.m = torch.zeros_like(like)
        self.k = 0
        self._sizes = [size for _, size in segments] if segments is not None else None
        if self._sizes is not None:
            self._seg_index = torch.repeat_interleave(
                torch.arange(len(self._sizes), device=like.device), torch.tensor(self._sizes, device=like.device)
            )
        self.count = 0
        self.sum_mean = 0.0
        self.max = 0.0
        self.last: Tensor | None = None

    def observe(self, u: Tensor, lr: float) -> None:
        """Fold one unpenalized update step u into the second moment (Alg. 14)."""
        if self.fixed_eta_max is None:
            self.eta_max = max(self.eta_max, float(lr))
        self.k += 1
        self.m.mul_(self.beta).addcmul_(u, u, value=1.0 - self.beta)

    def _m_hat(self) -> Tensor:
        return self.m / (1.0 - self.beta**self.k)

    def coefficient(self) -> Tensor:
        """C as a tensor: per parameter, per segment, or a scalar (see the class docstring)."""
        m_hat = self._m_hat()
        if self.mode == "parameter":
            root = m_hat.sqrt()
        elif self.mode == "layer":
            root = torch.zeros(len(self._sizes), dtype=m_hat.dtype, device=m_hat.device)
            root = root.index_add_(0, self._seg_index, m_hat).sqrt()
        else:
            root = m_hat.sum().sqrt()
        return self.eta_max * (root + self.eps)

    def gap(self, diff: Tensor) -> Tensor:
        """G >= 1 for diff = theta_now - theta_stale, broadcastable to diff; updates statistics."""
        c = self.coefficient().clamp_min(torch.finfo(diff.dtype).tiny)
        if self.mode == "parameter":
            g = diff.abs() / c + 1.0
            mean, mx = float(g.mean()), float(g.max())
        elif self.mode == "layer":
            sq = torch.zeros(len(self._sizes), dtype=diff.dtype, device=diff.device)
            dist = sq.index_add_(0, self._seg_index, diff * diff).sqrt()
            per_layer = dist / c + 1.0
            g = per_layer[self._seg_index]
            mean, mx = float(g.mean()), float(per_layer.max())
        else:
            g = diff.norm() / c + 1.0
            mean = mx = float(g)
        self.last = g
        self.count += 1
        self.sum_mean += mean
        self.max = max(self.max, mx)
        return g

    def stats(self) -> dict[str, float]:
        """gap_mean: average over gradients of the mean gap; gap_max: largest gap seen."""
        return {
            "gap_mean": self.sum_mean / self.count if self.count else math.nan,
            "gap_max": self.max if self.count else math.nan,
            "c_eta_max": self.eta_max,
        }

    def reset_stats(self) -> None:
        self.count, self.sum_mean, self.max = 0, 0.0, 0.0
