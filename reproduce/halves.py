"""The development / held-out split of data/published/runs.csv, declared before the model changes of
issue 27 and shared by every branch that evaluates on it.

A published row is held out when int(sha256(f"{source}|{source_loc}"), 16) % 2 == 1 (the row's
``source`` and ``source_loc`` columns, UTF-8), else it is a development row. Every default constant is
chosen on development rows only; the held-out half is evaluated once, at the end.

A single-GPU rate (the ``single_gpu_samples_per_s`` of one or more rows) is a development rate when at
least one development row carries it, and held out when only held-out rows do.
"""

from __future__ import annotations

import hashlib

HALVES = ("dev", "held-out")


def is_held_out(source: str, source_loc: str) -> bool:
    """Whether the published row with these ``source`` and ``source_loc`` columns is held out."""
    return int(hashlib.sha256(f"{source}|{source_loc}".encode()).hexdigest(), 16) % 2 == 1


def half(row: dict) -> str:
    """"dev" or "held-out" for one runs.csv row (a dict with its columns)."""
    return "held-out" if is_held_out(row["source"], row["source_loc"]) else "dev"
