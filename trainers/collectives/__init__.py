"""One collective interface for gradient exchanges over MPI, gloo and NCCL (``--backend``).

    from trainers.collectives import open_collectives
    from trainers.device import select_device

    device = select_device("auto", MPI.COMM_WORLD)          # one GPU per rank, or the CPU
    coll = open_collectives("nccl", MPI.COMM_WORLD, device)  # or "gloo", "mpi"
    coll.allreduce(flat_grads, "mean")
    node = coll.split(rank // ranks_per_node)                # DASO's node-local group
    ...
    coll.close()

Backends (:data:`BACKENDS`): ``mpi`` (mpi4py; CUDA tensors host-staged unless the MPI library is
CUDA-aware), ``gloo`` (torch.distributed, CPU tensors) and ``nccl`` (torch.distributed, CUDA tensors;
needs ``--device cuda``). The interface is :class:`trainers.collectives.base.Collectives`. Bad choices
raise :class:`trainers.errors.UsageError` on every rank alike (``trainers run`` prints one line, exits 2).
Importing this package does not import torch or mpi4py (``trainers.run`` reads :data:`BACKENDS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainers.errors import UsageError


if TYPE_CHECKING:  # pragma: no cover
    import torch

    from trainers.collectives.base import Collectives

__all__ = ["BACKENDS", "open_collectives", "check_backend", "resolve_backend"]


BACKENDS = ("mpi", "gloo", "nccl")
"""Names ``--backend`` takes."""


def resolve_backend(name: str, device_type: str) -> str:
    """``auto`` -> ``nccl`` for CUDA ranks, ``mpi`` for CPU ranks; other names unchanged."""
    if name == "auto":
        return "nccl" if device_type == "cuda" else "mpi"
    return name


def check_backend(name: str, device: torch.device | str) -> None:
    """UsageError when backend ``name`` is unknown or cannot reduce tensors on ``device``."""
    import torch

    device = torch.device(device)
    if name not in BACKENDS:
        raise UsageError(f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}")
    if name == "nccl" and device.type != "cuda":
        raise UsageError(f"--backend nccl reduces CUDA tensors; the ranks compute on {device.type} "
                         f"(use --device cuda on GPUs, or --backend gloo|mpi)")
    if name == "nccl":
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_nccl_available():
            raise UsageError("--backend nccl: this torch build has no NCCL")
    if name == "gloo":
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_gloo_available():
            raise UsageError("--backend gloo: this torch build has no gloo")


def open_collectives(name: str, comm: Any, device: torch.device | str = "cpu") -> Collectives:
    """The world group of backend ``name`` over the ranks of mpi4py ``comm`` for tensors on ``device``.

    Collective: every rank of comm calls it. Checks (:func:`check_backend`) are the same on every rank,
    so a bad choice raises UsageError everywhere before any rank waits on another."""
    import torch

    device = torch.device(device)
    check_backend(name, device)
    if name == "mpi":
        from trainers.collectives.mpi import MPICollectives

        return MPICollectives(comm, device)
    from trainers.collectives.torch_dist import TorchCollectives

    return TorchCollectives.world(name, comm, device)
