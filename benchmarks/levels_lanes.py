"""TernGrad levels sum: 4-bit SWAR lanes against int8 lanes, side by side in one run.

    python benchmarks/levels_lanes.py [--elems 1000000] [--repeats 21]
    mpiexec -n 4 python benchmarks/levels_lanes.py          # adds the Allreduce of both buffers

Times, on the same random ternary codes (medians of --repeats, after one warm-up call each):
  int8 add    the reduction MPI's SUM applies per incoming buffer: numpy add of two int8 arrays of
              --elems (MPI's own loop is C as well);
  swar add    trainers.level_lanes.swar_add4 of two lane buffers of --elems / 2 bytes (the user-defined
              MPI operation's body, called through numpy);
  pack+unpack the extra encode/decode work of the packed lanes per step (pack_lanes4, unpack_lanes4).
Under mpiexec with more than one rank (at most 7), also the Allreduce itself: int8 SUM of --elems
bytes against the lane op on --elems / 2 bytes (trainers.exchanges.levels.allreduce_levels / allreduce_lanes4).
Ends with the line ``swar/int8 add ratio X``. Timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import median_seconds  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elems", type=int, default=1_000_000, help="ternary codes per buffer")
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args(argv)

    import numpy as np

    from trainers.level_lanes import lanes_nbytes, pack_lanes4, swar_add4, unpack_lanes4

    rng = np.random.default_rng(0)
    a, b = (rng.integers(-1, 2, args.elems).astype(np.int8) for _ in range(2))
    la, lb = pack_lanes4(a), pack_lanes4(b)
    out8, out4 = np.empty_like(a), np.empty_like(la)
    codes = np.empty_like(a)
    t_int8 = median_seconds(lambda: np.add(a, b, out=out8), args.repeats)
    t_swar = median_seconds(lambda: swar_add4(la, lb, out=out4), args.repeats)
    t_pack = median_seconds(lambda: unpack_lanes4(pack_lanes4(a, out4), args.elems, codes), args.repeats)
    mpi_rows = []
    if "OMPI_COMM_WORLD_SIZE" in __import__("os").environ:
        from mpi4py import MPI

        from trainers.exchanges.levels import allreduce_lanes4, allreduce_levels

        world = MPI.COMM_WORLD
        if 1 < world.Get_size() <= 7:
            buf8, buf4 = a.copy(), np.empty(lanes_nbytes(args.elems), np.uint8)

            def sync(fn):
                def run():
                    world.Barrier()
                    fn()
                return run
            mpi_rows = [("allreduce int8", median_seconds(sync(lambda: allreduce_levels(world, buf8)),
                                                          args.repeats)),
                        ("allreduce lanes4", median_seconds(sync(lambda: allreduce_lanes4(world, buf4)),
                                                            args.repeats))]
        if world.Get_rank() != 0:
            return 0
    print(f"elements        {args.elems:,} ({args.elems:,} int8 bytes, {lanes_nbytes(args.elems):,} lane bytes)")
    print(f"int8 add        {t_int8 * 1e3:8.3f} ms  (np.add, MPI SUM's work per incoming buffer)")
    print(f"swar add        {t_swar * 1e3:8.3f} ms  (swar_add4, the user op's body)")
    print(f"pack+unpack     {t_pack * 1e3:8.3f} ms  (pack_lanes4 + unpack_lanes4, once per step)")
    for name, t in mpi_rows:
        print(f"{name:16}{t * 1e3:8.3f} ms")
    if mpi_rows:
        print(f"allreduce lanes4/int8 ratio {mpi_rows[1][1] / mpi_rows[0][1]:.2f}")
    print(f"swar/int8 add ratio {t_swar / t_int8:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
