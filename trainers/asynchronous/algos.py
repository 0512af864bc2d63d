"""The asynchronous family's algorithm registry: a master rule of trainers.asynchronous.masters, plus for
the GEM family a worker-side rescaling of trainers.asynchronous.gem (whose output the "add" master
sums). Also re-exports the names trainers.config.AsyncConfig checks its settings against."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from trainers.asynchronous.gem import GEM_CODES, WORKERS
from trainers.asynchronous.masters import RULES, hyper_names
from trainers.asynchronous.rule_hypers import GAP_MODES
from trainers.validators import check_choice, unused_option

__all__ = ["AlgoSpec", "ALGOS", "GAP_MODES", "GEM_CODES", "RULE_SETTINGS", "check_settings_used"]

RULE_SETTINGS = ("modulate", "gap", "kappa", "gem_code")
"""AsyncConfig fields that only some algorithms read (AlgoSpec.takes), refused with the others by
:func:`check_settings_used` (n, softsync's too, AsyncConfig refuses itself: its default None is "not given")."""


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

    def takes(self, setting: str) -> bool:
        """Whether the algorithm reads the AsyncConfig field ``setting``: kappa and gem_code are GEM's
        worker rule's; n, modulate, gap and the others its master rule's hyperparameters."""
        if setting in ("kappa", "gem_code"):
            return self.worker == "gem"
        return setting in hyper_names(self.master)


ALGOS: dict[str, AlgoSpec] = {  # every master rule but "add", then "add" behind each worker rule
    spec.name: spec
    for spec in (
        *(AlgoSpec(name, name) for name in RULES if name != "add"),
        *(AlgoSpec(name, "add", name) for name in WORKERS),
    )
}


def check_settings_used(algo: str, given: Mapping[str, str]) -> None:
    """TrainerError for a setting of RULE_SETTINGS in ``given`` (AsyncConfig field -> the option that set
    it, e.g. "--gap") that algorithm ``algo`` does not read; an unknown algo is left to AsyncConfig."""
    spec = ALGOS.get(algo)
    if spec is None:
        return
    for name, option in given.items():
        if name in RULE_SETTINGS and not spec.takes(name):
            raise unused_option(option, algo, [a for a, s in ALGOS.items() if s.takes(name)])
