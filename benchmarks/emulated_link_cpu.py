"""What an emulated link (perfmodel.lab.emulate) costs the machine's CPUs: kernel time per second of traffic.

Run it under MPI on an emulated cluster of 2 nodes, e.g.::

    perfmodel emulate --nodes 2 --rate 250mbit -- sh -c \\
        'mpiexec --oversubscribe --allow-run-as-root $PERFMODEL_MPIEXEC_ARGS -n 2 python benchmarks/emulated_link_cpu.py'

Rank 0 sends ``--repeats`` messages of ``--bytes`` to rank 1 (blocking Send/Recv), and the whole
machine's CPU time by kind is read from /proc/stat around the loop. Printed: the transfer rate, and the
softirq seconds (the kernel's packet work: veth, bridge, token bucket, TCP) per wall second, i.e. the
share of one core that the links take from whatever else runs, such as training ranks on the same
cores. (The ranks themselves poll inside MPI, so user and system time are theirs, not the link's.)
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _cpu_ticks() -> list[int]:
    with open("/proc/stat") as f:  # cpu  user nice system idle iowait irq softirq steal ...
        return [int(v) for v in f.readline().split()[1:9]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, default=8 * 2**20)
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args(argv)

    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if comm.size != 2:
        print("emulated_link_cpu: run it on 2 ranks", file=sys.stderr)
        return 2
    a = np.ones(args.bytes // 4, dtype=np.float32)
    comm.Barrier()
    before, t0 = _cpu_ticks(), time.perf_counter()
    for _ in range(args.repeats):
        if comm.rank == 0:
            comm.Send(a, dest=1)
        else:
            comm.Recv(a, source=0)
    comm.Barrier()
    wall, after = time.perf_counter() - t0, _cpu_ticks()
    if comm.rank == 0:
        hz = os.sysconf("SC_CLK_TCK")
        d = dict(zip("user nice system idle iowait irq softirq steal".split(),
                     ((x - y) / hz for x, y in zip(after, before))))
        print(f"{args.repeats} x {args.bytes} B in {wall:.2f} s ({args.repeats * args.bytes / wall / 1e6:.1f} MB/s): "
              f"softirq {d['softirq']:.2f} s, {d['softirq'] / wall:.2f} of a core; system {d['system']:.2f} s, "
              f"user {d['user']:.2f} s (the polling ranks)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
