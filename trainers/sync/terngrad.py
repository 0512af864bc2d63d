"""TernGrad (Wen et al. 2017; docs/algorithms.md TernGrad): scaler sharing, stochastic ternarization
(trainers.compress) and one of the exchanges of the ternary codes (trainers.exchanges)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from perfmodel.compression import resolve_level_lanes
from perfmodel.specs import SpecError
from perfmodel.wire import levels_lane_bits
from trainers import comm as tcomm
from trainers.collectives.buffers import BufferComm
from trainers.compress import TernGradCodec, level_dtype
from trainers.errors import UsageError
from trainers.exchanges import exchange_class
from trainers.sync.loop import StepPosition, StepResult, Trainer, _derived_seed

__all__ = ["TernGrad"]


def _bind(params: Sequence[torch.Tensor], views: Sequence[torch.Tensor]) -> None:
    """Make each parameter's .grad the bucket view, so backward accumulates into the bucket."""
    for p, v in zip(params, views):
        p.grad = v


def _forward_backward(tr: Trainer, x: torch.Tensor, y: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """Mean cross-entropy of the batch; backward of scale * loss (accumulates into .grad)."""
    loss = F.cross_entropy(tr.model(x), y)
    (loss if scale == 1.0 else loss * scale).backward()
    return loss.detach()


class TernGrad:
    """TernGrad (Wen et al. 2017): scaler sharing, fused stochastic ternarization, fp32 exceptions and
    one of the exchanges of the ternary codes in trainers.exchanges (``--terngrad-exchange``,
    docs/algorithms.md TernGrad; the default trainers.exchanges.DEFAULT_EXCHANGE): levels (the integer
    sum by Allreduce, in lanes of ``--terngrad-lanes``), ps (the paper's parameter server sharded over
    the ranks), allgather (every rank's packed codes to every rank).

    The codes of every exchange are drawn from the same counter-based stream (trainers.compress.encode_codes:
    element i of step t draws word t*N + i of the rank's key), so the exchanges differ only in
    transport, and every rank decodes the same integer sums into s * sum / p.

    Gradient accumulation (--accumulate A): the A micro-batches' gradients are summed in the buckets
    (each back-propagates loss / A) and ternarized once per step: the codec sees the gradient of the
    rank's whole batch of A x --batch samples, and one exchange serves A micro-batches.
    """

    name = "terngrad"
    accumulates = True  # --accumulate
    replicated = True

    def __init__(self, tr: Trainer) -> None:
        cfg = tr.cfg
        # the exchanges work on host numpy buffers: MPI directly, other backends through BufferComm
        self.comm = tr.comm if tr.coll.name == "mpi" else BufferComm(tr.coll)
        self.codec = TernGradCodec(clip=cfg.tern_clip, min_tensor_elems=cfg.tern_min_elems,
                                   keep_last_layer_fp32=cfg.tern_fp32_last)
        self.plan = self.codec.plan([(k, p.numel()) for k, p in tr.named_params])
        self.tern_params = [p for p, t in zip(tr.params, self.plan) if t]
        self.fp32_params = [p for p, t in zip(tr.params, self.plan) if not t]
        self.fp32 = tcomm.FlatBuckets([torch.zeros_like(p) for p in self.fp32_params] + [torch.zeros(1)],
                                      cfg.bucket_bytes)
        _bind(self.fp32_params, self.fp32.views)
        self.loss_slot = self.fp32.views[-1]
        self.fp32_bytes = 4 * sum(p.numel() for p in self.fp32_params)  # the loss slot is not counted
        world = tr.world
        self.level_dtype = level_dtype(world)
        try:
            self.lanes_mode = resolve_level_lanes(cfg.tern_lanes, tr.coll.name)
        except SpecError as e:
            raise UsageError(f"--terngrad-lanes: {e}") from None
        self.lane_bits = levels_lane_bits(world, self.lanes_mode == "packed")
        # the exchange owns the ternary gradients' buffers: backward accumulates into them
        self.exchange = exchange_class(cfg.terngrad_exchange)(
            self.comm, [p.shape for p in self.tern_params], key=_derived_seed(cfg.seed, tr.rank, 3),
            bucket_bytes=cfg.bucket_bytes, lane_bits=self.lane_bits)
        _bind(self.tern_params, self.exchange.views)
        self.n_tern = self.exchange.elements
        self.counter = 0  # elements drawn so far from this rank's stream
        self.names = [k for (k, _), t in zip(tr.named_params, self.plan) if t]

    def _exchange(self, tr: Trainer, shared: np.ndarray) -> float:
        """Encode, exchange and decode the ternary gradients in place (the mean s * sum / p), part after
        part (the exchange's gradient buckets); bytes sent."""
        timer, ex = tr.timer, self.exchange
        sent = 0.0
        for part in range(ex.parts):
            with timer.phase("compress"):
                ex.encode(part, shared, self.counter)
            with timer.phase("comm"):
                sent += ex.exchange(part)
            with timer.phase("compress"):
                ex.decode(part, shared)
        return sent

    def step(self, tr: Trainer, x: torch.Tensor, y: torch.Tensor, pos: StepPosition) -> StepResult:
        timer = tr.timer
        with timer.phase("compute"):
            for b in self.fp32.buckets:
                b.zero_()
            for b in self.exchange.buckets:
                b.zero_()
            micro = tr.cfg.accumulate
            self.loss_slot.fill_(sum(_forward_backward(tr, xi, yi, 1.0 / micro)
                                     for xi, yi in zip(x.split(tr.cfg.batch), y.split(tr.cfg.batch))) / micro)
        grads = [p.grad for p in self.tern_params]
        with timer.phase("compress"):
            local = self.codec.scalers(grads, [True] * len(grads))
        sent = 0.0
        with timer.phase("comm"):
            if tr.world > 1 and len(local):
                shared = tcomm.allreduce_max(self.comm, local)
                sent += tcomm.ring_allreduce_bytes(local.nbytes, tr.world)
            else:
                shared = local
        sent += self._exchange(tr, shared)
        self.counter += self.n_tern
        with timer.phase("comm"):
            if tr.world > 1:
                self.fp32.allreduce_mean(self.comm)
                sent += tcomm.ring_allreduce_bytes(self.fp32_bytes, tr.world)
        with timer.phase("compute"):
            tr.optimizer.step()
        return StepResult(float(self.loss_slot), sent)

    def end_epoch(self, tr: Trainer, epoch: int, loss: float) -> None:
        pass

    def header(self) -> dict[str, Any]:
        return {"clip": self.codec.clip, "min_tensor_elems": self.codec.min_tensor_elems,
                "keep_last_layer_fp32": self.codec.keep_last_layer_fp32, "ternary_tensors": self.names,
                "fp32_elements": sum(p.numel() for p in self.fp32_params),
                "ternary_elements": self.n_tern, "exchange": self.exchange.name,
                "level_dtype": str(self.level_dtype), "level_lanes": self.lanes_mode,
                "level_lane_bits": self.lane_bits}

    def rank_state(self) -> dict[str, Any]:
        return {"stream_counter": self.counter}

    def shared_state(self) -> dict[str, Any]:
        return {}

    def load_state(self, shared: dict[str, Any], rank: dict[str, Any]) -> None:
        self.counter = int(rank["stream_counter"])
