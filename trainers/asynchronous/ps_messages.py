"""The parameter server's wire protocol (trainers.asynchronous.ps describes the messages) and waiting
on MPI requests without spinning: shared by the server loop (ps_server) and the worker loop (ps_worker).
The replay order a server follows is read here too (:func:`load_order`)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from trainers.errors import TrainerError

__all__ = ["TAG_UP_HDR", "TAG_UP_DATA", "TAG_DN_HDR", "TAG_DN_DATA", "GRAD", "REQUEST", "PARAMS", "CENTRAL",
           "STOP", "UP_LEN", "DN_LEN", "wait", "abort", "load_order"]

TAG_UP_HDR, TAG_UP_DATA, TAG_DN_HDR, TAG_DN_DATA = 11, 12, 13, 14
GRAD, REQUEST = 0.0, 1.0  # worker -> server header kinds
PARAMS, CENTRAL, STOP = 0.0, 1.0, 2.0  # server -> worker header kinds
UP_LEN, DN_LEN = 7, 3  # float64 headers [kind, loss, t_compute, t_idle, k, samples, t_exchange], [kind, lr, tau]


def load_order(path: str, workers: int) -> list[int]:
    """The recorded arrival order in ``path`` (a JSON object with "order"), validated."""
    try:
        data = json.loads(Path(path).read_text())
        order = data["order"] if isinstance(data, dict) else data
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TrainerError(f"replay order {path}: cannot read a JSON object with an 'order' list ({exc})") from None
    if not isinstance(order, list) or not order or not all(
            isinstance(w, int) and not isinstance(w, bool) and 0 <= w < workers for w in order):
        raise TrainerError(f"replay order {path}: 'order' must be a non-empty list of worker indices 0..{workers - 1}")
    return order


def wait(req: Any, poll_s: float, watchdog: Any = None) -> Any:
    """Complete an MPI request by polling Test() with short sleeps; ``watchdog()`` runs between polls."""
    from mpi4py import MPI

    status = MPI.Status()
    while not req.Test(status):
        if watchdog is not None:
            watchdog()
        if poll_s:
            time.sleep(poll_s)
    return status


def abort(comm: Any, message: str, code: int = 1) -> None:
    """One line on stderr naming the rank, then MPI_Abort of the whole job with ``code``."""
    sys.stderr.write(f"[rank {comm.Get_rank()}/{comm.Get_size()}] parameter server: {message}\n")
    sys.stderr.flush()
    comm.Abort(code)
