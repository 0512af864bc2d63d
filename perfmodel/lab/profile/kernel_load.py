"""The kernel's network CPU time per byte between two hosts, from /proc/stat (`perfmodel profile --link`).

A byte sent between two hosts costs CPU outside any process: the receive path (softirq), the traffic
shaper's dequeue and the transmit completions (softirq, irq). A host counts that time in /proc/stat's
``irq`` and ``softirq`` columns. The two ranks of a link run exchange blocking MPI Sendrecv messages
for a set time while rank 0 reads the counters before and after; then both ranks sleep (no MPI call,
no polling) for as long again and rank 0 reads them once more::

    kappa = (K_busy - K_idle x T_busy / T_idle) / bytes sent      (kernel CPU seconds per byte)

with K the irq + softirq seconds of the whole host over each window. The ranks' own system time (their
socket copies, MPI's polling) is recorded beside it but not charged: it is the ranks' time, already in
the link's measured times. perfmodel.lab.profile.predictor charges kappa x the bytes per second that
cross the links of the nodes sharing one machine's cores as load on those cores.

Measured on 2026-11-26 between two emulated nodes of a 2-core machine (perfmodel.lab.emulate): 12.4 ms
per MB at 250 Mbit/s and 12.8 at 100 Mbit/s in one link profile, 8.6-11.3 ms in the six link profiles of
the committed scale-out remakes 3-5 (docs/validation.md).

mpi4py is imported by the caller only (the functions take its communicator).
"""

from __future__ import annotations

import os
import time

from .schema import KernelLoad

__all__ = ["cpu_counters", "kernel_seconds", "measure_kernel_load"]


def cpu_counters(text: str) -> dict[str, float]:
    """The aggregate ``cpu`` line of /proc/stat text as seconds per column (user, nice, system, idle,
    iowait, irq, softirq, steal; missing trailing columns are 0)."""
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            hz = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
            ticks = [int(x) for x in parts[1:1 + len(names)]] + [0] * max(0, len(names) - len(parts) + 1)
            return {n: t / hz for n, t in zip(names, ticks)}
    raise ValueError("no aggregate 'cpu' line in /proc/stat")


def kernel_seconds(before: dict[str, float], after: dict[str, float]) -> tuple[float, float]:
    """(irq + softirq, system) seconds between two ``cpu_counters`` readings."""
    k = (after["irq"] - before["irq"]) + (after["softirq"] - before["softirq"])
    return k, after["system"] - before["system"]


def _read(path: str) -> dict[str, float]:
    with open(path) as f:
        return cpu_counters(f.read())


def measure_kernel_load(comm, seconds: float, nbytes: int = 2**20, path: str = "/proc/stat") -> KernelLoad | None:
    """Rank 0's ``KernelLoad`` of a 2-rank MPI communicator ``comm`` (None on rank 1, or where ``path``
    cannot be read): Sendrecv of ``nbytes`` each way until ``seconds`` have passed on rank 0 (its
    decision travels in the first byte of its message, so both ranks stop after the same exchange),
    then both ranks asleep for ``seconds``."""
    import numpy as np

    if comm.Get_size() != 2:
        raise ValueError(f"the kernel load is measured between 2 ranks, got {comm.Get_size()}")
    rank = comm.Get_rank()
    readable = np.array([os.access(path, os.R_OK)], dtype=np.int8)
    comm.Allreduce(readable.copy(), readable, op=_min())
    if not readable[0]:
        return None
    send = np.zeros(nbytes, dtype=np.uint8)
    recv = np.zeros(nbytes, dtype=np.uint8)
    peer = 1 - rank
    comm.Barrier()
    before = _read(path) if rank == 0 else None
    t0 = time.perf_counter()
    exchanges = 0
    while True:
        if rank == 0:
            send[0] = 1 if time.perf_counter() - t0 >= seconds else 0
        comm.Sendrecv(send, dest=peer, recvbuf=recv, source=peer)
        exchanges += 1
        if (send[0] if rank == 0 else recv[0]) == 1:
            break
    busy_wall = time.perf_counter() - t0
    after = _read(path) if rank == 0 else None
    comm.Barrier()
    idle_before = _read(path) if rank == 0 else None
    t1 = time.perf_counter()
    time.sleep(seconds)
    idle_wall = time.perf_counter() - t1
    idle_after = _read(path) if rank == 0 else None
    comm.Barrier()
    if rank != 0:
        return None
    busy_k, busy_sys = kernel_seconds(before, after)
    idle_k, _ = kernel_seconds(idle_before, idle_after)
    return KernelLoad(bytes_sent=2.0 * nbytes * exchanges, busy_wall_s=busy_wall, busy_kernel_s=busy_k,
                      idle_wall_s=idle_wall, idle_kernel_s=idle_k, busy_sys_s=busy_sys)


def _min():
    from mpi4py import MPI

    return MPI.MIN
