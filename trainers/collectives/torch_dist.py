"""Collectives through torch.distributed: NCCL for CUDA tensors, gloo for CPU tensors.

MPI stays the launcher and the control plane: :func:`rendezvous` has rank 0 pick a free TCP port (on
loopback when every rank runs on its host, else on its host's address, or ``MASTER_ADDR``/
``MASTER_PORT`` when set) and broadcast it with mpi4py, and every rank joins the process group with
its MPI rank. Sub-groups are ``torch.distributed.new_group`` (created by every rank of the world, in
the same order, as torch requires) next to an MPI ``Comm.Split`` of the same ranks.

Types: gloo and NCCL have no int16 sum, so int16 travels as int32 and is cast back.
"""

from __future__ import annotations

import datetime as _dt
import os
import socket
import time
from typing import Any

import torch

from trainers.collectives.base import Collectives, Handle, check_tensor, wire_dtype

__all__ = ["TorchCollectives", "rendezvous", "free_port", "INIT_TIMEOUT_S"]

INIT_TIMEOUT_S = 120.0
"""Seconds a collective may wait for a peer before torch.distributed raises (instead of hanging)."""

_NATIVE = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32,
           torch.int64)


def free_port(host: str = "") -> int:
    """A TCP port the OS reports free on ``host`` (bound and released at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def rendezvous(comm: Any) -> str:
    """``tcp://ADDR:PORT`` agreed over MPI: rank 0 chooses, every rank receives the same string."""
    hosts = comm.allgather(socket.gethostname())
    url = None
    if comm.Get_rank() == 0:
        addr = os.environ.get("MASTER_ADDR")
        if not addr:
            addr = "127.0.0.1" if len(set(hosts)) == 1 else socket.gethostbyname(socket.gethostname())
        port = os.environ.get("MASTER_PORT") or str(free_port("127.0.0.1" if addr == "127.0.0.1" else ""))
        url = f"tcp://{addr}:{port}"
    return comm.bcast(url, root=0)


_OPS = {"sum": "SUM", "mean": "SUM", "max": "MAX"}


class _TorchHandle(Handle):
    def __init__(self, work: Any, finish: Any) -> None:
        super().__init__(time.perf_counter(), finish)
        self.work = work
        try:
            work.get_future().then(self._on_complete)
        except (RuntimeError, AttributeError):  # a backend without futures: completion seen by test/wait
            pass

    def _on_complete(self, fut: Any) -> None:
        self._mark()

    def _done(self) -> bool:
        return bool(self.work.is_completed())

    def _block(self) -> None:
        self.work.wait()


class TorchCollectives(Collectives):
    """torch.distributed collectives of one group; create the world with :meth:`world`."""

    def __init__(self, name: str, comm: Any, device: torch.device, group: Any, global_ranks: list[int],
                 *, owns: bool) -> None:
        self.name = name
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.device = device
        self.group = group
        self.global_ranks = global_ranks
        self._owns = owns
        if name == "nccl":
            v = torch.cuda.nccl.version()
            self.library = f"NCCL {'.'.join(map(str, v)) if isinstance(v, tuple) else v} (torch {torch.__version__})"
        else:
            self.library = f"gloo (torch {torch.__version__})"

    @classmethod
    def world(cls, name: str, comm: Any, device: torch.device) -> TorchCollectives:
        """Join (or reuse) the default process group of backend ``name`` over the ranks of MPI comm."""
        import torch.distributed as dist

        if dist.is_initialized():
            if dist.get_backend() != name or dist.get_world_size() != comm.Get_size() \
                    or dist.get_rank() != comm.Get_rank():
                raise ValueError(f"torch.distributed already runs {dist.get_backend()} on "
                                 f"{dist.get_world_size()} ranks; cannot start {name} on {comm.Get_size()}")
            owns = False
        else:
            url = rendezvous(comm)
            kwargs: dict[str, Any] = {}
            if name == "nccl":
                kwargs["device_id"] = device
            dist.init_process_group(name, init_method=url, rank=comm.Get_rank(), world_size=comm.Get_size(),
                                    timeout=_dt.timedelta(seconds=INIT_TIMEOUT_S), **kwargs)
            owns = True
        return cls(name, comm, device, None, list(range(comm.Get_size())), owns=owns)

    # ------------------------------------------------------------------------------- plumbing

    def _wire(self, t: torch.Tensor) -> torch.Tensor:
        return t if wire_dtype(t.dtype, _NATIVE) == t.dtype else t.to(wire_dtype(t.dtype, _NATIVE))

    def _finisher(self, t: torch.Tensor, work: torch.Tensor, op: str) -> Any:
        def finish() -> None:
            if work.data_ptr() != t.data_ptr():
                t.copy_(work / self.size if op == "mean" else work)
            elif op == "mean":
                t.div_(self.size)
        return finish

    def _reduce_op(self, op: str) -> Any:
        import torch.distributed as dist

        return getattr(dist.ReduceOp, _OPS[op])

    # ------------------------------------------------------------------------------- collectives

    def allreduce(self, t: torch.Tensor, op: str = "sum") -> None:
        self.allreduce_async(t, op).wait()

    def allreduce_async(self, t: torch.Tensor, op: str = "sum") -> Handle:
        import torch.distributed as dist

        check_tensor(t, op)
        work = self._wire(t)
        job = dist.all_reduce(work, op=self._reduce_op(op), group=self.group, async_op=True)
        return _TorchHandle(job, self._finisher(t, work, op))

    def allgather(self, t: torch.Tensor) -> torch.Tensor:
        import torch.distributed as dist

        check_tensor(t)
        work = self._wire(t)
        rows = [torch.empty_like(work) for _ in range(self.size)]
        dist.all_gather(rows, work, group=self.group)
        return torch.stack(rows).to(t.dtype)

    def alltoall(self, t: torch.Tensor) -> torch.Tensor:
        import torch.distributed as dist

        check_tensor(t)
        if t.numel() % self.size:
            raise ValueError(f"alltoall needs a numel divisible by {self.size}, got {t.numel()}")
        work = self._wire(t)
        out = torch.empty_like(work)
        dist.all_to_all_single(out, work, group=self.group)
        return out.to(t.dtype)

    def broadcast(self, t: torch.Tensor, root: int = 0) -> None:
        import torch.distributed as dist

        check_tensor(t)
        self._check_root(root)
        work = self._wire(t)
        dist.broadcast(work, src=self.global_ranks[root], group=self.group)
        if work.data_ptr() != t.data_ptr():
            t.copy_(work)

    def split(self, color: int) -> TorchCollectives:
        """Sub-group of the ranks with the same color; every rank of the world must call it (torch's
        new_group is collective over the world), so only the world object splits."""
        import torch.distributed as dist

        if self.group is not None:
            raise ValueError("split a torch.distributed world, not a sub-group (new_group involves every rank)")
        colors = self.comm.allgather(int(color))
        mine = None
        for c in sorted(set(colors)):
            ranks = [r for r, k in enumerate(colors) if k == c]
            group = dist.new_group(ranks, timeout=_dt.timedelta(seconds=INIT_TIMEOUT_S))
            if c == colors[self.rank]:
                mine = (group, ranks)
        assert mine is not None
        sub = self.comm.Split(color=int(color), key=self.rank)
        return TorchCollectives(self.name, sub, self.device, mine[0], mine[1], owns=True)

    def barrier(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.comm.Barrier()

    def close(self) -> None:
        import torch.distributed as dist

        if not self._owns:
            return
        self._owns = False
        if self.group is None:
            if dist.is_initialized():
                dist.destroy_process_group()
        else:
            self.comm.Free()
