"""Which device a rank computes on: ``--device cpu|cuda|auto``, one GPU per rank chosen by its local rank.

The local rank (this rank's index among the ranks on its host) comes from the launcher's environment --
``OMPI_COMM_WORLD_LOCAL_RANK`` (Open MPI), ``MPI_LOCALRANKID`` (MPICH/Intel MPI), ``SLURM_LOCALID``
(srun) -- or, without any of them, from an MPI shared-memory split of the communicator
(``Comm.Split_type(COMM_TYPE_SHARED)``), which every rank then performs alike.

Bad requests (``cuda`` without CUDA, more ranks on a host than it has GPUs) are found on each rank and
agreed over MPI, so that every rank raises the same :class:`trainers.errors.UsageError` and the job ends with
status 2 instead of hanging in a collective that some ranks never reach. Importing this module does
not import torch (``trainers.run`` reads :data:`DEVICES`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trainers.errors import UsageError


if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["DEVICES", "LOCAL_RANK_ENV", "local_rank", "choose_device", "select_device", "select_worker_device",
           "agree", "describe", "WORLD_ENV", "env_world"]


DEVICES = ("cpu", "cuda", "auto")

LOCAL_RANK_ENV = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID")
"""Environment variables launchers set to a rank's index on its host, in the order they are read."""


def local_rank(comm: Any = None, env: Mapping[str, str] | None = None) -> int:
    """This rank's index among the ranks of its host (see the module docstring); 0 without MPI."""
    env = os.environ if env is None else env
    for key in LOCAL_RANK_ENV:
        value = env.get(key, "").strip()
        if value.isdigit():
            return int(value)
    if comm is None:
        return 0
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    try:
        return int(node.Get_rank())
    finally:
        node.Free()


WORLD_ENV = (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMIX_RANK", "PMIX_SIZE"), ("PMI_RANK", "PMI_SIZE"),
             ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"))
"""(rank, size) environment variables of the launchers (Open MPI, PMIx, PMI, MVAPICH), in the order they are read."""


def env_world(env: Mapping[str, str] | None = None) -> tuple[int, int | None]:
    """(rank, size) of this process from the launcher's environment, without starting MPI: (0, 1)
    outside a launcher; size None when the launcher sets only the rank."""
    env = os.environ if env is None else env
    for rank_key, size_key in WORLD_ENV:
        rank = env.get(rank_key, "").strip()
        if rank.isdigit():
            size = env.get(size_key, "").strip()
            return int(rank), int(size) if size.isdigit() else None
    return 0, 1


def agree(comm: Any, problem: str | None) -> None:
    """Raise UsageError on every rank of comm if any rank found a problem (the lowest rank's message)."""
    problems = [problem] if comm is None else comm.allgather(problem)
    for rank, p in enumerate(problems):
        if p is not None:
            raise UsageError(p if comm is None or comm.Get_size() == 1 else f"{p} (rank {rank})")


def choose_device(request: str, index: int) -> tuple[torch.device | None, str | None]:
    """(device, None) for ``--device request`` on the rank with local index ``index``, or (None, problem)."""
    import torch

    if request not in DEVICES:
        return None, f"unknown device {request!r}; choose from {', '.join(DEVICES)}"
    if request == "cpu":
        return torch.device("cpu"), None
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if request == "auto":
        return (torch.device("cuda", index) if index < count else torch.device("cpu")), None
    if count == 0:
        return None, "--device cuda, but torch sees no CUDA GPU (torch.cuda.is_available() is False)"
    if index >= count:
        return None, f"--device cuda needs one GPU per rank: local rank {index} on a host with {count} GPU(s)"
    return torch.device("cuda", index), None


def select_device(request: str, comm: Any = None, env: Mapping[str, str] | None = None) -> torch.device:
    """The torch.device for ``--device request`` on this rank; makes a chosen GPU the current device.

    "cpu": the CPU. "cuda": GPU number local_rank (UsageError on every rank when a rank has none).
    "auto": that GPU when this host has one per rank, else the CPU -- decided alike on every rank.
    """
    import torch

    device, problem = choose_device(request, local_rank(comm, env))
    agree(comm, problem)
    if request == "auto" and comm is not None and comm.Get_size() > 1:
        kinds = comm.allgather(device.type)  # one device type for the whole job
        if len(set(kinds)) > 1:
            device = torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device


def select_worker_device(request: str, comm: Any) -> torch.device:
    """The parameter server's placement: rank 0 (the server) on the CPU, every other rank (a worker) on
    the device of ``request`` chosen by its index among the workers of its host (an MPI shared-memory
    split of the workers). Collective over comm; UsageError on every rank alike."""
    import torch

    worker = comm.Get_rank() > 0
    workers = comm.Split(1 if worker else 0, key=comm.Get_rank())
    try:
        device, problem = (choose_device(request, local_rank(workers, env={})) if worker
                           else (torch.device("cpu"), None))
    finally:
        workers.Free()
    agree(comm, problem)
    if request == "auto" and len({d for i, d in enumerate(comm.allgather(device.type)) if i > 0}) > 1:
        device = torch.device("cpu")  # one device type for every worker
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device


def describe(device: torch.device) -> str:
    """"cpu" or "cuda:N (GPU name)" for run-log headers."""
    import torch

    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    return str(device)
