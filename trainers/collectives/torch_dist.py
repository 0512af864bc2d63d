"""Collectives through torch.distributed: NCCL for CUDA tensors, gloo for CPU tensors.

MPI stays the launcher and the control plane: :func:`rendezvous` has rank 0 pick a free TCP port on an
address every rank can reach -- loopback when every rank runs on its host, else ``MASTER_ADDR`` when set,
else the address of the interface that routes to the other ranks' hosts (:func:`master_address`) --
and every rank learns it (or the one-line reason there is none) from one allgather and one broadcast
that every rank reaches, so a failed lookup on any rank ends every rank alike (UsageError), never with
ranks waiting in different collectives. Every rank joins the process group with its MPI rank.
Sub-groups are ``torch.distributed.new_group`` (created by every rank of the world, in the same order,
as torch requires) next to an MPI ``Comm.Split`` of the same ranks.

Completion times: a work's future fires when gloo has finished but when NCCL has only *enqueued* the
operation, so a handle counts its completion only once ``work.is_completed()`` says so. On CUDA it also
(NCCL) records a start event on the compute stream before the launch and an end event on a side stream
made to wait for the work (NCCL's ``work.wait()`` under that stream blocks the stream, not the host):
``start_event.elapsed_time(end_event)`` is the collective's time on the device, and no device-wide
``torch.cuda.synchronize`` is needed to read it.

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
from trainers.errors import UsageError

__all__ = ["TorchCollectives", "rendezvous", "master_address", "free_port", "INIT_TIMEOUT_S"]

INIT_TIMEOUT_S = 120.0
"""Seconds a collective may wait for a peer before torch.distributed raises (instead of hanging)."""

_NATIVE = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32,
           torch.int64)


def free_port(host: str = "") -> int:
    """A TCP port the OS reports free on ``host`` (bound and released at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _own_addresses(host: str) -> list[str]:
    """IPv4 addresses ``host`` resolves to (loopback ones included); OSError when the lookup fails."""
    infos = socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _route_to(peer: str) -> str | None:
    """The local address the kernel would send from to reach ``peer`` (a UDP connect sends nothing)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((peer, 9))
            return str(s.getsockname()[0])
    except OSError:
        return None


def master_address(own: list[str], routes: list[str | None]) -> str | None:
    """Rank 0's address for ranks on other hosts: the first local address that routes to a peer (the
    interface MPI's own TCP traffic takes), else the first non-loopback address of rank 0's host name;
    None when there is none (the host resolves only to 127.x, as Debian's 127.0.1.1 entry does)."""
    for addr in routes:
        if addr and not addr.startswith("127."):
            return addr
    return next((a for a in own if not a.startswith("127.")), None)


def rendezvous(comm: Any, master_addr: str | None = None) -> str:
    """``tcp://ADDR:PORT`` agreed over MPI: rank 0 chooses, every rank receives the same string.

    ``master_addr`` (else ``MASTER_ADDR``) overrides the address; ``MASTER_PORT`` the port. Collective:
    one allgather and one broadcast that every rank reaches whatever fails; UsageError on every rank
    (one line naming the rank) when rank 0 finds no address or a rank's lookup fails."""
    rank = comm.Get_rank()
    host, addrs, problem = "?", [], None
    try:
        host = socket.gethostname()
        addrs = _own_addresses(host)
    except OSError as exc:
        problem = f"cannot resolve host name {host!r} of rank {rank} ({exc}); set MASTER_ADDR to an address " \
                  f"of rank 0 that every rank can reach"
    everyone = comm.allgather((host, addrs, problem))
    url: str | None = None
    error: str | None = None
    if rank == 0:
        try:
            url, error = _choose_url(everyone, master_addr or os.environ.get("MASTER_ADDR"))
        except Exception as exc:  # noqa: BLE001 - every rank must reach the broadcast below
            error = f"rendezvous failed on rank 0: {type(exc).__name__}: {' '.join(str(exc).split())}"
    url, error = comm.bcast((url, error), root=0)
    if error is not None:
        raise UsageError(error)
    return str(url)


def _choose_url(everyone: list[tuple[str, list[str], str | None]], addr: str | None) -> tuple[str | None, str | None]:
    hosts = [h for h, _, _ in everyone]
    if not addr:
        if len(set(hosts)) == 1:
            addr = "127.0.0.1"
        else:
            if everyone[0][2] is not None:  # rank 0's own lookup failed: no address to offer
                return None, everyone[0][2]
            peers = [a for h, own, _ in everyone[1:] if h != hosts[0] for a in own if not a.startswith("127.")]
            addr = master_address(everyone[0][1], [_route_to(p) for p in dict.fromkeys(peers)])
            if addr is None:
                return None, (f"host {hosts[0]!r} of rank 0 resolves only to {', '.join(everyone[0][1]) or 'nothing'}"
                              f" and no route to the other ranks' hosts was found; set MASTER_ADDR to an "
                              f"address of rank 0 that every rank can reach")
    port = os.environ.get("MASTER_PORT") or str(free_port("127.0.0.1" if addr == "127.0.0.1" else ""))
    return f"tcp://{addr}:{port}", None


_OPS = {"sum": "SUM", "mean": "SUM", "max": "MAX"}


class _TorchHandle(Handle):
    """A torch.distributed work in flight. ``start_event``/``end_event``: CUDA events around the
    collective on the device (None on the CPU); see the module docstring."""

    def __init__(self, work: Any, finish: Any, start_event: Any = None, side_stream: Any = None) -> None:
        super().__init__(time.perf_counter(), finish)
        self.work = work
        self.start_event, self.end_event = start_event, None
        if side_stream is not None:
            self.end_event = torch.cuda.Event(enable_timing=True)
            with torch.cuda.stream(side_stream):
                work.wait()  # the side stream waits for the collective; the host does not
                self.end_event.record(side_stream)
        try:
            work.get_future().then(self._on_complete)
        except (RuntimeError, AttributeError):  # a backend without futures: completion seen by test/wait
            pass

    def _on_complete(self, fut: Any) -> None:
        # gloo's future fires when the work is done, NCCL's when it is enqueued: trust the work itself
        try:
            done = bool(self.work.is_completed())
        except RuntimeError:
            done = False
        if done:
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
        self._side = None  # CUDA: the stream that waits for collectives to record their end events
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
        start = side = None
        if work.device.type == "cuda" and self.name == "nccl":  # gloo's wait() would block the host here
            if self._side is None:
                self._side = torch.cuda.Stream(work.device)
            side = self._side
            start = torch.cuda.Event(enable_timing=True)
            start.record()  # on the compute stream, after the kernels that wrote t
        job = dist.all_reduce(work, op=self._reduce_op(op), group=self.group, async_op=True)
        return _TorchHandle(job, self._finisher(t, work, op), start, side)

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
            torch.cuda.current_stream(self.device).synchronize()  # this rank's queued work, not NCCL's
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
