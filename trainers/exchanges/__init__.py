"""TernGrad's exchanges of the ternary codes, one class per file (docs/terngrad_exchanges.md):

    levels     (levels.py) the integer sum of the codes by Allreduce, bucketed like SSGD;
    ps         (ps.py) the paper's parameter server sharded over the ranks: Alltoall of 2-bit shards,
               each rank sums its shard, Allgather of the ceil(log2(2W+1))-bit sums;
    allgather  (allgather.py) every rank's 2-bit packed codes to every rank (does not scale).

Each object owns its gradient buffers, encodes, exchanges and decodes them, and knows its bytes on the
wire per step (formulas: perfmodel.wire). trainers.sync.terngrad drives whichever one the run names
through ``exchange_class(name)``; the profiler (perfmodel.lab.profile.compute) times the same objects.

``EXCHANGES`` is the one registry, name -> "module:Class" (the modules load on first use, so that the
trainers' command line, which takes its choices from here, imports no torch). Its names and
``DEFAULT_EXCHANGE`` are the pure model's (perfmodel.specs.TERNGRAD_EXCHANGES,
DEFAULT_TERNGRAD_EXCHANGE), so a run and its prediction name an exchange alike.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from perfmodel.specs import DEFAULT_TERNGRAD_EXCHANGE, TERNGRAD_ALLGATHER, TERNGRAD_LEVELS, TERNGRAD_PS

if TYPE_CHECKING:  # pragma: no cover
    from trainers.exchanges.base import Exchange

__all__ = ["DEFAULT_EXCHANGE", "EXCHANGES", "exchange_class"]

EXCHANGES: dict[str, str] = {
    TERNGRAD_LEVELS: "trainers.exchanges.levels:LevelsExchange",
    TERNGRAD_PS: "trainers.exchanges.ps:PsExchange",
    TERNGRAD_ALLGATHER: "trainers.exchanges.allgather:AllgatherExchange",
}
"""Exchange name -> "module:Class" of its object."""

DEFAULT_EXCHANGE: str = DEFAULT_TERNGRAD_EXCHANGE
"""The exchange a TernGrad run uses unless ``--terngrad-exchange`` names another."""


def exchange_class(name: str) -> type[Exchange]:
    """The exchange class registered under ``name`` (ValueError for a name not in EXCHANGES)."""
    if name not in EXCHANGES:
        raise ValueError(f"unknown TernGrad exchange {name!r}; choose from {', '.join(EXCHANGES)}")
    module, cls = EXCHANGES[name].split(":")
    return getattr(importlib.import_module(module), cls)
