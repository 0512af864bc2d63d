"""The number and choice checks of every trainers configuration (trainers.config: SyncConfig, AsyncConfig,
PSOptions; the master rules' and GEM's hyperparameters, the DASO schedule; the files a run writes). Each raises
:class:`trainers.errors.TrainerError` with one line naming the field, what is allowed and the value.

Integers are Python or numpy integers (``numbers.Integral``), never bools, and at most COUNT_MAX unless a
check names another bound; numbers are finite ints or floats, never bools.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trainers.errors import TrainerError

__all__ = ["check_int", "check_number", "check_choice", "check_milestones", "check_output_file",
           "check_new_log", "unused_option", "FLOAT32_MAX", "COUNT_MAX", "THREADS_MAX"]

FLOAT32_MAX = 3.4028234663852886e38
"""The largest float32: a step size or L2 coefficient beyond it cannot meet the float32 weights (torch
refuses to convert it with a RuntimeError)."""


COUNT_MAX = 2**53
"""The largest count (steps, epochs, a batch, samples, an interval in steps) a check takes without a bound of
its own: the run log is JSON, whose readers (perfmodel validate, perfmodel.lab.run_header) take integers up
to 2^53 exactly; a count beyond it is a typo (``--steps 99999999999999999999999`` trained on for ever)."""

THREADS_MAX = 1024
"""The most torch threads per rank a run takes: far beyond any machine's cores per rank (2^31 - 1 threads
made libgomp ask for 464 GB and end the process)."""


def check_int(name: str, value: Any, lo: int | None = None, hi: int | None = None, *, none_ok: bool = False) -> None:
    """``value`` is an integer >= ``lo`` and <= ``hi`` (None: at most COUNT_MAX, and no lower bound); None
    passes when ``none_ok``."""
    if value is None and none_ok:
        return
    top = COUNT_MAX if hi is None else hi
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral) or (lo is not None and value < lo)
            or value > top):
        if hi is None:
            bound = f" >= {lo}" if lo is not None else ""
            if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value > top:
                bound += f"{' and' if bound else ''} at most 2**53 = {COUNT_MAX} (a count in a JSON run log)"
        else:
            bound = f" <= {hi}" if lo is None else f" in {lo}..{hi}"
        raise TrainerError(f"{name} must be an integer{bound}, got {value!r}")


def unused_option(option: str, algo: str, users: Iterable[str]) -> TrainerError:
    """The error for ``option``, given with algorithm ``algo``, which does not read it (``users`` do)."""
    return TrainerError(f"{option}: algorithm {algo} does not use it; it goes with {', '.join(users)}")


def check_number(name: str, value: Any, lo: float | None = None, hi: float | None = None, *,
                 lo_open: bool = False, hi_open: bool = False, none_ok: bool = False) -> None:
    """``value`` is a finite number in the interval from ``lo`` to ``hi`` (None: unbounded on that side;
    ``lo_open`` / ``hi_open`` exclude the bound); None passes when ``none_ok``."""
    if value is None and none_ok:
        return
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and lo is not None:
        ok = value > lo if lo_open else value >= lo
    if ok and hi is not None:
        ok = value < hi if hi_open else value <= hi
    if not ok:
        if hi is None:
            bound = "" if lo is None else (f" > {lo}" if lo_open else f" >= {lo}")
        else:
            left = "(-inf" if lo is None else ("(" if lo_open else "[") + str(lo)
            bound = f" in {left}, {hi}{')' if hi_open else ']'}"
        raise TrainerError(f"{name} must be a finite number{bound}, got {value!r}")


def check_choice(name: str, value: Any, allowed: Iterable[str]) -> None:
    """``value`` is one of ``allowed``."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise TrainerError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")


def check_milestones(name: str, values: Iterable[Any]) -> tuple[float, ...]:
    """``values`` as a tuple of floats: finite epochs >= 0, strictly increasing (learning-rate milestones)."""
    try:
        ms = tuple(float(m) for m in values)
    except (TypeError, ValueError):
        raise TrainerError(f"{name} must be strictly increasing epochs >= 0, got {values!r}") from None
    if any(not math.isfinite(m) or m < 0 for m in ms) or any(b <= a for a, b in zip(ms, ms[1:])):
        raise TrainerError(f"{name} must be strictly increasing epochs >= 0, got {values!r}")
    return ms


def check_output_file(option: str, path: Any) -> None:
    """``path`` can be written as a file (None or "": nothing is written): it is not a folder, and the
    nearest folder of it that exists is a writable folder (the writers create the ones missing below it).
    Checked before a run starts, so that it does not fail after training."""
    if path is None or path == "":
        return
    p = Path(path)
    if p.is_dir():
        raise TrainerError(f"{option} {path} is a folder; give a file path")
    parent = p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise TrainerError(f"{option} {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK):
        raise TrainerError(f"{option} {path}: the folder {parent} is not writable")


def check_new_log(path: Any, resume: bool | None) -> None:
    """A run log is never written over: ``path`` (None or "": no log) must not already hold one, unless the
    run continues it (``resume`` True; None: the command has no --resume). Checked before a run starts."""
    if not path or resume or not os.path.isfile(path) or os.path.getsize(path) == 0:
        return
    hint = "--resume continues that run (with its --checkpoint), or " if resume is not None else ""
    raise TrainerError(f"--log {path} already holds a run log; {hint}give another path or remove it (a run never "
                       f"writes over one)")
