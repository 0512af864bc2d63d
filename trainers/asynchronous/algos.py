"""The asynchronous family's algorithm registry: a master rule of trainers.asynchronous.masters, plus for
the GEM family a worker-side rescaling of trainers.asynchronous.gem (whose output the "add" master
sums). Also re-exports the names trainers.config.AsyncConfig checks its settings against."""

from __future__ import annotations

from dataclasses import dataclass

from trainers.asynchronous.gem import GEM_CODES, WORKERS
from trainers.asynchronous.masters import RULES
from trainers.asynchronous.rule_hypers import GAP_MODES
from trainers.validators import check_choice

__all__ = ["AlgoSpec", "ALGOS", "GAP_MODES", "GEM_CODES"]


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
