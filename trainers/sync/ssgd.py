"""Synchronous SGD (docs/algorithms.md SSGD): fused float32 gradient buckets summed by the --backend's
allreduce while backprop runs, like torch DDP (benchmarks/ddp_vs_ours.py compares the two)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from trainers import comm as tcomm
from trainers.grad_buckets import GradBuckets
from trainers.sync.loop import StepPosition, StepResult, Trainer

__all__ = ["SSGD"]


class SSGD:
    """Synchronous SGD: backward writes into fused float32 buckets (trainers.grad_buckets), each bucket
    summed by the --backend's allreduce as soon as backprop has produced it (--overlap on) or after
    backward (off); waited for before the optimizer step.

    Each rank back-propagates loss / K (the factor rides on the first backward operation), so the
    sum over ranks is already the mean gradient and no pass over the buckets follows the reduction.
    For K a power of two this is bit-identical to averaging after the sum. The loss / K rides in one
    extra slot of the last bucket. Logged per step: t_comm (the timer's comm phase: waiting after
    backward, i.e. the exposed communication), t_comm_exposed (the same, from GradBuckets) and
    t_comm_full (the time the backend was busy with the step's buckets, overlapped or not).

    Gradient accumulation (--accumulate A): the step's A micro-batches of --batch samples run forward and
    backward one after another into the same buckets, each back-propagating loss / (K A); only the
    last one's backward launches the buckets (DDP's ``no_sync`` on the others), so one exchange serves
    A micro-batches and the update is the one of a per-rank batch of A x --batch samples."""

    name = "ssgd"
    gpu_ready = True  # runs on any --device with any --backend
    accumulates = True  # --accumulate
    replicated = True

    def __init__(self, tr: Trainer) -> None:
        self.buckets = GradBuckets(tr.params, tr.coll, bucket_bytes=tr.cfg.bucket_bytes, overlap=tr.cfg.overlap,
                                   op="sum", extra_numel=1)
        self.loss_slot = self.buckets.extra
        # ring bytes per step; the loss slot is not counted
        self.nbytes = tcomm.ring_allreduce_bytes(4 * sum(p.numel() for p in tr.params), tr.world)
        self.micro = tr.cfg.accumulate
        self.scale = 1.0 / (tr.world * self.micro)

    def step(self, tr: Trainer, x: torch.Tensor, y: torch.Tensor, pos: StepPosition) -> StepResult:
        reduce = tr.world > 1
        with tr.timer.phase("compute"):
            self.buckets.zero_grad()
            self.loss_slot.zero_()
            parts = list(zip(x.split(tr.cfg.batch), y.split(tr.cfg.batch)))
            for i, (xi, yi) in enumerate(parts):
                loss = F.cross_entropy(tr.model(xi), yi)
                self.loss_slot.add_(loss.detach().reshape(1) * self.scale)
                if reduce and i == len(parts) - 1:
                    self.buckets.begin()
                (loss * self.scale).backward()
        sent, extra = 0, {}
        if reduce:
            with tr.timer.phase("comm"):
                times = self.buckets.finish()
            sent = self.nbytes
            extra = {"t_comm_exposed": times.exposed_s, "t_comm_full": times.comm_s}
        with tr.timer.phase("compute"):
            tr.optimizer.step()
        return StepResult(float(self.loss_slot), sent, extra)

    def end_epoch(self, tr: Trainer, epoch: int, loss: float) -> None:
        pass

    def header(self) -> dict[str, Any]:
        return {"buckets": len(self.buckets.buckets), "bucket_bytes": [b.numel() * 4 for b in self.buckets.buckets],
                "overlap": self.buckets.overlap}

    def rank_state(self) -> dict[str, Any]:
        return {}

    def shared_state(self) -> dict[str, Any]:
        return {}

    def load_state(self, shared: dict[str, Any], rank: dict[str, Any]) -> None:
        pass
