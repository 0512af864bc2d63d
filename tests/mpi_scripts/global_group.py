"""DASO's global group under mpiexec -n 4 on pretend nodes of 2 ranks (the host name is replaced by
node<rank // 2>): rank 0 writes, as JSON to argv[1], each rank's node leaders, the size of the group
"global_iallreduce" ran on (0 off it) and the sum of ones over that group, and the profile's nodes,
hosts and ops."""

import json
import socket
import sys

import numpy as np
from mpi4py import MPI

rank = MPI.COMM_WORLD.Get_rank()
socket.gethostname = lambda: f"node{rank // 2}"  # what perfmodel.lab.profile.transports groups ranks by

from perfmodel.lab.profile.comm import CommConfig, run_benchmarks  # noqa: E402
from perfmodel.lab.profile.transports import MPITransport  # noqa: E402

t = MPITransport()
t.prepare("global_iallreduce", 16)()
group = t._leaders
size, total = 0, 0.0
if group != MPI.COMM_NULL:
    size = group.Get_size()
    out = np.zeros(1, dtype=np.float32)
    group.Iallreduce(np.ones(1, dtype=np.float32), out, op=MPI.SUM).Wait()
    total = float(out[0])
prof = run_benchmarks(CommConfig(sizes=(8, 4096, 65536), ops=("iallreduce", "global_iallreduce"),
                                 repeats=5, min_repeats=3))
every = MPI.COMM_WORLD.gather((t.node_leaders(), size, total), root=0)
if rank == 0:
    json.dump({"leaders": [e[0] for e in every], "group_sizes": [e[1] for e in every],
               "sums": [e[2] for e in every], "nodes": prof.nodes, "hosts": list(prof.hosts),
               "ops": {op: {"sizes": list(o.sizes_bytes), "algbw": list(o.algbw_Bps), "busbw": list(o.busbw_Bps)}
                       for op, o in prof.ops.items()}}, open(sys.argv[1], "w"))
