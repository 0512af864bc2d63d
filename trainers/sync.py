"""Synchronous data-parallel training: SSGD, TernGrad and DASO (docs/algorithms.md sections 2 and 5).

MPI starts the ranks and carries the control plane; the gradient collectives go through the
``--backend`` (trainers.collectives: mpi, gloo, nccl) on the ``--device`` (trainers.device: one GPU per
rank, or the CPU).

One :class:`Trainer` owns what every algorithm shares -- data order, model, optimizer, learning-rate
schedule, step timer, run log, evaluation, checkpoints, progress bar -- and calls one small algorithm
object per step (the shape of ``torch.distributed.algorithms.ddp_comm_hooks``: a state object plus a
step function)::

    ssgd      gradients fused into flat float32 buckets (backward writes straight into them, of
              loss / K), each summed by the backend's allreduce as soon as backprop has produced it
              (--overlap on; trainers.grad_buckets), like DDP (benchmarks/ddp_vs_ours.py compares the two).
    terngrad  per-tensor scalers (2.5 sigma clipping), scaler sharing by allreduce(max), fused
              stochastic ternarization from a counter-based per-rank stream, then --terngrad-exchange:
              levels (integer Allreduce of the codes, int8/int16), ps (sharded parameter server:
              Alltoall of 2-bit codes, Allgather of ceil(log2(2p+1))-bit sums) or allgather (every
              rank's 2-bit codes; does not scale); the last layer and tensors below --tern-min-elems
              travel as float32 (bucketed Allreduce); every rank applies the average itself
              (parameter localization).
    daso      node-local gradient averaging every batch (buckets during backprop, on the node's
              sub-group of the backend); every B batches one rotating global group
              (the i-th rank of every node) averages parameters -- blocking every batch in
              warm-up/cool-down (bf16 on the wire, or fp32 with --daso-global-dtype fp32), blocking
              fp32 in the cycling phase at epoch ends and when W = 0 (HeAT's DASO casts only while
              global_skip = 0, i.e. in warm-up/cool-down), otherwise a non-blocking fp32
              Iallreduce merged W batches later as x = (2S x_local + sum_i x_i) / (2S + P) --
              followed by a broadcast of the group member's parameters to its node. B and W follow
              :class:`DasoSchedule` (plateau cycling, paper rule or the authors' code rule).

Run functions (registered in ``trainers.run.ALGORITHMS``)::

    run_ssgd(cfg, comm); run_terngrad(cfg, comm); run_daso(cfg, comm)

BatchNorm running statistics stay per rank while training (like the parameters of DASO's nodes) and
are averaged over all ranks at every evaluation point (epoch ends, --eval-every, the last step);
rank 0 evaluates its own model on the whole test split.

Data order: epoch e uses the permutation ``shard_indices(n, 0, 1, seed, e)``; step i of the epoch
takes the global batch ``perm[i*K*b:(i+1)*K*b]`` and rank r its r-th slice of b samples
(:func:`batch_indices`). So K ranks with batch b see exactly the samples of one process with batch
K*b, which is what makes SSGD equal to the large-batch single-process run.

The run log (trainers.log) gets one line per step: step (0-based), epoch, loss (mean over the
ranks that averaged it: all ranks for ssgd/terngrad, the node for daso), samples (global batch),
t_compute / t_comm / t_compress / t_idle / t_step (rank 0's StepTimer phases, seconds; t_idle
includes fetching the batch), bytes_sent (bytes per step as trainers.log defines them: what this rank
sends on the wire, each collective counted as the model's algorithm for it; 0 with one rank), lr, and algorithm extras; eval lines (test_loss, test_acc, train_loss at epoch ends);
a summary line at the end.
"""

from __future__ import annotations

import math
import platform
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
import torch.nn.functional as F

from trainers.timers import StepTimer
from trainers import comm as tcomm
from trainers.collectives import open_collectives, resolve_backend
from trainers.collectives.buffers import BufferComm
from trainers.checkpoint import (FORMAT, CheckpointError, gather_to_root, load_checkpoint, restore_rng,
                                 rng_state, save_checkpoint)
from trainers.compress import TernGradCodec, encode_codes, encode_packed, level_dtype, packed_nbytes
from trainers.data import (Dataset, DatasetError, batches, crop_flip, data_root, load_dataset, shard_indices,
                           synthetic)
from trainers.device import describe as describe_device, select_device
from trainers.grad_buckets import GradBuckets
from trainers.level_lanes import lanes_nbytes, pack_lanes4, unpack_lanes4
from trainers.log import RunLog, RunLogError, read_run_log
from trainers.models import build_model, input_shape
from trainers.run import DivergenceError, RunConfig, UsageError
from trainers.schedules import LRSchedule

__all__ = [
    "steps_per_epoch",
    "epoch_permutation",
    "batch_indices",
    "PlateauDetector",
    "DasoScheduleConfig",
    "DasoSchedule",
    "DASO_RULES",
    "StepPosition",
    "StepResult",
    "SyncAlgorithm",
    "Trainer",
    "SSGD",
    "TernGrad",
    "DASO",
    "SYNC_ALGORITHMS",
    "run_ssgd",
    "run_terngrad",
    "run_daso",
]


# ---------------------------------------------------------------------------------------- data order


def steps_per_epoch(n: int, batch: int, world: int) -> int:
    """Steps in one epoch: n // (world * batch) (the remainder of the permutation is dropped)."""
    return n // (world * batch)


def epoch_permutation(n: int, seed: int, epoch: int) -> np.ndarray:
    """The permutation of range(n) that epoch `epoch` walks through (int64)."""
    return shard_indices(n, 0, 1, seed, epoch)


def batch_indices(perm: np.ndarray, batch: int, rank: int, world: int, index: int) -> np.ndarray:
    """Rank `rank`'s samples at step `index` of an epoch: slice r of the global batch
    perm[index*world*batch : (index+1)*world*batch]."""
    start = (index * world + rank) * batch
    if index < 0 or not 0 <= rank < world or start + batch > len(perm):
        raise ValueError(f"step {index} of rank {rank}/{world} with batch {batch} is outside the epoch "
                         f"({len(perm)} samples)")
    return perm[start:start + batch]


# ---------------------------------------------------------------------------------------- DASO schedule


class PlateauDetector:
    """Plateau of a loss to minimise (torch ReduceLROnPlateau semantics, as the DASO authors' code).

    An epoch improves when loss < best * (1 - threshold). A plateau is declared when more than
    `patience` consecutive epochs did not improve; the counter then restarts (best is kept).
    """

    def __init__(self, patience: int = 2, threshold: float = 0.05) -> None:
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 0:
            raise ValueError(f"patience must be an integer >= 0, got {patience!r}")
        if not (isinstance(threshold, (int, float)) and 0 <= threshold < 1):
            raise ValueError(f"threshold must be in [0, 1), got {threshold!r}")
        self.patience, self.threshold = patience, float(threshold)
        self.best = math.inf
        self.bad_epochs = 0

    def update(self, loss: float) -> bool:
        """Feed one epoch's loss; True when this epoch completes a plateau."""
        loss = float(loss)
        if not math.isfinite(loss):
            raise ValueError(f"loss must be finite, got {loss!r}")
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
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        for name in ("warmup_epochs", "cooldown_epochs", "patience"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {v!r}")
        if self.rule not in DASO_RULES:
            raise ValueError(f"rule must be one of {', '.join(DASO_RULES)}; got {self.rule!r}")
        if self.fixed is not None:
            b, w = self.fixed
            if not (isinstance(b, int) and isinstance(w, int) and b >= 1 and w >= 0):
                raise ValueError(f"fixed must be (B >= 1, W >= 0), got {self.fixed!r}")
        if not 0 <= self.threshold < 1:
            raise ValueError(f"threshold must be in [0, 1), got {self.threshold!r}")


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


# ------------------------------------------------------------------------------------------ trainer


@dataclass(frozen=True)
class StepPosition:
    """Where a step is: global step (0-based), epoch, index in the epoch, the index of the epoch's
    last step in this run, and whether the step is the last of the epoch / of the run."""

    step: int
    epoch: int
    index: int
    final_index: int
    last_of_run: bool

    @property
    def last(self) -> bool:
        """Last step of the epoch (or of the run)."""
        return self.index == self.final_index


@dataclass
class StepResult:
    """What an algorithm's step returns: the (averaged) loss, payload bytes this rank sent, extras."""

    loss: float
    bytes_sent: int
    extra: dict[str, Any] = field(default_factory=dict)


class SyncAlgorithm(Protocol):
    """One synchronous algorithm: state plus a step function, driven by :class:`Trainer`."""

    name: str
    replicated: bool  # True: every rank holds the same parameters and optimizer state

    def step(self, tr: "Trainer", x: torch.Tensor, y: torch.Tensor, pos: StepPosition) -> StepResult: ...

    def end_epoch(self, tr: "Trainer", epoch: int, loss: float) -> None: ...

    def header(self) -> dict[str, Any]: ...

    def rank_state(self) -> dict[str, Any]: ...

    def shared_state(self) -> dict[str, Any]: ...

    def load_state(self, shared: dict[str, Any], rank: dict[str, Any]) -> None: ...


def _inject_failure(tr: Trainer, step: int) -> None:
    """Test hook of --fail-at-step / --fail-rank: raise on that rank (default: the last) at that step."""
    cfg = tr.cfg
    fail_rank = cfg.fail_rank if cfg.fail_rank is not None else tr.world - 1
    if cfg.fail_at_step == step and tr.rank == fail_rank:
        raise RuntimeError(f"injected failure at step {step} on rank {tr.rank} (t={time.time():.3f})")


def _derived_seed(*parts: int) -> int:
    """A 63-bit seed derived from integers (numpy SeedSequence), for per-rank generators."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1, dtype=np.uint64)[0] >> 1)


def _collective(comm: Any, fn: Callable[[], Any]) -> Any:
    """Run fn on every rank; if it fails with a usage-type error on any rank, raise UsageError on all."""
    result, error = None, None
    try:
        result = fn()
    except (UsageError, DatasetError, CheckpointError, RunLogError, OSError, ValueError) as exc:
        error = " ".join(str(exc).split()) or type(exc).__name__
    errors = comm.allgather(error)
    first = next((e for e in errors if e), None)
    if first is not None:
        raise UsageError(first)
    return result


def _versions(comm: Any) -> dict[str, str]:
    import mpi4py
    from mpi4py import MPI

    return {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
            "mpi4py": mpi4py.__version__, "mpi": MPI.Get_library_version().replace("\0", "").splitlines()[0].strip(),
            "host": socket.gethostname()}


OPTIMIZERS: dict[str, Callable[[list[torch.nn.Parameter], RunConfig], torch.optim.Optimizer]] = {
    "sgd": lambda params, cfg: torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum,
                                               weight_decay=cfg.weight_decay, nesterov=cfg.nesterov),
    "adam": lambda params, cfg: torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay),
}

_TIME_KEYS = ("t_compute", "t_comm", "t_compress", "t_idle", "t_step")  # StepTimer record keys logged per step

# Run-log compatibility on --resume: these fields must match the original run.
_RESUME_KEYS = ("algo", "model", "dataset", "batch", "seed", "synthetic_n", "optimizer", "ranks_per_node")


class Trainer:
    """Shared machinery of the synchronous trainers. ``Trainer(cfg, comm, factory).run()``.

    factory(trainer) builds the algorithm after the model exists and before the optimizer.
    Attributes the algorithms use: cfg, comm, rank, world, model, params, named_params, optimizer,
    timer, total_epochs, steps_per_epoch.
    """

    def __init__(self, cfg: RunConfig, comm: Any, factory: Callable[["Trainer"], SyncAlgorithm]) -> None:
        self.cfg, self.comm = cfg, comm
        self.rank, self.world = comm.Get_rank(), comm.Get_size()
        torch.set_num_threads(cfg.threads)
        self.device, self.coll = _collective(comm, self._open_backend)
        self.train_set, self.test_set = _collective(comm, self._load_data)
        n = len(self.train_set)
        self.steps_per_epoch = steps_per_epoch(n, cfg.batch, self.world)
        if self.steps_per_epoch < 1:
            raise UsageError(f"batch {cfg.batch} x {self.world} ranks = {cfg.batch * self.world} samples per step "
                             f"is more than the {n} training samples of {cfg.dataset}")
        self.total_steps = cfg.steps if cfg.steps is not None else (cfg.epochs or 1) * self.steps_per_epoch
        self.total_epochs = -(-self.total_steps // self.steps_per_epoch)
        # identical initial weights on every rank (seeded), then per-rank random streams
        torch.manual_seed(cfg.seed)
        self.model = _collective(comm, lambda: build_model(cfg.model, num_classes=self.train_set.info.num_classes))
        self.model.train()
        for t in self.model.state_dict().values():
            if t.is_floating_point():
                comm.Bcast(t.detach().numpy(), root=0)
        self.model.to(self.device)
        torch.manual_seed(_derived_seed(cfg.seed, self.rank, 1))
        self.aug_gen = torch.Generator().manual_seed(_derived_seed(cfg.seed, self.rank, 2))
        self.named_params = [(k, p) for k, p in self.model.named_parameters() if p.requires_grad]
        self.params = [p for _, p in self.named_params]
        self.algo = _collective(comm, lambda: factory(self))
        self.optimizer = OPTIMIZERS[cfg.optimizer](self.params, cfg)
        self.lr_schedule = LRSchedule(base_lr=cfg.lr, n_workers=self.world, warmup_epochs=cfg.lr_warmup_epochs,
                                      milestones=cfg.lr_milestones, gamma=cfg.lr_gamma)
        self.timer = StepTimer(sync=(lambda: torch.cuda.synchronize(self.device)) if self.device.type == "cuda"
                               else None)
        self.start_step = 0
        self.epoch_loss_sum, self.epoch_loss_count = 0.0, 0
        self.last_eval_step = -1
        self.first_bad_step: int | None = None  # this rank's first step with a non-finite loss or gradient
        self.diverged_at: int | None = None  # the first such step on any rank, once the ranks agreed on it
        if cfg.resume and Path(cfg.checkpoint).exists():
            ckpt = _collective(comm, lambda: self._check_checkpoint(load_checkpoint(cfg.checkpoint)))
            self._restore(ckpt)
        self.log: RunLog | None = _collective(comm, self._open_log)
        self._perm_epoch, self._perm = -1, np.empty(0, dtype=np.int64)
        # called with (trainer, step) before every step: test hooks (--fail-at-step registers one)
        self.before_step: list[Callable[[Trainer, int], None]] = []
        if cfg.fail_at_step is not None:
            self.before_step.append(_inject_failure)

    # ------------------------------------------------------------------ setup helpers

    def _open_backend(self) -> tuple[torch.device, Any]:
        """--device and --backend: (this rank's device, its trainers.collectives world group)."""
        cfg = self.cfg
        gpu_ready = cfg.algo in _GPU_READY
        if not gpu_ready and cfg.device == "cuda":
            raise UsageError(f"--algo {cfg.algo} runs on CPU ranks so far (its encoder works on host memory); "
                             f"--device cuda: {', '.join(_GPU_READY)}")
        if not gpu_ready and cfg.backend == "nccl":
            raise UsageError(f"--algo {cfg.algo} exchanges host memory: --backend mpi or gloo")
        device = select_device(cfg.device if gpu_ready else "cpu", self.comm)
        return device, open_collectives(resolve_backend(cfg.backend, device.type), self.comm, device)

    def _load_data(self) -> tuple[Dataset, Dataset]:
        cfg = self.cfg
        if cfg.dataset == "synthetic":
            train = synthetic(cfg.model, n=cfg.synthetic_n, seed=cfg.seed, train=True)
            test = synthetic(cfg.model, n=max(cfg.synthetic_n // 4, 1), seed=cfg.seed, train=False)
        else:
            input_shape(cfg.model)  # unknown model: ValueError naming the known ones
            train = load_dataset(cfg.dataset, cfg.data_root, train=True)
            test = load_dataset(cfg.dataset, cfg.data_root, train=False)
        c, h, w = input_shape(cfg.model)
        dc, dh, dw = train.info.shape
        if dc != c or dh < h or dw < w:
            raise UsageError(f"model {cfg.model} expects {c}x{h}x{w} input but dataset {cfg.dataset} has "
                             f"{dc}x{dh}x{dw} images")
        return train, test

    def _open_log(self) -> RunLog | None:
        if self.rank != 0 or not self.cfg.log:
            return None
        path = Path(self.cfg.log)
        if self.cfg.resume and path.exists():
            old = read_run_log(path)
            self._check_compatible(old.header.get("config", {}), old.header.get("ranks"), f"run log {path}")
            self.last_eval_step = max([self.last_eval_step] + [int(e["step"]) for e in old.evals])
            return RunLog.resume(path)
        return RunLog(path, self._header())

    def _check_compatible(self, config: dict, ranks: Any, what: str) -> None:
        mine = self.cfg.to_dict()
        for key in _RESUME_KEYS:
            if config.get(key) != mine[key]:
                raise UsageError(f"{what} was written with {key}={config.get(key)!r}, this run has {mine[key]!r}")
        if ranks != self.world:
            raise UsageError(f"{what} was written by {ranks} ranks, this run has {self.world}")

    def _check_checkpoint(self, ckpt: dict) -> dict:
        self._check_compatible(ckpt.get("config", {}), ckpt.get("world"), f"checkpoint {self.cfg.checkpoint}")
        if ckpt.get("step", 0) > self.total_steps:
            raise UsageError(f"checkpoint {self.cfg.checkpoint} is at step {ckpt['step']}, beyond the "
                             f"{self.total_steps} steps of this run")
        return ckpt

    def _header(self) -> dict[str, Any]:
        info = self.train_set.info
        return {"algo": self.cfg.algo, "config": self.cfg.to_dict(), "versions": _versions(self.comm),
                "ranks": self.world, "ranks_per_node": self.cfg.ranks_per_node,
                "model_parameters": sum(p.numel() for p in self.params),
                "dataset": {"label": info.label, "n": info.n, "checksum": info.checksum, "path": info.path,
                            "data_root": (None if self.cfg.dataset == "synthetic"
                                          else str(data_root(self.cfg.data_root)))},
                "steps_per_epoch": self.steps_per_epoch, "total_steps": self.total_steps,
                "samples_per_step": self.cfg.batch * self.world, "command": " ".join(sys.argv),
                "device": describe_device(self.device), "backend": self.coll.name, "backend_library": self.coll.library,
                "algorithm": self.algo.header()}

    # ------------------------------------------------------------------ data

    def _prepare(self, x: torch.Tensor, train: bool) -> torch.Tensor:
        _, h, w = input_shape(self.cfg.model)
        if train and self.cfg.augment:
            pad = 4 if x.shape[-1] == w else 0
            return crop_flip(x, h, pad=pad, generator=self.aug_gen, flip=True)
        if x.shape[-2] != h or x.shape[-1] != w:
            return crop_flip(x, h)  # centre crop
        return x

    def batch(self, epoch: int, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        """This rank's (x, y) for step `index` of `epoch`."""
        if epoch != self._perm_epoch:
            self._perm, self._perm_epoch = epoch_permutation(len(self.train_set), self.cfg.seed, epoch), epoch
        idx = batch_indices(self._perm, self.cfg.batch, self.rank, self.world, index)
        x, y = self.train_set[torch.from_numpy(idx)]
        return self._prepare(x, True).to(self.device), y.to(self.device)

    # ------------------------------------------------------------------ evaluation, buffers

    def sync_buffers(self) -> None:
        """Collective: average floating-point buffers (BatchNorm running statistics) over all ranks."""
        bufs = [b for b in self.model.buffers() if b.is_floating_point()]
        if bufs and self.world > 1:
            flat = torch.cat([b.reshape(-1) for b in bufs]).cpu()
            self.comm.Allreduce(_mpi_in_place(), flat.numpy(), op=_mpi_sum())
            flat /= self.world
            off = 0
            for b in bufs:
                b.copy_(flat[off:off + b.numel()].view_as(b))
                off += b.numel()

    @torch.no_grad()
    def evaluate(self) -> tuple[float, float]:
        """(mean cross-entropy, accuracy 0..1) of this rank's model on the test split."""
        self.model.eval()
        total, correct, n = 0.0, 0, 0
        for x, y in batches(self.test_set, np.arange(len(self.test_set)), self.cfg.eval_batch):
            y = y.to(self.device)
            out = self.model(self._prepare(x, False).to(self.device))
            total += float(F.cross_entropy(out, y, reduction="sum"))
            correct += int((out.argmax(1) == y).sum())
            n += len(y)
        self.model.train()
        return total / n, correct / n

    # ------------------------------------------------------------------ checkpoints

    def save(self, steps_done: int) -> None:
        """Collective: gather every rank's state; rank 0 writes the checkpoint atomically."""
        mine: dict[str, Any] = {"rng": rng_state(), "aug_gen": self.aug_gen.get_state(),
                                "algo": self.algo.rank_state(),
                                "buffers": {k: b.clone() for k, b in self.model.named_buffers()}}
        if not self.algo.replicated:
            mine["model"] = {k: v.clone() for k, v in self.model.state_dict().items()}
            mine["optimizer"] = self.optimizer.state_dict()
        states = gather_to_root(self.comm, mine)
        if self.rank == 0:
            self._write_checkpoint(steps_done, states)
        # no rank runs past a checkpoint before it is on disk: a job killed later resumes from it or a newer one
        self.comm.Barrier()

    def _write_checkpoint(self, steps_done: int, states: list[dict[str, Any]]) -> None:
        shared: dict[str, Any] = {"algo": self.algo.shared_state(),
                                  "epoch_loss": (self.epoch_loss_sum, self.epoch_loss_count),
                                  "last_eval_step": self.last_eval_step}
        if self.algo.replicated:
            shared["model"] = self.model.state_dict()
            shared["optimizer"] = self.optimizer.state_dict()
        save_checkpoint(self.cfg.checkpoint, {
            "format": FORMAT, "algo": self.cfg.algo, "config": self.cfg.to_dict(), "world": self.world,
            "step": steps_done, "time": time.time(), "shared": shared, "ranks": states})

    def _restore(self, ckpt: dict) -> None:
        shared, mine = ckpt["shared"], ckpt["ranks"][self.rank]
        model_state = shared["model"] if self.algo.replicated else mine["model"]
        opt_state = shared["optimizer"] if self.algo.replicated else mine["optimizer"]
        with torch.no_grad():
            self.model.load_state_dict(model_state)
            for k, b in self.model.named_buffers():
                b.copy_(mine["buffers"][k])
        self.optimizer.load_state_dict(opt_state)
        restore_rng(mine["rng"])
        self.aug_gen.set_state(mine["aug_gen"])
        self.algo.load_state(shared["algo"], mine["algo"])
        self.epoch_loss_sum, self.epoch_loss_count = shared["epoch_loss"]
        self.last_eval_step = max(self.last_eval_step, int(shared["last_eval_step"]))
        self.start_step = int(ckpt["step"])

    # ------------------------------------------------------------------ the loop

    def _position(self, step: int) -> StepPosition:
        epoch, index = divmod(step, self.steps_per_epoch)
        final = min(self.steps_per_epoch, self.total_steps - epoch * self.steps_per_epoch) - 1
        return StepPosition(step, epoch, index, final, step == self.total_steps - 1)

    def run(self) -> None:
        """Train from start_step to total_steps, logging, evaluating and checkpointing on the way."""
        cfg = self.cfg
        from tqdm import tqdm

        bar = tqdm(total=self.total_steps, initial=self.start_step, disable=not (cfg.progress and self.rank == 0),
                   desc=f"{cfg.algo} x{self.world}", unit="step", mininterval=1.0, file=sys.stderr)
        wall0, steps_run, bytes_total = time.perf_counter(), 0, 0
        try:
            for step in range(self.start_step, self.total_steps):
                pos = self._position(step)
                for hook in self.before_step:
                    hook(self, step)
                self.timer.start()
                x, y = self.batch(pos.epoch, pos.index)
                lr = self.lr_schedule.lr_at(step / self.steps_per_epoch)
                for group in self.optimizer.param_groups:
                    group["lr"] = lr
                result = self.algo.step(self, x, y, pos)
                rec = self.timer.end_step()
                steps_run += 1
                bytes_total += result.bytes_sent
                self.epoch_loss_sum += result.loss
                self.epoch_loss_count += 1
                if self.log is not None:
                    self.log.step(step=step, epoch=pos.epoch, loss=result.loss, samples=cfg.batch * self.world,
                                  **{k: rec[k] for k in _TIME_KEYS}, bytes_sent=result.bytes_sent,
                                  lr=lr, **result.extra)
                self._check_divergence(step, pos, result.loss, wall0, steps_run, bytes_total)
                bar.update(1)
                if self.rank == 0 and bar.n % 20 == 0:
                    bar.set_postfix(loss=f"{result.loss:.4f}", refresh=False)
                train_loss = None
                if pos.last:
                    train_loss = self.comm.allreduce(self.epoch_loss_sum / self.epoch_loss_count) / self.world
                    if math.isfinite(train_loss):  # a diverged run trained on (--allow-divergence): no schedule
                        self.algo.end_epoch(self, pos.epoch, train_loss)
                    self.epoch_loss_sum, self.epoch_loss_count = 0.0, 0
                if pos.last or pos.last_of_run or (cfg.eval_every and (step + 1) % cfg.eval_every == 0):
                    self.sync_buffers()
                    if self.rank == 0 and step > self.last_eval_step:
                        test_loss, test_acc = self.evaluate()
                        record = {"step": step, "epoch": (step + 1) / self.steps_per_epoch,
                                  "test_loss": test_loss, "test_acc": test_acc}
                        if train_loss is not None:
                            record["train_loss"] = train_loss
                        if self.log is not None:
                            self.log.eval(**record)
                        bar.write(f"step {step + 1}/{self.total_steps}: test loss {test_loss:.4f}, "
                                  f"accuracy {100 * test_acc:.2f}%", file=sys.stderr)
                    self.last_eval_step = max(self.last_eval_step, step)
                if cfg.checkpoint and ((cfg.checkpoint_every and (step + 1) % cfg.checkpoint_every == 0)
                                       or pos.last_of_run):
                    self.save(step + 1)
        finally:
            bar.close()
        self.coll.close()
        if self.log is not None:
            self._summary(steps_run, wall0, bytes_total)
            self.log.close()

    def _summary(self, steps_run: int, wall0: float, bytes_total: int) -> None:
        t = self.timer.totals
        self.log.summary(steps_run=steps_run, first_step=self.start_step, total_steps=self.total_steps,
                         wall_s=time.perf_counter() - wall0, mean_t_step=t["t_step"] / max(steps_run, 1),
                         bytes_sent_total_rank0=bytes_total, diverged=self.diverged_at is not None,
                         diverged_at_step=self.diverged_at)

    def _check_divergence(self, step: int, pos: StepPosition, loss: float, wall0: float, steps_run: int,
                          bytes_total: int) -> None:
        """Stop every rank alike once training diverged (non-finite loss or gradients), unless
        --allow-divergence. Where the loss is averaged over all ranks (``loss_is_global``, SSGD and
        TernGrad) a non-finite loss is seen by every rank at the same step; otherwise (DASO: node
        means) and for gradients, the ranks agree at each epoch end by an Allreduce(MIN) of their
        first bad step, so no rank leaves while others wait in a collective."""
        if self.first_bad_step is None and not (math.isfinite(loss) and _grads_finite(self.params)):
            self.first_bad_step = step
        if self.diverged_at is not None:
            return
        if getattr(self.algo, "loss_is_global", True) and not math.isfinite(loss):
            self.diverged_at = step  # the same loss on every rank: no collective needed
        elif pos.last:
            from mpi4py import MPI

            none = self.total_steps
            first = self.comm.allreduce(none if self.first_bad_step is None else self.first_bad_step, op=MPI.MIN)
            self.diverged_at = None if first == none else int(first)
        if self.diverged_at is None or self.cfg.allow_divergence:
            return
        if self.log is not None:
            self._summary(steps_run, wall0, bytes_total)
            self.log.close()
        raise DivergenceError(
            f"training diverged: non-finite loss or gradients at step {self.diverged_at} (epoch "
            f"{self.diverged_at // self.steps_per_epoch}); stopped at step {step}"
            + (f", run log {self.cfg.log}" if self.cfg.log else "")
            + "; pass --allow-divergence to train on")


def _grads_finite(params: Sequence[torch.Tensor]) -> bool:
    """Whether every gradient element of `params` is finite (no NaN or infinity)."""
    return all(bool(torch.isfinite(p.grad).all()) for p in params if p.grad is not None)


def _mpi_sum() -> Any:
    from mpi4py import MPI

    return MPI.SUM


def _mpi_in_place() -> Any:
    from mpi4py import MPI

    return MPI.IN_PLACE


def _bind(params: Sequence[torch.Tensor], views: Sequence[torch.Tensor]) -> None:
    """Make each parameter's .grad the bucket view, so backward accumulates into the bucket."""
    for p, v in zip(params, views):
        p.grad = v


def _forward_backward(tr: Trainer, x: torch.Tensor, y: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """Mean cross-entropy of the batch; backward of scale * loss (accumulates into .grad)."""
    loss = F.cross_entropy(tr.model(x), y)
    (loss if scale == 1.0 else loss * scale).backward()
    return loss.detach()


def _allreduce_sum(comm: Any, buckets: tcomm.FlatBuckets) -> None:
    """In-place Allreduce(SUM) of every bucket (no extra pass over the data afterwards)."""
    for flat in buckets.buckets:
        if flat.numel():
            comm.Allreduce(_mpi_in_place(), flat.numpy(), op=_mpi_sum())


# ------------------------------------------------------------------------------------------- SSGD


class SSGD:
    """Synchronous SGD: backward writes into fused float32 buckets (trainers.grad_buckets), each bucket
    summed by the --backend's allreduce as soon as backprop has produced it (--overlap on) or after
    backward (off); waited for before the optimizer step.

    Each rank back-propagates loss / K (the factor rides on the first backward operation), so the
    sum over ranks is already the mean gradient and no pass over the buckets follows the reduction.
    For K a power of two this is bit-identical to averaging after the sum. The loss / K rides in one
    extra slot of the last bucket. Logged per step: t_comm (the timer's comm phase: waiting after
    backward, i.e. the exposed communication), t_comm_exposed (the same, from GradBuckets) and
    t_comm_full (the time the backend was busy with the step's buckets, overlapped or not)."""

    name = "ssgd"
    replicated = True

    def __init__(self, tr: Trainer) -> None:
        self.buckets = GradBuckets(tr.params, tr.coll, bucket_bytes=tr.cfg.bucket_bytes, overlap=tr.cfg.overlap,
                                   op="sum", extra_numel=1)
        self.loss_slot = self.buckets.extra
        # ring bytes per step; the loss slot is not counted
        self.nbytes = tcomm.ring_allreduce_bytes(4 * sum(p.numel() for p in tr.params), tr.world)
        self.scale = 1.0 / tr.world

    def step(self, tr: Trainer, x: torch.Tensor, y: torch.Tensor, pos: StepPosition) -> StepResult:
        reduce = tr.world > 1
        with tr.timer.phase("compute"):
            self.buckets.zero_grad()
            loss = F.cross_entropy(tr.model(x), y)
            self.loss_slot.copy_(loss.detach().reshape(1) * self.scale)
            if reduce:
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


# ---------------------------------------------------------------------------------------- TernGrad


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
        self.exchange = cfg.tern_exchange
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


# -------------------------------------------------------------------------------------------- DASO


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

    def end_epoch(self, tr: Trainer, epoch: int, loss: float) -> None:
        self.schedule.end_epoch(epoch, loss)

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


# ----------------------------------------------------------------------------------- entry points

SYNC_ALGORITHMS: dict[str, Callable[[Trainer], SyncAlgorithm]] = {"ssgd": SSGD, "terngrad": TernGrad, "daso": DASO}

_GPU_READY = ("ssgd", "daso")
"""Algorithms that run on any --device with any --backend; TernGrad's encoder and exchanges work on host
memory (CPU ranks; --backend mpi, or gloo through trainers.collectives.buffers.BufferComm)."""


def _run(name: str, cfg: RunConfig, comm: Any) -> None:
    if cfg.algo != name:
        raise UsageError(f"run_{name} got a config for algo {cfg.algo!r}")
    Trainer(cfg, comm, SYNC_ALGORITHMS[name]).run()


def run_ssgd(cfg: RunConfig, comm: Any) -> None:
    """Synchronous SGD with fused-bucket Allreduce on comm (every rank calls it)."""
    _run("ssgd", cfg, comm)


def run_terngrad(cfg: RunConfig, comm: Any) -> None:
    """TernGrad on comm (every rank calls it)."""
    _run("terngrad", cfg, comm)


def run_daso(cfg: RunConfig, comm: Any) -> None:
    """DASO on comm with cfg.ranks_per_node ranks per pretend node (every rank calls it)."""
    _run("daso", cfg, comm)
