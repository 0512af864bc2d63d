"""Backprop and the gradient's collective, timed alone and together on every rank of an MPI run.

perfmodel.overlap charges a collective that runs during backprop with two slowdowns: backprop advances
at 1/(1+sigma) of its speed while the collective runs, the collective at 1/(1+mu). This module measures
what those are on the machine at hand, with the trainer's own exchange: ``time_overlap`` times, at
each batch size and on all ranks at once (each round after a barrier),

    a   the backward pass alone;
    c   a non-blocking Allreduce of the model's gradient bytes (trainers.collectives.mpi, what
        trainers.grad_buckets starts for a bucket), waited for at once;
    a', c'  the end of the backward pass and of that Allreduce, from their common start, when the
        Allreduce starts as backprop begins and every parameter's gradient hook polls it (MPI moves a
        non-blocking collective only inside MPI calls; the trainer polls from the same hooks).

perfmodel.overlap_causes.solve_slowdowns turns (a, c, a', c') into (sigma, mu); `perfmodel predict
--profile` then charges the measured slowdowns instead of the constant (perfmodel.lab.profile.predictor).
CPU ranks only: the run is the CPU training step of perfmodel.lab.profile.compute.concurrent_compute,
run by perfmodel.lab.profile.comm beside it. Its record in the profile is
perfmodel.lab.profile.overlap_record.OverlapTiming (``ConcurrentCompute.overlap``).
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from .overlap_record import OverlapTiming
from .schema import ProfileError

__all__ = ["time_overlap"]


def time_overlap(comm: Any, model: Any, input_shape: Sequence[int], num_classes: int, batches: Sequence[int], *,
                 warmup: int = 3, repeats: int = 10, threads: int | None = 1, seed: int = 0) -> OverlapTiming | None:
    """Time backprop and an Allreduce of the model's gradient bytes alone and together (module
    docstring) on every rank of the mpi4py communicator ``comm``: ``warmup`` untimed rounds, then
    ``repeats`` timed ones, each taking the batch sizes in turn, on the CPU training step of
    perfmodel.lab.profile.compute (random inputs of ``input_shape``, ``num_classes`` labels). Returns
    the medians over rounds of the mean over ranks (seconds) as an ``OverlapTiming`` on rank 0, None
    elsewhere."""
    import numpy as np
    import torch

    from trainers.collectives.mpi import MPICollectives

    from .compute import ranks_training

    bs, (model, _, loss_fn, inputs, _) = ranks_training(comm, model, input_shape, num_classes, batches, warmup,
                                                        repeats, threads, seed, 1e-3)
    params = [p for p in model.parameters() if p.requires_grad]
    nbytes = 4 * sum(p.numel() for p in params)  # float32 gradients, as the trainer sends them
    if not params:
        raise ProfileError("overlap timing needs a model with trainable parameters")
    coll = MPICollectives(comm)
    buf = torch.ones(nbytes // 4)
    state: dict[str, Any] = {"handle": None}

    def poll(_: Any) -> None:  # trainers.grad_buckets' _poll: let the collective in flight progress
        h = state["handle"]
        if h is not None and h.completed_at is None:
            h.test()

    hooks = [p.register_post_accumulate_grad_hook(poll) for p in params]

    def backward(b: int, with_collective: bool) -> tuple[float, float]:
        x, y = inputs[b]
        model.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y)
        buf.fill_(1.0)  # repeated sums would overflow
        comm.Barrier()
        t0 = time.perf_counter()
        if with_collective:
            state["handle"] = coll.allreduce_async(buf)
        loss.backward()
        t1 = time.perf_counter()
        if not with_collective:
            return t1 - t0, 0.0
        h, state["handle"] = state["handle"], None
        h.wait()
        return t1 - t0, h.completed_at - t0

    def collective() -> float:
        buf.fill_(1.0)
        comm.Barrier()
        t0 = time.perf_counter()
        coll.allreduce_async(buf).wait()
        return time.perf_counter() - t0

    times = np.empty((repeats, len(bs), 4))  # rounds x batches x (a, c, a', c')
    try:
        for it in range(warmup + repeats):
            for j, b in enumerate(bs):
                a, _ = backward(b, False)
                c = collective()
                a2, c2 = backward(b, True)
                if it >= warmup:
                    times[it - warmup, j] = (a, c, a2, c2)
    finally:
        for h in hooks:
            h.remove()
        model.zero_grad(set_to_none=False)
    mean = comm.allreduce(times) / comm.Get_size()  # the mean over ranks of each round's times
    if comm.Get_rank() != 0:
        return None
    med = np.median(mean, axis=0)  # batches x 4
    return OverlapTiming(nbytes=int(nbytes), batches=tuple(bs), compute_s=tuple(float(v) for v in med[:, 0]),
                         comm_s=tuple(float(v) for v in med[:, 1]), both_compute_s=tuple(float(v) for v in med[:, 2]),
                         both_comm_s=tuple(float(v) for v in med[:, 3]), repeats=repeats)
