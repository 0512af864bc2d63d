"""Which device a rank computes on: ``--device cpu|cuda|auto``, one GPU per rank chosen by its local rank.

The local rank (this rank's index among the ranks on its host) comes from the launcher's environment --
``OMPI_COMM_WORLD_LOCAL_RANK`` (Open MPI), ``MPI_LOCALRANKID`` (MPICH/Intel MPI), ``SLURM_LOCALID``
(srun) -- or, without any of them, from an MPI shared-memory split of the communicator
(``Comm.Split_type(COMM_TYPE_SHARED)``), which every rank then performs alike.

The GPU is chosen from the devices the rank can *see*: with one visible GPU (``srun --gpus-per-task=1``,
or a launcher that sets ``CUDA_VISIBLE_DEVICES`` per rank) the rank uses it whatever its local rank;
with several, GPU number local rank. Two ranks of a host on one GPU (a stale ``SLURM_LOCALID`` under
another launcher, ``CUDA_VISIBLE_DEVICES`` set alike for all) is refused unless ``DSGD_SHARE_GPUS=1``
(:data:`SHARE_ENV`). ``--device auto`` uses the GPUs when every rank has its own, else the CPU -- and
then says why on rank 0 in one line (``trainers: note: ...``) whenever CUDA is present.

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

__all__ = ["DEVICES", "LOCAL_RANK_ENV", "SHARE_ENV", "local_rank", "choose_device", "select_device",
           "select_worker_device", "agree", "describe", "WORLD_ENV", "env_world", "timing_events", "stream_sync",
           "set_numerics"]

SHARE_ENV = "DSGD_SHARE_GPUS"
"""Environment variable: 1 lets ranks of one host share a GPU (refused otherwise)."""


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


def _visible_gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _pick(request: str, index: int, count: int) -> tuple[torch.device | None, str | None, str | None]:
    """(device, problem, why the CPU) for ``--device request`` with local index ``index`` and ``count``
    visible GPUs; ``why`` says why "auto" chose the CPU."""
    import torch

    if request not in DEVICES:
        return None, f"unknown device {request!r}; choose from {', '.join(DEVICES)}", None
    if request == "cpu":
        return torch.device("cpu"), None, None
    if count == 1:
        return torch.device("cuda", 0), None, None  # one visible GPU: this rank's, whatever its local rank
    if request == "auto":
        if count == 0:
            return torch.device("cpu"), None, "torch sees no CUDA GPU"
        if index >= count:
            return torch.device("cpu"), None, f"local rank {index} on a host with {count} visible GPU(s)"
        return torch.device("cuda", index), None, None
    if count == 0:
        return None, "--device cuda, but torch sees no CUDA GPU (torch.cuda.is_available() is False)", None
    if index >= count:
        return None, (f"--device cuda needs one GPU per rank: local rank {index} on a host with {count} visible "
                      f"GPU(s)"), None
    return torch.device("cuda", index), None, None


def choose_device(request: str, index: int, count: int | None = None) -> tuple[torch.device | None, str | None]:
    """(device, None) for ``--device request`` on the rank with local index ``index``, or (None, problem);
    ``count``: visible GPUs (default: torch's count). One visible GPU is cuda:0 whatever ``index``."""
    device, problem, _ = _pick(request, index, _visible_gpus() if count is None else count)
    return device, problem


def _gpu_id(device: torch.device) -> str:
    """A physical GPU's identity on its host (its UUID where torch reports one)."""
    import torch

    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    return str(uuid) if uuid else f"{os.environ.get('CUDA_VISIBLE_DEVICES', '*')}/{device.index}"


def _sharing(comm: Any, device: torch.device, members: list[int] | None = None) -> str | None:
    """Collective: a problem naming two ranks of one host on one GPU, unless DSGD_SHARE_GPUS=1."""
    import socket

    mine = (socket.gethostname(), _gpu_id(device)) if device.type == "cuda" else None
    ids = comm.allgather(mine)
    if os.environ.get(SHARE_ENV, "").strip() == "1":
        return None
    seen: dict[tuple[str, str], int] = {}
    for rank, key in enumerate(ids):
        if key is None or (members is not None and rank not in members):
            continue
        if key in seen:
            return (f"ranks {seen[key]} and {rank} on host {key[0]} would share GPU {key[1]}; give each rank its own "
                    f"GPU (check SLURM_LOCALID / CUDA_VISIBLE_DEVICES for this launcher) or set {SHARE_ENV}=1")
        seen[key] = rank
    return None


def _note(comm: Any, why: str | None) -> None:
    """One line on rank 0 (or alone) when --device auto chose the CPU although CUDA is present."""
    import sys

    if why is None or _visible_gpus() == 0 and why.startswith("torch sees no CUDA GPU"):
        return  # no GPU here at all (on every rank: "... (rank r)"): the CPU is not a fallback
    if comm is None or comm.Get_rank() == 0:
        print(f"trainers: note: --device auto runs on the CPU: {why}", file=sys.stderr, flush=True)


def select_device(request: str, comm: Any = None, env: Mapping[str, str] | None = None) -> torch.device:
    """The torch.device for ``--device request`` on this rank; makes a chosen GPU the current device.

    "cpu": the CPU. "cuda": the rank's visible GPU when it sees one, else GPU number local_rank
    (UsageError on every rank when a rank has none, or when two ranks of a host would share one).
    "auto": the GPUs when every rank has its own, else the CPU with a one-line note -- alike on every rank.
    """
    import torch

    device, problem, why = _pick(request, local_rank(comm, env), _visible_gpus())
    agree(comm, problem)
    if request == "auto" and comm is not None and comm.Get_size() > 1:
        reasons = comm.allgather(why)  # one device type for the whole job
        first = next(((r, w) for r, w in enumerate(reasons) if w is not None), None)
        if first is not None:
            device, why = torch.device("cpu"), f"{first[1]} (rank {first[0]})"
    if comm is not None:
        shared = _sharing(comm, device)
        if request == "auto" and shared is not None:  # the same allgather result on every rank
            device, why, shared = torch.device("cpu"), shared, None
        agree(comm, shared)
    if request == "auto":
        _note(comm, why)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device


def select_worker_device(request: str, comm: Any) -> torch.device:
    """The parameter server's placement: rank 0 (the server) on the CPU, every other rank (a worker) on
    the device of ``request`` chosen by its index among the workers of its host (an MPI shared-memory
    split of the workers; one visible GPU is the worker's whatever the index). Collective over comm;
    UsageError on every rank alike."""
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
    agree(comm, _sharing(comm, device))
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device


def timing_events(device: torch.device) -> Any:
    """For trainers.timers.StepTimer(events=...): a factory of timing CUDA events on ``device``, None
    on the CPU (the timer then reads the host clock)."""
    import torch

    if device.type != "cuda":
        return None
    return lambda: torch.cuda.Event(enable_timing=True)


def stream_sync(device: torch.device) -> Any:
    """A callable that waits for the work queued on ``device``'s current stream (not the whole device:
    collectives on NCCL's streams keep running); None on the CPU."""
    import torch

    if device.type != "cuda":
        return None
    return lambda: torch.cuda.current_stream(device).synchronize()


def set_numerics(tf32: bool = False, deterministic: bool = True) -> dict[str, bool]:
    """Set the CUDA numerics this process computes with and return them for the run-log header:
    TF32 matmuls and convolutions (off by default: float32 means float32), cuDNN deterministic
    algorithms without autotuning (on by default: runs repeat bit for bit). Harmless without CUDA."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = bool(tf32)
    torch.backends.cudnn.allow_tf32 = bool(tf32)
    torch.backends.cudnn.deterministic = bool(deterministic)
    torch.backends.cudnn.benchmark = not deterministic
    return {"tf32": bool(tf32), "cudnn_deterministic": bool(deterministic), "cudnn_benchmark": not deterministic}


def describe(device: torch.device) -> str:
    """"cpu" or "cuda:N (GPU name)" for run-log headers."""
    import torch

    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    return str(device)
