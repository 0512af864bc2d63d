"""Learning-rate schedules of the papers: gradual warm-up from eta/N and step decays.

Barkai et al. 2020 (Appendix C.4) divide the initial rate by the number of workers N and ramp it
linearly back to eta over 5 epochs (Goyal et al. 2017), then decay it by gamma at fixed epochs
(ResNet-20 CIFAR-10: 0.1, /10 at 80 and 120). Zhang et al. 2016 use eta0 = 0.001, /10 at 120 and 130.

Example:
    >>> s = LRSchedule(base_lr=0.1, n_workers=8, warmup_epochs=5, milestones=(80, 120))
    >>> round(s.lr_at(0.0), 6), s.lr_at(5.0), round(s.lr_at(100.0), 6)
    (0.0125, 0.1, 0.01)

The trainer sets ``rule.lr = schedule.lr_at(epoch)`` before each master step; the master rules
keep the rate outside their momentum buffers, which is the "momentum correction" of Goyal et al.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from trainers.errors import TrainerError
from trainers.validators import check_int, check_milestones, check_number

__all__ = ["LRSchedule"]


@dataclass(frozen=True)
class LRSchedule:
    """Warm-up plus step decays; every argument is in epochs (float) or a plain rate.

    base_lr: the single-worker rate eta (> 0).
    n_workers: N; the warm-up starts at eta / N (N = 1 means no visible warm-up).
    warmup_epochs: length of the linear ramp from eta/N to eta (0 = no warm-up; the papers use 5).
    milestones: epochs at which the rate is multiplied by gamma (strictly increasing, >= 0).
    gamma: decay factor per milestone, in (0, 1].
    """

    base_lr: float
    n_workers: int = 1
    warmup_epochs: float = 0.0
    milestones: tuple[float, ...] = ()
    gamma: float = 0.1

    def __post_init__(self) -> None:
        check_number("base_lr", self.base_lr, 0.0, lo_open=True)
        check_int("n_workers", self.n_workers, 1)
        check_number("warmup_epochs", self.warmup_epochs, 0.0)
        object.__setattr__(self, "milestones", check_milestones("milestones", self.milestones))
        check_number("gamma", self.gamma, 0.0, 1.0, lo_open=True)

    def lr_at(self, epoch: float) -> float:
        """Learning rate at a (fractional) epoch >= 0.

        Warm-up: eta/N + (eta - eta/N) * epoch / warmup_epochs while epoch < warmup_epochs.
        Decay: times gamma ** (number of milestones <= epoch), applied on top of the warm-up.
        """
        if not math.isfinite(epoch) or epoch < 0:
            raise TrainerError(f"epoch must be a finite number >= 0, got {epoch!r}")
        lr = self.base_lr
        if epoch < self.warmup_epochs:
            start = self.base_lr / self.n_workers
            lr = start + (self.base_lr - start) * (epoch / self.warmup_epochs)
        passed = bisect.bisect_right(self.milestones, epoch)
        return lr * self.gamma**passed
