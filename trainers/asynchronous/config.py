"""The asynchronous family's run budget (:class:`Plan`), and the names its modules import from here:
:class:`AsyncConfig` (defined in trainers.config, with the synchronous family's config) and the
algorithm registry ``ALGOS`` (trainers.asynchronous.algos).

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

from dataclasses import dataclass

from trainers.config import AsyncConfig
from trainers.data import Dataset
from trainers.errors import TrainerError

__all__ = ["Plan", "make_plan"]


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
    """The run's budget and evaluation points from the data size and epochs/steps (evaluations every
    eval_every_steps gradients when > 0, else every eval_every epochs)."""
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
    if (cfg.eval_every_steps > 0 or cfg.eval_every > 0) and train is not None:
        every = cfg.eval_every_steps or max(1, round(cfg.eval_every * per_epoch))
        points = list(range(every, expected, every))
    points.append(expected)
    return Plan(per_epoch, total, per_worker, tuple(points), cfg.workers)
