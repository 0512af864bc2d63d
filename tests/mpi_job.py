"""How the MPI tests start a job: ``mpiexec ...`` in a session of its own, its output captured (stderr with
stdout, or apart on request), a time-out that ends the whole group (SIGTERM, so that mpiexec removes its
session directory, then SIGKILL for what is left: perfmodel.lab.launcher.stop_group), and a launcher that
stopped before any rank ran started once more (perfmodel.lab.launcher.not_started: a stale Open MPI session
directory, docs/cli_behaviour.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfmodel.lab.launcher import not_started, stop_group

REPO = Path(__file__).resolve().parents[1]


def mpi_env(unset: Iterable[str] = ()) -> dict[str, str]:
    """The environment of a test job: one torch/BLAS thread, the repository importable, the variables named
    in ``unset`` removed."""
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    for name in unset:
        env.pop(name, None)
    return env


@dataclass(frozen=True)
class Job:
    """A finished (or timed-out) job: ``code`` None on time-out; ``output`` its stdout, with its stderr
    unless asked apart (then in ``errors``, else ""); ``ended`` time.time() when it ended or was stopped;
    ``seconds`` its wall time."""

    code: int | None
    output: str
    ended: float
    seconds: float
    errors: str = ""


def run_job(cmd: Sequence[str], timeout: float, *, unset: Iterable[str] = (), split_stderr: bool = False) -> Job:
    """Run ``cmd`` (an mpiexec command line) from the repository root with :func:`mpi_env` (less the
    variables named in ``unset``); stderr goes to ``Job.errors`` with ``split_stderr``, else into
    ``Job.output``. Never leaves ranks behind."""
    unset = tuple(unset)
    for attempt in (1, 2):
        t0 = time.monotonic()
        proc = subprocess.Popen(list(cmd), cwd=REPO, env=mpi_env(unset), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE if split_stderr else subprocess.STDOUT,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            ended = time.time()
            out, err = _end(proc)
            return Job(None, _text(out), ended, time.monotonic() - t0, _text(err))
        text, errors = _text(out), _text(err)
        if proc.returncode == 0 or attempt == 2 or not not_started(text + errors):
            return Job(proc.returncode, text, time.time(), time.monotonic() - t0, errors)
    raise AssertionError("unreachable")


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def _end(proc: subprocess.Popen) -> tuple[bytes | None, bytes | None]:
    """End a timed-out job: SIGTERM to its session while reading its output (mpiexec writes as it takes its
    ranks down, and removes its session directory), then whatever of the group is left (stop_group:
    SIGTERM, SIGKILL); all its output (stdout, stderr: None where not piped apart)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        out, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        stop_group(proc, timeout=5)
        return proc.communicate()
    stop_group(proc, timeout=5)
    return out, err
