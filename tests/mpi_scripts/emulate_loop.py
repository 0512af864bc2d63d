"""A job to kill midway (tests/test_emulate.py): every rank allreduces 1 MiB across the emulated link
once (so the ranks are connected), writes its pid to DIR/rank<r>.pid, then keeps allreducing with short
sleeps (little CPU) for at most 300 s."""

import os
import sys
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
buf = np.ones(1 << 18, dtype=np.float32)  # 1 MiB
comm.Allreduce(MPI.IN_PLACE, buf)
marker = os.path.join(sys.argv[1], f"rank{comm.Get_rank()}.pid")
with open(marker + ".tmp", "w") as fh:
    fh.write(f"{os.getpid()}\n")
os.replace(marker + ".tmp", marker)
t0 = time.monotonic()
while time.monotonic() - t0 < 300:
    comm.Allreduce(MPI.IN_PLACE, buf)
    time.sleep(0.05)
