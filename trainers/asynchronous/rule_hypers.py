"""The master rules' hyperparameters (one frozen dataclass per rule family, validated on creation), the
gap modes and SA variants, and ``Segments``, the named layout of the flat parameter tensor
(trainers.asynchronous.masters: the rules and their papers)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trainers.errors import TrainerError
from trainers.validators import FLOAT32_MAX, check_number

Segments = tuple[tuple[str, int], ...]

GAP_MODES = ("parameter", "layer", "global")
SA_VARIANTS = ("step", "gradient")


@dataclass(frozen=True)
class BaseHyper:
    """lr: step size eta (>= 0); weight_decay: L2 coefficient added to g (>= 0)."""

    lr: float = 0.1
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        check_number("lr", self.lr, 0.0, FLOAT32_MAX)
        check_number("weight_decay", self.weight_decay, 0.0, FLOAT32_MAX)


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
