"""TernGrad (Wen et al. 2017; docs/algorithms.md TernGrad): scaler sharing, stochastic ternarization
(trainers.compress) and one of three exchanges of the ternary codes (trainers.comm)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from trainers import comm as tcomm
from trainers.collectives.buffers import BufferComm
from trainers.compress import TernGradCodec, encode_codes, encode_packed, level_dtype, packed_nbytes
from trainers.errors import UsageError
from trainers.level_lanes import lanes_nbytes, pack_lanes4, unpack_lanes4
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
    one of three exchanges of the ternary codes (``--terngrad-exchange``, docs/algorithms.md TernGrad):

    levels     (default) the integer sum of the codes by Allreduce, bucketed like SSGD, in lanes of
               perfmodel.compression.levels_lane_bits bits (``--terngrad-lanes``): 4-bit lanes, two
               per byte, summed by a user-defined MPI operation at 2..7 ranks on MPI
               (trainers.level_lanes, trainers.comm.allreduce_lanes4), else SUM on the smallest
               integer type holding -p..p (int8 up to 127 ranks, then int16; gloo and NCCL always);
    ps         the paper's parameter server, sharded over the ranks: push = Alltoall of 2-bit packed
               shards, rank k sums shard k and packs it at ceil(log2(2p+1)) bits, pull = Allgather;
    allgather  every rank's 2-bit packed gradient to every rank: p-1 copies received, does not scale.

    The codes of all three are drawn from the same counter-based stream (trainers.compress.encode_codes:
    element i of step t draws word t*N + i of the rank's key), so the exchanges differ only in
    transport, and every rank decodes the same integer sums into s * sum / p.
    """

    name = "terngrad"
    replicated = True

    def __init__(self, tr: Trainer) -> None:
        cfg = tr.cfg
        # the exchanges work on host numpy buffers: MPI directly, other backends through BufferComm
        self.comm = tr.comm if tr.coll.name == "mpi" else BufferComm(tr.coll)
        self.exchange = cfg.terngrad_exchange
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
        # ternary gradients in flat float32 buffers: SSGD's buckets for levels, one buffer otherwise
        cap = cfg.bucket_bytes if self.exchange == "levels" else 4 * max(sum(p.numel() for p in self.tern_params), 1)
        zeros = [torch.zeros_like(p) for p in self.tern_params]
        self.tern = tcomm.FlatBuckets(zeros, cap) if zeros else None
        if self.tern is not None:
            _bind(self.tern_params, self.tern.views)
        self.sizes = [p.numel() for p in self.tern_params]
        self.n_tern = sum(self.sizes)
        # per bucket: first tensor index, segment starts inside the bucket, first element overall
        self.groups: list[tuple[int, np.ndarray, int]] = []
        first, at = 0, 0
        for b in (self.tern.buckets if self.tern is not None else []):
            count, n = 0, 0
            starts = [0]
            while first + count < len(self.sizes) and n + self.sizes[first + count] <= b.numel():
                n += self.sizes[first + count]
                starts.append(n)
                count += 1
            self.groups.append((first, np.asarray(starts, dtype=np.int64), at))
            first, at = first + count, at + n
        world = tr.world
        self.level_dtype = level_dtype(world)
        from perfmodel.compression import SpecError, levels_lane_bits, resolve_level_lanes

        try:
            self.lanes_mode = resolve_level_lanes(cfg.tern_lanes, tr.coll.name)
        except SpecError as e:
            raise UsageError(f"--terngrad-lanes: {e}") from None
        self.lane_bits = levels_lane_bits(world, self.lanes_mode == "packed")
        if self.exchange == "levels":
            self.codes = [np.empty(b.numel(), dtype=self.level_dtype) for b in (self.tern.buckets if self.tern else [])]
            # 4-bit lanes: the codes packed two per byte before the allreduce, unpacked after it
            self.lanes = [np.empty(lanes_nbytes(c.size), dtype=np.uint8) if self.lane_bits == 4 else None
                          for c in self.codes]
        elif self.exchange == "ps":
            self.shard = tcomm.ps_shard_elems(self.n_tern, world)
            self.push = np.empty(world * self.shard // 4, dtype=np.uint8)
            self.sums = np.empty(world * self.shard, dtype=np.int32)
            self.scratch = np.empty(self.n_tern, dtype=np.int8)
        else:
            self.send = np.empty(sum(packed_nbytes(n) for n in self.sizes), dtype=np.uint8)
            self.sums = np.empty(self.n_tern, dtype=np.int32)
            self.scratch = np.empty(max(self.sizes, default=0), dtype=np.int8)
        self.key = _derived_seed(cfg.seed, tr.rank, 3)
        self.counter = 0  # elements drawn so far from this rank's stream
        self.names = [k for (k, _), t in zip(tr.named_params, self.plan) if t]

    def _exchange(self, tr: Trainer, shared: np.ndarray) -> float:
        """Encode, exchange and decode the ternary gradients in place (the mean s * sum / p); bytes sent."""
        timer, comm, p = tr.timer, self.comm, tr.world
        sent = 0.0
        if self.tern is None:
            return sent
        inv = np.float32(p)
        if self.exchange == "levels":
            for (first, starts, at), flat, codes, lanes in zip(self.groups, self.tern.buckets, self.codes, self.lanes):
                s = shared[first:first + len(starts) - 1]
                with timer.phase("compress"):
                    encode_codes(flat.numpy(), starts, s, self.key, self.counter + at, codes)
                    if lanes is not None:
                        pack_lanes4(codes, lanes)
                with timer.phase("comm"):
                    sent += (tcomm.allreduce_levels(comm, codes) if lanes is None
                             else tcomm.allreduce_lanes4(comm, lanes))
                with timer.phase("compress"):
                    if lanes is not None:
                        unpack_lanes4(lanes, codes.size, codes)
                    self._decode(torch.from_numpy(codes), first, s, inv)
            return sent
        flat = self.tern.buckets[0]
        starts = self.groups[0][1]
        if self.exchange == "ps":
            with timer.phase("compress"):
                encode_packed(flat.numpy(), starts, shared, self.key, self.counter, self.push, self.scratch)
            with timer.phase("comm"):
                sent += tcomm.ps_levels_sum(comm, self.push, self.shard, self.sums)
        else:
            with timer.phase("compress"):
                lo = 0
                for k, n in enumerate(self.sizes):
                    nb = packed_nbytes(n)
                    a, b = int(starts[k]), int(starts[k + 1])
                    encode_packed(flat.numpy()[a:b], np.array([0, n]), shared[k:k + 1], self.key, self.counter + a,
                                  self.send[lo:lo + nb], self.scratch[:n])
                    lo += nb
            with timer.phase("comm"):
                sent += tcomm.allgather_packed_sum(comm, self.send, self.sizes, self.sums)
        with timer.phase("compress"):
            self._decode(torch.from_numpy(self.sums[:self.n_tern]), 0, shared, inv)
        return sent

    def _decode(self, sums: torch.Tensor, first: int, shared: np.ndarray, p: np.float32) -> None:
        """Gradient views first.. <- float32(sum) * s / p (the same operations on every rank)."""
        at = 0
        for k in range(len(shared)):
            view = self.tern.views[first + k]
            n = view.numel()
            torch.mul(sums[at:at + n].view(view.shape), float(shared[k]), out=view)
            view.div_(float(p))
            at += n

    def step(self, tr: Trainer, x: torch.Tensor, y: torch.Tensor, pos: StepPosition) -> StepResult:
        timer = tr.timer
        with timer.phase("compute"):
            for b in self.fp32.buckets:
                b.zero_()
            if self.tern is not None:
                for b in self.tern.buckets:
                    b.zero_()
            self.loss_slot.fill_(_forward_backward(tr, x, y))
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
                "ternary_elements": self.n_tern, "exchange": self.exchange,
                "level_dtype": str(self.level_dtype), "level_lanes": self.lanes_mode,
                "level_lane_bits": self.lane_bits}

    def rank_state(self) -> dict[str, Any]:
        return {"stream_counter": self.counter}

    def shared_state(self) -> dict[str, Any]:
        return {}

    def load_state(self, shared: dict[str, Any], rank: dict[str, Any]) -> None:
        self.counter = int(rank["stream_counter"])
