"""One rank fails while the others wait in a Barrier; abort_on_error must end the job.

Usage: mpiexec -n P python tests/mpi_scripts/abort_check.py MODE   (PYTHONPATH = repo root)
MODE: "context" (raise inside the context manager), "decorator", "excepthook" (uncaught exception
with the hook installed), "exit2" (sys.exit(2) inside the context manager), or "none" (no handler:
the control case, which hangs).
"""

from __future__ import annotations

import sys
import time

from mpi4py import MPI

from trainers.comm import abort_on_error

FAILING_RANK = 1


def fail(mode: str) -> None:
    print(f"FAILING AT {time.time():.3f}", flush=True)  # wall clock, read by the test
    if mode == "exit2":
        sys.exit(2)
    raise RuntimeError(f"deliberate failure in mode {mode}")


def step(mode: str) -> None:
    if MPI.COMM_WORLD.Get_rank() == FAILING_RANK:
        fail(mode)
    MPI.COMM_WORLD.Barrier()  # without an abort, the other ranks would wait here forever


@abort_on_error()
def decorated(mode: str) -> None:
    step(mode)


def main() -> None:
    mode = sys.argv[1]
    if mode in ("context", "exit2"):
        with abort_on_error():
            step(mode)
    elif mode == "decorator":
        decorated(mode)
    elif mode == "none":
        step(mode)
    elif mode == "excepthook":
        abort_on_error().install()
        step(mode)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    MPI.COMM_WORLD.Barrier()


if __name__ == "__main__":
    main()
