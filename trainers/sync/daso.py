"""DASO (Coquelin et al. 2021; docs/algorithms.md DASO) on pretend nodes of ``ranks_per_node``
consecutive ranks: node-local gradient averaging every batch, and every B batches a global parameter
average by one rotating group, blocking or merged W batches later (trainers.sync.daso_schedule)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from trainers import comm as tcomm
from trainers.errors import UsageError
from trainers.grad_buckets import GradBuckets
from trainers.sync.daso_schedule import DasoSchedule, DasoScheduleConfig
from trainers.sync.loop import StepPosition, StepResult, Trainer

__all__ = ["DASO"]


@dataclass
class _PendingSync:
    """A non-blocking global sync in flight: received at epoch index `due`, S = batches waited."""

    due: int
    group: int
    waited: int
    handle: _Reduction | None  # on the group's members only


class _Reduction:
    """A non-blocking sum of a copy of ``x`` over a group (``x`` may change meanwhile); ``sent`` keeps
    what was sent (for checkpoints of in-flight syncs)."""

    def __init__(self, coll: Any, x: torch.Tensor) -> None:
        self.sent = x.detach().clone()
        self.total = self.sent.clone()
        self.handle = coll.allreduce_async(self.total, "sum")

    def wait(self) -> torch.Tensor:
        """The element-wise sum over the group."""
        self.handle.wait()
        return self.total


class DASO:
    """DASO (Coquelin et al. 2021) on pretend nodes of ``ranks_per_node`` consecutive ranks."""

    name = "daso"
    gpu_ready = True  # runs on any --device with any --backend
    replicated = False
    loss_is_global = False  # the step loss is the node's mean: ranks agree on divergence at epoch ends

    def __init__(self, tr: Trainer) -> None:
        cfg = tr.cfg
        if tr.world % cfg.ranks_per_node:
            raise UsageError(f"--ranks-per-node {cfg.ranks_per_node} does not divide the {tr.world} ranks")
        self.per_node = cfg.ranks_per_node
        self.nodes = tr.world // cfg.ranks_per_node
        self.local_rank = tr.rank % cfg.ranks_per_node
        # node-local and global groups of the --backend (trainers.collectives): node = rank // ranks_per_node
        # in rank order, global = the ranks with the same position on every node, in node order
        self.local = tr.coll.split(tr.rank // cfg.ranks_per_node)
        self.glob = tr.coll.split(self.local_rank)
        # parameters live in one flat float32 buffer on the device (syncs and broadcasts need no packing)
        self.flat = torch.cat([p.detach().reshape(-1) for p in tr.params])
        offset = 0
        for p in tr.params:
            p.data = self.flat[offset:offset + p.numel()].view_as(p)
            offset += p.numel()
        # node-local gradient averaging: buckets reduced over the node as backprop produces them (--overlap)
        self.grads = GradBuckets(tr.params, self.local, bucket_bytes=cfg.bucket_bytes, overlap=cfg.overlap,
                                 op="mean", extra_numel=1)
        self.loss_slot = self.grads.extra
        fixed = (cfg.daso_b, cfg.daso_w) if cfg.daso_b is not None else None
        self.schedule = DasoSchedule(DasoScheduleConfig(
            total_epochs=tr.total_epochs, warmup_epochs=cfg.daso_warmup_epochs,
            cooldown_epochs=cfg.daso_cooldown_epochs, max_b=cfg.daso_max_b, rule=cfg.daso_rule, fixed=fixed,
            patience=cfg.daso_plateau_patience, threshold=cfg.daso_plateau_threshold))
        self.global_dtype = cfg.daso_global_dtype
        self.pending: list[_PendingSync] = []
        self.syncs = 0  # global syncs started; the sending group is syncs % ranks_per_node

    # -------------------------------------------------------------- sync pieces (each returns bytes sent)

    def _bcast(self, group: int) -> int:
        """The node's member of `group` sends its parameters to the rest of the node."""
        if self.per_node == 1:
            return 0
        self.local.broadcast(self.flat, root=group)
        return 4 * self.flat.numel() if self.local_rank == group else 0

    def _blocking(self, group: int, wire: str) -> int:
        """Average the group's parameters over the nodes, `wire` ("bf16" or "fp32") on the wire."""
        sent = 0
        if self.local_rank == group and self.nodes > 1:
            if wire == "bf16":
                self._bf16_mean()
                sent = 2 * self.flat.numel()
            else:
                self.glob.allreduce(self.flat, "sum")
                self.flat.div_(self.nodes)
                sent = 4 * self.flat.numel()
        return sent + self._bcast(group)

    def _bf16_mean(self) -> None:
        """flat <- mean over the nodes with bf16 on the wire: MPI sums bf16 bit patterns with a user-defined
        operation (trainers.comm.allreduce_bf16_mean); gloo and NCCL sum bfloat16 natively. Both add two
        bf16 operands in float32 and round the sum to bf16."""
        if self.glob.name == "mpi":
            self.flat.copy_(tcomm.allreduce_bf16_mean(self.glob.comm, self.flat.cpu()))
        else:
            wire = self.flat.to(torch.bfloat16)
            self.glob.allreduce(wire, "sum")
            self.flat.copy_(wire.float().div_(self.nodes))

    def _start(self, group: int, due: int, waited: int) -> int:
        handle = None
        if self.local_rank == group:
            handle = _Reduction(self.glob, self.flat)
        self.pending.append(_PendingSync(due, group, waited, handle))
        return 4 * self.flat.numel() if handle is not None and self.nodes > 1 else 0

    def _finish(self, sync: _PendingSync) -> int:
        if sync.handle is not None:
            total = sync.handle.wait()
            s2 = 2.0 * sync.waited
            self.flat.mul_(s2).add_(total).div_(s2 + self.nodes)  # (2S x_local + sum_i x_i) / (2S + P)
        return self._bcast(sync.group)

    # -------------------------------------------------------------- step

    def step(self, tr: Trainer, x: torch.Tensor, y: torch.Tensor, pos: StepPosition) -> StepResult:
        timer = tr.timer
        b, w = self.schedule.b_w(pos.epoch)
        cycling = self.schedule.phase(pos.epoch) == "cycling"
        blocking_phase = not cycling or w == 0
        # HeAT sends bf16 only in warm-up/cool-down; every cycling-phase sync (W = 0, epoch ends) is fp32
        wire = "fp32" if cycling else self.global_dtype
        with timer.phase("compute"):
            self.grads.zero_grad()
            loss = F.cross_entropy(tr.model(x), y)
            self.loss_slot.copy_(loss.detach().reshape(1))
            if self.per_node > 1:
                self.grads.begin()
            loss.backward()
        sent = 0
        if self.per_node > 1:
            with timer.phase("comm"):
                self.grads.finish()
            sent += self.grads.nbytes
        with timer.phase("compute"):
            tr.optimizer.step()
        kind, merged, sent_global, used = "none", 0, 0, None
        with timer.phase("comm"):
            due = [p for p in self.pending if p.due <= pos.index or pos.last]
            for sync in due:
                sent_global += self._finish(sync)
                merged += 1
            self.pending = [p for p in self.pending if p not in due]
            if pos.index % b == 0 or pos.last:
                group = self.syncs % self.per_node
                self.syncs += 1
                due_at = min(pos.index + w, pos.final_index)
                if blocking_phase or pos.last or due_at == pos.index:
                    sent_global += self._blocking(group, wire)
                    kind, used = "blocking", wire
                else:
                    sent_global += self._start(group, due_at, due_at - pos.index)
                    kind, used = "start", "fp32"
        return StepResult(float(self.loss_slot), sent + sent_global,
                          {"B": b, "W": w, "sync": kind, "wire": used, "merged": merged,
                           "bytes_global": sent_global})

    def end_epoch(self, tr: Trainer, epoch: int, loss: float) -> dict[str, Any]:
        """Feed the epoch's loss to the schedule; the epoch's record: its phase, the B and W its batches
        used ((1, 0) outside cycling), whether it completed a plateau that moved B/W, and the plateaus
        so far."""
        phase, (b, w) = self.schedule.phase(epoch), self.schedule.b_w(epoch)
        moved = self.schedule.end_epoch(epoch, loss)
        return {"daso_phase": phase, "daso_B": b, "daso_W": w, "daso_plateau": moved,
                "daso_plateaus": self.schedule.plateaus}

    def header(self) -> dict[str, Any]:
        sc = self.schedule.config
        return {"nodes": self.nodes, "ranks_per_node": self.per_node, "global_dtype": self.global_dtype,
                "rule": sc.rule, "rule_source": self.schedule.rule.source, "max_b": sc.max_b, "fixed": sc.fixed,
                "warmup_epochs": sc.warmup_epochs, "cooldown_epochs": sc.cooldown_epochs,
                "total_epochs": sc.total_epochs, "plateau": {"patience": sc.patience, "threshold": sc.threshold}}

    def rank_state(self) -> dict[str, Any]:
        return {"syncs": self.syncs,
                "pending": [(p.due, p.group, p.waited,
                             None if p.handle is None else p.handle.sent.cpu())
                            for p in self.pending]}

    def shared_state(self) -> dict[str, Any]:
        return {"schedule": self.schedule.state_dict()}

    def load_state(self, shared: dict[str, Any], rank: dict[str, Any]) -> None:
        self.schedule.load_state_dict(shared["schedule"])
        self.syncs = int(rank["syncs"])
        self.pending = []
        for due, group, waited, send in rank["pending"]:  # re-issue the reductions in their original order
            handle = _Reduction(self.glob, send.to(self.flat.device)) if send is not None else None
            self.pending.append(_PendingSync(int(due), int(group), int(waited), handle))
