"""What `perfmodel validate` reads from a run log's header, checked before it is used.

A header is what trainers.log wrote (trainers/config.py's fields under ``config``); a file edited by hand
or cut from another tool may hold anything. Each value validate reads is checked here once, so that a
wrong one is one ValidateError line naming the key, never a TypeError from deep in the prediction.
"""

from __future__ import annotations

import math


class ValidateError(ValueError):
    """A run log or profile cannot be validated."""


#: config keys read as counts: must be positive integers where present (None allowed where the trainers write it)
COUNTS = {"batch": False, "threads": False, "accumulate": True, "ranks_per_node": True, "daso_b": True,
          "tern_min_elems": False}
#: config keys read as numbers >= 0 (None allowed where the trainers write it)
NUMBERS = {"bucket_mb": False, "daso_w": True}
#: config keys read as flags and as text
FLAGS = ("overlap", "tern_fp32_last")
TEXTS = ("model", "algo", "tern_lanes", "terngrad_exchange", "tern_exchange")


def finite_number(value, positive: bool = False) -> bool:
    """Whether ``value`` is a finite number (not a bool), > 0 if ``positive`` else >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return False
    return value > 0 if positive else value >= 0


#: the largest count a JSON number holds exactly (2^53): a larger one was not written by a counter
MAX_COUNT = 2**53


def count(record: dict, key: str, default: int | None, where: str) -> int:
    """``record[key]`` (``default`` when absent) as a positive integer up to MAX_COUNT; ValidateError if not."""
    v = record.get(key, default)
    if not (finite_number(v, True) and v <= MAX_COUNT and v == int(v)):
        raise ValidateError(f"{where}: {key} must be a positive integer, got {v!r}")
    return int(v)


def check_config(cfg, where: str) -> dict:
    """``cfg`` itself when every key validate reads is of the kind the trainers write; ValidateError naming
    the first that is not."""
    if not isinstance(cfg, dict):
        raise ValidateError(f"{where}: config must be a JSON object, got {type(cfg).__name__}")
    for key, nullable in COUNTS.items():
        if key in cfg and not (nullable and cfg[key] is None):
            count(cfg, key, None, where)
    for key, nullable in NUMBERS.items():
        if key in cfg and not (nullable and cfg[key] is None) and not finite_number(cfg[key]):
            raise ValidateError(f"{where}: {key} must be a number >= 0, got {cfg[key]!r}")
    for key in FLAGS:
        if key in cfg and not isinstance(cfg[key], bool):
            raise ValidateError(f"{where}: {key} must be true or false, got {cfg[key]!r}")
    for key in TEXTS:
        if key in cfg and not (isinstance(cfg[key], str) and cfg[key]):
            raise ValidateError(f"{where}: {key} must be a name, got {cfg[key]!r}")
    return cfg
