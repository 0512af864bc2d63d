"""Checkpoints of the MPI trainers: written atomically by rank 0, read back by every rank.

A checkpoint is one ``torch.save`` file holding a dict::

    {"format": 1, "algo": ..., "config": {...}, "world": K, "step": steps done,
     "shared": {...},            # rank 0's replicated state (model, optimizer) or {}
     "ranks": [state_0, ...]}    # one dict per rank: RNG states, algorithm state, per-rank tensors

Every tensor in it is a host copy (:func:`host_copy`, made on each rank before the gather): MPI's
pickling never carries GPU tensors, which would otherwise be restored on rank 0 onto the other ranks'
GPU indices (extra CUDA contexts, or a crash where rank 0 sees fewer GPUs). Each rank restores onto its
own device (load_state_dict copies into its tensors). The RNG states include the CUDA generator of the
rank's current GPU when CUDA is in use.

It is written to a temporary file in the same folder, flushed, fsynced and moved into place with
``os.replace``, so a reader sees the old checkpoint or the new one, never a torn file.

Example::

    states = gather_to_root(comm, host_copy(my_state))             # collective; a list on rank 0, None elsewhere
    if comm.Get_rank() == 0:
        save_checkpoint(path, {"format": 1, ..., "ranks": states})
    ...
    ckpt = load_checkpoint(path)                         # every rank reads the file itself
    restore_rng(ckpt["ranks"][rank]["rng"])
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainers.errors import TrainerError

__all__ = [
    "FORMAT",
    "CheckpointError",
    "save_checkpoint",
    "load_checkpoint",
    "check_run_layout",
    "rng_state",
    "restore_rng",
    "gather_to_root",
    "host_copy",
]

FORMAT = 1
"""Version of the checkpoint layout; load_checkpoint refuses any other."""


class CheckpointError(TrainerError):
    """A checkpoint is missing, unreadable, of another format or of an incompatible run (one line)."""


def save_checkpoint(path: str | os.PathLike, state: dict[str, Any]) -> Path:
    """Write ``state`` to ``path`` atomically (temporary file + fsync + os.replace); return the path.

    The folder is created if needed. A failure leaves the previous checkpoint (if any) untouched.
    """
    from perfmodel.fileio import atomic_open

    path = Path(path)
    with atomic_open(path, "wb") as f:
        torch.save(state, f)
    return path


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Read a checkpoint written by save_checkpoint; CheckpointError (one line) when it cannot be used."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # torch raises many types for a corrupt file
        msg = " ".join(str(exc).split())[:200]
        raise CheckpointError(f"checkpoint {path} cannot be read ({type(exc).__name__}: {msg})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        got = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(f"checkpoint {path}: format {got!r}, expected {FORMAT}")
    return state


#: the entries of a trainers run checkpoint and their types (the module docstring's layout)
RUN_LAYOUT: dict[str, type | tuple[type, ...]] = {"config": dict, "world": int, "step": int, "shared": dict,
                                                  "ranks": list}


def check_run_layout(path: str | os.PathLike, state: dict[str, Any], world: int) -> dict[str, Any]:
    """``state`` (from load_checkpoint) if it has a run's layout for ``world`` ranks: the RUN_LAYOUT entries
    of their types, a step >= 0 and one dict per rank; else CheckpointError naming the first entry that
    is not (a file of another program, or edited: each rank would fail on its own part)."""
    for key, kind in RUN_LAYOUT.items():
        value = state.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise CheckpointError(f"checkpoint {path}: {key!r} must be a {kind.__name__}, got "
                                  f"{'nothing' if key not in state else type(value).__name__}; not a checkpoint "
                                  f"of a trainers run")
    if state["step"] < 0:
        raise CheckpointError(f"checkpoint {path}: step must be >= 0, got {state['step']}")
    ranks = state["ranks"]
    if state["world"] == world and (len(ranks) != world or not all(isinstance(r, dict) for r in ranks)):
        raise CheckpointError(f"checkpoint {path}: 'ranks' must hold one state per rank ({world}), got "
                              f"{len(ranks)} entries")
    return state


def rng_state() -> dict[str, Any]:
    """The process's global random states: torch (CPU), numpy, python ``random``, and ``cuda`` (the
    current GPU's generator, a CPU byte tensor) once this process has initialized CUDA."""
    state = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def restore_rng(state: dict[str, Any]) -> None:
    """Restore what rng_state returned (the CUDA state onto this rank's current GPU)."""
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def host_copy(obj: Any) -> Any:
    """``obj`` with every tensor (in dicts, lists, tuples) replaced by a CPU copy of it: what a rank
    hands to the gather. Meta tensors (no data: dry runs, tests) become uninitialized CPU tensors of
    their shape and type."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        if t.device.type == "meta":
            return torch.empty(t.shape, dtype=t.dtype)
        return t.to("cpu", copy=True)
    if isinstance(obj, dict):
        out = type(obj)((k, host_copy(v)) for k, v in obj.items())
        if hasattr(obj, "_metadata"):  # a module state_dict's versions (load_state_dict reads them)
            out._metadata = obj._metadata
        return out
    if isinstance(obj, list):
        return [host_copy(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(host_copy(v) for v in obj)
    return obj


def gather_to_root(comm: Any, obj: Any, root: int = 0) -> list[Any] | None:
    """Collective: every rank's picklable ``obj``; a list in rank order on ``root``, None elsewhere."""
    return comm.gather(obj, root=root)
