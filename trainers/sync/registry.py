"""The synchronous family's one list of algorithm names: name -> (module, class). Pure data: it imports
nothing, so that the configuration (trainers.config) and ``trainers run`` read the names without
loading an algorithm (trainers.sync.runner loads the classes)."""

from __future__ import annotations

__all__ = ["SYNC_ALGORITHMS"]

SYNC_ALGORITHMS: dict[str, tuple[str, str]] = {
    "ssgd": ("trainers.sync.ssgd", "SSGD"),
    "terngrad": ("trainers.sync.terngrad", "TernGrad"),
    "daso": ("trainers.sync.daso", "DASO"),
}
"""Algorithm name -> (module, class); the class is a trainers.sync.loop.SyncAlgorithm built as ``cls(trainer)``."""
