"""A parameter-server worker's loop (ranks 1..N): pull parameters, compute a gradient on its next batch
(the simulator's batches, seeds and model code), pad it to an injected batch time, push; the GEM family
commits against the central parameters (trainers.asynchronous.ps describes the protocol)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from trainers.config import AsyncConfig, PSOptions
from trainers.faults import worker_hooks
from trainers.asynchronous.data_streams import BatchStream, DelaySchedule, load_data, step_seed
from trainers.asynchronous.flat_model import FlatModel, build_worker_rule
from trainers.asynchronous.ps_messages import (DN_LEN, GRAD, REQUEST, STOP, TAG_DN_DATA, TAG_DN_HDR, TAG_UP_DATA,
                                               TAG_UP_HDR, wait)

__all__ = ["work"]


def work(cfg: AsyncConfig, comm: Any, opt: PSOptions, device: torch.device | None = None) -> None:
    """Worker rank comm.Get_rank() (worker w = rank - 1) until the server answers STOP; gradients on
    ``device`` (parameters arrive and gradients leave on the CPU)."""
    from mpi4py import MPI

    w = comm.Get_rank() - 1
    train, _ = load_data(cfg, test=False)
    fm = FlatModel.build(cfg, device or "cpu")  # parameters arrive and gradients leave on the CPU
    stream = BatchStream(train, cfg, w) if train is not None else None
    delays = DelaySchedule(cfg) if cfg.delays != "none" and opt.replay_order is None else None
    wr = build_worker_rule(cfg)
    ask = wr is not None and (wr.needs_central or wr.needs_tau)
    params = torch.empty(fm.numel, dtype=torch.float32)
    central = torch.empty(fm.numel, dtype=torch.float32) if ask else None
    down = np.zeros(DN_LEN)
    before_gradient, on_gradient = worker_hooks(opt.fail_worker, opt.fail_after, opt.fail_mode)  # tests only

    def receive(into: torch.Tensor | None) -> float:
        wait(comm.Irecv([down, MPI.DOUBLE], source=0, tag=TAG_DN_HDR), opt.poll_s)
        if down[0] != STOP:
            wait(comm.Irecv([into.numpy(), MPI.FLOAT], source=0, tag=TAG_DN_DATA), opt.poll_s)
        return down[0]

    def push(kind: float, loss: float, t_c: float, t_idle: float, k: int, data: torch.Tensor | None) -> None:
        head = np.array([kind, loss, t_c, t_idle, k, samples, t_exchange], dtype=np.float64)
        comm.Send([head, MPI.DOUBLE], dest=0, tag=TAG_UP_HDR)
        if data is not None:
            comm.Send([data.contiguous().numpy(), MPI.FLOAT], dest=0, tag=TAG_UP_DATA)

    receive(params)
    lr = float(down[1])
    k = 0
    t_exchange = -1.0  # seconds of the previous exchange (push start to parameters in hand); none yet
    while True:
        for hook in before_gradient:
            hook(w, k)
        t0 = time.perf_counter()
        x, y = stream.next() if stream is not None else (None, None)
        samples = len(y) if y is not None else cfg.batch
        g, loss = fm.gradient(params, x, y, step_seed(cfg.seed, w, k))
        for hook in on_gradient:
            hook(w, k, g)
        t_c = time.perf_counter() - t0
        t_idle = 0.0
        if delays is not None:
            t_idle = max(0.0, delays.time(w, k) - t_c)
            time.sleep(t_idle)
        t_push = time.perf_counter()
        if wr is None:
            push(GRAD, loss, t_c, t_idle, k, g)
        else:
            if cfg.weight_decay:
                g = g.add(params, alpha=cfg.weight_decay)
            delta = g.mul(-lr)
            if ask:
                push(REQUEST, loss, t_c, t_idle, k, None)
                if receive(central) == STOP:
                    break
                push_data = wr.commit(delta, params, central, tau=int(down[2]))
                comm.Send([push_data.contiguous().numpy(), MPI.FLOAT], dest=0, tag=TAG_UP_DATA)
            else:
                push(GRAD, loss, t_c, t_idle, k, wr.commit(delta, params, None))
        k += 1
        if receive(params) == STOP:
            break
        t_exchange = time.perf_counter() - t_push
        lr = float(down[1])
