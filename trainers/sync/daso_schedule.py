"""The DASO schedule (Coquelin et al. 2021; docs/algorithms.md DASO): warm-up and cool-down epochs of
blocking global syncs every batch, and between them a cycling phase whose B (batches between global
syncs) and W (batches a non-blocking sync may wait) move on loss plateaus, by the paper's rule or by
the authors' code (DASO_RULES). Pure Python: no torch, no numpy, no MPI (``trainers run`` reads DASO_RULES
without importing torch).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from trainers.errors import TrainerError
from trainers.validators import check_choice, check_int, check_number

__all__ = ["PlateauDetector", "DasoScheduleConfig", "DasoSchedule", "DASO_RULES"]


class PlateauDetector:
    """Plateau of a loss to minimise (torch ReduceLROnPlateau semantics, as the DASO authors' code).

    An epoch improves when loss < best * (1 - threshold). A plateau is declared when more than
    `patience` consecutive epochs did not improve; the counter then restarts (best is kept).
    """

    def __init__(self, patience: int = 2, threshold: float = 0.05) -> None:
        check_int("patience", patience, 0)
        check_number("threshold", threshold, 0.0, 1.0, hi_open=True)
        self.patience, self.threshold = patience, float(threshold)
        self.best = math.inf
        self.bad_epochs = 0

    def update(self, loss: float) -> bool:
        """Feed one epoch's loss; True when this epoch completes a plateau."""
        loss = float(loss)
        if not math.isfinite(loss):
            raise TrainerError(f"loss must be finite, got {loss!r}")
        if loss < (self.best * (1 - self.threshold) if self.best >= 0 else self.best * (1 + self.threshold)):
            self.best, self.bad_epochs = loss, 0
            return False
        self.bad_epochs += 1
        if self.bad_epochs > self.patience:
            self.bad_epochs = 0
            return True
        return False

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "bad_epochs": self.bad_epochs}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best, self.bad_epochs = float(state["best"]), int(state["bad_epochs"])


@dataclass(frozen=True)
class _DasoRule:
    """How B and W start in the cycling phase and change on a plateau."""

    initial: Callable[[int], tuple[int, int]]
    on_plateau: Callable[[int, int, int], tuple[int, int]]
    source: str


def _paper_initial(max_b: int) -> tuple[int, int]:
    return max_b, max(max_b // 4, 1)


def _paper_plateau(b: int, w: int, max_b: int) -> tuple[int, int]:
    if b == 1 and w == 1:
        return _paper_initial(max_b)
    return max(b // 2, 1), max(w // 2, 1)


def _code_initial(max_b: int) -> tuple[int, int]:
    return min(4, max_b), 1


def _code_plateau(b: int, w: int, max_b: int) -> tuple[int, int]:
    if b > 1:
        return b // 2, max(w - 1, 1)
    return max_b, max(max_b // 4, 1)


DASO_RULES: dict[str, _DasoRule] = {
    "paper": _DasoRule(_paper_initial, _paper_plateau,
                       "Coquelin et al. 2021 sec. 3: B starts at its maximum, W = B/4; on each plateau B and W "
                       "halve (minimum 1); a plateau at B = W = 1 resets both"),
    "code": _DasoRule(_code_initial, _code_plateau,
                      "heat.optim.dp_optimizer.DASO.epoch_loss_logic: B = 4 (hard-coded; here min(4, max B)), "
                      "W = 1 after warm-up; on a plateau B halves and W decreases by 1 (minimum 1); a plateau "
                      "at B = 1 resets to B = max B, W = max B // 4 (here at least 1)"),
}


@dataclass(frozen=True)
class DasoScheduleConfig:
    """DASO phases in epochs: warm-up (blocking every batch), cycling (B/W), cool-down (blocking).

    total_epochs: epochs of the run; warmup_epochs / cooldown_epochs: blocking epochs at the start /
    end (warm-up wins where they overlap; default 4 and 4, HeAT's DASO defaults: the paper does not
    print its values); max_b: initial B of the cycling phase; rule: key of
    DASO_RULES; fixed: (B, W) for the whole cycling phase (no plateau cycling); patience / threshold:
    the PlateauDetector settings (the authors' code: 2 and 0.05).
    """

    total_epochs: int
    warmup_epochs: int = 4
    cooldown_epochs: int = 4
    max_b: int = 4
    rule: str = "paper"
    fixed: tuple[int, int] | None = None
    patience: int = 2
    threshold: float = 0.05

    def __post_init__(self) -> None:
        for name in ("total_epochs", "max_b"):
            check_int(name, getattr(self, name), 1)
        for name in ("warmup_epochs", "cooldown_epochs", "patience"):
            check_int(name, getattr(self, name), 0)
        check_choice("rule", self.rule, DASO_RULES)
        if self.fixed is not None:
            b, w = self.fixed
            if not (isinstance(b, int) and isinstance(w, int) and b >= 1 and w >= 0):
                raise TrainerError(f"fixed must be (B >= 1, W >= 0), got {self.fixed!r}")
        check_number("threshold", self.threshold, 0.0, 1.0, hi_open=True)


class DasoSchedule:
    """B (batches between global syncs) and W (batches to wait) per epoch; pure Python, no MPI.

    ``b_w(epoch)`` gives the pair used during an epoch ((1, 0) = blocking sync every batch in warm-up
    and cool-down); ``end_epoch(epoch, loss)`` feeds the epoch's training loss (the mean over all
    ranks) and, in the cycling phase, moves B and W on a plateau.

    Example::

        >>> s = DasoSchedule(DasoScheduleConfig(total_epochs=6, warmup_epochs=1, cooldown_epochs=1, max_b=4,
        ...                                     patience=0))
        >>> [s.b_w(e) for e in range(2)]
        [(1, 0), (4, 1)]
    """

    def __init__(self, config: DasoScheduleConfig) -> None:
        self.config = config
        self.rule = DASO_RULES[config.rule]
        self.detector = PlateauDetector(config.patience, config.threshold)
        self.b, self.w = config.fixed if config.fixed is not None else self.rule.initial(config.max_b)
        self.plateaus = 0

    def phase(self, epoch: int) -> str:
        """"warmup", "cycling" or "cooldown"."""
        c = self.config
        if epoch < c.warmup_epochs:
            return "warmup"
        if epoch >= c.total_epochs - c.cooldown_epochs:
            return "cooldown"
        return "cycling"

    def b_w(self, epoch: int) -> tuple[int, int]:
        """(B, W) for the batches of `epoch`."""
        return (self.b, self.w) if self.phase(epoch) == "cycling" else (1, 0)

    def end_epoch(self, epoch: int, loss: float) -> bool:
        """Feed the mean training loss of `epoch`; True when it completed a plateau that moved B/W."""
        if self.phase(epoch) != "cycling":
            return False
        plateau = self.detector.update(loss)
        if plateau and self.config.fixed is None:
            self.b, self.w = self.rule.on_plateau(self.b, self.w, self.config.max_b)
            self.plateaus += 1
            return True
        return False

    def trace(self, losses: Sequence[float]) -> list[tuple[str, int, int]]:
        """(phase, B, W) of each epoch when fed one loss per epoch (for tests and notebooks)."""
        out = []
        for epoch, loss in enumerate(losses):
            out.append((self.phase(epoch), *self.b_w(epoch)))
            self.end_epoch(epoch, loss)
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"b": self.b, "w": self.w, "plateaus": self.plateaus, "detector": self.detector.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.b, self.w, self.plateaus = int(state["b"]), int(state["w"]), int(state["plateaus"])
        self.detector.load_state_dict(state["detector"])
