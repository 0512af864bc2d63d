"""The run log of an asynchronous run: its header fields, the step-line windows (:class:`StepWindow`,
:class:`WindowStats`) and the rule's staleness summary. Times are seconds (simulated seconds in the
simulator)."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import torch

from trainers.asynchronous.config import Plan
from trainers.asynchronous.flat_model import FlatModel, NullModel
from trainers.asynchronous.master_rule import MasterRule
from trainers.config import AsyncConfig
from trainers.data import Dataset, data_root

__all__ = ["versions", "StepWindow", "WindowStats", "rule_summary", "header_fields"]


def versions() -> dict[str, str]:
    """Versions for the run-log header."""
    out = {"python": sys.version.split()[0], "torch": torch.__version__, "numpy": np.__version__}
    if "mpi4py" in sys.modules:
        out["mpi4py"] = sys.modules["mpi4py"].__version__
    return out


class StepWindow:
    """Sums over the gradients since the last step line; ``line()`` returns the run-log fields.

    Times are per gradient in the window: t_compute the mean batch time, t_idle the mean wait,
    t_step the master-side time between gradients (simulated seconds in the simulator).
    """

    def __init__(self, bytes_per_push: int) -> None:
        self.bytes_per_push = bytes_per_push
        self.reset(0.0)

    def reset(self, t_now: float) -> None:
        self.count = 0
        self.loss = 0.0
        self.samples = 0
        self.t_compute = 0.0
        self.t_idle = 0.0
        self.tau = 0
        self.t_start = t_now

    def add(self, loss: float, samples: int, t_compute: float, tau: int, t_idle: float = 0.0) -> None:
        self.count += 1
        self.loss += loss
        self.samples += samples
        self.t_compute += t_compute
        self.t_idle += t_idle
        self.tau += tau

    def line(self, step: int, epoch: float, t_now: float, **extra: Any) -> dict[str, Any]:
        """The step-line fields for the window ending at gradient ``step`` (then reset)."""
        c = max(self.count, 1)
        out = {
            "step": step, "epoch": epoch, "loss": self.loss / c, "samples": self.samples,
            "t_compute": self.t_compute / c, "t_comm": 0.0, "t_compress": 0.0, "t_idle": self.t_idle / c,
            "t_step": (t_now - self.t_start) / c, "bytes_sent": self.bytes_per_push * self.count,
            "gradients": self.count, "tau_mean": self.tau / c, **extra,
        }
        self.reset(t_now)
        return out


class WindowStats:
    """Staleness and gap of the gradients since the previous call, from the rule's cumulative stats."""

    def __init__(self) -> None:
        self._grads = 0
        self._tau_sum = 0.0
        self._gap_sum = 0.0

    def take(self, rule: MasterRule) -> dict[str, float]:
        st = rule.stats
        g = st["gradients"]
        tau_sum = sum(t * c for t, c in st["tau_hist"].items())
        gap_sum = st["gap_mean"] * g if "gap_mean" in st and g else 0.0
        d = g - self._grads
        out = {"tau_mean": (tau_sum - self._tau_sum) / d if d else math.nan}
        out["delay_mean"] = out["tau_mean"] + 1.0
        if "gap_mean" in st:
            out["gap_mean"] = (gap_sum - self._gap_sum) / d if d else math.nan
        self._grads, self._tau_sum, self._gap_sum = g, tau_sum, gap_sum
        return out


def rule_summary(rule: MasterRule) -> dict[str, Any]:
    """The rule's staleness histogram (Zhang's tau = i - j; Barkai's delay = tau + 1) and gap stats."""
    st = dict(rule.stats)
    st["tau_hist"] = {str(k): v for k, v in st["tau_hist"].items()}
    st["delay_mean"] = st["tau_mean"] + 1.0 if st["gradients"] else math.nan
    st["staleness_definition"] = "tau = i - j (master clock at apply minus clock at pull; 0 = fresh)"
    return st


def header_fields(cfg: AsyncConfig, fm: FlatModel | NullModel, train: Dataset | None, *, simulated: bool,
                  ranks: int, plan: Plan) -> dict[str, Any]:
    """The run-log header of an asynchronous run."""
    return {
        "algo": cfg.algo, "master_rule": cfg.spec.master, "worker_rule": cfg.spec.worker,
        "simulated": simulated, "ranks": ranks, "workers": cfg.workers, "config": cfg.to_dict(),
        "parameters": fm.numel, "dataset_info": None if train is None else train.info.label,
        "data_root": None if train is None or cfg.dataset == "synthetic" else str(data_root(cfg.data_root)),
        "per_epoch": plan.per_epoch, "budget": plan.expected_total, "versions": versions(),
    }
