"""What a small collective costs at a synchronization point of a training loop, against after a barrier.

Run it under MPI, e.g. on 4 emulated nodes sharing this machine's cores::

    perfmodel emulate --nodes 4 --rate 250mbit -- sh -c \\
        'mpiexec --oversubscribe --allow-run-as-root $PERFMODEL_MPIEXEC_ARGS -n 4 python benchmarks/sync_point_cost.py'

Every rank runs ``--rounds`` rounds of one 8-byte Allreduce (after 3 untimed ones) in four settings:

- ``barrier``: right after a Barrier, as ``perfmodel profile`` times a link;
- ``step``: after a Barrier and one training step (``perfmodel profile``'s model and batch);
- ``loop``: after a training step, with no Barrier: a data-parallel loop's steady state, each round's
  step starting when the previous Allreduce returns;
- ``loop+barrier``: as ``loop``, with a Barrier between the step and the Allreduce.

Rank 0 prints, per setting, the last rank to enter's own time in the call (the shortest call of the
round, mean and median over rounds: the collective without the wait for that rank) and the mean wait
(each rank's call less that shortest one). With one rank per core both stay small in the loop; where
ranks share cores both grow, which is what ``CodecTimes.sync_wait_s`` measures in TernGrad's codec
loop (docs/model.md section 7). A Barrier inside the loop shortens the last rank's own time but not
the wait: the ranks leave the Barrier as unevenly as they leave the step.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import add_model_options, mpi_training  # noqa: E402

SETTINGS = ("barrier", "step", "loop", "loop+barrier")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_options(parser, untimed=3)
    args = parser.parse_args(argv)

    import numpy as np

    comm, *_, step = mpi_training(args.model, args.batch)
    send, recv = np.ones(2, dtype=np.float32), np.empty(2, dtype=np.float32)
    if comm.Get_rank() == 0:
        print(f"{args.model} at batch {args.batch} on {comm.Get_size()} ranks, {args.rounds} rounds, 8-byte Allreduce")
        print(f"{'setting':14s} {'own ms (mean)':>14s} {'own ms (median)':>16s} {'wait ms':>8s}")
    for setting in SETTINGS:
        calls = []
        for r in range(args.rounds + 3):
            if setting in ("barrier", "step"):
                comm.Barrier()
            if setting != "barrier":
                step(args.batch)
            if setting == "loop+barrier":
                comm.Barrier()
            t0 = time.perf_counter()
            comm.Allreduce(send, recv)
            if r >= 3:
                calls.append(time.perf_counter() - t0)
        every = comm.gather(calls, root=0)
        if comm.Get_rank() == 0:
            t = np.asarray(every)  # ranks x rounds
            own = t.min(axis=0)  # the last rank to enter waits for nobody: its call is the shortest
            print(f"{setting:14s} {own.mean() * 1e3:14.3f} {np.median(own) * 1e3:16.3f} "
                  f"{(t - own).mean() * 1e3:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
