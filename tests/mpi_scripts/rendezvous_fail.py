"""Under mpiexec -n 2: two pretend hosts (node0, node1) whose names do not resolve on rank 0, then the
torch.distributed rendezvous. Every rank must end with one ``trainers: error:`` line and status 2 (the
trainers CLI's handling of UsageError), printing ``rank<R>-exit<S>`` on stdout, never hang."""

import socket
import sys

from mpi4py import MPI

from trainers.errors import BAD_INPUT_STATUS, UsageError

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
socket.gethostname = lambda: f"node{rank}"
if rank == 0:
    def _fail(*args, **kwargs):
        raise socket.gaierror(-2, "Name or service not known")

    socket.getaddrinfo = _fail
    socket.gethostbyname = _fail

from trainers.collectives.torch_dist import rendezvous  # noqa: E402

status = 0
try:
    rendezvous(comm)
except UsageError as exc:
    print(f"trainers: error: {' '.join(str(exc).split())}", file=sys.stderr, flush=True)
    status = BAD_INPUT_STATUS
print(f"rank{rank}-exit{status}", flush=True)
sys.exit(0)
