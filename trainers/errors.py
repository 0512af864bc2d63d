"""The one error class of the trainers package, and the exit statuses of its commands.

Every error that bad input causes -- a malformed command-line value, a configuration out of range, a
missing or corrupt dataset, an incompatible checkpoint or run log -- is a :class:`TrainerError` (a
``ValueError``): the commands print it as one line ``trainers: error: ...`` and exit with
``BAD_INPUT_STATUS``. Two subclasses say more about *how* it was raised, which an MPI job needs to know:

- :class:`UsageError`: raised on every rank alike (the ranks agreed on it), so the job ends with status
  2 without an MPI abort; any other exception inside a run aborts the whole job
  (``trainers.comm.abort_on_error``), since the other ranks may be waiting in a collective.
- :class:`DivergenceError`: training diverged (non-finite loss or gradients), also agreed on every
  rank; the job ends with ``DIVERGED_STATUS``.

The data, checkpoint and run-log modules derive their own errors from TrainerError (``DatasetError``,
``CheckpointError``, ``RunLogError``), as perfmodel's derive from ``perfmodel.specs.SpecError``.
"""

from __future__ import annotations

import sys
import time

__all__ = ["TrainerError", "UsageError", "DivergenceError", "BAD_INPUT_STATUS", "DIVERGED_STATUS",
           "RANK0_LINE_GRACE_S", "wait_for_rank0_line", "refuse_on_rank0"]

BAD_INPUT_STATUS = 2  # exit status of bad input (1 is a crash)
DIVERGED_STATUS = 3  # exit status of a run stopped by divergence

RANK0_LINE_GRACE_S = 3.0
"""Seconds a rank other than 0 waits before it exits with an error that rank 0 prints (module docstring)."""


def wait_for_rank0_line(rank: int) -> None:
    """Before a rank exits non-zero with an error every rank found and rank 0 alone prints: wait
    RANK0_LINE_GRACE_S on ranks other than 0. The launcher ends the whole job when the first rank exits
    non-zero; rank 1 exiting first once had Open MPI kill rank 0 before its one line was out, leaving
    the job's status 2 with no error line (tests/test_ps_mpi.py). A rank that alone finds an error still
    ends the job, that much later."""
    if rank != 0:
        time.sleep(RANK0_LINE_GRACE_S)


def refuse_on_rank0(rank: int, line: str, status: int = BAD_INPUT_STATUS) -> int:
    """An error every rank found: rank 0 prints ``line`` on stderr, the others wait for it
    (``wait_for_rank0_line``); ``status`` back, for the command to exit with."""
    if rank == 0:
        print(line, file=sys.stderr, flush=True)
    wait_for_rank0_line(rank)
    return status


class TrainerError(ValueError):
    """Bad input to a trainer (one line naming the value; exit status 2)."""


class UsageError(TrainerError):
    """Bad input found while starting a run (missing dataset, incompatible checkpoint, ...).

    Raised on every rank alike, so the job ends with status 2 without an MPI abort."""


class DivergenceError(TrainerError):
    """Training diverged (non-finite loss or gradients) and --allow-divergence was not given.

    Raised on every rank alike (the ranks agree on it through a collective), so the job ends with
    status DIVERGED_STATUS without an MPI abort."""
