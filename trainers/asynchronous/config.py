"""The asynchronous family's configuration: the algorithm registry (a master rule of
trainers.asynchronous.masters, plus for the GEM family a worker-side rescaling of
trainers.asynchronous.gem), :class:`AsyncConfig` and the run's budget (:class:`Plan`).

The MPI parameter server (trainers.asynchronous.ps) and the event-driven simulator
(trainers.asynchronous.simulate) both build everything from one ``AsyncConfig``, so that a worker's
k-th gradient is the same computation in both: the same batch (data_streams.BatchStream), the same
dropout and augmentation seed (data_streams.step_seed), the same model code (flat_model.FlatModel), and
the same master rule (flat_model.build_rule) driven in the same order.

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

from dataclasses import asdict, dataclass
from typing import Any

from perfmodel.stragglers import CVB_KINDS
from trainers.asynchronous.gem import GEM_CODES, WORKERS
from trainers.asynchronous.masters import RULES
from trainers.asynchronous.rule_hypers import GAP_MODES
from trainers.data import Dataset
from trainers.errors import TrainerError
from trainers.validators import check_choice, check_int, check_milestones, check_number

__all__ = ["AlgoSpec", "ALGOS", "DATA_MODES", "DELAY_KINDS", "NO_MODEL", "AsyncConfig", "Plan", "make_plan"]


@dataclass(frozen=True)
class AlgoSpec:
    """An asynchronous algorithm: the master rule (trainers.asynchronous.masters) and, for the GEM family,
    the worker-side rescaling (trainers.asynchronous.gem) whose output the "add" master sums."""

    name: str
    master: str
    worker: str | None = None

    def __post_init__(self) -> None:
        check_choice("master", self.master, RULES)
        if self.worker is not None:
            check_choice("worker", self.worker, WORKERS)


ALGOS: dict[str, AlgoSpec] = {  # every master rule but "add", then "add" behind each worker rule
    spec.name: spec
    for spec in (
        *(AlgoSpec(name, name) for name in RULES if name != "add"),
        *(AlgoSpec(name, "add", name) for name in WORKERS),
    )
}

DATA_MODES = ("shard", "replicate")
DELAY_KINDS = (*CVB_KINDS, "none")  # the CVB model's named settings, or every batch delay_mean
NO_MODEL = "none"


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
    kappa, gem_code: GEM's proxy amplification and its setting, one of trainers.asynchronous.gem.GEM_CODES:
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
            raise TrainerError(f"unknown algorithm {self.algo!r}; choose one of: {', '.join(ALGOS)}")
        check_int("workers", self.workers, 1)
        from trainers.models import MODELS

        if self.model != NO_MODEL and self.model not in MODELS:
            raise TrainerError(f"unknown model {self.model!r}; choose one of: {NO_MODEL}, {', '.join(MODELS)}")
        from trainers.data import DATASETS

        if self.dataset != "synthetic" and self.dataset not in DATASETS:
            raise TrainerError(f"unknown dataset {self.dataset!r}; choose one of: synthetic, {', '.join(DATASETS)}")
        check_int("synthetic_n", self.synthetic_n, 1)
        check_int("batch", self.batch, 1)
        check_number("lr", self.lr, 0.0, lo_open=True)
        check_number("momentum", self.momentum, 0.0, 1.0, hi_open=True)
        check_number("weight_decay", self.weight_decay, 0.0)
        if self.n is not None:
            check_int("n", self.n, 1)
            if self.n > self.workers:
                raise TrainerError(
                    f"n must be in 1..workers={self.workers} (softsync collects floor(workers/n) "
                    f"gradients per update), got n={self.n}"
                )
            if ALGOS[self.algo].master != "softsync":
                raise TrainerError(f"n is the softsync splitting parameter; algorithm {self.algo!r} does not take it")
        check_choice("gap", self.gap, GAP_MODES)
        check_number("kappa", self.kappa, 0.0, lo_open=True)
        check_choice("gem_code", self.gem_code, GEM_CODES)
        if (self.epochs is None) == (self.steps is None):
            raise TrainerError("give exactly one budget: epochs or steps")
        if self.epochs is not None:
            check_number("epochs", self.epochs, 0.0, lo_open=True)
            if self.model == NO_MODEL:
                raise TrainerError("model 'none' (staleness only) has no data: give steps, not epochs")
        if self.steps is not None:
            check_int("steps", self.steps, 1)
        check_choice("data", self.data, DATA_MODES)
        check_number("warmup_epochs", self.warmup_epochs, 0.0)
        object.__setattr__(self, "milestones", check_milestones("milestones", self.milestones))
        check_number("lr_decay", self.lr_decay, 0.0, lo_open=True)
        check_choice("delays", self.delays, DELAY_KINDS)
        check_number("delay_mean", self.delay_mean, 0.0, lo_open=True)
        check_number("eval_every", self.eval_every, 0.0)
        if self.eval_limit is not None:
            check_int("eval_limit", self.eval_limit, 1)
        check_int("log_every", self.log_every, 0)
        check_int("seed", self.seed, 0)

    @property
    def spec(self) -> AlgoSpec:
        return ALGOS[self.algo]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly copy (for the run-log header)."""
        out = asdict(self)
        out["milestones"] = list(self.milestones)
        return out


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
            raise TrainerError(f"the training set has {len(train)} images, fewer than workers={cfg.workers}")
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
