"""Worker-side update rescaling for asynchronous SGD with an "add" master (docs/algorithms.md section 4).

Gradient Energy Matching (Hermans et al. 2018): worker k computes Delta = -eta * grad L(s) on its
stale copy s, then commits pi * Delta where, element-wise,

    m  <- mu * m + Delta                       (first moment of the worker's own updates)
    d   = theta_now - s                        (central shift since the worker's last pull)
    pi  = (kappa * |m| - |d|) / (|Delta| + eps)

Paper defaults: mu = 0.9, kappa = 1, eps = 1e-16, no clamp (pi may be negative).

Two protocols, i.e. which parameters s the shift d is measured from (``GEMConfig.protocol``):

- "paper": the worker commits, then pulls; s is the central variable right after its own commit,
  so d holds only the other workers' commits since then.
- "authors" (the authors' public code, montefiore-institute/gradient-energy-matching, code/gem.py):
  the worker pulls the central variable just before committing and remembers it; s is the
  previous such pull, taken before its own last commit, so d also holds its own last update. The
  denominator is |Delta + eps| instead of |Delta| + eps. The gradient is taken at the same point
  in both (the central variable after the worker's own commit).

Three named settings (``GEMConfig.named``; the ``gem_code`` of trainers.asynchronous.config):
"paper" (paper protocol, eps 1e-16, no clamp), "paper-clamp" (paper protocol with the authors'
clamp of pi to [0, 5] and eps 1e-12) and "authors" (authors' protocol, clamp [0, 5], eps 1e-12).

Baselines of the paper: Downpour (commit Delta as is) and "adaptive staleness" (Delta / (tau + 1)).
The master for all three is ``trainers.asynchronous.masters.make_rule("add", ...)``: theta <- theta + update.
Everything here is transport-free: the simulator and the MPI parameter server drive these objects.

All workers share one signature, ``commit(delta, stale=None, central_now=None, *, tau=None)``;
``needs_central`` / ``needs_tau`` tell a driver what it must fetch before committing.

Example:
    >>> import torch
    >>> w = GEMWorker()
    >>> w.commit(torch.tensor([-0.5]), stale=torch.tensor([0.0]), central_now=torch.tensor([0.25])).tolist()
    [-0.25]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor

from trainers.errors import TrainerError
from trainers.validators import check_choice, check_int, check_number

__all__ = [
    "PROTOCOLS",
    "GEM_CODES",
    "GEMConfig",
    "GEMWorker",
    "DownpourWorker",
    "AdaptiveStalenessWorker",
    "WORKERS",
    "make_worker",
]


PROTOCOLS = ("paper", "authors")
GEM_CODES = ("paper", "paper-clamp", "authors")  # named settings, see GEMConfig.named
AUTHORS_EPS, AUTHORS_CLAMP = 1e-12, (0.0, 5.0)  # the authors' code/gem.py: epsilon 10e-13, pi.clamp_(0, 5)


@dataclass(frozen=True)
class GEMConfig:
    """momentum: mu of the local first moment, in [0, 1); kappa: proxy amplification (> 0, the
    paper's "high-energy proxy" for kappa > 1); eps: added to |Delta| ("paper") or to Delta
    inside the absolute value ("authors"), > 0; clamp: (lo, hi) bounds for pi, or None (paper);
    protocol: "paper" (pull after commit) or "authors" (pull before commit, see the module notes)."""

    momentum: float = 0.9
    kappa: float = 1.0
    eps: float = 1e-16
    clamp: tuple[float, float] | None = None
    protocol: str = "paper"

    def __post_init__(self) -> None:
        check_choice("protocol", self.protocol, PROTOCOLS)
        check_number("momentum", self.momentum, 0.0, 1.0, hi_open=True)
        check_number("kappa", self.kappa, 0.0, lo_open=True)
        check_number("eps", self.eps, 0.0, lo_open=True)
        if self.clamp is not None:
            ok = isinstance(self.clamp, (tuple, list)) and len(self.clamp) == 2
            ok = ok and all(_finite(x) for x in self.clamp) and self.clamp[0] <= self.clamp[1]
            if not ok:
                raise TrainerError(f"clamp must be None or a pair (lo, hi) with lo <= hi, got {self.clamp!r}")
            object.__setattr__(self, "clamp", (float(self.clamp[0]), float(self.clamp[1])))

    @classmethod
    def authors_code(cls, momentum: float = 0.9, kappa: float = 1.0) -> GEMConfig:
        """The authors' public code: their protocol, |Delta + eps|, pi clamped to [0, 5], eps = 1e-12."""
        return cls(momentum=momentum, kappa=kappa, eps=AUTHORS_EPS, clamp=AUTHORS_CLAMP, protocol="authors")

    @classmethod
    def named(cls, code: str, momentum: float = 0.9, kappa: float = 1.0) -> GEMConfig:
        """One of GEM_CODES: "paper", "paper-clamp" (paper protocol, the authors' clamp and eps) or
        "authors" (``authors_code``)."""
        if code == "paper":
            return cls(momentum=momentum, kappa=kappa)
        if code == "paper-clamp":
            return cls(momentum=momentum, kappa=kappa, eps=AUTHORS_EPS, clamp=AUTHORS_CLAMP)
        if code == "authors":
            return cls.authors_code(momentum=momentum, kappa=kappa)
        raise TrainerError(f"GEM code must be one of {', '.join(GEM_CODES)}, got {code!r}")


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _as_tensor(name: str, x: Tensor | None, like: Tensor) -> Tensor:
    if not isinstance(x, Tensor) or x.shape != like.shape:
        got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise TrainerError(f"{name} must be a tensor of shape {tuple(like.shape)}, got {got}")
    return x.detach().to(like)


class GEMWorker:
    """Per-worker GEM state: the momentum m of the worker's own updates and the last pi (and, for
    the authors' protocol, the central variable it pulled at its previous commit).

    ``commit(delta, stale, central_now)`` returns pi * delta; ``last_pi`` and ``last_stats``
    (pi mean/min/max, fraction of elements with pi <= 0) describe the latest commit.
    """

    name: ClassVar[str] = "gem"
    needs_central: ClassVar[bool] = True
    needs_tau: ClassVar[bool] = False

    def __init__(self, config: GEMConfig | None = None) -> None:
        self.config = GEMConfig() if config is None else config
        self.m: Tensor | None = None
        self.pulled: Tensor | None = None  # authors' protocol: central_now of the previous commit
        self.last_pi: Tensor | None = None
        self.last_stats: dict[str, float] = {}
        self.commits = 0

    def commit(
        self,
        delta: Tensor,
        stale: Tensor | None = None,
        central_now: Tensor | None = None,
        *,
        tau: int | None = None,
    ) -> Tensor:
        """Scale the update Delta (= -eta * gradient, computed on ``stale``) by pi.

        stale: the parameters the worker pulled last (after its own previous commit; the authors'
        protocol uses them only at the first commit, before any pull of its own); central_now: the
        master's parameters now. tau is accepted for a uniform signature and ignored.
        """
        if not isinstance(delta, Tensor) or not delta.is_floating_point():
            raise TrainerError("delta must be a floating-point tensor")
        delta = delta.detach()
        s = _as_tensor("stale", stale, delta)
        now = _as_tensor("central_now", central_now, delta)
        cfg = self.config
        if self.m is None:
            self.m = torch.zeros_like(delta)
        self.m.mul_(cfg.momentum).add_(delta)
        if cfg.protocol == "authors":
            shift = now - (s if self.pulled is None else self.pulled)
            self.pulled = now.clone()
            denominator = (delta + cfg.eps).abs()
        else:
            shift = now - s
            denominator = delta.abs() + cfg.eps
        pi = (cfg.kappa * self.m.abs() - shift.abs()) / denominator
        if cfg.clamp is not None:
            pi = pi.clamp(cfg.clamp[0], cfg.clamp[1])
        self.last_pi = pi
        self.commits += 1
        self.last_stats = {
            "pi_mean": float(pi.mean()),
            "pi_min": float(pi.min()),
            "pi_max": float(pi.max()),
            "pi_nonpositive": float((pi <= 0).to(torch.float64).mean()),
        }
        return pi * delta


class DownpourWorker:
    """Downpour (Dean et al. 2012): commit Delta as is."""

    name: ClassVar[str] = "downpour"
    needs_central: ClassVar[bool] = False
    needs_tau: ClassVar[bool] = False

    def commit(
        self,
        delta: Tensor,
        stale: Tensor | None = None,
        central_now: Tensor | None = None,
        *,
        tau: int | None = None,
    ) -> Tensor:
        """Return ``delta`` unchanged (a new tensor)."""
        if not isinstance(delta, Tensor):
            raise TrainerError("delta must be a tensor")
        return delta.detach().clone()


class AdaptiveStalenessWorker:
    """Hermans et al.'s "adaptive staleness" baseline: commit Delta / (tau + 1).

    tau is the number of master updates since the worker's pull (``Add.staleness(worker)``).
    """

    name: ClassVar[str] = "adaptive-staleness"
    needs_central: ClassVar[bool] = False
    needs_tau: ClassVar[bool] = True

    def commit(
        self,
        delta: Tensor,
        stale: Tensor | None = None,
        central_now: Tensor | None = None,
        *,
        tau: int | None = None,
    ) -> Tensor:
        """Return delta / (tau + 1); tau is required (integer >= 0)."""
        check_int("tau", tau, 0)
        if not isinstance(delta, Tensor):
            raise TrainerError("delta must be a tensor")
        return delta.detach() / (tau + 1)


WORKERS: dict[str, type] = {cls.name: cls for cls in (GEMWorker, DownpourWorker, AdaptiveStalenessWorker)}


def make_worker(name: str, **options: Any) -> GEMWorker | DownpourWorker | AdaptiveStalenessWorker:
    """Build one worker's rescaling state by name: "gem" (options: GEMConfig fields, or code= one
    of GEM_CODES with momentum and kappa), "downpour", "adaptive-staleness"."""
    if name not in WORKERS:
        raise TrainerError(f"unknown worker rule {name!r}; choose one of: {', '.join(WORKERS)}")
    if name == "gem":
        if "code" in options:
            code = options.pop("code")
            bad = set(options) - {"momentum", "kappa"}
            if bad:
                raise TrainerError(f"unknown option {sorted(bad)[0]!r} with code=; allowed: momentum, kappa")
            return GEMWorker(GEMConfig.named(code, **options))
        allowed = {"momentum", "kappa", "eps", "clamp", "protocol"}
        bad = set(options) - allowed
        if bad:
            names = ", ".join(sorted(allowed))
            raise TrainerError(f"unknown option {sorted(bad)[0]!r} for 'gem'; allowed: code, {names}")
        return GEMWorker(GEMConfig(**options))
    if options:
        raise TrainerError(f"unknown option {sorted(options)[0]!r} for {name!r}; it takes none")
    return WORKERS[name]()
