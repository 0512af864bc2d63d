"""The GEM / Downpour master: theta <- theta + update (Hermans et al. 2018)."""

from __future__ import annotations

from torch import Tensor

from trainers.asynchronous.master_rule import MasterRule
from trainers.asynchronous.rule_hypers import AddHyper

__all__ = ["Add"]

class Add(MasterRule):
    """theta <- theta + update: the master of GEM and Downpour (Hermans et al. 2018, sec. 4).

    The "grad" passed to ``apply`` is the worker's finished update (e.g. pi * Delta from
    trainers.asynchronous.gem.GEMWorker, with Delta = -eta * gradient); no rate, decay or momentum here.
    ``staleness(worker)`` gives the tau that AdaptiveStalenessWorker needs before committing.
    """

    name = "add"
    Hyper = AddHyper

    def _update(self, worker: int, g: Tensor, tau: int, stale: Tensor | None) -> bool:
        self._theta.add_(g)
        return True
