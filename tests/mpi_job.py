"""How the MPI tests start a job: ``mpiexec ...`` in a session of its own, its output captured, a time-out
that ends the whole group (SIGTERM, so that mpiexec removes its session directory, then SIGKILL for what
is left: perfmodel.lab.launcher.stop_group), and a launcher that stopped before any rank ran started once more
(perfmodel.lab.launcher.not_started: a stale Open MPI session directory, docs/cli_behaviour.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfmodel.lab.launcher import not_started, stop_group

REPO = Path(__file__).resolve().parents[1]


def mpi_env() -> dict[str, str]:
    """The environment of a test job: one torch/BLAS thread, the repository importable."""
    return dict(os.environ, OMP_NUM_THREADS="1",
                PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


@dataclass(frozen=True)
class Job:
    """A finished (or timed-out) job: ``code`` None on time-out; ``ended`` time.time() when it ended or was
    stopped; ``seconds`` its wall time."""

    code: int | None
    output: str
    ended: float
    seconds: float


def run_job(cmd: Sequence[str], timeout: float) -> Job:
    """Run ``cmd`` (an mpiexec command line) from the repository root with :func:`mpi_env`; never leaves
    ranks behind."""
    for attempt in (1, 2):
        t0 = time.monotonic()
        proc = subprocess.Popen(list(cmd), cwd=REPO, env=mpi_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            ended = time.time()
            out = _end(proc)
            return Job(None, out.decode("utf-8", errors="replace"), ended, time.monotonic() - t0)
        text = (out or b"").decode("utf-8", errors="replace")
        if proc.returncode == 0 or attempt == 2 or not not_started(text):
            return Job(proc.returncode, text, time.time(), time.monotonic() - t0)
    raise AssertionError("unreachable")


def _end(proc: subprocess.Popen) -> bytes:
    """End a timed-out job: SIGTERM to its session while reading its output (mpiexec writes as it takes its
    ranks down, and removes its session directory), then whatever of the group is left (stop_group:
    SIGTERM, SIGKILL); all its output."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        out, _ = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        stop_group(proc, timeout=5)
        out, _ = proc.communicate()
        return out or b""
    stop_group(proc, timeout=5)
    return out or b""
