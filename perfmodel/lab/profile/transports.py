"""The transports the communication micro-benchmarks (perfmodel.lab.profile.comm) time their operations on.

``MPITransport``: mpi4py on float32 numpy buffers, timed by ``MPI.Wtime``. ``TorchTransport``:
torch.distributed ("nccl" on CUDA tensors, one GPU per rank chosen as the trainers choose it; "gloo" on
CPU tensors), rendezvous over TCP at an address rank 0 broadcasts through MPI, timed by
``time.perf_counter`` after synchronising the device. ``prepare(op, nbytes)`` returns the call that runs
one operation of ``nbytes`` (the "ps" exchange: ``PS_ROUNDS`` pushes and pulls per call).

torch and mpi4py are imported inside functions only.
"""

from __future__ import annotations

import socket
import time
from typing import Callable

from .schema import PS_ROUNDS



class Transport:
    """What the timing loop needs from a backend."""

    rank: int
    size: int
    library: str
    clock: Callable[[], float]

    def barrier(self) -> None: ...
    def sync(self) -> None: ...
    def max_all(self, x: float) -> float: ...
    def prepare(self, op: str, nbytes: int) -> Callable[[], None]: ...
    def hosts(self) -> list[str]: ...
    def close(self) -> None: ...

    def node_leaders(self) -> list[int]:
        """The first rank on each host, in rank order (the same list on every rank): the group of
        "global_iallreduce", DASO's global sync on one rank per node."""
        names = self.comm.allgather(socket.gethostname())
        return sorted({names.index(h) for h in names})


class MPITransport(Transport):
    def __init__(self) -> None:
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        first = MPI.Get_library_version().strip().splitlines()[0]
        self.library = " ".join(first.split(",")[0].split())  # "Open MPI v5.0.3", "MPICH Version: 4.2.1"
        self.clock = MPI.Wtime

    def barrier(self) -> None:
        self.comm.Barrier()

    def sync(self) -> None:
        pass

    def max_all(self, x: float) -> float:
        return float(self.comm.allreduce(float(x), op=self.MPI.MAX))

    def hosts(self) -> list[str]:
        return self.comm.gather(socket.gethostname(), root=0) or []

    def close(self) -> None:
        pass

    def prepare(self, op: str, nbytes: int) -> Callable[[], None]:
        import numpy as np

        comm, MPI, rank = self.comm, self.MPI, self.rank
        send = np.ones(nbytes // 4, dtype=np.float32)
        recv = np.zeros_like(send)
        if op == "allreduce":
            return lambda: comm.Allreduce(send, recv, op=MPI.SUM)
        if op == "iallreduce":  # non-blocking, waited at once: its cost when nothing progresses it meanwhile
            return lambda: comm.Iallreduce(send, recv, op=MPI.SUM).Wait()
        if op == "global_iallreduce":  # the same on the first rank of each node; the others idle
            if getattr(self, "_leaders", None) is None:
                color = 0 if rank in self.node_leaders() else MPI.UNDEFINED
                self._leaders = comm.Split(color, rank)  # collective: every rank prepares every op
            group = self._leaders
            if group == MPI.COMM_NULL:
                return lambda: None
            return lambda: group.Iallreduce(send, recv, op=MPI.SUM).Wait()
        if op == "bcast":
            return lambda: comm.Bcast(send, root=0)
        if op == "reduce":
            return lambda: comm.Reduce(send, recv if rank == 0 else None, op=MPI.SUM, root=0)
        if op == "allgather":  # nbytes: one rank's block; every rank receives all p blocks
            gathered = np.zeros(self.size * send.size, dtype=np.float32)
            return lambda: comm.Allgather(send, gathered)
        if op == "alltoall":  # nbytes: the block each rank sends to each rank
            out, back = np.ones(self.size * send.size, dtype=np.float32), np.zeros(self.size * send.size, np.float32)
            return lambda: comm.Alltoall(out, back)
        if op == "ps":  # rank 0 serves the others, first come first served (trainers.asynchronous.ps)
            if rank == 0:
                status, pulls = MPI.Status(), self.size - 1

                def serve() -> None:
                    reqs = []
                    for _ in range(pulls * PS_ROUNDS):
                        comm.Recv(recv, source=MPI.ANY_SOURCE, tag=8, status=status)
                        reqs.append(comm.Isend(send, dest=status.Get_source(), tag=9))
                    MPI.Request.Waitall(reqs)
                return serve

            def push_pull() -> None:
                for _ in range(PS_ROUNDS):
                    comm.Send(send, dest=0, tag=8)
                    comm.Recv(recv, source=0, tag=9)
            return push_pull
        if op == "pingpong":
            if rank == 0:
                def round_trip() -> None:
                    comm.Send(send, dest=1, tag=7)
                    comm.Recv(recv, source=1, tag=7)
                return round_trip
            if rank == 1:
                def echo() -> None:
                    comm.Recv(recv, source=0, tag=7)
                    comm.Send(recv, dest=0, tag=7)
                return echo
            return lambda: None
        raise ValueError(f"unknown op {op!r}")


class TorchTransport(Transport):
    """torch.distributed (nccl on CUDA, gloo on CPU); MPI only for rendezvous and timing reductions."""

    def __init__(self, backend: str) -> None:
        import torch
        import torch.distributed as dist
        from mpi4py import MPI

        self.torch, self.dist, self.MPI = torch, dist, MPI
        self.comm = MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.clock = time.perf_counter
        if backend == "nccl":
            if not torch.cuda.is_available():
                raise RuntimeError("backend nccl needs CUDA, and torch.cuda.is_available() is False")
            from trainers.device import select_device  # the trainers' choice: a rank's one visible GPU, else
            # GPU number local rank; two ranks of a host on one GPU refused (UsageError on every rank)
            self.device = select_device("cuda", self.comm)
        else:
            self.device = torch.device("cpu")
        from trainers.collectives.torch_dist import rendezvous  # an address every rank reaches, agreed alike

        dist.init_process_group(backend, init_method=rendezvous(self.comm), rank=self.rank, world_size=self.size)
        if backend == "nccl":
            version = torch.cuda.nccl.version()
            version = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
            self.library = f"NCCL {version} (torch {torch.__version__})"
        else:
            self.library = f"gloo (torch {torch.__version__})"
        self._cuda = backend == "nccl"

    def barrier(self) -> None:
        self.sync()
        self.comm.Barrier()

    def sync(self) -> None:
        if self._cuda:
            self.torch.cuda.synchronize(self.device)

    def max_all(self, x: float) -> float:
        return float(self.comm.allreduce(float(x), op=self.MPI.MAX))

    def hosts(self) -> list[str]:
        return self.comm.gather(socket.gethostname(), root=0) or []

    def close(self) -> None:
        self.dist.destroy_process_group()

    def prepare(self, op: str, nbytes: int) -> Callable[[], None]:
        torch, dist, rank = self.torch, self.dist, self.rank
        buf = torch.ones(nbytes // 4, dtype=torch.float32, device=self.device)
        if op == "allreduce":
            return lambda: dist.all_reduce(buf)
        if op == "iallreduce":
            return lambda: dist.all_reduce(buf, async_op=True).wait()
        if op == "global_iallreduce":  # the same on the first rank of each node; the others idle
            leaders = self.node_leaders()
            if getattr(self, "_leaders", None) is None:
                self._leaders = dist.new_group(leaders)  # collective: every rank prepares every op
            group = self._leaders
            if rank not in leaders:
                return lambda: None
            return lambda: dist.all_reduce(buf, group=group, async_op=True).wait()
        if op == "bcast":
            return lambda: dist.broadcast(buf, src=0)
        if op == "reduce":
            return lambda: dist.reduce(buf, dst=0)
        if op == "allgather":  # nbytes: one rank's block
            gathered = torch.zeros(self.size * buf.numel(), dtype=torch.float32, device=self.device)
            return lambda: dist.all_gather_into_tensor(gathered, buf)
        if op == "alltoall":  # nbytes: the block each rank sends to each rank
            out = torch.ones(self.size * buf.numel(), dtype=torch.float32, device=self.device)
            back = torch.zeros_like(out)
            return lambda: dist.all_to_all_single(back, out)
        if op == "ps":  # rank 0 serves the others in rank order (NCCL has no receive from any rank)
            back = torch.zeros_like(buf)
            if rank == 0:
                def serve() -> None:
                    for _ in range(PS_ROUNDS):
                        reqs = []
                        for w in range(1, self.size):
                            dist.recv(back, src=w)
                            reqs.append(dist.isend(buf, dst=w))
                        for r in reqs:
                            r.wait()
                return serve

            def push_pull() -> None:
                for _ in range(PS_ROUNDS):
                    dist.send(buf, dst=0)
                    dist.recv(back, src=0)
            return push_pull
        if op == "pingpong":
            if rank == 0:
                def round_trip() -> None:
                    dist.send(buf, dst=1)
                    dist.recv(buf, src=1)
                return round_trip
            if rank == 1:
                def echo() -> None:
                    dist.recv(buf, src=0)
                    dist.send(buf, dst=0)
                return echo
            return lambda: None
        raise ValueError(f"unknown op {op!r}")


def make_transport(backend: str) -> Transport:
    """The transport of ``backend`` ("mpi", "nccl" or "gloo")."""
    return MPITransport() if backend == "mpi" else TorchTransport(backend)
