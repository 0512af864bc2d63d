"""How an emulated link (perfmodel.lab.emulate) times a ring Allreduce: back to back, after idle, blocking or not.

Run it under MPI on an emulated cluster, e.g.::

    perfmodel emulate --nodes 2 --rate 250mbit [--burst 65536] -- sh -c \\
        'mpiexec --oversubscribe --allow-run-as-root $PERFMODEL_MPIEXEC_ARGS -n 2 python benchmarks/emulated_link.py'

For each message size, rank 0 prints the median time of one float32 Allreduce (blocking, and
Iallreduce waited at once) started right after a barrier ("gap 0") and after the ranks idled for
``--gap-ms`` following the barrier, as a training step's collectives do after compute, and the ratio
idle / back to back. A link that behaves like a wire gives about 1 for both; a deep token bucket
(``--burst``) gives less than 1 after idle.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="426000,1720000", help="comma-separated message sizes, bytes")
    parser.add_argument("--gap-ms", type=float, default=4.0, help="idle time before the timed call")
    parser.add_argument("--repeats", type=int, default=12)
    args = parser.parse_args(argv)

    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD

    def median_ms(nbytes: int, blocking: bool, gap_s: float) -> float:
        a = np.ones(nbytes // 4, dtype=np.float32)
        b = np.empty_like(a)
        times = []
        for _ in range(args.repeats + 2):  # the first two are warm-up
            comm.Barrier()
            if gap_s:
                time.sleep(gap_s)
            t0 = time.perf_counter()
            if blocking:
                comm.Allreduce(a, b, op=MPI.SUM)
            else:
                comm.Iallreduce(a, b, op=MPI.SUM).Wait()
            times.append(time.perf_counter() - t0)
        return float(np.median(times[2:])) * 1e3

    for nbytes in (int(s) for s in args.sizes.split(",")):
        for blocking in (True, False):
            back, idle = median_ms(nbytes, blocking, 0.0), median_ms(nbytes, blocking, args.gap_ms / 1e3)
            if comm.rank == 0:
                name = "Allreduce " if blocking else "Iallreduce"
                print(f"{name} {nbytes:>9d} B on {comm.size} ranks: back to back {back:8.2f} ms, after "
                      f"{args.gap_ms:g} ms idle {idle:8.2f} ms, idle/back-to-back ratio {idle / back:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
