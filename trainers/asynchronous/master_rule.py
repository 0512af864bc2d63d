"""The base of every master rule: clock, per-worker timestamps, staleness histogram, learning rate and
weight decay (trainers.asynchronous.masters describes the rules and their papers)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, ClassVar

from torch import Tensor

from trainers.asynchronous.gap_meter import GapMeter
from trainers.asynchronous.rule_hypers import BaseHyper, Segments
from trainers.errors import TrainerError
from trainers.validators import FLOAT32_MAX, check_number

__all__ = ["MasterRule"]

def _check_segments(segments: Segments | None, numel: int) -> Segments | None:
    if segments is None:
        return None
    try:
        segs = tuple((str(name), int(size)) for name, size in segments)
    except (TypeError, ValueError) as exc:
        raise TrainerError(f"segments must be a tuple of (name, numel) pairs, got {segments!r}") from exc
    if not segs or any(size <= 0 for _, size in segs):
        raise TrainerError("segments must be a non-empty tuple of (name, numel) pairs with numel > 0")
    total = sum(size for _, size in segs)
    if total != numel:
        raise TrainerError(f"segments must cover the parameters: their numel sum to {total}, params have {numel}")
    return segs


class MasterRule:
    """Bookkeeping shared by every rule: clock, per-worker timestamps, tau histogram, lr, decay.

    Subclasses implement ``_update(worker, g, tau, stale) -> bool`` (change the central state;
    return whether a weight update happened, i.e. the clock advances) and may override
    ``_outgoing(worker)`` (the tensor sent to the worker; default a copy of theta).
    """

    name: ClassVar[str] = ""
    Hyper: ClassVar[type] = BaseHyper
    uses_gap: ClassVar[bool] = False

    def __init__(self, params: Tensor, n_workers: int, hyper: Any, segments: Segments | None = None) -> None:
        if not isinstance(params, Tensor) or params.dim() != 1 or not params.is_floating_point():
            raise TrainerError("params must be one flat (1-D) floating-point torch tensor")
        if params.numel() == 0:
            raise TrainerError("params must not be empty")
        if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
            raise TrainerError(f"n_workers must be an integer >= 1, got {n_workers!r}")
        self.hyper = hyper
        self.n_workers = n_workers
        self.segments = _check_segments(segments, params.numel())
        self._theta = params.detach().clone()
        self._lr = float(getattr(hyper, "lr", 0.0))
        self._wd = float(getattr(hyper, "weight_decay", 0.0))
        self._clock = 0
        self._sent_clock = [0] * n_workers
        self._keeps_sent = self.uses_gap or self._wd > 0
        theta0 = self._theta.clone()
        # Every worker is taken to hold theta0 (clock 0) until it pulls; they share one copy.
        self._sent: list[Tensor] | None = [theta0] * n_workers if self._keeps_sent else None
        self._gradients = 0
        self._tau_counts: Counter[int] = Counter()

    # ---- public state
    @property
    def params(self) -> Tensor:
        """The central parameters theta (the live tensor: read it, copy it, do not modify it)."""
        return self._theta

    @property
    def clock(self) -> int:
        """Master timestamp i: number of weight updates applied so far."""
        return self._clock

    @property
    def lr(self) -> float:
        """Current step size eta; the trainer sets it from a schedule before each step."""
        return self._lr

    @lr.setter
    def lr(self, value: float) -> None:
        check_number("lr", value, 0.0, FLOAT32_MAX)
        self._lr = float(value)

    def staleness(self, worker: int) -> int:
        """tau a gradient from ``worker`` would have if it arrived now: clock - timestamp sent."""
        self._check_worker(worker)
        return self._clock - self._sent_clock[worker]

    @property
    def stats(self) -> dict[str, Any]:
        """gradients, updates, tau_hist {tau: count}, tau_mean, tau_max (+ gap_mean/gap_max for
        gap rules). tau is i - j (0 = fresh); Barkai's delay is tau + 1."""
        n = sum(self._tau_counts.values())
        out: dict[str, Any] = {
            "gradients": self._gradients,
            "updates": self._clock,
            "tau_hist": dict(sorted(self._tau_counts.items())),
            "tau_mean": sum(t * c for t, c in self._tau_counts.items()) / n if n else math.nan,
            "tau_max": max(self._tau_counts) if n else None,
        }
        meter = getattr(self, "_meter", None)
        if meter is not None:
            out.update(meter.stats())
        return out

    @property
    def last_gap(self) -> Tensor | None:
        """G of the latest gradient for gap rules (broadcastable to params), else None."""
        meter = getattr(self, "_meter", None)
        return None if meter is None else meter.last

    def reset_stats(self) -> None:
        """Forget the tau histogram and gap statistics (e.g. at each epoch); state is kept."""
        self._tau_counts.clear()
        meter = getattr(self, "_meter", None)
        if meter is not None:
            meter.reset_stats()

    # ---- the protocol
    def pull(self, worker: int) -> Tensor:
        """Send ``worker`` the current parameters (a new tensor it owns) and record the send."""
        self._check_worker(worker)
        out = self._outgoing(worker)
        self._sent_clock[worker] = self._clock
        if self._sent is not None:
            self._sent[worker] = out.clone()
        return out

    def initial_params_for(self, worker: int) -> Tensor:
        """What ``worker`` pulls at start (DANA rules: the look-ahead). Same as ``pull``."""
        return self.pull(worker)

    def apply(self, worker: int, grad: Tensor, stale_params: Tensor | None = None) -> Tensor | None:
        """One gradient from ``worker``, computed on the parameters it was last sent.

        ``stale_params`` may be omitted: the rule keeps what it sent where it needs it (gap rules,
        weight decay); when given it must equal what was sent. Returns the parameters to send
        back to the worker. The rules here never hold a worker (softsync returns the current
        parameters at once, as Zhang's learners push and pull independently), so the result
        is never None; the type leaves room for rules that do.
        """
        self._check_worker(worker)
        g = self._check_grad(grad)
        tau = self._clock - self._sent_clock[worker]
        self._tau_counts[tau] += 1
        self._gradients += 1
        stale = stale_params if stale_params is not None else (self._sent[worker] if self._sent is not None else None)
        if self._wd > 0:
            g = g.add(stale.to(g), alpha=self._wd)
        if self._update(worker, g, tau, stale):
            self._clock += 1
        return self.pull(worker)

    # ---- hooks
    def _update(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> bool:
        raise NotImplementedError

    def _outgoing(self, worker: int) -> Tensor:
        return self._theta.clone()

    # ---- checks
    def _check_worker(self, worker: int) -> None:
        if isinstance(worker, bool) or not isinstance(worker, int) or not 0 <= worker < self.n_workers:
            raise TrainerError(f"worker must be an integer in 0..{self.n_workers - 1}, got {worker!r}")

    def _check_grad(self, grad: Tensor) -> Tensor:
        if not isinstance(grad, Tensor) or grad.shape != self._theta.shape:
            shape = tuple(grad.shape) if isinstance(grad, Tensor) else type(grad).__name__
            raise TrainerError(f"grad must be a tensor of shape {tuple(self._theta.shape)}, got {shape}")
        return grad.detach().to(dtype=self._theta.dtype, device=self._theta.device)

    def _make_meter(self, h: Any) -> GapMeter:
        return GapMeter(self._theta, h.gap, h.c_beta, h.c_eps, h.eta_max, self.segments)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, n_workers={self.n_workers}, "
            f"clock={self._clock}, hyper={self.hyper})"
        )
