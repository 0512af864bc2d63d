"""The synchronous family's run function (``trainers run --algo ssgd|terngrad|daso``) and the algorithm
classes by name (trainers.sync.registry.SYNC_ALGORITHMS)."""

from __future__ import annotations

import importlib
from typing import Any

from trainers.config import SyncConfig
from trainers.errors import UsageError
from trainers.faults import install_step_failure
from trainers.sync.loop import Trainer
from trainers.sync.registry import SYNC_ALGORITHMS

__all__ = ["algorithm", "gpu_ready_algorithms", "run"]


def algorithm(name: str) -> Any:
    """The SyncAlgorithm class registered as ``name`` (KeyError for an unknown one)."""
    module, cls = SYNC_ALGORITHMS[name]
    return getattr(importlib.import_module(module), cls)


def gpu_ready_algorithms() -> tuple[str, ...]:
    """The algorithms that run on any --device with any --backend (their class says ``gpu_ready``)."""
    return tuple(name for name in SYNC_ALGORITHMS if getattr(algorithm(name), "gpu_ready", False))


def run(cfg: SyncConfig, comm: Any) -> None:
    """Train cfg.algo on comm (every rank calls it), with the test-only failure of --fail-at-step installed
    when given (trainers.faults). UsageError on every rank alike for an algorithm this family does not
    run, or --device cuda with an algorithm that works on host memory."""
    if cfg.algo not in SYNC_ALGORITHMS:
        raise UsageError(f"trainers.sync.run got a config for algo {cfg.algo!r}; it runs {', '.join(SYNC_ALGORITHMS)}")
    factory = algorithm(cfg.algo)
    if cfg.device == "cuda" and not getattr(factory, "gpu_ready", False):
        raise UsageError(f"--algo {cfg.algo} runs on CPU ranks so far (its encoder works on host memory); "
                         f"--device cuda: {', '.join(gpu_ready_algorithms())}")
    trainer = Trainer(cfg, comm, factory)
    install_step_failure(trainer)
    trainer.run()
