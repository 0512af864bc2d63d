"""What the benchmarks share: the median wall time of a call; the MPI benchmarks' model and training step."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Median seconds of ``repeats`` calls of fn, after one untimed warm-up call (numba compiles there)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def add_model_options(parser: argparse.ArgumentParser, untimed: int) -> None:
    """--model, --batch and --rounds of the MPI benchmarks that time a training loop."""
    parser.add_argument("--model", default="lenet", help="a workload of perfmodel's model library")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=40, help=f"timed rounds (after {untimed} untimed ones)")


def mpi_training(model_name: str, batch: int) -> tuple[Any, Any, Any, Any, dict, Callable[[int], None]]:
    """(MPI.COMM_WORLD, model, optimizer, loss, inputs by batch, step(batch)) for ``model_name`` on this
    rank, as ``perfmodel profile`` trains it on the CPU: one torch thread, seeded by the rank."""
    import torch
    from mpi4py import MPI

    from perfmodel.lab.profile.compute import _training, load_workload_model

    torch.set_num_threads(1)
    comm = MPI.COMM_WORLD
    torch.manual_seed(comm.Get_rank())
    model, info = load_workload_model(model_name)
    return (comm, *_training(model, info.input_shape, info.num_classes, [batch], "cpu", 1e-3))
