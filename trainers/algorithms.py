"""Every algorithm ``trainers run`` knows, by family: the synchronous family's names
(trainers.sync.registry.SYNC_ALGORITHMS, run by ``trainers.sync.runner.run``), the asynchronous
family's (trainers.asynchronous.algos.ALGOS, run by the parameter server,
``trainers.asynchronous.ps.run_from_config``) and :data:`ALGORITHMS`, registered from outside.

Importing this module imports neither torch nor mpi4py; :func:`algorithms` and :func:`family` read
the asynchronous names, which imports torch (the registry is built from the master-rule classes),
only for a name that is not synchronous or registered.
"""

from __future__ import annotations

from trainers.sync.registry import SYNC_ALGORITHMS

__all__ = ["ALGORITHMS", "SYNC_RUN", "ASYNC_RUN", "algorithms", "family"]

ALGORITHMS: dict[str, tuple[str, str]] = {}
"""Algorithms registered from outside the two families: name -> (module, function); the function is
``def run_<algo>(cfg: trainers.config.SyncConfig, comm) -> None``."""

SYNC_RUN = ("trainers.sync.runner", "run")
ASYNC_RUN = ("trainers.asynchronous.ps", "run_from_config")


def _async_names() -> tuple[str, ...]:
    from trainers.asynchronous.algos import ALGOS  # torch: built from the master-rule classes

    return tuple(ALGOS)


def algorithms() -> dict[str, tuple[str, str]]:
    """Every algorithm -> (module, function): the synchronous family's, the asynchronous family's, then
    ALGORITHMS. Imports torch (the asynchronous names)."""
    return {**{name: SYNC_RUN for name in SYNC_ALGORITHMS}, **{name: ASYNC_RUN for name in _async_names()},
            **ALGORITHMS}


def family(name: str) -> str | None:
    """"sync" (a synchronous algorithm or one registered in ALGORITHMS: its config is a SyncConfig),
    "async" (the parameter server's: an AsyncConfig) or None for an unknown name."""
    if name in ALGORITHMS or name in SYNC_ALGORITHMS:
        return "sync"
    return "async" if name in _async_names() else None
