"""The profile's record of backprop and the gradient's Allreduce timed alone and together
(perfmodel.lab.profile.overlap_timing measures it; perfmodel.lab.profile.schema.ConcurrentCompute holds
it), and the slowdowns it gives (perfmodel.overlap_causes.solve_slowdowns)."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["OverlapTiming"]


@dataclass(frozen=True)
class OverlapTiming:
    """How backprop and a collective slow each other when both run, timed on every rank of a
    multi-rank run at once (perfmodel.lab.profile.overlap_timing).

    For each batch size (``batches``), medians over ``repeats`` rounds of the mean over ranks, seconds:
    ``compute_s``, the backward pass alone; ``comm_s``, a non-blocking Allreduce of ``nbytes`` bytes
    (the model's gradient) alone, waited for at once; ``both_compute_s`` and ``both_comm_s``, the end of
    the backward pass and of the same Allreduce, counted from their common start, when the Allreduce
    is started as the backward pass begins and polled from every parameter's gradient hook, as
    trainers.grad_buckets makes a bucket's collective progress. ``slowdowns`` turns them into the
    (sigma, mu) of perfmodel.overlap (perfmodel.overlap_causes.solve_slowdowns).
    """

    nbytes: int
    batches: tuple[int, ...]
    compute_s: tuple[float, ...]
    comm_s: tuple[float, ...]
    both_compute_s: tuple[float, ...]
    both_comm_s: tuple[float, ...]
    repeats: int

    def __post_init__(self) -> None:
        n = len(self.batches)
        if n == 0 or list(self.batches) != sorted(set(self.batches)) or self.batches[0] < 1:
            raise ValueError("batches must be positive and strictly increasing")
        if self.nbytes < 1:
            raise ValueError(f"nbytes must be >= 1, got {self.nbytes}")
        for name in ("compute_s", "comm_s", "both_compute_s", "both_comm_s"):
            vals = getattr(self, name)
            if len(vals) != n:
                raise ValueError(f"{name} has {len(vals)} values for {n} batch sizes")
            if any(not (math.isfinite(t) and t > 0) for t in vals):
                raise ValueError(f"{name} must be finite and > 0")
        if self.repeats < 3:
            raise ValueError(f"repeats must be >= 3, got {self.repeats}")

    def slowdowns(self, batch: int) -> tuple[float, float]:
        """(sigma, mu) at the measured batch size nearest ``batch`` (the smaller on a tie)."""
        from perfmodel.overlap_causes import solve_slowdowns

        j = min(range(len(self.batches)), key=lambda i: (abs(self.batches[i] - batch), self.batches[i]))
        return solve_slowdowns(self.compute_s[j], self.comm_s[j], self.both_compute_s[j], self.both_comm_s[j])
