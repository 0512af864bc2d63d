"""Deliberate failures for the tests, kept out of the training loops: each is a hook that the loops
call through their generic hook points (``Trainer.before_step`` of trainers.sync.loop; the worker
hooks of trainers.asynchronous.ps) and that is installed only when a hidden ``--fail-*`` option asks
for it (tests/test_sync_mpi.py, tests/test_ps_mpi.py start the jobs with them).

- ``trainers run --fail-at-step S [--fail-rank R]``: rank R (default the last, :func:`failing_rank`) raises
  RuntimeError before step S (the job must abort, and --resume continue from the last checkpoint). The
  parameter server's algorithms alike: rank 0, the server, raises before it applies its S-th gradient
  (counted from 0; :func:`server_hooks`); a worker rank fails as ``--fail-worker rank-1 --fail-after S``
  below (trainers.config.ps_options).
- ``python -m trainers.asynchronous.ps --fail-worker W --fail-after K --fail-mode M``: worker W, before
  its K-th gradient, exits at once with status 17 ("exit"; not 3, the status of a diverged run), hangs
  ("hang") or raises ("raise"), or pushes that gradient with one infinite element and a finite loss
  ("inf-grad").
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["FAIL_MODES", "failing_rank", "install_step_failure", "server_hooks", "worker_hooks"]

FAIL_MODES = ("exit", "hang", "raise", "inf-grad")
EXIT_STATUS = 17  # of a worker that fails with mode "exit"

BeforeGradient = Callable[[int, int], None]  # hook(worker, k) before worker's k-th gradient
OnGradient = Callable[[int, int, Any], None]  # hook(worker, k, flat gradient tensor) may change it in place
BeforeApply = Callable[[int], None]  # hook(applied) of the parameter server before it applies a gradient


def failing_rank(cfg: Any, world: int) -> int | None:
    """The rank that --fail-at-step fails in a job of ``world`` ranks: --fail-rank, default the last rank;
    None when no failure is asked for (no --fail-at-step)."""
    if cfg.fail_at_step is None:
        return None
    return cfg.fail_rank if cfg.fail_rank is not None else world - 1


def install_step_failure(trainer: Any) -> None:
    """Add the --fail-at-step / --fail-rank failure to ``trainer.before_step`` when the config asks for it."""
    cfg = trainer.cfg
    fail_rank = failing_rank(cfg, trainer.world)
    if fail_rank is None:
        return

    def fail(tr: Any, step: int) -> None:
        if step == cfg.fail_at_step and tr.rank == fail_rank:
            raise RuntimeError(f"injected failure at step {step} on rank {tr.rank} (t={time.time():.3f})")

    trainer.before_step.append(fail)


def _fail(mode: str, w: int) -> None:
    sys.stderr.write(f"worker {w}: deliberate failure ({mode})\n")
    sys.stderr.flush()
    if mode == "exit":
        os._exit(EXIT_STATUS)
    if mode == "hang":
        while True:
            time.sleep(3600)
    raise RuntimeError(f"worker {w}: deliberate failure")


def worker_hooks(fail_worker: int | None, fail_after: int, mode: str) -> tuple[list[BeforeGradient],
                                                                                list[OnGradient]]:
    """(before-gradient hooks, on-gradient hooks) of a parameter-server worker for the --fail-* options
    (both empty when fail_worker is None)."""
    if fail_worker is None:
        return [], []
    if mode == "inf-grad":
        def poison(w: int, k: int, g: Any) -> None:
            if w == fail_worker and k == fail_after:
                g[0] = math.inf

        return [], [poison]

    def fail(w: int, k: int) -> None:
        if w == fail_worker and k == fail_after:
            _fail(mode, w)

    return [fail], []


def server_hooks(fail_at: int | None) -> list[BeforeApply]:
    """The parameter server's before-apply hooks: raise RuntimeError before applying gradient number
    ``fail_at`` (counted from 0); none when fail_at is None."""
    if fail_at is None:
        return []

    def fail(applied: int) -> None:
        if applied == fail_at:
            raise RuntimeError(f"injected failure of the server before gradient {applied} (t={time.time():.3f})")

    return [fail]
