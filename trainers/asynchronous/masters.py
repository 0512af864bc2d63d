"""Transport-free master update rules for asynchronous SGD (docs/algorithms.md sections 1, 3, 4).

A rule is a plain object: the MPI parameter server (ps.py) and the simulator
(simulate.py) both drive the same objects, one gradient at a time.

    rule = make_rule("ga", params, n_workers=8, lr=0.1, weight_decay=5e-4)
    x = rule.initial_params_for(w)          # what worker w pulls at start
    ...                                     # worker w computes g on x
    x = rule.apply(w, g)                    # master step(s); the parameters to send back to w
    rule.lr = schedule.lr_at(epoch)         # the trainer updates the rate
    rule.stats                              # staleness histogram, gap statistics

Parameters are ONE flat floating tensor (float32 or float64); an optional layout
``segments = (("conv1.weight", 432), ...)`` names consecutive slices, used by the layer-wise gap.

Registered rules (``RULES``), with the papers' names:

    asgd      theta <- theta - eta*g                                    (Barkai Alg. 2, gamma = 0)
    nag-asgd  v <- gamma*v + g; theta <- theta - eta*(g + gamma*v)      (PyTorch NAG, no dampening;
              nesterov=False gives Alg. 2's heavy ball theta <- theta - eta*v)
    sa        Staleness-Aware, Alg. 3 (variant="step": the step is eta/d) or Alg. 5
              (variant="gradient": g/d enters the momentum), with NAG
    softsync  Zhang's n-softsync: c = floor(N/n) gradients, each scaled by alpha(tau)/eta0
              (1/tau for tau > 0, else 1), averaged, then one step (eq. 2-3)
    ga        Gap-Aware, Alg. 4 with NAG: g/G enters the momentum; G from Alg. 14's C
    dana      DANA, Alg. 6: one momentum per worker, the worker gets the look-ahead
              theta - eta*gamma*sum_j v_j
    dana-sa   Alg. 7 (g/d into the worker's momentum)     dana-ga   Alg. 8 (g/G, G against the
                                                                     look-ahead sent to the worker)
    adam      Alg. 9      adam-sa  Alg. 10 (g/d in the first moment only)
    adam-ga   Alg. 11 (g/G in the first moment only)
    add       theta <- theta + update: the GEM / Downpour master (Hermans et al. 2018); the
              workers (gem.py) send already-scaled updates, no rate, no decay.

Staleness. The master clock i counts weight updates (one per gradient, or one per c gradients for
softsync). A worker sent parameters at clock j whose gradient arrives at clock i has staleness
tau = i - j (Zhang's definition: 0 for a fresh gradient). ``stats["tau_hist"]`` counts these.
Barkai's delay counts the update the gradient itself makes: d = k - iter[i] = tau + 1 >= 1, so SA
divides by d = tau + 1 (every gradient fresh <=> d = 1 <=> SA equals NAG-ASGD), whereas
softsync's alpha(tau) = eta0/tau for tau > 0, else eta0, uses tau itself.

Weight decay (``weight_decay`` hyper) is part of the gradient the worker would compute on the
parameters it was sent: g <- g + wd * theta_sent, before any penalty, so GA divides it by the gap
(Barkai C.5). With one worker this is exactly torch.optim.SGD / Adam's L2 term.

Learning rate is kept outside the momentum buffers (v accumulates gradients, the step is eta*v),
which is Goyal et al.'s momentum correction when ``rule.lr`` changes.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import torch
from torch import Tensor

from trainers.errors import TrainerError
from trainers.validators import check_number

__all__ = [
    "RULES",
    "Segments",
    "MasterRule",
    "GapMeter",
    "make_rule",
    "rule_names",
    "ASGD",
    "NAGASGD",
    "StalenessAware",
    "SoftSync",
    "GapAware",
    "DANA",
    "DANAStalenessAware",
    "DANAGapAware",
    "Adam",
    "AdamStalenessAware",
    "AdamGapAware",
    "Add",
]

Segments = tuple[tuple[str, int], ...]

GAP_MODES = ("parameter", "layer", "global")
SA_VARIANTS = ("step", "gradient")


# --------------------------------------------------------------------------- hyperparameters


@dataclass(frozen=True)
class BaseHyper:
    """lr: step size eta (>= 0); weight_decay: L2 coefficient added to g (>= 0)."""

    lr: float = 0.1
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        check_number("lr", self.lr, 0.0, math.inf, hi_open=True)
        check_number("weight_decay", self.weight_decay, 0.0, math.inf, hi_open=True)


@dataclass(frozen=True)
class MomentumHyper(BaseHyper):
    """momentum: gamma in [0, 1); nesterov: NAG form (the papers' optimizer) or heavy ball."""

    momentum: float = 0.9
    nesterov: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_number("momentum", self.momentum, 0.0, 1.0, hi_open=True)
        if not isinstance(self.nesterov, bool):
            raise TrainerError(f"nesterov must be True or False, got {self.nesterov!r}")


@dataclass(frozen=True)
class SAHyper(MomentumHyper):
    """variant: "step" (Alg. 3, eta/d) or "gradient" (Alg. 5, g/d into the momentum)."""

    variant: str = "step"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.variant not in SA_VARIANTS:
            raise TrainerError(f"variant must be one of {SA_VARIANTS}, got {self.variant!r}")


def _check_gap_fields(h: Any) -> None:
    if h.gap not in GAP_MODES:
        raise TrainerError(f"gap must be one of {GAP_MODES}, got {h.gap!r}")
    check_number("c_beta", h.c_beta, 0.0, 1.0, hi_open=True)
    check_number("c_eps", h.c_eps, 0.0, math.inf, lo_open=True, hi_open=True)
    if h.eta_max is not None:
        check_number("eta_max", h.eta_max, 0.0, math.inf, lo_open=True, hi_open=True)


@dataclass(frozen=True)
class GapOptions:
    """The Gap options shared by GA, DANA-GA and Adam-GA (a mixin before the rule's base Hyper).

    gap: "parameter" (paper's choice), "layer" (needs segments) or "global";
    c_beta, c_eps: Alg. 14's beta (0.999) and epsilon (1e-8);
    eta_max: fixed eta_max of Alg. 14, or None for the largest rate seen so far."""

    gap: str = "parameter"
    c_beta: float = 0.999
    c_eps: float = 1e-8
    eta_max: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()  # the base Hyper's checks (GapOptions is always mixed in before one)
        _check_gap_fields(self)


@dataclass(frozen=True)
class GAHyper(GapOptions, MomentumHyper):
    """Momentum (NAG) plus the Gap options."""


@dataclass(frozen=True)
class SoftSyncHyper(BaseHyper):
    """n: splitting parameter in 1..N (None = N, i.e. c = 1); momentum: Caffe-style heavy ball on
    the averaged update (Zhang's CIFAR runs used 0.9; eq. 2 itself has none); modulate: use
    alpha(tau) = eta0/tau (True) or the constant eta0 (False)."""

    n: int | None = None
    momentum: float = 0.0
    modulate: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n is not None and (isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1):
            raise TrainerError(f"n must be an integer >= 1 or None, got {self.n!r}")
        check_number("momentum", self.momentum, 0.0, 1.0, hi_open=True)
        if not isinstance(self.modulate, bool):
            raise TrainerError(f"modulate must be True or False, got {self.modulate!r}")


@dataclass(frozen=True)
class DANAHyper(BaseHyper):
    """momentum: gamma of every worker's momentum v_i (Alg. 6)."""

    momentum: float = 0.9

    def __post_init__(self) -> None:
        super().__post_init__()
        check_number("momentum", self.momentum, 0.0, 1.0, hi_open=True)


@dataclass(frozen=True)
class DANAGAHyper(GapOptions, DANAHyper):
    """DANA plus the Gap options."""


@dataclass(frozen=True)
class AdamHyper(BaseHyper):
    """betas (b1, b2) in [0, 1) and eps of Adam; the default rate is Adam's 1e-3."""

    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (isinstance(self.betas, (tuple, list)) and len(self.betas) == 2):
            raise TrainerError(f"betas must be a pair (b1, b2), got {self.betas!r}")
        check_number("betas[0]", self.betas[0], 0.0, 1.0, hi_open=True)
        check_number("betas[1]", self.betas[1], 0.0, 1.0, hi_open=True)
        object.__setattr__(self, "betas", (float(self.betas[0]), float(self.betas[1])))
        check_number("eps", self.eps, 0.0, math.inf, hi_open=True)


@dataclass(frozen=True)
class AdamGAHyper(GapOptions, AdamHyper):
    """Adam plus the Gap options."""


@dataclass(frozen=True)
class AddHyper:
    """The add rule has no hyperparameters: workers send finished updates."""


# --------------------------------------------------------------------------- helpers


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


def _momentum_direction(v: Tensor, g: Tensor, gamma: float, nesterov: bool) -> Tensor:
    """v <- gamma*v + g (in place); return the step direction: g + gamma*v (NAG) or v."""
    v.mul_(gamma).add_(g)
    return g.add(v, alpha=gamma) if nesterov else v


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


# --------------------------------------------------------------------------- the base rule


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
        check_number("lr", value, 0.0, math.inf, hi_open=True)
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


# --------------------------------------------------------------------------- plain ASGD family


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


# --------------------------------------------------------------------------- DANA family


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


# --------------------------------------------------------------------------- Adam family


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


# --------------------------------------------------------------------------- GEM / Downpour master


class Add(MasterRule):
    """theta <- theta + update: the master of GEM and Downpour (Hermans et al. 2018, sec. 4).

    The "grad" passed to ``apply`` is the worker's finished update (e.g. pi * Delta from
    trainers.asynchronous.gem.GEMWorker, with Delta = -eta * gradient); no rate, decay or momentum here.
    ``staleness(worker)`` gives the tau that AdaptiveStalenessWorker needs before committing.
    """

    name = "add"
    Hyper = AddHyper

    def _update(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> bool:
        self._theta.add_(g)
        return True


# --------------------------------------------------------------------------- registry


RULES: dict[str, type[MasterRule]] = {
    cls.name: cls
    for cls in (
        ASGD,
        NAGASGD,
        StalenessAware,
        SoftSync,
        GapAware,
        DANA,
        DANAStalenessAware,
        DANAGapAware,
        Adam,
        AdamStalenessAware,
        AdamGapAware,
        Add,
    )
}


def rule_names() -> tuple[str, ...]:
    """The registered rule names, in registry order."""
    return tuple(RULES)


def make_rule(
    name: str, params: Tensor, n_workers: int, *, segments: Segments | None = None, **hyper: Any
) -> MasterRule:
    """Build the master rule ``name`` on a flat parameter tensor (copied) for ``n_workers`` workers.

    ``hyper`` are the rule's hyperparameters (see each rule's Hyper dataclass, e.g. lr, momentum,
    weight_decay, gap, n). Unknown name or hyperparameter, or a bad value: TrainerError (a ValueError) naming it.

    >>> import torch
    >>> r = make_rule("asgd", torch.zeros(3), 2, lr=0.5)
    >>> r.apply(0, torch.tensor([1.0, 2.0, 4.0])).tolist()
    [-0.5, -1.0, -2.0]
    """
    if name not in RULES:
        raise TrainerError(f"unknown master rule {name!r}; choose one of: {', '.join(RULES)}")
    cls = RULES[name]
    allowed = [f.name for f in fields(cls.Hyper)]
    for key in hyper:
        if key not in allowed:
            raise TrainerError(
                f"unknown hyperparameter {key!r} for rule {name!r}; allowed: {', '.join(allowed) or '(none)'}"
            )
    return cls(params, n_workers, cls.Hyper(**hyper), segments)
