"""What the asynchronous trainers share: the configuration, the algorithm registry, one worker's
gradient step on a flat parameter vector, its deterministic data and delay streams, evaluation.

The MPI parameter server (trainers/ps.py) and the event-driven simulator (trainers/simulate.py)
both build everything from one ``AsyncConfig`` through the functions here, so that a worker's k-th
gradient is the same computation in both: the same batch (``BatchStream``), the same dropout and
augmentation seed (``step_seed(seed, worker, k)``), the same model code (``FlatModel``), and the
same master rule (``build_rule``) driven in the same order.

Example::

    cfg = AsyncConfig(algo="ga", workers=4, model="gem-cnn", dataset="synthetic", steps=100)
    fm = FlatModel.build(cfg)                 # model + flat parameter / gradient views
    rule = build_rule(cfg, fm.initial, fm.segments)
    stream = BatchStream(load_data(cfg)[0], cfg, worker=0)
    g, loss = fm.gradient(rule.initial_params_for(0), *stream.next(), step_seed(cfg.seed, 0, 0))

Units: times are seconds (the simulator's are simulated seconds, the parameter server's injected
delays are real seconds); epochs are passes over the training set by all workers together
(``data="shard"``) or by each worker (``data="replicate"``, the GEM paper's "every worker
contributes a single epoch").
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import torch
from torch import Tensor

from perfmodel.stragglers import CVB
from trainers.data import Dataset, batches, crop_flip, data_root, load_dataset, shard_indices, synthetic
from trainers.gem import GEM_CODES, WORKERS, make_worker
from trainers.masters import RULES, MasterRule, make_rule
from trainers.schedules import LRSchedule

__all__ = [
    "ConfigError",
    "AlgoSpec",
    "ALGOS",
    "DATA_MODES",
    "DELAY_KINDS",
    "AsyncConfig",
    "Plan",
    "FlatModel",
    "NullModel",
    "BatchStream",
    "DelaySchedule",
    "step_seed",
    "load_data",
    "build_model_for",
    "build_rule",
    "build_worker_rule",
    "build_schedule",
    "make_plan",
    "evaluate",
    "add_async_arguments",
    "config_from_args",
    "versions",
    "StrictParser",
    "StepWindow",
    "WindowStats",
    "rule_summary",
    "header_fields",
]


class ConfigError(ValueError):
    """A bad asynchronous-training configuration; the message is one line naming the argument."""


# --------------------------------------------------------------------------- algorithms


@dataclass(frozen=True)
class AlgoSpec:
    """An asynchronous algorithm: the master rule (trainers.masters) and, for the GEM family,
    the worker-side rescaling (trainers.gem) whose output the "add" master sums."""

    name: str
    master: str
    worker: str | None = None

    def __post_init__(self) -> None:
        if self.master not in RULES:
            raise ValueError(f"master must be one of {', '.join(RULES)}, got {self.master!r}")
        if self.worker is not None and self.worker not in WORKERS:
            raise ValueError(f"worker must be None or one of {', '.join(WORKERS)}, got {self.worker!r}")


ALGOS: dict[str, AlgoSpec] = {
    spec.name: spec
    for spec in (
        *(AlgoSpec(name, name) for name in RULES if name != "add"),
        AlgoSpec("gem", "add", "gem"),
        AlgoSpec("downpour", "add", "downpour"),
        AlgoSpec("adaptive-staleness", "add", "adaptive-staleness"),
    )
}

DATA_MODES = ("shard", "replicate")
DELAY_KINDS = ("homogeneous", "heterogeneous", "none")
NO_MODEL = "none"


# --------------------------------------------------------------------------- configuration


def _positive_int(name: str, value: Any, lo: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ConfigError(f"{name} must be an integer >= {lo}, got {value!r}")


def _number(name: str, value: Any, lo: float, *, strict: bool = False, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or (value <= lo if strict else value < lo):
        raise ConfigError(f"{name} must be a finite number {'>' if strict else '>='} {lo}, got {value!r}")


@dataclass(frozen=True)
class AsyncConfig:
    """One asynchronous run (simulated or over MPI).

    algo: key of ALGOS. workers: N. model: a trainers.models name, or "none" for the
    staleness-only mode (no model, zero-cost zero gradients: only the arrival process and the
    master's bookkeeping run). dataset: mnist, cifar10, cifar100 or synthetic (synthetic_n images
    shaped like the model's input); data_root: dataset folder (None: trainers.data's default).
    batch: per-worker batch. lr, momentum, nesterov, weight_decay, n (softsync), gap: the master
    rule's hyperparameters, passed where the rule has them; for gem/downpour/adaptive-staleness
    the worker computes Delta = -lr * (g + weight_decay * params) and momentum is GEM's mu.
    kappa, gem_code: GEM's proxy amplification and its setting, one of trainers.gem.GEM_CODES:
    "paper" (pull after commit, eps 1e-16, no clamp), "paper-clamp" (pull after commit, pi clamped
    to [0, 5], eps 1e-12) or "authors" (the authors' code: pull before commit, |Delta + eps|,
    clamp [0, 5], eps 1e-12). epochs or steps: the budget (exactly one). With data="shard"
    every worker reads its 1/N shard of each epoch's permutation and the run ends after
    round(epochs * gradients_per_epoch) (or steps) gradients in total, from whichever workers
    deliver them; with data="replicate" every worker reads the whole set in its own order and
    contributes round(epochs * batches_per_set) gradients (steps: in total, as with shard).
    warmup_epochs, milestones, lr_decay: trainers.schedules.LRSchedule. delays: CVB kind of the
    per-batch time model (perfmodel.stragglers.CVB.named) or "none" (every batch delay_mean);
    delay_mean: mu in seconds. eval_every: epochs between evaluations (0: only at the end);
    eval_limit: test images used (None: all). augment: random crops/flips for CIFAR.
    log_every: gradients per step line (0: about 1000 lines per run). seed: everything.
    """

    algo: str = "asgd"
    workers: int = 4
    model: str = "gem-cnn"
    dataset: str = "synthetic"
    data_root: str | None = None
    synthetic_n: int = 1024
    batch: int = 64
    lr: float = 0.1
    momentum: float = 0.9
    nesterov: bool = True
    weight_decay: float = 0.0
    n: int | None = None
    modulate: bool = True
    gap: str = "parameter"
    kappa: float = 1.0
    gem_code: str = "paper"
    epochs: float | None = None
    steps: int | None = None
    data: str = "shard"
    warmup_epochs: float = 0.0
    milestones: tuple[float, ...] = ()
    lr_decay: float = 0.1
    delays: str = "homogeneous"
    delay_mean: float = 1.0
    eval_every: float = 1.0
    eval_limit: int | None = None
    augment: bool = False
    log_every: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise ConfigError(f"unknown algorithm {self.algo!r}; choose one of: {', '.join(ALGOS)}")
        _positive_int("workers", self.workers)
        from trainers.models import MODELS

        if self.model != NO_MODEL and self.model not in MODELS:
            raise ConfigError(f"unknown model {self.model!r}; choose one of: {NO_MODEL}, {', '.join(MODELS)}")
        from trainers.data import DATASETS

        if self.dataset != "synthetic" and self.dataset not in DATASETS:
            raise ConfigError(f"unknown dataset {self.dataset!r}; choose one of: synthetic, {', '.join(DATASETS)}")
        _positive_int("synthetic_n", self.synthetic_n)
        _positive_int("batch", self.batch)
        _number("lr", self.lr, 0.0, strict=True)
        _number("momentum", self.momentum, 0.0)
        if self.momentum >= 1.0:
            raise ConfigError(f"momentum must be in [0, 1), got {self.momentum!r}")
        _number("weight_decay", self.weight_decay, 0.0)
        if self.n is not None:
            _positive_int("n", self.n)
            if self.n > self.workers:
                raise ConfigError(
                    f"n must be in 1..workers={self.workers} (softsync collects floor(workers/n) "
                    f"gradients per update), got n={self.n}"
                )
            if ALGOS[self.algo].master != "softsync":
                raise ConfigError(f"n is the softsync splitting parameter; algorithm {self.algo!r} does not take it")
        if self.gap not in ("parameter", "layer", "global"):
            raise ConfigError(f"gap must be one of parameter, layer, global, got {self.gap!r}")
        _number("kappa", self.kappa, 0.0, strict=True)
        if self.gem_code not in GEM_CODES:
            raise ConfigError(f"gem_code must be one of {', '.join(GEM_CODES)}, got {self.gem_code!r}")
        if (self.epochs is None) == (self.steps is None):
            raise ConfigError("give exactly one budget: epochs or steps")
        if self.epochs is not None:
            _number("epochs", self.epochs, 0.0, strict=True)
            if self.model == NO_MODEL:
                raise ConfigError("model 'none' (staleness only) has no data: give steps, not epochs")
        if self.steps is not None:
            _positive_int("steps", self.steps)
        if self.data not in DATA_MODES:
            raise ConfigError(f"data must be one of {', '.join(DATA_MODES)}, got {self.data!r}")
        _number("warmup_epochs", self.warmup_epochs, 0.0)
        object.__setattr__(self, "milestones", tuple(float(m) for m in self.milestones))
        if any(b <= a for a, b in zip(self.milestones, self.milestones[1:])) or any(m < 0 for m in self.milestones):
            raise ConfigError(f"milestones must be strictly increasing epochs >= 0, got {self.milestones!r}")
        _number("lr_decay", self.lr_decay, 0.0, strict=True)
        if self.delays not in DELAY_KINDS:
            raise ConfigError(f"delays must be one of {', '.join(DELAY_KINDS)}, got {self.delays!r}")
        _number("delay_mean", self.delay_mean, 0.0, strict=True)
        _number("eval_every", self.eval_every, 0.0)
        if self.eval_limit is not None:
            _positive_int("eval_limit", self.eval_limit)
        _positive_int("log_every", self.log_every, lo=0)
        _positive_int("seed", self.seed, lo=0)

    @property
    def spec(self) -> AlgoSpec:
        return ALGOS[self.algo]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly copy (for the run-log header)."""
        out = asdict(self)
        out["milestones"] = list(self.milestones)
        return out


# --------------------------------------------------------------------------- seeds, data, delays


def step_seed(seed: int, worker: int, k: int) -> int:
    """The torch seed of worker ``worker``'s k-th gradient (dropout, augmentation): a fixed
    function of (seed, worker, k), so it does not depend on the order in which workers run."""
    return ((int(seed) * 1_000_003 + int(worker)) * 1_000_003 + int(k)) % (2**63)


def load_data(cfg: AsyncConfig, *, test: bool = True) -> tuple[Dataset | None, Dataset | None]:
    """(train, test) datasets of the configuration (test None when ``test`` is False);
    (None, None) for model "none". Synthetic: synthetic_n training and synthetic_n // 4 test images."""
    if cfg.model == NO_MODEL:
        return None, None
    if cfg.dataset == "synthetic":
        train = synthetic(cfg.model, n=cfg.synthetic_n, seed=cfg.seed, train=True)
        held_out = synthetic(cfg.model, n=max(cfg.synthetic_n // 4, 1), seed=cfg.seed, train=False) if test else None
        return train, held_out
    train = load_dataset(cfg.dataset, cfg.data_root, train=True)
    return train, load_dataset(cfg.dataset, cfg.data_root, train=False) if test else None


class BatchStream:
    """Worker ``worker``'s endless, deterministic sequence of batches.

    data="shard": epoch e is ``shard_indices(n, worker, N, seed, e)`` cut into batches (the last
    one may be smaller). data="replicate": epoch e is worker's own permutation of all n images
    (numpy default_rng([seed, 7, worker, e])). ``next()`` returns the batch and advances;
    ``k`` is the number of batches handed out so far.
    """

    def __init__(self, dataset: Dataset, cfg: AsyncConfig, worker: int) -> None:
        self.dataset = dataset
        self.cfg = cfg
        self.worker = worker
        self.n = len(dataset)
        if cfg.data == "shard" and self.n < cfg.workers:
            raise ConfigError(f"the training set has {self.n} images, fewer than workers={cfg.workers}")
        per = self.n // cfg.workers if cfg.data == "shard" else self.n
        self.batches_per_epoch = -(-per // cfg.batch)
        self.k = 0
        self._epoch = -1
        self._indices = np.empty(0, dtype=np.int64)
        self._crop = _crop_size(cfg, dataset)

    def _epoch_indices(self, epoch: int) -> np.ndarray:
        if self.cfg.data == "shard":
            return shard_indices(self.n, self.worker, self.cfg.workers, self.cfg.seed, epoch)
        return np.random.default_rng([self.cfg.seed, 7, self.worker, epoch]).permutation(self.n)

    def next(self) -> tuple[Tensor, Tensor]:
        """The next batch (x float32 (B, C, H, W), y int64 (B,)), augmented if configured."""
        epoch, j = divmod(self.k, self.batches_per_epoch)
        if epoch != self._epoch:
            self._indices = self._epoch_indices(epoch)
            self._epoch = epoch
        idx = torch.from_numpy(self._indices[j * self.cfg.batch:(j + 1) * self.cfg.batch])
        x, y = self.dataset[idx]
        if self._crop is not None or self.cfg.augment:
            gen = None
            if self.cfg.augment:
                gen = torch.Generator().manual_seed(step_seed(self.cfg.seed, self.worker, self.k))
            size = self._crop if self._crop is not None else x.shape[-1]
            pad = 4 if (self.cfg.augment and self._crop is None) else 0
            x = crop_flip(x, size, pad=pad, generator=gen, flip=self.cfg.augment)
        self.k += 1
        return x, y


def _crop_size(cfg: AsyncConfig, dataset: Dataset) -> int | None:
    """Crop to the model's input size when the images are larger (CifarNet's 24x24)."""
    if cfg.model == NO_MODEL:
        return None
    from trainers.models import input_shape

    want = input_shape(cfg.model)[-1]
    return want if dataset.images.shape[-1] > want else None


class DelaySchedule:
    """Per-batch execution times of N workers from the gamma CVB model, deterministic by seed.

    One numpy Generator (default_rng([seed, 0xDE1A])) draws the machine means once
    (CVB.machine_means) and then the task times in chunks of ``chunk`` rows of N
    (CVB.task_times); ``time(worker, k)`` is row k, column worker, so a worker's k-th batch time
    does not depend on the order in which workers run. delays="none": every time is delay_mean.
    """

    def __init__(self, cfg: AsyncConfig, chunk: int = 1024) -> None:
        self.workers = cfg.workers
        self.mean = float(cfg.delay_mean)
        self.kind = cfg.delays
        self.chunk = int(chunk)
        self.model = None if cfg.delays == "none" else CVB.named(cfg.delays, self.mean)
        self._rng = np.random.default_rng([cfg.seed, 0xDE1A])
        self.means = (np.full(self.workers, self.mean) if self.model is None
                      else self.model.machine_means(self.workers, self._rng))
        self._chunks: list[np.ndarray] = []

    def _ensure(self, rows: int) -> None:
        while len(self._chunks) * self.chunk < rows:
            if self.model is None:
                block = np.full((self.chunk, self.workers), self.mean)
            else:
                block = self.model.task_times(self.means, self._rng, size=self.chunk)
            self._chunks.append(np.ascontiguousarray(block, dtype=np.float64))

    def time(self, worker: int, k: int) -> float:
        """Seconds of worker's k-th batch (k >= 0)."""
        self._ensure(k + 1)
        return float(self._chunks[k // self.chunk][k % self.chunk, worker])

    def rows(self, stop: int) -> np.ndarray:
        """Rows 0..stop-1 as a (stop, N) array (row k: every worker's k-th batch time)."""
        self._ensure(stop)
        return np.concatenate(self._chunks)[:stop] if stop else np.empty((0, self.workers))


# --------------------------------------------------------------------------- the model as a flat vector


def build_model_for(cfg: AsyncConfig) -> torch.nn.Module:
    """The configuration's network with the run's initial weights (torch.manual_seed(seed))."""
    from trainers.models import build_model

    torch.manual_seed(cfg.seed)
    return build_model(cfg.model)


class FlatModel:
    """A model whose parameters and gradients are views of two flat float32 vectors.

    ``gradient(params, x, y, seed)`` copies ``params`` into the model (one copy), runs forward and
    backward in train mode under ``torch.manual_seed(seed)`` and returns (flat gradient, loss).
    The returned gradient is the live buffer: the next call overwrites it. Memory beyond the
    model is two vectors, so a simulator holds only its workers' flat parameters. On a GPU
    (``device``) the model and its two vectors live there; ``params`` come from and the gradient goes
    back to the CPU (one copy each way per gradient), where the master rules keep their vectors.
    """

    def __init__(self, model: torch.nn.Module, device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)
        self.model = model.to(self.device)
        params = [p for p in model.parameters() if p.requires_grad]
        self.segments = tuple((name, p.numel()) for name, p in model.named_parameters() if p.requires_grad)
        self.numel = sum(p.numel() for p in params)
        self.flat = torch.empty(self.numel, dtype=torch.float32, device=self.device)
        self.flat_grad = torch.zeros(self.numel, dtype=torch.float32, device=self.device)
        offset = 0
        for p in params:
            n = p.numel()
            self.flat[offset:offset + n].copy_(p.detach().reshape(-1))
            p.data = self.flat[offset:offset + n].view_as(p)
            p.grad = self.flat_grad[offset:offset + n].view_as(p)
            offset += n
        self.initial = self.flat.cpu().clone()
        self.has_batchnorm = any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())

    @classmethod
    def build(cls, cfg: AsyncConfig, device: torch.device | str = "cpu") -> FlatModel | NullModel:
        """FlatModel of cfg.model with the run's initial weights on ``device``, or NullModel for model "none"."""
        return NullModel() if cfg.model == NO_MODEL else cls(build_model_for(cfg), device)

    def load(self, params: Tensor) -> None:
        """Copy a flat parameter vector into the model."""
        self.flat.copy_(params)

    def gradient(self, params: Tensor, x: Tensor, y: Tensor, seed: int) -> tuple[Tensor, float]:
        """Mean cross-entropy gradient on (x, y) at ``params`` (flat float32) and the loss."""
        self.flat.copy_(params)
        self.flat_grad.zero_()
        self.model.train()
        torch.manual_seed(seed)
        loss = torch.nn.functional.cross_entropy(self.model(x.to(self.device)), y.to(self.device))
        loss.backward()
        grad = self.flat_grad if self.device.type == "cpu" else self.flat_grad.cpu()
        return grad, float(loss.detach())


class NullModel:
    """The staleness-only stand-in: one zero parameter, zero gradients, loss 0, no cost."""

    numel = 1
    segments = (("none", 1),)
    has_batchnorm = False

    def __init__(self) -> None:
        self.initial = torch.zeros(1)
        self.flat_grad = torch.zeros(1)

    def load(self, params: Tensor) -> None:
        pass

    def gradient(self, params: Tensor, x: Any, y: Any, seed: int) -> tuple[Tensor, float]:
        return self.flat_grad, 0.0


# --------------------------------------------------------------------------- rules, schedule, budget


def build_rule(cfg: AsyncConfig, params: Tensor, segments: tuple | None = None) -> MasterRule:
    """The master rule of cfg.algo on ``params`` (copied), with every configuration field the
    rule's Hyper dataclass has (lr, momentum, nesterov, weight_decay, n, gap, modulate)."""
    spec = cfg.spec
    allowed = {f.name for f in fields(RULES[spec.master].Hyper)}
    values = {"lr": cfg.lr, "momentum": cfg.momentum, "nesterov": cfg.nesterov,
              "weight_decay": cfg.weight_decay, "n": cfg.n, "gap": cfg.gap, "modulate": cfg.modulate}
    hyper = {k: v for k, v in values.items() if k in allowed}
    try:
        return make_rule(spec.master, params, cfg.workers, segments=segments if cfg.gap == "layer" else None, **hyper)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def build_worker_rule(cfg: AsyncConfig) -> Any:
    """One worker's rescaling state (GEMWorker, DownpourWorker, ...) or None for master-side rules."""
    name = cfg.spec.worker
    if name is None:
        return None
    if name == "gem":
        return make_worker("gem", code=cfg.gem_code, momentum=cfg.momentum, kappa=cfg.kappa)
    return make_worker(name)


def build_schedule(cfg: AsyncConfig) -> LRSchedule:
    """Warm-up from lr/N over warmup_epochs, then x lr_decay at each milestone."""
    return LRSchedule(base_lr=cfg.lr, n_workers=cfg.workers, warmup_epochs=cfg.warmup_epochs,
                      milestones=cfg.milestones, gamma=cfg.lr_decay)


@dataclass(frozen=True)
class Plan:
    """How long a run is. per_epoch: gradients in one epoch (all workers); total: gradients
    the master applies, or None when every worker has its own budget per_worker (replicate
    mode with epochs); eval_points: gradient counts after which to evaluate (the last is the end).
    Only the first per_worker-th gradients of a worker are accepted."""

    per_epoch: int
    total: int | None
    per_worker: int | None
    eval_points: tuple[int, ...]
    n_workers: int = 1

    @property
    def expected_total(self) -> int:
        """Gradients the run applies when no worker stops early."""
        return self.total if self.total is not None else self.per_worker * self.n_workers

    def epoch_of(self, gradients: int) -> float:
        """Epochs done after ``gradients`` applied gradients."""
        return gradients / self.per_epoch


def make_plan(cfg: AsyncConfig, train: Dataset | None) -> Plan:
    """The run's budget and evaluation points from the data size and epochs/steps."""
    if train is None:
        per_epoch = cfg.workers
    else:
        per = len(train) // cfg.workers if cfg.data == "shard" else len(train)
        if per < 1:
            raise ConfigError(f"the training set has {len(train)} images, fewer than workers={cfg.workers}")
        per_epoch = cfg.workers * -(-per // cfg.batch)
    per_worker = None
    if cfg.steps is not None:
        total = cfg.steps
    elif cfg.data == "replicate":
        per_worker = max(1, round(cfg.epochs * per_epoch / cfg.workers))
        total = None
    else:
        total = max(1, round(cfg.epochs * per_epoch))
    expected = total if total is not None else per_worker * cfg.workers
    points: list[int] = []
    if cfg.eval_every > 0 and train is not None:
        every = max(1, round(cfg.eval_every * per_epoch))
        points = list(range(every, expected, every))
    points.append(expected)
    return Plan(per_epoch, total, per_worker, tuple(points), cfg.workers)


# --------------------------------------------------------------------------- evaluation


@torch.no_grad()
def evaluate(fm: FlatModel | NullModel, params: Tensor, test: Dataset | None, cfg: AsyncConfig,
             train: Dataset | None = None, batch: int = 500, calibration_batches: int = 20) -> dict[str, float]:
    """Test loss and accuracy (fraction) of ``params``.

    Models with batch norm first re-estimate the running statistics at ``params`` from
    ``calibration_batches`` fixed training batches (cumulative average, train mode), since the
    asynchronous workers' running statistics are not part of the central parameters.
    """
    if test is None or isinstance(fm, NullModel):
        return {"test_loss": math.nan, "test_acc": math.nan}
    fm.load(params)
    model = fm.model
    crop = _crop_size(cfg, test)
    if fm.has_batchnorm and train is not None:
        bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        saved = [m.momentum for m in bns]
        for m in bns:
            m.reset_running_stats()
            m.momentum = None
        model.train()
        idx = np.random.default_rng([cfg.seed, 11]).permutation(len(train))[:batch * calibration_batches]
        for x, _ in batches(train, idx, batch):
            model((crop_flip(x, crop) if crop else x).to(fm.device))
        for m, mom in zip(bns, saved):
            m.momentum = mom
    model.eval()
    n = len(test) if cfg.eval_limit is None else min(cfg.eval_limit, len(test))
    total_loss, correct = 0.0, 0
    for x, y in batches(test, np.arange(n), batch):
        out = model((crop_flip(x, crop) if crop else x).to(fm.device))
        y = y.to(fm.device)
        total_loss += float(torch.nn.functional.cross_entropy(out, y, reduction="sum"))
        correct += int((out.argmax(1) == y).sum())
    model.train()
    return {"test_loss": total_loss / n, "test_acc": correct / n}


# --------------------------------------------------------------------------- command line


class StrictParser(argparse.ArgumentParser):
    """argparse whose errors raise ConfigError (one line, no usage dump) instead of exiting."""

    def error(self, message: str):  # type: ignore[override]
        raise ConfigError(f"{self.prog}: {message}")


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def add_async_arguments(parser: argparse.ArgumentParser, *, algo_flag: str = "--algo") -> None:
    """Add the AsyncConfig options to ``parser`` (the algorithm flag is --algo or --rule)."""
    d = AsyncConfig(steps=1)
    parser.add_argument(algo_flag, dest="algo", default=d.algo, metavar="ALGO",
                        help=f"asynchronous algorithm: {', '.join(ALGOS)} (default {d.algo})")
    parser.add_argument("--workers", type=int, default=d.workers, help="asynchronous workers N")
    parser.add_argument("--model", default=d.model,
                        help=f"network (trainers.models) or '{NO_MODEL}' for staleness only (default {d.model})")
    parser.add_argument("--dataset", default=d.dataset, help="mnist, cifar10, cifar100 or synthetic")
    parser.add_argument("--data-root", default=None, help="dataset folder (default: trainers.data's)")
    parser.add_argument("--synthetic-n", type=int, default=d.synthetic_n, help="synthetic training images")
    parser.add_argument("--batch", type=int, default=d.batch, help="per-worker batch size")
    parser.add_argument("--lr", type=float, default=d.lr, help="learning rate eta")
    parser.add_argument("--momentum", type=float, default=d.momentum, help="momentum gamma (GEM: mu)")
    parser.add_argument("--no-nesterov", dest="nesterov", action="store_false", help="heavy-ball momentum")
    parser.add_argument("--weight-decay", type=float, default=d.weight_decay, help="L2 coefficient")
    parser.add_argument("--n", type=int, default=None, help="softsync splitting parameter n (1..N)")
    parser.add_argument("--no-modulate", dest="modulate", action="store_false",
                        help="softsync: constant rate instead of alpha0/tau (Zhang's unmodulated baseline)")
    parser.add_argument("--gap", default=d.gap, help="gap rules: parameter, layer or global")
    parser.add_argument("--kappa", type=float, default=d.kappa, help="GEM proxy amplification")
    parser.add_argument("--gem-code", default=d.gem_code,
                        help="GEM setting: paper (pull after commit, no clamp), paper-clamp (pull after commit, "
                             "pi clamped to [0,5]) or authors (pull before commit, |Delta+eps|, clamp [0,5])")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--epochs", type=float, default=None, help="budget in epochs")
    budget.add_argument("--steps", type=int, default=None, help="budget in gradients applied")
    parser.add_argument("--data", default=d.data, help="shard (1/N of each epoch per worker) or replicate")
    parser.add_argument("--warmup-epochs", type=float, default=d.warmup_epochs, help="linear warm-up from lr/N")
    parser.add_argument("--milestones", type=_floats, default=(), help="epochs of lr decay, e.g. 80,120")
    parser.add_argument("--lr-decay", type=float, default=d.lr_decay, help="factor at each milestone")
    parser.add_argument("--delays", default=d.delays, help="batch times: homogeneous, heterogeneous or none")
    parser.add_argument("--delay-mean", type=float, default=d.delay_mean, help="mean batch time mu, seconds")
    parser.add_argument("--eval-every", type=float, default=d.eval_every, help="epochs between evaluations")
    parser.add_argument("--eval-limit", type=int, default=None, help="test images to evaluate on")
    parser.add_argument("--augment", action="store_true", help="random crop and flip (CIFAR)")
    parser.add_argument("--log-every", type=int, default=d.log_every, help="gradients per step line (0: auto)")
    parser.add_argument("--seed", type=int, default=d.seed, help="seed of everything")
    parser.add_argument("--log", default=None, help="JSONL run log to write")


def config_from_args(args: argparse.Namespace) -> AsyncConfig:
    """AsyncConfig from parsed add_async_arguments options (ConfigError on a bad value)."""
    names = {f.name for f in fields(AsyncConfig)}
    values = {k: v for k, v in vars(args).items() if k in names}
    if values.get("epochs") is None and values.get("steps") is None:
        raise ConfigError("give a budget: --epochs E or --steps S")
    return AsyncConfig(**values)


def versions() -> dict[str, str]:
    """Versions for the run-log header."""
    out = {"python": sys.version.split()[0], "torch": torch.__version__, "numpy": np.__version__}
    if "mpi4py" in sys.modules:
        out["mpi4py"] = sys.modules["mpi4py"].__version__
    return out



# --------------------------------------------------------------------------- run-log helpers


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
